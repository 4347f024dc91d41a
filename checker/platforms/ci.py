"""The GitHub Actions workflow that `hwcheck init-ci` writes into a student's repository.

What it is for: `workflow_yaml(...)` returns the text of a workflow that, on
every push and pull request, checks the repository out, sets up Python 3.11,
installs the CPU build of PyTorch and then hwcheck, and runs the public
self-check with GitHub annotations, a step summary and a JUnit report (kept
as an artifact). It is a pure function: it writes nothing.

`kit_package()` is where the student kit says it is published (written by
`hwcheck kit --package`), the workflow's default `pip install`;
`guess_submission(folder)` picks the one homework file of a repository's top
level (a starter notebook is not one).

What it is not: a YAML library. The text is a fixed template; every value put
into it is validated (one line, no control characters) and shell-quoted, and
sits in a YAML block scalar, so no value can change the workflow's structure.
"""

import json
import os
import re
import shlex

__all__ = ["ACTIONS", "DEFAULT_PACKAGE", "DEFAULT_PATH", "KIT_FILE", "kit_package", "guess_submission", "DEFAULT_WORKFLOW", "JUNIT_FILE", "TORCH_CPU_INDEX",
           "workflow_yaml", "check_command"]

DEFAULT_PACKAGE = "hwcheck"
DEFAULT_PATH = "."
DEFAULT_WORKFLOW = ".github/workflows/hwcheck.yml"
JUNIT_FILE = "hwcheck-junit.xml"
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PYTHON_VERSION = "3.11"

# every action pinned to the commit of its tag (zizmor's unpinned-uses): a moved tag cannot change the workflow
ACTIONS = {
    "checkout": "actions/checkout@11d5960a326750d5838078e36cf38b85af677262  # v4.4.0",
    "setup-python": "actions/setup-python@a26af69be951a213d495a4c3e4e4022e16d87065  # v5.6.0",
    "upload-artifact": "actions/upload-artifact@ea165f8d65b6e75b540449e92b4886f43607fa02  # v4.6.2",
}

KIT_FILE = "kit.json"  # in checker/, in the student kit only: {"package": SPEC}
_NOT_HOMEWORK = re.compile(r"starter|template|^setup\.py$|^conftest\.py$|^noxfile\.py$", re.IGNORECASE)
_UNSAFE = re.compile(r"[\x00-\x1f\x7f]")


def _value(name, text):
    text = str(text)
    if not text.strip():
        raise ValueError(f"{name} must not be empty")
    if _UNSAFE.search(text):
        raise ValueError(f"{name} must be one line of printable text, got {text!r}")
    return text


def kit_package():
    """The pip spec the student kit was published as (`hwcheck kit --package`), or None."""
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), KIT_FILE)  # in checker/
    try:
        with open(path, encoding="utf-8") as f:
            package = json.load(f).get("package")
    except (OSError, ValueError, AttributeError):
        return None
    return package if isinstance(package, str) and package.strip() else None


def guess_submission(folder):
    """(the homework file at the top of `folder`, or None; the candidates seen).

    Candidates are the .ipynb and .py files not hidden and not a starter,
    template or tooling file; the guess is made only when there is exactly one.
    """
    found = sorted(n for n in os.listdir(folder)
                   if n.endswith((".ipynb", ".py")) and not n.startswith(".") and not _NOT_HOMEWORK.search(n)
                   and os.path.isfile(os.path.join(folder, n)))
    return (found[0] if len(found) == 1 else None), found


def check_command(path=DEFAULT_PATH, assignment=None, junit=JUNIT_FILE):
    """The shell command of the check step."""
    words = ["hwcheck", "check", _value("path", path)]
    if assignment:
        words += ["-a", _value("assignment", assignment)]
    words += ["--ci", "--junit", _value("junit", junit)]
    return " ".join(shlex.quote(w) for w in words)


def workflow_yaml(assignment=None, path=DEFAULT_PATH, package=DEFAULT_PACKAGE,
                  python_version=PYTHON_VERSION):
    """The workflow's YAML text (ends with a newline).

    assignment: an assignment id, or None to let hwcheck infer it.
    path: the submission, relative to the repository root (a file or a folder).
    package: what `pip install` installs for hwcheck (a name, a pinned version,
    a git URL ...).
    """
    check = check_command(path, assignment)
    package = shlex.quote(_value("package", package))
    python_version = _value("python_version", python_version)
    if not re.fullmatch(r"[0-9][0-9.]*", python_version):
        raise ValueError(f"python_version must look like 3.11, got {python_version!r}")
    about = f"assignment {assignment}" if assignment else "the assignment it looks like"
    return f"""\
# Written by `hwcheck init-ci`. Runs hwcheck's public self-check of {_value("path", path)!r}
# ({about}) on every push and pull request: failed tests show as annotations,
# the step summary shows the score, and the JUnit report is kept as an artifact.
name: hwcheck

on:
  push:
  pull_request:
  workflow_dispatch:

permissions:
  contents: read

jobs:
  check:
    runs-on: ubuntu-latest
    timeout-minutes: 20
    steps:
      - name: Check out the repository
        uses: {ACTIONS["checkout"]}
        with:
          persist-credentials: false

      - name: Set up Python
        uses: {ACTIONS["setup-python"]}
        with:
          python-version: "{python_version}"

      - name: Install PyTorch (CPU build)
        run: |
          python -m pip install --upgrade pip
          pip install torch --index-url {TORCH_CPU_INDEX}

      - name: Install hwcheck
        run: |
          pip install {package}

      - name: Check the submission
        env:
          NO_COLOR: "1"
        run: |
          {check}

      - name: Keep the JUnit report
        if: always()
        uses: {ACTIONS["upload-artifact"]}
        with:
          name: hwcheck-junit
          path: {JUNIT_FILE}
          if-no-files-found: ignore
"""
