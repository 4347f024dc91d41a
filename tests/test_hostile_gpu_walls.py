"""Hostile tests of the walls a worker puts up where a GPU is present (checker.worker.isolation).

On a real H200 the CUDA driver's cuInit failed (error 304) inside the worker: Landlock kept it from
naming its threads in /proc/self/task/<tid>/comm. With a GPU the worker may therefore write files that
exist under /proc. These tests put up the walls exactly as a worker does with a GPU (`apply_isolation`,
its GPU test answered yes with /dev/zero standing in for the GPU's device files, so they run on any
machine), then attack what that rule opens: another process's /proc files (the grader's own), the
kernel's settings under /proc/sys, a new file under /proc, and a file outside /proc. A worker must still
reach none of them, while the write CUDA needs goes through. Both wall modes: with namespaces, and the
fallback without them (HWCHECK_NAMESPACES=0 here; the capsh re-run of `walls` makes it for real).
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = [pytest.mark.walls]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

ATTACK = textwrap.dedent('''
    import json, os, sys, tempfile
    sys.path.insert(0, {repo!r})
    from checker.worker import isolation
    isolation._gpu_devices = lambda: ["/dev/zero"]  # the GPU test says yes; /dev/zero stands in for /dev/nvidia*
    work = {work!r}  # made by the test, which removes it (the worker, once walled in, cannot)
    tempfile.gettempdir()  # known before the walls, as in a zygote, which made the worker's folder there
    try:
        walls = isolation.apply_isolation(work, [], use_namespaces={namespaces})
    except isolation.WallsRefused as e:
        print(json.dumps({{"refused": str(e)}}))
        sys.exit(0)
    out = {{"walls": walls, "uid": os.getuid()}}

    def attempt(name, path, text="x", mode="w"):
        try:
            with open(path, mode) as f:
                f.write(text)
            out[name] = "written"
        except OSError as e:
            out[name] = type(e).__name__

    attempt("own_thread_name", "/proc/thread-self/comm", "cuda-thread")
    with open("/proc/thread-self/comm") as f:
        out["own_thread_name_now"] = f.read().strip()
    attempt("grader_comm", "/proc/{grader}/comm")
    attempt("grader_oom", "/proc/{grader}/oom_score_adj", "-1000")
    attempt("grader_mem", "/proc/{grader}/mem", "\\0", mode="a")
    attempt("hostname", "/proc/sys/kernel/hostname")
    attempt("vm_setting", "/proc/sys/vm/drop_caches", "3")
    attempt("new_file", "/proc/self/hwcheck-new")
    attempt("outside", {outside!r})

    import socket
    def make(name, family, kind):
        try:
            socket.socket(family, kind).close()
            out[name] = "made"
        except OSError as e:
            out[name] = type(e).__name__
    make("unix_seqpacket", socket.AF_UNIX, socket.SOCK_SEQPACKET)  # what cuInit makes
    make("unix_dgram", socket.AF_UNIX, socket.SOCK_DGRAM)
    make("udp", socket.AF_INET, socket.SOCK_DGRAM)
    make("tcp", socket.AF_INET, socket.SOCK_STREAM)
    make("netlink", socket.AF_NETLINK, socket.SOCK_RAW)
    try:  # a datagram pair can sendto() any unix socket of the host: refused as without a GPU
        socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM)
        out["unix_dgram_pair"] = "made"
    except OSError as e:
        out["unix_dgram_pair"] = type(e).__name__
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        s.connect({listener!r})
        s.send(b"hidden inputs")
        out["grader_listener"] = "connected"
    except OSError as e:
        out["grader_listener"] = type(e).__name__
    print(json.dumps(out))
''')


@pytest.fixture
def work():
    """The worker's folder, in the system's temp dir (open to the worker's identity), removed afterwards."""
    path = tempfile.mkdtemp(prefix="gpuwalls-")
    os.chmod(path, 0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("namespaces", [True, False], ids=["namespaces", "fallback"])
def test_a_worker_with_a_gpu_writes_its_own_thread_names_and_nothing_else_under_proc(namespaces, tmp_path, work):
    """Also CUDA's unix seqpacket socket (without namespaces every other new socket stays refused), which
    cannot reach a seqpacket service of the grader's."""
    outside = tmp_path / "grader-file.txt"
    outside.write_text("the grader's\n")
    os.chmod(tmp_path, 0o777)
    os.chmod(outside, 0o666)  # open to everyone by the usual permissions: only the walls keep the worker out
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(str(tmp_path / "service.sock"))  # the usual mode (0755 less umask): others may not connect
    listener.listen(1)
    listener.settimeout(0.1)
    code = ATTACK.format(repo=REPO, namespaces=namespaces, grader=os.getpid(), outside=str(outside),
                         listener=str(tmp_path / "service.sock"), work=work)
    env = {**os.environ, **({} if namespaces else {"HWCHECK_NAMESPACES": "0"})}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert lines, proc.stdout + proc.stderr[-3000:]
    out = json.loads(lines[-1])
    if "refused" in out:
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others): "
                    + out["refused"][:120])
    assert any(w.startswith("landlock") for w in out["walls"]), out["walls"]
    assert any(w.endswith("-proc-writable") for w in out["walls"]), out["walls"]
    # what CUDA needs: a thread of the worker names itself
    assert out["own_thread_name"] == "written" and out["own_thread_name_now"] == "cuda-thread", out
    # what the rule must not open
    for attack in ("grader_comm", "grader_oom", "grader_mem", "hostname", "vm_setting", "new_file", "outside"):
        assert out[attack] != "written", (attack, out)
    assert outside.read_text() == "the grader's\n"
    assert out["grader_listener"] != "connected", out
    with pytest.raises(OSError):
        listener.accept()
    listener.close()
    if not namespaces:  # the host's network: only CUDA's kind of socket may be made
        assert any(w == "seccomp-denylist-no-sockets-but-unix-seqpacket" for w in out["walls"]), out["walls"]
        assert out["unix_seqpacket"] == "made", out
        assert all(out[k] != "made" for k in ("unix_dgram", "udp", "tcp", "netlink", "unix_dgram_pair")), out
    with open(f"/proc/{os.getpid()}/oom_score_adj") as f:
        assert f.read().strip() != "-1000"


def test_without_a_gpu_proc_stays_read_only(tmp_path, work):
    """The rule is for GPU machines only: elsewhere the worker cannot even name its own threads."""
    code = ATTACK.format(repo=REPO, namespaces=True, grader=os.getpid(), outside=str(tmp_path / "x"),
                         listener=str(tmp_path / "none.sock"), work=work).replace(
        'isolation._gpu_devices = lambda: ["/dev/zero"]', 'isolation._gpu_devices = lambda: []')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    out = json.loads([ln for ln in proc.stdout.splitlines() if ln.startswith("{")][-1])
    if "refused" in out:
        pytest.skip(out["refused"][:120])
    if not any(w.startswith("landlock-abi") for w in out["walls"]):
        pytest.skip("no Landlock here: /proc is closed by the uid alone")
    assert not any(w.endswith("-proc-writable") for w in out["walls"]), out["walls"]
    assert out["own_thread_name"] != "written", out
