"""Moodle's names as a student can shape them: a folder is read every way Moodle's format allows, never from one
end only (an archive `hw_555_assignsubmission_file_.zip` of participant 777, unpacked into a folder keeping the
name Moodle gave it, ends as participant 555's folder would); a student flagged so leaves `hwcheck grade` at
exit 1; and a student renamed in Moodle between two downloads keeps their id, by the participant id."""

import csv
import os
import shutil
import subprocess
import sys

from checker.records import lms
from checker.records.roster import read_roster
from checker.spec import example_dirs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))

BOB = "Bob Smith_555_assignsubmission_file_attention.py"
CAROL = "Carol Jones_666_assignsubmission_file_attention.py"
# Mallory (777) uploads `hw_555_assignsubmission_file_.zip`; the TA unpacks it into a folder of its name
FORGED = "Mallory Evil_777_assignsubmission_file_hw_555_assignsubmission_file_"
WORKSHEET = ("Identifier,Full name,Email address\nParticipant 555,Bob Smith,bob@x\n"
             "Participant 666,Carol Jones,carol@x\nParticipant 777,Mallory Evil,m@x\n")


def _copy(src, dest):
    shutil.copyfile(os.path.join(SUB, src), dest)


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _download(folder, bob=True):
    folder.mkdir()
    if bob:
        _copy("correct.py", folder / BOB)
    _copy("correct.py", folder / CAROL)
    (folder / FORGED).mkdir()
    _copy("no_scaling.py", folder / FORGED / "attention.py")
    _copy("no_scaling.py", folder / (FORGED + ".zip"))  # the archive itself, beside its folder
    return folder


def test_a_folder_ending_in_a_classmates_fields_is_not_theirs_and_their_own_file_is_graded(tmp_path):
    """Bob's own file names participant 555 'Bob Smith': the reading of the forged folder that gives 555 another
    name is ruled out, so the folder is Mallory's (777), and Bob is graded on his own file."""
    layout = lms.recognise(str(_download(tmp_path / "dl")))
    assert layout.platform == "moodle"
    assert sorted(layout.students) == ["Bob Smith_555", "Carol Jones_666", "Mallory Evil_777"]
    bob = layout.students["Bob Smith_555"]
    assert bob.folders == [] and [f for _, f in bob.files] == ["attention.py"]
    assert layout.students["Mallory Evil_777"].folders == [str(tmp_path / "dl" / FORGED)]
    assert layout.refused == []


def test_a_folder_read_as_two_participants_is_no_ones_and_grade_exits_1(tmp_path):
    """Where participant 555 handed in nothing, nothing rules the forged reading out: the folder (and its archive)
    reads as 777's and as 555's, and is graded as no one's, named, with `hwcheck grade` exiting 1; with Moodle's
    worksheet as the roster, too (it knows both participants). Before, it was graded as participant 555's and
    exported to moodle.csv as their grade."""
    folder = _download(tmp_path / "dl", bob=False)
    roster = tmp_path / "worksheet.csv"
    roster.write_text(WORKSHEET, encoding="utf-8")
    for rows in (None, read_roster(str(roster))):
        layout = lms.recognise(str(folder), roster_rows=rows)
        assert sorted(layout.students) == ["Carol Jones_666"], layout.students
        assert layout.refused == [FORGED, FORGED + ".zip"]
        why = dict(layout.ignored)[FORGED]
        assert "555" in why and "777" in why and "more than one student" in why
    out = tmp_path / "out"
    r = _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public", "--roster", roster)
    assert r.returncode == 1, r.stdout + r.stderr
    assert [row["id"] for row in _rows(out / "grades.csv")] == ["Carol Jones_666"]
    sheet = _rows(out / "moodle.csv")
    assert [row["Identifier"] for row in sheet] == ["Participant 666"], sheet
    assert FORGED in r.stdout + r.stderr


def test_honest_moodle_folders_and_unpacked_archives_are_still_their_students(tmp_path):
    (tmp_path / "Bob Smith_555_assignsubmission_file_").mkdir()       # "Download submissions in folders"
    _copy("correct.py", tmp_path / "Bob Smith_555_assignsubmission_file_" / "attention.py")
    (tmp_path / "Carol Jones_666_assignsubmission_file_hw1").mkdir()  # hw1.zip unpacked where it lay
    _copy("correct.py", tmp_path / "Carol Jones_666_assignsubmission_file_hw1" / "attention.py")
    layout = lms.recognise(str(tmp_path))
    assert {sid: [os.path.basename(p) for p in s.folders] for sid, s in layout.students.items()} == {
        "Bob Smith_555": ["Bob Smith_555_assignsubmission_file_"],
        "Carol Jones_666": ["Carol Jones_666_assignsubmission_file_hw1"]}
    assert layout.ignored == []


def test_a_canvas_file_read_as_two_students_leaves_the_batch_at_exit_1(tmp_path):
    """A download whose student was left ungraded (a file whose name reads as two students') is in students.json's
    `ungraded`, which `hwcheck grade` exits 1 on."""
    folder = tmp_path / "canvas"
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_5_attention.py")
    _copy("correct.py", folder / "leeann_1004_6_hw_3_4_attention.py")  # user 1004's, or user 3's
    lms.prepare(str(folder), str(tmp_path / "out"), [], assignment="attention")
    assert lms.read_students(str(tmp_path / "out"))["ungraded"] == ["leeann_1004_6_hw_3_4_attention.py"]


def test_a_student_renamed_in_moodle_keeps_their_id_row_and_manual_grade(tmp_path):
    folder, out = tmp_path / "hw", tmp_path / "out"
    folder.mkdir()
    _copy("correct.py", folder / BOB)
    _copy("correct.py", folder / CAROL)
    assert _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public").returncode == 0
    manual = os.path.join(out, "manual.csv")
    with open(manual, encoding="utf-8-sig", newline="") as f:
        text = f.read()
    assert "Bob Smith_555,Q3-text,," in text
    with open(manual, "w", encoding="utf-8-sig", newline="") as f:
        f.write(text.replace("Bob Smith_555,Q3-text,,", "Bob Smith_555,Q3-text,9,good"))
    os.remove(folder / BOB)
    _copy("no_scaling.py", folder / "Zob Smith_555_assignsubmission_file_attention.py")  # participant 555 renamed
    r = _hwcheck("grade", folder, "-a", "attention", "-o", out, "--public", "--resume")
    said = r.stdout + r.stderr
    assert r.returncode == 0, said
    book = {row["id"]: row for row in _rows(out / "grades.csv")}
    assert sorted(book) == ["Bob Smith_555", "Carol Jones_666"], book  # one row for participant 555
    row = book["Bob Smith_555"]
    assert row["Q3-text"] == "9" and row["student"] == "Zob Smith" and row["student_id"] == "555", row
    assert float(row["Q1"]) < 30  # the new file was graded
    assert "Moodle participant 555 was graded into" in said and "graded as Bob Smith_555 again" in said, said
    assert [x["Identifier"] for x in _rows(out / "moodle.csv")] == ["Participant 555", "Participant 666"]
