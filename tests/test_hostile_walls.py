"""Hostile tests of the worker's walls: identity, file view, sockets, memory, process tree (issue 17).

Each test runs a real submission in a real worker and attacks as a student would:
read /etc/shadow, talk to a server of the grading user over a unix socket (a
real tmux server where tmux is installed), send UDP or TCP, map shared memory
past the cap, leave a fork chain behind. They run as whoever runs the suite (CI
runs as root) and, where the suite runs as root, once more as an ordinary user
(a uid with no account, in a private mount namespace that makes the root-only
Python under /root reachable, as a TA's own Python would be). The fallback walls
(no namespaces: a container that forbids them) are tested with HWCHECK_NAMESPACES=0.
Tests marked `walls` hold in both modes: tests/test_wall_modes.py runs them again
with CAP_SYS_ADMIN dropped (Gradescope's container), where each detects the mode
(`_namespaced`) and expects that mode's walls.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from checker.running.sandbox import Limits, SubmissionHandle, Zygote
UID_BASE = 1 << 30  # a worker's uid: this plus its pid, its own (checker.worker.isolation.worker_ids)


def _own_uid(uid, isolation):
    """A uid that is not the grader's nor root's, is this worker's alone (none shares it: named so in
    grader.isolation; tests/test_hostile_identity.py attacks one worker from another), and owns nothing."""
    return (uid not in (0, os.getuid(), 65534) and uid >= UID_BASE
            and f"user-unique(uid {uid}" in " ".join(isolation))
from sandbox_helpers import GOOD, live_pids, wait_until, write

pytestmark = pytest.mark.slow
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IS_ROOT = os.geteuid() == 0

SPY = textwrap.dedent('''\
    import os, socket, subprocess

    def _try(f):
        try:
            return "ok: " + str(f())[:200]
        except BaseException as e:
            return "refused: " + type(e).__name__

    def identity():
        status = {l.split(":")[0]: l.split(":", 1)[1].strip() for l in open("/proc/self/status")
                  if l.startswith(("CapEff", "CapPrm", "NoNewPrivs"))}
        return {"uid": os.getuid(), "euid": os.geteuid(), "gid": os.getgid(), "pid": os.getpid(),
                "procs": [p for p in os.listdir("/proc") if p.isdigit()], **status}

    def read(path):
        return _try(lambda: open(path).read())

    def listdir(path):
        return _try(lambda: sorted(os.listdir(path)))

    def unix(path, payload):
        def go():
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(2)
            s.connect(path)
            s.sendall(payload.encode())
            return "sent"
        return _try(go)

    def udp(port, payload):
        def go():
            s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            s.sendto(payload.encode(), ("127.0.0.1", port))
            return "sent"
        return _try(go)

    def tcp(port, payload):
        def go():
            s = socket.create_connection(("127.0.0.1", port), timeout=2)
            s.sendall(payload.encode())
            return "sent"
        return _try(go)

    def tmux(sock, command):
        return _try(lambda: subprocess.run(["tmux", "-S", sock, "run-shell", command], capture_output=True,
                                            timeout=5).returncode)
    ''')


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


def _handle(zyg, path, **limits):
    h = SubmissionHandle(str(path), zyg, Limits(**{"call_s": 10, "cell_s": 10, "submission_s": 60, **limits}))
    report = h.load()
    if not report["ok"] and "user-unique-unavailable(refused to run code as root)" in h.isolation:
        h.close()  # root without namespaces where nobody cannot reach Python (tests/test_hostile_fallback.py)
        pytest.skip("the grader refuses to run code here: root, no namespaces, this Python closed to others")
    assert report["ok"], report
    return h


@pytest.fixture
def request_cleanup():
    paths = []
    yield paths
    for p in paths:
        shutil.rmtree(p, ignore_errors=True)


class _Listener:
    """Servers of the grading user that a worker must not reach; each records what it received."""

    def __init__(self, tmp_path):
        self.got = []
        self.dir = tmp_path / "services"
        self.dir.mkdir()
        os.chmod(self.dir, 0o755)
        self.unix_path = str(self.dir / "svc.sock")
        self.abstract = f"\0hwcheck-test-{os.getpid()}-{time.monotonic_ns()}"
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
        os.chmod(self.unix_path, 0o777)  # even a socket anyone may connect to
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
                        self.got.append(s.recv(100))
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


def _attack_everything(h, listener, tmp_path):
    """Run every attack of the spy; return its answers."""
    out = {"identity": h.call("identity"), "shadow": h.call("read", "/etc/shadow"),
           "root": h.call("listdir", "/root"), "passwd": h.call("read", "/etc/passwd"),
           "reference": h.call("read", os.path.join(REPO, "reference", "attention.py")),
           "tmp": h.call("listdir", "/tmp"),
           "unix": h.call("unix", listener.unix_path, "pathname"),
           "abstract": h.call("unix", listener.abstract, "abstract"),
           "udp": h.call("udp", listener.udp_port, "udp"),
           "tcp": h.call("tcp", listener.tcp_port, "tcp")}
    if shutil.which("tmux"):
        sock = str(listener.dir / "tmux.sock")
        marker = tmp_path / "tmux-ran"
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "sleep 30"], check=True, timeout=10)
        os.chmod(sock, 0o777)
        try:
            out["tmux"] = h.call("tmux", sock, f"touch {marker}")
            time.sleep(0.3)
            out["tmux_marker"] = marker.exists()
        finally:
            subprocess.run(["tmux", "-S", sock, "kill-server"], timeout=10)
    return out


def _namespaced(h):
    """Did this worker get namespaces (else: the fallback walls of a container without CAP_SYS_ADMIN)?"""
    return "pid-namespace" in h.isolation


def _assert_walled(out, listener, isolation, namespaced=True):
    ident = out["identity"]
    assert _own_uid(ident["uid"], isolation) and ident["euid"] == ident["uid"], (ident, isolation)
    assert ident["uid"] != 0
    assert int(ident["CapEff"], 16) == 0 and int(ident["CapPrm"], 16) == 0, ident
    assert ident["NoNewPrivs"] == "1"
    for key in ("shadow", "reference", "unix", "abstract", "udp", "tcp"):
        assert out[key].startswith("refused"), (key, out[key])
    assert not out["root"].startswith("ok") or out["root"] in ("ok: []", "ok: ['.pyenv']"), out["root"]
    if namespaced:
        assert "root:x:0:0" not in out["passwd"]  # the host's accounts are not listed
    time.sleep(0.3)
    assert listener.got == [], f"a server of the grading user was reached: {listener.got}"
    if "tmux" in out:
        assert out["tmux_marker"] is False, "a tmux server of the grading user ran the worker's command"


@pytest.mark.walls
def test_worker_cannot_reach_the_grading_users_files_servers_or_network(zyg, tmp_path):
    listener = _Listener(tmp_path)
    h = _handle(zyg, write(tmp_path, "spy.py", SPY))
    try:
        out = _attack_everything(h, listener, tmp_path)
        _assert_walled(out, listener, h.isolation, namespaced=_namespaced(h))
        assert any(w.startswith("user-unique(") for w in h.isolation)
        if not _namespaced(h):  # no CAP_SYS_ADMIN: seccomp refuses every new socket instead
            assert any(w.startswith("seccomp-denylist-no-sockets") for w in h.isolation), h.isolation
            return
        # PID 1 of its own PID namespace: no process of the host is visible
        assert out["identity"]["pid"] == 1
        assert len(out["identity"]["procs"]) <= 3, out["identity"]["procs"]
        assert {"pid-namespace", "mount-namespace", "network-namespace"} <= set(h.isolation)
    finally:
        h.close()
        listener.close()


PROBE = textwrap.dedent('''\
    import json, sys
    sys.path.insert(0, sys.argv[3])
    from checker.running.sandbox import Limits, SubmissionHandle, Zygote
    with Zygote() as z:
        h = SubmissionHandle(sys.argv[1], z, Limits(call_s=10, cell_s=10, submission_s=60))
        h.load()
        out = {"isolation": h.isolation, "identity": h.call("identity"),
               "secret": h.call("read", sys.argv[2]), "shadow": h.call("read", "/etc/shadow")}
        h.close()
    print(json.dumps(out))
    ''')


@pytest.mark.skipif(not IS_ROOT or not shutil.which("setpriv") or not shutil.which("unshare"),
                    reason="needs root (to arrange an ordinary user whose Python is reachable) and util-linux")
def _reachable(path):
    """Mount steps (in a private mount namespace) that let any user walk down to `path` where one of its
    folders, outside /root, is closed to others (a checkout in a `mktemp -d` folder, mode 0700): a 0755
    tmpfs over that folder holding only the next step of the way, bound from the real one."""
    steps, parts = [], os.path.realpath(path).strip("/").split("/")
    for i in range(len(parts) - 1):
        folder = "/" + "/".join(parts[:i + 1])
        if folder == "/root" or os.stat(folder).st_mode & 0o001:
            continue
        real = f"/run/hwcheck-test-real{i}"
        steps += [f"mkdir -p {real}", f"mount --bind {folder} {real}", f"mount -t tmpfs -o mode=0755 tmpfs {folder}",
                  f"mkdir -p {folder}/{parts[i + 1]}", f"mount --bind {real}/{parts[i + 1]} {folder}/{parts[i + 1]}"]
    return steps


def test_as_an_ordinary_user_the_worker_owns_nothing_of_that_user(request_cleanup):
    """The grader run by an ordinary user (uid 54321): its worker, inside a user namespace, cannot
    read that user's own private file, even though the worker's uid outside is that user's."""
    import pathlib
    import tempfile
    with open("/proc/self/status") as f:
        if not int(next(ln.split()[1] for ln in f if ln.startswith("CapEff:")), 16) & (1 << 21):
            pytest.skip("arranging a Python an ordinary user can reach takes mounts (CAP_SYS_ADMIN), which this "
                        "process lacks (Gradescope's mode: there the grader runs as root, tested by every "
                        "`walls` test)")
    uid = 54321
    work = pathlib.Path(tempfile.mkdtemp(prefix="hwcheck-user-test-", dir="/tmp"))  # /tmp/pytest-of-root is 0700
    request_cleanup.append(work)
    os.chmod(work, 0o755)
    os.chown(work, uid, uid)
    secret = work / "private.txt"
    secret.write_text("the TA's private notes")
    os.chown(secret, uid, uid)
    os.chmod(secret, 0o600)
    spy = work / "spy.py"
    spy.write_text(SPY)
    os.chown(spy, uid, uid)
    probe = work / "probe.py"
    probe.write_text(PROBE)
    # /root (0700) holds this machine's Python: show the user only its .pyenv, as a TA's own install is
    real_root = "/run/hwcheck-test-realroot"
    script = (f"mkdir -p {real_root} && mount --bind /root {real_root} && "
              f"mount -t tmpfs -o mode=0755 tmpfs /root && "
              + " && ".join(f"mkdir -p /root/{d} && mount --bind {real_root}/{d} /root/{d}"
                            for d in os.listdir("/root") if d in (".pyenv", ".local", ".cache"))
              + "".join(f" && {step}" for step in _reachable(REPO))
              + f" && cd {work} && exec setpriv --reuid={uid} --regid={uid} --clear-groups "
              f"env -i PATH=/usr/bin:/bin HOME={work} TMPDIR={work} {sys.executable} {probe} {spy} {secret} {REPO}")
    r = subprocess.run(["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=180)
    assert r.returncode == 0, r.stderr[-3000:]
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert _own_uid(out["identity"]["uid"], out["isolation"]) and int(out["identity"]["CapEff"], 16) == 0
    assert out["secret"].startswith("refused"), out["secret"]
    assert out["shadow"].startswith("refused")
    assert f"user-unique(uid {out['identity']['uid']} in a user namespace)" in out["isolation"], out["isolation"]
    assert out["identity"]["pid"] == 1


MEMORY = textwrap.dedent('''\
    import mmap

    def shared(mb):
        m = mmap.mmap(-1, mb << 20)           # shared anonymous: not counted by RLIMIT_DATA
        for i in range(0, mb << 20, 4096):
            m[i] = 1
        return "kept %d MiB" % mb

    def private(mb):
        b = bytearray(mb << 20)
        return len(b)
    ''')


@pytest.mark.walls
def test_shared_memory_counts_against_the_cap(zyg, tmp_path):
    h = _handle(zyg, write(tmp_path, "mem.py", MEMORY), memory_mb=384)
    try:
        assert h.call("private", 64) == 64 << 20  # honest use within the cap works
        with pytest.raises(Exception) as e:
            h.call("shared", 1024)
        assert "kept" not in str(e.value)
        assert any(w.startswith(("cgroup2-memory", "cgroup1-memory", "address-space", "memory-watch")) for w in h.isolation), \
            h.isolation
    finally:
        h.close()


CHAIN = textwrap.dedent('''\
    import ctypes, os, time

    def chain(name, seconds):
        """A fork chain in new sessions: each process names itself, forks the next and exits."""
        if os.fork():
            return "started"

        def setsid():
            try:
                os.setsid()
            except OSError:    # seccomp refuses it (a session is a CPU share of its own): the chain goes on
                pass
        setsid()
        end = time.time() + seconds
        libc = ctypes.CDLL(None)
        while time.time() < end:
            libc.prctl(15, name.encode(), 0, 0, 0)     # PR_SET_NAME
            if os.fork():
                os._exit(0)
            setsid()
            time.sleep(0.02)
        os._exit(0)
    ''')


def _named(name):
    out = []
    for p in live_pids():
        try:
            with open(f"/proc/{p}/comm") as f:
                if f.read().strip() == name:
                    out.append(p)
        except OSError:
            pass
    return out


@pytest.mark.walls
def test_a_fork_chain_dies_with_its_worker(zyg, tmp_path):
    """With namespaces the chain dies with its PID namespace; without them the worker's parent, a child
    subreaper every orphan of the chain falls to, kills all below it."""
    name = f"hwchain{os.getpid() % 10000}"
    h = _handle(zyg, write(tmp_path, "chain.py", CHAIN))
    try:
        assert h.call("chain", name, 30) == "started"
        alive = wait_until(lambda: _named(name), timeout=3)
        assert alive, "the chain did not start"
        if _namespaced(h):
            mine = os.readlink("/proc/self/ns/pid")
            theirs = {os.readlink(f"/proc/{p}/ns/pid") for p in alive if os.path.exists(f"/proc/{p}")}
            assert theirs and mine not in theirs, "the chain runs in the grader's PID namespace"
    finally:
        h.close()
    # the namespace dies with its init: nothing of the chain is left, with no sweep to wait for
    assert wait_until(lambda: not _named(name), timeout=0.5), f"the chain outlived its worker: {_named(name)}"
    time.sleep(0.5)
    assert not _named(name)


def test_without_namespaces_sockets_are_refused_and_the_gap_is_named(tmp_path, monkeypatch):
    """A container that forbids namespaces: seccomp refuses every new socket, and grader.isolation
    says the namespaces were missing. As root where nobody cannot reach this Python, no code runs
    at all (tests/test_hostile_fallback.py makes both cases for real)."""
    monkeypatch.setenv("HWCHECK_NAMESPACES", "0")
    listener = _Listener(tmp_path)
    with Zygote() as z:
        h = SubmissionHandle(str(write(tmp_path, "spy.py", SPY)), z, Limits(call_s=10, cell_s=10, submission_s=60))
        report = h.load()
        try:
            assert any(w.startswith("namespaces-") for w in h.isolation), h.isolation
            if not report["ok"]:
                assert IS_ROOT and "GraderRefused" in " ".join(report["messages"]), report
                assert "user-unique-unavailable(refused to run code as root)" in h.isolation, h.isolation
                return
            assert any(w.startswith("seccomp-denylist-no-sockets") for w in h.isolation)
            for key, args in (("unix", (listener.unix_path, "p")), ("unix", (listener.abstract, "a")),
                              ("udp", (listener.udp_port, "u")), ("tcp", (listener.tcp_port, "t"))):
                assert h.call(key, *args).startswith("refused"), key
            assert h.call("read", "/etc/shadow").startswith("refused")
            if IS_ROOT:
                ident = h.call("identity")
                assert int(ident["CapEff"], 16) == 0 and _own_uid(ident["uid"], h.isolation), (ident, h.isolation)
            time.sleep(0.3)
            assert listener.got == []
        finally:
            h.close()
            listener.close()


@pytest.mark.walls
def test_grade_as_root_keeps_shadow_and_the_tmux_server_out_of_reach(tmp_path):
    """The end-to-end attack of the issue: a submission that puts /etc/shadow into a test message and
    asks a tmux server of the grading user to rewrite its scorecard gets neither."""
    if not os.access("/etc/shadow", os.R_OK):
        pytest.skip("this user cannot read /etc/shadow itself: nothing to leak")
    shadow = open("/etc/shadow").read()
    first_hash = next((ln.split(":")[1] for ln in shadow.splitlines() if len(ln.split(":")) > 2
                       and len(ln.split(":")[1]) > 3), shadow.splitlines()[0])
    subs = tmp_path / "subs"
    subs.mkdir()
    out = tmp_path / "out"
    sock = str(tmp_path / "tmux.sock")
    marker = tmp_path / "forged"
    attack = GOOD.replace("def get_scores(matrix, vector):\n    return matrix @ vector", textwrap.dedent(f'''\
        def get_scores(matrix, vector):
            import subprocess
            try:
                leak = open("/etc/shadow").read()
            except OSError as e:
                leak = str(e)
            try:
                subprocess.run(["tmux", "-S", {sock!r}, "run-shell", "touch {marker}"], timeout=5)
            except Exception:
                pass
            raise ValueError(leak[:3000])'''))
    assert attack != GOOD
    (subs / "mallory.py").write_text(attack)
    have_tmux = shutil.which("tmux") is not None
    if have_tmux:
        subprocess.run(["tmux", "-S", sock, "new-session", "-d", "sleep 60"], check=True, timeout=10)
        os.chmod(sock, 0o777)
    try:
        r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention",
                            "-o", str(out), "--public"], capture_output=True, text=True, timeout=300, cwd=REPO)
    finally:
        if have_tmux:
            subprocess.run(["tmux", "-S", sock, "kill-server"], timeout=10)
    assert r.returncode in (0, 1), r.stderr[-2000:]
    written = "".join(p.read_text(errors="replace") for p in out.rglob("*") if p.is_file())
    assert "mallory" in written
    assert first_hash not in written and first_hash not in r.stdout + r.stderr
    assert not marker.exists(), "the tmux server ran the submission's command"


def test_grade_names_the_missing_walls_once_per_batch(tmp_path):
    """Where a wall cannot be put up, `grade` says so once for the batch, and each scorecard keeps it."""
    subs = tmp_path / "subs"
    subs.mkdir()
    for name in ("alice", "bob"):
        (subs / f"{name}.py").write_text(GOOD)
    out = tmp_path / "out"
    env = {**os.environ, "HWCHECK_NAMESPACES": "0"}
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
                        "--public"], capture_output=True, text=True, timeout=300, cwd=REPO, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    lines = [ln for ln in r.stdout.splitlines() if "walls missing" in ln]
    assert len(lines) == 1 and "namespaces-off" in lines[0], r.stdout
    card = json.loads((out / "alice.json").read_text())
    assert any(w.startswith("namespaces-off") for w in card["grader"]["isolation"])
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o",
                        str(tmp_path / "out2"), "--public"], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0 and "namespaces-off" not in r.stdout, r.stdout


@pytest.mark.walls
def test_a_link_above_a_secret_does_not_open_it(tmp_path, monkeypatch):
    """A venv holds `lib64 -> lib`, above site-packages/reference where hwcheck is installed from its wheel
    (Gradescope's container): Landlock and bind mounts follow a link to its target, so a link to a folder
    holding a secret must be carved like that folder, or the whole reference is readable through it."""
    from checker.worker import landlock
    venv = tmp_path / "venv"
    site = venv / "lib" / "python3.11" / "site-packages"
    (site / "reference").mkdir(parents=True)
    (site / "reference" / "attention.py").write_text("ANSWERS = 42\n")
    (site / "numpy").mkdir()
    (site / "numpy" / "__init__.py").write_text("")
    (venv / "lib64").symlink_to("lib")
    (venv / "answers").symlink_to(site / "reference")
    secret = os.path.realpath(site / "reference")
    monkeypatch.setattr(sys, "path", [str(venv / "lib64" / "python3.11" / "site-packages"), str(venv)])
    roots = [os.path.realpath(r) for r in landlock.allowed_read_roots([secret])]
    assert not [r for r in roots if r == secret or secret.startswith(r + "/")], roots
    assert any(os.path.realpath(site / "numpy") == r or os.path.realpath(site / "numpy").startswith(r + "/")
               for r in roots)
    if landlock.landlock_abi() < 1:
        pytest.skip("Landlock is not in this kernel: the roots above are what it would be given")
    attack = textwrap.dedent(f"""\
        import json, sys
        from checker.worker import landlock
        landlock.restrict(landlock.landlock_abi(), {json.dumps(landlock.allowed_read_roots([secret]))}, [], [])
        out = {{}}
        for name, path in (("lib64", {json.dumps(str(venv / "lib64" / "python3.11" / "site-packages" / "reference" / "attention.py"))}),
                           ("link", {json.dumps(str(venv / "answers" / "attention.py"))}),
                           ("numpy", {json.dumps(str(site / "numpy" / "__init__.py"))})):
            try:
                open(path).read()
                out[name] = "read"
            except OSError as e:
                out[name] = "refused"
        print(json.dumps(out))
    """)
    proc = subprocess.run([sys.executable, "-c", attack], capture_output=True, text=True, timeout=60, cwd=REPO,
                          env=dict(os.environ, PYTHONPATH=REPO))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"lib64": "refused", "link": "refused", "numpy": "read"}


PROC_SPY = textwrap.dedent('''\
    import os

    def scan(token, grader):
        """Every command line and status under /proc that holds `token`, what reading the grader's gave, and
        what the worker reads of its own /proc and of the machine's."""
        found = {}
        for pid in os.listdir("/proc"):
            for name in ("cmdline", "status", "environ"):
                try:
                    with open(f"/proc/{pid}/{name}", "rb") as f:
                        if token.encode() in f.read():
                            found[f"{pid}/{name}"] = True
                except OSError:
                    pass
        def read(path):
            try:
                with open(path, "rb") as f:
                    return len(f.read())
            except OSError as e:
                return type(e).__name__
        return {"found": found, "grader": read(f"/proc/{grader}/cmdline"),
                "own": {p: read(p) for p in ("/proc/self/status", "/proc/self/maps", "/proc/thread-self/comm",
                                             f"/proc/{os.getpid()}/cmdline", "/proc/cpuinfo", "/proc/meminfo",
                                             "/proc/sys/kernel/pid_max")}}
    ''')


@pytest.mark.walls
def test_a_worker_reads_no_other_process_command_line(zyg, tmp_path):
    """Anyone may read a process's command line: a grader's `--seed`, the paths of the files it grades, a
    password a user gave a program. A worker scans /proc for a token that a process of the grading user
    holds in its arguments (and reads the grader's own command line): with namespaces it sees no process
    of the host; without (a container without CAP_SYS_ADMIN) Landlock lets it read only its own folder of
    /proc and what is no process's. It still reads its own /proc files and the machine's."""
    token = f"hw-secret-{os.getpid()}-{time.monotonic_ns()}"
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--password", token])
    h = _handle(zyg, write(tmp_path, "proc_spy.py", PROC_SPY))
    try:
        with open(f"/proc/{holder.pid}/cmdline", "rb") as f:
            assert token.encode() in f.read()  # the grading user reads it: the token is there to find
        out = h.call("scan", token, os.getpid())
        assert out["found"] == {}, out["found"]
        assert out["grader"] in ("PermissionError", "FileNotFoundError"), out["grader"]
        assert all(isinstance(n, int) and n > 0 for n in out["own"].values()), out["own"]
        if not _namespaced(h):
            assert any(w.startswith("landlock-") and "-proc-own" in w for w in h.isolation), h.isolation
    finally:
        h.close()
        holder.kill()
        holder.wait()


OWN_PROC = textwrap.dedent('''\
    import os, sys
    sys.path.insert(0, {repo!r})
    from checker.worker import landlock
    landlock.restrict(landlock.landlock_abi(), landlock.allowed_read_roots([]) + landlock.own_proc(os.getpid()),
                      [], [], list_only=["/proc"])
    print("restricted", flush=True)
    sys.stdin.readline()  # the test dropped the kernel's caches
    got = []
    for path in ("/proc/self/status", "/proc/cpuinfo", "/proc/1/cmdline"):
        try:
            open(path, "rb").read()
            got.append("ok")
        except OSError as e:
            got.append(type(e).__name__)
    print(" ".join(got), flush=True)
    ''')


@pytest.mark.skipif(not IS_ROOT, reason="dropping the kernel's caches (what the test needs) takes root")
def test_own_proc_stays_readable_after_the_kernel_drops_its_dentries():
    """procfs makes a new inode for a folder whose dentry was dropped, and a Landlock rule names an inode:
    the rules of `landlock.own_proc` keep their folders open, so a worker still reads its own /proc after
    the kernel dropped its caches (without that it got PermissionError there)."""
    from checker.worker import landlock
    if landlock.landlock_abi() < 1:
        pytest.skip("no Landlock in this kernel")
    proc = subprocess.Popen([sys.executable, "-c", OWN_PROC.format(repo=REPO)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "restricted", proc.stderr.read()[-2000:]
        try:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("2")
        except OSError as e:
            pytest.skip(f"the kernel's caches cannot be dropped here ({e.strerror})")
        out, err = proc.communicate("go\n", timeout=30)
    finally:
        proc.kill()
        proc.wait()
    assert out.split() == ["ok", "ok", "PermissionError"], err[-2000:]


ZYGOTE_SPY = textwrap.dedent('''\
    import glob, os, sys

    def look(zygote_dir):
        """What the worker sees of the zygote's own folder: on its sys.path, listed, its files read."""
        out = {"on_path": [p for p in sys.path if p and os.path.realpath(p) == zygote_dir],
               "globbed": glob.glob("/tmp/hwcheck-zygote-*")}
        for name in ("", "stderr", "made"):
            path = os.path.join(zygote_dir, name)
            try:
                out[name or "dir"] = "read: " + (repr(os.listdir(path)) if not name else open(path).read()[:200])
            except OSError as e:
                out[name or "dir"] = type(e).__name__
        return out
    ''')


@pytest.mark.walls
def test_a_worker_sees_nothing_of_the_zygotes_own_folder(zyg, tmp_path):
    """The zygote keeps its log (stderr: what failed, with the paths of other workers' dirs) and the list of
    every worker dir it made in a folder of its own. That folder was the zygote's cwd, so `python -m` put
    it first on the zygote's sys.path, which every worker inherits and whose folders the walls let it read:
    a worker found the folder on sys.path and read the log and the list. It must see none of it."""
    zdir = os.path.realpath(zyg._dir)
    h = _handle(zyg, write(tmp_path, "zygote_spy.py", ZYGOTE_SPY))
    try:
        assert os.path.exists(os.path.join(zdir, "made"))  # this worker's dir is named there: there to find
        out = h.call("look", zdir)
        assert out["on_path"] == [], out
        assert out["globbed"] == [], out
        for key in ("dir", "stderr", "made"):
            assert out[key] in ("PermissionError", "FileNotFoundError"), (key, out)
    finally:
        h.close()


CHECKOUT_SPY = textwrap.dedent('''\
    import os

    def look(root, planted):
        """What the worker sees of the checkout hwcheck runs from: its own package, and nothing else of it."""
        out = {}
        for name, path in (("listing", root), ("readme", os.path.join(root, "README.md")),
                           ("pyproject", os.path.join(root, "pyproject.toml")), ("planted", planted),
                           ("package", os.path.join(root, "checker", "wire.py"))):
            try:
                out[name] = "read: " + (repr(sorted(os.listdir(path)))[:300] if name == "listing"
                                        else open(path).read()[:80])
            except OSError as e:
                out[name] = type(e).__name__
        return out
    ''')


@pytest.mark.walls
def test_a_worker_reads_nothing_of_the_checkout_but_hwcheck_itself(zyg, tmp_path):
    """A course runs hwcheck from its checkout (`pip install -e .`, as the README says) and grades into folders
    beside it: `hwcheck grade submissions/ -o grades/` leaves earlier batches' scorecards (with their seeds),
    grades.csv and the students' files in the checkout. The checkout is hwcheck's import root, so a worker
    could list it and read all of that but the few trees named secret. It may read hwcheck's own package (the
    worker imports from it), nothing else of the checkout: a folder planted there stands for an earlier batch."""
    planted_dir = os.path.join(REPO, f"grades-test-{os.getpid()}-{time.monotonic_ns()}")
    os.mkdir(planted_dir)
    planted = os.path.join(planted_dir, "grades.csv")
    with open(planted, "w") as f:
        f.write("id,score\nalice,97\n")
    try:
        h = _handle(zyg, write(tmp_path, "checkout_spy.py", CHECKOUT_SPY))
        try:
            out = h.call("look", REPO, planted)
        finally:
            h.close()
    finally:
        shutil.rmtree(planted_dir)
    assert out["package"].startswith("read: "), out  # the worker's own code stays readable
    for key in ("listing", "readme", "pyproject", "planted"):
        assert out[key] in ("PermissionError", "FileNotFoundError"), (key, out)


@pytest.mark.walls
def test_a_worker_reads_nothing_of_opt_but_a_python_installed_there(zyg, tmp_path):
    """/opt holds a course's files as often as a Python (docs/trust-model.md suggests /opt/hwcheck for the
    Python): an earlier batch's output, a repository, notes. A worker read any of them by path (an attacker's
    probe read /opt/course/notes/gradebook_private.csv in both wall modes): only the Python trees are open."""
    if not os.access("/opt", os.W_OK):
        pytest.skip("/opt is not writable here (the test plants a course's file there)")
    planted_dir = f"/opt/hwcheck-test-{os.getpid()}-{time.monotonic_ns()}"
    os.mkdir(planted_dir)
    os.chmod(planted_dir, 0o755)
    planted = os.path.join(planted_dir, "gradebook_private.csv")
    with open(planted, "w") as f:
        f.write("alice,A+,private feedback\n")
    os.chmod(planted, 0o644)
    try:
        h = _handle(zyg, write(tmp_path, "opt_spy.py", CHECKOUT_SPY))
        try:
            out = h.call("look", planted_dir, planted)
        finally:
            h.close()
    finally:
        shutil.rmtree(planted_dir)
    for key in ("listing", "planted"):
        assert out[key] in ("PermissionError", "FileNotFoundError"), (key, out)
