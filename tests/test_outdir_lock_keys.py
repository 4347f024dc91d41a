"""OUTDIR's lock is the folder's, whatever HWCHECK_KEY a run has (h86's twokeys.sh, h87).

A TA's probe (h86): a regrade ran in one terminal while another, with HWCHECK_KEY exported there, graded the
same OUTDIR: the lock was a file in the state folder, which is named by the key, so each run held its own lock,
both wrote grades.csv and manual.csv, and the folder was corrupted. The lock is now OUTDIR's own (a flock on
OUTDIR/.hwcheck.lock, a file so that it holds on NFS too): the second run is refused with the message of a second
run under the same key; a killed run's lock goes with it.
"""

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.errors import HwcheckError
from checker.records import owned_records
from checker.records.outfolder import batch_running, lock_outdir, unlock_outdir
from checker.spec import example_dirs

BUSY = "another `hwcheck grade` is writing into"


def test_a_second_lock_under_another_key_is_refused(tmp_path, monkeypatch):
    out = str(tmp_path / "out")
    monkeypatch.setenv("HWCHECK_KEY", "the-tas-key")
    fd = lock_outdir(out)
    try:
        monkeypatch.setenv("HWCHECK_KEY", "ci-secret")
        theirs = owned_records.state_dir(out)
        assert batch_running(out)
        with pytest.raises(HwcheckError, match=BUSY):
            lock_outdir(out)
        assert not os.path.exists(theirs)  # the refused run made no state folder of its own there
        monkeypatch.delenv("HWCHECK_KEY")
        assert batch_running(out)
        with pytest.raises(HwcheckError, match=BUSY):
            lock_outdir(out)
    finally:
        unlock_outdir(out, fd)
    assert not batch_running(out)
    os.close(lock_outdir(out))  # let go: taken again


def test_a_grade_under_another_key_is_refused_while_one_writes_the_folder(tmp_path, monkeypatch):
    sub = tmp_path / "subs"
    sub.mkdir()
    example = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
    shutil.copy(os.path.join(example, "correct.py"), sub / "alice.py")
    out = str(tmp_path / "out")
    monkeypatch.setenv("HWCHECK_KEY", "the-tas-key")
    mine = os.path.basename(owned_records.state_dir(out))
    fd = lock_outdir(out)  # the TA's regrade, running
    try:
        monkeypatch.setenv("HWCHECK_KEY", "ci-secret")  # another terminal, HWCHECK_KEY exported
        r = CliRunner().invoke(main, ["grade", str(sub), "-a", "attention", "-o", out, "--public", "-j", "1"])
    finally:
        unlock_outdir(out, fd)
    assert r.exit_code == 2 and BUSY in r.stderr, r.output
    assert sorted(os.listdir(out)) == sorted([mine, ".hwcheck.lock"])  # nothing of the refused run's there


def test_a_killed_runs_lock_is_gone_with_it(tmp_path):
    out = str(tmp_path / "out")
    code = ("import sys, time; from checker.records.outfolder import lock_outdir; lock_outdir(sys.argv[1]); "
            "print('held', flush=True); time.sleep(60)")
    env = {**os.environ, "HWCHECK_KEY": "ci-secret"}
    p = subprocess.Popen([sys.executable, "-c", code, out], stdout=subprocess.PIPE, text=True, env=env,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        assert p.stdout.readline().strip() == "held"
        assert batch_running(out)
        with pytest.raises(HwcheckError, match=BUSY):
            lock_outdir(out)
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait()
    deadline = time.time() + 10
    while batch_running(out) and time.time() < deadline:
        time.sleep(0.05)
    fd = lock_outdir(out)  # no stale lock to clear by hand
    unlock_outdir(out, fd)
