"""Hostile tests of the cleanup after a worker (issue 31): what a submission leaves in its own dir.

A correct submission leaves a 1,600-level directory chain, a FIFO and a
mode-000 folder in its worker dir (more levels than Python's recursion limit:
a recursive `shutil.rmtree` raised RecursionError there, which ended the
zygote's loop and crashed every later submission of the batch). A real batch
(`python -m checker.cli grade`) grades that attacker first and honest
classmates after, at -j 1 and -j 2: everyone keeps full marks and nothing of
the attacker is left in the temp dir. The remover itself
(`checker.worker.cleanup`) is tested on its own: deep chains, FIFOs, sockets,
closed folders, links out of the tree, a budget, and paths it must refuse.

A worker whose body starts a new session and forks (a daemon) is killed: its
child goes at once, by PR_SET_PDEATHSIG set after the drop to nobody (a uid
change clears it), not only at the zygote's next sweep.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import uuid

import pytest

from checker.worker import cleanup
from sandbox_helpers import GOOD, live_pids, wait_until, write

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEPTH = 1600


def _attacker(token, depth=DEPTH):
    """GOOD, plus a directory chain, a FIFO and a mode-000 folder left in the worker's own dir."""
    return GOOD + textwrap.dedent(f'''

        import os as _os
        import tempfile as _tempfile

        def _leave_a_mess():
            top = _os.getcwd()
            base = _tempfile.gettempdir()  # the worker's own dir
            _os.chdir(base)
            _os.mkdir("{token}")
            _os.chdir("{token}")
            _os.mkfifo("fifo")
            _os.mkdir("closed")
            open("closed/secret", "w").close()
            _os.chmod("closed", 0)
            for _ in range({depth}):
                _os.mkdir("d")
                _os.chdir("d")
            _os.mkfifo("fifo")
            _os.mkdir("closed")
            _os.chmod("closed", 0)
            _os.chdir(base)
            _os.chmod("{token}", 0)
            _os.chdir(top)

        _leave_a_mess()
    ''')


def _leftovers(token):
    """Worker dirs in the temp dir that still hold the attacker's chain."""
    tmp = os.path.realpath(tempfile.gettempdir())
    found = []
    for name in os.listdir(tmp):
        if name.startswith("hwcheck-w-"):
            try:
                if token in os.listdir(os.path.join(tmp, name)):
                    found.append(name)
            except OSError:
                pass
    return found


# ------------------------------------------------------------------ a real batch

@pytest.mark.slow
@pytest.mark.walls
@pytest.mark.parametrize("jobs", [1, 2])
def test_a_deep_chain_in_a_worker_dir_charges_no_one(tmp_path, jobs):
    token = f"chain-{uuid.uuid4().hex}"
    subs = tmp_path / "class"
    write(subs, "a_attacker.py", _attacker(token))  # sorted first: graded before the others
    honest = [f"b_honest_{i}" for i in range(2 if jobs == 1 else 3)]
    for sid in honest:
        write(subs, f"{sid}.py", GOOD)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
           "--public", "-j", str(jobs)]
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600)
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    cards = {sid: json.loads((out / f"{sid}.json").read_text()) for sid in ["a_attacker", *honest]}
    for sid, card in cards.items():  # the attacker's answers are right too: its mess is no crash of anyone's
        assert card["status"] == "graded", (sid, card["status"], card["grader"].get("internal_error"),
                                            r.stdout[-2000:])
        assert not card["grader"].get("internal_error"), (sid, card["grader"])
        assert card["score"] == sum(q["max_score"] for q in card["questions"] if not q.get("manual")), sid
    # the zygote has exited with the batch: every worker dir of it is removed, the chain with it
    assert wait_until(lambda: not _leftovers(token), timeout=10), _leftovers(token)


# ------------------------------------------------------------------ the remover itself

def _mess(top, outside, depth=2100):
    """A chain deeper than PATH_MAX allows to name, FIFOs, a socket, closed folders, links out of `top`."""
    here = os.getcwd()
    os.chdir(top)
    try:
        os.mkfifo("fifo")
        s = socket.socket(socket.AF_UNIX)
        s.bind("sock")
        s.close()
        os.symlink(outside, "dirlink")
        os.symlink(os.path.join(outside, "keep"), "filelink")
        try:
            os.link(os.path.join(outside, "keep"), "hardlink")
        except PermissionError:
            pass  # protected_hardlinks: not a file of this user
        os.mkdir("closed")
        open("closed/inside", "w").close()
        os.mkdir("closed/sub")
        os.chmod("closed/sub", 0)
        os.chmod("closed", 0)
        os.mkdir("readonly")
        open("readonly/inside", "w").close()
        os.chmod("readonly", 0o500)
        for _ in range(depth):
            os.mkdir("d")
            os.chdir("d")
        os.mkfifo("fifo")
        os.symlink(outside, "dirlink")
        os.mkdir("closed")
        os.chmod("closed", 0)
    finally:
        os.chdir(here)


@pytest.fixture
def outside(tmp_path):
    d = tmp_path / "outside"
    d.mkdir()
    (d / "keep").write_text("kept")
    return d


def _outside_intact(outside):
    return sorted(os.listdir(outside)) == ["keep"] and (outside / "keep").read_text() == "kept"


def test_remove_tree_takes_a_chain_deeper_than_any_path_and_follows_no_link(tmp_path, outside):
    top = tmp_path / "w"
    top.mkdir()
    _mess(str(top), str(outside))
    assert cleanup.remove_tree(str(top)) is True
    assert not os.path.lexists(top)
    assert _outside_intact(outside)


def test_remove_tree_stops_at_its_budget_and_finishes_later(tmp_path, outside):
    top = tmp_path / "w"
    top.mkdir()
    _mess(str(top), str(outside), depth=300)
    assert cleanup.remove_tree(str(top), max_entries=40) is False  # bounded: left for a later turn
    assert os.path.isdir(top)
    assert cleanup.remove_tree(str(top), deadline=time.monotonic() - 1) is False  # a deadline passed
    assert cleanup.remove_tree(str(top)) is True
    assert not os.path.lexists(top) and _outside_intact(outside)


def test_remove_tree_removes_a_link_itself_and_never_raises(tmp_path, outside):
    link = tmp_path / "w"
    link.symlink_to(outside)
    assert cleanup.remove_tree(str(link)) is True
    assert not os.path.lexists(link) and _outside_intact(outside)
    assert cleanup.remove_tree(str(tmp_path / "missing")) is True
    assert cleanup.remove_tree("bad\0path") is False  # a failure is an answer, not an exception


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_remove_tree_as_the_owner_opens_its_own_mode_000_folders():
    """A grader that is not root has no DAC override: the folders its worker closed are its own, and
    are opened by making them 0700 first (here: a process of uid nobody removes nobody's mess)."""
    base = tempfile.mkdtemp(prefix="hwcheck-test-cleanup-")  # pytest's tmp_path is closed to nobody
    try:
        os.chmod(base, 0o777)
        outside = os.path.join(base, "outside")
        os.mkdir(outside, 0o755)
        with open(os.path.join(outside, "keep"), "w") as f:
            f.write("kept")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: nobody, makes the mess and removes it; it writes how that went
            try:
                os.close(r)
                os.setgroups([])
                os.setresgid(65534, 65534, 65534)
                os.setresuid(65534, 65534, 65534)
                top = os.path.join(base, "w")
                os.mkdir(top)
                _mess(top, outside, depth=200)
                os.chmod(top, 0)
                os.write(w, repr((cleanup.remove_tree(top), os.path.lexists(top))).encode())
            except BaseException as e:  # noqa: BLE001
                os.write(w, repr(e).encode())
            finally:
                os._exit(0)
        os.close(w)
        with os.fdopen(r) as f:
            said = f.read()
        os.waitpid(pid, 0)
        assert said == "(True, False)", said
        assert sorted(os.listdir(base)) == ["outside"] and os.listdir(outside) == ["keep"]
    finally:
        cleanup.remove_tree(base)
