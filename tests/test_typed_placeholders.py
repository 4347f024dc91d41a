"""Grades typed into grades.csv reach manual.csv whole: into the empty row of their student and question, with the
note typed beside them as the comment (h35 findings 3 and 4); a regrade's old cells are said for what they are
(finding 5).

Two real submissions are graded once (module fixture); each test works on a copy of that OUT.
"""
import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records.manual import ensure_rows, read_manual
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
SPEC = load_spec("attention")
MANUAL = next(str(q["id"]) for q in SPEC["questions"] if q.get("manual"))  # Q3-text


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("typed")
    folder = tmp / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    shutil.copyfile(os.path.join(EXAMPLES, "no_scaling.py"), folder / "bob.py")
    out = tmp / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5"])
    assert r.exit_code == 0, r.output
    return folder, out


def _copy(graded, tmp_path):
    folder0, out0 = graded
    folder, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(folder0, folder)
    shutil.copytree(out0, out)
    return folder, out


def _edit_grades_csv(out, edits):
    """grades.csv as a spreadsheet saves it after the TA typed `edits` {(id, column): value} into it."""
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    for row in rows[1:]:
        for (sid, column), value in edits.items():
            if row[head.index("id")] == sid:
                row[head.index(column)] = value
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)


def _manual_rows(out):
    with open(out / "manual.csv", newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def _gradebook(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def test_a_grade_typed_into_grades_csv_fills_the_empty_row_of_its_student_and_question(graded, tmp_path):
    """h35 (3), (4): bob's Q3-text 8 typed into grades.csv was appended as a second row beside his empty row, so
    the TA's later grade in that empty row overruled it ("a second row ... ignored") on every run; the note typed
    beside it was "not kept". It fills the empty row, its note the comment: one row, nothing said lost."""
    _, out = _copy(graded, tmp_path)
    before = (out / "manual.csv").read_bytes()
    _edit_grades_csv(out, {("bob", MANUAL): "8", ("bob", "note"): "good answer, a bit short"})
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    rows = _manual_rows(out)
    assert [row for row in rows if row[:2] == ["bob", MANUAL]] == [["bob", MANUAL, "8", "good answer, a bit short"]]
    assert len(rows) == len(before.decode("utf-8-sig").splitlines())  # filled, not appended
    assert "alice" in {row[0] for row in rows if row[1:] == [MANUAL, "", ""]}  # the other empty row is as it was
    assert "not kept" not in r.output and "good answer, a bit short" in r.output, r.output
    book = _gradebook(out)
    assert book["bob"][MANUAL] == "8" and "good answer, a bit short" in book["bob"]["note"]
    # the TA later edits that row (the one row of bob's Q3-text): no second row, no conflict, on any run
    text = (out / "manual.csv").read_text(encoding="utf-8-sig").replace(
        f"bob,{MANUAL},8,", f"bob,{MANUAL},9,")
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0 and "second row" not in r.output, r.output
    assert _gradebook(out)["bob"][MANUAL] == "9"


def test_a_note_typed_after_hwchecks_own_note_is_the_comment_of_the_grade_typed_beside_it(graded, tmp_path):
    _, out = _copy(graded, tmp_path)
    ours = _gradebook(out)["bob"]["note"]
    typed = f"{ours}; clear, but no example" if ours else "clear, but no example"
    _edit_grades_csv(out, {("bob", MANUAL): "7", ("bob", "note"): typed})
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert [row for row in _manual_rows(out) if row[:2] == ["bob", MANUAL]] == \
        [["bob", MANUAL, "7", "clear, but no example"]], r.output


def test_a_grade_typed_where_the_ta_graded_the_row_already_names_both_rows_and_counts_neither(tmp_path):
    """Where the empty row holds the TA's own grade, nothing is filled: the row typed is appended, and the two
    rows of bob's question are named, neither counting (h87: one of two such rows may be another student's, saved
    under this id by a spreadsheet; before, the first counted)."""
    path = tmp_path / "manual.csv"
    path.write_text(f"id,question,points,comment\nbob,{MANUAL},6,mine\nalice,{MANUAL},,\n", encoding="utf-8")
    assert ensure_rows(str(path), ["alice", "bob"], SPEC, [["bob", MANUAL, 8, "typed"], ["alice", MANUAL, 5, "t"]]) == 2
    assert path.read_text(encoding="utf-8").splitlines() == [
        "id,question,points,comment", f"bob,{MANUAL},6,mine", f"alice,{MANUAL},5,t", f"bob,{MANUAL},8,typed"]
    entries, problems = read_manual(str(path), SPEC, ["alice", "bob"])
    assert "bob" not in entries and any(f"2 rows grade bob {MANUAL}" in p for p in problems), problems


def test_a_placeholder_is_filled_in_the_tas_order_of_columns_and_separator(tmp_path):
    path = tmp_path / "manual.csv"
    path.write_bytes(f"question;id;comment;points\r\n{MANUAL};bob;;\r\n".encode("utf-8"))
    assert ensure_rows(str(path), ["bob"], SPEC, [["bob", MANUAL, 7.5, "fine; short"]]) == 1
    assert path.read_bytes().decode("utf-8") == f'question;id;comment;points\r\n{MANUAL};bob;"fine; short";7,5\r\n'


def test_a_cell_that_differs_only_because_manual_csv_was_edited_is_no_regrades_old_value(graded, tmp_path):
    """h35 (5): the TA typed alice's grade into grades.csv, then gave bob a late penalty in manual.csv; `export`
    said bob's total "holds what hwcheck wrote there before a regrade ... open in a spreadsheet across the
    regrade", though nothing was regraded: the cell is as hwcheck wrote it last, and differs from what it writes
    now because manual.csv changed. Such a cell is not said; an older grades.csv saved back after an export (no
    regrade) is said as that, never as a regrade."""
    _, out = _copy(graded, tmp_path)
    opened = (out / "grades.csv").read_bytes()  # the copy a spreadsheet holds
    _edit_grades_csv(out, {("alice", MANUAL): "6"})
    with open(out / "manual.csv", "a", encoding="utf-8", newline="") as f:
        f.write("bob,adjustment,-10,late\r\n")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert "regrade" not in r.output and "bob total" not in r.output, r.output
    assert ["alice", MANUAL, "6", "typed into grades.csv"] in _manual_rows(out), r.output
    assert "alice Q3-text = 6 was typed" in r.output, r.output

    # the spreadsheet still had the file open from before that export, and saves it with a grade typed for bob
    (out / "grades.csv").write_bytes(opened)
    _edit_grades_csv(out, {("bob", MANUAL): "4"})
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert "before a regrade" not in r.output and "bob total" in r.output, r.output
    assert "in an earlier grades.csv" in r.output and ["bob", MANUAL, "4", "typed into grades.csv"] in \
        _manual_rows(out), r.output
