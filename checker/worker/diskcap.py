"""What a worker may write in its own dir: how many bytes and how many files (inodes).

What it is for: the worker's dir is the only place it may write. Two ways to bound it,
named in `grader.isolation`:

- with namespaces, `checker.worker.namespaces.build_root` makes that dir a
  tmpfs of its own (`size=`, `nr_inodes=`: the submission's copy plus
  `DISK_MB` and `DISK_FILES`). Past either, writing fails with ENOSPC in the
  student's own traceback. Exact; its pages are memory in the worker's cap.
  Named `disk-tmpfs-<N>MiB-<M>files`.
- without them (no mount allowed: a container without CAP_SYS_ADMIN, as on
  Gradescope), `Watch` runs in the worker's parent W, outside every wall of
  the body and with more privilege than it: every `INTERVAL_S` it counts the
  dir's files and allocated blocks, plus the files the body's processes keep
  open or mapped after unlinking them (`/proc/<pid>/fd`, `/proc/<pid>/maps`),
  and kills the body and all it started when either bound is passed. The
  body cannot hide a tree by moving it between folders (Landlock, without
  REFER there), cannot reserve blocks without writing them (`deny_fallocate`:
  fallocate fails with EOPNOTSUPP, and glibc's posix_fallocate then writes);
  an entry that vanishes while counted makes its folder be listed again and
  any new name in it counted, and a tree that keeps moving (a folder renamed
  again and again within its parent) ends the body after `UNSETTLED_PASSES`
  looks in a row. So the
  overshoot is what the body writes in one interval: at most INTERVAL_S
  times the rate it can fill the page cache (each file at most
  RLIMIT_FSIZE). A pass is bounded too (`PassBudget`): a body whose
  processes hold more than MAX_WATCHED_FDS descriptors between them, or whose
  pass takes longer than MAX_PASS_S (thousands of descriptors inherited by
  hundreds of sleeping forks made each pass read millions of links while the
  body wrote 2 GiB), is stopped: what the watch cannot count in time stops the
  body, as what it cannot count at all does. Named
  `disk-watch-<N>MiB-<M>files(every <T>s)`.

What it is not: a quota of the host's file system, or a bound on the space the
body takes outside its dir (Landlock forbids writing elsewhere; where
Landlock is missing that is named too).
"""

import ctypes
import errno
import os
import platform
import stat
import time

from checker.worker import namespaces

__all__ = ["DISK_MB", "DISK_FILES", "INTERVAL_S", "MAX_PASS_S", "MAX_WATCHED_FDS", "PassBudget", "UNSETTLED_PASSES",
           "Unwatchable", "Watch", "deny_fallocate", "tmpfs_name", "watch_name"]

DISK_MB = 256  # beyond the submission's own copy
DISK_FILES = 4096
INTERVAL_S = 0.05
UNSETTLED_PASSES = 3
RELISTS = 3
MAX_WATCHED_FDS = 1 << 15  # descriptors of all the body's processes together, read in one pass
MAX_PASS_S = 1.0


class Unwatchable(Exception):
    """A pass of a watch could not finish within its budget: the body must stop (the text says why)."""


class PassBudget:
    """One pass's budget: `fds(n)` after listing n descriptors of a process, `time()` between looks; each raises
    Unwatchable once the pass has read more than MAX_WATCHED_FDS descriptors or run longer than MAX_PASS_S."""

    def __init__(self, max_fds=None, max_s=None):
        self.max_fds = self.left = MAX_WATCHED_FDS if max_fds is None else max_fds
        self.max_s = MAX_PASS_S if max_s is None else max_s
        self.deadline = time.monotonic() + self.max_s

    def fds(self, n):
        self.left -= n
        if self.left < 0:
            raise Unwatchable(f"its processes hold more than {self.max_fds} open files between them, more than the "
                              "grader can watch")
        self.time()

    def time(self):
        if time.monotonic() > self.deadline:
            raise Unwatchable(f"its files and processes could not be counted within {self.max_s:g} s")


def tmpfs_name():
    return f"disk-tmpfs-{DISK_MB}MiB-{DISK_FILES}files"


def watch_name():
    return f"disk-watch-{DISK_MB}MiB-{DISK_FILES}files(every {INTERVAL_S:g}s)"


class Watch:
    """Measures the worker's dir and its processes' hidden files; `over(pid)` says why to stop, or None.

    Made in W before the fork (the baseline: what the dir holds, the deleted files W itself maps)."""

    def __init__(self, workdir, max_bytes=None, max_files=None, file_cap=None):
        self.workdir = workdir
        st = os.stat(workdir)
        self.dev = st.st_dev
        used, files, _ = self._tree()
        self.max_bytes = used + (DISK_MB << 20 if max_bytes is None else max_bytes)
        self.max_files = files + (DISK_FILES if max_files is None else max_files)
        self.file_cap = file_cap or (256 << 20)  # what a file the watch cannot measure may hold (RLIMIT_FSIZE)
        self.inherited = self._mapped_deleted(os.getpid())  # the zygote's, not the body's
        self.unsettled = 0

    def _tree(self):
        """(bytes allocated, entries, moved): a walk of the dir that never follows a link.

        An entry that vanishes between being listed and being looked at makes its folder be listed
        again (up to RELISTS times a walk): a name it did not hold before is walked too, and the walk
        counts as `moved` (a rename, not a removal), as it does when the folder itself keeps vanishing."""
        used = files = 0
        moved = False
        seen, relists = {}, {}
        stack = [("walk", self.workdir, None)]
        while stack:
            job, d, parent = stack.pop()
            if job == "relist":
                relists[d] = relists.get(d, 0) + 1
                if relists[d] > RELISTS:
                    moved = True
                    continue
            try:
                with os.scandir(d) as it:
                    entries = list(it)
            except FileNotFoundError:
                if d == self.workdir:
                    raise
                if parent is not None:
                    stack.append(("relist", parent, None))
                else:
                    moved = True
                continue
            names = seen.setdefault(d, set())
            new = [e for e in entries if e.name not in names]
            if job == "relist" and new:
                moved = True
            for e in new:
                names.add(e.name)
                files += 1
                try:
                    st = e.stat(follow_symlinks=False)
                except FileNotFoundError:
                    stack.append(("relist", d, None))
                    continue
                used += st.st_blocks * 512
                if stat.S_ISDIR(st.st_mode):
                    stack.append(("walk", e.path, d))
            if files > getattr(self, "max_files", files) or used > getattr(self, "max_bytes", used):
                break
        return used, files, moved

    def over(self, pid):
        """Why the body must stop (text), or None. Anything unmeasurable stops it too."""
        budget = PassBudget()
        try:
            used, files, moved = self._tree()
            budget.time()
            pids = _descendants(os.getpid())
            used += self._hidden(pids, budget)
        except OSError as e:
            return f"its files could not be counted ({e.strerror or e})"
        except Unwatchable as e:
            return str(e)
        self.unsettled = self.unsettled + 1 if moved else 0
        if files > self.max_files:
            return f"more than {self.max_files} files and folders"
        if used > self.max_bytes:
            return f"more than {self.max_bytes >> 20} MiB"
        if self.unsettled >= UNSETTLED_PASSES:
            return "its files kept moving while they were counted"
        return None

    def _hidden(self, pids, budget=None):
        """Bytes of unlinked files the body's processes hold open or mapped (invisible to the walk); `budget`
        (a PassBudget) raises Unwatchable where they hold too many descriptors to read in one pass."""
        budget = budget or PassBudget()
        seen, used, unknown = set(), 0, set()
        for pid in pids:
            fd_dir = f"/proc/{pid}/fd"
            try:
                fds = os.listdir(fd_dir)
            except OSError:
                continue  # gone
            budget.fds(len(fds))
            for fd in fds:
                try:
                    if not os.readlink(f"{fd_dir}/{fd}").endswith(" (deleted)"):
                        continue
                    st = os.stat(f"{fd_dir}/{fd}")
                except OSError:
                    continue
                if stat.S_ISREG(st.st_mode) and (st.st_dev, st.st_ino) not in seen:
                    seen.add((st.st_dev, st.st_ino))
                    used += st.st_blocks * 512
            for key in self._mapped_deleted(pid) - self.inherited:
                if key not in seen:
                    unknown.add(key)
        # a file only mapped any more: its size cannot be read without CAP_SYS_ADMIN; it is at most file_cap
        return used + len(unknown) * self.file_cap

    def _mapped_deleted(self, pid):
        """(dev, inode) of unlinked files of the dir's file system that `pid` maps."""
        try:
            with open(f"/proc/{pid}/maps", "rb") as f:
                data = f.read()
        except OSError:
            return set()
        out = set()
        if b"(deleted)" not in data:
            return out
        for line in data.splitlines():
            if not line.endswith(b" (deleted)"):
                continue
            parts = line.split(None, 5)
            try:
                major, minor = (int(x, 16) for x in parts[3].split(b":"))
                ino = int(parts[4])
            except (ValueError, IndexError):
                continue
            if os.makedev(major, minor) == self.dev and ino:
                out.add((self.dev, ino))
        return out


def _descendants(pid):
    """Every process below `pid` (a child subreaper: the body's orphans stay below it)."""
    out, stack = [], [pid]
    while stack:
        kids = namespaces.children(stack.pop())
        out += kids
        stack += kids
    return out


# fallocate's number per machine
_FALLOCATE = {"x86_64": (0xC000003E, 285), "aarch64": (0xC00000B7, 47), "arm64": (0xC00000B7, 47)}


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def deny_fallocate():
    """A seccomp filter: fallocate() fails with EOPNOTSUPP (blocks reserved without writing them would pass
    the watch between two looks by gigabytes). Other calls and other ABIs are left to `seccomp`."""
    arch = _FALLOCATE.get(platform.machine())
    if arch is None:
        raise OSError(errno.ENOSYS, f"no fallocate filter for {platform.machine()}")
    prog = [(0x20, 0, 0, 4), (0x15, 0, 3, arch[0]),     # A = arch; another ABI: allow (seccomp's filter kills it)
            (0x20, 0, 0, 0), (0x15, 0, 1, arch[1]),     # A = nr; fallocate: refuse
            (0x06, 0, 0, 0x00050000 | errno.EOPNOTSUPP),
            (0x06, 0, 0, 0x7FFF0000)]
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # no_new_privs, which seccomp requires
        raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp(fallocate)")
