"""Walls put around a worker process before it runs student code (Linux).

What it is for: called once in a freshly forked worker. It applies, in order,
resource limits (memory, file size, no core dumps), a Landlock ruleset
(read-only access to the Python installation minus the secret trees such as
`reference/` and `assignments/`, read-write access to the worker's own temp
dir only, plus reading and writing existing files under /dev: null, zero,
random, shm and the GPU devices; no TCP, no signals or abstract sockets
outside the worker's own domain), and, when running as root, either a
switch to the `nobody` user (with a process-count limit) or, where `nobody`
could not reach this Python, dropping every capability while keeping uid 0.
Each layer that the kernel does not offer is skipped and named in the
result, so the scorecard says what protected the run.

What it is not: a container. Where Landlock is missing (old kernels, macOS)
a submission can read and write files the user can, and without Landlock
signal scoping (ABI 6) it can signal the user's other processes; process
isolation, limits, the zygote's orphan sweep and the plain-data protocol
still hold. Not covered even with Landlock: UDP and connecting to existing
pathname unix sockets, disk use inside the temp dir, and the number of
processes of a worker still running as uid 0.
"""

import ctypes
import os
import resource
import sys

__all__ = ["apply_isolation", "landlock_abi", "allowed_read_roots"]

_SYS_create, _SYS_add_rule, _SYS_restrict = 444, 445, 446
_PR_SET_NO_NEW_PRIVS = 38

# filesystem access rights
EXECUTE, WRITE_FILE, READ_FILE, READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
REMOVE_DIR, REMOVE_FILE, MAKE_CHAR, MAKE_DIR = 1 << 4, 1 << 5, 1 << 6, 1 << 7
MAKE_REG, MAKE_SOCK, MAKE_FIFO, MAKE_BLOCK, MAKE_SYM = 1 << 8, 1 << 9, 1 << 10, 1 << 11, 1 << 12
REFER, TRUNCATE, IOCTL_DEV = 1 << 13, 1 << 14, 1 << 15
READ = EXECUTE | READ_FILE | READ_DIR
FS_BY_ABI = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1, 5: (1 << 16) - 1}
NET_BIND, NET_CONNECT = 1 << 0, 1 << 1
SCOPE_ABSTRACT_UNIX, SCOPE_SIGNAL = 1 << 0, 1 << 1


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("fs", ctypes.c_uint64), ("net", ctypes.c_uint64), ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


def landlock_abi():
    """The kernel's Landlock ABI version, 0 when unavailable."""
    if not sys.platform.startswith("linux"):
        return 0
    try:
        r = _libc().syscall(_SYS_create, None, ctypes.c_size_t(0), ctypes.c_uint32(1))
    except (OSError, AttributeError):
        return 0
    return max(int(r), 0)


def allowed_read_roots(secrets):
    """Directories the worker may read: system and Python trees, minus every secret tree."""
    secrets = {os.path.realpath(s) for s in secrets if s}
    candidates = ["/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/opt",
                  "/proc", "/sys", "/run/nvidia-persistenced", sys.prefix, sys.base_prefix,
                  sys.exec_prefix, *[p for p in sys.path if p]]
    roots = []
    for c in candidates:
        c = os.path.realpath(c)
        if os.path.exists(c):
            _allow_except(c, secrets, roots)
    return sorted(set(roots))


def _allow_except(path, secrets, out):
    if path in secrets:
        return
    inside = [s for s in secrets if s.startswith(path.rstrip("/") + "/")]
    if not inside:
        out.append(path)
        return
    if not os.path.isdir(path) or os.path.islink(path):
        return
    try:
        children = os.listdir(path)
    except OSError:
        return
    for name in children:
        child = os.path.join(path, name)
        if os.path.islink(child):
            real = os.path.realpath(child)
            if any(real == s or real.startswith(s + "/") for s in secrets):
                continue
        _allow_except(child, secrets, out)


def _landlock(abi, read_roots, rw_roots, dev_rw):
    libc = _libc()
    fs = FS_BY_ABI.get(abi, FS_BY_ABI[5])
    attr = _RulesetAttr(fs, NET_BIND | NET_CONNECT if abi >= 4 else 0,
                        SCOPE_ABSTRACT_UNIX | SCOPE_SIGNAL if abi >= 6 else 0)
    size = ctypes.sizeof(_RulesetAttr) if abi >= 6 else (16 if abi >= 4 else 8)
    fd = libc.syscall(_SYS_create, ctypes.byref(attr), ctypes.c_size_t(size), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        def add(path, access):
            try:
                pfd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                return
            try:
                if not os.path.isdir(path):
                    access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
                rule = _PathBeneath(access & fs, pfd)
                libc.syscall(_SYS_add_rule, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule),
                             ctypes.c_uint32(0))
            finally:
                os.close(pfd)

        for p in read_roots:
            add(p, READ)
        for p in rw_roots:
            add(p, fs)
        for p in dev_rw:
            add(p, READ | WRITE_FILE | TRUNCATE | IOCTL_DEV)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
        if libc.syscall(_SYS_restrict, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(fd)


def _set_limit(which, value):
    try:
        soft, hard = resource.getrlimit(which)
        if hard != resource.RLIM_INFINITY:
            value = min(value, hard)
        resource.setrlimit(which, (value, value))
        return True
    except (ValueError, OSError):
        return False


def apply_isolation(workdir, secrets, memory_mb=4096):
    """Apply every available wall to the current process; return the list of walls applied."""
    applied = []
    if _set_limit(resource.RLIMIT_CORE, 0):
        applied.append("no-core-dumps")
    if _set_limit(resource.RLIMIT_FSIZE, 256 * 1024 * 1024):
        applied.append("file-size-256MiB")
    if memory_mb and _set_limit(resource.RLIMIT_DATA, memory_mb * 1024 * 1024):
        applied.append(f"memory-{memory_mb}MiB")
    abi = landlock_abi()
    if abi >= 1:
        devs = ["/dev/null", "/dev/zero", "/dev/urandom", "/dev/random", "/dev/full", "/dev/shm"]
        devs += [os.path.join("/dev", d) for d in _listdir("/dev") if d.startswith("nvidia")]
        devs += ["/dev/dri"] if os.path.exists("/dev/dri") else []
        try:
            _landlock(abi, allowed_read_roots(secrets), [workdir], devs)
            applied.append(f"landlock-abi{abi}" + ("-files-tcp" if abi >= 4 else "-files")
                           + ("-signals" if abi >= 6 else ""))
        except OSError as e:
            applied.append(f"landlock-failed({e.strerror or e})")
    if os.geteuid() == 0 and not _others_can_read_python():
        if _drop_capabilities():
            applied.append("root-without-capabilities")
    elif os.geteuid() == 0:
        try:
            os.chown(workdir, 65534, 65534)
            for root, dirs, files in os.walk(workdir):
                for n in dirs + files:
                    os.lchown(os.path.join(root, n), 65534, 65534)
            os.setgroups([])
            os.setgid(65534)
            os.setuid(65534)
            applied.append("user-nobody")
            if _set_limit(resource.RLIMIT_NPROC, 512):
                applied.append("nproc-512")
        except OSError as e:
            applied.append(f"drop-root-failed({e})")
    return applied


def _others_can_read_python():
    """Can the `nobody` user traverse to this Python and its packages (not under /root, say)?"""
    import stat
    for top in {sys.prefix, sys.base_prefix, *[p for p in sys.path if p and os.path.isdir(p)]}:
        path = os.path.realpath(top)
        while True:
            try:
                if not os.stat(path).st_mode & stat.S_IXOTH:
                    return False
            except OSError:
                return False
            parent = os.path.dirname(path)
            if parent == path:
                break
            path = parent
    return True


class _CapHeader(ctypes.Structure):
    _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]


class _CapData(ctypes.Structure):
    _fields_ = [("effective", ctypes.c_uint32), ("permitted", ctypes.c_uint32), ("inheritable", ctypes.c_uint32)]


def _drop_capabilities():
    """Keep uid 0 but drop every capability (no DAC override, no kill of others, no raw I/O)."""
    try:
        libc = _libc()
        for cap in range(64):
            libc.prctl(24, cap, 0, 0, 0)  # PR_CAPBSET_DROP
        hdr, data = _CapHeader(0x20080522, 0), (_CapData * 2)()
        return libc.capset(ctypes.byref(hdr), ctypes.byref(data)) == 0
    except (OSError, AttributeError):
        return False


def _listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []
