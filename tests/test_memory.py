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
    monkeypatch.setattr(memory, "RELEASE_WAIT_S", 0.05)  # a folder that stays busy is not waited for long
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


def test_a_cgroup_whose_members_exit_while_it_is_released_is_removed_by_that_release(tmp_path, monkeypatch):
    """The members of a killed worker exit a moment after the kill: the release waits for them (while the folder
    is busy) and removes it then, rather than leaving it to a later release (a hostile test found it there)."""
    import threading
    monkeypatch.setattr(memory, "_LEFT", set())
    parent = (None, None, str(tmp_path / "cpu"))
    folder = tmp_path / "cpu" / "hwcheck-201"
    folder.mkdir(parents=True)
    (folder / "cgroup.procs").write_text("")
    exits = threading.Timer(0.2, (folder / "cgroup.procs").unlink)  # the members leave after 0.2 s
    exits.start()
    try:
        memory.release(201, parent)
    finally:
        exits.join()
    assert not folder.exists() and memory._LEFT == set()
