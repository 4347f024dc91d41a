"""Grade every example submission and assert its expected per-question verdict and hints.

`submissions/<assignment>/expected.json` maps a submission id (file stem or
folder name) to {"verdicts": {question: "full" | "lost" | "zero"},
"hints": {question: ["text that must appear in that question's messages (a passing test's note counts)", ...]},
"not_hints": {question: ["text that must not appear: a hint that would mislead", ...]}}.
Questions not named must score full marks (manual questions excepted).
"""
import json
import os

import pytest

from checker.scorecard import validate

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "submissions")


def _cases():
    cases = []
    for aid in sorted(os.listdir(ROOT)) if os.path.isdir(ROOT) else []:
        exp_path = os.path.join(ROOT, aid, "expected.json")
        if not os.path.isfile(exp_path):
            continue
        with open(exp_path) as f:
            expected = json.load(f)
        entries = {os.path.splitext(e)[0] if e.endswith((".py", ".ipynb")) else e: e
                   for e in os.listdir(os.path.join(ROOT, aid)) if e != "expected.json" and not e.startswith(".")}
        for sid, exp in sorted(expected.items()):
            assert sid in entries, f"{aid}/expected.json names {sid!r}, which is not in submissions/{aid}/"
            cases.append(pytest.param(aid, os.path.join(ROOT, aid, entries[sid]), exp, id=f"{aid}/{sid}"))
    return cases


def test_every_submission_has_an_expected_verdict():
    for aid in os.listdir(ROOT):
        if not os.path.isdir(os.path.join(ROOT, aid)):
            continue
        with open(os.path.join(ROOT, aid, "expected.json")) as f:
            expected = json.load(f)
        for e in os.listdir(os.path.join(ROOT, aid)):
            if e == "expected.json" or e.startswith(".") or e == "__pycache__":
                continue
            sid = os.path.splitext(e)[0] if e.endswith((".py", ".ipynb")) else e
            assert sid in expected, f"submissions/{aid}/{e} has no entry in expected.json"


@pytest.mark.slow
@pytest.mark.parametrize("aid,path,exp", _cases())
def test_submission_verdicts(hidden_grader, aid, path, exp):
    card = hidden_grader.grade(path, aid)
    validate(card)
    verdicts = exp.get("verdicts", {})
    for q in card["questions"]:
        if q["manual"]:
            continue
        want = verdicts.get(q["id"], "full")
        # failures' messages, and the notes passing tests carry (an error carried forward from another question)
        msgs = "\n".join([q.get("message", "")] + [t["message"] for t in q["tests"]
                                                   if t["outcome"] != "passed" or t.get("message")])
        if want == "full":
            assert q["score"] == q["max_score"], f"{q['id']} should be full marks:\n{msgs}"
        elif want == "zero":
            assert q["score"] == 0, f"{q['id']} should score 0, got {q['score']}"
        else:
            assert 0 <= q["score"] < q["max_score"], f"{q['id']} should lose points, got {q['score']}"
        for hint in exp.get("hints", {}).get(q["id"], []):
            assert hint.lower() in msgs.lower(), f"{q['id']}: hint {hint!r} missing from:\n{msgs}"
        for hint in exp.get("not_hints", {}).get(q["id"], []):
            assert hint.lower() not in msgs.lower(), f"{q['id']}: misleading {hint!r} in:\n{msgs}"
