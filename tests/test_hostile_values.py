"""Hostile answer values, graded for real: only real numbers earn points where numbers are expected.

Each submission here is a real file (in tmp_path, or an example in submissions/) graded end to end by
`Grader.grade`, the path of `hwcheck check`/`grade`: a real worker runs it, the answer crosses the wire
and compare.py judges it. The attacks answer with something that is not a number, yet passes a lax
judge: an array of True of the right shape (truthy, so "equal" to any non-zero answer), the right answer
cast to bool (`answer != 0`), (True, True) for a shape, a bool where the int 1 is right
(isinstance(True, int) holds), the right numbers as strings ("1.0"), as an object array or as complex
numbers with a zero imaginary part, numpy bool scalars. Each must score 0 on the tests it answers, with
a message naming the type or dtype; the correct examples keep full marks; a bool answer keeps counting
where the answer is itself bool (charlm's causal mask).
"""
import os
import textwrap

import pytest

from checker.spec import assignment_ids
from checker.spec import example_path as example


# every assignment found that has a correct example: it must keep full marks beside the attacks
CORRECT = {aid: example(aid, "correct.py") for aid in assignment_ids() if example(aid, "correct.py")}

NUMERIC_FUNCTIONS = ["get_scores", "scale_scores", "get_attention_weights", "get_context_vector", "context_vector",
                     "self_attention_token", "self_attention", "split_heads", "multi_head_attention"]
SHAPE_FUNCTIONS = ["head_weight_shape", "head_output_shape", "concat_shape", "w_o_shape"]


def _wrapped(aid, names, convert):
    """The correct submission, then each of `names` replaced by one that returns convert(right answer):
    the right values, handed back to the grader as something that is not numbers."""
    with open(CORRECT[aid]) as f:
        src = f.read()
    return src + textwrap.dedent(f'''

        import numpy as _np

        def _disguise(answer):
            return {convert}

        _depth = [0]

        def _wrap(f):
            def g(*args, **kwargs):  # disguised for the grader; the module's own calls get the numbers
                _depth[0] += 1
                try:
                    answer = f(*args, **kwargs)
                finally:
                    _depth[0] -= 1
                return answer if _depth[0] else _disguise(answer)
            g.__name__ = f.__name__
            return g

        for _name in {names!r}:
            globals()[_name] = _wrap(globals()[_name])
        ''')


# (id, functions disguised, how, words every failure must hold, whether every test of those functions fails:
# a bool only where the right int is 1 leaves the other answers right)
ATTENTION_ATTACKS = [
    ("truthy_right_answer", NUMERIC_FUNCTIONS,
     "[a != 0 for a in answer] if isinstance(answer, list) else _np.asarray(answer) != 0", "dtype bool", True),
    ("strings", NUMERIC_FUNCTIONS + SHAPE_FUNCTIONS, "_np.asarray(answer).astype(str).tolist()", "a str (", True),
    ("object_arrays", NUMERIC_FUNCTIONS + SHAPE_FUNCTIONS, "_np.asarray(answer, dtype=object)", "dtype object",
     True),
    ("complex", NUMERIC_FUNCTIONS, "_np.asarray(answer).astype(complex)", "complex", True),
    ("numpy_bool_shapes", SHAPE_FUNCTIONS, "tuple(_np.bool_(x) for x in answer)", "a bool", True),
    ("bool_for_one", SHAPE_FUNCTIONS, "tuple(True if x == 1 else x for x in answer)", "a bool", False),
]

# the words in a test's name that say it calls a function
CALLED_BY = {"get_scores": ["get_scores"], "scale_scores": ["scale_scores"],
             "get_attention_weights": ["attention_weights", "softmax"],
             "get_context_vector": ["context_vector", "context_property"], "context_vector": ["context_vector"],
             "self_attention_token": ["self_attention"], "self_attention": ["self_attention"],
             "split_heads": ["split_heads_blocks", "split_heads_random"],
             "multi_head_attention": ["multi_head_attention"],
             **{n: [n, "shapes_when_num_heads"] for n in SHAPE_FUNCTIONS}}


def _calls(test_name, names):
    base = test_name.split("[")[0]
    return any(w in base for n in names for w in CALLED_BY[n]) or (
        "leave_their_arguments_unchanged" in base and names is not SHAPE_FUNCTIONS)


@pytest.mark.slow
@pytest.mark.parametrize("attack,names,convert,words,every", ATTENTION_ATTACKS, ids=[a[0] for a in ATTENTION_ATTACKS])
def test_attention_answers_that_are_not_numbers_earn_nothing(hidden_grader, tmp_path, attack, names, convert,
                                                              words, every):
    path = tmp_path / f"{attack}.py"
    path.write_text(_wrapped("attention", names, convert))
    card = hidden_grader.grade(str(path), "attention")
    assert card["status"] == "graded"
    judged = [t for q in card["questions"] if not q["manual"] for t in q["tests"]
              if _calls(t["name"], names) and t["outcome"] != "skipped"]
    failed = [t for t in judged if t["outcome"] != "passed"]
    assert failed, f"{attack}: every test of the disguised functions passed"
    if every:
        passed = [t["name"] for t in judged if t["outcome"] == "passed"]
        assert not passed, f"{attack}: passed {passed}"
    for t in failed:
        assert t["points"] == 0, (attack, t["name"], t["points"])
        if "unchanged" not in t["name"]:  # (the argument tests may fail first on the arguments)
            assert words in (t.get("message") or ""), f"{attack}: {t['name']}: {t.get('message')}"
    if attack == "bool_for_one":  # (1, 10, 5): one head's output is (1, 2), answered (True, 2)
        assert "test_head_output_shape[1-10-5]" in [t["name"] for t in failed]


@pytest.mark.slow
def test_the_bool_answers_example_earns_only_its_value_errors(hidden_grader):
    """submissions/attention/bool_answers.py: np.ones(shape, bool) everywhere, (True, True) for shapes.
    It scored 87/90 when a bool answer was judged by its truthiness."""
    card = hidden_grader.grade(example("attention", "bool_answers.py"), "attention")
    for q in card["questions"]:
        for t in q["tests"]:
            if t["outcome"] == "passed":
                assert t["name"].startswith("test_split_heads_not_divisible"), t["name"]  # it raises ValueError
    msgs = "\n".join(t["message"] or "" for q in card["questions"] for t in q["tests"])
    assert "dtype bool" in msgs
    assert "it holds True, a bool" in msgs
    score = sum(q["score"] for q in card["questions"] if not q["manual"])
    assert score < 5, score


TORCH_EXAMPLES = [("vit", "bool_outputs", {"patchify": 0}), ("charlm", "bool_outputs", {"layernorm": 0,
                                                                                       "positions": 0})]


@pytest.mark.slow
@pytest.mark.parametrize("aid,sid,zero", TORCH_EXAMPLES, ids=[a for a, _, _ in TORCH_EXAMPLES])
def test_torch_bool_outputs_earn_no_value_points(hidden_grader, aid, sid, zero):
    """Modules and functions that return tensors of True of the right shape: every test that judges
    output values fails naming dtype bool; what earns points is structure (registered parameters, a
    causal mask that is right and bool, a build_vocab that is right, runs on another device)."""
    card = hidden_grader.grade(example(aid, f"{sid}.py"), aid)
    scores = {q["id"]: q["score"] for q in card["questions"]}
    for qid, want in zero.items():
        assert scores[qid] == want, (qid, scores)
    structural = ("parameter", "registered", "own_weights", "embedding_shapes", "another_device", "on_meta",
                  "build_vocab", "causal_mask")
    for q in card["questions"]:
        for t in q["tests"]:
            if t["outcome"] == "passed":
                assert any(s in t["name"] for s in structural), f"{t['name']} passed with bool outputs"
    msgs = "\n".join(t["message"] or "" for q in card["questions"] for t in q["tests"])
    assert "dtype bool" in msgs or "got bool" in msgs


@pytest.mark.slow
def test_a_correct_bool_mask_keeps_its_marks_and_numbers_keep_theirs(hidden_grader):
    """The one answer the handout wants as bools (charlm's causal mask) is still judged as bools, and
    the correct examples keep full marks."""
    card = hidden_grader.grade(example("charlm", "bool_outputs.py"), "charlm")
    mask = [t for q in card["questions"] for t in q["tests"] if t["name"].startswith("test_causal_mask")]
    assert mask and all(t["outcome"] == "passed" for t in mask)
    for aid, path in CORRECT.items():
        card = hidden_grader.grade(path, aid)
        for q in card["questions"]:
            if not q["manual"]:
                assert q["score"] == q["max_score"], (aid, q["id"], q.get("message"))
