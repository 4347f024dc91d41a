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
