"""A seccomp filter refusing the system calls a worker has no use for and an attacker has.

What it is for: the last wall a worker puts up, inherited by every child and
impossible to remove. `restrict(sockets=...)` installs a classic-BPF deny list:

- always: io_uring (its IORING_OP_SOCKET, CONNECT, SENDMSG... run in the
  kernel where no filter sees them), System V IPC and POSIX message queues
  (objects that outlive the worker: a channel to the next student's worker),
  ptrace, process_vm_readv/writev, pidfd_getfd and kcmp (another process's
  memory and files), the keyrings (shared by every process of a uid), bpf,
  perf_event_open, userfaultfd, new namespaces (unshare, setns, and clone
  with a CLONE_NEW* flag; clone3, whose flags a filter cannot read, answers
  ENOSYS so that glibc falls back to clone), mounts, kexec and modules,
  and setsid (a new session is a scheduling autogroup of its own, a CPU
  share of its own where the host has sched_autogroup: see `DENIED`);
- where no network namespace could be made (`sockets=False`): every new
  socket. `socket()` fails with EACCES for every family; `socketpair()` is
  allowed for AF_UNIX SOCK_STREAM only (multiprocessing's and asyncio's
  pipes), since a datagram pair can `sendto()` any unix socket of the host.
  The sockets the worker already holds (its line to the trusted side, a
  connected stream) keep working. Where a GPU is present (`unix_seqpacket`),
  `socket(AF_UNIX, SOCK_SEQPACKET)` is allowed too: CUDA's cuInit makes one
  and fails without it. Such a socket sends nothing unconnected, connects
  only to a seqpacket listener, to a pathname one only where the worker's own
  uid may write the socket file, and to no abstract one outside its Landlock
  domain (ABI 6).

The program checks the architecture first: a call made through another ABI
(i386's `int 0x80` on x86_64) kills the process, and x32 calls (numbers with
bit 30 set, same audit arch) are refused, since both would number the calls
differently and slip past the list.

What it is not: an allow list (numpy, torch and CUDA use too many calls to
name them safely), nor the file wall (Landlock, the uid), the memory cap or
a CPU share (refusing setsid keeps a worker to its one autogroup; the share
of its cgroup is `checker.worker.memory`'s).
libseccomp's Python bindings are not on PyPI (the `seccomp` module comes with
the distribution), so the program is written here, in `_program()`.
"""

import ctypes
import errno
import platform
import sys

__all__ = ["restrict", "SocketFilterError", "DENIED", "supported"]

_PR_SET_NO_NEW_PRIVS, _PR_SET_SECCOMP, _SECCOMP_MODE_FILTER = 38, 22, 2

# BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_W_ABS, _JEQ_K, _JGE_K, _JSET_K, _AND_K, _RET_K = 0x20, 0x15, 0x35, 0x45, 0x54, 0x06
_ALLOW, _ERRNO, _KILL_PROCESS = 0x7FFF0000, 0x00050000, 0x80000000
_OFF_NR, _OFF_ARCH = 0, 4


def _arg_low(i):
    """Offset of the low 32 bits of argument i in struct seccomp_data (little-endian machines)."""
    return 16 + 8 * i


_AF_UNIX, _SOCK_STREAM, _SOCK_SEQPACKET, _SOCK_FLAGS = 1, 1, 5, 0o4000 | 0o2000000  # SOCK_NONBLOCK | SOCK_CLOEXEC
_CLONE_NEW = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

# the refused calls, by name; numbers per machine below (asm/unistd_64.h, asm-generic/unistd.h)
DENIED = {
    "io_uring": ("io_uring_setup", "io_uring_enter", "io_uring_register"),
    "sysv-ipc": ("shmget", "shmat", "shmctl", "shmdt", "semget", "semop", "semctl", "semtimedop",
                 "msgget", "msgsnd", "msgrcv", "msgctl"),
    "mqueue": ("mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive", "mq_notify", "mq_getsetattr"),
    "other-processes": ("ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp"),
    "keyrings": ("add_key", "request_key", "keyctl"),
    "kernel": ("bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load", "init_module",
               "finit_module", "delete_module", "open_by_handle_at"),
    "namespaces": ("unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "open_tree", "move_mount",
                   "fsopen", "fsconfig", "fsmount", "fspick", "mount_setattr"),
    # a new session is a new autogroup: where the host has kernel.sched_autogroup_enabled (most desktop and
    # many server kernels), the scheduler shares the CPU per session, so 128 children each in a session of its
    # own took 128 shares and left a classmate graded beside them ~1% of a core. A worker's processes stay in
    # the session its outer process made (checker.worker.zygote), which nothing of the worker leaves after this.
    "sessions": ("setsid",),
}

_X86_64 = {
    "socket": 41, "socketpair": 53, "clone": 56, "clone3": 435,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "shmget": 29, "shmat": 30, "shmctl": 31, "shmdt": 67, "semget": 64, "semop": 65, "semctl": 66,
    "semtimedop": 220, "msgget": 68, "msgsnd": 69, "msgrcv": 70, "msgctl": 71,
    "mq_open": 240, "mq_unlink": 241, "mq_timedsend": 242, "mq_timedreceive": 243, "mq_notify": 244,
    "mq_getsetattr": 245,
    "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438, "kcmp": 312,
    "add_key": 248, "request_key": 249, "keyctl": 250,
    "bpf": 321, "perf_event_open": 298, "userfaultfd": 323, "kexec_load": 246, "kexec_file_load": 320,
    "init_module": 175, "finit_module": 313, "delete_module": 176, "open_by_handle_at": 304,
    "unshare": 272, "setns": 308, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
    "setsid": 112,
}
_AARCH64 = {
    "socket": 198, "socketpair": 199, "clone": 220, "clone3": 435,
    "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
    "shmget": 194, "shmat": 196, "shmctl": 195, "shmdt": 197, "semget": 190, "semop": 193, "semctl": 191,
    "semtimedop": 192, "msgget": 186, "msgsnd": 189, "msgrcv": 188, "msgctl": 187,
    "mq_open": 180, "mq_unlink": 181, "mq_timedsend": 182, "mq_timedreceive": 183, "mq_notify": 184,
    "mq_getsetattr": 185,
    "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438, "kcmp": 272,
    "add_key": 217, "request_key": 218, "keyctl": 219,
    "bpf": 280, "perf_event_open": 241, "userfaultfd": 282, "kexec_load": 104, "kexec_file_load": 294,
    "init_module": 105, "finit_module": 273, "delete_module": 106, "open_by_handle_at": 265,
    "unshare": 97, "setns": 268, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "mount_setattr": 442,
    "setsid": 157,
}
# machine -> (audit arch, syscall numbers, x32 bit to refuse)
_ARCH = {
    "x86_64": (0xC000003E, _X86_64, 0x40000000),
    "aarch64": (0xC00000B7, _AARCH64, 0),
    "arm64": (0xC00000B7, _AARCH64, 0),
}


class SocketFilterError(OSError):
    """The filter could not be installed (unknown machine, seccomp off)."""


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def supported():
    """Is there a filter for this machine (Linux on x86_64 or aarch64)?"""
    return sys.platform.startswith("linux") and platform.machine() in _ARCH


def _ret(action):
    return (_RET_K, 0, 0, action)


def _when(nr, body):
    """A block: if the call is `nr`, run `body` (which must end in a return); else skip past it."""
    return [(_JEQ_K, 0, len(body), nr), *body]


def _unix_of_kind(kind):
    """A block body: allow the call when its domain is AF_UNIX and its type (less SOCK_NONBLOCK and
    SOCK_CLOEXEC) is `kind`; refuse it with EACCES otherwise."""
    return [
        (_LD_W_ABS, 0, 0, _arg_low(0)),     # domain
        (_JEQ_K, 1, 0, _AF_UNIX),
        _ret(_ERRNO | errno.EACCES),
        (_LD_W_ABS, 0, 0, _arg_low(1)),     # type, less SOCK_NONBLOCK and SOCK_CLOEXEC
        (_AND_K, 0, 0, ~_SOCK_FLAGS & 0xFFFFFFFF),
        (_JEQ_K, 1, 0, kind),
        _ret(_ERRNO | errno.EACCES),
        _ret(_ALLOW),
    ]


def _program(sockets, unix_seqpacket=False):
    arch = _ARCH.get(platform.machine()) if supported() else None
    if arch is None:
        raise SocketFilterError(errno.ENOSYS, f"no seccomp filter for {platform.machine()}")
    audit_arch, nr, x32 = arch
    deny = _ERRNO | errno.EPERM
    prog = [
        (_LD_W_ABS, 0, 0, _OFF_ARCH),            # A = seccomp_data.arch
        (_JEQ_K, 1, 0, audit_arch),              # our ABI: go on; another ABI numbers calls differently: kill
        _ret(_KILL_PROCESS),
        (_LD_W_ABS, 0, 0, _OFF_NR),              # A = seccomp_data.nr
    ]
    if x32:
        prog += [(_JGE_K, 0, 1, x32), _ret(_ERRNO | errno.EACCES)]  # x32 calls: refused
    for names in DENIED.values():
        for name in names:
            prog += _when(nr[name], [_ret(deny)])
    prog += _when(nr["clone3"], [_ret(_ERRNO | errno.ENOSYS)])  # glibc then uses clone, whose flags we read
    prog += _when(nr["clone"], [
        (_LD_W_ABS, 0, 0, _arg_low(0)),         # flags
        (_JSET_K, 0, 1, _CLONE_NEW),
        _ret(deny),
        _ret(_ALLOW),
    ])
    if not sockets:
        if unix_seqpacket:
            prog += _when(nr["socket"], _unix_of_kind(_SOCK_SEQPACKET))
        else:
            prog += _when(nr["socket"], [_ret(_ERRNO | errno.EACCES)])
        prog += _when(nr["socketpair"], _unix_of_kind(_SOCK_STREAM))
    prog.append(_ret(_ALLOW))
    return prog


def restrict(sockets=True, unix_seqpacket=False):
    """Install the filter on the calling process (no_new_privs is set first, as seccomp requires).

    `sockets=False`: refuse new sockets too (where the worker shares the host's network);
    `unix_seqpacket=True` then lets `socket(AF_UNIX, SOCK_SEQPACKET)` through, which CUDA's cuInit makes
    (without it cuInit fails with error 304; seen on an H200): see the module's docstring."""
    prog = _program(sockets, unix_seqpacket)
    arr = (_SockFilter * len(prog))(*[_SockFilter(*ins) for ins in prog])
    fprog = _SockFprog(len(prog), arr)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise SocketFilterError(ctypes.get_errno(), "prctl(NO_NEW_PRIVS)")
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.byref(fprog), 0, 0) != 0:
        e = ctypes.get_errno()
        raise SocketFilterError(e, f"seccomp: {errno.errorcode.get(e, e)}")
