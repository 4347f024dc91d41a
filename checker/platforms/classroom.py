"""GitHub Classroom's autograding: the result a runner step hands its grading reporter, and the workflow.

What it is for: a course that hands out homework as GitHub Classroom repositories sees points in
Classroom's dashboard only through `classroom-resources/autograding-grading-reporter`. That action
reads, for each runner named in its `runners` input, the environment variable `<RUNNER>_RESULTS`: a
base64-encoded JSON object `{"version": 1, "status": "pass"|"fail"|"error", "max_score": N,
"tests": [{"name", "status", "score", "message", "test_code", "filename", "line_no", "duration"}]}`
(the shape classroom-resources/autograding-command-grader writes). It posts "Points X/Y" to Classroom,
X being the sum of the tests' `score` and Y the sum of the runners' `max_score`, and fails the job
when a runner's status is "fail" or "error".

- `make_result(card)`: that object from a scorecard: one test per automatic question, its points as
  the score, so the teacher sees points per question; questions graded by a person are left out (their
  points are not the runner's to give). Pure.
- `encode_result(card)`: the base64 text of `make_result`, as the step output `result`.
- `workflow_yaml(...)`: `.github/workflows/classroom.yml`: hwcheck's public check as the runner (its
  annotations and summary for the student), then the reporter; every action pinned to a commit.

What it is not: a client of GitHub's API (the reporter posts), nor the plain CI workflow
(`checker.platforms.ci`).
"""

import base64
import json
import re
import shlex

from checker.platforms.ci import ACTIONS as CI_ACTIONS, PYTHON_VERSION, TORCH_CPU_INDEX, check_command, _value

__all__ = ["RUNNER", "DEFAULT_WORKFLOW", "ACTIONS", "make_result", "encode_result", "workflow_yaml"]

RUNNER = "hwcheck"  # the step id, and so the reporter's `runners` input and the HWCHECK_RESULTS variable
DEFAULT_WORKFLOW = ".github/workflows/classroom.yml"
# every action pinned to the commit of its tag (zizmor's unpinned-uses): a moved tag cannot change the workflow
ACTIONS = {
    **CI_ACTIONS,
    "reporter": "classroom-resources/autograding-grading-reporter@d13b5912daf5042ac1b71bc38bdb4a6bcd61d8ca  # v1",
}
_MESSAGE_CHARS = 2000


def _points(x):
    x = float(x or 0)
    return int(x) if x.is_integer() else x


def _message(q):
    """A question's message for the reporter: the question's own, else its failing tests' first lines."""
    if q.get("message"):
        text = q["message"]
    else:
        text = "\n".join(f"{t['name']}: {(t.get('message') or t['outcome']).splitlines()[0]}"
                         for t in q.get("tests", []) if t.get("outcome") in ("failed", "error", "timeout"))
    return text[:_MESSAGE_CHARS]


def make_result(card):
    """The reporter's result object for one scorecard (see the module docstring)."""
    tests = []
    for q in card.get("questions", []):
        if q.get("manual"):
            continue
        full = float(q.get("score") or 0) >= float(q.get("max_score") or 0)
        tests.append({"name": f"{q['id']}: {q.get('title') or q['id']}",
                      "status": "pass" if full else "fail",
                      "score": _points(q.get("score")),
                      "message": _message(q),
                      "test_code": "", "filename": "", "line_no": 0,
                      "duration": int(1000 * sum(float(t.get("duration_s") or 0) for t in q.get("tests", [])))})
    max_score = _points(sum(float(q.get("max_score") or 0) for q in card.get("questions", []) if not q.get("manual")))
    if card.get("status") not in (None, "graded") and not tests:
        status = "error"
    else:
        status = "pass" if tests and all(t["status"] == "pass" for t in tests) else "fail"
    return {"version": 1, "status": status, "max_score": max_score, "tests": tests}


def encode_result(card):
    """base64 of make_result(card)'s JSON, as the runner step's output `result`."""
    return base64.b64encode(json.dumps(make_result(card), ensure_ascii=True).encode("ascii")).decode("ascii")


def workflow_yaml(assignment=None, path=".", package="hwcheck", python_version=PYTHON_VERSION):
    """The text of `.github/workflows/classroom.yml` (ends with a newline); values as checker.platforms.ci's."""
    check = check_command(path, assignment) + " --classroom-output"
    package = shlex.quote(_value("package", package))
    python_version = _value("python_version", python_version)
    if not re.fullmatch(r"[0-9][0-9.]*", python_version):
        raise ValueError(f"python_version must look like 3.11, got {python_version!r}")
    about = f"assignment {assignment}" if assignment else "the assignment it looks like"
    return f"""\
# Written by `hwcheck init-ci --classroom`. GitHub Classroom's autograding: hwcheck's public check of
# {_value("path", path)!r} ({about}) is the runner (annotations and a step summary
# for the student), and Classroom's grading reporter posts its points per question to the dashboard.
name: Autograding Tests

on:
  push:
  repository_dispatch:
  workflow_dispatch:

permissions:
  checks: write
  actions: read
  contents: read

jobs:
  run-autograding-tests:
    runs-on: ubuntu-latest
    timeout-minutes: 20
    if: github.actor != 'github-classroom[bot]'
    steps:
      - name: Check out the repository
        uses: {ACTIONS["checkout"]}
        with:
          persist-credentials: false

      - name: Set up Python
        uses: {ACTIONS["setup-python"]}
        with:
          python-version: "{python_version}"

      - name: Install PyTorch (CPU build) and hwcheck
        run: |
          python -m pip install --upgrade pip
          pip install torch --index-url {TORCH_CPU_INDEX}
          pip install {package}

      - name: hwcheck
        id: {RUNNER}
        continue-on-error: true
        env:
          NO_COLOR: "1"
        run: |
          {check}

      - name: Autograding Reporter
        uses: {ACTIONS["reporter"]}
        env:
          {RUNNER.upper()}_RESULTS: "${{{{ steps.{RUNNER}.outputs.result }}}}"
        with:
          runners: {RUNNER}
"""

