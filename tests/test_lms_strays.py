"""A Canvas or Moodle download with entries the LMS did not name is still that LMS's download.

A TA's probe: one folder or file in the download that Canvas or Moodle did not name (a student's zip unpacked in
place, as hwcheck itself advises; a `ta_notes/` folder; a `reference_solution.py`) made hwcheck drop the LMS's
handling for the whole class, silently: every file was graded as a student of its own (a student's three files,
three students), a superseded upload was graded, no canvas.csv or moodle.csv was written, and it exited 0. The
download is recognised when the entries the LMS named dominate (`checker.records.lms.dominates`); the others are
listed as not graded, with why, and the TA is told; a folder named as Canvas names a file (an unpacked archive) is
that student's submission. A plain class folder stays a plain folder.
"""

import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records import lms
from checker.spec import example_dirs, load_spec

SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
_QUESTIONS = load_spec("attention")["questions"]
AUTO = f"{sum(q['points'] for q in _QUESTIONS if not q.get('manual')):g}"
PARTS = sorted(os.listdir(os.path.join(SUB, "correct_folder")))  # q1.py, q2.py, q3.ipynb: one submission


def _copy(src, dest):
    shutil.copyfile(os.path.join(SUB, src), dest)


def _canvas(folder):
    """A Canvas download as Canvas names it: one file, a re-upload (the later one right), one in three files."""
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_50001_hw1.py")
    _copy("no_scaling.py", folder / "smithjane_1002_50002_hw1.py")   # superseded by 50107
    _copy("correct.py", folder / "smithjane_1002_50107_hw1.py")
    for i, name in enumerate(PARTS):
        _copy(f"correct_folder/{name}", folder / f"leeann_1007_5000{7 + i}_{name}")
    return folder


def _unpacked(folder, name="parkmin_1012_50500_hw1"):
    """A student's zip unpacked in place: the folder keeps the zip's name, the zip stays beside it."""
    shutil.copytree(os.path.join(SUB, "correct_folder"), folder / name)
    (folder / f"{name}.zip").write_bytes(b"PK\x05\x06" + bytes(18))


def _not_graded(out):
    return dict(map(tuple, lms.read_students(str(out))["not_graded"]))


STRAYS = {
    "unpacked zip": lambda f: _unpacked(f),
    "ta notes folder": lambda f: (f / "ta_notes").mkdir() or (f / "ta_notes" / "todo.py").write_text("x = 1\n"),
    "reference solution": lambda f: _copy("correct.py", f / "reference_solution.py"),
    "a file renamed by hand": lambda f: _copy("correct.py", f / "Doe, Jane_1011_50020_hw1.py"),
}


@pytest.mark.parametrize("stray", sorted(STRAYS))
def test_one_entry_canvas_did_not_name_costs_only_itself(tmp_path, stray):
    folder = _canvas(tmp_path / "download")
    STRAYS[stray](folder)
    layout = lms.recognise(str(folder))
    assert layout.platform == "canvas", stray
    assert sorted(f for _, f in layout.students["leeann_1007"].files) == PARTS  # one student, not three
    out = tmp_path / "out"
    notes = []
    entries = dict(lms.prepare(str(folder), str(out), notes, assignment="attention"))
    want = {"doejohn_1001", "smithjane_1002", "leeann_1007"} | ({"parkmin_1012"} if stray == "unpacked zip" else set())
    assert set(entries) == want, (stray, entries)
    assert entries["smithjane_1002"].endswith("smithjane_1002_50107_hw1.py")  # the later upload
    refused = _not_graded(out)
    if stray == "unpacked zip":
        assert entries["parkmin_1012"] == str(folder / "parkmin_1012_50500_hw1")
        assert "unpacked into the folder 'parkmin_1012_50500_hw1', which is graded" in refused[
            "parkmin_1012_50500_hw1.zip"]
        assert notes[0].endswith("is a canvas export: 4 students' submissions"), notes
    else:
        stray_name = {"ta notes folder": "ta_notes", "reference solution": "reference_solution.py",
                      "a file renamed by hand": "Doe, Jane_1011_50020_hw1.py"}[stray]
        assert "not named as Canvas names a student's" in refused[stray_name], refused
        assert "1 of its .py, .ipynb files and folders is not named as Canvas names a student's, and not graded" \
            in notes[0], notes


def test_a_canvas_download_with_strays_is_graded_per_student_through_the_command(tmp_path):
    """The probe's case through `hwcheck grade`: one submission per student, the later upload, canvas.csv, and
    the entries Canvas did not name listed under "not graded" with why."""
    folder = _canvas(tmp_path / "download")
    _unpacked(folder)
    (folder / "ta_notes").mkdir()
    _copy("correct.py", folder / "ta_notes" / "solution.py")
    _copy("correct.py", folder / "reference_solution.py")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public", "-j", "2"])
    said = r.output
    assert r.exit_code == 0, said
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        book = {row["id"]: row for row in csv.DictReader(f)}
    assert sorted(book) == ["doejohn_1001", "leeann_1007", "parkmin_1012", "smithjane_1002"], said
    assert {sid: row["total"] for sid, row in book.items()} == dict.fromkeys(book, AUTO), said
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        assert sorted(row[1] for row in list(csv.reader(f))[2:]) == ["1001", "1002", "1007", "1012"]
    assert "is a canvas export: 4 students' submissions; 2 of its .py, .ipynb files and folders are not named" \
        in said, said
    assert "not graded: 'reference_solution.py': not named as Canvas names a student's file" in said, said
    assert "not graded: 'ta_notes': a folder not named as Canvas names a student's" in said, said


def test_a_moodle_download_with_strays_is_still_moodles(tmp_path):
    folder = tmp_path / "download"
    folder.mkdir()
    _copy("correct.py", folder / "Ann Lee_105_assignsubmission_file_attention.py")
    shutil.copytree(os.path.join(SUB, "correct_folder"), folder / "John Doe_101_assignsubmission_file_")
    (folder / "John Doe_101_assignsubmission_file_" / "notes.txt").write_text("x")
    _copy("no_scaling.py", folder / "Zoë Lim_104_assignsubmission_file_q1.py")
    _copy("correct.py", folder / "Zoë Lim_104_assignsubmission_file_q2.py")
    _copy("correct.py", folder / "reference_solution.py")
    (folder / "ta_notes").mkdir()
    # a zip handed in without "Download submissions in folders", unpacked where it lay
    shutil.copytree(os.path.join(SUB, "correct_folder"), folder / "Bo Chan_107_assignsubmission_file_hw1")
    (folder / "Bo Chan_107_assignsubmission_file_hw1.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    out = tmp_path / "out"
    notes = []
    entries = dict(lms.prepare(str(folder), str(out), notes, assignment="attention"))
    assert lms.read_students(str(out))["platform"] == "moodle"
    assert sorted(entries) == ["Ann Lee_105", "Bo Chan_107", "John Doe_101", "Zoë Lim_104"]
    assert entries["Bo Chan_107"] == str(folder / "Bo Chan_107_assignsubmission_file_hw1")
    refused = _not_graded(out)
    assert "not named as Moodle names a student's file" in refused["reference_solution.py"]
    assert "a folder not named as Moodle names a student's" in refused["ta_notes"]
    assert "which is graded" in refused["Bo Chan_107_assignsubmission_file_hw1.zip"]
    assert "2 of its .py, .ipynb files and folders are not named as Moodle" in notes[0], notes


def test_a_file_beside_a_students_folder_is_listed_never_dropped_silently(tmp_path):
    """A Moodle student's folder and a file of theirs beside it: the folder is graded, the file named."""
    folder = tmp_path / "download"
    folder.mkdir()
    shutil.copytree(os.path.join(SUB, "correct_folder"), folder / "John Doe_101_assignsubmission_file_")
    _copy("no_scaling.py", folder / "John Doe_101_assignsubmission_file_extra.py")
    _copy("correct.py", folder / "Ann Lee_105_assignsubmission_file_attention.py")
    out = tmp_path / "out"
    entries = dict(lms.prepare(str(folder), str(out), [], assignment="attention"))
    assert entries["John Doe_101"] == str(folder / "John Doe_101_assignsubmission_file_")
    assert "is not merged into it" in _not_graded(out)["John Doe_101_assignsubmission_file_extra.py"]


def test_two_unpacked_folders_of_one_student_are_graded_on_neither(tmp_path):
    folder = _canvas(tmp_path / "download")
    _unpacked(folder, "parkmin_1012_50500_hw1")
    _unpacked(folder, "parkmin_1012_50600_hw1")
    out = tmp_path / "out"
    entries = dict(lms.prepare(str(folder), str(out), [], assignment="attention"))
    assert "parkmin_1012" not in entries and "doejohn_1001" in entries
    assert "which is the submission cannot be told" in _not_graded(out)["parkmin_1012_50600_hw1"]
    assert "parkmin_1012_50500_hw1" in lms.read_students(str(out))["ungraded"]  # `grade` exits 1


def test_a_link_to_a_folder_in_a_download_is_not_followed(tmp_path):
    folder = _canvas(tmp_path / "download")
    (tmp_path / "elsewhere").mkdir()
    _copy("correct.py", tmp_path / "elsewhere" / "attention.py")
    os.symlink(tmp_path / "elsewhere", folder / "mallory_1013_50700_hw1")
    out = tmp_path / "out"
    entries = dict(lms.prepare(str(folder), str(out), [], assignment="attention"))
    assert "mallory_1013" not in entries and "leeann_1007" in entries
    assert "a link to a folder: not followed" in _not_graded(out)["mallory_1013_50700_hw1"]


def test_a_plain_class_folder_is_not_taken_for_a_download(tmp_path):
    """alice.py and bob.py beside names carrying Canvas's fields: a plain folder unless most entries carry them;
    the TA is told why, when some do."""
    for name in ("alice.py", "bob.py", "carol.py", "x_1_2_y.py", "z_3_4_w.py"):
        _copy("correct.py", tmp_path / name)
    layout = lms.recognise(str(tmp_path))
    assert layout.platform is None and layout.near == ("canvas", 2, 5)
    notes = []
    entries = dict(lms.prepare(str(tmp_path), str(tmp_path.parent / (tmp_path.name + "-out")), notes))
    assert sorted(entries) == ["alice", "bob", "carol", "x_1_2_y", "z_3_4_w"]
    assert "graded as a plain folder" in notes[0] and "only 2 of its 5 are named as Canvas names" in notes[0], notes
    os.remove(tmp_path / "x_1_2_y.py")
    os.remove(tmp_path / "z_3_4_w.py")
    _copy("correct.py", tmp_path / "x_1_2_y.py")  # one crafted name among three plain ones
    assert lms.recognise(str(tmp_path)).platform is None


@pytest.mark.parametrize("named, counted, taken", [
    (1, 1, True),    # a download of one student's one file, as before
    (3, 3, True),
    (13, 14, True),  # one stray among thirteen
    (2, 3, True),
    (2, 4, False),   # not more than half
    (1, 2, False),   # one name is never enough beside a stray
    (0, 2, False),
    (0, 0, False),
])
def test_which_share_of_named_entries_makes_a_download(named, counted, taken):
    assert lms.dominates(named, counted) is taken
