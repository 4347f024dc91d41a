"""Every CSV file hwcheck writes neutralises formula cells by one rule (`checker.records.csvfile.cell`).

The source check finds every `csv.writer` / `csv.DictWriter` of checker/ (AST): only checker/records/csvfile.py
makes one. The output check runs every writer (grades.csv, answers.csv, manual.csv's rows, canvas.csv,
moodle.csv) with hostile ids, names and answers and reads each cell back as a spreadsheet would.
"""

import ast
import csv
import io
import os
import re

import pytest

from checker.records import exports, gradebook, manual
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SPEC = load_spec("attention")

# what OWASP's CSV injection guidance names, and the forms spreadsheets also read
HOSTILE = ["=HYPERLINK(\"http://evil\")", "+1+1", "-1-1", "@SUM(A1)", "\t=1", "\r=1", "\n=1", "\tplain",
           "\rplain", " =1", "  +1", "\u3000=1", "\uff1d1+1", "\uff0b1", "\uff0d1", "\uff20SUM(A1)",
           "\x1b[31m=1", "a\u202e=1"]
FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")


def _dangerous(text):
    """A cell a spreadsheet would read as a formula (or that starts with a control character)."""
    if text[:1] in ("\t", "\r", "\n"):
        return True
    return text.lstrip()[:1] in FORMULA


def test_only_checker_csvfile_makes_a_csv_writer():
    found = []
    for folder, _, files in os.walk(os.path.join(ROOT, "checker")):
        for name in files:
            if not name.endswith(".py"):
                continue
            path = os.path.join(folder, name)
            tree = ast.parse(open(path, encoding="utf-8").read(), path)
            for node in ast.walk(tree):
                if isinstance(node, ast.Attribute) and node.attr in ("writer", "DictWriter") and \
                        isinstance(node.value, ast.Name) and node.value.id == "csv":
                    found.append(os.path.relpath(path, ROOT))
                if isinstance(node, ast.ImportFrom) and node.module == "csv" and \
                        any(a.name in ("writer", "DictWriter") for a in node.names):
                    found.append(os.path.relpath(path, ROOT))
    assert sorted(set(found)) == [os.path.join("checker", "records", "csvfile.py")], found


@pytest.mark.parametrize("value", HOSTILE)
def test_the_rule_neutralises_each_form(value):
    from checker.records import csvfile
    out = csvfile.cell(value)
    assert not _dangerous(out), repr(out)
    assert out.startswith("'") or "\x1b" not in out


def test_numbers_stay_numbers():
    from checker.records import csvfile
    assert csvfile.cell(-5) == -5 and csvfile.cell(7.5) == 7.5 and csvfile.cell(0) == 0
    assert csvfile.cell("plain") == "plain" and csvfile.cell(None) == ""


def _card(sid, answer):
    questions = [{"id": q["id"], "score": 0 if not q.get("manual") else None, "manual": bool(q.get("manual")),
                  "pending": True, "answer": answer} for q in SPEC["questions"]]
    return {"submission": {"id": sid}, "questions": questions, "score": -3, "max_score": 100,
            "status": "graded", "grader": {"mode": "public"}}


def _cells(text, delimiter=","):
    return [c for row in csv.reader(io.StringIO(text, newline=""), delimiter=delimiter) for c in row]


def _check(text, delimiter=","):
    bad = [c for c in _cells(text, delimiter) if _dangerous(c) and c.strip() not in ("-3",)]
    assert not bad, bad


def test_every_writer_neutralises_hostile_ids_names_and_answers(tmp_path):
    cards = [_card(v, v) for v in HOSTILE]
    people = {v: {"student": v, "student_id": v, "canvas_user_id": "1001", "sis_user_id": v, "sis_login_id": v,
                  "section": v, "moodle_participant": "7", "email": v} for v in HOSTILE}
    notes = {v: v for v in HOSTILE}
    _check(gradebook.gradebook_text(cards, SPEC, notes, people))
    _check(gradebook.answers_text(cards, SPEC))
    _check(exports.canvas_text(cards, people, "=title", 100))
    _check(exports.moodle_text(cards, people, "=2026"))
    path = tmp_path / "manual.csv"
    manual.ensure_rows(str(path), set(HOSTILE), SPEC, extra=[[v, "Q3-text", v, v] for v in HOSTILE])
    _check(path.read_text(encoding="utf-8-sig"))
    path2 = tmp_path / "semicolon.csv"
    path2.write_text("id;question;points;comment\r\n", encoding="utf-8")
    manual.ensure_rows(str(path2), set(HOSTILE), SPEC)
    _check(path2.read_text(encoding="utf-8"), delimiter=";")


def test_a_negative_grade_stays_a_number_in_the_lms_files():
    card = _card("alice", "")
    people = {"alice": {"student": "Alice", "canvas_user_id": "1001", "moodle_participant": "7"}}
    canvas = list(csv.reader(io.StringIO(exports.canvas_text([card], people, "hw", 100))))
    moodle = list(csv.reader(io.StringIO(exports.moodle_text([card], people, "2026-01-01T00:00:00+00:00"))))
    assert canvas[-1][-1] == "-3"
    assert moodle[-1][4] == "-3"


def test_manual_csv_appends_no_row_twice_for_an_id_it_wrote_neutralised(tmp_path):
    path = tmp_path / "manual.csv"
    ids = {"=x", "\tx", "\rx", "\x1bx", " =x", "\uff1dx", "ok"}
    added = manual.ensure_rows(str(path), ids, SPEC)
    assert added == len(ids)
    assert manual.ensure_rows(str(path), ids, SPEC) == 0


# h25: Excel in a locale whose list separator is `;` (German, French) splits a line of a `,` file at every `;`
# (a `"` opens a quoted field only at the start of such a piece) and a newline ends its row: each piece a
# student's text starts there is a cell of its own, defused or not
SPLIT = ["carol,Heads see different things;=cmd|' /C calc'!A0", "frank;=SUM(A1+1);", "x; +1", "x;\"=1",
         "x;\"\" -1", "x\t=1", "x\t\t@SUM(A1)", "line one\n=1+1", "a;\uff1d1", "a;\u3000=1", "=a;=b",
         "ok;'=already text"]


def _pieces(text):
    """Every piece of `text` a spreadsheet may start a cell or a row at, whatever its list separator: after a `;`,
    a tab or a line end (what a `,` splits is checked as the csv module reads it, `_check`)."""
    import re
    return re.split("[;\t\r\n]", text)


def _dangerous_piece(piece):
    return piece.lstrip().lstrip('"').lstrip()[:1] in FORMULA


@pytest.mark.parametrize("value", SPLIT)
def test_every_piece_a_separator_starts_is_defused(value):
    from checker.records import csvfile
    out = csvfile.cell(value)
    assert not [p for p in _pieces(out) if _dangerous_piece(p)], repr(out)
    assert csvfile.cell(out) == out  # written twice (gradebook.csv_row, then csv_text) it is written once


@pytest.mark.parametrize("value", HOSTILE + SPLIT)
def test_the_rule_is_idempotent(value):
    from checker.records import csvfile
    assert csvfile.cell(csvfile.cell(value)) == csvfile.cell(value)


def test_every_writer_defuses_what_a_semicolon_or_a_newline_starts(tmp_path):
    """The files as a `;`-locale Excel reads them: split at every `;`, tab and line end, quotes or not."""
    cards = [_card(v, v) for v in SPLIT]
    people = {v: {"student": v, "student_id": v, "canvas_user_id": "1001", "sis_user_id": v, "sis_login_id": v,
                  "section": v, "moodle_participant": "7", "email": v} for v in SPLIT}
    notes = {v: v for v in SPLIT}
    texts = [gradebook.gradebook_text(cards, SPEC, notes, people), gradebook.answers_text(cards, SPEC),
             exports.canvas_text(cards, people, "=title;=x", 100), exports.moodle_text(cards, people, "2026;=x")]
    path = tmp_path / "manual.csv"
    manual.ensure_rows(str(path), set(SPLIT), SPEC, extra=[[v, "Q3-text", v, v] for v in SPLIT])
    path2 = tmp_path / "semicolon.csv"
    path2.write_text("id;question;points;comment\r\n", encoding="utf-8")
    manual.ensure_rows(str(path2), set(SPLIT), SPEC)
    texts += [path.read_text(encoding="utf-8-sig"), path2.read_text(encoding="utf-8")]
    for text in texts:
        bad = [p for p in _pieces(text) if _dangerous_piece(p) and p.strip() not in ("-3",)]
        assert not bad, bad
        _check(text)


def test_manual_csv_reads_back_the_ids_it_wrote_defused(tmp_path):
    """The round trip: a row hwcheck wrote for an id whose `;` piece it defused (`carol;'=x`) is that id's grade,
    and ensure_rows appends no second row for it."""
    ids = {"carol;=x", "frank;=SUM(A1+1);", "tab\t-1", "ok"}
    path = tmp_path / "manual.csv"
    assert manual.ensure_rows(str(path), ids, SPEC) == len(ids)
    assert manual.ensure_rows(str(path), ids, SPEC) == 0
    text = path.read_text(encoding="utf-8-sig")
    assert "carol;'=x" in text and "carol;=x" not in text, text
    rows = text.replace(",Q3-text,,", ",Q3-text,5,")
    path.write_text(rows, encoding="utf-8-sig")
    entries, problems = manual.read_manual(str(path), SPEC, ids)
    assert problems == [] and sorted(entries) == sorted(ids), (entries, problems)


def test_a_semicolon_file_defuses_what_a_comma_starts_and_reads_its_ids_back(tmp_path):
    """manual.csv where the TA's is `;`-separated: Excel in a `,` locale splits its lines at each `,`, so an id
    `bob,=cmd|...` written as it is made the second piece a formula there (an attacker probe, h49). The piece
    after the `,` is defused, the row is still that id's grade, and no second row is appended for it."""
    ids = {"bob,=cmd|' /C calc'!A0", "carol, +1", "ok"}
    path = tmp_path / "manual.csv"
    path.write_text("id;question;points;comment\r\n", encoding="utf-8")
    assert manual.ensure_rows(str(path), ids, SPEC) == len(ids)
    text = path.read_text(encoding="utf-8")
    for line in text.splitlines()[1:]:
        assert not [p for p in line.split(",")[1:] if _dangerous_piece(p)], line
    assert manual.ensure_rows(str(path), ids, SPEC) == 0
    path.write_text(text.replace(";Q3-text;;", ";Q3-text;5;"), encoding="utf-8")
    entries, problems = manual.read_manual(str(path), SPEC, ids)
    assert problems == [] and sorted(entries) == sorted(ids), (entries, problems)


@pytest.mark.parametrize("value", HOSTILE + SPLIT + ["bob,=cmd", "x, -1", "a,\"@SUM(1)"])
def test_the_rule_for_a_semicolon_file_is_idempotent_and_defuses_each_comma_piece(value):
    from checker.records import csvfile
    out = csvfile.cell(value, ";")
    assert csvfile.cell(out, ";") == out
    assert not [p for p in re.split("[,\t\r\n]", out) if _dangerous_piece(p)], repr(out)
