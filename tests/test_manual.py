"""Grades a person gives (OUTDIR/manual.csv) survive --resume and --only, and reach grades.csv and the totals.

A small class of real example submissions is graded through the command
line; a TA types grades into manual.csv the way a spreadsheet saves it; the
batch is resumed and one student regraded; the grades are found each time.
"""
import csv
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records.manual import apply_manual, ensure_rows, read_manual
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
SPEC = load_spec("attention")


def _class(tmp_path, names=(("alice", "correct.py"), ("bob", "no_scaling.py"))):
    d = tmp_path / "class"
    d.mkdir()
    for sid, example in names:
        shutil.copyfile(os.path.join(EXAMPLES, example), d / f"{sid}.py")
    return d


def _grade(folder, out, *extra):
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5",
                                  *extra])
    assert r.exit_code == 0, r.output
    return r


def _gradebook(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _manual_rows(out):
    with open(out / "manual.csv", newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def _auto(out, sid):
    with open(out / f"{sid}.json", encoding="utf-8") as f:
        return json.load(f)["score"]


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("manual")
    folder = _class(tmp)
    out = tmp / "out"
    r = _grade(folder, out)
    return folder, out, r


def test_the_first_run_creates_manual_csv_with_a_row_per_submission_and_manual_question(graded):
    _, out, r = graded
    assert _manual_rows(out) == [["id", "question", "points", "comment"],
                                 ["alice", "Q3-text", "", ""], ["bob", "Q3-text", "", ""]]
    assert "manual.csv" in r.output
    assert _gradebook(out)["alice"]["Q3-text"] == ""  # pending


def test_typed_grades_survive_resume_and_only_and_count_in_the_totals(graded, tmp_path):
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    alice, bob = _auto(out, "alice"), _auto(out, "bob")
    # the TA's spreadsheet: saved by Excel in a `;` locale, with a BOM and decimal commas
    text = ("\ufeffid;question;points;comment\r\n"
            "alice;Q3-text;8,5;good: heads attend to different positions\r\n"
            "bob;Q3-text;6;\r\n"
            "bob;adjustment;-5;late by 2 days\r\n"
            "bob;Q1;30;appeal: the scaling test was wrong for him\r\n")
    (out / "manual.csv").write_bytes(text.encode("utf-8"))

    r = _grade(folder, out, "--resume")
    book = _gradebook(out)
    assert book["alice"]["Q3-text"] == "8.5"
    assert float(book["alice"]["total"]) == pytest.approx(alice + 8.5)
    assert book["bob"]["Q3-text"] == "6" and book["bob"]["Q1"] == "30"
    bob_q1 = next(q["score"] for q in json.load(open(out / "bob.json"))["questions"] if q["id"] == "Q1")
    assert float(book["bob"]["total"]) == pytest.approx(bob - bob_q1 + 30 + 6 - 5)
    assert "late by 2 days" in book["bob"]["note"] and "Q1 regraded" in book["bob"]["note"]
    assert (out / "manual.csv").read_bytes() == text.encode("utf-8"), "hwcheck rewrote the TA's file"
    results = json.load(open(out / "gradescope" / "bob" / "results.json"))
    assert results["score"] == pytest.approx(bob - bob_q1 + 30 + 6 - 5)
    assert "late by 2 days" in results["output"]
    assert "not used" not in r.output and "ignored" not in r.output

    r = _grade(folder, out, "--only", "alice")  # a regrade of one student keeps every typed grade
    book = _gradebook(out)
    assert book["alice"]["Q3-text"] == "8.5" and book["bob"]["Q3-text"] == "6"
    assert float(book["bob"]["total"]) == pytest.approx(bob - bob_q1 + 30 + 6 - 5)
    assert (out / "manual.csv").read_bytes() == text.encode("utf-8")

    _grade(folder, out)  # a full regrade, too
    assert _gradebook(out)["alice"]["Q3-text"] == "8.5"
    assert (out / "manual.csv").read_bytes() == text.encode("utf-8")


def test_a_grade_typed_into_grades_csv_is_kept_by_the_next_resume_via_manual_csv(graded, tmp_path):
    """The reported loss: a Q3-text grade in grades.csv is wiped by --resume. grades.csv is hwcheck's; the
    grade goes in manual.csv, and the summary says so."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    rows = _manual_rows(out)
    rows[1][2] = "9"
    with open(out / "manual.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    r = _grade(folder, out, "--resume")
    assert _gradebook(out)["alice"]["Q3-text"] == "9"
    assert "yours to edit" in r.output


def test_an_appeal_typed_into_an_automatic_questions_cell_moves_to_manual_csv(graded, tmp_path):
    """The TA regrades an appeal in grades.csv itself (bob's Q1 made 30), adds a note and a column of comments:
    --resume dropped all of it into the set-aside copy with one line about the file. The Q1 cell, which differs
    from what hwcheck wrote, is an override moved to manual.csv (applied), the note typed beside it its comment;
    the column is named."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    bob_q1 = float(_gradebook(out)["bob"]["Q1"])
    assert bob_q1 < 30
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    head.append("TA comment")
    for r in rows[1:]:
        r.append("")
        if r[head.index("id")] == "bob":
            r[head.index("Q1")], r[head.index("note")], r[-1] = "30", "appeal upheld", "Q1 full marks"
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    r = _grade(folder, out, "--resume")
    # the note typed beside the grade is its comment (h35: it was named "not kept"); the column is named
    assert "bob,Q1,30,appeal upheld" in (out / "manual.csv").read_text(encoding="utf-8-sig")
    assert _gradebook(out)["bob"]["Q1"] == "30"
    assert "grades.csv: bob Q1 = 30 was typed into grades.csv" in r.output, r.output
    assert "'TA comment'" in r.output and "bob's 'appeal upheld'" not in r.output, r.output
    assert not [row for row in _manual_rows(out) if row[0] == "alice" and row[1] == "Q1"]  # untouched rows: none


def test_a_new_submission_gets_its_row_appended_and_edited_rows_stay(graded, tmp_path):
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    with open(out / "manual.csv", "a", newline="", encoding="utf-8") as f:
        f.write("alice,adjustment,2,bonus: found a typo in the handout\r\n")
    before = (out / "manual.csv").read_bytes()
    shutil.copyfile(os.path.join(EXAMPLES, "softmax_wrong_axis.py"), folder / "carol.py")
    try:
        r = _grade(folder, out, "--resume")
    finally:
        os.unlink(folder / "carol.py")
    after = (out / "manual.csv").read_bytes()
    assert after.startswith(before)
    assert after[len(before):].decode() == "carol,Q3-text,,\r\n"
    assert "(1 row added for new submissions)" in r.output, r.output  # "1 rows" before h11's cosmetic fix
    assert float(_gradebook(out)["alice"]["total"]) == pytest.approx(_auto(out, "alice") + 2)


def test_bad_rows_are_reported_by_line_and_the_batch_goes_on(graded, tmp_path):
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    (out / "manual.csv").write_text("id,question,points,comment\n"
                                    "alice,Q3-text,eleven,\n"
                                    "alice,Q3-text,11,\n"
                                    "bob,Q9,3,\n"
                                    "zed,Q3-text,4,\n"
                                    "bob,Q3-text,4,\n"
                                    "bob,Q3-text,5,\n", encoding="utf-8")
    r = _grade(folder, out, "--resume")
    assert "manual.csv line 2: points 'eleven' is not a number: ignored" in r.output
    assert "manual.csv line 3: Q3-text is worth 0 to 10 points, not 11: ignored" in r.output
    assert "manual.csv line 4: question 'Q9'" in r.output
    assert "manual.csv line 5: no submission 'zed'" in r.output
    # two rows grade bob's Q3-text: neither counts (one may be another id's, saved so by a spreadsheet; h87)
    assert "manual.csv lines 6 and 7: 2 rows grade bob Q3-text" in r.output
    book = _gradebook(out)
    assert book["alice"]["Q3-text"] == "" and book["bob"]["Q3-text"] == ""


def test_manual_rules_as_pure_functions(tmp_path):
    path = tmp_path / "manual.csv"
    assert ensure_rows(str(path), {"a", "=b"}, SPEC) == 2
    assert path.read_text(encoding="utf-8-sig").splitlines()[1:] == ["'=b,Q3-text,,", "a,Q3-text,,"]
    assert ensure_rows(str(path), {"a", "=b"}, SPEC) == 0
    entries, problems = read_manual(str(path), SPEC, {"a", "=b"})
    assert problems == [] and entries == {}  # placeholders only: still pending
    card = {"score": 50, "questions": [{"id": "Q1", "score": 20, "max_score": 30},
                                       {"id": "Q3-text", "score": 0, "manual": True, "pending": True}]}
    merged = apply_manual(card, [{"question": "Q3-text", "points": 7.0, "comment": "", "line": 2, "kind": "manual"},
                                 {"question": "adjustment", "points": -1.0, "comment": "late", "line": 3,
                                  "kind": "adjustment"}])
    assert merged["score"] == 26 and card["score"] == 50  # (20 + 7 - 1; the automatic card is left alone)


def test_a_grade_typed_into_grades_csv_itself_is_not_wiped_by_resume(graded, tmp_path):
    """The issue's report: a Q3-text grade typed into grades.csv was silently wiped by the next --resume."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    col = rows[0].index("Q3-text")
    rows[1][col] = "7"  # alice
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    r = _grade(folder, out, "--resume")
    assert _gradebook(out)["alice"]["Q3-text"] == "7"
    assert ["alice", "Q3-text", "7", "typed into grades.csv"] in _manual_rows(out)
    assert "moved to manual.csv" in r.output
    _grade(folder, out, "--resume")  # and again: told once, kept
    assert _gradebook(out)["alice"]["Q3-text"] == "7"
    assert _manual_rows(out).count(["alice", "Q3-text", "7", "typed into grades.csv"]) == 1


def test_a_negative_number_as_hwchecks_own_csv_cells_write_it_is_read(tmp_path):
    """csvfile.cell writes a cell starting with '-' as `'-2` (so a spreadsheet does not take it for a formula):
    manual.csv rows hwcheck appends are read back as the numbers they were (an adjustment of -2)."""
    from checker.records.manual import ensure_rows, read_manual
    from checker.spec import load_spec
    spec = load_spec("attention")
    path = tmp_path / "manual.csv"
    ensure_rows(str(path), [], spec, extra=[["alice", "adjustment", "-2", "late"]])
    assert "'-2" in path.read_text(encoding="utf-8-sig")
    entries, problems = read_manual(str(path), spec, {"alice"})
    assert problems == [] and entries["alice"][0]["points"] == -2


def test_a_manual_csv_saved_as_excels_unicode_text_is_read(tmp_path):
    """Excel's "Unicode Text" saves UTF-16 with tabs: its grades (a decimal comma, an accented id) are read, not
    decoded as Windows-1252 into nonsense."""
    from checker.records.manual import read_manual
    from checker.spec import load_spec
    spec = load_spec("attention")
    path = tmp_path / "manual.csv"
    path.write_bytes("id\tquestion\tpoints\tcomment\r\nm\u00fcller\tQ3-text\t7,5\tgut\r\n".encode("utf-16"))
    entries, problems = read_manual(str(path), spec, {"m\u00fcller"})
    assert problems == [] and entries["m\u00fcller"][0]["points"] == 7.5, (entries, problems)


def test_columns_moved_in_a_spreadsheet_are_read_by_their_names(tmp_path):
    """A TA who moved manual.csv's columns (comment first, an extra column of names) keeps their grades: the
    header's names say where each column is, and the rows hwcheck appends follow that order."""
    from checker.records.manual import ensure_rows, read_manual
    from checker.spec import load_spec
    spec = load_spec("attention")
    path = tmp_path / "manual.csv"
    path.write_text("comment,points,name,question,id\r\nclear answer,7,Alice L.,Q3-text,alice\r\n", encoding="utf-8")
    entries, problems = read_manual(str(path), spec, {"alice", "bob"})
    assert problems == [], problems
    assert entries["alice"] == [{"question": "Q3-text", "points": 7.0, "comment": "clear answer", "line": 2,
                                 "kind": "manual"}]
    assert ensure_rows(str(path), ["alice", "bob"], spec) == 1  # bob's placeholder, under the TA's header
    assert path.read_text(encoding="utf-8").splitlines()[-1] == ",,,Q3-text,bob"
    entries, problems = read_manual(str(path), spec, {"alice", "bob"})
    assert problems == [] and list(entries) == ["alice"]


def _retype_grades_csv(out, edit, *, delimiter=",", encoding="utf-8-sig", decimal_comma=False, errors="strict"):
    """grades.csv as a spreadsheet saves it after the TA typed into it: `edit(header, row)` per row, then saved
    with `delimiter`, `encoding` and, with decimal_comma, every number's point made a comma (Excel in a `;` locale);
    errors="replace": a character the encoding cannot hold saved as `?` (Excel's "CSV (Comma delimited)")."""
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        edit(rows[0], row)
        if decimal_comma:
            for i, c in enumerate(row):
                try:
                    float(c)
                except ValueError:
                    continue
                row[i] = c.replace(".", ",")
    with open(out / "grades.csv", "w", newline="", encoding=encoding, errors=errors) as f:
        csv.writer(f, delimiter=delimiter).writerows(rows)


def _typed(sid, qid, value):
    def edit(head, row):
        if row[head.index("id")] == sid:
            row[head.index(qid)] = value
    return edit


def test_a_grade_typed_into_grades_csv_saved_by_excel_with_semicolons_reaches_manual_csv(graded, tmp_path):
    """r1: Excel in a `;` locale saved grades.csv with `;` and `8,5`: it was read as one column ("the column
    'id;student;...' typed there is not kept"), set aside, and the grade lost. It is read as manual.csv is: its
    separator found, `8,5` moved as 8.5, the other numbers (`26,25`) not taken for overrides."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    _retype_grades_csv(out, _typed("alice", "Q3-text", "8,5"), delimiter=";", decimal_comma=True)
    r = _grade(folder, out, "--resume")
    assert ["alice", "Q3-text", "8.5", "typed into grades.csv"] in _manual_rows(out), _manual_rows(out)
    assert _gradebook(out)["alice"]["Q3-text"] == "8.5"
    assert "is not kept" not in r.output and "are not kept" not in r.output, r.output
    assert [row for row in _manual_rows(out) if "typed into grades.csv" in row] == \
        [["alice", "Q3-text", "8.5", "typed into grades.csv"]]  # no automatic cell taken for an override
    assert "grades.csv in" in r.output and "was edited since hwcheck wrote it" in r.output, r.output
    # edited a second time: its copy goes to set-aside/grades.csv.2, and the TA is still told of grades.csv
    _retype_grades_csv(out, _typed("bob", "Q3-text", "7"), delimiter=";", decimal_comma=True)
    r = _grade(folder, out, "--resume")
    assert _gradebook(out)["bob"]["Q3-text"] == "7"
    assert "grades.csv in" in r.output and "grades.csv.2 in" not in r.output, r.output


@pytest.fixture(scope="module")
def accented(tmp_path_factory):
    """A class with an accented id, as Canvas names a student Müller: `müllerj_1002`."""
    tmp = tmp_path_factory.mktemp("accented")
    folder = _class(tmp, names=(("müllerj_1002", "correct.py"),))
    out = tmp / "out"
    _grade(folder, out)
    return folder, out


def test_a_grade_typed_into_grades_csv_saved_as_windows_1252_keeps_its_accented_id(accented, tmp_path):
    """r3: Excel's "CSV (Comma delimited)" saves Windows-1252: the id was read as `m�llerj_1002`, its grade
    appended to manual.csv under that id and then ignored as no one's, and every note with an accent was said
    to be typed there. It is decoded as manual.csv is (UTF-8, else Windows-1252)."""
    folder, out0 = accented
    out = tmp_path / "out"
    shutil.copytree(out0, out)

    def edit(head, row):
        _typed("müllerj_1002", "Q3-text", "8")(head, row)
        row[head.index("note")] = "née"  # an accented note left as it was is no note typed there
    _retype_grades_csv(out, edit, encoding="utf-8-sig")
    _grade(folder, out, "--resume")  # written with the note above, by hwcheck: now Excel's save of it
    _retype_grades_csv(out, _typed("müllerj_1002", "Q3-text", "8"), encoding="cp1252")
    r = _grade(folder, out, "--resume")
    assert "\ufffd" not in (out / "manual.csv").read_text(encoding="utf-8-sig") and "\ufffd" not in r.output
    assert _gradebook(out)["müllerj_1002"]["Q3-text"] == "8", r.output
    assert "ignored" not in r.output and "not kept" not in r.output, r.output


def test_export_moves_a_grade_typed_into_grades_csv_to_manual_csv(graded, tmp_path):
    """r2: `hwcheck export OUT` set an edited grades.csv aside as "not written by hwcheck (a student's file...)"
    and exported without the grade typed there; it now moves the grade to manual.csv as `grade --resume` does."""
    _, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    _retype_grades_csv(out, _typed("bob", "Q3-text", "9"))
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert ["bob", "Q3-text", "9", "typed into grades.csv"] in _manual_rows(out), r.output
    assert _gradebook(out)["bob"]["Q3-text"] == "9"
    assert "moved to manual.csv" in r.output and "a student's file" not in r.output, r.output


def test_an_appeal_given_before_a_resubmission_is_flagged_when_the_new_code_is_regraded(graded, tmp_path):
    """r5: an override typed for bob's old code (Q1 25, an appeal) kept lowering his resubmission's automatic
    30, unsaid. The override still applies (the TA's grade), but grades.csv's note and the summary say it was
    given for an earlier submission and what the new one scores, until the TA edits or deletes the row."""
    folder0, out0, _ = graded
    folder, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(folder0, folder)
    shutil.copytree(out0, out)
    with open(out / "manual.csv", "a", newline="", encoding="utf-8") as f:
        f.write("bob,Q1,25,appeal: partial credit\r\n")
    r = _grade(folder, out, "--resume")  # merged for the code it was given for: nothing to flag
    assert "earlier submission" not in r.output
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "bob.py")  # bob resubmits, correct
    r = _grade(folder, out, "--resume")
    note = _gradebook(out)["bob"]["note"]
    assert "Q1 25 from manual.csv line 4 was given for an earlier submission" in note, note
    assert "scores 30 there automatically" in note and "check that grade" in note
    assert "bob: Q1 25 from manual.csv line 4 was given for an earlier submission" in r.output, r.output
    r = CliRunner().invoke(main, ["export", str(out)])  # said again later: kept in OUT, not only by this batch
    assert "earlier submission" in _gradebook(out)["bob"]["note"]
    text = (out / "manual.csv").read_text(encoding="utf-8").replace("partial credit", "partial credit, checked")
    (out / "manual.csv").write_text(text, encoding="utf-8")
    CliRunner().invoke(main, ["export", str(out)])  # the TA checked it (edited the row): no longer flagged
    assert "earlier submission" not in _gradebook(out)["bob"]["note"]
    assert float(_gradebook(out)["bob"]["Q1"]) == 25


def test_an_absurd_adjustment_is_reported_with_the_limit_not_exported_or_crashing(graded, tmp_path):
    """r6: two `adjustment` rows of 1e308 crashed export (OverflowError: infinity); one was exported as a number
    of 309 digits. An adjustment is bounded by 10 times the assignment's total, said with the row's line."""
    _, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    with open(out / "manual.csv", "a", newline="", encoding="utf-8") as f:
        f.write("alice,adjustment,1e308,x\r\nalice,adjustment,1e308,y\r\nbob,adjustment,-5,late\r\n")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert "manual.csv line 4: an adjustment is at most 1000 points either way (10 times" in r.output, r.output
    assert "manual.csv line 5" in r.output and "internal error" not in r.output
    book = _gradebook(out)
    assert float(book["alice"]["total"]) == _auto(out, "alice")
    assert float(book["bob"]["total"]) == pytest.approx(_auto(out, "bob") - 5)


def test_a_header_with_the_comment_column_deleted_and_columns_moved_is_read_by_its_names(tmp_path):
    """r6: `id,points,question` (comment deleted, columns moved) was read as data: the header rejected as the id
    'id', every row as question '8'. The header is known by its names in any order, with a column missing."""
    path = tmp_path / "manual.csv"
    path.write_text("id,points,question\r\nalice,8,Q3-text\r\n", encoding="utf-8")
    entries, problems = read_manual(str(path), SPEC, {"alice", "bob"})
    assert problems == [], problems
    assert entries["alice"] == [{"question": "Q3-text", "points": 8.0, "comment": "", "line": 2, "kind": "manual"}]
    assert ensure_rows(str(path), ["alice", "bob"], SPEC) == 1
    assert path.read_text(encoding="utf-8").splitlines()[-1] == "bob,,Q3-text"
    path.write_text("question,id,comment\r\nQ3-text,alice,good\r\n", encoding="utf-8")
    _, problems = read_manual(str(path), SPEC, {"alice"})
    assert problems and "names no 'points' column" in problems[0], problems


def test_old_scores_a_spreadsheet_saves_back_after_a_regrade_are_no_overrides(graded, tmp_path):
    """h11 (1): the TA had grades.csv open in a spreadsheet, typing Q3-text, while bob resubmitted and `grade
    --resume` regraded him (Q1 up to 30). The spreadsheet saved its old Q1 cell back, and `export` took it for an
    override typed by the TA: pinned in manual.csv, bob's new score lost for good. A cell holding a value
    hwcheck itself wrote in that row before is no grade typed: only the Q3-text grade moves, the old cells are
    named in one line, and bob keeps his new automatic score."""
    folder0, out0, _ = graded
    folder, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(folder0, folder)
    shutil.copytree(out0, out)
    opened = (out / "grades.csv").read_bytes()  # the copy the spreadsheet holds
    old_q1 = _gradebook(out)["bob"]["Q1"]
    assert float(old_q1) < 30
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "bob.py")  # bob resubmits, correct now
    _grade(folder, out, "--resume")
    assert _gradebook(out)["bob"]["Q1"] == "30"
    (out / "grades.csv").write_bytes(opened)  # the spreadsheet saves its copy, with the grade typed in it
    _retype_grades_csv(out, _typed("bob", "Q3-text", "7"))
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert [row for row in _manual_rows(out)[1:] if row[1:] != ["Q3-text", "", ""]] == \
        [["bob", "Q3-text", "7", "typed into grades.csv"]], r.output
    book = _gradebook(out)
    assert book["bob"]["Q1"] == "30" and float(book["bob"]["total"]) == pytest.approx(_auto(out, "bob") + 7)
    assert f"bob Q1 {old_q1}" in r.output and "what hwcheck wrote there before a regrade" in r.output, r.output
    assert "the grades typed there are in manual.csv" in r.output


def test_a_total_typed_into_grades_csv_is_moved_to_manual_csv_as_an_adjustment(graded, tmp_path):
    """h11 (3): a late penalty typed on grades.csv's total (90 made 85) was dropped by the next run, and the
    message said the grades typed there were in manual.csv. The total typed becomes an `adjustment` row of the
    difference, said so; a total that is no number is named as not kept, and nothing claims it was moved."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    total = float(_gradebook(out)["alice"]["total"])
    _retype_grades_csv(out, _typed("alice", "total", f"{total - 5:g}"))
    r = _grade(folder, out, "--resume")
    assert [row for row in _manual_rows(out) if row[1] == "adjustment"] == \
        [["alice", "adjustment", "-5", f"total typed into grades.csv: {total - 5:g}, where the row added up to "
                                        f"{total:g}"]], _manual_rows(out)
    assert float(_gradebook(out)["alice"]["total"]) == pytest.approx(total - 5)
    assert f"alice's total was changed to {total - 5:g} in grades.csv" in r.output, r.output
    assert "as an adjustment of -5" in r.output, r.output
    # the summary says what was appended: the grade moved, not "1 rows added for new submissions"
    assert "(1 grade typed into grades.csv moved here)" in r.output and "rows added" not in r.output, r.output
    _retype_grades_csv(out, _typed("bob", "total", "85 (late)"))
    r = CliRunner().invoke(main, ["export", str(out)])
    assert "the total '85 (late)' typed for bob is not kept" in r.output, r.output
    assert "the grades typed there are in manual.csv" not in r.output, r.output
    assert "nothing there was moved to manual.csv" in r.output, r.output
    assert float(_gradebook(out)["bob"]["total"]) == pytest.approx(_auto(out, "bob"))


def test_an_id_a_windows_1252_save_could_not_hold_is_said_so(tmp_path):
    """h11 (6): Excel's "CSV (Comma delimited)" (Windows-1252) saves `李 小龙_205` as `? ??_205`; the grade typed in
    that row was then said to be for "no submission". It cannot be recovered from the file, but the line says
    why (the encoding, with the id it may be) and how to save, and the row is kept in manual.csv to correct."""
    folder = _class(tmp_path, names=(("李 小龙_205", "correct.py"),))
    out = tmp_path / "out"
    _grade(folder, out)
    _retype_grades_csv(out, _typed("李 小龙_205", "Q3-text", "8"), encoding="cp1252", errors="replace")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert ["? ??_205", "Q3-text", "8", "typed into grades.csv"] in _manual_rows(out)
    assert "no submission '? ??_205'" in r.output and "it may be '李 小龙_205'" in r.output, r.output
    assert "an encoding that cannot hold them" in r.output and '"CSV UTF-8"' in r.output, r.output


def _cp1252_save(path, text):
    """What Excel's "CSV (Comma delimited)" writes: Windows-1252, `?` for each character it cannot hold."""
    path.write_bytes(text.encode("cp1252", errors="replace"))


def test_a_row_an_encoding_lost_is_no_ones_grade_even_where_another_id_is_it_exactly(tmp_path):
    """h25: beside `李小龙.py`, a student who handed in `???.py` got 李小龙's grade: the TA's row `李小龙,Q3-text,10`,
    saved by Excel in Windows-1252, reads `???`, and `???` was taken as that student's id exactly. A row whose id
    is also what a lossy save makes of another graded id is no one's: both ids are named, neither gets it."""
    path = tmp_path / "manual.csv"
    _cp1252_save(path, "id,question,points,comment\r\n???,Q3-text,,\r\nalice,Q3-text,7,\r\n"
                       "李小龙,Q3-text,10,excellent answer\r\n")
    entries, problems = read_manual(str(path), SPEC, {"???", "alice", "李小龙"})
    assert list(entries) == ["alice"], entries
    line4 = [p for p in problems if p.startswith("manual.csv line 4:")]
    assert len(line4) == 1 and "'???'" in line4[0] and "'李小龙'" in line4[0], problems
    assert "no one's grade" in line4[0] and "Windows-1252" in line4[0] and line4[0].endswith("ignored"), line4
    # the class without the look-alike: as before, the row is said to be the id it may be, and is no one's
    entries, problems = read_manual(str(path), SPEC, {"alice", "李小龙"})
    assert list(entries) == ["alice"] and "it may be '李小龙'" in problems[-1], problems
    # the id typed whole (a file saved as UTF-8) is that id's grade: nothing saves 李小龙 from another id
    path.write_text("id,question,points,comment\r\n李小龙,Q3-text,10,\r\n", encoding="utf-8")
    entries, problems = read_manual(str(path), SPEC, {"???", "李小龙"})
    assert problems == [] and entries["李小龙"][0]["points"] == 10.0, (entries, problems)


def test_a_row_whose_id_lost_its_leading_zeros_is_no_ones_grade_even_where_another_id_is_it(tmp_path):
    """h25: Excel reads the id `0012345` as the number 12345 and saves `12345`: beside `0012345.py`, a student who
    handed in `12345.py` got 0012345's grade. Such a row is no one's, naming both; `0012345` typed whole is its
    own (no save drops zeros into an id), and a class without `12345` is told which id the row may be."""
    path = tmp_path / "manual.csv"
    path.write_text("id,question,points,comment\r\n12345,Q3-text,10,great\r\n0012345,Q3-text,6,\r\n",
                    encoding="utf-8")
    entries, problems = read_manual(str(path), SPEC, {"0012345", "12345"})
    assert entries == {"0012345": [{"question": "Q3-text", "points": 6.0, "comment": "", "line": 3,
                                    "kind": "manual"}]}, entries
    assert len(problems) == 1 and problems[0].startswith("manual.csv line 2:"), problems
    assert "'0012345'" in problems[0] and "'12345'" in problems[0] and "leading zeros" in problems[0], problems
    entries, problems = read_manual(str(path), SPEC, {"0012345"})
    assert list(entries) == ["0012345"] and "it may be '0012345'" in problems[0], problems
    # an honest class of ids of digits, none of which a save turns into another: as before
    entries, problems = read_manual(str(path), SPEC, {"0012345", "12346"})
    assert problems[0].startswith("manual.csv line 2: no submission '12345'") and list(entries) == ["0012345"]


def test_a_row_that_is_one_id_and_how_hwcheck_writes_another_is_no_ones_grade(tmp_path):
    """An id is also found as hwcheck's CSV files write it (`zw\\u200bspace` for an invisible character): a
    student who names a file with that escape's very characters makes the row fit two ids, and it is no one's."""
    path = tmp_path / "manual.csv"
    path.write_text("id,question,points,comment\r\nzw\\u200bspace,Q3-text,9,\r\n", encoding="utf-8")
    entries, problems = read_manual(str(path), SPEC, {"zw\u200bspace"})
    assert problems == [] and list(entries) == ["zw\u200bspace"]  # as before: the id as grades.csv shows it
    entries, problems = read_manual(str(path), SPEC, {"zw\u200bspace", "zw\\u200bspace"})
    assert entries == {} and "no one's grade" in problems[0], (entries, problems)


@pytest.fixture(scope="module")
def lookalikes(tmp_path_factory):
    """h25's class: a victim whose id Windows-1252 cannot hold and one whose id starts with 0, each beside a
    student who named a file as Excel would save the victim's id."""
    tmp = tmp_path_factory.mktemp("lookalikes")
    folder = _class(tmp, names=(("李小龙", "correct.py"), ("???", "correct.py"), ("0012345", "correct.py"),
                                ("12345", "correct.py")))
    out = tmp / "out"
    _grade(folder, out, "-j", "2")
    return folder, out


def test_a_grade_typed_into_grades_csv_saved_lossily_goes_to_no_look_alike(lookalikes, tmp_path):
    """h25 (REPRO_cp1252.sh, num/): the TA types the victims' grades into grades.csv, and Excel saves it in
    Windows-1252 (`李小龙` is `???`) with the leading zeros dropped (`0012345` is `12345`). The grades are moved to
    manual.csv under the ids as saved, where neither the victim nor the look-alike gets them: the TA is told
    which ids each may be, to correct there."""
    _, out0 = lookalikes
    out = tmp_path / "out"
    shutil.copytree(out0, out)

    def edit(head, row):
        _typed("李小龙", "Q3-text", "10")(head, row)
        _typed("0012345", "Q3-text", "9")(head, row)
        if row[head.index("id")] == "0012345":
            row[head.index("id")] = "12345"
    _retype_grades_csv(out, edit, encoding="cp1252", errors="replace")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    assert ["???", "Q3-text", "10", "typed into grades.csv"] in _manual_rows(out), _manual_rows(out)
    assert ["12345", "Q3-text", "9", "typed into grades.csv"] in _manual_rows(out), _manual_rows(out)
    book = _gradebook(out)
    assert [book[sid]["Q3-text"] for sid in ("李小龙", "???", "0012345", "12345")] == ["", "", "", ""], book
    said = [line for line in r.output.splitlines() if "no one's grade" in line]
    assert any("'???'" in line and "'李小龙'" in line for line in said), r.output
    assert any("'12345'" in line and "'0012345'" in line for line in said), r.output
