"""Hostile tests of what one worker may take of the machine: disk (bytes and files) and tasks (issue 31.2-3).

Each test runs a real submission in a real worker that attacks as a student
could: 2 GiB written in big files, by fallocate, in files unlinked but kept
open or mapped (invisible in the folder), 200,000 files; 3,000 threads and 64
processes. The bounds hold in both modes (`walls`): with namespaces the
worker's dir is a tmpfs of its own (ENOSPC at the bound), without them
(CAP_SYS_ADMIN dropped, tests/test_wall_modes.py) a watcher outside the walls
kills the worker past it; tasks are capped by the pids cgroup (v2 or v1) or
RLIMIT_NPROC. Every attack stops by itself (bounded loops, a deadline), the
worker's dir is gone after, no process is left, and an honest classmate
graded at the same time (-j 2) keeps full marks.
"""

import glob
import json
import os
from shutil import which as shutil_which
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from checker.errors import GradingFailure
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from sandbox_helpers import GOOD, live_pids, wait_until, write

pytestmark = pytest.mark.slow
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20
DISK_MB, DISK_FILES, TASKS = 256, 4096, 512  # the bounds the walls name (checker.worker.diskcap, memory)

ATTACK = textwrap.dedent('''\
    import ctypes, mmap, os, threading, time

    def _report(done, err):
        return {"done": done, "error": None if err is None else f"{type(err).__name__}: {err}"[:200]}

    def fill(total_mb, file_mb, how="write", seconds=60):
        """Write `total_mb` MiB in files of `file_mb`; stop at the first refusal (or the deadline)."""
        end, chunk, done = time.time() + seconds, b"x" * (1 << 20), 0
        try:
            for i in range(total_mb // file_mb):
                fd = os.open(f"fill{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
                try:
                    if how == "fallocate":
                        os.posix_fallocate(fd, 0, file_mb << 20)
                        done += file_mb
                    else:
                        for _ in range(file_mb):
                            os.write(fd, chunk)
                            done += 1
                finally:
                    os.close(fd)
                if time.time() > end:
                    break
        except OSError as e:
            return _report(done, e)
        return _report(done, None)

    _held = []

    def hide(total_mb, file_mb, mapped=False):
        """Files written, then unlinked while kept open (or only mapped): not in any folder any more."""
        chunk, done = b"y" * (1 << 20), 0
        try:
            for i in range(total_mb // file_mb):
                fd = os.open(f"hidden{i}", os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
                for _ in range(file_mb):
                    os.write(fd, chunk)
                    done += 1
                if mapped:
                    _held.append(mmap.mmap(fd, 4096))
                    os.close(fd)
                else:
                    _held.append(fd)
                os.unlink(f"hidden{i}")
        except OSError as e:
            return _report(done, e)
        return _report(done, None)

    def starve(total_mb, file_mb, children=300, fds=4000, seconds=60):
        """The watch's passes made slow (h73): as many descriptors as the limit allows, inherited by hundreds of
        sleeping forks (each pass would read every one of them), then `fill`."""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
        except (ValueError, OSError):
            pass
        null = os.open(os.devnull, os.O_RDONLY)
        for _ in range(fds):
            try:
                os.dup(null)
            except OSError:
                break
        end = time.time() + seconds
        for _ in range(children):
            try:
                pid = os.fork()
            except OSError:
                break
            if pid == 0:
                while time.time() < end:
                    time.sleep(0.5)
                os._exit(0)
        return fill(total_mb, file_mb, seconds=seconds)

    def moving(total_mb, file_mb=16, seconds=60):
        """Files written (through a descriptor of their folder) in a folder renamed again and again by a
        thread, so that a walk listing it may find it gone by the time it looks inside."""
        os.mkdir("a")
        dfd = os.open("a", os.O_RDONLY | os.O_DIRECTORY)
        stop = threading.Event()

        def dance():
            i = 0
            while not stop.is_set():
                try:
                    os.rename("ab"[i % 2], "ab"[(i + 1) % 2])
                except OSError:
                    pass
                i += 1

        t = threading.Thread(target=dance, daemon=True)
        t.start()
        end, chunk, done = time.time() + seconds, b"m" * (1 << 20), 0
        try:
            for i in range(total_mb // file_mb):
                fd = os.open(f"f{i}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600, dir_fd=dfd)
                try:
                    for _ in range(file_mb):
                        os.write(fd, chunk)
                        done += 1
                finally:
                    os.close(fd)
                if time.time() > end:
                    break
        except OSError as e:
            return _report(done, e)
        finally:
            stop.set()
            t.join()
        return _report(done, None)

    def many(n, seconds=60):
        """Make `n` empty files, 1000 to a folder."""
        end, done = time.time() + seconds, 0
        try:
            for i in range(n):
                if i % 1000 == 0:
                    os.mkdir(f"many{i // 1000}")
                os.close(os.open(f"many{i // 1000}/{i}", os.O_WRONLY | os.O_CREAT, 0o600))
                done += 1
                if i % 1000 == 0 and time.time() > end:
                    break
        except OSError as e:
            return _report(done, e)
        return _report(done, None)

    def honest():
        """What an honest submission may write: a checkpoint and a few small files, read back."""
        with open("checkpoint.bin", "wb") as f:
            f.write(b"z" * (8 << 20))
        for i in range(50):
            with open(f"log{i}.txt", "w") as f:
                f.write("step %d\\n" % i)
        os.remove("log0.txt")
        return os.path.getsize("checkpoint.bin") + len(os.listdir("."))

    _stop = threading.Event()
    _children, _threads = [], []

    def tasks(n_threads, n_procs, name="hwtask"):
        """Start up to `n_threads` threads (small stacks) and `n_procs` processes (called `name`) that wait
        to be released."""
        threading.stack_size(64 * 1024)
        threads = procs = 0
        err = None
        try:
            for _ in range(n_threads):
                t = threading.Thread(target=_stop.wait, daemon=True)
                t.start()
                _threads.append(t)
                threads += 1
        except RuntimeError as e:
            err = e
        r, w = os.pipe()
        try:
            for _ in range(n_procs):
                pid = os.fork()
                if pid == 0:
                    os.close(w)
                    ctypes.CDLL(None).prctl(15, name.encode(), 0, 0, 0)    # PR_SET_NAME
                    os.read(r, 1)       # until the parent closes its end
                    os._exit(0)
                _children.append(pid)
                procs += 1
        except OSError as e:
            err = err or e
        os.close(r)
        _children.append(w)
        return {"threads": threads, "procs": procs, "error": None if err is None else f"{type(err).__name__}: {err}"}

    def release():
        _stop.set()
        os.close(_children.pop())
        for pid in _children:
            os.waitpid(pid, 0)
        for t in _threads:
            t.join()
        _children.clear()
        _threads.clear()
        return threading.active_count()

    def get_scores(matrix, vector):
        return matrix @ vector
    ''')


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


def _handle(zyg, path):
    h = SubmissionHandle(str(path), zyg, Limits(call_s=60, cell_s=10, submission_s=300))
    report = h.load()
    if any("user-unique-unavailable" in w for w in h.isolation):
        h.close()
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others)")
    assert report["ok"], report
    return h


def _namespaced(h):
    return "pid-namespace" in h.isolation


def _used(workdir):
    """Bytes allocated under `workdir` now (0 once it is gone), read from outside the worker."""
    total = 0
    for root, _, files in os.walk(workdir):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


class _Seen:
    largest, error = 0, None


def _largest_while(measure, expect, call, *args):
    """`call(*args)` inside `expect()` (pytest.raises), with `measure()` read every 20 ms from a thread
    meanwhile: the largest value seen, and the error raised."""
    import threading
    seen, done = _Seen(), threading.Event()

    def watch():
        while not done.is_set():
            seen.largest = max(seen.largest, measure())
            done.wait(0.02)
    t = threading.Thread(target=watch, daemon=True)
    t.start()
    try:
        with expect() as e:
            call(*args)
    finally:
        done.set()
        t.join()
    seen.error = e.value
    return seen


def _gone(workdir):
    return workdir is not None and not os.path.exists(workdir)


@pytest.mark.walls
@pytest.mark.parametrize("attack", [("fill", 2048, 64, "write"), ("fill", 2048, 256, "fallocate"),
                                    ("hide", 1024, 128, False), ("hide", 1024, 128, True),
                                    ("moving", 2048), ("many", 200_000), ("starve", 2048, 64)],
                         ids=["write", "fallocate", "unlinked-open", "unlinked-mapped", "moving", "files",
                              "slow-passes"])
def test_a_worker_writes_no_more_than_its_disk_bound(zyg, tmp_path, attack):
    """2 GiB (or 200,000 files) attempted: refused at the bound (ENOSPC in the student's traceback) with
    namespaces; without them the worker is killed within one look of the watcher. Honest writing works."""
    h = _handle(zyg, write(tmp_path, "attack.py", ATTACK))
    workdir = h.workdir
    try:
        assert h.call("honest") >= 8 * MiB
        if _namespaced(h):
            got = h.call(*attack)
            assert got["done"] <= (DISK_FILES if attack[0] == "many" else DISK_MB), got
            assert got["error"] and "No space left on device" in got["error"], got
            assert f"disk-tmpfs-{DISK_MB}MiB-{DISK_FILES}files" in h.isolation, h.isolation
        else:
            seen = _largest_while(lambda: _used(workdir), lambda: pytest.raises(GradingFailure), h.call, *attack)
            assert f"more than {DISK_MB} MiB or {DISK_FILES} files" in str(seen.error), str(seen.error)
            if attack[0] == "starve":  # stopped within a pass or two, not when its own limit ends it (2 GiB)
                assert seen.largest <= 2 * DISK_MB * MiB, seen.largest >> 20
            assert any(w.startswith(f"disk-watch-{DISK_MB}MiB-{DISK_FILES}files") for w in h.isolation), h.isolation
    finally:
        h.close()
    assert wait_until(lambda: _gone(workdir), timeout=10), workdir  # the zygote removes it once it reaps W


@pytest.mark.walls
def test_a_worker_has_at_most_its_tasks(zyg, tmp_path):
    """3,000 threads and 64 processes attempted: together they stay within the tasks cap the walls name,
    the worker still answers after, and nothing of it is left once closed."""
    h = _handle(zyg, write(tmp_path, "attack.py", ATTACK))
    name = f"hwtask{os.getpid() % 10000}"
    try:
        got = h.call("tasks", 3000, 64, name)
        assert got["threads"] + got["procs"] <= TASKS, got
        assert got["error"], got
        assert [w for w in h.isolation if w.startswith("tasks-")], h.isolation
        assert h.call("release") <= 2
        assert h.call("get_scores", np.array([[1.0, 2.0]]), np.array([3.0, 4.0])).tolist() == [11.0]
        h.call("tasks", 0, 8, name)  # left running when the worker is closed
        # each child names itself after the fork returned in its parent: the last may not have yet
        assert wait_until(lambda: len(_named(name)) == 8, timeout=2), _named(name)
    finally:
        h.close()
    assert wait_until(lambda: not _named(name), timeout=2), f"processes outlived their worker: {_named(name)}"


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


def _full_marks(card):
    auto = [q for q in card["questions"] if not q["manual"]]
    return card["status"] == "graded" and auto and all(q["score"] == q["max_score"] for q in auto)


LOAD_ATTACK = textwrap.dedent('''\
    import os, threading
    threading.stack_size(64 * 1024)
    _stop = threading.Event()
    try:
        for _ in range(3000):
            threading.Thread(target=_stop.wait, daemon=True).start()
    except RuntimeError:
        pass
    _stop.set()
    try:
        for i in range(200_000):
            if i % 1000 == 0:
                os.mkdir(f"attack-many{i // 1000}")
            os.close(os.open(f"attack-many{i // 1000}/{i}", os.O_WRONLY | os.O_CREAT, 0o600))
    except OSError:
        pass
    try:
        with open("attack-fill", "wb") as f:
            for _ in range(2048):
                f.write(b"x" * (1 << 20))
    except OSError:
        pass
    ''')


@pytest.mark.walls
def test_an_honest_classmate_keeps_full_marks_beside_the_attacks(tmp_path):
    """A batch at -j 2: the attacker fills its disk and tasks at load while the classmate is graded."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    subs.mkdir()
    (subs / "alice.py").write_text(GOOD)
    (subs / "mallory.py").write_text(LOAD_ATTACK + GOOD)
    before = set(glob.glob("/tmp/hwcheck-w-*"))
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
                        "--public", "-j", "2"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    alice = json.loads((out / "alice.json").read_text())
    walls = alice["grader"]["isolation"]
    if any("user-unique-unavailable" in w for w in walls):
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others)")
    assert _full_marks(alice), json.dumps(alice)[:3000]
    assert any(w.startswith(("disk-tmpfs-", "disk-watch-")) for w in walls), walls
    assert any(w.startswith("tasks-") for w in walls), walls
    assert (out / "mallory.json").exists()
    left = [p for p in set(glob.glob("/tmp/hwcheck-w-*")) - before if glob.glob(os.path.join(p, "*", "attack-*"))
            or glob.glob(os.path.join(p, "attack-*"))]
    assert not left, left


TASKS_PROBE = textwrap.dedent('''\
    import json, sys
    sys.path.insert(0, sys.argv[2])
    from checker.running.sandbox import Limits, SubmissionHandle, Zygote
    with Zygote() as z:
        h = SubmissionHandle(sys.argv[1], z, Limits(call_s=60, cell_s=10, submission_s=120))
        h.load()
        out = {"isolation": h.isolation, "tasks": h.call("tasks", 3000, 64)}
        h.call("release")
        h.close()
    print(json.dumps(out))
    ''')


def _reach_steps(scratch, paths):
    """Shell steps (in a private mount namespace) that let any user walk down to each of `paths`."""
    import shlex
    needs = {}
    for p in paths:
        parts = os.path.realpath(p).strip("/").split("/")
        for i in range(len(parts) - 1):
            folder = "/" + "/".join(parts[:i + 1])
            if not os.stat(folder).st_mode & 0o001:
                needs.setdefault(folder, set()).add(parts[i + 1])
    steps = []
    for n, (folder, names) in enumerate(sorted(needs.items())):
        real = os.path.join(scratch, f"real{n}")
        steps += [f"mkdir -p {shlex.quote(real)}", f"mount --bind {shlex.quote(folder)} {shlex.quote(real)}",
                  f"mount -t tmpfs -o mode=0755 tmpfs {shlex.quote(folder)}"]
        for name in sorted(names):
            steps += [f"mkdir -p {shlex.quote(os.path.join(folder, name))}",
                      f"mount --bind {shlex.quote(os.path.join(real, name))} {shlex.quote(os.path.join(folder, name))}"]
    return steps


def _has_sys_admin():
    with open("/proc/self/status") as f:
        return bool(next(int(ln.split()[1], 16) for ln in f if ln.startswith("CapEff:")) & (1 << 21))


@pytest.mark.parametrize("who", ["root-namespaces", "root-fallback", "ordinary-user"])
def test_without_a_cgroup_rlimit_nproc_caps_the_tasks(tmp_path, who):
    """No cgroup to be had (a container's read-only /sys/fs/cgroup, here a tmpfs over it): RLIMIT_NPROC of
    the worker's uid caps 3,000 threads and 64 processes, as root with and without namespaces, and as an
    ordinary user (whose worker's uid is its own user namespace's)."""
    import shlex
    import tempfile
    if os.geteuid() != 0 or not _has_sys_admin():
        pytest.skip("hiding the cgroups needs a private mount namespace: root with CAP_SYS_ADMIN")
    needs = {"root-fallback": "capsh", "ordinary-user": "setpriv"}.get(who)
    if not shutil_which("unshare") or (needs and not shutil_which(needs)):
        pytest.skip(f"needs unshare{' and ' + needs if needs else ''}")
    work = tempfile.mkdtemp(prefix="hwcheck-nproc-", dir="/tmp")  # pytest's tmp_path is closed to others
    try:
        os.chmod(work, 0o755)
        sub, probe = os.path.join(work, "attack.py"), os.path.join(work, "probe.py")
        with open(sub, "w") as f:
            f.write(ATTACK)
        with open(probe, "w") as f:
            f.write(TASKS_PROBE)
        argv = [sys.executable, probe, sub, REPO]
        steps = ["mount -t tmpfs -o ro,mode=0755 tmpfs /sys/fs/cgroup"]
        if who != "root-namespaces":
            steps += _reach_steps(str(tmp_path), (sys.prefix, sys.base_prefix, REPO))
        if who == "root-fallback":
            steps.append("exec capsh --drop=cap_sys_admin -- -c 'exec \"$0\" \"$@\"' " + shlex.join(argv))
        elif who == "ordinary-user":
            uid = 54321
            for p in (work, sub, probe):
                os.chown(p, uid, uid)
            steps.append(f"exec setpriv --reuid={uid} --regid={uid} --clear-groups env -i PATH=/usr/bin:/bin "
                         f"HOME={work} TMPDIR={work} " + shlex.join(argv))
        else:
            steps.append("exec " + shlex.join(argv))
        r = subprocess.run(["unshare", "-m", "sh", "-ec", " && ".join(steps)], capture_output=True, text=True,
                           timeout=300, cwd=work)
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
        out = json.loads(r.stdout.strip().splitlines()[-1])
    finally:
        import shutil
        shutil.rmtree(work, ignore_errors=True)
    got, walls = out["tasks"], out["isolation"]
    assert got["threads"] + got["procs"] <= TASKS, got
    assert not [w for w in walls if "cgroup" in w], walls  # the cgroups really were out of reach
    nproc = [w for w in walls if w.startswith(f"tasks-nproc-{TASKS}")]
    assert nproc, walls
    # the count of a uid that is this worker's alone (its own on the host, or in its own user namespace)
    assert nproc == [f"tasks-nproc-{TASKS}"], walls


@pytest.mark.walls
def test_a_folder_with_a_dataset_beside_its_code_is_graded_alike_in_both_modes(tmp_path):
    """A correct folder submission with a 300 MB checkpoint and three 50 MB data files beside its code: the
    worker's copy would lie twice in its tmpfs (memory) with namespaces, once on disk without them, and a
    300 MB file crashed the worker with namespaces only ('os._exit(70)': the copy failed). The copy now leaves
    out a file over 64 MiB and the other files past 128 MiB in all, in both modes, saying so, and the code
    gets full marks either way."""
    subs, out = tmp_path / "subs", tmp_path / "out"
    (subs / "carol").mkdir(parents=True)
    (subs / "carol" / "attention.py").write_text(GOOD + "\nimport os\nDATA = sorted(os.listdir('.'))\n")
    for name, size in [("weights.npy", 300 * MiB), ("a.bin", 50 * MiB), ("b.bin", 50 * MiB), ("c.bin", 50 * MiB)]:
        with open(subs / "carol" / name, "wb") as f:
            f.truncate(size)  # sparse: nothing is written, the copy would read zeros
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
                        "--public", "-j", "1"], capture_output=True, text=True, timeout=600, cwd=REPO)
    assert r.returncode in (0, 1), r.stdout[-2000:] + r.stderr[-2000:]
    carol = json.loads((out / "carol.json").read_text())
    if any("user-unique-unavailable" in w for w in carol["grader"]["isolation"]):
        pytest.skip("the grader refuses to run code here (root, no namespaces, this Python closed to others)")
    assert _full_marks(carol), json.dumps(carol)[:3000]
    said = " ".join(m if isinstance(m, str) else m.get("text", "") for m in carol["load"]["messages"])
    assert "weights.npy was not given to your code: it is larger than 64 MiB" in said, said
    assert "c.bin was not given to your code: the submission's other files past 128 MiB" in said, said
    assert "a.bin" not in said and "b.bin" not in said, said
