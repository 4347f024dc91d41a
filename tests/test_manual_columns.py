"""manual.csv's columns beyond id, question, points and comment, and numbers hwcheck writes into it.

A TA probe (h51): a column of the TA's own (`private_note`, "suspect copied - do not share") was joined into
the comment shown to the student (grades.csv's note, Gradescope's results.json); Excel's `;` at the end of
every line turned `no answer` into `no answer;` and an empty comment into `Q3-text 9 (;)`; a grade typed into
grades.csv beside a row with points that are no grade (`12` for a 10-point question) was appended as a second
row, written `8.5` into a file of decimal commas. Driven through `hwcheck grade` and `hwcheck export` on real
graded scorecards (the helpers of tests/test_manual.py and tests/test_manual_changed.py).
"""

import csv
import io
import json
import os
import shutil

import pytest

from checker.records.classreport.sources import merge_manual
from checker.records.manual import read_manual
from checker.spec import load_spec
from test_manual import _class, _grade
from test_manual_changed import _book, _export, _retype

SPEC = load_spec("attention")
Q = next(str(q["id"]) for q in SPEC["questions"] if q.get("manual"))
SECRET = "suspect copied from Stack Overflow - do not share"
ASIDE = "check with the instructor first"


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("columns")
    out = tmp / "out"
    _grade(_class(tmp), out)
    return out


def _copy(graded, tmp_path):
    out = tmp_path / "out"
    shutil.copytree(graded, out)
    return out


def _write(out, text):
    (out / "manual.csv").write_bytes(("\ufeff" + text).encode("utf-8"))


def _rows(out, delimiter=","):
    text = (out / "manual.csv").read_bytes().decode("utf-8-sig")
    return list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))


def _seen_by_students(out):
    """Everything a student is shown of the grades: grades.csv (its note), each results.json, and the report's
    feedback (the comments `hwcheck report` merges from manual.csv)."""
    shown = [(out / "grades.csv").read_text(encoding="utf-8-sig")]
    for sid in ("alice", "bob"):
        shown.append((out / "gradescope" / sid / "results.json").read_text(encoding="utf-8"))
    cards = [json.load(open(out / f"{sid}.json", encoding="utf-8")) for sid in ("alice", "bob")]
    merged, _, _ = merge_manual(str(out), SPEC, cards)
    shown += [str(q.get("manual_comment")) for c in merged for q in c["questions"]]
    return "\n".join(shown)


def test_manual_a_private_column_of_the_tas_is_never_shown_to_a_student(graded, tmp_path):
    out = _copy(graded, tmp_path)
    _write(out, "id,question,points,comment,private_note\r\n"
                f"alice,{Q},7.5,good but vague,{SECRET}\r\n"
                f"bob,{Q},9,,{ASIDE}\r\n")
    said = _export(out)
    shown = _seen_by_students(out)
    assert SECRET not in shown and "do not share" not in shown, shown
    assert ASIDE not in shown, shown
    book = _book(out)
    assert f"{Q} 7.5 (good but vague)" in book["alice"]["note"], book["alice"]["note"]
    assert f"{Q} 9" in book["bob"]["note"] and f"{Q} 9 (" not in book["bob"]["note"], book["bob"]["note"]
    results = json.load(open(out / "gradescope" / "alice" / "results.json", encoding="utf-8"))
    assert f"{Q} 7.5 (good but vague)" in results["output"] and SECRET not in results["output"]
    entries, problems = read_manual(str(out / "manual.csv"), SPEC, ["alice", "bob"])
    assert [r["comment"] for r in entries["alice"]] == ["good but vague"] and entries["bob"][0]["comment"] == ""
    assert not problems and "ignored" not in said, (problems, said)
    assert SECRET in (out / "manual.csv").read_text(encoding="utf-8-sig")  # the TA's file keeps it


def test_manual_the_tas_column_survives_every_rewrite_of_manual_csv(graded, tmp_path):
    """Grades typed into grades.csv are put into manual.csv: a grade changed there rewrites a row's points, a
    grade typed for a row hwcheck wrote empty (beside the TA's own note) fills it; the TA's column keeps its
    cells, and its notes still reach no student."""
    out = _copy(graded, tmp_path)
    _write(out, "id,question,points,comment,private_note\r\n"
                f"alice,{Q},7.5,good but vague,{SECRET}\r\n"
                f"bob,{Q},,,{ASIDE}\r\n")
    _export(out)
    _retype(out, {("alice", Q): "6", ("bob", Q): "4"})
    said = _export(out)
    rows = _rows(out)
    assert rows[0] == ["id", "question", "points", "comment", "private_note"]
    assert [r for r in rows if r[0] == "bob"] == [["bob", Q, "4", "typed into grades.csv", ASIDE]], (rows, said)
    assert [r for r in rows if r[0] == "alice"] == [["alice", Q, "6", "good but vague", SECRET]], (rows, said)
    book = _book(out)
    assert book["alice"][Q] == "6" and book["bob"][Q] == "4", said
    shown = _seen_by_students(out)
    assert SECRET not in shown and ASIDE not in shown, shown


def test_manual_excels_trailing_empty_column_leaves_comments_as_typed(graded, tmp_path):
    """Excel in a `;` locale ends every line with `;` (an unnamed empty column): it adds nothing to a comment;
    a comment an unquoted `;` split, the header's last named column, is still joined back."""
    out = _copy(graded, tmp_path)
    _write(out, "id;question;points;comment;\r\n"
                f"alice;{Q};6;Mentions softmax; but not heads;\r\n"
                f"bob;{Q};9;;\r\n")
    _export(out)
    book = _book(out)
    assert f"{Q} 6 (Mentions softmax; but not heads)" in book["alice"]["note"], book["alice"]["note"]
    assert "heads;)" not in book["alice"]["note"], book["alice"]["note"]
    assert f"{Q} 9" in book["bob"]["note"] and "(;)" not in book["bob"]["note"], book["bob"]["note"]
    entries, _ = read_manual(str(out / "manual.csv"), SPEC, ["alice", "bob"])
    assert entries["alice"][0]["comment"] == "Mentions softmax; but not heads"
    assert entries["bob"][0]["comment"] == ""
    results = json.load(open(out / "gradescope" / "bob" / "results.json", encoding="utf-8"))
    assert "(;)" not in results["output"], results["output"]


def test_manual_a_grade_typed_over_points_that_are_no_grade_replaces_them_in_the_files_own_style(graded, tmp_path):
    """A grade typed into grades.csv where manual.csv's row holds points that are no grade (12 of 10) takes
    their place in that row, its comment kept, rather than a second row; numbers hwcheck writes into a file of
    `;` and decimal commas (that row's, an adjustment appended for a total typed) are written `8,5`."""
    out = _copy(graded, tmp_path)
    top = next(float(q["points"]) for q in SPEC["questions"] if q.get("manual"))
    text = ("id;question;points;comment\r\n"
            f"alice;{Q};{top + 2:g};over max\r\n"
            f"bob;{Q};7,5;ok\r\n")
    _write(out, text)
    said = _export(out)
    assert "manual.csv line 2" in said and "ignored" in said, said  # reported, alice's question pending
    assert _book(out)["alice"][Q] == ""
    bob_total = float(_book(out)["bob"]["total"])
    _retype(out, {("alice", Q): "8.5", ("bob", "total"): f"{bob_total - 2.5:g}"})
    said = _export(out)
    rows = _rows(out, ";")
    assert [r for r in rows if r[0] == "alice"] == [["alice", Q, "8,5", "over max"]], (rows, said)
    assert [r for r in rows if r[0] == "bob" and r[1] == Q] == [["bob", Q, "7,5", "ok"]], rows
    adjustment = [r for r in rows if r[0] == "bob" and r[1] == "adjustment"]
    assert len(adjustment) == 1 and adjustment[0][2] == "-2,5", rows
    written = (out / "manual.csv").read_bytes().decode("utf-8-sig")
    assert written.startswith("id;question;points;comment\r\n") and f"\r\nbob;{Q};7,5;ok\r\n" in written, written
    book = _book(out)
    assert book["alice"][Q] == "8.5" and float(book["bob"]["total"]) == pytest.approx(bob_total - 2.5), said
    again = _export(out)
    assert "ignored" not in again and "was typed into grades.csv" not in again, again
    entries, problems = read_manual(str(out / "manual.csv"), SPEC, ["alice", "bob"])
    assert not problems and entries["alice"][0]["points"] == 8.5, problems
