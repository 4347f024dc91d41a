"""Grades typed into grades.csv reach students without hwcheck's bookkeeping as their reason (h102).

A grade typed into grades.csv is moved into manual.csv with a comment saying so ("typed into grades.csv"; a total
changed there: "total typed into grades.csv: 85, where the row added up to 90"). Those comments reached students
as the grade's reason: Gradescope's results.json ("Graded by a person: Q3-text 7 (typed into grades.csv)") and
the report's feedback pages. Now they stay where the TA sees them (manual.csv, grades.csv's note, the command's
lines) and the student-facing texts leave them out; a note the TA typed beside a grade, which becomes its comment,
still reaches the student, and so does a comment the TA wrote over hwcheck's.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600)


def _gradebook(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    return rows, list(rows[0].keys())


def _output(out, sid):
    with open(out / "gradescope" / sid / "results.json", encoding="utf-8") as f:
        return json.load(f)["output"]


def test_hwchecks_bookkeeping_is_no_reason_given_to_a_student(tmp_path):
    course = tmp_path / "course"
    folder = course / "attntc"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8")
    assert spec.count('id = "attention"') == 1, "the spec changed: update this"
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', 'id = "attntc"'), encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(course), PYTHONPATH=ROOT)
    subs = tmp_path / "class"
    subs.mkdir()
    for name in ("alice.py", "bob.py", "carol.py"):
        shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), subs / name)
    out = tmp_path / "out"
    r = _run(["grade", subs, "-a", "attntc", "-o", out, "--public", "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr

    rows, fields = _gradebook(out)
    for row in rows:
        if row["id"] == "alice":
            row["Q3-text"] = "7"  # a grade typed, no note: hwcheck's comment "typed into grades.csv"
        if row["id"] == "bob":
            row["total"] = str(float(row["total"]) - 5)  # a late penalty typed as a total: an adjustment
        if row["id"] == "carol":
            row["Q3-text"], row["note"] = "6", "clear but short"  # the TA's words beside it: its comment
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    r = _run(["export", out], env)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 0, said
    assert "bob's total was changed to" in said, said  # the TA's line still says what was moved, and how

    manual = (out / "manual.csv").read_text(encoding="utf-8-sig")  # the TA's file keeps the bookkeeping
    assert "alice,Q3-text,7,typed into grades.csv" in manual, manual
    assert "bob,adjustment,-5,\"total typed into grades.csv: " in manual and "where the row added up to" in manual
    assert "carol,Q3-text,6,clear but short" in manual, manual
    notes = {row["id"]: row["note"] for row in _gradebook(out)[0]}
    assert "typed into grades.csv" in notes["alice"] and "where the row added up to" in notes["bob"], notes

    alice, bob, carol = (_output(out, sid) for sid in ("alice", "bob", "carol"))
    assert "Graded by a person: Q3-text 7" in alice and "typed into grades.csv" not in alice, alice
    assert "Graded by a person: adjustment -5" in bob and "grades.csv" not in bob, bob
    assert "Graded by a person: Q3-text 6 (clear but short)" in carol, carol

    r = _run(["report", out, "--top", "0"], env)  # the feedback pages: the TA's words, not hwcheck's
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "clear but short" in page, r.stdout + r.stderr
    assert "typed into grades.csv" not in page and "where the row added up to" not in page

    # the TA writes a reason over hwcheck's words: it reaches the student, as typed
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    start = text.index("total typed into grades.csv: ")
    end = text.index("\n", start)
    (out / "manual.csv").write_text(text[:start] + "late by 2 days" + text[end:], encoding="utf-8-sig")
    r = _run(["export", out], env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Graded by a person: adjustment -5 (late by 2 days)" in _output(out, "bob")


def test_only_hwchecks_own_words_are_left_out():
    from checker.records.manual import student_comment
    assert student_comment("typed into grades.csv") == ""
    assert student_comment("total typed into grades.csv: 85, where the row added up to 90") == ""
    assert student_comment("total typed into grades.csv: 87.5, where the row added up to 92.25") == ""
    for words in ("typed into grades.csv; late by 2 days", "late by 2 days", "",
                  "total typed into grades.csv: 85, where the row added up to 90 (checked)"):
        assert student_comment(words) == words
