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

from checker.running import zygote_client
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

REFUSED = "user-unique-unavailable(refused to run code as root)"


@pytest.mark.slow
@pytest.mark.walls
@pytest.mark.parametrize("jobs,walls", [(1, "any"), (2, "any"), (1, "fallback")])
def test_a_deep_chain_in_a_worker_dir_charges_no_one(tmp_path, jobs, walls):
    """"any": the walls this run has (with namespaces the worker's dir is a tmpfs of its own; without,
    as in Gradescope's mode, the chain lands in the temp dir). "fallback": no namespaces, the chain
    in the temp dir whatever the run has (skipped where the grader then refuses to run code as root)."""
    token = f"chain-{uuid.uuid4().hex}"
    subs = tmp_path / "class"
    write(subs, "a_attacker.py", _attacker(token))  # sorted first: graded before the others
    honest = [f"b_honest_{i}" for i in range(2 if jobs == 1 else 3)]
    for sid in honest:
        write(subs, f"{sid}.py", GOOD)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
           "--public", "-j", str(jobs)]
    env = {**os.environ, **({"HWCHECK_NAMESPACES": "0"} if walls == "fallback" else {})}
    r = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode in (0, 1), r.stdout[-3000:] + r.stderr[-3000:]
    cards = {sid: json.loads((out / f"{sid}.json").read_text()) for sid in ["a_attacker", *honest]}
    if any(REFUSED in (c["grader"].get("isolation") or []) for c in cards.values()):
        pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
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
                os.chdir(base)  # _mess returns to the cwd: the checkout's may be closed to nobody (a 0700 clone dir)
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


# ------------------------------------------------------------------ the grader's own failures

def _zygote_fails_once(marker, how):
    """A stand-in for grade_one that, the first time only (in any process), kills (SIGKILL) or freezes
    (SIGSTOP) the zygote before grading: the grader's own failure, while an honest submission is graded."""
    import checker.records.grading as grading
    real = grading.grade_one

    def grade(grader, sid, path, *args, **kwargs):
        try:
            os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        except FileExistsError:
            return real(grader, sid, path, *args, **kwargs)
        assert grader.zygote.answers()  # it answered this process once: a request now waits REPLY_S, not START_S
        os.kill(grader.zygote.pid, how)
        if how == signal.SIGKILL:
            assert wait_until(lambda: not grader.zygote.alive(), timeout=5)
        return real(grader, sid, path, *args, **kwargs)
    return grade


def _honest_class(tmp_path, n):
    subs = tmp_path / "class"
    for i in range(n):
        write(subs, f"honest_{i}.py", GOOD)
    return [(f"honest_{i}", str(subs / f"honest_{i}.py")) for i in range(n)]


def _full_marks(card):
    return card["status"] == "graded" and not card["grader"].get("internal_error") and \
        card["score"] == sum(q["max_score"] for q in card["questions"] if not q.get("manual"))


@pytest.mark.slow
def test_a_zygote_that_dies_under_a_submission_is_replaced_and_the_submission_regraded(tmp_path, monkeypatch):
    """-j 1: the zygote dies (SIGKILL) as the first honest submission is graded. That submission is not
    charged for it: a fresh zygote grades it again at once, and the others after it. A card that still
    says the grader failed is never kept by --resume."""
    import checker.records.batch as batch
    from checker.records.grading import crashed_scorecard
    from checker.records.outfolder import scorecard_path, write_submission
    entries = _honest_class(tmp_path, 3)
    out = str(tmp_path / "out")
    monkeypatch.setattr(batch, "grade_one", _zygote_fails_once(str(tmp_path / "failed-once"), signal.SIGKILL))
    result = batch.grade_batch(entries, "attention", out, jobs=1, mode="public")
    assert os.path.exists(tmp_path / "failed-once")  # the zygote really was killed
    cards = {sid: json.loads(open(scorecard_path(out, sid)).read()) for sid, _ in entries}
    assert all(_full_marks(c) for c in cards.values()), {s: c["grader"] for s, c in cards.items()}
    assert not result.internal

    # a card of the grader's own failure (as a batch whose fresh zygote failed too would leave it)
    path = entries[1][1]
    write_submission(out, "honest_1", crashed_scorecard("honest_1", path, "attention", "public",
                                                        "the worker zygote stopped answering", seed=1234,
                                                        grader_failure=True), keep_raw=False)
    assert json.loads(open(scorecard_path(out, "honest_1")).read())["grader"]["grader_failure"] is True
    again = batch.grade_batch(entries, "attention", out, jobs=1, mode="public", resume=True)
    assert [r["id"] for r in again.graded] == ["honest_1"]
    assert _full_marks(json.loads(open(scorecard_path(out, "honest_1")).read()))


@pytest.mark.slow
def test_a_zygote_that_stops_answering_is_replaced_in_the_pool(tmp_path, monkeypatch):
    """-j 2: the zygote is frozen (SIGSTOP: alive, answering no one) as a submission is graded. The
    grading fails for the grader's reason; the pool starts a fresh zygote and grades it again; nothing of
    hwcheck's is left in the batch's temp dir, though the frozen zygote, killed by SIGKILL, removed nothing."""
    import checker.records.batch as batch
    from checker.records.outfolder import scorecard_path
    entries = _honest_class(tmp_path, 3)
    out = str(tmp_path / "out")
    monkeypatch.setattr(batch, "grade_one", _zygote_fails_once(str(tmp_path / "failed-once"), signal.SIGSTOP))
    monkeypatch.setattr(zygote_client, "REPLY_S", 5)  # taken for hung after 5 s, not 30 (the pool's processes fork)
    tmp = tempfile.mkdtemp(prefix="hwcheck-test-tmp-")  # this batch's temp dir, open to the workers' identities
    os.chmod(tmp, 0o755)
    monkeypatch.setattr(tempfile, "tempdir", tmp)
    try:
        result = batch.grade_batch(entries, "attention", out, jobs=2, mode="public")
        left = sorted(n for n in os.listdir(tmp) if n.startswith("hwcheck-"))
    finally:
        monkeypatch.undo()
        cleanup.remove_tree(tmp, deadline=time.monotonic() + 10)
    assert left == []
    assert os.path.exists(tmp_path / "failed-once")
    cards = {sid: json.loads(open(scorecard_path(out, sid)).read()) for sid, _ in entries}
    assert all(_full_marks(c) for c in cards.values()), {s: c["grader"] for s, c in cards.items()}
    assert not result.internal


# ------------------------------------------------------------------ parent death after the drop (item 4)

ESCAPE = textwrap.dedent('''\
    import ctypes, os, time

    def pdeathsig():
        sig = ctypes.c_int(-1)
        ctypes.CDLL(None).prctl(2, ctypes.byref(sig), 0, 0, 0)   # PR_GET_PDEATHSIG
        return sig.value

    def escape(body_name, kid_name, outlive=False):
        """Leave the worker's process group (setsid), fork a child; each names itself. outlive: the child
        no longer dies with its parent."""
        libc = ctypes.CDLL(None)
        try:
            os.setsid()
        except OSError:
            pass
        if os.fork() == 0:
            if outlive:
                libc.prctl(1, 0, 0, 0, 0)                        # PR_SET_PDEATHSIG: none
            libc.prctl(15, kid_name.encode(), 0, 0, 0)           # PR_SET_NAME
            while True:
                time.sleep(1)
        libc.prctl(15, body_name.encode(), 0, 0, 0)
        return "escaped"
    ''')


def _named(name):
    out = []
    for p in live_pids():
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() == name:
                    out.append(p)
        except OSError:
            pass
    return out


@pytest.mark.slow
@pytest.mark.walls
def test_a_body_that_left_its_process_group_dies_with_its_worker_at_once(tmp_path):
    """The worker's body is a child of the worker and dropped to nobody: that uid change cleared its
    PR_SET_PDEATHSIG, so a body that called setsid() (out of reach of the kill of the worker's process
    group) ran on after its worker was killed, until the zygote's next sweep. It is set again after the
    drop: the body reports SIGKILL, and with the zygote frozen (no sweep can run) the body is gone as
    soon as its worker is killed; with namespaces its child too (its PID namespace died with it)."""
    from checker.running.sandbox import Limits, SubmissionHandle
    from checker.running.zygote_client import Zygote
    body, kid = f"hwbody{os.getpid() % 10000}", f"hwkid{os.getpid() % 10000}"
    with Zygote() as z:
        h = SubmissionHandle(write(tmp_path, "escape.py", ESCAPE), z,
                             Limits(call_s=10, cell_s=10, submission_s=60))
        try:
            report = h.load()
            if not report["ok"] and REFUSED in h.isolation:
                pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
            assert report["ok"], report
            assert h.call("pdeathsig") == signal.SIGKILL, "the body does not die with its worker"
            namespaced = "pid-namespace" in h.isolation
            assert h.call("escape", body, kid) == "escaped"
            assert wait_until(lambda: _named(body) and _named(kid), timeout=5), "the body did not fork"
            os.kill(z.pid, signal.SIGSTOP)  # no sweep from here on: only the kernel may end them
            try:
                for kill in (lambda: os.killpg(h.pid, signal.SIGKILL), lambda: os.kill(h.pid, signal.SIGKILL)):
                    try:  # what the trusted side does to a worker (SubmissionHandle._kill)
                        kill()
                    except OSError:
                        pass
                assert wait_until(lambda: not _named(body), timeout=3), "the body outlived its worker"
                if namespaced:
                    assert wait_until(lambda: not _named(kid), timeout=3), "the body's child outlived it"
            finally:
                os.kill(z.pid, signal.SIGCONT)
            assert wait_until(lambda: not _named(kid), timeout=5), "the zygote's sweep missed the child"
        finally:
            h.close()


CHAIN = textwrap.dedent('''\
    import ctypes, os, time

    def chain(name, depth):
        """An attacker's (h23): a chain of processes, each in a session of its own (setsid) and sleeping but
        the last, which forks on. Killed a level at a time (the parent's children, then theirs, re-parented),
        it outran the killing and outlived the batch where no cgroup and no PID namespace hold it."""
        if os.fork():
            return "started"
        libc = ctypes.CDLL(None)
        for _ in range(depth):
            try:
                os.setsid()
            except OSError:                                      # seccomp refuses it (a CPU share of its own)
                pass
            libc.prctl(1, 0, 0, 0, 0)                            # PR_SET_PDEATHSIG: none
            libc.prctl(15, name.encode(), 0, 0, 0)               # PR_SET_NAME
            if os.fork():
                while True:
                    time.sleep(1)
        while True:
            if os.fork() == 0:
                libc.prctl(15, name.encode(), 0, 0, 0)
                time.sleep(60)
                os._exit(0)
            time.sleep(0.01)
    ''')


@pytest.mark.slow
@pytest.mark.walls
@pytest.mark.parametrize("cgroups", ["1", "0"], ids=["cgroups", "no-cgroups"])
def test_a_chain_of_sessions_dies_with_its_worker_where_nothing_else_holds_it(tmp_path, monkeypatch, cgroups):
    """A worker killed from outside (a timeout, the end of its submission) whose code left a deep chain of
    processes, each in a session of its own: none is left once the worker is gone, with no cgroup (HWCHECK_CGROUPS=0:
    Gradescope's read-only cgroups) and, under capsh, no PID namespace either (every process of the worker's own
    uid is killed at once, checker.worker.namespaces.kill_uid)."""
    from checker.running.sandbox import Limits, SubmissionHandle
    from checker.running.zygote_client import Zygote
    monkeypatch.setenv("HWCHECK_CGROUPS", cgroups)
    name = f"hwchain{os.getpid() % 10000}"
    with Zygote() as z:
        h = SubmissionHandle(write(tmp_path, "chain.py", CHAIN), z, Limits(call_s=10, cell_s=10, submission_s=60))
        try:
            report = h.load()
            if not report["ok"] and REFUSED in h.isolation:
                pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
            assert report["ok"], report
            assert any(w.startswith("address-space-") for w in h.isolation) == (cgroups == "0"), h.isolation
            assert h.call("chain", name, 300) == "started"
            assert wait_until(lambda: len(_named(name)) > 100, timeout=20), "the chain did not grow"
        finally:
            h.close()  # the worker is killed (SIGKILL: it cleans up nothing itself), and the zygote reaps it
        assert wait_until(lambda: not _named(name), timeout=5), f"{len(_named(name))} processes outlived their worker"


@pytest.mark.slow
def test_the_zygote_removes_its_own_worker_dirs_and_nothing_else(tmp_path, outside):
    """op "remove": a dir the zygote made goes, chain and all; a path that is not one of its worker dirs
    (outside the temp dir, a look-alike name it never made, a link so named) is left as it was."""
    from checker.running.zygote_client import Zygote
    tmp = os.path.realpath(tempfile.gettempdir())
    lookalike = tempfile.mkdtemp(prefix="hwcheck-w-")  # in the temp dir, but not the zygote's
    link = os.path.join(tmp, f"hwcheck-w-link-{uuid.uuid4().hex}")
    os.symlink(str(outside), link)
    try:
        with Zygote() as z:
            made = z.mkdir()
            _mess(made, str(outside), depth=300)
            z.remove(made)  # gone at once, or in later turns of the zygote's loop (at most 0.5 s per request)
            assert wait_until(lambda: not os.path.lexists(made), timeout=30)
            assert z.remove(str(outside)) is False and _outside_intact(outside)
            assert z.remove(lookalike) is False and os.path.isdir(lookalike)
            assert z.remove(link) is False and os.path.islink(link) and _outside_intact(outside)
            assert z.answers()  # none of it ended the zygote's loop
    finally:
        os.unlink(link)
        os.rmdir(lookalike)


@pytest.mark.slow
def test_a_worker_dir_too_big_to_remove_as_the_zygote_exits_is_removed_by_its_client(tmp_path, outside):
    """The zygote exits within its client's 3 s grace: what it could not remove in 2 s it names in
    LEFTOVER, and the client finishes it. Either way nothing is left once close() returns."""
    from checker.running.zygote_client import Zygote
    z = Zygote()
    try:
        made = z.mkdir()
        _mess(made, str(outside), depth=2100)
        for i in range(2000):  # many names as well as depth
            open(os.path.join(made, f"f{i}"), "w").close()
    finally:
        z.close()
    assert not os.path.lexists(made) and _outside_intact(outside)


@pytest.mark.slow
def test_a_zygote_told_to_stop_in_the_middle_of_a_removal_leaves_nothing(tmp_path, outside):
    """SIGTERM (what the zygote gets when its trusted process dies) arrives while it removes a worker dir too
    big to remove in one request. It ended the zygote at once, in the middle of that step: the dir was off its
    list of removals and on no other, so neither its exit nor its client removed it. The loop now stops at its
    next turn: the dir is removed as it exits, or named for its client, which removes it."""
    import threading

    from checker.running.zygote_client import Zygote
    z = Zygote()
    try:
        made = z.mkdir()
        _mess(made, str(outside), depth=2100)
        for i in range(3000):
            open(os.path.join(made, f"f{i}"), "w").close()
        stop = threading.Timer(0.1, os.kill, (z.pid, signal.SIGTERM))
        stop.start()
        z.remove(made)  # the zygote's removal runs for at most 0.5 s per request
        stop.join()
        assert wait_until(lambda: not z.alive(), timeout=30), "the zygote did not stop"
    finally:
        z.close()
    assert not os.path.lexists(made) and _outside_intact(outside)


# ------------------------------------------------------------------ a zygote killed by SIGKILL

def test_a_zygote_killed_by_sigkill_leaves_no_worker_dir(tmp_path):
    """A zygote removes its workers' dirs (or names them for its client) as it exits; killed by SIGKILL it
    does neither. Its client knows the dirs made for it and removes those still there once the zygote is gone,
    however quickly after the kill the handle is closed."""
    from checker.running.sandbox import Limits, SubmissionHandle
    from checker.running.zygote_client import Zygote
    z = Zygote()
    try:
        h = SubmissionHandle(write(tmp_path, "honest.py", GOOD), z, Limits(call_s=10, cell_s=10, submission_s=60))
        h.load()
        workdir = h.workdir
        assert os.path.isdir(workdir)
        os.kill(z.pid, signal.SIGKILL)
        h.close()  # its remove request finds the zygote dead, or dying
    finally:
        z.close()
    assert not os.path.lexists(workdir), "the dead zygote's worker dir is left"


def test_a_worker_dir_is_named_for_the_client_before_it_exists(tmp_path, monkeypatch):
    """The zygote names each worker dir in MADE before making it: a zygote stopped (or killed) between making
    a dir and naming it left that dir to no one (a CI run of the pool's frozen-zygote test left one)."""
    from checker.worker import zygote
    made = str(tmp_path / "made")
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    seen = []
    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        seen.append(open(made).read().splitlines() if os.path.exists(made) else [])
        return real_mkdir(path, *args, **kwargs)
    monkeypatch.setattr(os, "mkdir", mkdir)
    paths = [zygote.make_worker_dir(made) for _ in range(3)]
    assert [path in names for path, names in zip(paths, seen)] == [True] * 3
    assert all(os.path.isdir(p) and os.path.basename(p).startswith("hwcheck-w-") for p in paths)
    assert open(made).read().splitlines() == paths


def _cgroups_named(name):
    """Every folder called `name` in the cgroup hierarchies mounted here."""
    with open("/proc/self/mountinfo") as f:
        mounts = {ln.split()[4] for ln in f if " - cgroup2 " in ln or " - cgroup " in ln}
    return [root for m in mounts for root, _dirs, _files in os.walk(m) if os.path.basename(root) == name]


@pytest.mark.slow
@pytest.mark.walls
def test_a_zygote_killed_by_sigkill_leaves_no_cgroup_and_nothing_running_in_one(tmp_path):
    """A zygote removes the cgroups it made for its workers as it exits; killed by SIGKILL (as its client
    kills one that stops answering) it cannot. Its client removes them once it has reaped it, after killing
    what a worker left in them: here a process of the body's that left its session and cleared its
    PR_SET_PDEATHSIG, so that neither its worker's death nor a sweep of the (dead) zygote ends it."""
    from checker.running.sandbox import Limits, SubmissionHandle
    from checker.running.zygote_client import Zygote
    body, kid = f"hwlbody{os.getpid() % 10000}", f"hwlinger{os.getpid() % 10000}"
    z = Zygote()
    try:
        h = SubmissionHandle(write(tmp_path, "linger.py", ESCAPE), z, Limits(call_s=10, cell_s=10, submission_s=60))
        report = h.load()
        if not report["ok"] and REFUSED in h.isolation:
            pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
        assert report["ok"], report
        made = _cgroups_named(f"hwcheck-{z.pid}")
        if not made:
            pytest.skip(f"the zygote made no cgroup here (its workers' walls: {h.isolation})")
        assert any(os.path.isdir(os.path.join(m, f"hwcheck-{h.pid}")) for m in made), (made, h.isolation)
        assert h.call("escape", body, kid, True) == "escaped"
        assert wait_until(lambda: _named(kid), timeout=5), "the body did not fork"
        os.kill(z.pid, signal.SIGKILL)
        h.close()
    finally:
        z.close()
    assert not [m for m in made if os.path.exists(m)], "the dead zygote's cgroups are left"
    assert wait_until(lambda: not _named(kid), timeout=3), "a process left in a worker's cgroup runs on"
