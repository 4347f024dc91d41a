"""A watched cap on a worker's memory, where no cgroup caps it (RLIMIT_AS, where there is one, caps each process).

What it is for: on a machine with a GPU whose cgroup does not delegate the
memory controller (the first H200 VM hwcheck ran on: its own cgroup listed
`memory` in cgroup.controllers but could not enable it for a child while
processes lived in it), `checker.worker.memory.cap_memory` has nothing to
put up: RLIMIT_AS is not used with a GPU (CUDA reserves far more address
space than it uses), and RLIMIT_DATA counts private writable memory only, so
`mmap(-1, n, MAP_SHARED)` or a memfd grew past the budget. `Watch` then runs
in the worker's parent W (`checker.worker.namespaces.fork_init`), outside
every wall of the body, and every interval adds up what the body's processes
hold in memory:

- their proportional share of anonymous and shared-memory pages, resident or
  swapped (`Pss_Anon + Pss_Shmem + SwapPss` of /proc/<pid>/smaps_rollup; a page
  shared by n processes counts 1/n in each, so a shared mapping counts once,
  and a fork of the body does not count its parent's pages again);
- memfd files they hold open and do not map (their pages are in no process's
  share until mapped).

Past the baseline (what W holds when the watch is made: the body starts as a
copy of it) plus the budget plus `HEADROOM_MB`, the body and all it started are
killed, and the worker ends as a cgroup's OOM kill would (SIGKILL: the student
reads "killed ... for using too much memory"). Named
`memory-watch-<N>MiB(every <T>s)` in `grader.isolation`.

It reads /proc through a directory fd opened before the body's fork: with
namespaces the body pivots into a new root in the mount namespace W shares,
after which W's path /proc would be the body's own PID namespace's.

What it is not: exact. The overshoot is what the body allocates in one
interval; a share of the pages the body inherited from the zygote moves as
other workers come and go (bounded by what W held, and inside the headroom).
A pass is bounded as the disk watch's is (`diskcap.PassBudget`): a body it cannot
measure in time is stopped. Where a cgroup caps the worker, this watch is not used; beside RLIMIT_AS, which
caps each process on its own (a fork has a limit of its own), it caps their sum.
"""

import os
import stat

from checker.worker.diskcap import PassBudget, Unwatchable

__all__ = ["HEADROOM_MB", "Watch", "watch_name"]

HEADROOM_MB = 256
_FIELDS = (b"Pss_Anon:", b"Pss_Shmem:", b"SwapPss:")


def watch_name(memory_mb, interval):
    return f"memory-watch-{memory_mb}MiB(every {interval:g}s)"


class Watch:
    """Made in W before the body's fork; `over(pid)` says why the body must stop, or None."""

    def __init__(self, memory_mb, proc="/proc"):
        self.proc_fd = os.open(proc, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        self.baseline = self._held(os.getpid())
        self.limit = self.baseline + (int(memory_mb) + HEADROOM_MB) * (1 << 20)
        self.budget_mb = int(memory_mb)

    def fds(self):
        """The fds W must keep open across fork_init's closing of every other."""
        return (self.proc_fd,)

    def _read(self, rel):
        fd = os.open(rel, os.O_RDONLY | os.O_CLOEXEC, dir_fd=self.proc_fd)
        try:
            chunks = []
            while True:
                b = os.read(fd, 65536)
                if not b:
                    return b"".join(chunks)
                chunks.append(b)
        finally:
            os.close(fd)

    def _held(self, pid):
        """Bytes of anonymous and shared memory `pid` holds (its proportional share), resident or swapped."""
        try:
            data = self._read(f"{pid}/smaps_rollup")
        except FileNotFoundError:
            return self._held_by_status(pid)
        total = 0
        for line in data.splitlines():
            if line.startswith(_FIELDS):
                total += int(line.split()[1]) * 1024
        if b"Pss_Anon:" not in data:  # a kernel before 5.7: no split of Pss by kind
            return self._held_by_status(pid)
        return total

    def _held_by_status(self, pid):
        data = self._read(f"{pid}/status")
        total = 0
        for line in data.splitlines():
            if line.startswith((b"RssAnon:", b"RssShmem:", b"VmSwap:")):
                total += int(line.split()[1]) * 1024
        return total

    def _children(self, pid):
        out = []
        try:
            tasks = self._listdir(f"{pid}/task")
        except OSError:
            return out
        for tid in tasks:
            try:
                out += [int(k) for k in self._read(f"{pid}/task/{tid}/children").split()]
            except (OSError, ValueError):
                pass
        return out

    def _listdir(self, rel):
        fd = os.open(rel, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=self.proc_fd)
        try:
            return os.listdir(fd)
        finally:
            os.close(fd)

    def _descendants(self):
        out, stack = [], [os.getpid()]
        while stack:
            kids = self._children(stack.pop())
            out += kids
            stack += kids
        return out

    def _memfds(self, pid, seen, mapped, budget=None):
        """Bytes of memfd files `pid` holds open that no process of the body maps."""
        used = 0
        try:
            fds = self._listdir(f"{pid}/fd")
        except OSError:
            return 0
        if budget is not None:
            budget.fds(len(fds))
        for fd in fds:
            try:
                if not os.readlink(f"{pid}/fd/{fd}", dir_fd=self.proc_fd).startswith("/memfd:"):
                    continue
                st = os.stat(f"{pid}/fd/{fd}", dir_fd=self.proc_fd)
            except OSError:
                continue
            key = (st.st_dev, st.st_ino)
            if stat.S_ISREG(st.st_mode) and key not in seen and key not in mapped:
                seen.add(key)
                used += st.st_blocks * 512
        return used

    def _mapped_memfds(self, pid):
        keys = set()
        try:
            data = self._read(f"{pid}/maps")
        except OSError:
            return keys
        for line in data.splitlines():
            parts = line.split(None, 5)
            if len(parts) == 6 and parts[5].startswith(b"/memfd:"):
                major, minor = (int(x, 16) for x in parts[3].split(b":"))
                keys.add((os.makedev(major, minor), int(parts[4])))
        return keys

    def measure(self, budget=None):
        """Bytes the body's processes hold now (see the module's doc); `budget` (diskcap.PassBudget) raises
        Unwatchable where the pass would take too long (hundreds of processes, thousands of descriptors each)."""
        budget = budget or PassBudget()
        pids = self._descendants()
        held, mapped, seen = 0, set(), set()
        for pid in pids:
            budget.time()
            try:
                held += self._held(pid)
            except (OSError, ValueError):
                continue  # gone between the listing and the look
            mapped |= self._mapped_memfds(pid)
        for pid in pids:
            held += self._memfds(pid, seen, mapped, budget)
        return held

    def over(self, pid):
        """Why the body must stop (text), or None."""
        try:
            held = self.measure()
        except Unwatchable as e:
            return str(e)
        if held > self.limit:
            return (f"its processes held {(held - self.baseline) >> 20} MiB of memory, more than "
                    f"{self.budget_mb} MiB (shared memory counts)")
        return None
