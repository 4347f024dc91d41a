"""checker.worker.memory's cgroups outlive no zygote: one killed by SIGKILL (it never ran remove_parent) leaves
its `hwcheck-<pid>` folders in the system's cgroup tree, and the next zygote sweeps them (`sweep_stale`), never
one of a live zygote, one too young to be surely stale, or one that holds a process."""
import os
import signal
import subprocess
import sys

import pytest

from checker.running.zygote_client import Zygote
from checker.worker import memory

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


NEXT_ZYGOTE = """
from checker.worker import memory
memory.STALE_AGE_S = 0
memory.remove_parent(memory.cgroup_parent())  # what a zygote does as it starts and as it ends
"""


def _folders():
    """Where this machine's zygotes put their cgroups (where this process's own cgroups are)."""
    found = {memory._own_cgroup_v2(), memory._own_cgroup_v1("memory"), memory._own_cgroup_v1("pids")} - {None}
    return [f for f in (os.path.join(m, rel.lstrip("/")) for m, rel in found) if os.access(f, os.W_OK)]


def _mine(folder, pid):
    return os.path.isdir(os.path.join(folder, f"hwcheck-{pid}"))


def test_a_zygote_killed_by_sigkill_leaves_cgroups_that_the_next_one_sweeps():
    z = Zygote()
    try:
        z.mkdir()  # answered once the zygote runs: its cgroups are made
    except Exception:
        z.close()
        raise
    folders = [f for f in _folders() if _mine(f, z.pid)]
    if not folders:
        z.close()
        pytest.skip("no cgroup is delegated to hwcheck here (its memory cap is RLIMIT_AS): nothing to leave")
    os.killpg(z.pid, signal.SIGKILL)
    z.proc.wait(timeout=10)
    try:
        assert all(_mine(f, z.pid) for f in folders)  # what a killed zygote leaves
        assert sum(memory.sweep_stale(f) for f in folders) == 0  # too young to be surely stale
        assert all(_mine(f, z.pid) for f in folders)
        live = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
        try:  # the cgroup of a dead zygote that still holds a process (here: a sleeper moved into it) stays
            with open(os.path.join(folders[0], f"hwcheck-{z.pid}", "cgroup.procs"), "w") as f:
                f.write(str(live.pid))
            memory.sweep_stale(folders[0], min_age_s=0)
            assert _mine(folders[0], z.pid)
        finally:
            live.kill()
            live.wait()
        # the next zygote's start sweeps them (here with no minimum age: the test cannot wait a minute)
        p = subprocess.run([sys.executable, "-c", NEXT_ZYGOTE], capture_output=True, text=True, cwd=REPO, timeout=60)
        assert p.returncode == 0, p.stderr
        assert not any(_mine(f, z.pid) for f in folders)
    finally:
        for f in folders:
            try:
                os.rmdir(os.path.join(f, f"hwcheck-{z.pid}"))
            except OSError:
                pass
        z.close()


def test_the_cgroups_of_a_live_zygote_are_never_swept():
    with Zygote() as z:
        z.mkdir()
        folders = [f for f in _folders() if _mine(f, z.pid)]
        if not folders:
            pytest.skip("no cgroup is delegated to hwcheck here (its memory cap is RLIMIT_AS)")
        for f in folders:
            memory.sweep_stale(f, min_age_s=0)
        assert all(_mine(f, z.pid) for f in folders)

