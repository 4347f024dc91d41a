"""grades.csv and the results.json files while a batch runs (h38 findings 2 and 3).

A grade the TA typed into grades.csv while a batch ran (saved between two scorecards) was set aside by the
batch's next rewrite of grades.csv as "not written by hwcheck (a student's file, ...)": never applied, and
said by no later run. Each rewrite of a batch now first moves grades typed since hwcheck wrote it into
manual.csv, and says them, as a run's start does; where manual.csv cannot be written (a full disk), grades.csv
is not rewritten (it keeps them), the batch goes on, and a later write moves them (or the command stops, as
at a run's start, naming them).

A batch killed (SIGKILL) left each gradescope/<id>/results.json without the grades of manual.csv, which only
the end of a run merged into them, while grades.csv had them: each write of a batch now rewrites the
results.json of the submissions landed since, merged.

The TA's edit comes at a fixed point of the batch: after its first rewrite of grades.csv (a stand-in for
`Gradebook.write` that calls the real one), so no timing decides the test.
"""

import csv
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records import outputs

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
MOVED = "grades.csv: alice Q3-text = 7 was typed into grades.csv, which hwcheck rewrites: moved to manual.csv"


@pytest.fixture
def folder(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    for sid, name in (("alice", "correct.py"), ("bob", "no_scaling.py"), ("carol", "correct_vectorised.py")):
        shutil.copyfile(os.path.join(EXAMPLES, name), folder / f"{sid}.py")
    return folder


def _grade(folder, out, *more):
    return CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                     "--timeout", "5", "-j", "1", *map(str, more)])


def _book(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _type(out, sid, column, value):
    """grades.csv as a spreadsheet saves it (CRLF, a BOM) after the TA typed `value` into a cell."""
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    for row in rows[1:]:
        if row[0] == sid:
            row[rows[0].index(column)] = value
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f, lineterminator="\r\n").writerows(rows)


def _manual_rows(out):
    with open(out / "manual.csv", newline="", encoding="utf-8-sig") as f:
        return [row for row in csv.reader(f) if row and row[0] == "alice"]


def _typing_after_first_write(monkeypatch, out, then=None):
    """Gradebook.write, with the TA typing alice's Q3-text 7 into grades.csv after the batch's first rewrite;
    then(n, out): called after the n-th write of the batch (n from 2)."""
    real = outputs.Gradebook.write
    writes = []

    def write(self, final=False):
        path = real(self, final)
        writes.append(final)
        if len(writes) == 1:
            assert "alice" in _book(out) and not final
            _type(out, "alice", "Q3-text", "7")
        elif then is not None:
            then(len(writes), out)
        return path

    monkeypatch.setattr(outputs.Gradebook, "write", write)
    return writes


def test_a_grade_typed_into_grades_csv_while_a_batch_runs_is_moved_to_manual_csv(folder, tmp_path, monkeypatch):
    out = tmp_path / "out"
    writes = _typing_after_first_write(monkeypatch, out)
    r = _grade(folder, out)
    assert r.exit_code == 0, r.output
    assert len(writes) == 4 and writes[-1], writes  # one write a scorecard, then the last
    assert MOVED in r.output, r.output
    assert "was edited since hwcheck wrote it: the grades typed there are in manual.csv (said above)" in r.output
    assert "not written by hwcheck" not in r.output, r.output
    assert _manual_rows(out) == [["alice", "Q3-text", "7", "typed into grades.csv"]]
    book = _book(out)
    assert book["alice"]["Q3-text"] == "7"
    monkeypatch.undo()
    r = CliRunner().invoke(main, ["export", str(out)])  # nothing left over to say
    assert r.exit_code == 0 and "typed into grades.csv" not in r.output and "set-aside" not in r.output, r.output
    assert _book(out)["alice"]["Q3-text"] == "7"


def _full_disk(monkeypatch, state):
    """manual.csv cannot be written while state["full"] (a full disk): ensure_rows raises ENOSPC."""
    real = outputs.ensure_rows

    def ensure_rows(path, *args, **kwargs):
        if state["full"]:
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(outputs, "ensure_rows", ensure_rows)


def test_a_grade_typed_mid_batch_on_a_full_disk_stays_in_grades_csv_until_a_later_write_moves_it(
        folder, tmp_path, monkeypatch):
    out = tmp_path / "out"
    state = {"full": False, "kept": None}

    def then(n, out):
        if n == 2:  # the disk was full at this write: grades.csv keeps the grade typed, and the batch goes on
            state["kept"] = _book(out)["alice"]["Q3-text"]
            state["full"] = False

    writes = _typing_after_first_write(monkeypatch, out, then)
    _full_disk(monkeypatch, state)
    real = outputs.Gradebook.write

    def filling(self, final=False):
        if len(writes) == 1:
            state["full"] = True  # from the write after the TA typed
        return real(self, final)

    monkeypatch.setattr(outputs.Gradebook, "write", filling)
    r = _grade(folder, out)
    assert r.exit_code == 0, r.output
    assert state["kept"] == "7", state
    assert MOVED in r.output and r.output.count(MOVED) == 1, r.output
    assert _manual_rows(out) == [["alice", "Q3-text", "7", "typed into grades.csv"]]
    assert _book(out)["alice"]["Q3-text"] == "7"


def test_a_grade_typed_mid_batch_that_never_reaches_manual_csv_stops_the_batch_in_words(
        folder, tmp_path, monkeypatch):
    out = tmp_path / "out"
    state = {"full": False}
    writes = _typing_after_first_write(monkeypatch, out)
    _full_disk(monkeypatch, state)
    real = outputs.Gradebook.write

    def filling(self, final=False):
        state["full"] = len(writes) >= 1
        return real(self, final)

    monkeypatch.setattr(outputs.Gradebook, "write", filling)
    r = _grade(folder, out)
    assert r.exit_code == 2, r.output
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    assert "could not be moved into" in r.output and "alice Q3-text 7" in r.output, r.output
    assert sorted(n for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")) == \
        ["alice.json", "bob.json", "carol.json"]  # every submission was graded all the same
    assert _book(out)["alice"]["Q3-text"] == "7"  # kept where it was typed
    monkeypatch.undo()
    r = CliRunner().invoke(main, ["export", str(out)])  # space freed: the next run moves it
    assert r.exit_code == 0 and MOVED in r.output, r.output
    assert _manual_rows(out) == [["alice", "Q3-text", "7", "typed into grades.csv"]]


KILL_AFTER_FIRST_WRITE = """
import os, signal, sys
from checker.records import outputs
real = outputs.Gradebook.write
def write(self, final=False):
    path = real(self, final)
    if not final:  # grades.csv is rewritten after the first scorecard: the machine goes down
        os.kill(os.getpid(), signal.SIGKILL)
    return path
outputs.Gradebook.write = write
from checker.cli import main
main(sys.argv[1:])
"""


def test_a_batch_killed_leaves_results_json_with_the_hand_grades_of_grades_csv(folder, tmp_path):
    out = tmp_path / "out"
    r = _grade(folder, out, "--seed", 5)
    assert r.exit_code == 0, r.output
    text = (out / "manual.csv").read_text(encoding="utf-8-sig")
    for sid in ("alice", "bob", "carol"):
        text = text.replace(f"{sid},Q3-text,,", f"{sid},Q3-text,8,good")
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")
    for sid in ("alice", "bob", "carol"):  # a regrade: its scorecard and results.json are written anew
        (folder / f"{sid}.py").write_text((folder / f"{sid}.py").read_text() + "\n# resubmitted\n")
    env = dict(os.environ, PYTHONPATH=ROOT)
    k = subprocess.run([sys.executable, "-c", KILL_AFTER_FIRST_WRITE, "grade", str(folder), "-a", "attention", "-o",
                        str(out), "--public", "--timeout", "5", "-j", "1", "--resume"],
                       env=env, capture_output=True, text=True, timeout=300)
    assert k.returncode == -9, k.stdout + k.stderr
    book = _book(out)  # alice's new scorecard landed, and grades.csv was rewritten with it
    assert json.loads((out / "alice.json").read_text())["submission"]["sha256"] == \
        hashlib.sha256((folder / "alice.py").read_bytes()).hexdigest()
    assert book["alice"]["Q3-text"] == "8"
    results = json.loads((out / "gradescope" / "alice" / "results.json").read_text())
    assert results["score"] == pytest.approx(float(book["alice"]["total"])), (results["score"], book["alice"])
    assert "Graded by a person: Q3-text 8 (good)" in results["output"], results["output"]
