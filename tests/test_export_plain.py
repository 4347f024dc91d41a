"""`hwcheck export` on a folder of no LMS: it names the manual grades pending, and says when --canvas is unused (h91).

A plain folder (files named by student, no Canvas or Moodle download), graded with or without a plain roster
(name / student_id / email, no LMS ids): `export` wrote grades.csv again but, unlike on a Canvas folder, did not
name the submissions whose written answers are still to be graded (docs/tas.md says it does); and
`export OUT --canvas "Homework 1 (4567)"` wrote no canvas.csv, said nothing of the title, and exited 0. Now the
pending grades are named, and an unusable --canvas is a warning on stderr and exit status 1 (the rest written;
the title kept for a later `grade --roster` with Canvas's gradebook export).
"""
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """{roster: a graded OUT}: two attention submissions, one folder graded without a roster, one with a plain one."""
    base = tmp_path_factory.mktemp("plain")
    subs = base / "hw1"
    subs.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "alice_chen.py")
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "bob_smith.py")
    roster = base / "roster.csv"
    roster.write_text("name,student_id,email\nAlice Chen,1001,alice@example.edu\nBob Smith,1002,bob@example.edu\n",
                      encoding="utf-8")
    outs = {}
    for with_roster in (False, True):
        out = base / f"out_{with_roster}"
        r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public"]
                               + (["--roster", str(roster)] if with_roster else []))
        assert r.exit_code == 0, r.output
        outs[with_roster] = out
    return outs


def _copy(out, tmp_path):
    dest = tmp_path / "out"
    shutil.copytree(out, dest)
    return dest


@pytest.mark.parametrize("with_roster", [False, True])
def test_export_of_a_plain_folder_names_the_manual_grades_pending(graded, tmp_path, with_roster):
    out = _copy(graded[with_roster], tmp_path)
    with open(out / "manual.csv", "a", encoding="utf-8") as f:
        f.write("alice_chen,Q3-text,8,clear\n")  # Alice graded by hand, Bob not yet
    r = CliRunner().invoke(main, ["export", str(out)])
    assert r.exit_code == 0, r.output
    said = " ".join(r.stdout.split())
    assert "manual grades pending: 1 of 2 submissions have Q3-text" in said and "bob_smith" in said, said
    assert f"then run `hwcheck export {out}` again" in said, said
    assert f"wrote {out / 'grades.csv'}" in said and "no canvas.csv or moodle.csv" in said, said
    assert not (out / "canvas.csv").exists()


@pytest.mark.parametrize("with_roster", [False, True])
def test_export_with_a_canvas_title_it_cannot_use_says_so_and_exits_1(graded, tmp_path, with_roster):
    out = _copy(graded[with_roster], tmp_path)
    r = CliRunner().invoke(main, ["export", str(out), "--canvas", "Homework 1 (4567)"])
    assert r.exit_code == 1, r.output
    err = " ".join(r.stderr.split())
    assert 'warning: --canvas "Homework 1 (4567)" was not used: no canvas.csv was written' in err, err
    assert "no student with a Canvas user id" in err and "gradebook export" in err, err
    assert not (out / "canvas.csv").exists() and (out / "grades.csv").exists()
    kept = json.loads((out / ".exports.json").read_text(encoding="utf-8"))  # for a later grade --roster, as grade keeps it
    assert kept["canvas_title"] == "Homework 1 (4567)"
    r = CliRunner().invoke(main, ["export", str(out)])  # without --canvas: nothing asked, nothing to warn of
    assert r.exit_code == 0 and "was not used" not in r.stderr, r.output


def test_grade_with_a_canvas_title_on_a_plain_folder_warns(tmp_path):
    """`grade --canvas TITLE` on files named by student (no Canvas ids) graded as asked and said nothing of the
    title it could not use: now the same warning as export's, on stderr, grading's exit status kept (0)."""
    subs = tmp_path / "hw1"
    subs.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "alice_chen.py")
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public",
                                  "--canvas", "Homework 1 (4567)"])
    assert r.exit_code == 0, r.output
    err = " ".join(r.stderr.split())
    assert 'warning: --canvas "Homework 1 (4567)" was not used: no canvas.csv was written' in err, err
    assert (out / "grades.csv").exists() and not (out / "canvas.csv").exists()


def test_hwcheck_export_is_the_class_commands_export():
    import click

    from checker.cli_class import export
    assert main.get_command(click.Context(main), "export") is export
