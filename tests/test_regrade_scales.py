"""A grade typed into manual.csv when a question was worth other points than spec.toml gives it after a change is
named to the TA, per student and question, with both (h35 finding 2): kept as typed, or ignored when above the new
points, never changed or dropped unsaid.

A copy of `attention` (a course's own folder, found through HWCHECK_ASSIGNMENTS) grades one real submission;
then its spec.toml moves points from Q2 to Q1 and `grade --resume` regrades.
"""
import csv
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600)


def _gradebook(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def test_a_grade_typed_before_a_questions_points_changed_is_named_with_both(tmp_path):
    root = tmp_path / "course"
    folder = root / "hw1att"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder,
                    ignore=shutil.ignore_patterns("__pycache__"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8")
    assert spec.count('id = "attention"') == 1 and spec.count("points = 30") >= 2, "the spec changed: update this"
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', 'id = "hw1att"'), encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(root), PYTHONPATH=ROOT)
    subs = tmp_path / "class"
    subs.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), subs / "alice.py")
    out = tmp_path / "out"
    r = _run(["grade", subs, "-a", "hw1att", "-o", out, "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out / "manual.csv", "a", encoding="utf-8", newline="") as f:  # appeals, on the scale of Q1, Q2: 30
        f.write("alice,Q1,28,appeal ok\r\nalice,Q2,25,partial\r\n")
    r = _run(["export", out], env)
    assert r.returncode == 0 and "was typed when" not in r.stdout + r.stderr, r.stdout + r.stderr
    typed = (out / "manual.csv").read_bytes()

    # Q1 is worth 40 now, Q2 20 (the total stays 100): --resume regrades alice with the new spec
    text = (folder / "spec.toml").read_text(encoding="utf-8")
    q1, q2 = text.index('id = "Q1"'), text.index('id = "Q2"')
    text = text[:q1] + text[q1:q2].replace("points = 30", "points = 40", 1) + \
        text[q2:].replace("points = 30", "points = 20", 1)
    (folder / "spec.toml").write_text(text, encoding="utf-8")
    r = _run(["grade", subs, "-a", "hw1att", "-o", out, "--resume", "--timeout", "5"], env)
    said = r.stdout + r.stderr
    assert r.returncode == 0, said
    assert "alice: Q1 28 (manual.csv line" in said and "was typed when Q1 was worth 30 points; it is worth 40 now" \
        in said, said
    assert "alice Q2 25 was typed when Q2 was worth 30 points; it is worth 0 to 20 now" in said, said
    row = _gradebook(out)["alice"]
    assert row["Q1"] == "28" and "worth 30 points; it is worth 40 now" in row["note"], row
    assert (out / "manual.csv").read_bytes() == typed  # nothing the TA typed is changed

    r = _run(["export", out], env)  # said again by every run, until the TA edits the row
    assert "was typed when Q1 was worth 30 points" in r.stdout + r.stderr, r.stdout + r.stderr
    with open(out / "manual.csv", "wb") as f:
        f.write(typed.replace(b"alice,Q1,28,appeal ok", b"alice,Q1,28,appeal ok (checked at 40)"))
    r = _run(["export", out], env)
    assert r.returncode == 0 and "was typed when Q1" not in r.stdout + r.stderr, r.stdout + r.stderr
    assert "was typed when Q2 was worth 30" in r.stdout + r.stderr, r.stdout + r.stderr


def _graded_then_q3_text_made_8(tmp_path):
    """A course copy of attention graded (alice), her Q3-text graded 9 of 10 in manual.csv and exported; then
    spec.toml makes Q3-text worth 8. Returns (env, the class folder, OUT)."""
    import pytest
    root = tmp_path / "course"
    folder = root / "hw1att"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder,
                    ignore=shutil.ignore_patterns("__pycache__", "examples"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8").replace('id = "attention"', 'id = "hw1att"')
    (folder / "spec.toml").write_text(spec, encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(root), PYTHONPATH=ROOT)
    subs = tmp_path / "my class"  # a folder name the shell splits: the printed command quotes it
    subs.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), subs / "alice.py")
    out = tmp_path / "out"
    r = _run(["grade", subs, "-a", "hw1att", "-o", out, "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out / "manual.csv", "a", encoding="utf-8", newline="") as f:
        f.write("alice,Q3-text,9,good\r\n")
    r = _run(["export", out], env)
    assert r.returncode == 0 and _gradebook(out)["alice"]["Q3-text"] == "9", r.stdout + r.stderr
    q = spec.index('id = "Q3-text"')
    if spec[q:].count("points = 10") < 1:
        pytest.fail("attention's Q3-text is no longer worth 10: update this test")
    (folder / "spec.toml").write_text(spec[:q] + spec[q:].replace("points = 10", "points = 8", 1), encoding="utf-8")
    return env, subs, out


def test_export_and_report_refuse_scorecards_of_the_old_spec_naming_the_resume_that_regrades_them(tmp_path):
    """h75 D1: after a question's points changed and before a regrade, `export` judged manual.csv by the new
    spec (Q3-text 9 ignored, above the new 8) and the scorecards, Canvas's points possible and results.json by
    the old: a mixed gradebook, exit 0. Now export and report refuse in one line, naming how many scorecards
    are of the old tests and the `grade ... --resume` that regrades them; nothing is written."""
    import shlex
    env, subs, out = _graded_then_q3_text_made_8(tmp_path)
    before = {name: (out / name).read_bytes() for name in ("grades.csv", "manual.csv", "answers.csv")}
    again = shlex.join(["hwcheck", "grade", str(subs), "-a", "hw1att", "-o", str(out), "-j", "1", "--resume"])
    for command in (["export", out], ["report", out]):
        r = _run(command, env)
        said = r.stdout + r.stderr
        assert r.returncode == 2 and len(said.strip().splitlines()) == 1, said
        assert "1 of the 1 scorecards" in said and "graded with other grading tests than hw1att's now" in said, said
        assert again in said and "nothing was written" in said, said
    assert {name: (out / name).read_bytes() for name in before} == before
    assert not (out / "report.html").exists()

    r = _run([*shlex.split(again)[1:]], env)  # the printed command regrades her with the new spec
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run(["export", out], env)
    assert r.returncode == 0, r.stdout + r.stderr
    row = _gradebook(out)["alice"]
    assert row["max_total"] == "98" and row["Q3-text"] == "", row  # one spec: 8 points, the 9 ignored and said
    assert (out / "manual.csv").read_bytes() == before["manual.csv"]


def test_a_manual_grade_ignored_is_said_in_grades_csvs_note(tmp_path):
    """h75 C1: a grade of manual.csv ignored (above its question's points after a change) was said on the
    terminal only; grades.csv's note was empty, so the spreadsheet gave no reason why the cell went blank."""
    env, subs, out = _graded_then_q3_text_made_8(tmp_path)
    r = _run(["grade", subs, "-a", "hw1att", "-o", out, "--resume", "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "which 9 is above: ignored" in r.stdout + r.stderr, r.stdout + r.stderr
    row = _gradebook(out)["alice"]
    assert row["Q3-text"] == "", row
    assert ("manual.csv line 3: Q3-text 9 was typed when Q3-text was worth 10, above the 8 it is worth now "
            "(spec.toml changed): ignored") in row["note"], row
