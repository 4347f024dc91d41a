"""A scorecard emptied or cut short in OUT is named by `hwcheck export`, never silently dropped.

A TA's probe (h27, D3): with OUT/<id>.json truncated or empty, `hwcheck export OUT` left those students out of
grades.csv and canvas.csv, exited 0 ("wrote canvas.csv (8 students)"), and said of manual.csv's rows for them
that no submission was graded into this folder. Now export names the unreadable scorecards, says that
`grade --resume` grades them again, and exits 1; their manual.csv rows are not called strangers; and
`grade --resume` does grade them again.
"""

import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
MANUAL_Q = next(str(q["id"]) for q in load_spec("attention")["questions"] if q.get("manual"))


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _ids(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("unreadable")
    folder = tmp / "class"
    folder.mkdir()
    for sid, name in (("alice", "correct.py"), ("bob", "no_scaling.py"), ("carol", "correct.py")):
        shutil.copyfile(os.path.join(EXAMPLES, name), folder / f"{sid}.py")
    out = tmp / "out"
    r = _run("grade", folder, "-a", "attention", "-o", out, "--public", "--seed", 3, "--timeout", "5")
    assert r.exit_code == 0, r.output
    text = (out / "manual.csv").read_text(encoding="utf-8-sig").replace(f"bob,{MANUAL_Q},,", f"bob,{MANUAL_Q},6,ok")
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")
    return folder, out


def test_export_names_unreadable_scorecards_and_fails(graded, tmp_path):
    folder, out0 = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    (out / "bob.json").write_bytes(b"")  # emptied
    data = (out0 / "carol.json").read_bytes()
    (out / "carol.json").write_bytes(data[:len(data) // 3])  # cut short
    r = _run("export", out)
    said = " ".join(r.output.split())
    assert r.exit_code == 1, r.output
    assert "2 scorecards in" in said and "cannot be read" in said and "bob, carol" in said, said
    assert "--resume" in said and f"-o {out}" in said, said
    assert "no submission" not in said and "was graded into this folder" not in said, said  # bob's row is no stranger's
    assert set(_ids(out)) == {"alice"}  # what could be read is written; the others are named, not dropped unsaid
    r = _run("grade", folder, "-a", "attention", "-o", out, "--resume", "--public", "--seed", 3, "--timeout", "5")
    assert r.exit_code == 0, r.output
    assert "2 graded, 1 up to date" in r.output, r.output  # grade --resume grades exactly those again
    r = _run("export", out)
    assert r.exit_code == 0, r.output
    book = _ids(out)
    assert set(book) == {"alice", "bob", "carol"} and book["bob"][MANUAL_Q] == "6", book


def test_a_deleted_scorecard_is_not_called_unreadable(graded, tmp_path):
    _, out0 = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    os.unlink(out / "carol.json")
    r = _run("export", out)
    assert r.exit_code == 0, r.output
    assert "cannot be read" not in r.output, r.output
