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
    from what hwcheck wrote, is an override moved to manual.csv (applied); the note and the column are named."""
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
    assert "bob,Q1,30,typed into grades.csv" in (out / "manual.csv").read_text(encoding="utf-8-sig")
    assert _gradebook(out)["bob"]["Q1"] == "30"
    assert "grades.csv: bob Q1 = 30 was typed into grades.csv" in r.output, r.output
    assert "'TA comment'" in r.output and "bob's 'appeal upheld'" in r.output, r.output
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
    assert "1 rows added" in r.output
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
    assert "manual.csv line 7: a second row for bob Q3-text" in r.output
    book = _gradebook(out)
    assert book["alice"]["Q3-text"] == "" and book["bob"]["Q3-text"] == "4"


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
