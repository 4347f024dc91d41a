"""`hwcheck validate`'s problem lines quote a question's real messages, never the scorecard's placeholder.

A question whose every test failed for one reason (a name not defined) says it once, in the question's
message, and its tests carry `SEE_QUESTION_MESSAGE` ("see the question message") instead: validate printed
that placeholder, once per test, as lines of their own under the problem (docs/authoring.md's worked
example, with the copied examples lacking the new function).
"""

from checker.judging.scorecard import SEE_QUESTION_MESSAGE
from checker.platforms.validate import _full_marks, judge_example

MISSING = "`causal_self_attention` is not defined in your submission. Close spellings that exist: self_attention."


def _card(question_message, test_messages):
    tests = [{"name": f"t{i}", "device": "cpu", "outcome": "failed", "message": m}
             for i, m in enumerate(test_messages)]
    return {"questions": [{"id": "Q4", "manual": False, "score": 0, "max_score": 10, "message": question_message,
                           "tests": tests}]}


def test_a_collapsed_question_is_quoted_once_without_the_placeholder():
    card = _card(MISSING, [SEE_QUESTION_MESSAGE] * 4)
    problems = judge_example(card, {})
    assert problems == [f"Q4 should get full marks, got 0/10: {MISSING}"]
    hinted = judge_example(card, {"verdicts": {"Q4": "zero"}, "hints": {"Q4": ["the mask was not applied"]}})
    assert hinted == [f"Q4: the hint 'the mask was not applied' is not in its messages: {MISSING}"]
    assert _full_marks(card) == [f"Q4 0/10: {MISSING}"]


def test_without_a_question_message_the_placeholder_is_not_printed_either():
    card = _card("", [SEE_QUESTION_MESSAGE, SEE_QUESTION_MESSAGE])
    assert judge_example(card, {}) == ["Q4 should get full marks, got 0/10: "]
    assert _full_marks(card) == ["Q4 0/10: "]


def test_a_problem_is_one_line_and_each_message_is_named_once():
    card = _card("", ["wrong shape\n  expected (2, 4)", "wrong shape\n  expected (2, 4)", "off by 1e-3"])
    problems = judge_example(card, {})
    assert problems == ["Q4 should get full marks, got 0/10: wrong shape / expected (2, 4) / off by 1e-3"]
    assert all("\n" not in p for p in problems + _full_marks(card))
    # the hint is still looked for in every message, across their lines
    assert judge_example(card, {"verdicts": {"Q4": "zero"}, "hints": {"Q4": ["expected (2, 4)"]}}) == []
