"""The roster keeps every member of a group submission, and says when two of its students share a name.

A TA's probe (h27): (D2) a Gradescope group submission of a student on the roster and one who is not lost the
second member: grades.csv showed `Jin Lee,1005` and Zoë O'Neil (1012) vanished, unsaid. (D4) Two roster rows
with one name, matched by name (a Moodle download and a plain roster): both were reported "no submission" and
each submission "matches no student of the roster". Now every member is kept (the matched one with the
roster's data, the other as submitted, named as matching no student), and the rows that share a name are named
with the submissions that carry it, to be matched by hand.
"""

import os
import shutil

from checker.records import lms
from checker.records.outputs import _people_notes
from checker.records.roster import match_roster, roster_lines
from checker.spec import example_dirs

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
ROSTER = ("name,student_id,email\nJohn Doe,1001,jd@x.edu\nJin Lee,1004,jl1@x.edu\nJin Lee,1005,jl2@x.edu\n"
          "Nobody Here,1011,nh@x.edu\n")
METADATA = """submission_101:
  :submitters:
  - :name: Jin Lee
    :sid: '1004'
    :email: jl1@x.edu
submission_102:
  :submitters:
  - :name: Jin Lee
    :sid: '1005'
    :email: jl2@x.edu
  - :name: "Zo\u00eb O'Neil"
    :sid: '1012'
    :email: zo@x.edu
"""


def _lines(out):
    known = lms.read_students(str(out))
    return known, roster_lines(known["roster"], known["students"])


def test_a_group_member_the_roster_lacks_is_kept_and_named(tmp_path):
    folder, out = tmp_path / "gs", tmp_path / "out"
    for sid in ("submission_101", "submission_102"):
        (folder / sid).mkdir(parents=True)
        shutil.copyfile(f"{SUB}/correct.py", folder / sid / "hw.py")
    (folder / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    (tmp_path / "roster.csv").write_text(ROSTER, encoding="utf-8")
    lms.prepare(str(folder), str(out), roster=str(tmp_path / "roster.csv"), assignment="attention")
    known, lines = _lines(out)
    group = known["students"]["submission_102"]
    assert group["student"] == "Jin Lee; Zo\u00eb O'Neil" and group["student_id"] == "1005; 1012", group
    assert group["email"] == "jl2@x.edu; zo@x.edu", group
    text = "\n".join(lines)
    assert ("roster: Zo\u00eb O'Neil (1012, zo@x.edu), a member of the group submission submission_102, matches no "
            "student of the roster") in text, text
    assert "Zo\u00eb O'Neil (1012, zo@x.edu) matches no student of the roster" in _people_notes(
        "submission_102", group, None), group
    assert "no submission from Jin Lee" not in text, text  # both Jin Lees matched (by id)
    assert "roster: no submission from Nobody Here (1011, nh@x.edu)" in lines


def test_a_group_whose_members_are_all_on_the_roster_reads_as_before():
    rows = [{"name": "Ann Lee", "student_id": "1002", "email": "al@uni.example"},
            {"name": "Group Mate", "student_id": "1003", "email": "gm@uni.example"}]
    group = {"student": "Ann Lee; G. Mate", "student_id": "1002; 1003", "email": "al@uni.example; gm@uni.example",
             "platform": "gradescope"}
    people, report = match_roster({"submission_222": group}, rows)
    assert people["submission_222"]["student"] == "Ann Lee; Group Mate"  # the roster's names
    assert report["members"] == [] and "roster_members_unmatched" not in people["submission_222"]


def test_two_roster_students_of_one_name_are_said_to_share_it(tmp_path):
    folder, out = tmp_path / "moodle", tmp_path / "out"
    folder.mkdir()
    for name in ("Jin Lee_2002_assignsubmission_file_hw1.py", "Jin Lee_2003_assignsubmission_file_hw1.py",
                 "John Doe_2001_assignsubmission_file_hw1.py"):
        shutil.copyfile(f"{SUB}/correct.py", folder / name)
    roster = tmp_path / "roster.csv"
    roster.write_text("name,student_id,email\nJohn Doe,s1,jd@x.edu\nJin Lee,s2,jl1@x.edu\nJin Lee,s3,jl2@x.edu\n"
                      "Empty Person,s8,ep@x.edu\n", encoding="utf-8")
    lms.prepare(str(folder), str(out), roster=str(roster), assignment="attention")
    known, lines = _lines(out)
    text = "\n".join(lines)
    assert "no submission from Jin Lee" not in text, text
    assert "matches no student" not in text, text
    assert ("roster: 2 students of the roster share the name Jin Lee (Jin Lee (s2, jl1@x.edu); Jin Lee (s3, "
            "jl2@x.edu)), and submissions Jin Lee_2002, Jin Lee_2003 carry it: hwcheck cannot tell whose is whose"
            ) in text, text
    assert "match them by hand" in text, text
    assert "roster: no submission from Empty Person (s8, ep@x.edu)" in lines  # one who handed in nothing: as before
    assert lines[0] == ("roster: 1 of 4 students have a submission; 2 more share a name with another student of the "
                        "roster: matched by hand (below)"), lines
    person = known["students"]["Jin Lee_2002"]
    notes = _people_notes("Jin Lee_2002", person, None)
    assert "matches no student of the roster" not in notes and any("several students of this name" in n
                                                                    for n in notes), notes


def test_two_rows_of_one_name_without_a_submission_are_both_missing():
    rows = [{"name": "Jin Lee", "student_id": "s2", "email": ""}, {"name": "Jin Lee", "student_id": "s3", "email": ""},
            {"name": "John Doe", "student_id": "s1", "email": ""}]
    people, report = match_roster({"doejohn": {"student": "John Doe"}}, rows)
    assert [r["student_id"] for r in report["missing"]] == ["s2", "s3"] and report["shared"] == []
