"""Hostile test: a course's own assignment (issue 29) is as secret as a built-in one.

A course keeps its assignment -- spec, hidden tests, reference.py -- in a package of its own, installed
on the grading machine where hwcheck finds it (HWCHECK_ASSIGNMENTS, or a `hwcheck.assignments` entry
point). The worker can read the Python path (it must import numpy), so such a package lies in a tree a
worker reads: unless every discovered assignment folder and its reference are among the secret trees,
a submission opens the reference, or imports it, and returns its answers. Here the course's package is
on the workers' Python path (as site-packages is); a package beside it stays readable, which shows the
refusal is the carve-out, not a path the worker cannot reach at all. Marked `walls`: it holds in both
modes (tests/test_wall_modes.py runs it again with CAP_SYS_ADMIN dropped, where Landlock carves it).
"""

import json
import os
import textwrap

import pytest

from checker.running import zygote_client
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from checker.worker import landlock

pytestmark = [pytest.mark.slow, pytest.mark.walls]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SPEC = textwrap.dedent('''\
    id = "coursehw"
    title = "A course's own homework"
    framework = "numpy"
    [[questions]]
    id = "Q1"
    title = "Add"
    points = 10
    names = ["add"]
    hidden_tests = ["test_add_hidden"]
''')
TESTS = textwrap.dedent('''\
    import pytest

    SECRET_CASES = [(40, 2)]  # the hidden test's inputs: a student must not see them


    @pytest.mark.question("Q1")
    def test_add(sub, ref):
        assert sub.call("add", 1, 2) == ref.add(1, 2)


    @pytest.mark.question("Q1")
    def test_add_hidden(sub, ref):
        for a, b in SECRET_CASES:
            assert sub.call("add", a, b) == ref.add(a, b)
''')
REFERENCE = "ANSWER_KEY = 'the answers'\n\ndef add(a, b):\n    return a + b\n"

ATTACK = textwrap.dedent('''\
    import importlib, os, sys

    def add(a, b):
        return a + b

    def read(path):
        try:
            return "ok: " + open(path).read()[:200]
        except BaseException as e:
            return "refused: " + type(e).__name__

    def listdir(path):
        try:
            return "ok: " + str(sorted(os.listdir(path)))
        except BaseException as e:
            return "refused: " + type(e).__name__

    def steal(module, site):
        try:
            sys.path.insert(0, site)
            return "ok: " + str(getattr(importlib.import_module(module), "ANSWER_KEY", "imported"))
        except BaseException as e:
            return "refused: " + type(e).__name__
''')


@pytest.fixture
def course(tmp_path, monkeypatch):
    """A site folder on the workers' Python path holding the course's assignment and an unrelated package."""
    site = tmp_path / "site"
    hw = site / "coursehw"
    hw.mkdir(parents=True)
    (hw / "__init__.py").write_text("")
    (hw / "spec.toml").write_text(SPEC)
    (hw / "test_coursehw.py").write_text(TESTS)
    (hw / "reference.py").write_text(REFERENCE)
    (site / "neighbour").mkdir()
    (site / "neighbour" / "__init__.py").write_text("ANSWER_KEY = 'public'\n")
    (site / "neighbour" / "data.txt").write_text("readable\n")
    # a site folder every user reaches (the fallback checks it): tmp_path and its parents up to a folder others
    # enter already (under xdist there is one level more: basetemp/popen-gwN/), never pytest's pytest-of-<user>
    for p in (tmp_path, *tmp_path.parents):
        if p.name.startswith("pytest-of-") or p == p.parent or os.stat(p).st_mode & 0o005 == 0o005:
            break
        os.chmod(p, 0o755)
    for p in (site, hw, site / "neighbour"):
        os.chmod(p, 0o755)
    for p in [*hw.iterdir(), *(site / "neighbour").iterdir()]:
        os.chmod(p, 0o644)
    monkeypatch.setenv("HWCHECK_ASSIGNMENTS", str(hw))
    root = zygote_client._import_root()
    monkeypatch.setattr(zygote_client, "_import_root", lambda: root + os.pathsep + str(site))
    return site


def test_a_course_assignment_is_secret_from_every_worker(course, tmp_path):
    from checker.spec import assignment_ids
    assert "coursehw" in assignment_ids()
    sub = tmp_path / "work" / "attack.py"
    sub.parent.mkdir()
    sub.write_text(ATTACK)
    os.chmod(sub.parent, 0o755)
    hw = course / "coursehw"
    with Zygote() as z:
        h = SubmissionHandle(str(sub), z, Limits(call_s=10, cell_s=10, submission_s=60))
        try:
            h.load()
            out = {"reference": h.call("read", str(hw / "reference.py")),
                   "hidden_tests": h.call("read", str(hw / "test_coursehw.py")),
                   "folder": h.call("listdir", str(hw)),
                   "import": h.call("steal", "coursehw.reference", str(course)),
                   "neighbour_file": h.call("read", str(course / "neighbour" / "data.txt")),
                   "honest": h.call("add", 2, 3)}
            namespaced = "pid-namespace" in h.isolation
        finally:
            h.close()
    if not namespaced and landlock.landlock_abi() < 1:
        pytest.skip("neither namespaces nor Landlock here: no wall carves a folder out of the Python path")
    for key in ("reference", "hidden_tests", "folder", "import"):
        assert out[key].startswith("refused"), (key, out[key], json.dumps(out))
    # the same site folder is readable where no assignment lies: the carve-out, not an unreachable path
    assert out["neighbour_file"] == "ok: readable\n", out
    assert out["honest"] == 5
