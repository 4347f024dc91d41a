"""The student kit: hwcheck without the reference solutions and without the hidden tests.

What it is for: `hwcheck check` computes expected values by calling the
reference solutions, so the full package cannot be given to students.
`build_kit(outdir)` writes a source tree students can `pip install` instead:
each assignment's `reference.py` is left out; in its place the assignment carries
`recorded.json`, the reference's answers to the public tests, recorded by
running those tests once with the public seed (`RecordingRef`). Hidden test
functions are cut out of the test files. In the kit the `ref` fixture is a
`ReplayRef` that hands back the recorded answer of each call, in order; a
check whose answers were not recorded (a CUDA variant, say) is skipped with
the reason.

The grading tests' own models of answers (a softmax to make inputs with, the
known mistakes a hint names: each a step or an argument away from a right
answer) live in `assignments/<id>/_answers.py`, which the kit does not ship:
a test file reaches them through `Answers`, which computes them in the full
package, records each result (keyed by the function's name and its
arguments) while the kit is built, and replays it in the kit, so the kit's
public checks give the same verdicts, messages and hints without any code
that computes an answer.

What it is not: a secret keeper for the public answers (they are in the kit
in plain sight, as public test expectations are) or a grader: grading with
hidden tests needs the full package.
"""

import ast
import base64
import contextlib
import hashlib
import importlib
import json
import os
import shutil

import pytest

from checker import wire

from checker.running.recorded import ANSWER_MODELS, HIDDEN_COUNTS, RECORDED

__all__ = ["build_kit", "record_public"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # checker/platforms/..


def _strip_hidden(source, hidden):
    """The test file's source without the hidden test functions (and their decorators)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in hidden:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            cut.update(range(start - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in cut)


def build_kit(outdir, record, package=None):
    """Write the student kit into `outdir`; `record(aid)` returns the recorded answers of an assignment.

    package: the pip spec the kit will be published as; written to
    `checker/kit.json` for `hwcheck init-ci` (see `checker.platforms.ci.kit_package`) and into the
    student README. The kit's pyproject.toml and README.md come from `checker.platforms.kit_files`.
    """
    from checker.spec import ASSIGNMENTS_DIR, assignment_ids, load_spec, grading_test_files
    if os.path.exists(outdir) and os.listdir(outdir):
        raise FileExistsError(f"{outdir} exists and is not empty")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", RECORDED, ANSWER_MODELS)
    shutil.copytree(os.path.join(ROOT, "checker"), os.path.join(outdir, "checker"), ignore=ignore,
                    dirs_exist_ok=True)
    # an assignment's own reference.py and example submissions never go into the kit (issue 29)
    folder_ignore = shutil.ignore_patterns("__pycache__", "*.pyc", RECORDED, ANSWER_MODELS, "reference.py",
                                           "examples")
    shutil.copytree(ASSIGNMENTS_DIR, os.path.join(outdir, "assignments"), ignore=folder_ignore)
    from checker.spec import assignment_dirs, is_builtin
    for aid, folder in assignment_dirs().items():  # a course's own (HWCHECK_ASSIGNMENTS, entry points)
        if not is_builtin(aid):
            shutil.copytree(folder, os.path.join(outdir, "assignments", aid), ignore=folder_ignore)
    for aid in assignment_ids():
        spec = load_spec(aid)
        hidden = {t for q in spec["questions"] for t in q.get("hidden_tests", [])}
        for path in grading_test_files(spec):
            with open(path, encoding="utf-8") as f:
                source = f.read()
            target = os.path.join(outdir, "assignments", aid, os.path.basename(path))
            with open(target, "w", encoding="utf-8") as f:
                f.write(_strip_hidden(source, hidden))
        with open(os.path.join(outdir, "assignments", aid, RECORDED), "w", encoding="utf-8") as f:
            json.dump(record(aid), f)
    from checker.platforms.ci import KIT_FILE, _value
    from checker.platforms.kit_files import kit_pyproject, kit_readme
    # kit.json marks this copy as the student kit (the CLI then offers no `kit` nor `grade`), and says
    # where it is published for `hwcheck init-ci`
    with open(os.path.join(outdir, "checker", KIT_FILE), "w", encoding="utf-8") as f:
        json.dump({"student_kit": True, **({"package": _value("package", package)} if package else {})}, f)
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = kit_pyproject(f.read())
    with open(os.path.join(outdir, "pyproject.toml"), "w", encoding="utf-8") as f:
        f.write(pyproject)
    titles = [(aid, load_spec(aid).get("title", aid)) for aid in assignment_ids()]
    with open(os.path.join(outdir, "README.md"), "w", encoding="utf-8") as f:
        f.write(kit_readme(titles, package))
    return outdir


def record_public(aid, grader):
    """Grade the reference on the public tests, recording every answer the tests ask of it."""
    import importlib.util

    from checker.errors import HwcheckError
    from checker.spec import load_spec
    spec = load_spec(aid)
    store = {}
    grader.record = store
    try:
        card = grader.grade(importlib.util.find_spec(spec["reference"]).origin, aid)
    finally:
        grader.record = None
    # the kit has no hidden test to count: it tells the full package's count of them
    store[HIDDEN_COUNTS] = {q["id"]: q.get("hidden_tests", 0) for q in card["questions"]}
    manual = sum(q["max_score"] for q in card["questions"] if q["manual"])
    if card["score"] != card["max_score"] - manual:
        raise HwcheckError(f"the reference of {aid} does not pass its own public tests; no kit written")
    return store
