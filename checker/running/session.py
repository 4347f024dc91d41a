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

Shared data (`SharedData`): the grading modules stay imported from one submission to the next, so a test that
changes a module's data in place (`Xh = X_HANDOUT; Xh /= 2`) would grade the next student on what it left. The
session fingerprints the plain data of the assignment's modules (numpy arrays and torch tensors by dtype,
shape and bytes; numbers, strings and lists, tuples, dicts and sets of them, nested; not functions, classes,
modules or other objects) once its modules are imported, and compares after each submission (about 0.1 ms
for attention). Where a global changed, the grade is kept, the change is told as the grader's fault in the
scorecard's `grader.isolation` (an entry `SHARED_DATA_CHANGED {json}`, see `shared_data_changes`), and the
session is ended and the assignment's modules dropped from sys.modules, so the next submission is graded by
a fresh session importing them anew. With `watching_each_test()` (hwcheck validate) it compares after each
item too and names the test that changed it.
"""

import collections
import collections.abc
import contextlib
import hashlib
import importlib
import importlib.util
import io
import json
import os
import sys
import time

import pytest

from checker.errors import HwcheckError
from checker.running import lean_protocol

__all__ = ["GradingSession", "SharedData", "available", "without_autoload", "watching_each_test",
           "shared_data_changes", "forget_grading_modules", "SHARED_DATA_CHANGED"]

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


# ----------------------------------------------------------------------------- the grading modules' shared data

SHARED_DATA_CHANGED = "grading-tests-changed-shared-data"  # a grader.isolation entry: this word, a space, JSON

# Globals that change on purpose and are the same for every submission of a grader: left out of the fingerprint,
# by name (each is checked as a global of any grading module). Nothing else is: a cache of a grading module
# filled from one submission's answers is exactly what must not reach the next.
PERSISTENT = {
    # attention's conftest sets {"seed": the run's seed} at each submission's first test (the order of
    # _softmax_answers' asks): empty once imported, then the grader's seed for every submission alike
    "_ASK_SEED",
}

_DEPTH = 20  # nesting followed; deeper containers are taken by identity
_SCALARS = (str, int, bytes, type(None))  # bool is an int


def _container(v):
    return isinstance(v, (list, tuple, dict, set, frozenset))


def _tensor(v):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(v, torch.Tensor)


def _numpy(v):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(v, (np.ndarray, np.generic))


def _plain(v):
    """Whether a module-level value is data the fingerprint reads (else it is left out: functions, classes,
    modules, fixtures, and any other object)."""
    return isinstance(v, (*_SCALARS, float, complex)) or _container(v) or _numpy(v) or _tensor(v)


def _digest(v, memo, depth=0):
    """A hashable value equal for equal data and (all but surely) different for different data."""
    if isinstance(v, _SCALARS):
        return v
    if isinstance(v, (float, complex)):
        return v if v == v else ("nan", repr(v))
    key = id(v)
    if key in memo:
        return memo[key]
    if depth > _DEPTH:
        d = ("id", key)
    elif isinstance(v, (list, tuple)):
        d = (type(v).__name__, tuple(_digest(x, memo, depth + 1) for x in v))
    elif isinstance(v, dict):
        d = ("dict", tuple((_digest(k, memo, depth + 1), _digest(x, memo, depth + 1)) for k, x in v.items()))
    elif isinstance(v, (set, frozenset)):
        d = ("set", frozenset(_digest(x, memo, depth + 1) for x in v))
    elif _numpy(v):
        if v.dtype.hasobject:
            d = ("object-array", v.shape, tuple(_digest(x, memo, depth + 1) for x in v.ravel().tolist()))
        else:
            d = ("array", v.dtype.str, v.shape, hashlib.blake2b(v.tobytes(), digest_size=16).digest())
    elif _tensor(v):
        d = _tensor_digest(v)
    else:
        d = ("id", key)  # an object inside a container: which one it is, not what it holds
    memo[key] = d
    return d


def _tensor_digest(t):
    try:
        torch = sys.modules["torch"]
        if t.layout != torch.strided or t.is_quantized:
            return ("id", id(t))
        if t.device.type == "meta":
            return ("tensor", str(t.dtype), tuple(t.shape), "meta")
        data = t.detach().to("cpu").contiguous().reshape(-1)
        raw = data.view(torch.uint8).numpy().tobytes() if data.numel() else b""
        return ("tensor", str(t.dtype), tuple(t.shape), str(t.device), hashlib.blake2b(raw, digest_size=16).digest())
    except Exception:  # noqa: BLE001 - a tensor whose bytes cannot be read here: taken by identity
        return ("id", id(t))


class SharedData:
    """The fingerprint of the plain data of an assignment's grading modules: every module imported from its
    folder (tests, conftest, helpers, answer models, its reference.py) and its reference module wherever it lies.
    `changes()` compares with the fingerprint `take()` took; `check_item(nodeid)` compares with the one taken
    after the item before (validate's mode) and remembers which item first changed each global."""

    def __init__(self, spec):
        from checker.spec import tests_path
        folder = tests_path(spec)
        self.folder = os.path.realpath(folder)
        self._prefixes = tuple({os.path.abspath(folder) + os.sep, self.folder + os.sep})
        self.reference = spec.get("reference")
        self.modules = {}  # module name -> module
        self._seen = -1  # len(sys.modules) when the modules were last looked for
        self.base = self.last = {}
        self.by_test = {}  # (module name, global) -> the nodeid of the item after which it first differed

    def _find(self):
        if len(sys.modules) == self._seen:
            return False
        found = False
        for name, module in list(sys.modules.items()):
            if name in self.modules or module is None:
                continue
            file = getattr(module, "__file__", None)
            if (name == self.reference or (isinstance(file, str) and file.startswith(self._prefixes))):
                self.modules[name] = module
                found = True
        self._seen = len(sys.modules)
        return found

    def fingerprint(self):
        """{(module name, global): digest} of every plain-data global (names like __x__ and PERSISTENT aside)."""
        memo, out = {}, {}
        for mname, module in self.modules.items():
            for name, v in list(vars(module).items()):
                if name in PERSISTENT or (name.startswith("__") and name.endswith("__")) or not _plain(v):
                    continue
                out[(mname, name)] = _digest(v, memo)
        return out

    def take(self):
        """The fingerprint a fresh session starts from (its reference imported first, where there is one)."""
        if self.reference:
            with contextlib.suppress(Exception):  # the kit has none; a broken one is told by its tests
                if importlib.util.find_spec(self.reference) is not None:
                    importlib.import_module(self.reference)
        self._find()
        self.base = self.last = self.fingerprint()
        self.by_test = {}

    def _newcomers(self, now, into):
        """Globals of modules first imported since the fingerprint was taken: their first values are theirs."""
        known = {k[0] for k in self.base}
        for key, d in now.items():
            if key[0] not in known:
                for fp in into:
                    fp[key] = d

    def check_item(self, nodeid):
        if self._find():
            self._newcomers(self.fingerprint(), (self.base, self.last))
        now = self.fingerprint()
        if now != self.last:
            for key in set(now) | set(self.last):
                if now.get(key) != self.last.get(key):
                    self.by_test.setdefault(key, nodeid)
        self.last = now

    def changes(self):
        """What differs from the fresh fingerprint: [{"module", "file", "global", "test", "copy"}], one per global (a
        global several modules share through `import *` is named in the module that assigns it)."""
        if self._find():
            self._newcomers(self.fingerprint(), (self.base,))
        now = self.fingerprint()
        self.last = now
        if now == self.base:
            return []
        differ = sorted(k for k in set(now) | set(self.base) if now.get(k) != self.base.get(k))
        groups = {}
        for mname, name in differ:  # the same object seen through several modules: one change
            value = vars(self.modules[mname]).get(name)
            groups.setdefault((name, id(value)), []).append(mname)
        out = []
        for (name, _), mnames in groups.items():
            owner = self._owner(name, mnames)
            test = next((self.by_test[(m, name)] for m in [owner, *mnames] if (m, name) in self.by_test), None)
            value = vars(self.modules[owner]).get(name)
            out.append({"module": owner, "file": self._shown(owner), "global": name, "test": test,
                        "copy": f"{name}.clone()" if _tensor(value) else
                        f"{name}.copy()" if _numpy(value) or not _container(value) else f"copy.deepcopy({name})"})
        return out

    def _owner(self, name, mnames):
        """The module among `mnames` whose source assigns `name` at its top level, else a helper, else the first."""
        import ast
        for m in mnames:
            try:
                with open(self.modules[m].__file__, encoding="utf-8") as f:
                    tree = ast.parse(f.read())
            except (OSError, TypeError, ValueError, SyntaxError):
                continue
            for node in tree.body:
                targets = (node.targets if isinstance(node, ast.Assign) else
                           [node.target] if isinstance(node, (ast.AnnAssign, ast.AugAssign)) else [])
                if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                    return m
        helpers = [m for m in mnames if not m.rsplit(".", 1)[-1].startswith(("test_", "conftest"))]
        return (helpers or mnames)[0]

    def _shown(self, mname):
        """The module's file as `<folder of the assignment's folder>/<id>/<file>` (e.g. assignments/attention/_common.py)."""
        file = getattr(self.modules.get(mname), "__file__", None) or mname
        real = os.path.realpath(file)
        if real.startswith(self.folder + os.sep):
            parent = os.path.dirname(self.folder)
            return os.path.relpath(real, os.path.dirname(parent))
        return file

    def forget(self):
        """Drop the assignment's modules (and its package's) from sys.modules: the next session imports them anew."""
        names = set(self.modules)
        for name in list(names):  # the packages above them that live in the folder too (assignments.attention)
            parts = name.split(".")
            for i in range(1, len(parts)):
                parent = ".".join(parts[:i])
                file = getattr(sys.modules.get(parent), "__file__", None)
                if isinstance(file, str) and file.startswith(self._prefixes):
                    names.add(parent)
        for name in names:
            sys.modules.pop(name, None)
        self.modules = {}
        self._seen = -1


def forget_grading_modules(spec):
    """Drop the assignment's grading modules from sys.modules, so that the next pytest.main imports them anew (the
    grader's one-pytest.main-per-submission way: nothing a test changed in place reaches the next submission)."""
    shared = SharedData(spec)
    shared._find()
    shared.forget()


@contextlib.contextmanager
def watching_each_test():
    """While this holds, every GradingSession compares the shared data after each item (hwcheck validate: names
    the test that changed it; about a fingerprint's cost per item)."""
    before = GradingSession.watch_each_test
    GradingSession.watch_each_test = True
    try:
        yield
    finally:
        GradingSession.watch_each_test = before


def shared_data_changes(card):
    """The changes of shared data a scorecard's grader.isolation tells: [{"module", "file", "global", "test"}]."""
    out = []
    for entry in ((card or {}).get("grader") or {}).get("isolation") or []:
        if isinstance(entry, str) and entry.startswith(SHARED_DATA_CHANGED + " "):
            with contextlib.suppress(ValueError):
                change = json.loads(entry[len(SHARED_DATA_CHANGED) + 1:])
                if isinstance(change, dict):
                    out.append(change)
    return out


class GradingSession:
    """pytest started once on `args` with `plugin` (a HwcheckPlugin) and the JSON report's plugin; `run` grades."""

    # items run by checker.running.lean_protocol where it can stand in for pytest's protocol (False: every item
    # through pytest_runtest_protocol; the scorecards are the same, tests/test_lean_protocol.py)
    lean = True
    # compare the shared data after each item, naming the test that changed it (watching_each_test: validate)
    watch_each_test = False

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
        self.shared = None  # the grading modules' data, fingerprinted once collected (SharedData)
        self.changed = []  # what the grading tests changed of it (the session ends after that submission)
        self._stale = False  # ended for changed shared data, not for an error: its end is pytest's as usual
        spec = getattr(plugin, "_spec", None)
        if not self.broken and isinstance(spec, dict) and spec.get("id"):
            try:
                self.shared = SharedData(spec)
                self.shared.take()
            except Exception:  # noqa: BLE001 - no fingerprint: graded as before, without the check
                self.shared = None

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
                if self.watch_each_test and self.shared is not None:
                    self.shared.check_item(item.nodeid)
                if self.session.shouldfail or self.session.shouldstop:
                    raise HwcheckError(f"pytest stopped: {self.session.shouldfail or self.session.shouldstop}")
        except BaseException as e:
            self.broken = f"{type(e).__name__}: {e}"  # fixtures may be left set up: this session is done
            self._shared_changed()
            raise
        finally:
            self.plugin.bind(None)
            if self._terminal is not None:
                self._terminal.stats.clear()  # every report of every submission, otherwise
        changed = self._shared_changed()
        if changed and handle is not None:  # told as the grader's own fault, beside the walls: never the student's
            handle.isolation = [*(getattr(handle, "isolation", None) or []),
                                *(f"{SHARED_DATA_CHANGED} {json.dumps(c, sort_keys=True)}" for c in changed)]
        return self._take(started)

    def _shared_changed(self):
        """The shared data this submission's grading changed ([] where none): where any, this session ends
        (`broken`: the grader starts a fresh one for the next submission) and the grading modules are dropped
        from sys.modules, so that fresh session imports them anew."""
        if self.shared is None or self.changed:
            return []
        try:
            changed = self.shared.changes()
        except Exception as e:  # noqa: BLE001 - could not compare: start afresh, to be safe
            changed, why = [], f"the shared data could not be compared ({type(e).__name__}: {e})"
        else:
            why = "the grading tests changed shared data: " + ", ".join(
                f"{c['global']} of {c['file']}" for c in changed)
            if not changed:
                return []
        self.changed = changed
        if not self.broken:
            self.broken, self._stale = why, True
        self.shared.forget()
        return changed

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
                if self.session is not None and (not self.broken or self._stale):
                    config.hook.pytest_sessionfinish(session=self.session, exitstatus=0)
            except BaseException:  # noqa: BLE001 - closing: nothing left to report to
                pass
            finally:
                with contextlib.suppress(BaseException):
                    config._ensure_unconfigure()
                if self.session is not None:
                    with contextlib.suppress(OSError):
                        os.chdir(self.session.startpath)
