"""Hostile tests of a worker's share of the CPU (issue h32: the setsid spinners).

The attack: at import a submission forks and every child calls os.setsid(), then
spins. On a host with kernel.sched_autogroup_enabled=1 the scheduler shares the
CPU per session, so each spinner in a session of its own took a share of its
own (128 of them left a classmate graded beside them at -j 2 ~1% of a core).
Two walls answer it (checker.worker.seccomp, checker.worker.memory):

- seccomp refuses setsid (EPERM) in every worker, in both modes: all of a
  worker's processes stay in the session its outer process made;
- where a cpu cgroup can be had (v2's cpu controller delegated, or cgroup v1's
  cpu hierarchy writable, as root), every process of the worker is in one
  cgroup of its own, `cpu-cgroup2-...` / `cpu-cgroup1-...` in its isolation,
  which weighs as one entity whatever it forks.

The tests read what the submission saw (its own answer, and a message it raises
into the scorecard) and check from the trusted side, in /proc, the session and
the cgroup of every process the worker has while it lives. No timing is
asserted here (bench/ measures what a classmate loses). Both are `walls` tests:
tests/test_wall_modes.py runs them again with CAP_SYS_ADMIN dropped.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from checker.worker import memory
from sandbox_helpers import GOOD, descendants, wait_until, write

pytestmark = pytest.mark.slow
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIDS = 8

# At import: KIDS children each try setsid() and report what they got on a pipe, then wait (no CPU burnt
# here) until released; the body tries it too (it is no process group leader, so setsid would succeed).
SETSID = textwrap.dedent('''\
    import errno, os

    def _try_setsid():
        try:
            os.setsid()
            return "made a session"
        except OSError as e:
            return errno.errorcode.get(e.errno, str(e.errno))

    _hold_r, _hold_w = os.pipe()
    _kids = []

    def _start(n):
        r, w = os.pipe()
        for _ in range(n):
            pid = os.fork()
            if pid == 0:
                os.close(r)
                os.close(_hold_w)
                os.write(w, (_try_setsid() + "\\n").encode())
                os.read(_hold_r, 1)     # until the parent closes its end
                os._exit(0)
            _kids.append(pid)
        os.close(w)
        got = b""
        while got.count(b"\\n") < n:
            chunk = os.read(r, 4096)
            if not chunk:
                break
            got += chunk
        os.close(r)
        return got.decode().split()

    _seen = {"children": _start(%d), "body": _try_setsid()}

    def seen():
        return _seen

    def release():
        os.close(_hold_w)
        for pid in _kids:
            os.waitpid(pid, 0)
        return len(_kids)
    ''' % KIDS)

# At import: spinners in sessions of their own, as the attack (/tmp/h32/atk_cpuhog.py), bounded: each stops
# after SPIN_S or as soon as the worker's body (its parent) is gone. What they saw is raised into the
# scorecard by head_weight_shape.
SPINNERS = textwrap.dedent('''\
    import errno, os, time

    _ME = os.getpid()
    _r, _w = os.pipe()
    _SEEN = []
    for _ in range(%d):
        if os.fork() == 0:
            os.close(_r)
            try:
                os.setsid()
                what = "made a session"
            except OSError as e:
                what = errno.errorcode.get(e.errno, str(e.errno))
            os.write(_w, (what + "\\n").encode())
            os.close(_w)
            end = time.time() + %d
            while time.time() < end and os.getppid() == _ME:
                for _ in range(100000):
                    pass
            os._exit(0)
    os.close(_w)
    _got = b""
    while True:
        _chunk = os.read(_r, 4096)
        if not _chunk:
            break
        _got += _chunk
    _SEEN = _got.decode().split()
    ''' % (KIDS, 20))


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


def _handle(zyg, path):
    h = SubmissionHandle(str(path), zyg, Limits(call_s=60, cell_s=30, submission_s=300))
    report = h.load()
    if any("user-unique-unavailable" in w for w in h.isolation):
        h.close()
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others)")
    assert report["ok"], report
    return h


def _session(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[3])  # state, ppid, pgrp, session


def _cpu_cgroup(pid):
    """The cgroup of `pid` that holds its cpu controller: ("cgroup1", path) or ("cgroup2", path)."""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [ln.rstrip("\n").split(":", 2) for ln in f]
    for _, controllers, path in lines:
        if "cpu" in controllers.split(","):
            return "cgroup1", path
    return "cgroup2", next(path for hid, _, path in lines if hid == "0")


def _cgroup_folder(kind, path):
    """The folder of a cgroup (as /proc/<pid>/cgroup names it) in this process's mounts."""
    with open("/proc/self/mountinfo") as f:
        for ln in f:
            fields = ln.split()
            fs = fields[fields.index("-") + 1:]
            if kind == "cgroup2" and fs[0] == "cgroup2" or kind == "cgroup1" and fs[0] == "cgroup" and \
                    "cpu" in fs[-1].split(","):
                return os.path.join(fields[4], path.lstrip("/"))
    return None


def _cpu_cgroup_expected(walls):
    """Must this worker have a cpu cgroup: its other walls came from cgroup v1 and our own cgroup in v1's
    cpu hierarchy is writable (a root grader on this kind of host). On v2 it depends on what was delegated:
    not required, but checked where named."""
    if os.environ.get("HWCHECK_CGROUPS", "1") == "0" or not any(w.startswith(("cgroup1-", "tasks-cgroup1-"))
                                                                  for w in walls):
        return False
    found = memory._own_cgroup_v1("cpu")
    return bool(found) and os.access(os.path.join(found[0], found[1].lstrip("/")), os.W_OK)


@pytest.mark.walls
def test_a_worker_cannot_make_a_session_and_all_its_processes_share_one_cpu_cgroup(zyg, tmp_path):
    """setsid refused (EPERM) in the body and in every child it forks; from outside, every process of the
    worker is in its outer process's session and, where a cpu cgroup was made, in that one cgroup."""
    h = _handle(zyg, write(tmp_path, "sessions.py", SETSID))
    outer = h.pid
    walls = list(h.isolation)
    cpu_walls = [w for w in walls if w.startswith("cpu-cgroup")]
    folder = None
    try:
        assert [w for w in walls if w.startswith("seccomp-denylist")], walls
        got = h.call("seen")
        assert got == {"children": ["EPERM"] * KIDS, "body": "EPERM"}, got

        inner = descendants(outer)
        assert len(inner) >= KIDS + 1, inner  # the body and its children (with namespaces, the body is PID 1)
        sessions = {p: _session(p) for p in [outer, *inner]}
        assert set(sessions.values()) == {outer}, sessions  # the session the worker's outer process made

        if _cpu_cgroup_expected(walls):
            assert cpu_walls, walls
        if cpu_walls:
            kind = "cgroup2" if cpu_walls[0].startswith("cpu-cgroup2-") else "cgroup1"
            groups = {p: _cpu_cgroup(p) for p in [outer, *inner]}
            assert set(groups.values()) == {(kind, groups[outer][1])}, groups
            assert groups[outer][1].endswith(f"/hwcheck-{outer}"), groups[outer]
            folder = _cgroup_folder(kind, groups[outer][1])
            assert folder and os.path.isdir(folder), folder
            with open(os.path.join(folder, "cgroup.procs")) as f:
                members = {int(p) for p in f.read().split()}
            assert {outer, *inner} <= members, (members, inner)
            assert members <= {outer, *descendants(outer)}, members  # nobody else's process shares it
        else:
            assert not _cpu_cgroup_expected(walls), walls
        assert h.call("release") == KIDS
    finally:
        h.close()
    if folder:
        assert wait_until(lambda: not os.path.exists(folder), timeout=10), folder  # released with the worker


def _full_marks(card):
    auto = [q for q in card["questions"] if not q["manual"]]
    return card["status"] == "graded" and auto and all(q["score"] == q["max_score"] for q in auto)


@pytest.mark.walls
def test_an_honest_classmate_keeps_full_marks_beside_setsid_spinners(tmp_path):
    """A batch at -j 2: mallory's import forks spinners that each try a session of their own (refused); what
    they saw reaches mallory's scorecard in the message of a test; alice, graded beside it, gets full marks
    and her isolation names the CPU share where a cpu cgroup was made."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(GOOD)
    (subs / "mallory.py").write_text(SPINNERS + GOOD + textwrap.dedent('''

        def head_weight_shape(d_model, num_heads):
            raise RuntimeError("SEEN " + ",".join(_SEEN) + " END")
        '''))
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
                        "--public", "-j", "2"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    alice = json.loads((out / "alice.json").read_text())
    mallory = json.loads((out / "mallory.json").read_text())
    walls = alice["grader"]["isolation"]
    if any("user-unique-unavailable" in w for w in walls):
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others)")
    assert _full_marks(alice), json.dumps(alice)[:3000]
    assert [w for w in walls if w.startswith("seccomp-denylist")], walls
    if _cpu_cgroup_expected(walls):
        assert [w for w in walls if w.startswith("cpu-cgroup")], walls
        assert [w for w in mallory["grader"]["isolation"] if w.startswith("cpu-cgroup")], mallory["grader"]
    messages = " ".join(t["message"] or "" for q in mallory["questions"] for t in q["tests"])
    assert "SEEN " + ",".join(["EPERM"] * KIDS) + " END" in messages, messages[:3000]
