"""Plain pytest grades one submission with `-p checker.standalone` (docs/tas.md): the TA's way to debug a
grading test, outside `hwcheck` (the entry point sits above checker.running.plugin and checker.running.runner, with no
import circle between them: tests/test_layers.py)."""
import os
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _pytest(submission, *extra):
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "assignments/attention",
            "-p", "checker.standalone", "--hwcheck-submission", os.path.join("submissions", "attention", submission),
            *extra]
    return subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
def test_plain_pytest_grades_a_correct_submission_and_fails_a_wrong_one():
    good = _pytest("correct.py")
    assert good.returncode == 0, good.stdout[-3000:] + good.stderr[-3000:]
    assert " passed" in good.stdout and "failed" not in good.stdout and "deselected" in good.stdout  # hidden ones
    bad = _pytest("no_scaling.py", "--hwcheck-mode", "hidden")
    assert bad.returncode == 1, bad.stdout[-3000:] + bad.stderr[-3000:]
    assert " failed" in bad.stdout and "deselected" not in bad.stdout
