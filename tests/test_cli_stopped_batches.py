"""What a stopped `hwcheck grade` leaves in OUT, and later commands on an OUT this shell's key cannot verify.

A TA-tester's findings (h63), each through the real command line on a small Canvas download of the attention
examples (public tests, -j 1):

- a `--canvas TITLE` given to a batch that was then interrupted was lost (kept only after a completed batch),
  and the printed `--resume` command had no --canvas: canvas.csv went to a new column "attention";
- `merge` of a shard whose grade was killed partway said the shard was "missing" (shard.json was written only
  after a completed batch) though it merged its scorecards;
- `grade --only` / `--resume` into an OUT graded with HWCHECK_KEY, from a shell without it, rewrote grades.csv
  and canvas.csv with the one student regraded (the others' scorecards unverifiable) and a fresh seed.

A stop is made where it is deterministic: the progress line of the first submission graded raises Ctrl-C's
KeyboardInterrupt (the command's own handling of Ctrl-C / SIGTERM runs) or an exception no handler catches,
as a `kill -9` leaves OUT (nothing after the first scorecard runs).
"""
import csv
import hashlib
import os
import shlex
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records import batch, owned_records

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
TITLE = "Homework 1 (4567)"
STUDENTS = ["doejane_102_9002", "smithbob_103_9003", "leeann_104_9004", "kimsue_105_9005"]


class _Killed(BaseException):
    """A `kill -9`: no handler of hwcheck's runs (none catches a BaseException of this kind)."""


@pytest.fixture(autouse=True)
def _own_key(tmp_path, monkeypatch):
    """This test's own key file (not the account's), no HWCHECK_KEY unless a test sets one."""
    monkeypatch.setenv("HWCHECK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("HWCHECK_KEY", raising=False)
    monkeypatch.setattr(owned_records, "_key_cache", {})


@pytest.fixture
def download(tmp_path):
    """A Canvas "Download Submissions" folder of four students (the ids Canvas's names carry)."""
    d = tmp_path / "download"
    d.mkdir()
    for name in STUDENTS:
        shutil.copy(os.path.join(EXAMPLES, "correct.py"), d / f"{name}_attention.py")
    return d


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _stop_after_first(monkeypatch, stop):
    """The first progress line (a submission's scorecard is in OUT) raises `stop`."""
    def progress_line(event):
        raise stop()
    monkeypatch.setattr(batch, "progress_line", progress_line)


def _canvas_header(out):
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        return next(csv.reader(f))


def _ids(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return sorted(row["id"] for row in csv.DictReader(f))


def _snapshot(out):
    return {os.path.relpath(os.path.join(d, n), out): hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest()
            for d, _, names in os.walk(out) for n in names}


@pytest.mark.slow
def test_an_interrupted_batch_keeps_the_canvas_title_and_its_resume_command_gives_it(download, tmp_path,
                                                                                     monkeypatch):
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        _stop_after_first(m, KeyboardInterrupt)
        r = _run("grade", download, "-a", "attention", "-o", out, "--public", "--canvas", TITLE)
    assert r.exit_code == 130, r.output
    assert "interrupted: 1 of 4 submissions are graded" in r.stderr, r.output
    again = r.stderr.rsplit("go on with:\n", 1)[1].strip()
    words = shlex.split(again)
    assert words[:2] == ["hwcheck", "grade"] and "--resume" in words, again
    # the title is in OUT from the batch's start: a --resume without --canvas (as hwcheck printed it before)
    r = _run("grade", download, "-a", "attention", "-o", out, "--public", "--resume")
    assert r.exit_code == 0, r.output
    assert _canvas_header(out)[-1] == TITLE, r.output
    assert _ids(out) == sorted(s.rsplit("_", 1)[0] for s in STUDENTS)
    r = _run("export", out)
    assert r.exit_code == 0 and _canvas_header(out)[-1] == TITLE, r.output
    assert "--canvas" in words and words[words.index("--canvas") + 1] == TITLE, again  # the command is faithful
    r = _run(*words[1:])  # the printed command itself goes on as well (nothing left to grade)
    assert r.exit_code == 0 and "(0 graded, 4 up to date)" in r.output and _canvas_header(out)[-1] == TITLE, r.output


@pytest.mark.slow
def test_an_interrupted_only_regrade_prints_a_resume_that_regrades_the_appeals_left(download, tmp_path,
                                                                                  monkeypatch):
    """h75 M1: `grade --only ID` stopped before ID was regraded printed `... --resume` without --only, which
    found every scorecard up to date and regraded nothing: the appeal silently never done. The printed command
    keeps every --only id, and running it regrades them."""
    out = tmp_path / "out"
    assert _run("grade", download, "-a", "attention", "-o", out, "--public").exit_code == 0
    appeals = [STUDENTS[1].rsplit("_", 1)[0], STUDENTS[2].rsplit("_", 1)[0]]
    with monkeypatch.context() as m:
        _stop_after_first(m, KeyboardInterrupt)  # the first appeal regraded, the second not yet
        r = _run("grade", download, "-a", "attention", "-o", out, "--public", "--only", appeals[0],
                 "--only", appeals[1])
    assert r.exit_code == 130 and "interrupted: 1 of 2 submissions are graded" in r.stderr, r.output
    again = r.stderr.rsplit("go on with:\n", 1)[1].strip()
    words = shlex.split(again)
    assert "--resume" in words and [words[i + 1] for i, w in enumerate(words) if w == "--only"] == appeals, again
    r = _run(*words[1:])
    assert r.exit_code == 0, r.output
    assert "regrading 2 of 4 submissions" in r.stderr and "2 regraded (--only)" in r.output, r.output
    assert all(f"] {sid}: " in r.stderr for sid in appeals), r.output


@pytest.mark.slow
def test_a_shard_killed_partway_is_merged_as_incomplete_never_missing(download, tmp_path, monkeypatch):
    def grade(out, shard):
        return _run("grade", download, "-a", "attention", "-o", out, "--public", "--seed", "7", "--shard", shard)
    assert grade(tmp_path / "s1", "1/2").exit_code == 0
    with monkeypatch.context() as m:
        _stop_after_first(m, _Killed)
        with pytest.raises(_Killed):
            grade(tmp_path / "s2", "2/2")
    merged = tmp_path / "merged"
    r = _run("merge", tmp_path / "s1", tmp_path / "s2", "-o", merged)
    assert r.exit_code == 1, r.output
    assert "missing" not in r.output and "not in" not in r.output, r.output
    assert "shard 2/2" in r.stderr and "incomplete" in r.stderr and "1 of 2 submissions graded" in r.stderr, r.output
    finish = f"hwcheck grade {download} -a attention -o {tmp_path / 's2'} -j 1 --shard 2/2 --resume"
    assert finish in r.stderr, r.output
    assert len(_ids(merged)) == 3, r.output  # shard 1's two and the one shard 2 graded
    r = _run(*shlex.split(finish)[1:], "--public", "--seed", "7")
    assert r.exit_code == 0, r.output
    r = _run("merge", tmp_path / "s1", tmp_path / "s2", "-o", merged)
    assert r.exit_code == 0 and "incomplete" not in r.output, r.output
    assert len(_ids(merged)) == 4


@pytest.mark.slow
def test_later_commands_without_the_key_that_graded_out_refuse_and_change_nothing(download, tmp_path,
                                                                                   monkeypatch):
    out = tmp_path / "out"
    monkeypatch.setenv("HWCHECK_KEY", "course-secret-123")
    r = _run("grade", download, "-a", "attention", "-o", out, "--seed", "20260", "--canvas", TITLE)
    assert r.exit_code == 0, r.output
    everyone = _ids(out)
    monkeypatch.delenv("HWCHECK_KEY")  # a shell without it (the account's own key file instead)
    before = _snapshot(out)
    for extra in (["--only", "smithbob_103"], ["--resume"]):
        r = _run("grade", download, "-a", "attention", "-o", out, *extra)
        assert r.exit_code == 2, (extra, r.output)
        assert "HWCHECK_KEY" in r.stderr and "nothing was written" in r.stderr, (extra, r.output)
        assert _snapshot(out) == before, extra
    for command in ("export", "report"):
        r = _run(command, out)
        assert r.exit_code == 2 and "HWCHECK_KEY" in r.stderr and _snapshot(out) == before, (command, r.output)
    monkeypatch.setenv("HWCHECK_KEY", "course-secret-123")  # with it, the appeal is graded in the class
    r = _run("grade", download, "-a", "attention", "-o", out, "--only", "smithbob_103")
    assert r.exit_code == 0, r.output
    assert _ids(out) == everyone and _canvas_header(out)[-1] == TITLE
    assert next(c for c in batch.collect_scorecards(str(out), "attention")
                if c["submission"]["id"] == "smithbob_103")["grader"]["seed"] == 20260
