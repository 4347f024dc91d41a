"""A regrade says whose total it moved, old -> new, and keeps the list in OUT/grades-moved.csv (h102).

After a weight changed in the grading tests, `grade --resume` regraded the class and said nothing of which grades
moved: a TA who had uploaded the grades to the LMS could not tell whose went down or up. A course's frozen copy
of `attention` grades three real submissions; a test's weight changes; `--resume` names the students whose
total changed (a correct file's does not), with both totals as grades.csv had them, and OUT/grades-moved.csv
keeps them.
"""
import csv
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600)


def _totals(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row["total"] for row in csv.DictReader(f)}


def test_a_regrade_names_whose_total_moved_and_keeps_the_list(tmp_path):
    course = tmp_path / "course"
    folder = course / "attnmv"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8")
    assert spec.count('id = "attention"') == 1, "the spec changed: update this"
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', 'id = "attnmv"'), encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(course), PYTHONPATH=ROOT)
    subs = tmp_path / "class"
    subs.mkdir()
    for name, src in (("alice.py", "correct.py"), ("bob.py", "no_scaling.py"), ("carol.py", "feature_axis.py")):
        shutil.copyfile(os.path.join(EXAMPLES, src), subs / name)
    out = tmp_path / "out"
    r = _run(["grade", subs, "-a", "attnmv", "-o", out, "--public", "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "totals moved" not in r.stdout + r.stderr  # a first grade moves nothing
    assert not (out / "grades-moved.csv").exists()
    before = _totals(out)

    tests = folder / "test_attention_q1.py"
    text = tests.read_text(encoding="utf-8")
    assert "@pytest.mark.weight(3)" in text, "the grading tests changed: update this"
    tests.write_text(text.replace("@pytest.mark.weight(3)", "@pytest.mark.weight(1)", 1), encoding="utf-8")
    r = _run(["grade", subs, "-a", "attnmv", "-o", out, "--public", "--resume", "--timeout", "5"], env)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 0, said
    after = _totals(out)
    moved = sorted(sid for sid in before if before[sid] != after[sid])
    assert moved and "alice" not in moved, (before, after)  # the weight moves the weak files' totals only
    assert f"totals moved since grades.csv was written last: {len(moved)} student" in said, said
    for sid in moved:
        assert f"{sid} {before[sid]} -> {after[sid]}" in said, said
    assert "alice " + before["alice"] + " ->" not in said, said
    assert f"(all listed in {out / 'grades-moved.csv'})" in said, said
    with open(out / "grades-moved.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.DictReader(f))
    assert sorted(r["id"] for r in rows) == moved, rows
    assert all(r["was"] == before[r["id"]] and r["now"] == after[r["id"]] for r in rows), rows

    r = _run(["grade", subs, "-a", "attnmv", "-o", out, "--public", "--resume", "--timeout", "5"], env)
    assert r.returncode == 0 and "totals moved" not in r.stdout + r.stderr, r.stdout + r.stderr  # nothing moved
    with open(out / "grades-moved.csv", newline="", encoding="utf-8-sig") as f:
        assert len(list(csv.DictReader(f))) == len(moved)  # kept, not rewritten empty


def test_the_summary_line_is_capped_with_a_count():
    from checker.records.moved import SHOWN, moved_lines
    changes = [(f"s{i:02d}", "", "90", "80") for i in range(SHOWN + 3)]
    line, = moved_lines(changes, "OUT/grades-moved.csv")
    assert f"{SHOWN + 3} students ({SHOWN + 3} down, 0 up)" in line and "and 3 more" in line, line
    assert f"s{SHOWN - 1:02d} 90 -> 80" in line and f"s{SHOWN:02d}" not in line, line
