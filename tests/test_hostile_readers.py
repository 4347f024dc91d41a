"""Hostile tests: what hwcheck reads of a submission after grading follows grading's rules (issue 26, item 5).

Grading copies a folder submission without following a link out of it, and never opens a FIFO or a
device (checker.running.submission_files). The readers that come after — `hwcheck report` (the code it ranks
by similarity and shows side by side), the identical-code notes of grades.csv, the written answers —
read through one function, checker.running.safe_read, by the same rules. Attacked here as a student would, with
GitHub Classroom repositories graded and reported by the real `hwcheck grade` and `hwcheck report`
(subprocesses, under a terminal of their own so that /dev/tty opens, with a timeout):

- bob's repository holds a link to alice's file: the report showed alice and bob as one pair of copies
  (the victim as a copier); now bob has no code of his own to compare;
- carol's holds a link to a TA's file outside every submission: its text was copied into report.html;
- dave's holds a link to /dev/tty, a FIFO and a link to a FIFO outside: the report (and grading's
  identical-code notes) hung on them.

The honest classmates (alice and erin hand in the same file; carol and dave their own correct code)
keep their scores, their identical-code notes and their similarity pair.
"""

import csv
import fcntl
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import termios
from contextlib import contextmanager
from pathlib import Path

import pytest

from checker.running import safe_read
from checker.records.classreport import sources
from checker.running.freetext import find_answers
from checker.records.identical import normalised_code

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "submissions" / "attention"
MARKER = "TA_PRIVATE_ANSWER_KEY_7f3a"


@contextmanager
def _deadline(seconds):
    """A reader that blocks (a FIFO, a terminal) fails the test instead of hanging it."""
    def expired(*_):
        raise TimeoutError(f"blocked for {seconds} s")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---------------------------------------------------------------------------------------------------------------
# the one reader, alone
# ---------------------------------------------------------------------------------------------------------------

@pytest.fixture()
def tree(tmp_path):
    sub = tmp_path / "sub"
    (sub / "pkg").mkdir(parents=True)
    (sub / "own.py").write_text("x = 1\n")
    os.symlink("own.py", sub / "inside_link.py")                    # stays inside: grading follows it
    outside = tmp_path / "classmate.py"
    outside.write_text("stolen = 1\n")
    os.symlink(outside, sub / "abs_link.py")                         # leaves, absolute
    os.symlink("../classmate.py", sub / "rel_link.py")               # leaves, relative
    os.symlink(tmp_path, sub / "dir_link")                           # a folder link: its files leave too
    os.symlink("/dev/tty", sub / "tty.py")
    os.mkfifo(sub / "fifo.py")
    os.mkfifo(tmp_path / "fifo_out")
    os.symlink(tmp_path / "fifo_out", sub / "fifo_link.ipynb")
    (sub / "big.py").write_bytes(b"#" * (safe_read.MAX_FILE_BYTES + 1))
    return tmp_path, sub


def test_only_regular_files_inside_the_submission_are_read(tree):
    tmp, sub = tree
    with _deadline(10):
        assert safe_read.read_bytes(sub / "own.py", sub) == b"x = 1\n"
        assert safe_read.read_bytes(sub / "inside_link.py", sub) == b"x = 1\n"
        for name, why in [("abs_link.py", "outside the submission"), ("rel_link.py", "outside the submission"),
                          ("dir_link/classmate.py", "outside the submission"), ("tty.py", "outside"),
                          ("fifo.py", "not a regular file"), ("fifo_link.ipynb", "outside"),
                          ("big.py", "larger than")]:
            with pytest.raises(safe_read.Refused) as e:
                safe_read.read_bytes(sub / name, sub)
            assert why in e.value.why, (name, e.value.why)
            assert safe_read.readable(sub / name, sub) == (name == "big.py")  # (grading copies a big file)


def test_a_single_file_submission_is_followed_as_grading_follows_it(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / "abc.py").write_text("y = 2\n")
    os.symlink(store / "abc.py", tmp_path / "alice.py")              # a TA's export linking to a store
    assert safe_read.read_bytes(tmp_path / "alice.py") == b"y = 2\n"
    os.symlink(ROOT / "reference" / "attention.py", tmp_path / "bob.py")  # into the reference solutions
    with pytest.raises(safe_read.Refused, match="keeps from submissions"):
        safe_read.read_bytes(tmp_path / "bob.py")
    os.symlink("/dev/tty", tmp_path / "carol.py")  # a link out of the folder to what is no .py or .ipynb
    os.symlink("/etc/shadow", tmp_path / "erin.py")
    os.mkfifo(tmp_path / "dave.ipynb")
    os.mkfifo(store / "fifo.py")
    os.symlink(store / "fifo.py", tmp_path / "frank.py")
    with _deadline(10):
        for name in ("carol.py", "erin.py"):
            with pytest.raises(safe_read.Refused, match="not a .py or .ipynb file"):
                safe_read.read_bytes(tmp_path / name)
        for name in ("dave.ipynb", "frank.py"):
            with pytest.raises(safe_read.Refused, match="not a regular file"):
                safe_read.read_bytes(tmp_path / name)
    (tmp_path / "notes.txt").write_text("z")                         # a scorecard edited to point at any file
    with pytest.raises(safe_read.Refused):
        safe_read.read_bytes(tmp_path / "notes.txt")


def test_every_reader_goes_through_it(tree):
    tmp, sub = tree
    (sub / "pkg" / "answers.md").write_text("## Q3-text\nMine.\n")
    os.symlink(tmp / "classmate.py", sub / "pkg" / "zz_link.md")
    (tmp / "classmate.py").write_text("stolen = 1\n# Q3-text\n# the classmate's answer\n")
    with _deadline(20):
        code = sources.code_of(sub)
        tokens = normalised_code(sub)
        answers = find_answers(sub, {"Q3-text": None})
    assert "x = 1" in code and "stolen" not in code
    assert "x" in tokens and "stolen" not in tokens
    assert answers == {"Q3-text": "Mine."}
    with _deadline(20):
        assert find_answers(sub / "fifo.py", {"Q3-text": None}) == {"Q3-text": None}
        assert sources.code_of(sub / "tty.py") is None


# ---------------------------------------------------------------------------------------------------------------
# the attack, through the real commands
# ---------------------------------------------------------------------------------------------------------------

def _in_a_terminal(args, cwd, timeout):
    """Run hwcheck with a pseudo-terminal as its controlling terminal (so /dev/tty opens and would block)."""
    master, slave = pty.openpty()

    def own_terminal():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    try:
        proc = subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=cwd, stdin=slave,
                              capture_output=True, text=True, timeout=timeout, start_new_session=True,
                              preexec_fn=own_terminal, env={**os.environ, "PYTHONPATH": str(ROOT)})
    finally:
        os.close(slave)
        os.close(master)
    return proc


@pytest.fixture(scope="module")
def attacked(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile_readers")
    ta = base / "ta_private"
    ta.mkdir()
    (ta / "answer_key.py").write_text(f"# {MARKER}\n" + (EXAMPLES / "correct.py").read_text())
    os.mkfifo(base / "fifo_outside")
    subs = base / "subs"
    for who in ("alice", "bob", "carol", "dave", "erin"):
        (subs / f"hw1-{who}").mkdir(parents=True)
    trojan = (EXAMPLES / "correct.py").read_text() + '\nACCESS = "user\u202e \u2066# admin\u2069 \u2066"  # Trojan Source\n'
    (subs / "hw1-alice" / "attention.py").write_text(trojan)
    (subs / "hw1-erin" / "attention.py").write_text(trojan)
    os.symlink("../hw1-alice/attention.py", subs / "hw1-bob" / "attention.py")      # a classmate's file
    shutil.copyfile(EXAMPLES / "correct_vectorised.py", subs / "hw1-carol" / "attention.py")
    os.symlink(ta / "answer_key.py", subs / "hw1-carol" / "key.py")                 # a TA's file
    shutil.copyfile(ROOT / "reference" / "attention.py", subs / "hw1-dave" / "attention.py")
    os.symlink("/dev/tty", subs / "hw1-dave" / "tty.py")                             # the terminal
    os.mkfifo(subs / "hw1-dave" / "pipe.py")                                         # a FIFO
    os.symlink(base / "fifo_outside", subs / "hw1-dave" / "pipe_link.ipynb")         # a FIFO outside
    out = base / "out"
    graded = _in_a_terminal(["grade", str(subs), "-a", "attention", "-o", str(out), "-j", "2", "--public"],
                            cwd=base, timeout=400)
    assert graded.returncode == 0, graded.stdout + graded.stderr
    reported = _in_a_terminal(["report", str(out)], cwd=base, timeout=300)
    assert reported.returncode == 0, reported.stdout + reported.stderr
    text = (out / "report.html").read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="hwcheck-data">(.*?)</script>', text, re.DOTALL)
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as f:
        book = {row["id"]: row for row in csv.DictReader(f)}
    return text, json.loads(m.group(1)), book


@pytest.mark.slow
def test_a_linked_classmates_file_makes_no_pair_with_the_victim(attacked):
    _, data, _ = attacked
    pairs = {(p["a"], p["b"]): p["score"] for p in data["similarity"]}
    assert not any("hw1-bob" in pair for pair in pairs), pairs
    assert pairs.get(("hw1-alice", "hw1-erin")) == 1.0, pairs  # the honest identical pair is still there


@pytest.mark.slow
def test_the_code_shown_side_by_side_holds_no_raw_bidi_override(attacked):
    text, _, _ = attacked
    shown = re.sub(r'<script type="application/json".*?</script>', "", text, flags=re.DOTALL)
    assert "ACCESS" in shown and "\\u202e" in shown  # alice and erin's pair is shown, the override visible
    assert not re.search("[\u202a-\u202e\u2066-\u2069\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]", shown)


@pytest.mark.slow
def test_a_linked_ta_file_is_not_copied_into_the_report(attacked):
    text, data, _ = attacked
    assert MARKER not in text
    assert "hw1-carol" in {sid for p in data["similarity"] for sid in (p["a"], p["b"])}  # carol's own code is


@pytest.mark.slow
def test_a_terminal_or_a_fifo_in_a_submission_hangs_nothing(attacked):
    _, data, book = attacked
    # (the fixture ran grade and report in a terminal of their own, with a timeout)
    assert book["hw1-dave"]["status"] == "graded" and float(book["hw1-dave"]["total"]) > 0
    assert "hw1-dave" in {sid for p in data["similarity"] for sid in (p["a"], p["b"])}


@pytest.mark.slow
def test_identical_code_notes_name_only_the_honest_pair(attacked):
    _, _, book = attacked
    assert "identical code to hw1-erin" in book["hw1-alice"]["note"]
    assert "identical code to hw1-alice" in book["hw1-erin"]["note"]
    assert "identical" not in book["hw1-bob"]["note"], book["hw1-bob"]
    assert book["hw1-alice"]["total"] == book["hw1-erin"]["total"] == book["hw1-carol"]["total"]
