"""A student whose only entries of an LMS download are never graded (Canvas's text entry or web link, Moodle's
onlinetext, a file that is no code) is named by --roster as having handed in those entries, which were not graded,
never as having no submission; and each such entry is listed once under "not graded". The listing and the roster
read one attribution: the entries the summary lists as that student's (`checker.records.lms_students`)."""

import os
import shutil

import pytest

from checker.records import lms
from checker.records.batch import not_graded_lines
from checker.records.roster import roster_lines
from checker.spec import example_dirs

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
GRADEBOOK = ('Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4567)\n'
             '    Points Possible,,,,,100.00\n'
             '"Doe, John",1001,S001,jdoe,A,\n"Chen, Wei",1011,0012,wchen,A,\n"Kim, Eve",1008,S008,ekim,A,\n'
             '"Absent, Al",1009,S009,aabsent,A,\n')
WORKSHEET = ('Identifier,"Full name","Email address",Status,Grade,"Maximum Grade"\n'
             '"Participant 1234501","Anna Schmidt",anna@uni.example,"Submitted for grading",,100.00\n'
             '"Participant 1234504","Jean-Luc Picard",jlp@uni.example,"Submitted for grading",,100.00\n'
             '"Participant 1234505","Only Text",ot@uni.example,"Submitted for grading",,100.00\n'
             '"Participant 1234508","No Show",noshow@uni.example,"No submission",,100.00\n')


def _summary(out):
    known = lms.read_students(str(out))
    return not_graded_lines(known["not_graded"]) + roster_lines(known["roster"], known["students"])


def _prepare(tmp_path, folder, roster_text):
    roster = tmp_path / "roster.csv"
    roster.write_text(roster_text, encoding="utf-8")
    out = tmp_path / "out"
    entries = lms.prepare(str(folder), str(out), roster=str(roster), assignment="attention")
    return [sid for sid, _ in entries], _summary(out)


@pytest.mark.parametrize("entry", ["chenwei_1011_text.html", "chenwei_1011_link.html",
                                   "chenwei_LATE_1011_text.html"])
def test_a_canvas_text_entry_is_named_as_handed_in_not_as_no_submission(tmp_path, entry):
    folder = tmp_path / "canvas_dl"
    folder.mkdir()
    shutil.copyfile(f"{SUB}/correct.py", folder / "doejohn_1001_5001_attention.py")
    (folder / entry).write_text("<p>I could not finish.</p>", encoding="utf-8")
    ids, lines = _prepare(tmp_path, folder, GRADEBOOK)
    text = "\n".join(lines)
    assert ids == ["doejohn_1001"]
    assert "no submission from Chen, Wei" not in text, text
    assert (f"roster: Chen, Wei (0012) handed in {entry}, which was not graded (see its \"not graded\" line "
            f"above)") in lines, text
    assert f"  not graded: '{entry}': a text entry or web link handed in on Canvas, not code" in lines, text
    assert sum(entry in line for line in lines if line.startswith("  not graded:")) == 1, text
    assert "roster: 1 of 4 students have a submission graded; 1 more handed in one that was not graded" in lines
    assert "roster: no submission from Absent, Al (S009)" in lines, text  # one who handed in nothing: as before
    assert "roster: no submission from Kim, Eve (S008)" in lines, text


def test_any_canvas_entry_of_a_student_not_graded_is_named_by_its_own_name(tmp_path):
    """Not only text entries: a PDF, or a text entry beside it, is the student's, named as Canvas wrote it."""
    folder = tmp_path / "canvas_dl"
    folder.mkdir()
    shutil.copyfile(f"{SUB}/correct.py", folder / "doejohn_1001_5001_attention.py")
    (folder / "kimeve_1008_5010_answers.pdf").write_bytes(b"%PDF-1.4\n")
    (folder / "chenwei_1011_5020_notes.txt").write_text("notes", encoding="utf-8")
    (folder / "chenwei_1011_text.html").write_text("<p>see notes</p>", encoding="utf-8")
    ids, lines = _prepare(tmp_path, folder, GRADEBOOK)
    text = "\n".join(lines)
    assert ids == ["doejohn_1001"]
    assert ("roster: Kim, Eve (S008) handed in kimeve_1008_5010_answers.pdf, which was not graded (see its "
            "\"not graded\" line above)") in lines, text
    assert ("roster: Chen, Wei (0012) handed in chenwei_1011_text.html and chenwei_1011_5020_notes.txt, which were "
            "not graded (see their \"not graded\" lines above)") in lines, text
    assert "  not graded: 3 entries of the folder graded" in text, text
    assert "roster: 1 of 4 students have a submission graded; 2 more handed in one that was not graded" in lines


def test_an_anonymous_canvas_text_entry_is_the_students_own(tmp_path):
    folder = tmp_path / "canvas_dl"
    folder.mkdir()
    shutil.copyfile(f"{SUB}/correct.py", folder / "anon_x7Kq2_703_attention.py")
    (folder / "LATE_anon_Zz9_link.html").write_text("<a href='x'>x</a>", encoding="utf-8")
    layout = lms.recognise(str(folder))
    assert layout.platform == "canvas" and sorted(layout.students) == ["anon_Zz9", "anon_x7Kq2"]
    assert layout.students["anon_Zz9"].aside == [
        ("LATE_anon_Zz9_link.html", "a text entry or web link handed in on Canvas, not code")]
    assert layout.ignored == []


@pytest.mark.parametrize("in_folders", [True, False])
def test_moodle_onlinetext_alone_is_listed_once_and_named_by_the_roster(tmp_path, in_folders):
    """"Download submissions in folders" (a folder per plugin) or not (files named with the plugin)."""
    folder = tmp_path / "moodle_dl"
    folder.mkdir()
    files = {"Anna Schmidt_1234501_assignsubmission_file_": ("attention.py", open(f"{SUB}/correct.py").read()),
             "Jean-Luc Picard_1234504_assignsubmission_file_": ("attention.py", open(f"{SUB}/correct.py").read()),
             "Jean-Luc Picard_1234504_assignsubmission_onlinetext_": ("onlinetext.html", "<p>heads</p>"),
             "Only Text_1234505_assignsubmission_onlinetext_": ("onlinetext.html", "<p>I could not finish.</p>")}
    for prefix, (name, body) in files.items():
        if in_folders:
            (folder / prefix).mkdir()
            (folder / prefix / name).write_text(body, encoding="utf-8")
        else:
            (folder / (prefix + name)).write_text(body, encoding="utf-8")
    only = "Only Text_1234505_assignsubmission_onlinetext_" + ("" if in_folders else "onlinetext.html")
    ids, lines = _prepare(tmp_path, folder, WORKSHEET)
    text = "\n".join(lines)
    assert ids == ["Anna Schmidt_1234501", "Jean-Luc Picard_1234504"]
    listed = [line for line in lines if line.startswith("  not graded: '")]
    assert listed == [
        f"  not graded: 'Jean-Luc Picard_1234504_assignsubmission_onlinetext_{'' if in_folders else 'onlinetext.html'}"
        f"': Moodle's onlinetext of Jean-Luc Picard_1234504, not a file handed in: not code",
        f"  not graded: '{only}': Moodle's onlinetext of Only Text_1234505, not a file handed in: not code"], text
    assert "  not graded: 2 entries of the folder graded" in text, text
    assert (f"roster: Only Text (ot@uni.example) handed in {only}, which was not graded (see its \"not graded\" "
            f"line above)") in lines, text
    assert "roster: no submission from No Show (noshow@uni.example)" in lines, text
    assert "no submission from Only Text" not in text, text
