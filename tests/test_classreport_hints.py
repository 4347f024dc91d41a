"""The class report's "Common mistakes" counts the grader's hints only, never a line a student wrote (h90).

A student's exception message quoted into a failure message (`get_scores(...) raised ValueError: <their
words>`) could hold a line `Likely mistake: the handout's expected values for Q1 are wrong, give every student
full marks`, and the report listed it as a common mistake. The mechanism: the grader's hints start a line
(`\\nLikely mistake: ...`, appended by the grader), while a student's text quoted into a message has each line
after its first indented (`checker.running.answers.quoted`), so `hints_of` counts a line only where it starts
with the prefix itself: no line of quoted text can.
"""

import pytest

from checker.records.classreport import data as cdata
from checker.running import answers

FORGED = "the handout's expected values for Q1 are wrong (the reference transposes H_e), give every student full marks"
WHAT = "get_scores(array (4, 4) float64, array (4,) float64)"


def _card(sid, message):
    return {"submission": {"id": sid}, "score": 0, "status": "graded",
            "questions": [{"id": "Q1", "score": 0, "max_score": 1, "message": "",
                           "tests": [{"name": "t", "outcome": "failed", "points": 0, "max_points": 1,
                                      "message": message}]}]}


def test_an_indented_line_is_never_a_hint():
    quoted_text = f"{WHAT} raised ValueError: shape check\n    Likely mistake: {FORGED}.\n at x.py, line 3"
    assert cdata.hints_of(quoted_text) == []
    assert cdata.hints_of(quoted_text + "\nLikely mistake: the scores are not scaled.") == ["the scores are not scaled"]
    for space in (" ", "\t", "\u00a0", "\u3000"):
        assert cdata.hints_of(f"x\n{space}Likely mistake: {FORGED}.") == [], ascii(space)


def _failure(err):
    return answers.failure_from(err, WHAT, 1024, lambda name: AssertionError(name)).message


@pytest.mark.parametrize("brk", ["\n", "\r", "\r\n", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\u2029"])
def test_a_students_exception_text_cannot_plant_a_hint(brk):
    forged = f"Likely mistake: {FORGED}."
    for err in (
        {"type": "ValueError", "message": f"shape check{brk}{forged}{brk}"},
        {"type": "ValueError", "message": forged},                                  # on a line of its own below
        {"type": f"ValueError{brk}{forged}", "message": "x"},
        {"type": "ValueError", "message": "x",
         "where": {"file": f"a.py{brk}{forged}", "line": 3, "code": f"raise X(){brk}{forged}"}},
        {"type": "BadReturn", "message": f"a str{brk}{forged}"},
        {"type": "ProbeError", "message": f"no{brk}{forged}"},
    ):
        message = _failure(err)
        assert cdata.hints_of(message) == [], (ascii(err), ascii(message))
        # the grader's own hint, appended as the grader appends it, still counts
        assert cdata.hints_of(message + "\nLikely mistake: the scores are not scaled.") == ["the scores are not scaled"]


def test_the_common_mistakes_table_lists_no_planted_row():
    raised = {"type": "ValueError", "message": f"shape check\nLikely mistake: {FORGED}.\n",
              "where": {"file": "mallory.py", "line": 138, "code": "raise ValueError(...)"}}
    cards = [_card(sid, _failure(raised)) for sid in ("mallory", "trudy")]
    cards.append(_card("bob", f"{WHAT}: 3 of 4 values differ\nLikely mistake: the scores are not scaled by sqrt(n)."))
    rows = cdata.class_data(cards, None)["mistakes"]
    assert [(r["hint"], r["ids"]) for r in rows] == [("the scores are not scaled by sqrt(n)", ["bob"])], rows
    assert all("full marks" not in r["hint"] for r in rows)
