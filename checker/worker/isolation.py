"""The walls a worker puts up before it runs student code, strongest first (Linux).

What it is for: called once in a freshly forked worker. In order:

1. resource limits: no core dumps, files up to 256 MiB, RLIMIT_DATA;
2. a cap on all of the worker's memory (`checker.worker.memory`: a cgroup
   where the grader can make one, else RLIMIT_AS, each process's own, with a
   watch of their sum from the worker's parent, `checker.worker.memwatch`, which
   alone caps it where RLIMIT_AS cannot, as with a GPU and no delegated
   cgroup), shared mappings included, and with a GPU a
   share of its memory for torch's allocator (`checker.worker.gpumem`),
   and on its tasks (processes and threads: the pids controller of cgroup v2
   or v1, else RLIMIT_NPROC of its uid once that is set, below); where the cpu
   controller of cgroup v2 or v1 can be had, one CPU share for all its
   processes (`memory.cap_cpu`; without it they share one session's
   autogroup, seccomp refusing setsid);
3. namespaces (`checker.worker.namespaces`): new mount, network, IPC, UTS
   and PID namespaces (plus a user namespace when the grader is not root);
   the worker's body runs as PID 1 of its PID namespace, so its whole process
   tree dies with it; it sees a new root holding only the Python trees
   (read-only, secrets carved out), a few files of /etc, a minimal /dev and
   its own dir, a tmpfs bounded in bytes and files (`checker.worker.diskcap`);
   it has no network at all. Without namespaces the worker's parent stays
   outside every wall below, watches the worker's dir (the same bounds) and
   kills all below it past them, or when the worker ends: every process of
   the worker's own uid at once (`namespaces.kill_uid`; the zygote does the
   same when it reaps a worker killed from outside);
4. identity: a uid and gid of the worker's own (`worker_ids`: 2^30 plus the
   worker's pid, unique among the workers alive, owning no file of the host
   and in no passwd), with no capabilities and `no_new_privs`, whether the
   grader is root or an ordinary user (then inside its user namespace). Two
   workers graded at once, of two students or the oracle beside the main one,
   can neither signal, trace nor read each other's /proc/<pid>/mem or environ,
   even without namespaces and Landlock, and do not share RLIMIT_NPROC;
   the worker's dir stays the grader's: only its folder `SCRATCH` (a copy of
   the submission, its cwd, HOME and TMPDIR) is the worker's to write, and
   the submission's copy whose folders are on `sys.path` is read-only to it
   (a read-only bind with namespaces; else owned by the grader, readable by
   the worker's group only; Landlock, where there is one, writes only
   `SCRATCH` too), so a module the code writes while it runs is never where
   its imports look (`tidy_sys_path` takes '' and the zygote's dir off);
5. Landlock, on top, where the kernel has it (files, TCP, signals); without
   a PID namespace, of the host's /proc only the worker's own folder and the
   entries that are no process's (`landlock.own_proc`: anyone may read a
   process's command line, a grader's `--seed` among them). A folder of the
   Python trees split around a secret (`landlock.carved_read_folders`: a
   non-editable install's site-packages) may be listed with namespaces, where
   it holds only what was bound; without, Python imports from its listing made
   before the walls (`_prime_import_caches`). Then the worker checks that every
   tree of its Python opens and a module of each `sys.path` folder is found
   again: where not, `python-trees-failed(...)` names the gap, so a correct
   submission's failed import is seen as the grader's;
6. a seccomp filter (`checker.worker.seccomp`) refusing io_uring, System V
   IPC and message queues, ptrace and other processes' memory, keyrings,
   new namespaces and mounts, and setsid (a session of its own is a CPU
   share of its own on a host with sched_autogroup); where no network namespace could be made, every
   new socket too (no TCP, UDP, or unix sockets of the host).

Where a GPU is present (/dev/nvidia*), two things CUDA's cuInit needs are let
through, each failing it with error 304 otherwise (seen on an H200): writing
existing files under /proc (its threads' names; the unique uid keeps it to
the worker's own processes) and, without namespaces, `socket(AF_UNIX,
SOCK_SEQPACKET)`. RLIMIT_DATA is the budget on top of what the worker already
holds, so a CUDA torch's larger import leaves the same budget.

Every layer that could not be put up is named in the returned list
(`namespaces-unavailable(...)`, `landlock-unavailable`, ...), which the scorecard keeps
as `grader.isolation` and `grade` prints once per batch, so a TA knows how
protected a run was.

Without namespaces (a container that forbids them) a worker of a root
grader never keeps uid 0, which owns every root file even without
capabilities, and never runs without the seccomp filter, its only wall
before the host's network and IPC: where nobody cannot reach this Python (a
venv under /root, mode 0700) or the filter cannot be installed,
`apply_isolation` raises `WallsRefused`, whose message says what to do, and
the worker answers every load with it instead of running code.

What it is not: a container runtime.
"""

import ctypes
import glob
import os
import resource
import signal
import sys

from checker.walk import walk
from checker.worker import diskcap, gpumem, landlock, memory, memwatch, namespaces, seccomp

__all__ = ["apply_isolation", "landlock_abi", "allowed_read_roots", "WEAK_MARKS", "WallsRefused", "worker_ids",
           "scratch_of", "UID_BASE"]

landlock_abi = landlock.landlock_abi
allowed_read_roots = landlock.allowed_read_roots

UID_BASE = namespaces.WORKER_UIDS  # a worker's uid and gid: this plus its pid (pid_max is at most 2^22)


def worker_ids(pid=None):
    """(uid, gid) of the worker whose outer process is `pid` (this one): unique among the workers alive,
    since that process lives as long as the worker's body (which dies with it, PR_SET_PDEATHSIG) and no
    two processes alive share a pid; no file of the host is owned by it and no passwd names it."""
    n = UID_BASE + (os.getpid() if pid is None else pid)
    return n, n


def scratch_of(workdir, path):
    """The folder of the worker's scratch copy that stands for `path` (a folder or file of `workdir`):
    the cwd the code runs in, where it may write, and which is not on `sys.path`."""
    rel = os.path.relpath(path if os.path.isdir(path) else os.path.dirname(path), workdir)
    return os.path.normpath(os.path.join(workdir, namespaces.SCRATCH, rel))


def tidy_sys_path(workdir):
    """Take off `sys.path` what names the current folder ('' or '.') and the zygote's private dir (it holds
    no module: what came from it is imported already), so nothing the code can write is on it."""
    own = [os.path.realpath(p) for p in _zygote_dirs()]
    sys.path[:] = [p for p in sys.path if p not in ("", ".") and os.path.realpath(p) not in own
                   and not os.path.realpath(p).startswith(os.path.join(os.path.realpath(workdir), namespaces.SCRATCH))]


def _make_scratch(workdir):
    """Copy every folder of the worker's dir (the submission's copy) into its `SCRATCH` folder."""
    import shutil
    scratch = os.path.join(workdir, namespaces.SCRATCH)
    os.makedirs(scratch, exist_ok=True)
    for name in os.listdir(workdir):
        src = os.path.join(workdir, name)
        if name != namespaces.SCRATCH and os.path.isdir(src) and not os.path.islink(src):
            shutil.copytree(src, os.path.join(scratch, name), symlinks=True, dirs_exist_ok=True)
    return scratch


# words in `grader.isolation` that mean a wall was missing (grade prints them once per batch)
WEAK_MARKS = ("unavailable", "failed", "uid-0-kept", "no-memory-cap", "no-task-cap", "code-writable")


def _set_limit(which, value):
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
        return True
    except (ValueError, OSError):
        return False


def _gpu_devices():
    return [os.path.join("/dev", d) for d in namespaces._listdir("/dev") if d.startswith("nvidia")]


def _link_paths():
    """Paths as Python names them, whose symbolic links the new root must hold too."""
    paths = ["/lib", "/lib64", "/lib32", "/bin", "/sbin", sys.executable, sys.prefix, sys.base_prefix,
             sys.exec_prefix, *[p for p in sys.path if p]]
    return [p for p in paths if os.path.lexists(p)]


def apply_isolation(workdir, secrets, memory_mb=4096, cgroup_parent=None, use_namespaces=True):
    """Apply every available wall to the current process; return the list of walls (and gaps).

    May fork: with namespaces, the caller continues in the child (PID 1 of the new PID namespace)
    and the original process only waits and exits as the child does."""
    applied = []
    uid, gid = worker_ids()  # before any fork: this process lives as long as the worker
    scratch = _make_scratch(workdir)
    if _set_limit(resource.RLIMIT_CORE, 0):
        applied.append("no-core-dumps")
    if _set_limit(resource.RLIMIT_FSIZE, 256 * 1024 * 1024):
        applied.append("file-size-256MiB")
    if memory_mb and _set_limit(resource.RLIMIT_DATA, memory.data_limit(memory_mb)):
        applied.append(f"memory-{memory_mb}MiB")
    gpu = bool(_gpu_devices())
    cap = memory.cap_memory(memory_mb, cgroup_parent, gpu=gpu) if memory_mb else None
    mem_watch = watched = None
    # no cgroup, no RLIMIT_AS (a GPU), or RLIMIT_AS, which is each process's own (a fork has one of its own, so
    # four children of 1.5 GiB held 6 GiB on a 4 GiB budget): the sum, watched from the parent (memwatch)
    if memory_mb and (not cap or cap.startswith("address-space-")):
        try:
            mem_watch = memwatch.Watch(memory_mb)
            watched = memwatch.watch_name(memory_mb, diskcap.INTERVAL_S)
        except OSError as e:
            watched = (f"memory-watch-failed(each process's memory capped on its own: {e.strerror or e})" if cap
                       else f"no-memory-cap(shared memory not counted; the watch failed: {e.strerror or e})")
    applied.append(cap or watched or "no-memory-cap(shared memory not counted)")
    if cap and watched:
        applied.append(watched)
    gpu_cap = gpumem.cap_gpu_memory(memory_mb, gpu)  # its share of the GPU, for the moment CUDA starts
    if gpu_cap:
        applied.append(gpu_cap)
    tasks = memory.cap_tasks(cgroup_parent)  # None: RLIMIT_NPROC once the worker's uid is known
    if tasks:
        applied.append(tasks)
    cpu = memory.cap_cpu(cgroup_parent)  # None: no cpu controller; seccomp keeps its processes to one session
    if cpu:
        applied.append(cpu)
    was_root = os.geteuid() == 0
    read_roots, carved = landlock.read_layout(secrets)
    zygote_dirs = [os.path.realpath(p) for p in _zygote_dirs()]  # (before tidy_sys_path takes them off sys.path)
    probes = _import_probes(read_roots, zygote_dirs)  # before the walls: a module of each folder Python imports from
    ns = None
    if not use_namespaces:
        applied.append("namespaces-off(HWCHECK_NAMESPACES=0)")
    else:
        try:
            ns = namespaces.unshare_all(uid, gid)
        except OSError as e:
            applied.append(f"namespaces-unavailable({e.strerror or e})")
    if ns:
        # from here on: PID 1 of the new PID namespace (its parent watching its memory, where nothing caps it)
        namespaces.fork_init(**_watching(mem_watch))
        applied.append("pid-namespace")
        try:  # the worker's dir: a bounded tmpfs holding a copy, owned by the identity it ends with
            skipped = namespaces.build_root(workdir, read_roots, _link_paths(), passwd_uid=uid, passwd_gid=gid,
                                            disk=(diskcap.DISK_MB << 20, diskcap.DISK_FILES),
                                            owner=(uid, gid) if was_root else None)
            applied += ["mount-namespace", "network-namespace", "ipc-namespace", diskcap.tmpfs_name()]
            applied += [f"{s}-unavailable" for s in skipped]
        except OSError as e:
            # half-built mounts are this namespace's only: nothing of the host changed
            os._exit(_fail(f"mount namespace failed: {e}"))
        try:
            namespaces.drop_privileges(uid, gid)
            applied.append(f"user-unique(uid {uid}" + (")" if was_root else " in a user namespace)"))
        except OSError as e:
            os._exit(_fail(f"dropping privileges failed: {e}"))
        if not tasks:  # its uid is this worker's own (in a user namespace too)
            applied.append(_cap_tasks_by_uid(""))
    else:
        # no mount: the worker's dir stays the host's, watched from a parent outside every wall below
        watcher = os.getpid()
        namespaces.fork_init(**_watching(mem_watch, diskcap.Watch(workdir)), uid=uid)  # W kills all of `uid` at the end
        applied.append(diskcap.watch_name())
        try:
            applied += _without_namespaces(workdir, was_root, uid, gid)
        except WallsRefused as e:
            e.walls = applied + ["user-unique-unavailable(refused to run code as root)"]
            raise
        finally:  # a change of uid disarms PR_SET_PDEATHSIG: arm it again, then check the watcher is alive
            ctypes.CDLL(None).prctl(1, signal.SIGKILL, 0, 0, 0)
            if os.getppid() != watcher:
                os._exit(0)
        if not tasks:
            applied.append(_cap_tasks_by_uid("" if was_root else "shared with the grading user's own processes"))
    abi = landlock_abi()
    if abi >= 1:
        devs = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/shm",
                *_gpu_devices()] + (["/dev/dri"] if os.path.exists("/dev/dri") else [])
        # /proc: with namespaces, a mount of its own that shows only the worker's processes; without, the
        # host's, of which it may read only its own folder and what is no process's (landlock.own_proc)
        proc = ["/proc"] if ns else landlock.own_proc(os.getpid())
        extra = [*proc, "/sys/devices/system/cpu"] + [p for pat in (*namespaces.ETC_ALLOW, "passwd", "group", "hosts")
                                                      for p in glob.glob(os.path.join("/etc", pat))]
        # CUDA's cuInit names its threads by writing /proc/self/task/<tid>/comm, and fails (error 304) when it
        # cannot: with a GPU, the worker may write files that exist under /proc (never make or remove one).
        # What it may write there is then what its unique uid may: its own processes' files
        # (with namespaces, the only ones its /proc shows); /proc/sys and other processes' files stay closed.
        proc_write = (["/proc"] if ns else [f"/proc/{os.getpid()}"]) if gpu and os.path.isdir("/proc") else []
        if gpu:
            extra.append("/sys")
        # a folder of the Python trees split around a secret or a temp folder (a non-editable install's
        # site-packages, around its assignments/): Python lists it to import from it. With namespaces it holds
        # only the read roots there, so it may be listed; without, a rule on it would list the secrets beneath
        # too, so Python's own listing of it, made before the walls (_prime_import_caches), is what it uses
        listed = [p for p in carved if os.path.isdir(p)] if ns else []
        _prime_import_caches()
        try:
            # without namespaces no moving files between folders (REFER): a tree moved under the
            # disk watch's walk could hide from it
            landlock.restrict(abi, read_roots + [workdir] + [p for p in extra if os.path.exists(p)], [scratch],
                              devs, refer=bool(ns), write_files=proc_write,
                              list_only=listed if ns or not os.path.isdir("/proc") else ["/proc"])
            applied.append(f"landlock-abi{abi}" + ("-files-tcp" if abi >= 4 else "-files")
                           + ("-signals" if abi >= 6 else "") + ("" if ns else "-proc-own")
                           + ("-proc-writable" if proc_write else ""))
        except OSError as e:
            applied.append(f"landlock-failed({e.strerror or e})")
    else:
        applied.append("landlock-unavailable")
        if not ns and not was_root:  # nothing keeps the grading user's own uid from writing its code's folders
            applied.append("code-writable(no namespaces, no Landlock, the grading user's uid)")
    tidy_sys_path(workdir)
    unreadable = _python_unreadable(read_roots, probes, zygote_dirs)
    if unreadable:  # a wall of the grader's, not the student's code: the TA is told, once per batch (grade)
        applied.append(f"python-trees-failed({len(unreadable)} of this Python's folders unreadable in the walls, "
                       f"e.g. {unreadable[0]}: an import of what was not loaded before them fails)")
    if not ns:
        try:
            diskcap.deny_fallocate()
        except OSError as e:
            applied.append(f"disk-watch-failed(fallocate: {e.strerror or e})")
    try:  # last: Landlock's own calls must be made first
        seqpacket = bool(gpu) and not ns  # CUDA's cuInit makes a unix seqpacket socket (see seccomp's doc)
        seccomp.restrict(sockets=bool(ns), unix_seqpacket=seqpacket)
        applied.append("seccomp-denylist" if ns else
                       "seccomp-denylist-no-sockets" + ("-but-unix-seqpacket" if seqpacket else ""))
    except OSError as e:
        applied.append(f"seccomp-failed({e.strerror or e})")
        if not ns and was_root:  # the filter is the only wall left before the host's network and IPC
            refused = WallsRefused(
                "the grader refused to run this code: there are no namespaces here and the seccomp filter "
                f"could not be installed ({e.strerror or e}), so the code would reach this machine's network. "
                "The TA can grade on Linux (x86_64 or aarch64) with seccomp, or where namespaces are allowed.")
            refused.walls = applied
            raise refused from e
    return applied


def _prime_import_caches():
    """Have every folder of `sys.path` listed by Python's import system now, before Landlock: a finder lists
    its folder once and lists it again only when the folder changes (its mtime), so a folder that the walls
    let Python read from but not list (without namespaces, a site-packages split around a secret) still
    imports what it holds. A name no folder holds makes every finder look."""
    import importlib.machinery
    try:
        importlib.machinery.PathFinder.find_spec("hwcheck_walls_no_such_module")
    except Exception:  # noqa: BLE001 - a broken path hook of the environment's: the check below tells
        pass


def _import_probes(read_roots, own=()):
    """{folder of `sys.path`: a module name importable there whose file or package is in `read_roots`}, looked
    up before the walls, for `_python_unreadable` to look up again inside them."""
    roots = set(read_roots)
    out = {}
    for entry in dict.fromkeys(p for p in sys.path if p and os.path.isdir(p)):
        real = os.path.realpath(entry)
        if real in own:
            continue
        try:
            names = sorted(os.listdir(real))
        except OSError:
            continue
        for n in names:
            path = os.path.join(real, n)
            name = n[:-3] if n.endswith(".py") else n
            if not name.isidentifier() or not (n.endswith(".py") or os.path.isfile(os.path.join(path, "__init__.py"))):
                continue
            if path in roots or any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots):
                out[entry] = name
                break
    return out


def _python_unreadable(read_roots, probes, own=()):
    """What of this Python the walls left unreadable (each read root opened; each `probes` module found where
    it was before them): a wall gone wrong, so a correct submission's import of a package not loaded before
    the walls (torch imports sympy on the meta device) would fail as if it were the student's."""
    import importlib.machinery
    bad = []
    for root in read_roots:  # (but `own`: the zygote's private dir, closed to the worker, holding no module)
        if any(root == o or root.startswith(o + "/") for o in own):
            continue
        try:
            os.close(os.open(root, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC))
        except OSError:  # (missing too: a tree the new root left out, or hid under a mount of its own)
            bad.append(root)
    for entry, name in probes.items():
        try:
            if importlib.machinery.PathFinder.find_spec(name, [entry]) is None:
                bad.append(entry)
        except Exception:  # noqa: BLE001
            bad.append(entry)
    return bad


def _watching(mem_watch, disk_watch=None):
    """fork_init's arguments for the parent W's watches: the disk's (its reason ends the body by SIGXFSZ), the
    memory's (by SIGKILL, as a cgroup's OOM kill would); none: W only waits."""
    if mem_watch is None and disk_watch is None:
        return {}

    def watch(pid):
        why = disk_watch.over(pid) if disk_watch is not None else None
        if why:
            return why
        why = mem_watch.over(pid) if mem_watch is not None else None
        return (why, signal.SIGKILL) if why else None
    return {"watch": watch, "interval": diskcap.INTERVAL_S, "keep": mem_watch.fds() if mem_watch else ()}


def _cap_tasks_by_uid(shared):
    """RLIMIT_NPROC: the tasks (processes and threads) of this process's real uid, counted by the kernel.

    Where the uid is this worker's alone (a user namespace) that is this worker's tasks; else it is
    shared with the uid's other processes (`shared` says with whom): the name says so."""
    uid = os.getuid()
    if uid == 0:  # uid 0 is never held to RLIMIT_NPROC
        return "no-task-cap(uid 0)"
    if not _set_limit(resource.RLIMIT_NPROC, memory.PIDS_MAX):
        return "no-task-cap(RLIMIT_NPROC refused)"
    return f"tasks-nproc-{memory.PIDS_MAX}" + (f"(uid {uid}, {shared})" if shared else "")


def _without_namespaces(workdir, was_root, uid, gid):
    """The identity walls where no namespace could be made."""
    if not was_root:
        return []
    own = (workdir, os.getcwd(), *_zygote_dirs())
    if not _others_can_read_python(own=own):
        _drop_capabilities()
        raise WallsRefused(_refusal_text(own))
    try:
        _hand_over(workdir, uid, gid)
        namespaces.drop_privileges(uid, gid)
    except OSError as e:
        _drop_capabilities()
        raise WallsRefused(f"the grader refused to run this code as root: dropping to an unprivileged uid "
                           f"failed ({e})")
    return [f"user-unique(uid {uid})"]


def _hand_over(workdir, uid, gid):
    """The worker's dir, the host's (no mount here): root's, entered and read by the worker's group only
    (no other worker's uid or gid reaches it), written by nobody but root; its `SCRATCH` folder the
    worker's own. Raises OSError when that cannot be made (the worker then runs no code)."""
    import stat
    scratch = os.path.join(workdir, namespaces.SCRATCH)
    for root, dirs, files in walk(workdir):
        if root == scratch or root.startswith(scratch + os.sep):
            continue
        for path in [root, *[os.path.join(root, n) for n in files]]:
            st = os.lstat(path)
            if stat.S_ISLNK(st.st_mode):
                continue
            os.lchown(path, 0, gid)
            os.chmod(path, 0o750 if stat.S_ISDIR(st.st_mode) else 0o640)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(root, d))]
    _chown_tree(scratch, uid, gid)


def _zygote_dirs():
    """The zygote's private dir, which `python -m` put on sys.path (it holds no module; the worker is
    already in its own dir, so os.getcwd() no longer names it)."""
    import tempfile
    tmp = os.path.realpath(tempfile.gettempdir())
    return [p for p in sys.path if p and os.path.dirname(os.path.realpath(p)) == tmp
            and os.path.basename(os.path.realpath(p)).startswith("hwcheck-zygote-")]


class WallsRefused(Exception):
    """No unprivileged uid could be had for the worker: it must not run student code (the message says why).

    `walls`: the walls put up before the refusal, for the report sent to the trusted side."""
    walls = []


def _refusal_text(own=()):
    closed = _closed_to_others(own)
    where = f"{closed[0]} is closed to others (mode {closed[1]:o})" if closed else "it is closed to others"
    return ("the grader refused to run this code as root: there are no namespaces here (a container without "
            "CAP_SYS_ADMIN, or HWCHECK_NAMESPACES=0) and an unprivileged uid cannot reach this Python, since "
            f"{where}. The TA can install hwcheck in a Python every user can read (e.g. python3 -m venv "
            "/opt/hwcheck; not under /root), or grade as an ordinary user, or where namespaces are allowed.")


def _fail(text):
    try:
        os.write(2, (text + "\n").encode())
    except OSError:
        pass
    return 70


def _chown_tree(path, uid, gid):
    try:
        os.chown(path, uid, gid)
        for root, dirs, files in walk(path):
            for n in dirs + files:
                os.lchown(os.path.join(root, n), uid, gid)
    except OSError:
        pass


def _others_can_read_python(own=()):
    """Can an unprivileged uid (any: the worker's own) traverse to this Python and its packages (not under
    /root, say)?

    `own`: hwcheck's own private folders on sys.path (the worker's dir, which the worker's group reads,
    and the zygote's scratch dir, whose modules are imported already): not Python's trees."""
    return _closed_to_others(own) is None


def _closed_to_others(own=()):
    """(folder, mode) of the first folder on the way to this Python that others cannot enter; None if none."""
    import stat
    own = [os.path.realpath(p) for p in own if p]
    for top in sorted({sys.prefix, sys.base_prefix, *[p for p in sys.path if p and os.path.isdir(p)]}):
        path = os.path.realpath(top)
        if any(path == o or path.startswith(o.rstrip("/") + "/") for o in own):
            continue
        while True:
            try:
                mode = os.stat(path).st_mode
            except OSError:
                return path, 0
            if not mode & stat.S_IXOTH:
                return path, stat.S_IMODE(mode)
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return None


def _drop_capabilities():
    """Keep uid 0 but drop every capability (no DAC override, no kill of others, no raw I/O)."""
    import ctypes
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        namespaces._clear_capabilities(libc)
        libc.prctl(38, 1, 0, 0, 0)  # no_new_privs
        return True
    except (OSError, AttributeError):
        return False
