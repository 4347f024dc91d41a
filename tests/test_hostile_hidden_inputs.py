"""A submission cannot show a hidden test's inputs in a visible test's message (an attacker's probe).

The hidden tests' messages quote their inputs and are never shown to the student (checker.render.gradescope
gives their points and names only). A visible test's message quotes what the student's code says: its
exception, its printed output. Code that keeps the arrays a hidden test sent, and raises them in a later
visible test, printed the hidden inputs into results.json (about 1,900 characters of `W` of the hidden
split_heads test). A hidden test's asks now go to a worker of their own (SubmissionHandle.use_lane): the
worker that answers the visible tests never holds a hidden input. Tests run in their order, so carried-forward
credit still reads what every earlier test found.
"""
import json

import pytest

from checker.running.runner import Grader
from checker.spec import load_spec, reference_file

# the attacker's file: a correct submission whose split_heads keeps the arrays of the hidden test's shapes,
# and whose w_o_shape (a visible test) raises them
LEAKER = '''

_seen = []
_split = split_heads
def split_heads(W, num_heads):
    import numpy as _np
    if _np.asarray(W).shape in ((7, 12), (1, 9), (6, 5)):
        _seen.append(_np.asarray(W).round(6).tolist())
    return _split(W, num_heads)

_wo = w_o_shape
def w_o_shape(d_model, num_heads):
    if _seen:
        raise ValueError("LEAK " + repr(_seen)[:1900])
    return _wo(d_model, num_heads)
'''


def _tests(card):
    return [t for q in card["questions"] for t in q["tests"]]


@pytest.mark.walls
def test_the_hidden_inputs_kept_by_the_code_are_never_in_a_visible_message(tmp_path):
    path = tmp_path / "leaker.py"
    path.write_text(open(reference_file(load_spec("attention"))).read() + LEAKER)
    with Grader(mode="hidden", seed=5) as g:
        card = g.grade(str(path), "attention")
    visible = [t for t in _tests(card) if t["visibility"] == "visible"]
    hidden = [t for t in _tests(card) if t["visibility"] == "hidden"]
    assert visible and not any("LEAK" in json.dumps(t) for t in visible)
    # the hidden test whose arrays the code keeps did run
    assert any(t["name"].startswith("test_split_heads_random") for t in hidden), [t["name"] for t in hidden]
