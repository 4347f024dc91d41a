"""Linux namespaces for a worker: its own users, mounts, network, PIDs, IPC and host name.

What it is for: the strongest walls a worker gets, put up before any student
code runs, the way bubblewrap and nsjail do it:

- `unshare_all(uid)` moves the calling process into new mount, network, IPC,
  UTS and PID namespaces. As root it needs nothing more (the worker drops to
  an unprivileged uid later); as an ordinary user it first makes a user
  namespace in which the grading user's uid is seen as `uid` (the worker's
  own, see `checker.worker.isolation.worker_ids`), so the mounts below are
  allowed without any privilege on the host.
- `fork_init()` forks the worker's real body as PID 1 of the new PID
  namespace; the parent stays outside, waits, and exits as the child did
  (same code, same signal). When PID 1 dies, the kernel kills every process
  left in its namespace: a worker's whole process tree dies with it, by
  construction, not by a sweep that races a fork chain. Without namespaces,
  `fork_init(watch=...)` makes the same pair, the parent a child subreaper
  that watches the child and kills all below it when it ends.
- `build_root(...)` makes a new root file system on a tmpfs holding only
  read-only binds of the trees Python and its packages need (never the
  secret trees; wherever they live: a venv under /tmp, /var/tmp or /dev/shm
  is bound alone, after the new /dev for one there), a handful of files of /etc, a minimal /dev, a fresh /proc
  of the new PID namespace, and the worker's own directory, then pivots into
  it. That directory is a tmpfs of its own holding a copy of what the trusted
  side put there, bounded in bytes and files (`checker.worker.diskcap`); only
  its folder `SCRATCH` is the worker's to write: every other folder in it (the
  submission's copy, whose folders are on `sys.path`) is a read-only bind, so
  a module the code writes while it runs is never where its imports look.
  Everything else of the host (/root, /home, /etc/shadow, /tmp, the tmux and
  X sockets in it, other submissions, OUT) does not exist for the worker. The
  new network namespace has only a loopback that is down: no TCP or UDP
  anywhere, and abstract unix sockets are per namespace.
- `drop_privileges(uid, gid)` ends with an unprivileged uid, no capabilities,
  an empty bounding set and `no_new_privs`.

What it is not: a policy. `checker.worker.isolation` decides which layers to
use and names in the scorecard the ones that could not be put up (a
container without CAP_SYS_ADMIN, a kernel with user namespaces disabled).
"""

import ctypes
import errno
import glob
import os
import platform
import signal

__all__ = ["NamespaceError", "unshare_all", "fork_init", "build_root", "drop_privileges", "children", "kill_uid",
           "uid_processes", "WORKER_UIDS", "NOBODY",
           "SCRATCH"]

NOBODY = 65534  # the default uid of the functions below; a worker passes its own (isolation.worker_ids)
SCRATCH = "scratch"  # the one folder of a worker's dir it may write (its cwd, HOME and TMPDIR)

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC = 1, 2, 4, 8
MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 32, 4096, 16384, 1 << 18
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
MNT_DETACH = 2
_PR_SET_PDEATHSIG, _PR_SET_DUMPABLE, _PR_SET_NO_NEW_PRIVS, _PR_SET_CHILD_SUBREAPER = 1, 4, 38, 36
_PR_GET_PDEATHSIG = 2
_parent_pipe = None  # fork_init's child: the read end of a pipe that is readable once the parent died
_PR_CAPBSET_DROP, _PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL = 24, 47, 4
_SYS_PIVOT_ROOT = {"x86_64": 155, "aarch64": 41, "arm64": 41, "ppc64le": 203, "s390x": 217}

# files of /etc that Python, the dynamic loader and common packages read; nothing else of /etc is there
ETC_ALLOW = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime", "timezone",
             "nsswitch.conf", "host.conf", "mime.types", "python3*", "matplotlibrc", "fonts")
DEVICES = ("null", "zero", "full", "random", "urandom")
SHM_SIZE = "64m"


class NamespaceError(OSError):
    """A namespace or mount step failed; the message names the step."""


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def _check(ret, what):
    if ret != 0:
        e = ctypes.get_errno()
        raise NamespaceError(e, f"{what}: {os.strerror(e)}")


def _write(path, text):
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def unshare_all(uid=NOBODY, gid=NOBODY):
    """New mount, network, IPC, UTS and PID namespaces (and a user namespace unless we are root).

    Returns "root" or "userns": how the namespaces were made. Raises NamespaceError when the
    kernel or a container refuses (the caller falls back to the other walls)."""
    libc = _libc()
    flags = CLONE_NEWNS | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS | CLONE_NEWPID
    if os.geteuid() == 0:
        _check(libc.unshare(flags), "unshare(mount, net, ipc, uts, pid)")
        return "root"
    outer_uid, outer_gid = os.geteuid(), os.getegid()
    _check(libc.unshare(flags | CLONE_NEWUSER), "unshare(user, mount, net, ipc, uts, pid)")
    try:
        _write("/proc/self/setgroups", "deny")
        _write("/proc/self/uid_map", f"{uid} {outer_uid} 1")
        _write("/proc/self/gid_map", f"{gid} {outer_gid} 1")
    except OSError as e:
        raise NamespaceError(e.errno, f"user namespace id maps: {e.strerror}") from e
    return "userns"


def fork_init(watch=None, interval=0.05, keep=(), uid=None):
    """Fork; the child returns (PID 1 of the new PID namespace, if one was made). The parent never returns.

    The parent waits for the child and exits as it did, so whoever watches the worker's pid (the
    zygote, the trusted side) sees the child's own end (an exit code, SIGKILL for memory, SIGSEGV).
    If the parent is killed first, the child gets SIGKILL (PR_SET_PDEATHSIG), and with it every
    process of the namespace. With `watch` (a callable(child pid) -> reason or None), the parent is
    a child subreaper that calls it every `interval` seconds; on a reason it kills the child and all
    below it and ends by SIGXFSZ (a reason given as (text, signal): by that signal). Every process below
    it is killed when the child ends. `keep`: fds the parent keeps (the watch's own), every other is closed; the child closes them.
    `uid` (a worker without a PID namespace): every process of the worker's own uid is killed then too (`kill_uid`)."""
    r, w = os.pipe()
    if watch is not None:
        ctypes.CDLL(None).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    pid = os.fork()
    if pid == 0:
        os.close(w)
        for fd in keep:  # the watcher's (a /proc of the grader's), never the body's
            os.close(fd)
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        import select
        if select.select([r], [], [], 0)[0]:  # the parent died before PDEATHSIG was armed
            os._exit(0)
        global _parent_pipe
        _parent_pipe = r  # asked again when a uid change cleared PDEATHSIG (drop_privileges)
        return
    os.close(r)
    for fd in range(3, 1024):  # hold nothing of the conversation: only the child speaks
        if fd != w and fd not in keep:
            try:
                os.close(fd)
            except OSError:
                pass
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(sig, signal.SIG_DFL)
    status = _wait(pid) if watch is None else _watch(pid, watch, interval, uid)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            signal.signal(sig, signal.SIG_DFL)
        except (OSError, ValueError):
            pass
        os.kill(os.getpid(), sig)
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(os.WEXITSTATUS(status) if os.WIFEXITED(status) else 1)


def _wait(pid):
    while True:
        try:
            return os.waitpid(pid, 0)[1]
        except InterruptedError:
            continue
        except ChildProcessError:
            os._exit(0)


def _watch(pid, watch, interval, uid=None):
    """Reap and watch until the child ends (its status), or kill everything below on a reason."""
    import select
    try:
        pidfd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        pidfd = None
    while True:
        while True:
            try:
                done, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return 0
            if done == pid:
                _kill_below(uid)
                return status
            if done == 0:
                break
        try:
            reason = watch(pid)
        except Exception as e:  # noqa: BLE001 - a watch that cannot look stops the child
            reason = f"the watch failed: {e}"
        if reason:
            _kill_below(uid)
            # the status of a process ended by that signal (SIGXFSZ: the disk watch's)
            return reason[1] if isinstance(reason, tuple) else signal.SIGXFSZ
        if pidfd is not None:
            select.select([pidfd], [], [], interval)
        else:
            import time
            time.sleep(interval)


def children(pid):
    """The pids of `pid`'s children: /proc/<pid>/task/<tid>/children, or a look at every process's parent
    where the kernel has no such file (CONFIG_PROC_CHILDREN off)."""
    tasks = _listdir(f"/proc/{pid}/task")
    if tasks and os.path.exists(f"/proc/{pid}/task/{tasks[0]}/children"):
        out = []
        for tid in tasks:
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out += [int(k) for k in f.read().split()]
            except (OSError, ValueError):
                pass
        return out
    out = []
    for p in _listdir("/proc"):
        if p.isdigit():
            try:
                with open(f"/proc/{p}/stat") as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == pid:
                        out.append(int(p))
            except (OSError, ValueError, IndexError):
                pass
    return out


WORKER_UIDS = 1 << 30  # a worker's own uid is at least this (`checker.worker.isolation.worker_ids`)


def uid_processes(uid):
    """The pids of the live (not zombie) processes whose real, effective or saved uid is `uid` (this /proc)."""
    out = []
    for p in _listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/status") as f:
                text = f.read()
        except OSError:
            continue
        state, uids = None, []
        for line in text.splitlines():
            if line.startswith("State:"):
                state = line.split()[1:2]
            elif line.startswith("Uid:"):
                uids = line.split()[1:4]
        if str(uid) in uids and state not in (["Z"], ["X"]):
            out.append(int(p))
    return out


def kill_uid(uid, seconds=5.0):
    """SIGKILL every process of the worker's own uid `uid` at once; True when none is left.

    Without a PID namespace nothing else ends a worker's whole tree: killed level by level (its parent's
    children, then theirs, re-parented), a chain that forks and calls setsid() at every level outruns the
    killing and outlives the batch (an attacker's probe, Gradescope-shaped: no cgroup either). A child of
    this process takes a uid of its own as real and saved uid and `uid` as effective uid, and calls
    kill(-1, SIGKILL): the kernel signals every process that may be signalled, under its task list lock,
    so no fork slips between (a fork in flight fails: its parent has a fatal signal pending). Those are
    exactly the processes of `uid` (and of the killer's own uid, which no process has); no process of `uid`
    may signal the killer (its real and saved uids are not theirs); with a non-zero effective uid it has
    no capability left, so nothing of root's is signalled. Repeated until /proc shows none (or `seconds`).
    Only for root (CAP_SETUID, in the watcher W and the zygote), and only for a worker's uid."""
    import time
    if os.geteuid() != 0 or not isinstance(uid, int) or uid < WORKER_UIDS:
        return True  # (a grader that is not root: its workers have a PID namespace, or share its uid)
    killer_uid = WORKER_UIDS - 1 - (uid - WORKER_UIDS) % WORKER_UIDS  # no worker's, no host account's
    end = time.monotonic() + seconds
    while uid_processes(uid):
        if time.monotonic() > end:
            return False
        pid = os.fork()
        if pid == 0:
            try:
                os.setresuid(killer_uid, uid, killer_uid)
                os.kill(-1, signal.SIGKILL)
            finally:
                os._exit(0)
        while True:
            try:
                os.waitpid(pid, 0)
                break
            except InterruptedError:
                continue
            except ChildProcessError:
                break
    return True


def _kill_below(uid=None):
    """Kill and reap every process below this one (a subreaper: the orphans of its child are its own); with
    `uid` (a worker without a PID namespace), every process of that uid first (`kill_uid`)."""
    if uid is not None:
        kill_uid(uid)
    for _ in range(100):
        kids = children(os.getpid())
        if not kids:
            try:
                while os.waitpid(-1, os.WNOHANG)[0]:
                    pass
            except ChildProcessError:
                pass
            return
        for k in kids:
            try:
                os.kill(k, signal.SIGKILL)
            except OSError:
                pass
        for _k in kids:
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                break


def _mount(src, target, fstype, flags, data=None):
    libc = _libc()
    ret = libc.mount(None if src is None else src.encode(), target.encode(),
                     None if fstype is None else fstype.encode(), ctypes.c_ulong(flags),
                     None if data is None else data.encode())
    _check(ret, f"mount {src or fstype} on {target}")


def _locked_flags(path):
    """Mount flags of the mount holding `path` that a remount inside a user namespace must keep."""
    f = os.statvfs(path).f_flag
    out = 0
    for st, ms in ((os.ST_NOSUID, MS_NOSUID), (os.ST_NODEV, MS_NODEV), (os.ST_NOEXEC, MS_NOEXEC),
                   (os.ST_NOATIME, MS_NOATIME), (os.ST_NODIRATIME, MS_NODIRATIME),
                   (getattr(os, "ST_RELATIME", 4096), MS_RELATIME)):
        if f & st:
            out |= ms
    return out


def _bind(src, target, writable=False, recursive=True):
    """Bind `src` at `target` (created as a dir or an empty file), read-only unless `writable`."""
    if os.path.isdir(src):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            os.close(os.open(target, os.O_WRONLY | os.O_CREAT, 0o644))
    _mount(src, target, None, MS_BIND | (MS_REC if recursive else 0))
    flags = MS_REMOUNT | MS_BIND | MS_NOSUID | _locked_flags(target) | (0 if writable else MS_RDONLY)
    _mount(None, target, None, flags)


def _mirror_links(path, newroot):
    """Recreate in `newroot` the symbolic links along `path` (/lib -> usr/lib, a venv's python)."""
    parts = [p for p in path.split("/") if p]
    cur = "/"
    for part in parts:
        nxt = os.path.join(cur, part)
        if os.path.islink(nxt):
            inside = newroot + nxt
            if not os.path.lexists(inside):
                os.makedirs(os.path.dirname(inside), exist_ok=True)
                os.symlink(os.readlink(nxt), inside)
            _mirror_links(os.path.realpath(nxt), newroot)
            cur = os.path.realpath(nxt)
        else:
            cur = nxt


def build_root(workdir, read_roots, link_paths=(), passwd_uid=NOBODY, passwd_gid=NOBODY, disk=None, owner=None):
    """Pivot into a new root holding `read_roots` (read-only), `workdir` (read-write) and little else.

    `read_roots` are real paths (directories or files) with the secret trees already carved out;
    `link_paths` are paths as Python names them (a venv's, /lib), whose symbolic links are
    recreated. `disk` = (bytes, files): `workdir` becomes a tmpfs of its own holding a copy of what
    it held, with room for that much more (`owner` = (uid, gid) then owns its `SCRATCH` folder; every
    other folder in it is bound read-only on itself); without it, the host's dir is bound read-write.
    Returns the list of what was left out for want of support
    (e.g. "proc")."""
    skipped = []
    work_fd = os.open(workdir, os.O_PATH | os.O_CLOEXEC)
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    # the new root is a tmpfs laid over the worker's own dir: nothing of it is left on the host
    newroot = workdir
    _mount("tmpfs", newroot, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=16m")
    # the Python trees, wherever they are (a venv under /tmp, /var/tmp or /home is there alone, nothing else
    # of its folder: `read_roots` holds neither a temp folder nor a folder holding one)
    for path in read_roots:
        if (path in ("/", "/etc", "/dev", "/proc", "/tmp", "/sys") or path.startswith(("/dev/", "/proc/"))
                or not os.path.exists(path)):
            continue
        _bind(path, newroot + path)
    for path in link_paths:
        _mirror_links(path, newroot)
    os.makedirs(newroot + "/etc", exist_ok=True)
    for pattern in ETC_ALLOW:
        for path in glob.glob(os.path.join("/etc", pattern)):
            real = os.path.realpath(path)
            if os.path.islink(path):
                os.symlink(os.readlink(path), newroot + path)
                if os.path.exists(real) and not os.path.exists(newroot + real):
                    _bind(real, newroot + real)
            elif os.path.exists(path):
                _bind(path, newroot + path)
    with open(newroot + "/etc/passwd", "w") as f:
        f.write(f"nobody:x:{passwd_uid}:{passwd_gid}:nobody:/nonexistent:/usr/sbin/nologin\n")
    with open(newroot + "/etc/group", "w") as f:
        f.write(f"nogroup:x:{passwd_gid}:\n")
    with open(newroot + "/etc/hosts", "w") as f:
        f.write("127.0.0.1 localhost\n")
    # /dev: the harmless devices, the GPU's, and a small private /dev/shm
    os.makedirs(newroot + "/dev", exist_ok=True)
    _mount("tmpfs", newroot + "/dev", "tmpfs", MS_NOSUID, "mode=0755,size=64k")
    for name in (*DEVICES, *[d for d in _listdir("/dev") if d.startswith("nvidia")], "dri"):
        if os.path.exists("/dev/" + name):
            _bind("/dev/" + name, newroot + "/dev/" + name, writable=True)
    os.makedirs(newroot + "/dev/shm")
    _mount("tmpfs", newroot + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, f"mode=1777,size={SHM_SIZE}")
    for name, target in (("fd", "/proc/self/fd"), ("stdin", "/proc/self/fd/0"),
                         ("stdout", "/proc/self/fd/1"), ("stderr", "/proc/self/fd/2")):
        os.symlink(target, newroot + "/dev/" + name)
    os.makedirs(newroot + "/proc")
    try:  # a /proc of this PID namespace: the worker sees its own processes only
        _mount("proc", newroot + "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    except NamespaceError:
        skipped.append("proc")
    if os.path.isdir("/sys/devices/system/cpu"):  # CPU counts and caches, for BLAS and torch
        _bind("/sys/devices/system/cpu", newroot + "/sys/devices/system/cpu")
    if any(d.startswith("nvidia") for d in _listdir("/dev")) and os.path.isdir("/sys"):
        _bind("/sys", newroot + "/sys")
    # a Python tree under /dev (a venv in /dev/shm) once the fresh /dev and /dev/shm are there, not under them
    for path in read_roots:
        if path.startswith("/dev/") and path != "/dev/shm" and os.path.exists(path):
            _bind(path, newroot + path)
    for path in link_paths:
        if path.startswith("/dev/"):
            _mirror_links(path, newroot)
    os.makedirs(newroot + "/tmp", mode=0o755, exist_ok=True)
    if disk:
        _own_dir(f"/proc/self/fd/{work_fd}", newroot + workdir, disk, owner)
    else:
        _bind(f"/proc/self/fd/{work_fd}", newroot + workdir, writable=True, recursive=False)
    os.close(work_fd)
    os.makedirs(newroot + "/.old")
    pivot = _SYS_PIVOT_ROOT.get(platform.machine())
    if pivot is None:
        raise NamespaceError(errno.ENOSYS, f"pivot_root: unknown system call number on {platform.machine()}")
    _check(_libc().syscall(pivot, newroot.encode(), (newroot + "/.old").encode()), "pivot_root")
    os.chdir("/")
    _check(_libc().umount2(b"/.old", MNT_DETACH), "umount the old root")
    os.rmdir("/.old")
    _mount(None, "/", None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)
    os.chdir(workdir)
    return skipped


def _own_dir(src, target, disk, owner):
    """`target` as a tmpfs bounded in bytes and files (inodes), holding a copy of the tree at `src`.

    The bound is the copy's own size plus `disk` = (bytes, files): past it, writing fails with
    ENOSPC ("No space left on device"), in the student's own traceback. Its pages are memory,
    charged to the worker's memory cgroup like any other. Only folders and regular files are
    copied (the trusted side put nothing else there)."""
    entries = []  # (relative path, is_dir, size)
    stack = [""]
    while stack:
        rel = stack.pop()
        with os.scandir(os.path.join(src, rel) if rel else src) as it:
            for e in it:
                path = os.path.join(rel, e.name)
                if e.is_dir(follow_symlinks=False):
                    entries.append((path, True, 0))
                    stack.append(path)
                elif e.is_file(follow_symlinks=False):
                    entries.append((path, False, e.stat(follow_symlinks=False).st_size))
    pages = sum(-(-size // 4096) * 4096 for _, _, size in entries)
    os.makedirs(target, exist_ok=True)
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV,
           f"mode=0755,size={pages + int(disk[0])},nr_inodes={len(entries) + int(disk[1]) + 1}")
    for rel, is_dir, _ in entries:  # parents come before their children
        dst = os.path.join(target, rel)
        if is_dir:
            os.mkdir(dst, 0o755)
        else:
            with open(os.path.join(src, rel), "rb") as fi, open(dst, "wb") as fo:
                while True:
                    chunk = fi.read(1 << 20)
                    if not chunk:
                        break
                    fo.write(chunk)
    if owner:  # the scratch folder is the worker's; the rest stays root's (a root grader)
        for rel in [rel for rel, _, _ in entries if rel == SCRATCH or rel.startswith(SCRATCH + os.sep)]:
            os.lchown(os.path.join(target, rel), *owner)
    # every other folder (the submission's copy, on sys.path): read-only, and a mount point, so it can be
    # neither written nor renamed away and replaced (EBUSY), even by a uid that owns it (a user namespace)
    for rel, is_dir, _ in entries:
        if is_dir and os.sep not in rel and rel != SCRATCH:
            _bind(os.path.join(target, rel), os.path.join(target, rel), recursive=False)


def drop_privileges(uid=NOBODY, gid=NOBODY):
    """End as an unprivileged uid with no capabilities and no_new_privs (no set-uid way back), and still
    dying with the parent (PR_SET_PDEATHSIG, which the change of uid cleared, is set again)."""
    libc = _libc()
    ppid = os.getppid()
    if os.geteuid() == 0 and not _in_user_namespace():
        for cap in range(64):
            libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)  # every capability goes with uid 0
        libc.prctl(_PR_SET_DUMPABLE, 1, 0, 0, 0)  # /proc/self stays the worker's own
    else:  # inside a user namespace: we already are `uid` there; give up the namespace's capabilities
        for cap in range(64):
            libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0)
        libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
        _clear_capabilities(libc)
    _check(libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "prctl(NO_NEW_PRIVS)")
    if _capabilities() != 0 or os.geteuid() != uid:
        raise NamespaceError(errno.EPERM, "privileges were not dropped")
    _rearm_parent_death(libc, ppid)


def _rearm_parent_death(libc, ppid):
    """A change of uid clears PR_SET_PDEATHSIG: without it, a body that called setsid() ran on after
    its parent was killed, until the zygote's sweep. Set it again, check it is set, and go at once
    if the parent died before it was (its pipe is readable; or, outside a PID namespace, a new ppid)."""
    global _parent_pipe
    _check(libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "prctl(PDEATHSIG)")
    sig = ctypes.c_int(0)
    _check(libc.prctl(_PR_GET_PDEATHSIG, ctypes.byref(sig), 0, 0, 0), "prctl(GET_PDEATHSIG)")
    if sig.value != signal.SIGKILL:
        raise NamespaceError(errno.EPERM, f"the parent-death signal is {sig.value}, not SIGKILL")
    gone = os.getppid() != ppid
    if _parent_pipe is not None:
        import select
        gone = gone or bool(select.select([_parent_pipe], [], [], 0)[0])
        os.close(_parent_pipe)
        _parent_pipe = None
    if gone:
        os._exit(0)


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32),
                ("inheritable", ctypes.c_uint32)]


def _clear_capabilities(libc):
    hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
    _check(libc.capset(ctypes.byref(hdr), ctypes.byref(data)), "capset")


def _capabilities():
    """The effective capability mask of this process, from /proc/self/status (0 when unreadable)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("CapEff:"):
                    return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def _in_user_namespace():
    try:
        with open("/proc/self/uid_map") as f:
            return f.read().split() != ["0", "0", "4294967295"]
    except OSError:
        return False


def _listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []
