"""A late resubmission's grade never goes back silently to the student's older attempt (h104).

Download 1 holds Dupont's on-time attempt (weak code), download 2, graded into the same OUT with --resume, his LATE
resubmission (correct). Before: an appeal of another student (`grade dl1 --only chenwei_1010`) rewrote Dupont's
record in students.json to download 1's attempt (attachment ids, late flag) though he was not regraded, and made
download 1 the "latest folder"; a later `grade dl1 --resume` (the tests changed, or not) then graded him on the older
attempt (90 became 56.25). A student with two files per attempt had OUT/.lms/<id>/ staged again with the older
attempt's files, over the copy the later attempt's scorecard was graded from; and an OUT moved elsewhere lost its
staged copies (their paths were read as absolute). Now the later attempt's grade is kept unless the TA names the
student with --only on the older folder (said), an appeal leaves the others' records alone, each attempt is staged
in a folder of its own, and staged copies are read in the OUT as it is now.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")
AID = "attnatt"


def _run(args, env):
    r = subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], env=env, capture_output=True,
                       text=True, timeout=600)
    return r.returncode, " ".join((r.stdout + r.stderr).split())


def _grade(folder, out, env, *more):
    rc, said = _run(["grade", folder, "-a", AID, "-o", out, "--public", "--timeout", "5", *more], env)
    assert rc == 0, said
    return said


def _canvas(out):
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        return {row["ID"]: row[AID] for row in csv.DictReader(f) if row["ID"]}


def _students(out):
    with open(out / ".students.json", encoding="utf-8") as f:
        return json.load(f)


def _card(out, sid):
    with open(out / f"{sid}.json", encoding="utf-8") as f:
        return json.load(f)


def _course(tmp_path):
    """(env, the course's frozen copy of attention, a function that changes its grading tests)."""
    folder = tmp_path / "course" / AID
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8")
    assert spec.count('id = "attention"') == 1, "the spec changed: update this"
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', f'id = "{AID}"'), encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(tmp_path / "course"), PYTHONPATH=ROOT)

    def change_tests():
        tests = folder / "test_attention_q1.py"
        text = tests.read_text(encoding="utf-8")
        assert "@pytest.mark.weight(3)" in text, "the grading tests changed: update this"
        tests.write_text(text.replace("@pytest.mark.weight(3)", "@pytest.mark.weight(1)", 1), encoding="utf-8")
    return env, change_tests


def _downloads(tmp_path, two_files):
    """(download 1, download 2): Dupont's weak on-time attempt in the first, his correct LATE one in the second
    (with a README each where `two_files`, so each attempt is staged into OUT/.lms/)."""
    dl1, dl2 = tmp_path / "dl1", tmp_path / "dl2"
    files = [(dl1, "chenwei_1010_50010_hw1.py", "correct.py"),
             (dl1, "dupontjeanluc_1008_50008_hw1.py", "no_scaling.py"),
             (dl2, "dupontjeanluc_LATE_1008_50300_hw1.py", "correct.py"),
             (dl2, "absentamy_LATE_1016_50302_hw1.py", "correct.py")]
    for where, name, src in files:
        where.mkdir(exist_ok=True)
        shutil.copyfile(os.path.join(EXAMPLES, src), where / name)
    if two_files:
        (dl1 / "dupontjeanluc_1008_50009_README.md").write_text("notes v1\n", encoding="utf-8")
        (dl2 / "dupontjeanluc_LATE_1008_50301_README.md").write_text("notes v2\n", encoding="utf-8")
    return dl1, dl2


@pytest.fixture(params=[False, True], ids=["one-file", "two-files"])
def graded(tmp_path, request):
    """(env, change_tests, dl1, dl2, OUT): both downloads graded into OUT, then an appeal of Chen on download 1."""
    env, change_tests = _course(tmp_path)
    dl1, dl2 = _downloads(tmp_path, request.param)
    out = tmp_path / "out"
    _grade(dl1, out, env)
    _grade(dl2, out, env, "--resume")
    assert _canvas(out)["1008"] == _canvas(out)["1010"], _canvas(out)  # his later, correct attempt
    before = _students(out)["students"]["dupontjeanluc_1008"]
    assert before.get("late") is True and before.get("canvas_attachments") in ([50300], [50300, 50301]), before
    said = _grade(dl1, out, env, "--only", "chenwei_1010")  # an appeal of another student, on download 1
    assert "older attempt" not in said and "older uploads" not in said, said  # Dupont is not regraded: unsaid
    assert "warning: dupontjeanluc_1008" not in said, said
    assert _students(out)["students"]["dupontjeanluc_1008"] == before  # his record as it was
    assert _students(out)["folders"][-1] == str(dl2), _students(out)["folders"]  # --only makes no latest folder
    sub = _card(out, "dupontjeanluc_1008")["submission"]
    from checker.records.regrade_from import own_file
    assert own_file(_card(out, "dupontjeanluc_1008"), str(out)) is not None, sub  # his staged copy as graded
    return env, change_tests, dl1, dl2, out


def test_an_appeal_of_another_student_and_a_resume_keep_the_later_attempt(graded):
    env, change_tests, dl1, dl2, out = graded
    said = _grade(dl1, out, env, "--resume")  # the tests unchanged: his later attempt's grade is kept
    assert "the later attempt's grade is kept" in said and "is graded on the older attempt" not in said, said
    assert _canvas(out)["1008"] == _canvas(out)["1010"], _canvas(out)
    change_tests()
    said = _grade(dl1, out, env, "--resume")  # the tests changed: regraded from his later attempt's file
    assert "so --resume regrades the later attempt" in said, said
    now = _canvas(out)
    assert now["1008"] == now["1010"] == now["1016"], now
    assert _students(out)["students"]["dupontjeanluc_1008"].get("late") is True
    assert "late" in open(out / "grades.csv", encoding="utf-8-sig").read().split("dupontjeanluc_1008", 1)[1]
    rc, said = _run(["export", out], env)
    assert rc == 0, said


def test_the_export_advice_after_an_appeal_keeps_the_later_attempt(graded):
    env, change_tests, dl1, dl2, out = graded
    change_tests()
    rc, said = _run(["export", out], env)
    assert rc == 2 and f"hwcheck grade {dl2} " in said, said  # the latest folder graded, not the appeal's
    _grade(dl2, out, env, "--resume")
    now = _canvas(out)
    assert now["1008"] == now["1010"] == now["1016"], now


def test_the_older_attempt_is_graded_only_when_named(tmp_path):
    env, _ = _course(tmp_path)
    dl1, dl2 = _downloads(tmp_path, False)
    out = tmp_path / "out"
    _grade(dl1, out, env)
    _grade(dl2, out, env, "--resume")
    said = _grade(dl1, out, env)  # a plain grade of the older folder: the later attempt is kept, said
    assert "dupontjeanluc_1008: this folder holds an older attempt (Canvas attachment 50008)" in said, said
    assert _canvas(out)["1008"] == _canvas(out)["1010"], _canvas(out)
    said = _grade(dl1, out, env, "--only", "dupontjeanluc_1008")  # asked for by name: graded, said
    assert "warning: dupontjeanluc_1008: --only grades the older attempt this folder holds" in said, said
    assert float(_canvas(out)["1008"]) < float(_canvas(out)["1010"]), _canvas(out)
    assert _students(out)["students"]["dupontjeanluc_1008"].get("canvas_attachments") == [50008]


def test_a_moved_out_regrades_from_its_own_staged_copies(tmp_path):
    env, change_tests = _course(tmp_path)
    dl1, dl2 = _downloads(tmp_path, True)
    out = tmp_path / "out"
    _grade(dl1, out, env)
    _grade(dl2, out, env, "--resume")
    moved = tmp_path / "disk2" / "out"
    moved.parent.mkdir()
    shutil.move(str(out), str(moved))
    change_tests()
    said = _grade(dl1, moved, env, "--resume")
    assert "no longer there as graded" not in said and "is graded on the older attempt" not in said, said
    now = _canvas(moved)
    assert now["1008"] == now["1010"] == now["1016"], now
    assert _card(moved, "dupontjeanluc_1008")["submission"]["path"].startswith(str(moved)), said
    rc, said = _run(["export", moved], env)
    assert rc == 0, said
