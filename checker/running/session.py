"""One pytest session per assignment in a grading process: the grading tests collected once, their items run
again for each submission.

What it is for: a `Grader` grades submission after submission with the same grading tests, mode, seed and
devices, yet a `pytest.main` per submission starts pytest anew each time (reads its options, loads its
plugins, imports nothing new but collects every test file and builds every fixture definition again: about
50-70 ms of a warm grade on this project's machine). A `GradingSession` starts pytest's session once, as
`pytest.main` does, and collects; then for each submission it binds the plugin to that submission
(`HwcheckPlugin.bind`), runs every item's protocol as pytest's own loop does (the last item tears down every
fixture, session-scoped ones too, as at a session's end: no fixture value of one submission reaches the next;
`lean_protocol.run_item` stands in for pytest's per-item hooks where only hwcheck's own plugins take part) and
takes that submission's entries of the JSON report. Each item starts from the labels collection gave it
(the plugin resets them at setup), and pytest supports running an item again (pytest-rerunfailures does).

What it is not: a scheduler or a worker (`runner`, `sandbox`); nor public pytest API: it uses what
`pytest.main` and pytester use (`_pytest.config._prepareconfig`, `Config._do_configure`,
`Config._ensure_unconfigure`). Where those are missing, `available()` is False and `Grader` runs one
`pytest.main` per submission, as it does with `reuse_session=False`; the scorecards are the same either way
(tests/test_session.py). A session that met an error (pytest's own, a collection error, an interrupt) is closed
and the next grade starts a fresh one.
"""

import collections
import collections.abc
import contextlib
import io
import os
import time

import pytest

from checker.errors import HwcheckError
from checker.running import lean_protocol

__all__ = ["GradingSession", "available", "without_autoload"]

TAIL_CHARS = 4000  # what is kept of pytest's own terminal output, for an error's message


def available():
    """True where this pytest and pytest-json-report have the internals a GradingSession uses (pytest's
    config internals; the report plugin's `_json_tests`, the entries it gathered, which `_take` takes per
    submission)."""
    try:
        from _pytest.config import Config, _prepareconfig  # noqa: F401
        from pytest_jsonreport.plugin import JSONReport
        gathered = getattr(JSONReport(), "_json_tests", None)
    except Exception:  # noqa: BLE001 - an import error, or a report plugin made otherwise: one pytest.main each
        return False
    return (all(hasattr(Config, name) for name in ("_do_configure", "_ensure_unconfigure"))
            and isinstance(gathered, collections.abc.MutableMapping))


@contextlib.contextmanager
def without_autoload():
    """No pytest plugin is autoloaded from an entry point while this holds (PYTEST_DISABLE_PLUGIN_AUTOLOAD):
    a plugin of the TA's environment has no say in a grade, and pytest scans no installed distribution."""
    before = os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD")
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
        else:
            os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = before


class _Tail(io.TextIOBase):
    """A text stream that keeps only its last TAIL_CHARS characters (pytest's terminal writer holds the stream it
    was configured with for the whole session: a batch of hundreds would otherwise grow it without end)."""

    def __init__(self):
        super().__init__()
        self._text = ""

    def writable(self):
        return True

    def write(self, s):
        self._text = (self._text + str(s))[-TAIL_CHARS:]
        return len(s)

    def isatty(self):
        return False

    def getvalue(self):
        return self._text


class GradingSession:
    """pytest started once on `args` with `plugin` (a HwcheckPlugin) and the JSON report's plugin; `run` grades."""

    # items run by checker.running.lean_protocol where it can stand in for pytest's protocol (False: every item
    # through pytest_runtest_protocol; the scorecards are the same, tests/test_lean_protocol.py)
    lean = True

    def __init__(self, args, plugin):
        from _pytest.config import _prepareconfig
        from pytest_jsonreport.plugin import JSONReport
        import pytest_jsonreport.plugin as json_report_options  # its pytest_addoption: --json-report-* options

        self.plugin = plugin
        self.report = JSONReport()
        self.out = _Tail()
        self.config = self.session = None
        self.broken = False
        self.spec_sha256 = None  # the spec it was started for (the Grader's key to start afresh on an edit)
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.out), without_autoload():
            try:
                self.config = _prepareconfig(list(args), [json_report_options, plugin, self.report])
                self.session = pytest.Session.from_config(self.config)
                self.session.exitstatus = 0
                self.config._do_configure()
                self.config.hook.pytest_sessionstart(session=self.session)
                self.config.hook.pytest_collection(session=self.session)
            except KeyboardInterrupt:
                raise
            except BaseException as e:  # noqa: BLE001 - a usage or collection error, pytest.exit(): said by run()
                self.broken = f"{type(e).__name__}: {e}"
        if not self.broken and self.session.testsfailed:
            self.broken = f"{self.session.testsfailed} error(s) while collecting the grading tests"
        self._terminal = self.config.pluginmanager.get_plugin("terminalreporter") if self.config else None
        self._lean = bool(self.lean and not self.broken and lean_protocol.usable(self.config))
        self.lean_items = 0  # items run by checker.running.lean_protocol, all submissions together

    def run(self, handle, *, record=None, replay=None):
        """Run every collected item on `handle`; the JSON report of this submission ({"tests": [...], ...})."""
        if self.broken:
            raise HwcheckError(f"pytest did not start ({self.broken}): " + self.out.getvalue()[-2000:])
        self.plugin.bind(handle, record=record, replay=replay)
        started = time.time()
        items = self.session.items
        hook = self.config.hook
        try:
            for i, item in enumerate(items):
                item._report_sections = []  # what an earlier run captured (with -s: nothing)
                item.user_properties = []
                nextitem = items[i + 1] if i + 1 < len(items) else None
                if self._lean and lean_protocol.eligible(item):
                    lean_protocol.run_item(item, nextitem, self.plugin, self.report._json_tests)
                    self.lean_items += 1
                else:
                    hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
                if self.session.shouldfail or self.session.shouldstop:
                    raise HwcheckError(f"pytest stopped: {self.session.shouldfail or self.session.shouldstop}")
        except BaseException as e:
            self.broken = f"{type(e).__name__}: {e}"  # fixtures may be left set up: this session is done
            raise
        finally:
            self.plugin.bind(None)
            if self._terminal is not None:
                self._terminal.stats.clear()  # every report of every submission, otherwise
        return self._take(started)

    def _take(self, started):
        """This submission's JSON report (the entries pytest-json-report gathered since the last take)."""
        from pytest_jsonreport import serialize
        tests, self.report._json_tests = self.report._json_tests, collections.OrderedDict()
        failed = any(t.get("outcome") in ("failed", "error") for t in tests.values())
        report = serialize.make_report(created=time.time(), duration=time.time() - started, exitcode=int(failed),
                                       root=str(self.session.path), environment={},
                                       summary=serialize.make_summary(tests, collected=len(self.session.items)))
        report["tests"] = list(tests.values())
        return report

    def close(self):
        """End pytest's session as pytest.main does (session-finish hooks, unconfigure); never raises."""
        if self.config is None:
            return
        config, self.config = self.config, None
        with contextlib.redirect_stdout(self.out), contextlib.redirect_stderr(self.out):
            try:
                if self.session is not None and not self.broken:
                    config.hook.pytest_sessionfinish(session=self.session, exitstatus=0)
            except BaseException:  # noqa: BLE001 - closing: nothing left to report to
                pass
            finally:
                with contextlib.suppress(BaseException):
                    config._ensure_unconfigure()
                if self.session is not None:
                    with contextlib.suppress(OSError):
                        os.chdir(self.session.startpath)
