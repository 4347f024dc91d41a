"""`hwcheck grade --scheduler / --cluster`: a real 2-process Dask LocalCluster grades like `-j 1`.

One LocalCluster of two worker processes (module fixture, allowed-failures 1
as hwcheck's own clusters have) grades six example submissions of
submissions/attention (files, a folder, a notebook, a syntax error; no_scaling.py is left out: its
score varied between two -j 1 runs of one seed under load, 48.32 and 53.61, a flake of its own) with the
public tests and one seed; `-j 1` grades the same folder with the same seed.
Scores, statuses, the gradebook and the walls reported must be the same, and
the scorecards must name the TA's files (the workers got bytes). Then a Dask
worker process is SIGKILLed mid-batch: what was finished stays, the rest is
graded after the retry.
"""
import csv
import json
import os
import re
import shutil
import signal
import threading
import time

import pytest

distributed = pytest.importorskip("distributed")

from click.testing import CliRunner  # noqa: E402

from checker.records import batch  # noqa: E402
from checker.cli import main  # noqa: E402
from checker.platforms.cluster import DaskExecutor, pack_submission, unpack_submission  # noqa: E402

pytestmark = pytest.mark.slow

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
PICKED = ["correct.py", "missing_names.py", "correct_folder", "correct_notebook.ipynb", "syntax_error.py",
          "softmax_wrong_axis.py"]
SEED = "4242"


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    d = tmp_path_factory.mktemp("class")
    for name in PICKED:
        src = os.path.join(EXAMPLES, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, d / name)
    return d


@pytest.fixture(scope="module")
def cluster():
    import logging

    import dask
    from distributed import Client, LocalCluster
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        lc = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                          silence_logs=logging.ERROR)
    client = Client(lc)
    yield lc, client
    client.close()
    lc.close()


def _grade(subs, out, *extra):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public",
                                  "--seed", SEED, *extra])
    assert r.exit_code == 0, r.output
    return r


def _cards(out):
    return {c["submission"]["id"]: c for c in batch.collect_scorecards(str(out), "attention")}


def _rows(out):
    with open(os.path.join(out, "grades.csv"), encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


@pytest.fixture(scope="module")
def local(subs, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    _grade(subs, out, "-j", "1")
    return out


@pytest.fixture(scope="module")
def on_cluster(subs, cluster, tmp_path_factory):
    out = tmp_path_factory.mktemp("dask")
    r = _grade(subs, out, "--scheduler", cluster[0].scheduler_address)
    return out, r


def test_the_cluster_grades_as_one_local_process(local, on_cluster, subs):
    out, r = on_cluster
    assert "the Dask cluster at tcp://" in r.output
    mine, theirs = _cards(local), _cards(out)
    assert sorted(mine) == sorted(theirs) == sorted(os.path.splitext(n)[0] for n in PICKED)
    for sid, card in mine.items():
        other = theirs[sid]
        assert (other["score"], other["status"]) == (card["score"], card["status"]), sid
        assert [(q["id"], q["score"]) for q in other["questions"]] == [(q["id"], q["score"]) for q in card["questions"]]
        assert [t["outcome"] for q in other["questions"] for t in q["tests"]] == \
               [t["outcome"] for q in card["questions"] for t in q["tests"]], sid
        assert other["load"]["messages"] == card["load"]["messages"], sid
        # the workers got bytes; the scorecard names the TA's file, as --resume and the report need
        assert other["submission"]["path"] == card["submission"]["path"]
        assert other["submission"]["sha256"] == card["submission"]["sha256"]
        assert other["grader"]["seed"] == card["grader"]["seed"] == int(SEED)
        # the walls were put up on the Dask worker as they are here (the same machine)
        # (a uid of each worker's own differs from run to run: compared without its number)
        walls = [lambda c: [re.sub(r"uid \d+", "uid N", w) for w in c["grader"]["isolation"]]][0]
        assert walls(other) == walls(card) and walls(other)
        assert not other["grader"].get("internal_error")
    assert _rows(out) == _rows(local)
    assert {s: 1 for s in mine} == {s: 1 for s in os.listdir(os.path.join(out, "gradescope"))}


def test_resume_on_the_cluster_regrades_nothing_current(on_cluster, subs, cluster):
    out, _ = on_cluster
    before = {sid: os.stat(batch.scorecard_path(str(out), sid)).st_mtime_ns for sid in _cards(out)}
    r = _grade(subs, out, "--scheduler", cluster[0].scheduler_address, "--resume")
    assert "6 up to date" in r.output
    assert before == {sid: os.stat(batch.scorecard_path(str(out), sid)).st_mtime_ns for sid in _cards(out)}


def test_a_folder_travels_as_bytes_and_links_stay_links(tmp_path):
    sub = tmp_path / "carol"
    (sub / "pkg").mkdir(parents=True)
    (sub / "pkg" / "a.py").write_text("x = 1\n")
    (sub / "inside.py").symlink_to("pkg/a.py")
    (sub / "leaves.py").symlink_to("/etc/hostname")
    (sub / ".git").mkdir()
    (sub / ".git" / "HEAD").write_text("ref\n")
    name, kind, blob = pack_submission(str(sub))
    assert (name, kind) == ("carol", "tar")
    dest = tmp_path / "worker"
    dest.mkdir()
    path = unpack_submission(str(dest), name, kind, blob)
    assert open(os.path.join(path, "pkg", "a.py")).read() == "x = 1\n"
    assert os.readlink(os.path.join(path, "inside.py")) == "pkg/a.py"
    assert os.readlink(os.path.join(path, "leaves.py")) == "/etc/hostname"  # left out by the worker's copy
    assert not os.path.exists(os.path.join(path, ".git"))



def test_a_hard_link_into_the_graders_files_is_not_sent_to_a_worker(tmp_path):
    """The client packs a submission's bytes: a hard link to the reference (an unpacked tar's link member) would
    reach a worker as the student's own file, as the local copy no longer lets it (checker.running.submission_files
    .hard_link_refused)."""
    from checker.errors import HwcheckError
    from checker.spec import load_spec, reference_file
    ref = reference_file(load_spec("attention"))
    sub = tmp_path / "mallory"
    sub.mkdir()
    (sub / "main.py").write_text("from helper import *\n")
    single = tmp_path / "eve.py"
    try:
        os.link(ref, sub / "helper.py")
        os.link(ref, single)
    except OSError as e:  # another file system than the checkout's
        pytest.skip(f"no hard link to {ref} from {tmp_path}: {e}")
    try:
        name, kind, blob = pack_submission(str(sub), (str(tmp_path),))
        dest = tmp_path / "worker"
        dest.mkdir()
        path = unpack_submission(str(dest), name, kind, blob)
        assert sorted(os.listdir(path)) == ["main.py"]
        with pytest.raises(HwcheckError, match="hard link"):
            pack_submission(str(single), (str(tmp_path),))
    finally:
        os.unlink(sub / "helper.py")
        os.unlink(single)
    assert os.stat(ref).st_nlink == 1

def test_the_folder_of_a_dask_worker_killed_before_its_teardown_is_removed_by_the_next(tmp_path):
    """A Dask worker killed before its teardown (a nanny's restart, SIGKILL) leaves its folder, with copies
    of the submissions it was grading; the next worker to start on the host removes it (nobody holds its
    lock), and leaves alone the folder of a worker that is alive (its lock held) or whose lock is not made."""
    import subprocess
    import sys
    from checker.platforms.cluster import own_folder
    start = ("import os, sys, time\nfrom checker.platforms.cluster import own_folder\n"
             "path, fd = own_folder(sys.argv[1])\nopen(os.path.join(path, 'alice.py'), 'w').write('x = 1')\n"
             "print(path, flush=True)\ntime.sleep(60)\n")
    procs = [subprocess.Popen([sys.executable, "-c", start, str(tmp_path)], stdout=subprocess.PIPE, text=True,
                              cwd=ROOT, env={**os.environ, "PYTHONPATH": ROOT}) for _ in range(2)]
    try:
        killed, alive = [p.stdout.readline().strip() for p in procs]
        procs[0].send_signal(signal.SIGKILL)
        procs[0].wait()
        (tmp_path / "w-beingmade").mkdir()  # no lock yet: a worker between making its folder and its lock
        path, fd = own_folder(str(tmp_path))
        try:
            assert not os.path.exists(killed)
            assert os.path.exists(os.path.join(alive, "alice.py")) and (tmp_path / "w-beingmade").is_dir()
            assert os.path.isdir(path) and path not in (killed, alive)
        finally:
            os.close(fd)
    finally:
        for p in procs:
            p.kill()
            p.wait()


def test_a_worker_starting_beside_another_never_takes_its_folder_for_a_dead_ones(tmp_path, monkeypatch):
    """A LocalCluster starts its workers together. A worker's lock file was made and then locked: a worker
    scanning in between found it unlocked and removed the live worker's folder, whose grades then crashed
    (FileNotFoundError, a flaky test_ctrl_c_stops_a_local_cluster_batch_in_a_few_lines). Here the rival's scan
    runs at that very moment: the moment the first worker is about to lock its file."""
    import fcntl as real_fcntl
    from checker.platforms import cluster
    real_flock, rival, started = real_fcntl.flock, [], []

    def flock(fd, op):
        if op == real_fcntl.LOCK_EX and not started:  # the first worker, about to lock its new lock file
            started.append(True)
            rival.append(cluster.own_folder(str(tmp_path)))  # a worker starting beside it scans now
        return real_flock(fd, op)
    monkeypatch.setattr(cluster.fcntl, "flock", flock)
    path, fd = cluster.own_folder(str(tmp_path))
    try:
        (rival_path, rival_fd), = rival
        os.close(rival_fd)
        assert os.path.isdir(path) and os.path.exists(os.path.join(path, cluster.LOCK)), os.listdir(tmp_path)
        assert sorted(os.listdir(path)) == [cluster.LOCK]
    finally:
        os.close(fd)


def test_a_tar_cannot_write_outside_the_submission(tmp_path):
    import io
    import tarfile
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for evil in ("../escaped.py", "/tmp/abs_escaped.py"):
            info = tarfile.TarInfo(evil)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x=1"))
    (tmp_path / "w").mkdir()
    unpack_submission(str(tmp_path / "w"), "s", "tar", buf.getvalue())
    assert not (tmp_path / "escaped.py").exists() and not os.path.exists("/tmp/abs_escaped.py")


def test_a_tar_cannot_write_beside_the_submission_or_through_its_own_links(tmp_path):
    # a link to a sibling whose name begins with the submission's ("s" -> "../s2") is outside it, and a file
    # given after a link of the same name is not written through that link
    import io
    import tarfile
    buf = io.BytesIO()
    outside = tmp_path / "victim.txt"
    outside.write_text("mine")
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, target in (("d", "../s2"), ("f", str(outside))):
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
        for name in ("d/escaped.py", "f"):
            info = tarfile.TarInfo(name)
            info.size = 3
            tar.addfile(info, io.BytesIO(b"x=1"))
    (tmp_path / "w" / "s2").mkdir(parents=True)
    path = unpack_submission(str(tmp_path / "w"), "s", "tar", buf.getvalue())
    assert os.listdir(tmp_path / "w" / "s2") == [] and outside.read_text() == "mine"
    assert os.readlink(os.path.join(path, "d")) == "../s2" and os.readlink(os.path.join(path, "f")) == str(outside)


def test_a_killed_dask_worker_loses_nothing_finished(subs, cluster, local, tmp_path):
    lc, client = cluster
    out = tmp_path / "killed"
    outcome = {}

    def run():
        try:
            entries = batch.list_entries(str(subs))
            outcome["result"] = batch.grade_batch(entries, "attention", str(out), mode="public", seed=int(SEED),
                                                  executor=DaskExecutor(scheduler=lc.scheduler_address))
        except BaseException as e:  # noqa: BLE001 - shown by the assertion below
            outcome["error"] = e

    t = threading.Thread(target=run)
    t.start()
    deadline = time.monotonic() + 240
    while not _cards(out) and time.monotonic() < deadline:
        time.sleep(0.05)
    finished = {sid: json.dumps(c, sort_keys=True) for sid, c in _cards(out).items()}
    assert finished, "no submission was graded"
    pids = client.run(os.getpid)
    busy = [addr for addr, keys in client.processing().items() if keys]
    assert busy, "no worker held a submission when the first scorecard landed"
    os.kill(pids[busy[0]], signal.SIGKILL)
    t.join(timeout=300)
    assert not t.is_alive() and "error" not in outcome, outcome
    cards, expected = _cards(out), _cards(local)
    assert sorted(cards) == sorted(expected)
    for sid, text in finished.items():  # what was written before the kill is kept as it was
        assert json.dumps(cards[sid], sort_keys=True) == text
    for sid, card in cards.items():  # the rest was graded after the retry (or said why not)
        if card["status"] == "crashed":
            assert "Dask worker" in card["grader"]["internal_error"], card["grader"]
        else:
            assert card["score"] == expected[sid]["score"], (sid, card["grader"], expected[sid]["grader"])
    assert len(outcome["result"].results) == len(PICKED)
    assert len(_rows(out)) == len(PICKED)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_a_result_lost_with_its_worker_before_it_came_back_is_computed_again(subs, cluster, local, tmp_path):
    """A submission graded on a worker that is killed before the client fetched the result ("lost" in Dask)
    is computed again elsewhere and written as graded, never marked crashed (CI saw "task lost")."""
    lc, client = cluster
    out = tmp_path / "lost"
    landed = set()  # the keys of the futures whose results were fetched: a worker holding only those proves nothing

    class Recording(DaskExecutor):
        @staticmethod
        def _land(fut, *args):
            landed.add(fut.key)
            return DaskExecutor._land(fut, *args)

    inner = Recording(scheduler=lc.scheduler_address)
    killed = []

    def executor(todo, options, report):
        def first_report(result):
            report(result)
            if killed:
                return
            mine = inner.client
            deadline = time.monotonic() + 240  # the futures sent with this one finish; their results wait
            while any(st.status == "pending" for st in list(mine.futures.values())) and time.monotonic() < deadline:
                time.sleep(0.05)
            waiting = {addr: [k for k in keys if str(k).startswith("hwcheck-grade") and k not in landed]
                       for addr, keys in mine.has_what().items()}
            holders = sorted(addr for addr, keys in waiting.items() if keys)
            assert holders, "no finished submission waited on a worker"
            pids = mine.run(os.getpid)
            os.kill(pids[holders[0]], signal.SIGKILL)
            killed.append(holders[0])

            def lost():
                return any(getattr(mine.futures.get(k), "status", None) == "lost" for k in waiting[holders[0]])
            while not lost() and time.monotonic() < deadline:
                time.sleep(0.05)
            assert lost(), "the client never lost a result it had not fetched"
        inner(todo, options, first_report)

    entries = batch.list_entries(str(subs))
    result = batch.grade_batch(entries, "attention", str(out), mode="public", seed=int(SEED), executor=executor)
    assert killed
    cards, expected = _cards(out), _cards(local)
    assert sorted(cards) == sorted(expected)
    for sid, card in cards.items():
        assert not card["grader"].get("internal_error"), (sid, card["grader"])
        assert (card["status"], card["score"]) == (expected[sid]["status"], expected[sid]["score"]), sid
    assert len(result.results) == len(PICKED)
    client.wait_for_workers(2, timeout=60)  # the nanny restarted it


def test_cluster_options_are_checked(subs, tmp_path):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(tmp_path / "o"),
                                  "--cluster", "remote:2"])
    assert r.exit_code == 2 and "local:N" in r.output
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(tmp_path / "o"),
                                  "--cluster", "local:2", "-j", "2"])
    assert r.exit_code == 2 and "-j counts processes" in r.output


def test_ctrl_c_stops_a_local_cluster_batch_in_a_few_lines(subs, tmp_path):
    """Ctrl-C in a terminal reaches the whole process group: each Dask worker of `--cluster local:2` printed its
    own traceback (some 60 lines) around the one line that says what is kept and how to go on."""
    import subprocess
    import sys
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
           "--cluster", "local:2", "--seed", "9"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not _cards(out):
            time.sleep(0.1)
        assert proc.poll() is None, proc.stdout.read().decode()
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal sends it: to every process of the group
        said = proc.communicate(timeout=120)[0].decode()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert "hwcheck: interrupted:" in said and "--resume" in said, said
    assert "Traceback" not in said and said.count("hwcheck: interrupted") == 1, said


def test_sigterm_ends_a_local_cluster_batch_with_143_counting_what_is_kept(subs, tmp_path):
    """h11 (5): SIGTERM (a scheduler's time limit, `timeout`) to a `--cluster local:2` batch exited 130, Ctrl-C's
    status, and said fewer submissions kept than OUT held (a scorecard the TA's side wrote just before the signal,
    not yet reported, went uncounted). It exits 143, as the local -j batch does, and the count said is the
    scorecards in OUT and the rows of grades.csv."""
    import subprocess
    import sys
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention", "-o", str(out),
           "--cluster", "local:2", "--seed", "9"]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": ROOT})
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None and not _cards(out):
            time.sleep(0.05)
        assert proc.poll() is None, proc.stdout.read().decode()
        proc.send_signal(signal.SIGTERM)  # to hwcheck alone, as `kill`, `timeout` and SLURM send it
        said = proc.communicate(timeout=120)[0].decode()
        code = proc.returncode
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert code == 143, (code, said)
    kept = re.search(r"interrupted: (\d+) of (\d+) submissions are graded and kept", said)
    assert kept, said
    assert int(kept[1]) == len(_cards(out)) == len(_rows(out)), said
    assert said.count("hwcheck: interrupted") == 1, said


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_lost_mid_batch_stops_it_with_the_resume_command_and_exit_1(subs, tmp_path):
    """h78 D4: the Dask scheduler of `--scheduler tcp://...` killed mid-batch ended it in "hwcheck: error: internal
    error (ClosedClientError: Client is closed...)", exit 2, no --resume. It says the scheduler was lost, what is
    kept and the exact `--resume`, and exits 1; the finished scorecards stay. While no worker has joined, a line
    says it is waiting (and for how long), instead of minutes of silence."""
    import subprocess
    import sys
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = {**os.environ, "PYTHONPATH": ROOT, "DASK_DISTRIBUTED__SCHEDULER__ALLOWED_FAILURES": "1"}
    sched = subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                              "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True, env=env)
    out = tmp_path / "out"
    grade = worker = None
    try:
        time.sleep(3)  # the scheduler listening
        grade = subprocess.Popen([sys.executable, "-m", "checker.cli", "grade", str(subs), "-a", "attention",
                                  "-o", str(out), "--public", "--seed", SEED, "--scheduler", address],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                                 env=env)
        deadline = time.monotonic() + 60
        seen = b""
        os.set_blocking(grade.stdout.fileno(), False)
        while time.monotonic() < deadline and b"waiting up to" not in seen and grade.poll() is None:
            seen += grade.stdout.read() or b""
            time.sleep(0.1)
        assert b"waiting up to" in seen, seen.decode()
        os.set_blocking(grade.stdout.fileno(), True)
        worker = subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--nworkers", "1",
                                   "--no-dashboard"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  start_new_session=True, env=env)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and grade.poll() is None and not _cards(out):
            time.sleep(0.05)
        assert grade.poll() is None, (seen + grade.stdout.read()).decode()
        os.killpg(sched.pid, signal.SIGKILL)
        said = (seen + grade.communicate(timeout=180)[0]).decode()
        code = grade.returncode
    finally:
        for proc in (grade, worker, sched):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert code == 1, (code, said)
    assert "internal error" not in said and "Traceback" not in said, said
    assert f"the Dask scheduler at {address} was lost" in said, said
    kept = re.search(r"(\d+) of (\d+) submissions are graded and kept", said)
    assert kept and int(kept[1]) == len(_cards(out)) >= 1, said
    again = said.rsplit("go on with:", 1)[1].strip().splitlines()[0]
    assert again.startswith("hwcheck grade") and "--resume" in again and address in again, said
    assert all(c["status"] != "crashed" for c in _cards(out).values()), said  # the lost ones are no student's crash


def test_a_local_cluster_whose_workers_cannot_start_is_said_with_the_resume_command(subs, tmp_path, monkeypatch):
    """h78 D4: LocalCluster workers killed while starting ended `--cluster local:2` in "internal error
    (RuntimeError: Nanny failed to start.)", exit 2. It says the local cluster could not start its workers, with
    the `--resume` command, and exits 1."""
    import distributed as dist

    def cannot_start(*args, **kwargs):
        raise RuntimeError("Nanny failed to start.")
    monkeypatch.setattr(dist, "LocalCluster", cannot_start)
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public", "--seed", SEED,
                                  "--cluster", "local:2"])
    assert r.exit_code == 1, r.output
    assert "internal error" not in r.output and "could not start its 2 Dask workers" in r.output, r.output
    assert "Nanny failed to start" in r.output and "--cluster local:2" in r.output and "--resume" in r.output, r.output
