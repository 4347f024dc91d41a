"""A seccomp filter that refuses new sockets: the network wall where no network namespace could be made.

What it is for: in a fresh network namespace a worker can reach nothing, but
a container that forbids namespaces leaves the host's network, its pathname
unix sockets (a tmux or Docker server of the grading user) and its abstract
ones reachable. `deny_sockets()` installs a classic-BPF filter that makes
`socket()` fail with EACCES for every address family, so nothing can be
connected to, sent to or listened on. `socketpair()` (multiprocessing's pipes)
and the sockets the worker already holds (its line to the trusted side) keep
working. The filter is inherited by every child and cannot be removed.

What it is not: a general system-call policy. Other calls are allowed; the
other walls (Landlock, rlimits, an unprivileged uid) cover files and limits.
"""

import ctypes
import errno
import platform

__all__ = ["deny_sockets", "SocketFilterError"]

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2
# (audit arch, socket syscall number, x32 bit to refuse) per machine
_ARCH = {
    "x86_64": (0xC000003E, 41, 0x40000000),
    "aarch64": (0xC00000B7, 198, 0),
    "arm64": (0xC00000B7, 198, 0),
}
_LD_W_ABS, _JEQ_K, _JGE_K, _RET_K = 0x20, 0x15, 0x35, 0x06
_ALLOW, _ERRNO, _KILL = 0x7FFF0000, 0x00050000, 0x80000000


class SocketFilterError(OSError):
    """The filter could not be installed (unknown machine, seccomp off)."""


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def _program():
    arch = _ARCH.get(platform.machine())
    if arch is None:
        raise SocketFilterError(errno.ENOSYS, f"no socket filter for {platform.machine()}")
    audit_arch, nr_socket, x32 = arch
    prog = [
        (_LD_W_ABS, 0, 0, 4),                   # A = seccomp_data.arch
        (_JEQ_K, 1, 0, audit_arch),             # our arch: go on; else kill (no other ABI's numbers)
        (_RET_K, 0, 0, _KILL),
        (_LD_W_ABS, 0, 0, 0),                   # A = seccomp_data.nr
    ]
    if x32:
        prog += [(_JGE_K, 0, 1, x32), (_RET_K, 0, 0, _ERRNO | errno.EACCES)]  # x32 calls: refuse
    prog += [
        (_JEQ_K, 0, 1, nr_socket),              # socket(): refuse with EACCES
        (_RET_K, 0, 0, _ERRNO | errno.EACCES),
        (_RET_K, 0, 0, _ALLOW),
    ]
    return prog


def deny_sockets():
    """Install the filter on the calling process (no_new_privs is set first, as seccomp requires)."""
    prog = _program()
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SocketFilterError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise SocketFilterError(e, f"seccomp: {errno.errorcode.get(e, e)}")

