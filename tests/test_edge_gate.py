"""Verdicts that match the size of the mistake (issue 19) and listed mistakes shown in the self-check (issue 20).

Real example submissions (submissions/<id>/), graded end to end in real workers:

  * An edge-case input on which a listed mistake is invisible (one token, position 0, T = 1, rows of one
    score) earned that test's points for wrong code: an averaging context vector passed with T = 1, an
    inverted frequency formula at position 0, a mask on the wrong triangle at T = 1. Such a test now earns
    only for a function that is also right where the mistake shows (checker.judging.edge_gate): it is skipped,
    with the reason, when the function is wrong there, and passes as before for right code.
  * A self_attention_token that reads the notebook's X and W_* scored 30/30 in the public self-check and
    lost points only in grading: a public test now calls it with other values.
"""
import os

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (assignment, submission, the edge-case tests it must not earn: name prefixes with their parameters)
WRONG_ELSEWHERE = [
    ("attention", "context_average", ["test_get_context_vector_random[1-4-"]),
    # (no_scaling's multi_head_attention is its own self_attention per head: its mistake is charged in Q2
    # only, checker.running.carry, so Q3's edge case earns like the rest of Q3)
    ("attention", "no_scaling", ["test_self_attention_random[1-4-4-4-", "test_context_vector_random[1-4-"]),
    ("attention", "abs_normalised_weights", ["test_softmax_random_shapes[shape0-", "test_softmax_random_shapes[shape2-"]),
    ("charlm", "positions_frequency_inverted", ["test_sinusoidal_positions[1-4]"]),
    ("charlm", "mask_wrong_triangle", ["test_causal_mask[1]"]),
    ("charlm", "no_causal_mask_model", []),
]


def _tests(card):
    return {t["name"]: t for q in card["questions"] for t in q["tests"]}


def _edge(tests, prefixes):
    found = [t for name, t in tests.items() if any(name.startswith(p) for p in prefixes)]
    assert len(found) >= len(prefixes), (prefixes, sorted(tests))
    return found


@pytest.mark.slow
@pytest.mark.parametrize("aid,sid,prefixes", [w for w in WRONG_ELSEWHERE if w[2]],
                         ids=[f"{a}/{s}" for a, s, p in WRONG_ELSEWHERE if p])
def test_edge_cases_earn_nothing_for_code_wrong_where_the_mistake_shows(hidden_grader, aid, sid, prefixes):
    path = os.path.join(REPO, "submissions", aid, sid + ".py")
    edge = _edge(_tests(hidden_grader.grade(path, aid)), prefixes)
    for t in edge:  # a crash or a visible mistake on the edge case still fails it
        assert t["outcome"] in ("skipped", "failed"), (t["name"], t["outcome"], t.get("message"))
        assert not t.get("points"), t
        if t["outcome"] == "skipped":
            assert "judged by the other tests, not here" in t["message"], t["message"]
    assert any(t["outcome"] == "skipped" for t in edge), [(t["name"], t["outcome"]) for t in edge]


RIGHT = [("attention", "correct", [p for _, _, ps in WRONG_ELSEWHERE[:3] for p in ps]),
         ("charlm", "correct", ["test_sinusoidal_positions[1-4]", "test_causal_mask[1]",
                                "test_masked_attention_more_shapes[cpu-q_shape0-2]"])]


@pytest.mark.slow
@pytest.mark.parametrize("aid,sid,prefixes", RIGHT, ids=[a for a, _, _ in RIGHT])
def test_edge_cases_keep_their_points_for_right_code(hidden_grader, aid, sid, prefixes):
    path = os.path.join(REPO, "submissions", aid, sid + ".py")
    for t in _edge(_tests(hidden_grader.grade(path, aid)), prefixes):
        assert t["outcome"] == "passed" and t["points"] > 0, (t["name"], t["outcome"], t.get("message"))


@pytest.mark.slow
def test_the_public_self_check_shows_a_function_reading_notebook_variables(grader):
    """Issue 20: the handout's first listed mistake shows in `check`, not first in grading."""
    card = grader.grade(os.path.join(REPO, "submissions", "attention", "token_reads_notebook.py"), "attention")
    q2 = next(q for q in card["questions"] if q["id"] == "Q2")
    assert q2["score"] < q2["max_score"], q2
    msgs = "\n".join(t["message"] for t in q2["tests"])
    assert "the function seems to use the handout's notebook variables (X, W_Q, W_K, W_V)" in msgs, msgs
