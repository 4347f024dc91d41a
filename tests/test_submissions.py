"""Grade every example submission and assert its expected per-question verdict and hints.

Every assignment hwcheck finds has its examples in its folder's `examples/` and (the built-in ones, for
now) in `submissions/<assignment>/` (checker.spec.example_dirs); each such folder's `expected.json` maps a
submission id (file stem or folder name) to {"verdicts": {question: "full" | "lost" | "zero"},
"hints": {question: ["text that must appear in that question's messages (a passing test's note counts)", ...]},
"not_hints": {question: ["text that must not appear: a hint that would mislead", ...]}}.
Questions not named must score full marks (manual questions excepted). The judging is
checker.platforms.validate.judge_example, the one `hwcheck validate` uses (docs/authoring.md).
"""
import json
import os

import pytest

from checker.judging.scorecard import validate
from checker.spec import assignment_ids, example_dirs
from checker.platforms.validate import judge_example


def _entries(folder):
    return {os.path.splitext(e)[0] if e.endswith((".py", ".ipynb")) else e: e
            for e in os.listdir(folder) if e != "expected.json" and not e.startswith(".") and e != "__pycache__"}


def _folders():
    return [(aid, folder) for aid in assignment_ids() for folder in example_dirs(aid)]


def _cases():
    cases = []
    for aid, folder in _folders():
        with open(os.path.join(folder, "expected.json")) as f:
            expected = json.load(f)
        entries = _entries(folder)
        for sid, exp in sorted(expected.items()):
            assert sid in entries, f"{folder}/expected.json names {sid!r}, which is not in that folder"
            cases.append(pytest.param(aid, os.path.join(folder, entries[sid]), exp, id=f"{aid}/{sid}"))
    return cases


def test_every_submission_has_an_expected_verdict():
    assert _folders(), "no assignment has examples"
    for aid, folder in _folders():
        with open(os.path.join(folder, "expected.json")) as f:
            expected = json.load(f)
        for sid, e in _entries(folder).items():
            assert sid in expected, f"{folder}/{e} has no entry in expected.json"


@pytest.mark.slow
@pytest.mark.parametrize("aid,path,exp", _cases())
def test_submission_verdicts(hidden_grader, aid, path, exp):
    card = hidden_grader.grade(path, aid)
    validate(card)
    problems = judge_example(card, exp)
    assert not problems, "\n".join(problems)


def _card(cuda_outcome):
    tests = [{"name": "t[cpu]", "device": "cpu", "outcome": "passed", "message": ""},
             {"name": "t[cuda]", "device": "cuda", "outcome": cuda_outcome,
              "message": "numpy has no bfloat16" if cuda_outcome == "error" else ""}]
    score = 1 if cuda_outcome == "error" else 2
    return {"questions": [{"id": "q", "manual": False, "score": score, "max_score": 2, "tests": tests}]}


def test_with_cuda_verdicts_apply_only_where_the_cuda_variants_ran():
    """An example right on the CPU that a real GPU shows wrong (a numpy round trip of bfloat16, seen on an
    H200): its `with_cuda` entry is judged only where CUDA items ran, the CPU entry elsewhere."""
    exp = {"with_cuda": {"verdicts": {"q": "lost"}, "hints": {"q": ["numpy has no bfloat16"]}}}
    assert judge_example(_card("error"), exp) == []
    assert judge_example(_card("skipped"), exp) == []  # no GPU: the CPU's verdict (full) holds
    assert judge_example(_card("passed"), exp)  # CUDA ran and the example kept full marks: not as expected
    assert judge_example(_card("error"), {})  # without with_cuda, the GPU's loss is not as expected
