"""checker.worker.memory: what stays of a released worker's cgroups.

The walls themselves (memory, tasks and CPU caps) are attacked in tests/test_hostile_limits.py and
tests/test_hostile_cpu.py; here, on plain folders standing in for cgroups (a cgroup folder cannot be removed
while it holds a process, as a plain one cannot while it holds a file), that a folder whose killed members had
not exited yet when its worker was released is removed at a later release, not left until the zygote exits.
"""
import os

from checker.worker import memory


def test_a_cgroup_still_busy_at_release_is_removed_at_a_later_release(tmp_path, monkeypatch):
    monkeypatch.setattr(memory, "_LEFT", set())
    parent = ("cgroup2", str(tmp_path / "v2"), str(tmp_path / "pids"), str(tmp_path / "cpu"))
    busy = []
    for base in parent[1:]:
        os.makedirs(os.path.join(base, "hwcheck-101"))
        member = os.path.join(base, "hwcheck-101", "cgroup.procs")
        with open(member, "w"):
            pass  # empty: nobody to kill, but the folder cannot go yet
        busy.append(member)
    memory.release(101, parent)
    assert all(os.path.isdir(os.path.dirname(m)) for m in busy)
    assert memory._LEFT == {os.path.dirname(m) for m in busy}
    for m in busy:  # the members are gone now
        os.remove(m)
    memory.release(102, parent)  # another worker's release (it had no cgroups) tries them again
    assert not any(os.path.exists(os.path.dirname(m)) for m in busy)
    assert memory._LEFT == set()
    memory.release(103, None)  # with no parent (the fallback walls) it does nothing, and does not fail
