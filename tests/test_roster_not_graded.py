"""--roster names a student who handed in something hwcheck did not grade (only a `.zip`) as such, never as
"no submission": the batch's summary already says why it was not graded, and the roster's line points there."""

import os
import shutil

from checker.records import lms
from checker.records.batch import not_graded_lines
from checker.records.roster import match_roster, roster_lines
from checker.spec import example_dirs

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
ROSTER = ('Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4567)\n"Doe, John",1001,S001,jdoe,A,\n'
          '"Kim, Eve",1008,S008,ekim,A,\n"Absent, Al",1009,S009,aabsent,A,\n')


def _summary(out):
    known = lms.read_students(str(out))
    return not_graded_lines(known["not_graded"]) + roster_lines(known["roster"], known["students"])


def test_a_student_who_handed_in_only_a_zip_is_not_said_to_have_no_submission(tmp_path):
    folder, out = tmp_path / "hw", tmp_path / "out"
    folder.mkdir()
    shutil.copyfile(f"{SUB}/correct.py", folder / "doejohn_1001_5001_attention.py")
    (folder / "kimeve_1008_5010_hw.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    roster = tmp_path / "roster.csv"
    roster.write_text(ROSTER, encoding="utf-8")
    entries = lms.prepare(str(folder), str(out), roster=str(roster), assignment="attention")
    assert [sid for sid, _ in entries] == ["doejohn_1001"]
    lines = _summary(out)
    text = "\n".join(lines)
    assert "kimeve_1008 handed in no .py or .ipynb file: not graded" in text
    assert "no submission from Kim, Eve" not in text, text
    assert ("roster: Kim, Eve (S008) handed in kimeve_1008_5010_hw.zip, which was not graded (see its \"not graded\" "
            "line above)") in lines, text
    assert "roster: no submission from Absent, Al (S009)" in lines, text  # one who handed in nothing: as before
    assert lines[0].startswith("  not graded:")  # the reason comes first
    assert "roster: 1 of 3 students have a submission graded; 1 more handed in one that was not graded" in lines
    assert lms.read_students(str(out))["students"].keys() == {"doejohn_1001"}  # no grade row for Kim


def test_match_roster_without_anything_not_graded_reports_as_before():
    rows = [{"name": "Jane Doe", "student_id": "s2", "email": ""}, {"name": "Al Absent", "student_id": "s3",
                                                                    "email": ""}]
    people, report = match_roster({"doejane": {"student": "Jane Doe", "student_id": "s2"}}, rows)
    assert report["not_graded"] == [] and [r["name"] for r in report["missing"]] == ["Al Absent"]
    assert roster_lines(report, people)[:2] == ["roster: 1 of 2 students have a submission",
                                                "roster: no submission from Al Absent (s3)"]
