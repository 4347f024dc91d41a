"""A plain folder's ids are stable: of entries that would share a bare id (`dave.py` and a folder `dave/` that
appeared after the first grade), the one OUT graded under it before keeps it, else none takes it; a grade typed
for `dave`, and the roster's row of `dave`, never move to another entry. The TA's line says what each entry was
graded as, or that it was not."""

import csv
import os
import shutil
import subprocess
import sys

from checker.records.entries import scan_entries
from checker.spec import example_dirs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))


def _copy(src, dest):
    shutil.copyfile(os.path.join(SUB, src), dest)


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _book(out):
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _graded_path(out, sid):
    import json
    with open(os.path.join(out, f"{sid}.json"), encoding="utf-8") as f:
        return json.load(f)["submission"]["path"]


def test_the_entry_graded_under_a_bare_id_keeps_it_and_the_newcomer_gets_its_own_form(tmp_path):
    for name in ("dave.py", "erin.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "dave").mkdir()
    # OUT graded dave.py as `dave` before (from another copy of the folder: the name is what counts)
    held = {"dave": "/elsewhere/subs/dave.py"}.get
    entries, refused, notes = scan_entries(str(tmp_path), held=held)
    assert dict(entries) == {"dave": str(tmp_path / "dave.py"), "dave (folder)": str(tmp_path / "dave"),
                             "erin": str(tmp_path / "erin.py")}
    assert refused == [] and "dave.py keeps 'dave'" in notes[0] and "dave is graded as 'dave (folder)'" in notes[0]
    # the folder held it: the folder keeps it
    entries, _, _ = scan_entries(str(tmp_path), held={"dave": str(tmp_path / "dave")}.get)
    assert dict(entries)["dave"] == str(tmp_path / "dave") and dict(entries)["dave.py"] == str(tmp_path / "dave.py")


def test_where_none_of_them_held_the_bare_id_none_takes_it_and_the_ta_is_told(tmp_path):
    for name in ("dave.py", "dave.ipynb"):
        (tmp_path / name).write_text("")
    (tmp_path / "dave").mkdir()
    entries, _, notes = scan_entries(str(tmp_path))  # a first grade: no one held it
    assert sorted(sid for sid, _ in entries) == ["dave (folder)", "dave.ipynb", "dave.py"]
    assert "none of them takes 'dave'" in notes[0]
    # OUT graded `dave` from an entry none of them is (dave.txt.py, since gone): its grades match no submission now
    entries, _, notes = scan_entries(str(tmp_path), held={"dave": "/x/daves_old_folder"}.get)
    assert "dave" not in dict(entries)
    assert "graded 'dave' before from 'daves_old_folder'" in notes[0] and "no longer match a submission" in notes[0]


def test_an_entry_graded_under_its_own_form_keeps_it_when_alone_again(tmp_path):
    (tmp_path / "dave.py").write_text("")
    entries, _, _ = scan_entries(str(tmp_path), held={"dave.py": str(tmp_path / "dave.py")}.get)
    assert entries == [("dave.py", str(tmp_path / "dave.py"))]
    entries, _, _ = scan_entries(str(tmp_path))
    assert entries == [("dave", str(tmp_path / "dave.py"))]


def test_the_line_says_an_entry_was_refused_not_graded_under_a_name(tmp_path):
    """`dave.py.py` beside `dave.py` and `dave/`: dave.py's own form clashes and is refused; the line said
    "graded as dave, dave.py"."""
    for name in ("dave.py", "dave.py.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "dave").mkdir()
    entries, refused, notes = scan_entries(str(tmp_path))
    assert sorted(n for n, _ in refused) == ["dave.py", "dave.py.py"]
    assert "dave.py" not in {os.path.basename(p) for _, p in entries}
    assert "graded as dave, dave.py" not in notes[0]
    assert "dave.py is not graded" in notes[0] and "dave is graded as 'dave (folder)'" in notes[0], notes


def test_a_folder_appearing_beside_a_graded_file_takes_none_of_its_records(tmp_path):
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    _copy("correct.py", subs / "dave.py")
    _copy("correct.py", subs / "erin.py")
    roster = tmp_path / "roster.csv"
    roster.write_text("name,student_id,email\nDave Doe,dave,dave@x\nErin Roe,erin,erin@x\n", encoding="utf-8")
    r = _hwcheck("grade", subs, "-a", "attention", "-o", out, "--public", "--roster", roster)
    assert r.returncode == 0, r.stdout + r.stderr
    manual = out / "manual.csv"
    text = manual.read_text(encoding="utf-8-sig")
    manual.write_text(text.replace("dave,Q3-text,,", "dave,Q3-text,9,good"), encoding="utf-8-sig")
    (subs / "dave").mkdir()  # Mallory's folder
    _copy("no_scaling.py", subs / "dave" / "attention.py")
    r = _hwcheck("grade", subs, "-a", "attention", "-o", out, "--public", "--resume")
    said = r.stdout + r.stderr
    assert r.returncode == 0, said
    book = _book(out)
    assert sorted(book) == ["dave", "dave (folder)", "erin"], book
    assert _graded_path(out, "dave") == str(subs / "dave.py")
    assert book["dave"]["Q3-text"] == "9" and book["dave"]["student"] == "Dave Doe", book["dave"]
    assert book["dave (folder)"]["Q3-text"] == "" and book["dave (folder)"]["student"] == "", book["dave (folder)"]
    assert "dave.py keeps 'dave'" in said, said
