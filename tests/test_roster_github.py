"""GitHub Classroom's repositories and a roster: a GitHub username is the student's own choice, so it is matched
only with a roster column of GitHub usernames, exactly but for letter case; never with a display name (in any
form: `Bob-Smith` reduced to `bobsmith` took the Canvas gradebook row of "Smith, Bob"), a school login or an id."""

import os
import shutil

from checker.records import lms
from checker.records.roster import match_roster, read_roster, roster_lines
from checker.spec import example_dirs

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
GRADEBOOK = ("Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4567)\nPoints Possible,,,,,100\n"
             '"Smith, Bob",1001,S1001,bsmith,Sec A,\n"Evil, Mallory",1002,S1002,mevil,Sec A,\n'
             '"Jones, Carol",1003,S1003,cjones,Sec A,\n')


def _repos(folder, users):
    for user in users:
        (folder / f"hw1-{user}").mkdir(parents=True)
        shutil.copyfile(os.path.join(SUB, "correct.py"), folder / f"hw1-{user}" / "attention.py")
    return folder


def test_a_username_shaped_like_a_classmates_name_takes_no_row_of_a_canvas_gradebook(tmp_path):
    folder = _repos(tmp_path / "hw1-submissions", ["Bob-Smith", "bsmith-gh", "cjones", "bsmith"])
    roster = tmp_path / "gradebook.csv"
    roster.write_text(GRADEBOOK, encoding="utf-8")
    out = tmp_path / "out"
    lms.prepare(str(folder), str(out), [], roster=str(roster), assignment="attention")
    data = lms.read_students(str(out))
    people, report = data["students"], data["roster"]
    # nothing of the gradebook (no GitHub username column) matches a repository: no name, no SIS login, no id
    assert not any(p.get("canvas_user_id") for p in people.values()), people
    assert people["hw1-Bob-Smith"]["student"] == "Bob-Smith" and people["hw1-Bob-Smith"]["roster"] == "unmatched"
    assert sorted(report["unmatched"]) == ["hw1-Bob-Smith", "hw1-bsmith", "hw1-bsmith-gh", "hw1-cjones"]
    lines = roster_lines(report, people)
    assert any("no GitHub username column" in line for line in lines), lines
    assert "roster: submission hw1-Bob-Smith (Bob-Smith) matches no student of the roster" in lines


def test_a_username_matches_a_github_username_column_exactly_but_for_letter_case(tmp_path):
    roster = tmp_path / "roster.csv"
    # GitHub Classroom's roster export, and a Canvas gradebook with a GitHub column added
    roster.write_text("identifier,github_username,github_id,name\ns1001,bsmith-gh,77,Bob Smith\n"
                      "s1003,CJones,78,Carol Jones\n", encoding="utf-8")
    people = {f"hw1-{u}": {"student": u, "student_id": u, "email": "", "platform": "classroom",
                           "github_username": u} for u in ("Bob-Smith", "bsmith-gh", "cjones", "bobsmith")}
    merged, report = match_roster(people, read_roster(str(roster)))
    assert merged["hw1-bsmith-gh"]["student"] == "Bob Smith" and merged["hw1-bsmith-gh"]["student_id"] == "s1001"
    assert merged["hw1-cjones"]["student"] == "Carol Jones"  # GitHub's usernames are one in any letter case
    assert sorted(report["unmatched"]) == ["hw1-Bob-Smith", "hw1-bobsmith"]
    assert report["missing"] == [] and "no_github_column" not in report
    gradebook = tmp_path / "gradebook.csv"
    gradebook.write_text('Student,ID,SIS User ID,SIS Login ID,Section,GitHub Username\nPoints Possible,,,,,\n'
                         '"Smith, Bob",1001,S1001,bsmith,Sec A,bsmith-gh\n', encoding="utf-8")
    merged, report = match_roster(people, read_roster(str(gradebook)))
    assert merged["hw1-bsmith-gh"]["canvas_user_id"] == "1001"
    assert sorted(report["unmatched"]) == ["hw1-Bob-Smith", "hw1-bobsmith", "hw1-cjones"]


def test_a_plain_folders_ids_still_match_a_username_column(tmp_path):
    """The GitHub column is still a student id to a plain folder's submissions (`bsmith-gh.py`), as before."""
    roster = tmp_path / "roster.csv"
    roster.write_text("name,github_username\nBob Smith,bsmith-gh\n", encoding="utf-8")
    merged, report = match_roster({"bsmith-gh": {}}, read_roster(str(roster)))
    assert merged["bsmith-gh"]["student"] == "Bob Smith" and report["unmatched"] == []
