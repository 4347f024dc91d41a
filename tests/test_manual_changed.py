"""A grade changed in grades.csv where manual.csv already holds one (a manual question graded again, an appeal's
override changed) is the TA's latest word: it replaces the points of that manual.csv row (its comment kept), is
said with the student, the question, the old and the new value, and the file as it was is kept. It was dropped
silently by `hwcheck export` and `grade --resume`, while the closing line said the grades typed were in
manual.csv (tester's h16 grades_csv_edit_dropped). A value hwcheck itself wrote in that cell before (a spreadsheet
open across a regrade) is still no grade typed."""

import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records.manual import read_manual, replace_points
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
SPEC = load_spec("attention")
MANUAL_Q = next(str(q["id"]) for q in SPEC["questions"] if q.get("manual"))
TOP = next(float(q["points"]) for q in SPEC["questions"] if q.get("manual"))


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def _book(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _retype(out, changes):
    """grades.csv as a spreadsheet saves it after the TA typed `changes` {(id, column): value} into it."""
    rows = _rows(out / "grades.csv")
    head = rows[0]
    for row in rows[1:]:
        for (sid, column), value in changes.items():
            if row[head.index("id")] == sid:
                row[head.index(column)] = value
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)


def _export(out):
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    return r.output


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("changed")
    folder = tmp / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    shutil.copyfile(os.path.join(EXAMPLES, "no_scaling.py"), folder / "bob.py")
    out = tmp / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                  "--timeout", "5"])
    assert r.exit_code == 0, r.output
    return folder, out


def test_a_grade_changed_in_grades_csv_replaces_its_manual_csv_row_and_is_said(graded, tmp_path):
    folder, out0 = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    text = text.replace(f"alice,{MANUAL_Q},,", f"alice,{MANUAL_Q},8,first read")
    text += "bob,Q1,25,appeal: the axis was right\r\n"
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")
    _export(out)
    book = _book(out)
    assert book["alice"][MANUAL_Q] == "8" and book["bob"]["Q1"] == "25"
    before = (out / "manual.csv").read_bytes()

    alice_total = float(book["alice"]["total"])
    _retype(out, {("alice", MANUAL_Q): "6", ("alice", "total"): f"{alice_total - 2:g}", ("bob", "Q1"): "28"})
    said = _export(out)
    rows = _rows(out / "manual.csv")
    assert [r for r in rows if r[0] == "alice"] == [["alice", MANUAL_Q, "6", "first read"]], rows
    assert [r for r in rows if r[0] == "bob" and r[1] == "Q1"] == [["bob", "Q1", "28", "appeal: the axis was right"]]
    assert not [r for r in rows if "typed into grades.csv" in r[3:]], rows  # replaced, not appended
    assert not [r for r in rows if r[1] == "adjustment"], rows  # the total typed is the row's own sum
    book = _book(out)
    assert book["alice"][MANUAL_Q] == "6" and book["bob"]["Q1"] == "28"
    assert float(book["alice"]["total"]) == pytest.approx(alice_total - 2)
    assert (f"grades.csv: alice {MANUAL_Q} was changed from 8 to 6 in grades.csv, which hwcheck rewrites: "
            f"manual.csv line 2 now gives 6 (it gave 8); its comment 'first read' is kept") in said, said
    assert "grades.csv: bob Q1 was changed from 25 to 28 in grades.csv" in said, said
    assert "the grades typed there are in manual.csv (said above)" in said, said
    # the TA's earlier values are never lost: manual.csv as it was, byte for byte, where the line says
    copy = said.split("manual.csv as it was is kept at ", 1)[1].split(")", 1)[0]
    assert open(copy, "rb").read() == before
    # the next run finds nothing typed: grades.csv is hwcheck's again
    again = _export(out)
    assert "was changed from" not in again and _rows(out / "manual.csv") == rows, again


def test_an_old_value_saved_back_or_a_grade_out_of_range_is_not_taken(graded, tmp_path):
    folder, out0 = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    (out / "manual.csv").write_text(text.replace(f"alice,{MANUAL_Q},,", f"alice,{MANUAL_Q},8,first read"),
                                    encoding="utf-8-sig")
    _export(out)  # hwcheck writes 8 in alice's cell
    rows = _rows(out / "manual.csv")
    rows[[r[0] for r in rows].index("alice")][2] = "6"  # the TA changes it in manual.csv itself
    with open(out / "manual.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    _export(out)  # hwcheck writes 6
    _retype(out, {("alice", MANUAL_Q): "8"})  # a spreadsheet that had the older grades.csv open saves 8 back
    said = _export(out)
    assert _book(out)["alice"][MANUAL_Q] == "6", said
    assert f"alice {MANUAL_Q} 8" in said and "was changed from" not in said, said  # named as hwcheck's old value

    _retype(out, {("alice", MANUAL_Q): f"{TOP + 2:g}"})  # more than the question is worth
    said = _export(out)
    assert (f"grades.csv: alice {MANUAL_Q} was changed from 6 to '{TOP + 2:g}' in grades.csv, which is not kept "
            f"({MANUAL_Q} is worth 0 to {TOP:g} points): manual.csv line 2 still gives 6") in said, said
    assert _book(out)["alice"][MANUAL_Q] == "6"
    assert [r for r in _rows(out / "manual.csv") if r[0] == "alice"] == [["alice", MANUAL_Q, "6", "first read"]]


def test_replace_points_keeps_every_other_byte(tmp_path):
    """A row rewritten in a file laid out by a spreadsheet: `;` with decimal commas, columns moved, a comment over
    two lines, CRLF and LF line ends; only the one points cell changes."""
    path = tmp_path / "manual.csv"
    text = ('\ufeffquestion;id;comment;points\r\n'
            f'{MANUAL_Q};alice;"two\nlines";7,5\r\n'
            f'Q1;bob;"kept; as it was";25\n'
            f'{MANUAL_Q};carol;;\r\n')
    path.write_bytes(text.encode("utf-8"))
    entries, problems = read_manual(str(path), SPEC)
    assert not problems
    alice = entries["alice"][0]
    assert replace_points(str(path), {alice["line"]: 6.25}) == [alice["line"]]
    got = path.read_bytes().decode("utf-8")
    assert got == text.replace('"two\nlines";7,5', '"two\nlines";6,25')
    entries, _ = read_manual(str(path), SPEC)
    assert entries["alice"][0]["points"] == 6.25 and entries["alice"][0]["comment"] == "two\nlines"
    assert entries["bob"][0]["points"] == 25
    assert replace_points(str(path), {99: 1}) == [] and path.read_bytes().decode("utf-8") == got


def test_grades_typed_in_a_canvas_class_whose_student_handed_in_two_files_reach_manual_csv(tmp_path):
    """A Canvas download where one student handed in two files (hwcheck grades them together from its own copy
    in OUT/.lms/<id>/), graded into an OUT of its own: a grade typed into grades.csv reaches manual.csv. Those
    staged copies counted as "OUT holds the students' files", so every grade typed was set aside (a TA's probe,
    h22: in most real classes one student hands in several files). In the download folder itself it is still
    set aside (tests/test_hostile_outdir.py)."""
    folder = tmp_path / "canvas"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "doejane_1001_5001_attention.py")
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "smithjohn_1002_5002_attention.py")
    (folder / "smithjohn_1002_5003_notes.py").write_text("# my notes\n")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                  "--timeout", "5"])
    assert r.exit_code == 0, r.output
    assert "canvas" in r.output.lower(), r.output
    assert any(os.scandir(out / ".lms")), "the two files of smithjohn were not staged together"
    book = _book(out)
    ids = sorted(book)
    _retype(out, {(ids[0], MANUAL_Q): "7"})
    said = _export(out)
    assert "no grade in it is applied" not in said, said
    assert [r for r in _rows(out / "manual.csv") if r[0] == ids[0] and r[1] == MANUAL_Q and r[2] == "7"], said
    assert _book(out)[ids[0]][MANUAL_Q] == "7"


def test_grades_typed_with_the_output_folder_inside_the_class_folder_reach_manual_csv(tmp_path):
    """`-o DIR/out`: the output folder inside the folder graded holds none of the students' files (hwcheck's
    own folder, never graded), so a grade typed into its grades.csv is the TA's."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    out = folder / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                  "--timeout", "5"])
    assert r.exit_code == 0, r.output
    _retype(out, {("alice", MANUAL_Q): "7"})
    said = _export(out)
    assert "no grade in it is applied" not in said, said
    assert _book(out)["alice"][MANUAL_Q] == "7", said
