"""An id a spreadsheet reads as a number gives no one another student's grade (h86, h87).

A TA's probe (h86, repro_excel_1e5.sh and repro_excel_manual.sh): LibreOffice, Google Sheets and Excel read an
id such as `1e5` as the number 100000 and save it so; `hwcheck export` then took the row of student `1e5` for
student `100000` (the grades typed in it, its total as an adjustment, its Q1/Q2 as overrides). Such an id is now
treated as the leading-zeros case was: a row whose id a spreadsheet may have made of another graded id is no
one's grade, and the line names every id it may be. Two rows that grade one id's question are all refused and
named (which is whose cannot be told).
"""

import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records.manual import _match_id, ensure_rows, read_manual
from checker.spec import example_dirs, load_spec

SPEC = load_spec("attention")
MANUAL = next(str(q["id"]) for q in SPEC["questions"] if q.get("manual"))
AUTO = next(str(q["id"]) for q in SPEC["questions"] if not q.get("manual"))
EXAMPLE = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))


@pytest.mark.parametrize("sid, saved", [
    ("1e5", "100000"), ("1e5", "1.00E+05"), ("1E+05", "100000"), ("1.50", "1.5"), ("+5", "5"), ("5.", "5"),
    ("0012345", "12345"), ("123456789012", "1.23457E+11"), ("1,234", "1234"), ("1,50", "1,5"),
    ("123456789012345678", "123456789012346000")])
def test_the_forms_a_spreadsheet_saves_an_id_read_as_a_number(sid, saved):
    from checker.records.ids import spreadsheet_forms
    assert saved in spreadsheet_forms(sid)


@pytest.mark.parametrize("sid", ["alice", "2026-01", "s01_correct", "100000", "1e999", "a1e5"])
def test_an_id_read_as_text_or_written_so_already_has_no_other_form(sid):
    from checker.records.ids import spreadsheet_forms
    assert sid not in spreadsheet_forms(sid)
    if sid not in ("100000", "1e999"):  # read as text: no form at all
        assert spreadsheet_forms(sid) == set()


def _write(path, *rows):
    path.write_text("id,question,points,comment\r\n" + "".join(r + "\r\n" for r in rows), encoding="utf-8")


@pytest.mark.parametrize("typed, real", [("100000", "1e5"), ("1.5", "1.50"), ("5", "+5"), ("12345", "0012345"),
                                         ("1.23457E+11", "123456789012")])
def test_a_row_whose_id_is_a_spreadsheets_number_for_another_id_is_no_ones(tmp_path, typed, real):
    path = tmp_path / "manual.csv"
    _write(path, f"{typed},{MANUAL},8,{real}: clear answer", f"ok,{MANUAL},5,")
    entries, problems = read_manual(str(path), SPEC, [typed, real, "ok"])  # both are graded ids
    assert typed not in entries and real not in entries and entries["ok"][0]["points"] == 5
    assert len(problems) == 1 and "line 2" in problems[0] and repr(typed) in problems[0] \
        and repr(real) in problems[0] and "no one's grade" in problems[0], problems
    entries, problems = read_manual(str(path), SPEC, [real, "ok"])  # the id typed graded no more: still named
    assert real not in entries and repr(real) in problems[0] and "no one's grade" in problems[0], problems


def test_the_rows_of_an_exact_id_that_no_other_id_becomes_still_count(tmp_path):
    path = tmp_path / "manual.csv"
    _write(path, f"1e5,{MANUAL},8,", f"100000,{MANUAL},3,", "1e5,adjustment,-5,late")
    entries, problems = read_manual(str(path), SPEC, ["1e5"])  # no 100000 graded: 1e5 as written is 1e5's
    assert [r["points"] for r in entries["1e5"]] == [8, -5] and len(problems) == 1 and "'1e5'" in problems[0]


def test_two_rows_grading_one_ids_question_are_refused_and_named(tmp_path):
    path = tmp_path / "manual.csv"
    _write(path, f"bob,{MANUAL},,", f"bob,{MANUAL},4,mine", f"bob,{MANUAL},9,whose?", f"bob,{AUTO},3,",
           f"alice,{MANUAL},6,", "bob,adjustment,-1,", "bob,adjustment,-2,")
    ignored = {}
    entries, problems = read_manual(str(path), SPEC, ["alice", "bob"], ignored=ignored)
    assert [(r["question"], r["points"]) for r in entries["bob"]] == [(AUTO, 3), ("adjustment", -1), ("adjustment", -2)]
    assert entries["alice"][0]["points"] == 6
    assert len(problems) == 1 and "lines 3 and 4" in problems[0] and f"bob {MANUAL}" in problems[0] \
        and "none of them counts" in problems[0], problems
    assert ignored["bob"]


def test_a_grade_typed_for_a_number_id_fills_no_ones_row(tmp_path):
    path = tmp_path / "manual.csv"
    ensure_rows(str(path), ["1e5", "100000"], SPEC)
    keys = {}
    ensure_rows(str(path), ["1e5", "100000"], SPEC, [["100000", MANUAL, 8, "typed"]],
                fill=lambda sid: _match_id(sid, {"1e5", "100000"}, keys)[0] == sid)
    rows = list(csv.reader(open(path, encoding="utf-8-sig", newline="")))
    assert [MANUAL, ""] == rows[1][1:3] and rows[2][1:3] == [MANUAL, ""]  # the empty rows stay empty
    entries, _ = read_manual(str(path), SPEC, ["1e5", "100000"])
    assert entries == {}


def _grades(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def test_export_of_a_gradebook_a_spreadsheet_saved_gives_100000_nothing_of_1e5s(tmp_path):
    """repro_excel_1e5.sh: the row of 1e5 saved as 100000, with a grade typed in it."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    for sid, example in (("1e5", "correct.py"), ("100000", "no_scaling.py"), ("ok", "correct.py")):
        shutil.copyfile(os.path.join(EXAMPLE, example), subs / f"{sid}.py")
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public", "-j", "1"])
    assert r.exit_code == 0, r.output
    rows = _grades(out)
    head, before = rows[0], {row[0]: row for row in rows[1:]}
    for row in rows[1:]:
        if row[0] == "1e5":
            row[0] = "100000"  # as the spreadsheet saves the cell 1e5
            row[head.index(MANUAL)] = "8"
        if row[0] == "ok":
            row[head.index(MANUAL)] = "5"
    with open(out / "grades.csv", "w", newline="", encoding="utf-8") as f:
        csv.writer(f).writerows(rows)
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    after = {row[0]: row for row in _grades(out)[1:]}
    for column in ("total", AUTO, MANUAL):  # 100000 keeps its own grades; 1e5's are not its
        assert after["100000"][head.index(column)] == before["100000"][head.index(column)], (column, r.output)
    assert after["ok"][head.index(MANUAL)] == "5"
    assert "'100000' may be the id of any of 2 submissions ('100000' or '1e5')" in r.output, r.output


def test_the_ids_two_rows_of_a_saved_gradebook_hold_are_found():
    from checker.records.manual_read import repeated_ids
    text = "\ufeffid,total,Q1\r\n100000,54,24\r\n100000,90,30\r\nok,90,30\r\n'=x,1,1\r\n=x,2,2\r\n"
    assert repeated_ids(text) == {"100000": [2, 3], "=x": [5, 6]}
    assert repeated_ids("id;total\r\na;1\r\nb;2\r\na;3\r\n") == {"a": [2, 4]}
    assert repeated_ids("name,total\r\na,1\r\na,2\r\n") == {}


def test_grades_typed_in_rows_that_share_an_id_are_no_ones():
    """hwcheck writes grades.csv with one row per submission: two rows of one id are one a spreadsheet saved
    under another id (a form the number rule does not know, here a date), so neither row's typed grade is
    taken, and a line names the id and its lines; the other rows' grades are taken as before."""
    from checker.records.typed import typed_into_gradebook
    from checker.spec import load_spec
    spec = load_spec("attention")
    text = ("id,Q3-text,note\r\n"
            "2026-03-04,8,\r\n"      # "3-4" as a spreadsheet saved it, beside the real 2026-03-04's row
            "2026-03-04,,\r\n"
            "carol,7,\r\n")
    said = []
    moved = typed_into_gradebook(text, spec, {}, said=said)
    assert [m[:3] for m in moved] == [["carol", "Q3-text", 7]]
    assert any("2026-03-04 is the id of 2 rows (lines 2, 3)" in s and "Q3-text 8" in s for s in said), said
