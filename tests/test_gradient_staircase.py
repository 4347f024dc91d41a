"""The gradient check tells a forward that rounds inside (attention scores cast to bfloat16: a staircase at small
steps) from a cut-off gradient by a second look at a larger step (checker.running.modules.GradientCheck.staircases).

At seed 103 the small steps of the correct bfloat16 example's W_q moved the output by 0 along one direction and by
a jump (28) along the other, so it was neither flat in every direction (flat_parts) nor in agreement: 4 of 35
points of mhsa lost by correct code (the seed sweep of this round). A detached attention keeps failing at the same
seed: its forwards move smoothly at every step and autograd gives W_q nothing.
"""
import os

import pytest

from checker.running.runner import Grader

EXAMPLES = os.path.join(os.path.dirname(__file__), os.pardir, "assignments", "vit", "examples")
TEST = "test_mhsa_gradient_follows_the_output"


def _test(card):
    [t] = [t for q in card["questions"] for t in q["tests"] if t["name"] == TEST]
    return t["outcome"], t.get("message") or ""


@pytest.mark.slow
def test_a_bfloat16_staircase_is_not_a_cut_off_gradient_and_a_detach_still_is():
    with Grader(mode="hidden", seed=103) as g:
        stairs = _test(g.grade(os.path.join(EXAMPLES, "correct_scores_in_bfloat16.py"), "vit"))
        detached = _test(g.grade(os.path.join(EXAMPLES, "attention_weights_detached.py"), "vit"))
    assert stairs[0] != "failed", stairs
    assert detached[0] == "failed" and "cut off from autograd" in detached[1], detached
