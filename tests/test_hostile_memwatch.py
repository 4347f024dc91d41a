"""Hostile tests of the memory watch (checker.worker.memwatch): the cap where no cgroup and no RLIMIT_AS can be had.

On the first GPU machine hwcheck ran on, the cgroup did not delegate the memory controller and RLIMIT_AS is not
used with a GPU, so a shared mapping went past the budget. These tests put up the walls as a worker does there
(`apply_isolation` with its GPU test answered yes, /dev/zero standing in for the GPU's device files, and no cgroup
parent), so they run on any machine, then go past a 384 MiB budget the ways RLIMIT_DATA does not see: a shared
anonymous mapping, an unmapped memfd, a shared mapping made by a child process. Each must end the worker by
SIGKILL before it reports holding the memory; honest use within the budget must go on. Both wall modes.
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = [pytest.mark.walls]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

SCRIPT = textwrap.dedent('''
    import json, mmap, os, sys, tempfile, time
    sys.path.insert(0, {repo!r})
    from checker.worker import isolation
    if {gpu}:
        isolation._gpu_devices = lambda: ["/dev/zero"]  # a GPU here: no RLIMIT_AS
    work = {work!r}  # made by the test, which removes it (the worker, once walled in, cannot)
    tempfile.gettempdir()  # known before the walls, as in a zygote, which made the worker's folder there
    try:
        walls = isolation.apply_isolation(work, [], memory_mb=384, cgroup_parent=None, use_namespaces={namespaces})
    except isolation.WallsRefused as e:
        print(json.dumps({{"refused": str(e)}}), flush=True)
        sys.exit(0)
    import stat
    fds = os.listdir("/proc/self/fd")  # its own listing's fd is closed again once listed
    dirs = []
    for fd in fds:
        try:
            if stat.S_ISDIR(os.fstat(int(fd)).st_mode):
                dirs.append(os.readlink(f"/proc/self/fd/{{fd}}"))
        except OSError:
            pass
    # what Landlock's rules on the host's /proc keep open (checker.worker.landlock.own_proc): its own folder and
    # the folders that are no process's, which it may read anyway
    mine = f"/proc/{{os.getpid()}}"
    own = lambda d: d == mine or d.startswith(mine + "/") or (d.startswith("/proc/") and not d[6:].split("/")[0].isdigit())
    dirs = [d for d in dirs if not own(d)]
    print(json.dumps({{"walls": walls, "dir_fds": dirs}}), flush=True)
    MiB = 1 << 20

    def shared(n):
        m = mmap.mmap(-1, n * MiB, flags=mmap.MAP_SHARED)
        for i in range(0, n * MiB, 4096):
            m[i] = 1
        return m

    def memfd(n):  # files of 128 MiB (RLIMIT_FSIZE stops one file at 256 MiB)
        fds, block = [], b"x" * MiB
        for i in range(n):
            if i % 128 == 0:
                fds.append(os.memfd_create("hidden"))
            os.write(fds[-1], block)
        return fds

    def private(n):
        return bytearray(n * MiB)

    what = {what!r}
    if what == "honest":
        kept = [private(64), shared(64), memfd(32)]
        time.sleep(1.0)
    elif what == "children_private":  # each child within RLIMIT_AS, which is each process's own; together past it
        kids = []
        for _ in range(4):
            pid = os.fork()
            if pid == 0:
                kept = private(300)
                kept[::4096] = b"\x01" * len(range(0, 300 * MiB, 4096))
                time.sleep(3)
                os._exit(0)
            kids.append(pid)
        for pid in kids:
            os.waitpid(pid, 0)
    elif what == "child_shared":
        pid = os.fork()
        if pid == 0:
            kept = shared(1024)
            time.sleep(3)
            os._exit(0)
        os.waitpid(pid, 0)
    else:
        kept = {{"shared": shared, "memfd": memfd}}[what](1024)
        time.sleep(3)
    print(json.dumps({{"kept": what}}), flush=True)
''')


def _run(what, namespaces, gpu=True):
    work = tempfile.mkdtemp(prefix="memwatch-")  # in the system's temp dir, open to the worker's identity
    os.chmod(work, 0o755)
    code = SCRIPT.format(repo=REPO, namespaces=namespaces, what=what, work=work, gpu=gpu)
    env = {**os.environ, **({} if namespaces else {"HWCHECK_NAMESPACES": "0"})}
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    out = [json.loads(ln) for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert out, proc.stdout + proc.stderr[-3000:]
    if "refused" in out[0]:
        pytest.skip("the grader refuses to run code here: " + out[0]["refused"][:120])
    walls = out[0]["walls"]
    assert any(w.startswith("memory-watch-384MiB") for w in walls), walls
    assert out[0]["dir_fds"] == [], out[0]  # the watcher's fd on the grader's /proc (or another's folder) is not the body's
    return proc, out[1:], walls


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
@pytest.mark.parametrize("what", ["shared", "memfd", "child_shared"])
def test_memory_past_the_budget_ends_the_worker(what, namespaces):
    proc, said, walls = _run(what, namespaces)
    assert said == [], (said, walls)  # it never held the GiB long enough to say so
    ended_by = {-signal.SIGKILL}
    if what == "memfd" and any(w.startswith("disk-watch") for w in walls):
        ended_by.add(-signal.SIGXFSZ)  # without namespaces the disk watch counts unlinked files kept open too
    assert proc.returncode in ended_by, (proc.returncode, proc.stderr[-2000:])


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_honest_use_within_the_budget_goes_on(namespaces):
    proc, said, walls = _run("honest", namespaces)
    assert said == [{"kept": "honest"}], (proc.returncode, proc.stderr[-2000:])
    assert proc.returncode == 0


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_children_within_rlimit_as_each_but_past_the_budget_together_end_the_worker(namespaces):
    """Where no cgroup caps the worker (Gradescope: its cgroups are read-only) and RLIMIT_AS does, that limit is
    each process's own: four children of 1.5 GiB held 6 GiB on a 4 GiB budget (an attacker's probe, h23). The
    watch of their sum runs beside it: four children of 300 MiB on a 384 MiB budget end the worker."""
    proc, said, walls = _run("children_private", namespaces, gpu=False)
    assert any(w.startswith("address-space-") for w in walls), walls
    assert said == [], (said, walls)
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr[-2000:])
