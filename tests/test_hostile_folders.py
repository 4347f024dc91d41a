"""Hostile folders in a batch: nested past Python's recursion limit, links to `..`, `/` and the reference.

A student's archive, unpacked by a TA into the batch's folder (unzip and tar restore links), or a folder
made with `mkdir -p`, is what these are. One submission nested 1,100 folders deep stopped the whole batch
with RecursionError (os.walk recursed, and the batch's handling of the crash walked again); a top-level
link to `/` made the grader copy the machine into the worker (and block for ever on /proc/kmsg); a link to
`..` handed a student the classmates' files and the TA's notes beside the batch; a link to the assignment's
folder ran the reference as the student's code. Each is graded or listed as not graded, with a reason, and
the batch goes on; what the links lead to never reaches a scorecard.
"""
import csv
import json
import os
import shutil
import subprocess
import sys

import pytest

from test_walk import deep  # noqa: F401 - a fixture

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")
NOTE = "PRIVATE: plagiarism case notes"


def _hwcheck(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.slow
def test_deep_folders_and_links_to_folders_neither_stop_a_batch_nor_open_anything(tmp_path, deep):
    course = tmp_path / "course"
    subs = course / "subs"
    subs.mkdir(parents=True)
    (course / "notes.txt").write_text(NOTE + "\n")
    shutil.copyfile(CORRECT, subs / "alice.py")
    (subs / "deep").mkdir()
    shutil.copyfile(CORRECT, subs / "deep" / "hw.py")
    deep(str(subs / "deep"), sys.getrecursionlimit() + 100)
    os.symlink("/", subs / "rootlink")
    os.symlink("..", subs / "mallory_hw")
    os.symlink(os.path.join(ROOT, "assignments", "attention"), subs / "reflink")
    out = tmp_path / "out"
    proc = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "-j", "1", timeout=300)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"alice", "deep"}, rows
    assert float(rows["alice"]["total"]) == 90 and float(rows["deep"]["total"]) == 90, rows
    deep = json.loads((out / "deep.json").read_text())
    said = " ".join(m.get("text", "") if isinstance(m, dict) else str(m) for m in deep["load"]["messages"])
    assert "folders deep" in said, said
    listed = proc.stdout + proc.stderr
    for name in ("rootlink", "mallory_hw", "reflink"):
        assert name in listed and not (out / f"{name}.json").exists()
    assert "a link to a folder: not followed" in listed
    for path in out.rglob("*"):
        if path.is_file():
            assert NOTE not in path.read_text(errors="replace"), path


@pytest.mark.slow
def test_check_of_a_link_to_the_assignments_folder_runs_none_of_it(tmp_path):
    """`hwcheck check LINK` follows a link the user named, but not into the grader's own files."""
    os.symlink(os.path.join(ROOT, "assignments", "attention"), tmp_path / "hw")
    proc = _hwcheck("check", str(tmp_path / "hw"), "-a", "attention", "--json", str(tmp_path / "card.json"),
                    timeout=300)
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    card = json.loads((tmp_path / "card.json").read_text())
    assert all(q["score"] == 0 for q in card["questions"]), [q["score"] for q in card["questions"]]
    said = json.dumps(card["load"])
    assert "keeps from submissions" in said or "grader's own files" in said, said
