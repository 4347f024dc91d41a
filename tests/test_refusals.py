"""A `hwcheck grade` that hwcheck refuses writes nothing to OUT, and `export` of an OUT whose record of the class
names another assignment says what is wrong and how `grade --resume` repairs it (h35 finding 1).

One real submission is graded once (module fixture); each test works on a copy of that OUT.
"""
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records import owned
from checker.records.lms import STUDENTS_JSON
from checker.records.outfolder import lock_outdir

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("refusals")
    folder = tmp / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    out = tmp / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5"])
    assert r.exit_code == 0, r.output
    return folder, out


def _snapshot(out):
    """Every file of OUT (its state folder, records and hidden files too) with its bytes, every folder."""
    seen = {}
    for root, dirs, files in os.walk(out):
        for d in dirs:
            seen[os.path.relpath(os.path.join(root, d), out)] = "folder"
        for f in files:
            path = os.path.join(root, f)
            if f == "lock":
                continue  # the lock file's bytes are nothing (flock)
            with open(path, "rb") as fh:
                seen[os.path.relpath(path, out)] = fh.read()
    return seen


def _copy(graded, tmp_path):
    """A copy of the graded OUT, and of the class with a new submission (what the class's record would change by)."""
    folder0, out0 = graded
    folder, out = tmp_path / "class", tmp_path / "out"
    shutil.copytree(out0, out)
    shutil.copytree(folder0, folder)
    shutil.copyfile(os.path.join(EXAMPLES, "no_scaling.py"), folder / "bob.py")
    return folder, out


def test_a_grade_refused_for_another_assignments_outdir_writes_nothing_there(graded, tmp_path):
    """h35 (1): `grade -a vit` into an OUT of attention's scorecards was refused after students.json had been
    rewritten for vit (and its record), so `export` then found no scorecards. Refused before anything is written."""
    folder, out = _copy(graded, tmp_path)
    before = _snapshot(out)
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "vit", "-o", str(out), "-j", "2"])
    assert r.exit_code == 2 and "already holds scorecards of attention" in r.stderr, r.output
    assert _snapshot(out) == before
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0 and "holds no scorecards" not in r.output, r.output


def test_a_grade_refused_while_another_batch_writes_the_outdir_writes_nothing_there(graded, tmp_path):
    folder, out = _copy(graded, tmp_path)
    fd = lock_outdir(str(out))  # another batch holds OUT
    try:
        before = _snapshot(out)
        r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--resume"])
    finally:
        os.close(fd)
    assert r.exit_code == 2 and "another `hwcheck grade` is writing" in r.stderr, r.output
    assert _snapshot(out) == before


def test_a_shard_refused_for_want_of_a_seed_writes_nothing_there(graded, tmp_path):
    folder, out = _copy(graded, tmp_path)
    before = _snapshot(out)
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--shard", "1/2"])
    assert r.exit_code == 2 and "--seed" in r.stderr, r.output
    assert _snapshot(out) == before


def test_export_of_an_outdir_whose_record_names_another_assignment_says_how_resume_repairs_it(graded, tmp_path):
    """An OUT an older hwcheck damaged so (students.json for vit beside attention's scorecards): `export` said
    "holds no scorecards of hwcheck's: grade into it first", a fresh grade (a new seed for the class). It says
    what is wrong, and the `grade --resume` with the scorecards' assignment, which repairs it."""
    folder, out = graded[0], _copy(graded, tmp_path)[1]
    known = owned.read_json(str(out), STUDENTS_JSON)
    owned.write_json(str(out), STUDENTS_JSON, {**known, "assignment": "vit"}, kind="students")
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 1, r.output
    assert "grade into it first" not in r.output and "1 scorecard of attention" in r.output, r.output
    assert "names the assignment vit" in r.output, r.output
    assert f"hwcheck grade {folder} -a attention -o {out} --resume --timeout 5`" in r.output, r.output
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--resume",
                                  "--timeout", "5"])  # the setting it was graded with, as the line prints it
    assert r.exit_code == 0 and "(0 graded, 1 up to date)" in r.output, r.output
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output


def test_a_grade_of_a_folder_with_no_submissions_writes_nothing_there(graded, tmp_path):
    """A grade of the wrong folder (no submission in it) into a graded OUT replaced OUT's record of the class
    (students.json) with an empty one before it was refused: the identities export reads were gone."""
    out = _copy(graded, tmp_path)[1]
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "notes.txt").write_text("no code here\n")
    before = _snapshot(out)
    r = CliRunner().invoke(main, ["grade", str(empty), "-a", "attention", "-o", str(out), "--resume"])
    assert r.exit_code == 2 and "no submissions in" in r.stderr, r.output
    assert _snapshot(out) == before
    fresh = tmp_path / "fresh"
    r = CliRunner().invoke(main, ["grade", str(empty), "-a", "attention", "-o", str(fresh)])
    assert r.exit_code == 2 and not fresh.exists(), r.output  # nor made an OUT that was not there


def test_a_regrade_of_an_id_no_submission_has_writes_nothing_there(graded, tmp_path):
    """--only with an id the folder lacks is refused; the class's record was rewritten first (here: with bob,
    who handed in since and was never graded)."""
    folder, out = _copy(graded, tmp_path)
    before = _snapshot(out)
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--only", "carol"])
    assert r.exit_code == 2 and "no submission 'carol'" in r.stderr, r.output
    assert _snapshot(out) == before


def test_a_grade_that_loses_the_race_for_the_outdir_writes_nothing_there(graded, tmp_path, monkeypatch):
    """Two grades into one OUT started together (a TA's probe, h38): both asked whether a batch was writing
    there (no), then one took OUT's lock and graded while the other listed its folder and rewrote OUT's record of
    the class (students.json) before it was refused: the first one's exports left out its own students. The
    window is made here by an answer of "no batch is writing" while this test holds OUT's lock: the second grade
    is refused by the lock itself, before it lists or writes anything."""
    from checker.records import outfolder
    folder, out = _copy(graded, tmp_path)
    monkeypatch.setattr(outfolder, "batch_running", lambda outdir: False)
    monkeypatch.setattr("checker.records.batch.batch_running", lambda outdir: False)
    before = _snapshot(out)
    fd = lock_outdir(str(out))  # the batch that won the race
    try:
        r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--resume"])
    finally:
        os.close(fd)
    assert r.exit_code == 2 and "another `hwcheck grade` is writing" in r.stderr, r.output
    assert "nothing was written" in r.stderr, r.output
    assert _snapshot(out) == before


def test_an_only_id_pasted_in_decomposed_unicode_names_its_submission(tmp_path):
    """A TA's probe (h44): `--only müllerjürgen_1004` pasted from a macOS file name (NFD) was refused with "no
    submission 'müllerjürgen_1004' ... (ids: ..., müllerjürgen_1004, ...)": ids are NFC."""
    import unicodedata
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "müller.py")
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public"])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--public",
                                  "--only", unicodedata.normalize("NFD", "müller")])
    assert r.exit_code == 0 and "regrading 1 of 1" in r.output, r.output
