"""Grading tests that change their modules' shared data in place change no other submission's grade
(checker.running.session.SharedData).

One pytest session grades submission after submission, so the grading modules stay imported: a test that does
`Xh = X_HANDOUT; Xh /= 2.0` changed the handout array of `_common.py` for every submission graded after it in
the same grader, and a submission's grade depended on its place in the batch. A course's copy of attention
with such a test grades a submission the same alone and after another one; the change is told as the grader's
fault in the scorecard (grader.isolation) and by `hwcheck validate`, which names the module, the global and the
test. The built-in assignments change nothing of their modules' data while grading (no false alarm: no session
is rebuilt).
"""
import json
import os
import shutil

import pytest

from checker.running.runner import Grader
from checker.spec import example_dirs, load_spec

from test_ref_cache import _without_times

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SEED = 8642
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")
A = os.path.join(EXAMPLES, "correct.py")
B = os.path.join(EXAMPLES, "self_attention_reads_globals.py")  # its grade moved with X_HANDOUT (the probe's)

MUTATING_TEST = '''

@pytest.mark.question("Q2")
def test_self_attention_on_half_the_handout(sub, ref, close):
    Xh = X_HANDOUT                     # the handout's tokens halved, in place: the grading tests' mistake
    Xh /= 2.0
    close(sub.call("self_attention", Xh, W_Q, W_K, W_V), ref.self_attention(Xh, W_Q, W_K, W_V),
          what="self_attention(X / 2, W_Q, W_K, W_V)")
'''


def _course(tmp_path, monkeypatch, aid, examples=()):
    """A course's copy of attention named `aid` whose Q2 has a test that halves X_HANDOUT in place (and the
    `examples` of attention's, with their expected.json entries)."""
    course = tmp_path / "course"
    folder = course / aid
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder,
                    ignore=shutil.ignore_patterns("examples", "__pycache__"))
    spec = folder / "spec.toml"
    spec.write_text(spec.read_text().replace('id = "attention"', f'id = "{aid}"', 1))
    q2 = folder / "test_attention_q2.py"
    q2.write_text(q2.read_text() + MUTATING_TEST)
    if examples:
        (folder / "examples").mkdir()
        with open(os.path.join(EXAMPLES, "expected.json"), encoding="utf-8") as f:
            expected = json.load(f)
        for path in examples:
            shutil.copy(path, folder / "examples")
        (folder / "examples" / "expected.json").write_text(json.dumps(
            {os.path.splitext(os.path.basename(p))[0]: expected[os.path.splitext(os.path.basename(p))[0]]
             for p in examples}))
    monkeypatch.setenv("HWCHECK_ASSIGNMENTS", str(course))
    return folder


@pytest.mark.slow
def test_a_grade_is_the_same_after_a_submission_whose_grading_changed_shared_data(tmp_path, monkeypatch):
    aid = "hwmut_batch"
    _course(tmp_path, monkeypatch, aid)
    with Grader(mode="hidden", seed=SEED) as g:
        alone = g.grade(B, aid)
    with Grader(mode="hidden", seed=SEED) as g:
        first = g.grade(A, aid)
        held = g._sessions[aid]
        second = g.grade(B, aid)
        rebuilt = g._sessions[aid] is not held
    assert second["score"] == alone["score"], "B's grade depends on the batch's order"
    assert _without_times(second) == _without_times(alone), "B's scorecard depends on the batch's order"
    from checker.running.session import SHARED_DATA_CHANGED, shared_data_changes
    assert held.changed and rebuilt  # ended: the next submission got a fresh session, its modules imported anew
    for card in (first, second):  # the grader's fault, told beside the walls; the grade itself stands
        assert card["status"] == "graded"
        (change,) = shared_data_changes(card)
        assert change["global"] == "X_HANDOUT" and change["file"].endswith(f"{aid}/_common.py"), change
        assert change["module"] == f"{aid}._common" and change["copy"] == "X_HANDOUT.copy()"
        assert any(e.startswith(SHARED_DATA_CHANGED) for e in card["grader"]["isolation"])
    assert first["score"] == first["max_score"] - 10  # the reference-like correct.py: only the free text left


@pytest.mark.slow
def test_one_pytest_main_per_submission_grades_the_same_after_such_a_submission(tmp_path, monkeypatch):
    """The grader's other way (reuse_session=False, where pytest's internals a session needs are missing): each
    submission's pytest.main imported the grading modules the one before left in sys.modules, their data changed
    (68.89 alone, 65.29 third in a probe's batch). Each run now imports them anew."""
    aid = "hwmut_plain"
    _course(tmp_path, monkeypatch, aid)
    with Grader(mode="hidden", seed=SEED, reuse_session=False) as g:
        alone = g.grade(B, aid)
    with Grader(mode="hidden", seed=SEED, reuse_session=False) as g:
        g.grade(A, aid)
        second = g.grade(B, aid)
    assert _without_times(second) == _without_times(alone), "B's scorecard depends on the batch's order"

@pytest.mark.slow
def test_validate_names_the_module_the_global_and_the_test(tmp_path, monkeypatch):
    from checker.platforms.validate import validate
    aid = "hwmut_validate"
    _course(tmp_path, monkeypatch, aid, examples=[A, B])
    lines = []
    with Grader(mode="hidden", seed=1234) as g:
        found = validate(aid, checks=("reference", "examples"), grader=g, echo=lines.append)
    told = [(check, p) for check, p in found if "X_HANDOUT" in p]
    where = (f"X_HANDOUT of course/{aid}/_common.py while grading {{}} "
             f"(test test_attention_q2.py::test_self_attention_on_half_the_handout): a test must not change "
             f"shared data in place; copy it first (X_HANDOUT.copy())")
    assert ("reference", "the grading tests changed " + where.format("the reference")) in told, lines
    # every example changed it too: told once, for the first example graded
    assert [p for c, p in told if c == "examples"] == ["the grading tests changed " + where.format("example correct")], lines
    assert any("problem(s)" in line for line in lines)


@pytest.mark.slow
def test_the_built_in_assignments_change_no_shared_data():
    """A correct example and a wrong one graded in one warm grader: no global of any grading module changed,
    so no session was rebuilt and no scorecard tells of a change."""
    from checker.running.session import shared_data_changes
    with Grader(mode="hidden", seed=SEED) as g:
        for aid in ("attention", "vit", "charlm"):
            load_spec(aid)
            folder = example_dirs(aid)[0]
            with open(os.path.join(folder, "expected.json"), encoding="utf-8") as f:
                expected = json.load(f)
            wrong = sorted(e for e in os.listdir(folder)  # an example that loses points
                           if e.endswith(".py") and "lost" in expected.get(e[:-3], {}).get("verdicts", {}).values())[0]
            cards = [g.grade(os.path.join(folder, "correct.py"), aid)]
            held = g._sessions[aid]
            cards += [g.grade(os.path.join(folder, wrong), aid), g.grade(os.path.join(folder, "correct.py"), aid)]
            assert g._sessions[aid] is held and not held.broken and not held.changed, (aid, held.broken)
            assert held.shared is not None and held.shared.base, aid  # the fingerprint was taken and compared
            assert all(not shared_data_changes(c) for c in cards), aid
            assert cards[0]["score"] > cards[1]["score"], (aid, wrong)
            assert _without_times(cards[2]) == _without_times(cards[0]), aid
