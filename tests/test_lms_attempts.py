"""Canvas downloads in a TA's hands (tester's h16): two downloads unzipped into one folder, and a student whose
name changed in Canvas between two downloads.

* Files of one student from two attempts (one `LATE_`, one not; or two files that define the same graded
  functions) were merged into one folder submission, where the older file's functions overrode the newer
  ones: the late resubmission graded 54 instead of 90. The latest attempt (the higher Canvas attachment ids)
  is graded, the older set aside and said; attempts that cannot be ordered are graded on neither (exit 1).
* Canvas's id is `<sortable name>_<user id>`: a name changed in Canvas made a new id, the TA's manual grade
  stayed on an orphaned row and grades.csv had two rows for one Canvas user. The user id decides.
"""

import csv
import os
import shutil
import subprocess
import sys

from checker.records import lms
from checker.spec import example_dirs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))


def _copy(name, dest):
    shutil.copyfile(os.path.join(SUB, name), dest)


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _book(out):
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _prepare(folder, out):
    entries = lms.prepare(str(folder), str(out), assignment="attention")
    known = lms.read_students(str(out))
    return dict(entries), dict((n, why) for n, why in known["not_graded"]), known["ungraded"], known["students"]


def test_two_downloads_the_late_resubmission_is_graded_not_merged_with_the_first_attempt(tmp_path):
    folder, out = tmp_path / "hw", tmp_path / "out"
    folder.mkdir()
    _copy("no_scaling.py", folder / "doejohn_1001_5001_hw1.py")  # the first attempt: wrong
    _copy("correct.py", folder / "doejohn_LATE_1001_5030_attention.py")  # the late resubmission: right
    r = _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    row = _book(out)["doejohn_1001"]
    assert float(row["total"]) == 90, row
    assert "late" in row["note"]  # the attempt graded is the late one
    assert ("not graded: 'doejohn_1001_5001_hw1.py': a file of an earlier attempt (on time, Canvas attachment "
            "5001) than the LATE one of doejohn_LATE_1001_5030_attention.py") in r.stdout, r.stdout


def test_an_on_time_attempt_after_a_late_one_and_attempts_that_cannot_be_ordered(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir()
    # the later attempt by attachment id is graded, late or not
    _copy("correct.py", folder / "doejohn_1001_5040_attention.py")
    _copy("no_scaling.py", folder / "doejohn_LATE_1001_5030_hw1.py")
    entries, said, ungraded, people = _prepare(folder, tmp_path / "out1")
    assert entries == {"doejohn_1001": str(folder / "doejohn_1001_5040_attention.py")}
    assert "earlier attempt (LATE, Canvas attachment 5030)" in said["doejohn_LATE_1001_5030_hw1.py"]
    assert not people["doejohn_1001"].get("late") and ungraded == []

    # attachment ids that interleave: which attempt is the later cannot be told, and neither is graded
    _copy("correct.py", folder / "doejohn_1001_5001_notes.py")
    entries, said, ungraded, people = _prepare(folder, tmp_path / "out2")
    assert entries == {} and "doejohn_1001" not in people
    assert sorted(ungraded) == sorted(os.listdir(folder))
    assert "whose attachment ids interleave, so which is the later cannot be told: neither is graded" in \
        said["doejohn_1001_5040_attention.py"], said
    _copy("correct.py", folder / "leeann_1004_7002_attention.py")  # a classmate: the batch runs, and exits 1
    r = _hwcheck("grade", folder, "-a", "attention", "-o", tmp_path / "out3", "--public")
    assert r.returncode == 1 and "neither is graded" in r.stdout + r.stderr, r.stdout + r.stderr
    assert sorted(_book(tmp_path / "out3")) == ["leeann_1004"]


def test_files_that_define_the_same_functions_are_not_merged_but_parts_of_one_submission_are(tmp_path):
    folder = tmp_path / "hw"
    folder.mkdir()
    _copy("no_scaling.py", folder / "doejohn_1001_5001_hw1.py")  # two on-time attempts, both whole
    _copy("correct.py", folder / "doejohn_1001_5030_attention.py")
    for i, name in enumerate(sorted(os.listdir(os.path.join(SUB, "correct_folder")))):  # one submission in parts
        _copy(os.path.join("correct_folder", name), folder / f"doejane_1002_{6000 + i}_{name}")
    entries, said, ungraded, _ = _prepare(folder, tmp_path / "out")
    assert entries["doejohn_1001"] == str(folder / "doejohn_1001_5030_attention.py")
    assert said["doejohn_1001_5001_hw1.py"].startswith("hw1.py (Canvas attachment 5001) defines "), said
    assert "as attention.py (attachment 5030), uploaded later, does: the later file is graded" in \
        said["doejohn_1001_5001_hw1.py"]
    assert os.path.isdir(entries["doejane_1002"]) and not [n for n in said if n.startswith("doejane")], said
    assert sorted(os.listdir(entries["doejane_1002"])) == sorted(os.listdir(os.path.join(SUB, "correct_folder")))


def test_a_name_changed_in_canvas_keeps_the_students_id_row_and_manual_grade(tmp_path):
    folder, out = tmp_path / "hw", tmp_path / "out"
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_7001_attention.py")
    _copy("correct.py", folder / "leeann_1004_7002_attention.py")
    assert _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public").returncode == 0
    manual = os.path.join(out, "manual.csv")
    with open(manual, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    with open(manual, "w", encoding="utf-8-sig", newline="") as f:
        f.write(text.replace("doejohn_1001,Q3-text,,", "doejohn_1001,Q3-text,9,good"))
    os.remove(folder / "doejohn_1001_7001_attention.py")
    _copy("no_scaling.py", folder / "doejonathan_1001_7010_attention.py")  # same user 1001, a new name
    r = _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public", "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    book = _book(out)
    assert sorted(book) == ["doejohn_1001", "leeann_1004"], book  # one row for Canvas user 1001
    row = book["doejohn_1001"]
    assert row["Q3-text"] == "9" and row["student"] == "doejonathan" and row["student_id"] == "1001", row
    assert float(row["Q1"]) < 30  # the new file was graded (no_scaling loses Q1's points)
    assert "not in the folder graded last" not in row["note"], row
    assert ("Canvas user 1001 was graded into" in r.stdout + r.stderr and "before as doejohn_1001; Canvas's file names now "
            "call them 'doejonathan' (doejonathan_1001: a name changed in Canvas): graded as doejohn_1001 again"
            in r.stdout + r.stderr), r.stdout + r.stderr
    with open(os.path.join(out, "canvas.csv"), encoding="utf-8-sig") as f:
        assert [line.split(",")[1] for line in f.read().splitlines()[2:]] == ["1001", "1004"]
