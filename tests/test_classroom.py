"""GitHub Classroom's points (checker.platforms.classroom) and every workflow hwcheck writes, linted.

The result payload is read here as classroom-resources/autograding-grading-reporter reads it (a
port of src/main.js and src/notify-classroom.js at v1, d13b5912): base64 JSON per runner, the
"Points X/Y" notice summing each test's `score` over the runners' `max_score`, and the job failed
for a runner status "fail" or "error". (The reporter itself was run by hand on this payload with
node: it printed `::notice title=Autograding complete::Points 48.32/90` for no_scaling.py.)
The workflows are checked with actionlint and zizmor where they are installed (the test extra
installs both).
"""
import base64
import json
import os
import shutil
import subprocess
import sys

import pytest

from checker.platforms.ci import workflow_yaml as ci_workflow
from checker.platforms.classroom import RUNNER, encode_result, make_result, workflow_yaml as classroom_workflow

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUBS = os.path.join(REPO, "submissions", "attention")


def reporter(env):
    """What the grading reporter does with the runners' env variables: (notice text, job failed?)."""
    runners = [r.strip() for r in env["INPUT_RUNNERS"].split(",")]
    results = [json.loads(base64.b64decode(env[f"{r.upper()}_RESULTS"]).decode("utf-8")) for r in runners]
    total, most = 0, 0
    for r in results:
        if not r["max_score"]:
            continue
        most += r["max_score"]
        total += sum(t["score"] for t in r["tests"])
    notice = f"Points {_js(total)}/{_js(most)}" if most else None
    failed = any(r["status"] in ("fail", "error") for r in results)
    return notice, failed


def _js(x):
    """A number as JavaScript's template strings write it (an integral float without `.0`)."""
    return str(int(x)) if float(x).is_integer() else repr(float(x))


@pytest.fixture(scope="module")
def cards(grader):
    return {name: grader.grade(os.path.join(SUBS, f"{name}.py"), "attention") for name in ("correct", "no_scaling")}


def test_the_reporter_posts_the_scorecards_points_per_question(cards):
    for name, card in cards.items():
        result = make_result(card)
        automatic = [q for q in card["questions"] if not q["manual"]]
        assert [t["name"].split(":")[0] for t in result["tests"]] == [q["id"] for q in automatic]
        assert [t["score"] for t in result["tests"]] == pytest.approx([q["score"] for q in automatic])
        assert result["max_score"] == sum(q["max_score"] for q in automatic)
        notice, failed = reporter({"INPUT_RUNNERS": RUNNER, f"{RUNNER.upper()}_RESULTS": encode_result(card)})
        assert notice == f"Points {_js(sum(q['score'] for q in automatic))}/{_js(result['max_score'])}"
        assert sum(q["score"] for q in automatic) == pytest.approx(card["score"])
        assert failed == (name != "correct"), (name, result["status"])
    lost = [t for t in make_result(cards["no_scaling"])["tests"] if t["status"] == "fail"]
    assert lost and all(t["message"] for t in lost)


def test_a_submission_that_did_not_load_is_an_error_not_a_pass():
    card = {"status": "load_failed", "questions": []}
    assert make_result(card)["status"] == "error"


def test_check_writes_the_step_output_for_the_reporter(tmp_path):
    out = tmp_path / "github_output"
    out.write_text("earlier=1\n")
    env = {**os.environ, "GITHUB_OUTPUT": str(out)}
    r = subprocess.run([sys.executable, "-m", "checker.cli", "check", os.path.join(SUBS, "no_scaling.py"),
                        "--classroom-output"], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert r.returncode == 1, r.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == "earlier=1" and lines[1].startswith("result=")
    notice, failed = reporter({"INPUT_RUNNERS": RUNNER, "HWCHECK_RESULTS": lines[1][len("result="):]})
    assert failed and notice.startswith("Points ") and not notice.startswith("Points 0/")


def _workflows():
    return {"hwcheck.yml": ci_workflow(assignment="attention", path="homework 1.ipynb", package="hwcheck-student"),
            "classroom.yml": classroom_workflow(assignment="attention", path="homework 1.ipynb",
                                                package="git+https://github.com/course/hwcheck-student")}


def test_the_classroom_workflow_hands_the_runner_result_to_the_reporter():
    text = _workflows()["classroom.yml"]
    assert f"id: {RUNNER}" in text and f"runners: {RUNNER}" in text
    assert f"{RUNNER.upper()}_RESULTS: \"${{{{ steps.{RUNNER}.outputs.result }}}}\"" in text
    assert "--classroom-output" in text and "continue-on-error: true" in text


@pytest.mark.parametrize("tool", ["actionlint", "zizmor"])
def test_every_workflow_hwcheck_writes_passes_the_linters(tmp_path, tool):
    exe = shutil.which(tool) or (os.path.join(os.path.dirname(sys.executable), tool)
                                 if os.path.exists(os.path.join(os.path.dirname(sys.executable), tool)) else None)
    if exe is None:
        pytest.skip(f"{tool} is not installed (pip install '.[test]' installs it)")
    folder = tmp_path / ".github" / "workflows"
    folder.mkdir(parents=True)
    for name, text in _workflows().items():
        (folder / name).write_text(text)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    cmd = [exe] if tool == "actionlint" else [exe, "--offline", "--no-progress", str(folder)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
