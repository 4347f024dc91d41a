"""A grade typed for a written answer (attention's Q3-text, graded by a person in manual.csv) is named, on every
run, once the student's answer is another one (h38 finding 1): the TA's grade still counts, and grades.csv's
note and the summary say to check it, until the TA edits the row.

It was said once, by the `grade --resume` that regraded the new answer, and kept only in memory: the next
`hwcheck export` or `grade --resume` dropped it (and the old grade went to canvas.csv unsaid), a run killed
(SIGKILL) once the new scorecard landed never said it at all, and a submission with no answer before was not
compared. OUT now keeps the answer each row was given for (`.manual-answers.json`, hwcheck's own file).
"""

import csv
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from checker.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")
CHANGED = "the written answer to Q3-text changed since it was graded by hand"


def _source(answer):
    """correct.py with `answer` as its Q3-text answer (None: no answer at all)."""
    text = open(CORRECT, encoding="utf-8").read()
    head, sep, _ = text.partition("# Q3-text\n")
    assert sep, "correct.py has no Q3-text answer any more: update this test"
    return head if answer is None else head + "# Q3-text\n# " + answer + "\n"


def _run(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exit_code == 0, r.output
    return r.output


def _book(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _grade_by_hand(out, grades):
    """manual.csv with {id: (points, comment)} typed into the Q3-text rows hwcheck wrote empty."""
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    for sid, (points, comment) in grades.items():
        assert f"{sid},Q3-text,," in text
        text = text.replace(f"{sid},Q3-text,,", f"{sid},Q3-text,{points},{comment}")
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")


@pytest.fixture
def graded(tmp_path):
    """alice wrote an answer, bob none; the TA graded both by hand (8, and 0 for no answer)."""
    folder = tmp_path / "class"
    folder.mkdir()
    (folder / "alice.py").write_text(_source("Each head has its own softmax, so heads look at different words."))
    (folder / "bob.py").write_text(_source(None))
    out = tmp_path / "out"
    _run("grade", folder, "-a", "attention", "-o", out, "--public", "--timeout", "5")
    _grade_by_hand(out, {"alice": (8, "v1"), "bob": (0, "no answer")})
    said = _run("export", out)
    assert CHANGED not in said, said
    return folder, out


def test_a_grade_for_a_changed_answer_is_named_by_every_run_until_the_row_is_edited(graded):
    folder, out = graded
    (folder / "alice.py").write_text(_source("LATE: one head would do."))
    (folder / "bob.py").write_text(_source("Several heads attend to several things."))  # none before: changed too
    said = _run("grade", folder, "-a", "attention", "-o", out, "--public", "--timeout", "5", "--resume")
    assert f"alice: {CHANGED} (8 points in manual.csv line" in said, said
    assert f"bob: {CHANGED} (0 points in manual.csv line" in said, said
    for again in (["export", out], ["grade", folder, "-a", "attention", "-o", out, "--public", "--timeout", "5",
                                    "--resume"]):
        said = _run(*again)  # said again, and noted again, by the runs after it (they dropped it)
        assert f"alice: {CHANGED} (8 points" in said and f"bob: {CHANGED} (0 points" in said, said
        book = _book(out)
        assert CHANGED in book["alice"]["note"] and book["alice"]["Q3-text"] == "8", book["alice"]
        assert CHANGED in book["bob"]["note"], book["bob"]
    # the TA checks alice's grade and edits the row: a new grade, for the answer of now; bob's is still named
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    (out / "manual.csv").write_text(text.replace("alice,Q3-text,8,v1", "alice,Q3-text,6,v2 checked"),
                                    encoding="utf-8-sig")
    said = _run("export", out)
    assert f"alice: {CHANGED}" not in said and f"bob: {CHANGED}" in said, said
    assert CHANGED not in _book(out)["alice"]["note"]
    said = _run("export", out)
    assert f"alice: {CHANGED}" not in said and f"bob: {CHANGED}" in said, said


KILL_AFTER_LANDING = """
import os, signal, sys
from checker.records import outputs
real = outputs.Gradebook.update
def update(self, sid, path=None):
    real(self, sid, path)  # the new scorecard is in OUT and read: the machine goes down before any write
    if sid == sys.argv[1]:
        os.kill(os.getpid(), signal.SIGKILL)
outputs.Gradebook.update = update
from checker.cli import main
main(sys.argv[2:])
"""


def test_a_batch_killed_once_the_new_answer_landed_leaves_the_grade_named(graded):
    folder, out = graded
    (folder / "alice.py").write_text(_source("LATE: one head would do."))
    (folder / "bob.py").write_text(_source("Several heads attend to several things."))
    env = dict(os.environ, PYTHONPATH=ROOT)
    r = subprocess.run([sys.executable, "-c", KILL_AFTER_LANDING, "bob", "grade", str(folder), "-a", "attention",
                        "-o", str(out), "--public", "--timeout", "5", "--resume", "-j", "1"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == -9, r.stdout + r.stderr
    said = _run("export", out)
    assert f"alice: {CHANGED} (8 points" in said and f"bob: {CHANGED} (0 points" in said, said
    book = _book(out)
    assert CHANGED in book["alice"]["note"] and CHANGED in book["bob"]["note"], book
    said = _run("grade", folder, "-a", "attention", "-o", out, "--public", "--timeout", "5", "--resume")
    assert "(up to date, not regraded)" in said and f"alice: {CHANGED}" in said and f"bob: {CHANGED}" in said, said
