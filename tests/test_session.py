"""One pytest session per assignment in a grader (checker.running.session) changes no scorecard.

A grader that collects the grading tests once and reruns their items for each submission grades a sample of
attention's examples in public mode (the reference, honest variants, named mistakes, crashes and hangs) one
after another, and the first again at the end; a grader that runs one `pytest.main` per submission grades
the same files with the same seed (tests/test_ref_cache.py compares every assignment so in hidden mode, the
reference cache and the session against neither). The scorecards must be the same byte for byte once the times (and the walls'
per-worker uid) are left out, so no label, fixture value or report entry of one submission reaches the next.
A session that meets an error of pytest's own is replaced, and the next grade is whole again.
"""
import os

import pytest

from checker.errors import HwcheckError
from checker.running import plugin as plugin_module
from checker.running import runner
from checker.running import session as pytest_session
from checker.running.runner import Grader
from checker.spec import example_dirs, load_spec, reference_file

from test_ref_cache import _without_times

SEED = 515151


def _sample(aid, step=4):
    entries = []
    for folder in example_dirs(aid):
        entries += sorted(os.path.join(folder, e) for e in os.listdir(folder)
                          if e != "expected.json" and not e.startswith((".", "__")))
    correct = [e for e in entries if os.path.splitext(os.path.basename(e))[0] == "correct"]
    return correct + [e for e in entries if e not in correct][::step]


def _grade_all(grader, paths, aid):
    return [_without_times(grader.grade(p, aid)) for p in paths]


@pytest.mark.slow
def test_scorecards_same_with_one_session_and_one_per_submission():
    aid, mode = "attention", "public"
    sample = _sample(aid)
    assert len(sample) >= 5, sample
    with Grader(mode=mode, seed=SEED, reuse_session=False) as plain:
        want = _grade_all(plain, sample, aid)
        assert not plain._sessions
    with Grader(mode=mode, seed=SEED) as reused:
        assert reused.reuse_session
        got = _grade_all(reused, sample, aid)
        again = _without_times(reused.grade(sample[0], aid))
        (held,) = reused._sessions.values()  # one session graded them all
        assert not held.broken
        assert not held.report._json_tests and not held._terminal.stats  # nothing kept of the last submission
    for path, w, g in zip(sample, want, got):
        assert g == w, f"{os.path.basename(path)}: the scorecard differs with one session"
    assert again == want[0]


@pytest.mark.filterwarnings("ignore::pluggy.PluggyTeardownRaisedWarning")  # the hook that breaks on purpose
def test_a_session_that_broke_is_replaced(monkeypatch):
    ref = reference_file(load_spec("attention"))
    with Grader(mode="public", seed=SEED) as g:
        first = _without_times(g.grade(ref, "attention"))
        (held,) = g._sessions.values()
        real_label, calls = plugin_module.HwcheckPlugin._label, []

        def failing_once(self, item, call, rep):  # pytest's own error inside a hook, once
            if not calls:
                calls.append(item.nodeid)
                raise RuntimeError("a hook broke")
            return real_label(self, item, call, rep)
        monkeypatch.setattr(plugin_module.HwcheckPlugin, "_label", failing_once)
        with pytest.raises(HwcheckError, match=r"the grading tests of attention did not run \(RuntimeError: a hook broke\)"):
            g.grade(ref, "attention")
        assert held.broken and calls
        monkeypatch.setattr(plugin_module.HwcheckPlugin, "_label", real_label)
        again = _without_times(g.grade(ref, "attention"))
        (fresh,) = g._sessions.values()
        assert fresh is not held and not fresh.broken
    assert again == first


def test_without_pytests_internals_each_submission_gets_its_own_pytest_main(monkeypatch):
    monkeypatch.setattr(pytest_session, "available", lambda: False)
    calls = []
    real = runner.run_pytest

    def counting(args, plugins):
        calls.append(1)
        return real(args, plugins)
    monkeypatch.setattr(runner, "run_pytest", counting)
    ref = reference_file(load_spec("attention"))
    with Grader(mode="public", seed=SEED, pytest_args=["-k", "q1"]) as g:
        assert not g.reuse_session
        cards = [g.grade(ref, "attention") for _ in range(2)]
        assert not g._sessions
    assert len(calls) == 2
    assert all(c["status"] == "graded" and c["questions"] for c in cards)


def test_a_report_plugin_without_its_gathered_entries_means_no_session(monkeypatch):
    """A GradingSession takes each submission's entries from pytest-json-report's `_json_tests` (private): a
    version without it makes `available()` False, and the grader runs a pytest.main per submission instead of
    failing every grade."""
    from pytest_jsonreport import plugin as report_plugin
    assert pytest_session.available()
    real = report_plugin.JSONReport.__init__

    def without(self, *args, **kwargs):
        real(self, *args, **kwargs)
        del self._json_tests
    monkeypatch.setattr(report_plugin.JSONReport, "__init__", without)
    assert not pytest_session.available()
