"""Items run without pytest's per-item hooks (checker.running.lean_protocol) give the same reports and scorecards.

A grader whose session runs its items through `lean_protocol.run_item` and one whose session runs every item
through pytest's `pytest_runtest_protocol` (`GradingSession.lean = False`) grade the same submissions with
the same seed: the reference, a named mistake (failures with hints), a crash at import and a file that
defines nothing (errors), CUDA and float16 variants (skips in setup). The scorecards must be the same byte
for byte once the times are left out, and so must every entry of the JSON report (`--keep-raw`). The lean
path must really have run (else the comparison proves nothing); any other plugin with a per-item hook, or an
option such as --maxfail, sends every item through pytest's protocol, and that plugin's hook is called.
(tests/test_ref_cache.py compares a sample of every assignment's examples against one pytest.main each.)
"""
import json

import pytest

from checker.running import lean_protocol
from checker.running import session as pytest_session
from checker.running.runner import Grader
from checker.spec import load_spec, reference_file

from test_ref_cache import _without_times

SEED = 8080
SUBMISSIONS = ["REF", "submissions/attention/softmax_wrong_axis.py", "submissions/attention/syntax_error.py",
               "submissions/attention/missing_names.py", "submissions/attention/library_calls.py"]


def _paths():
    return [reference_file(load_spec("attention")) if p == "REF" else p for p in SUBMISSIONS]


def _raw_tests(card):
    tests = json.loads(json.dumps(card["_raw_report"]["tests"]))
    for t in tests:
        for phase in ("setup", "call", "teardown"):
            if isinstance(t.get(phase), dict):
                t[phase].pop("duration", None)
    return tests


def _grade(lean, monkeypatch, **kw):
    monkeypatch.setattr(pytest_session.GradingSession, "lean", lean)
    with Grader(mode="hidden", seed=SEED, keep_raw=True, **kw) as g:
        cards = [g.grade(p, "attention") for p in _paths()]
        (held,) = g._sessions.values()
        return cards, held.lean_items


def test_same_reports_and_scorecards_as_pytests_protocol(monkeypatch):
    lean, ran_lean = _grade(True, monkeypatch)
    full, ran_full = _grade(False, monkeypatch)
    assert ran_full == 0 and ran_lean >= len(SUBMISSIONS) * 100, (ran_lean, ran_full)
    outcomes = {t["outcome"] for card in full for t in card["_raw_report"]["tests"]}
    assert {"passed", "failed", "skipped"} <= outcomes, outcomes  # what the comparison covers
    for path, a, b in zip(_paths(), lean, full):
        assert _raw_tests(a) == _raw_tests(b), path
        a.pop("_raw_report"), b.pop("_raw_report")
        assert _without_times(a) == _without_times(b), path


def test_another_plugins_item_hook_means_pytests_protocol(monkeypatch, tmp_path):
    (tmp_path / "lean_probe_plugin.py").write_text(
        "SEEN = []\n"
        "def pytest_runtest_makereport(item, call):\n"
        "    SEEN.append((item.nodeid, call.when))\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import lean_probe_plugin
    with Grader(mode="public", seed=SEED, pytest_args=["-p", "lean_probe_plugin"]) as g:
        card = g.grade(reference_file(load_spec("attention")), "attention")
        (held,) = g._sessions.values()
        assert not held._lean and held.lean_items == 0
    ran = sum(len(q["tests"]) for q in card["questions"])
    assert len(lean_probe_plugin.SEEN) >= 2 * ran and ran > 50  # its hook saw every item's setup and teardown


@pytest.mark.parametrize("option", [["--maxfail", "1"], ["-x"], ["--json-report-omit", "log"]])
def test_options_pytests_protocol_acts_on_turn_it_off(option):
    with Grader(mode="public", seed=SEED, pytest_args=option) as g:
        g.grade(reference_file(load_spec("attention")), "attention")
        (held,) = g._sessions.values()
        assert not held._lean and held.lean_items == 0 and not lean_protocol.usable(held.config)
