"""Landlock rules for a worker: which files it may read or write, no TCP, no signals outside.

What it is for: an unprivileged kernel wall that works without namespaces
(inside a container that forbids them, say). `restrict(abi, read_roots,
rw_roots, dev_rw)` allows reading `read_roots` (the Python trees with the
secret trees carved out by `allowed_read_roots`: wherever this Python lives,
under /tmp too, but never a temp folder whole; the same set the mount
namespace binds), everything in `rw_roots`
(the worker's own dir), reading and writing existing device files in
`dev_rw`, and writing existing files under `write_files`; with ABI 4 no TCP bind or connect, with ABI 6 no signals or
abstract unix sockets outside the worker's domain. `own_proc(pid)` is /proc as
a worker without a PID namespace of its own may read it: its own process's
folder and what is no process's, never another process's command line.

What it is not: a wall for UDP or for pathname unix sockets that already
exist (the network namespace, or `checker.worker.seccomp`, covers those).
"""

import ctypes
import os
import sys

__all__ = ["landlock_abi", "allowed_read_roots", "carved_read_folders", "read_layout", "import_folders", "own_proc",
           "restrict", "READ_CANDIDATES", "TEMP_DIRS"]

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


# system trees a Python process reads; /etc is not among them (see namespaces.ETC_ALLOW for its few files)
# /opt is not: a course keeps files there too (an earlier batch's output, a repository); a Python installed
# there (/opt/conda, /opt/hwcheck) is read through its prefix and sys.path, as every Python is
READ_CANDIDATES = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/run/nvidia-persistenced")


def allowed_read_roots(secrets):
    """Directories the worker may read: system and Python trees, minus every secret tree.

    The Python trees are wherever this Python keeps them (`/tmp`, `/var/tmp`, `/dev/shm`, `/home`, ...): its
    prefixes, every folder of `sys.path`, and hwcheck's own package. hwcheck's own import root, where it is a
    checkout (`pip install -e .`: the folder holding `checker/`, on sys.path or named by setuptools' editable
    finder), gives only that package: a course keeps its grades, downloads and notes beside it. A tree that
    holds a secret, or a temp folder (`TEMP_DIRS`: the trusted side's temp files, every worker's folder, an
    OUT there), gives its other entries only (`carved_read_folders` names the folders so split)."""
    return read_layout(secrets)[0]


def carved_read_folders(secrets):
    """The folders `allowed_read_roots` split: some of their entries are read roots, some (a secret, a temp
    folder, or a folder on the way to one) are not. A non-editable install's site-packages is one (its
    `assignments/` is secret). Python lists such a folder of `sys.path` to import from it, which a read rule
    on the folder would allow beneath it, the secrets too: only where the mount namespace left nothing but
    the read roots in it (`checker.worker.isolation` gives them as `restrict`'s `list_only` there)."""
    return read_layout(secrets)[1]


# folders no read root may give whole: the trusted side's temp files, every worker's folder, an OUT made there
TEMP_DIRS = ("/tmp", "/var/tmp", "/dev/shm")


def import_folders():
    """The folders this Python imports from: its prefixes, `sys.path`, hwcheck's own package, and the
    folders that setuptools' editable finders map a package to (`pip install -e`: not on `sys.path`)."""
    prefixes = [sys.prefix, sys.base_prefix, sys.exec_prefix]
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../checker
    mapped = []
    for finder in sys.meta_path:  # __editable___<dist>_finder: MAPPING {package: folder}, NAMESPACES {name: [folders]}
        name = getattr(finder, "__module__", None)
        module = sys.modules.get(name) if isinstance(name, str) and name.startswith("__editable___") else None
        for table in (getattr(module, "MAPPING", None), getattr(module, "NAMESPACES", None)):
            for value in table.values() if isinstance(table, dict) else ():
                mapped += [v for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, str)]
    return [p for p in (*prefixes, *[p for p in sys.path if p], package, *mapped) if p]


def read_layout(secrets):
    """(`allowed_read_roots(secrets)`, `carved_read_folders(secrets)`), computed once."""
    import tempfile
    secrets = {os.path.realpath(s) for s in secrets if s}
    prefixes = {os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    package = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))  # .../checker
    checkout = os.path.dirname(package)
    candidates = [*READ_CANDIDATES, *import_folders()]
    if not any(checkout == p or checkout.startswith(p.rstrip("/") + "/") for p in prefixes):
        candidates = [package if os.path.realpath(c) == checkout else c for c in candidates]
    # a temp folder is never given whole, nor any folder holding one (a prefix /tmp/x with TMPDIR=/tmp/x/t);
    # a Python tree inside one (a venv under /tmp) is given as itself
    closed = {os.path.realpath(t) for t in (*TEMP_DIRS, tempfile.gettempdir())} - secrets
    roots, carved = [], []
    for c in candidates:
        c = os.path.realpath(c)
        if os.path.exists(c):
            _allow_except(c, secrets, out=roots, carved=carved, closed=closed)
    return sorted(set(roots)), sorted(set(carved) - set(roots))


def _allow_except(path, secrets, out, carved=None, closed=()):
    """Append to `out` `path`, or where it holds one of `secrets` or `closed`, its other entries (recursively;
    `carved` gets each folder so split). What lies in a secret is never given; what lies in a `closed` folder
    may be (a venv under /tmp), the folder itself and those holding it are split."""
    if path in secrets or path in closed:
        return
    inside = [s for s in (*secrets, *closed) if s.startswith(path.rstrip("/") + "/")]
    if not inside:
        out.append(path)
        return
    if not os.path.isdir(path) or os.path.islink(path):
        return
    try:
        children = os.listdir(path)
    except OSError:
        return
    if carved is not None:
        carved.append(path)
    for name in children:
        child = os.path.join(path, name)
        if os.path.islink(child):
            # Landlock and bind mounts follow a link to its target: a link to a secret, or to a folder
            # holding one (a venv's `lib64 -> lib` above site-packages/reference), is carved by its target
            real = os.path.realpath(child)
            if real in closed or any(real == s or real.startswith(s + "/") for s in secrets):
                continue
            if any(s.startswith(real.rstrip("/") + "/") for s in (*secrets, *closed)):
                _allow_except(real, secrets, out, carved, closed)
                continue
        _allow_except(child, secrets, out, carved, closed)


def own_proc(pid):
    """What of /proc a worker that shares the host's /proc (no PID namespace of its own) may read: the folder
    of `pid` (the process that applies the rules; its threads are inside it) and every entry that is no
    process's folder (cpuinfo, meminfo, sys, the links self and thread-self, ...), but not the folders of
    other processes, whose command lines and status anyone may read: a grader's `--seed`, the paths of the
    files it grades, a password someone gave a program on its command line. Pass /proc itself to `restrict`
    as `list_only`: its entries may be listed, not read."""
    return [os.path.join("/proc", e) for e in _listdir("/proc") if not e.isdigit()] + [f"/proc/{int(pid)}"]


# O_PATH descriptors of the folders under /proc that a rule names, kept open for the process's life: procfs
# makes a new inode for a folder whose dentry the kernel dropped, and a Landlock rule names an inode
_PINNED = []


def restrict(abi, read_roots, rw_roots, dev_rw, refer=True, write_files=(), list_only=()):
    """Apply the ruleset to this process (and every child it makes later); raises OSError.

    `refer=False`: no renaming or linking from one folder of `rw_roots` to another (ABI 2+).
    `write_files`: trees whose existing files may be read and written (opened with O_TRUNC too, as
    fopen(path, "w") does), but where nothing may be made or removed (/proc where a GPU is present: see
    `checker.worker.isolation`). `list_only`: folders whose entries may be listed but not opened (/proc
    beside `own_proc`)."""
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
            pinned = os.path.realpath(path).startswith("/proc/")
            try:
                if not os.path.isdir(path):
                    access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV
                rule = _PathBeneath(access & fs, pfd)
                libc.syscall(_SYS_add_rule, ctypes.c_int(fd), ctypes.c_int(1), ctypes.byref(rule),
                             ctypes.c_uint32(0))
            finally:
                if pinned:
                    _PINNED.append(pfd)
                else:
                    os.close(pfd)

        for p in read_roots:
            add(p, READ)
        for p in rw_roots:
            add(p, fs if refer else fs & ~REFER)
        for p in dev_rw:
            add(p, READ | WRITE_FILE | TRUNCATE | IOCTL_DEV)
        for p in write_files:
            add(p, READ | WRITE_FILE | TRUNCATE)  # TRUNCATE: fopen(path, "w") opens with O_TRUNC
        for p in list_only:
            add(p, READ_DIR)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
        if libc.syscall(_SYS_restrict, ctypes.c_int(fd), ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(fd)


def _listdir(p):
    try:
        return os.listdir(p)
    except OSError:
        return []
