"""Grade a batch on a Dask cluster: `hwcheck grade --scheduler tcp://HOST:8786` or `--cluster local:N`.

What it is for: the executor that `checker.records.batch.grade_batch(executor=...)`
runs instead of its local pool. hwcheck does not schedule across machines
itself: Dask distributed already reaches the clusters courses have (a
LocalCluster, SSH hosts, SLURM/PBS through dask-jobqueue, Kubernetes), with
its own retries and worker restarts.

- `GradingContext` is a Dask WorkerPlugin: on each Dask worker its setup()
  builds the warm grading context once for the batch (a `Grader` with its own
  zygote importing torch, and the grading tests collected, in a background
  thread), so a submission costs there what it costs locally.
- `grade_on_worker(name, payload)` is the task: it unpacks the submission's
  bytes into a private temp dir of the worker (the workers need not share the
  TA's disk), grades it and returns the scorecard as plain data. Student code
  runs in that worker's zygote children with the same walls as locally, so
  `grader.isolation` (and `environment`) come from the machine that ran it.
- `DaskExecutor(scheduler=..., local_workers=N)(todo, options, report)` sends
  the submissions (a bounded window of them at a time), and writes each
  scorecard as it streams back with the very function the local batch uses
  (`checker.records.outfolder.write_submission`, atomic, scorecard last) before calling `report`: --resume,
  the gradebook, manual.csv and the progress bar behave as with -j. A Dask
  worker that dies costs the submissions it held: the scheduler gives each
  one more try (allowed-failures = 1 on the clusters hwcheck starts), then
  the client writes a crashed scorecard (KilledWorker). A scheduler lost mid-batch, or a LocalCluster whose
  workers cannot start, raises `ClusterLost` (no crashed scorecards for what the scheduler held): `hwcheck
  grade` says it as a stopped batch, with the `--resume` that goes on, and exits 1.

What it is not: a scheduler, or a way to start remote clusters (the TA starts
them with dask's own tools: `dask scheduler`, `dask ssh`, dask-jobqueue). Dask
is an optional extra (`pip install 'hwcheck[dask]'`); this module imports it
only when a cluster is asked for.
"""

import fcntl
import io
import os
import queue
import shutil
import stat
import sys
import tarfile
import tempfile
import threading
import time
import uuid

from checker._version import __version__
from checker.errors import HwcheckError
from checker.walk import walk

__all__ = ["DaskExecutor", "GradingContext", "own_folder", "grade_on_worker", "pack_submission", "unpack_submission",
           "parse_scheduler", "ClusterLost",
           "parse_cluster", "missing_extra", "MAX_SUBMISSION_BYTES", "ALLOWED_FAILURES"]

MAX_SUBMISSION_BYTES = 256 << 20   # a folder larger than this (a dataset handed in) is not sent
ALLOWED_FAILURES = 1               # a task whose worker died is tried once more, then KilledWorker
WORKER_WAIT_S = 600                # how long to wait for the first worker of a --scheduler cluster
_SKIPPED_DIRS = (".git", "__pycache__")  # left out of the copy a worker grades (as checker.running.submission_files)


def missing_extra():
    """The pip command that installs Dask, or None when it is installed."""
    try:
        import distributed  # noqa: F401
    except ImportError:
        return "pip install 'hwcheck[dask]'"
    return None


def parse_cluster(text):
    """'local:N' -> ('local', N); anything else is a ValueError with the forms accepted."""
    kind, _, n = str(text).partition(":")
    if kind == "local" and n.isdigit() and int(n) >= 1:
        return ("local", int(n))
    raise ValueError(f"{text!r}: --cluster takes local:N (N worker processes on this machine); "
                     f"for SSH hosts, SLURM or Kubernetes start a Dask scheduler and pass --scheduler ADDRESS")


def parse_scheduler(text):
    """A Dask scheduler's address as given, checked: [SCHEME://]HOST[:PORT], the port a number (a typo in it was an
    "internal error" from Dask's own parsing, a TA's probe, h44); anything else is a ValueError with the form."""
    import re
    address = str(text).strip()
    m = re.fullmatch(r"(?:([a-z][a-z0-9+.-]*)://)?(\[[0-9a-fA-F:.]+\]|[^\s:/\[\]]+)(?::([^/]*))?/?", address)
    port = m.group(3) if m else None
    if m and (port is None or (port.isdigit() and 0 < int(port) < 65536)):
        return address
    raise ValueError(f"{text!r}: --scheduler takes a Dask scheduler's address, [tcp://]HOST[:PORT] (tcp://10.0.0.5:8786, "
                     "the address `dask scheduler` prints)")


# ---------------------------------------------------------------------------
# submissions as bytes
# ---------------------------------------------------------------------------

def pack_submission(path, secrets=()):
    """(name, kind, bytes) of a submission, to send to a worker that does not share this disk.

    A file is sent as its content ("file"), read where it links to unless
    that is a secret (then the link itself is sent, "link", and the worker's
    copy leaves it out as a local grading would). A folder is sent as an
    uncompressed tar ("tar") in which links stay links, so the worker's copy
    applies the same rules as a local one; `.git` and `__pycache__` are left
    out. Raises HwcheckError when the submission exceeds MAX_SUBMISSION_BYTES.
    """
    from checker.running.submission_files import SecretInodes, file_source, hard_link_refused, secret_paths
    name = os.path.basename(os.path.normpath(path))
    inodes = SecretInodes(secret_paths(secrets))  # a hard link into the grader's files is not sent (walked lazily)
    if not os.path.isdir(path):
        real = file_source(path, secrets)
        if real is None or not os.path.isfile(real):
            return name, "link", os.fsencode(os.readlink(path) if os.path.islink(path) else path)
        why = hard_link_refused(real, os.stat(real), real, inodes)
        if why:
            raise HwcheckError(f"{name}: {why}")
        if os.path.getsize(real) > MAX_SUBMISSION_BYTES:
            raise HwcheckError(f"{name} is larger than {MAX_SUBMISSION_BYTES >> 20} MiB: not sent to the cluster")
        with open(real, "rb") as f:
            return name, "file", f.read()
    root = os.path.realpath(path)
    buf = io.BytesIO()
    total = 0
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dirpath, dirnames, filenames in walk(path):
            dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED_DIRS)
            for n in sorted(dirnames) + sorted(filenames):
                p = os.path.join(dirpath, n)
                mode = os.lstat(p).st_mode
                if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode) or stat.S_ISLNK(mode)):
                    continue  # a pipe or device: a local copy leaves it out too
                if stat.S_ISREG(mode) and hard_link_refused(os.path.realpath(p), os.lstat(p), root, inodes):
                    continue  # a hard link to the reference, a test, OUT: the worker would read it as the student's
                total += os.lstat(p).st_size if stat.S_ISREG(mode) else 0
                if total > MAX_SUBMISSION_BYTES:
                    raise HwcheckError(f"{name} holds more than {MAX_SUBMISSION_BYTES >> 20} MiB: "
                                       f"not sent to the cluster")
                tar.add(p, arcname=os.path.relpath(p, path), recursive=False)
    return name, "tar", buf.getvalue()


def unpack_submission(dest, name, kind, blob):
    """Write a packed submission into the folder `dest`; return its path there.

    Member names that would leave `dest` are refused (never written); links
    are written as links, never followed.
    """
    if not name or name in (".", "..") or "/" in name or "\0" in name:
        raise HwcheckError(f"a submission name {name!r} cannot be written on the worker")
    target = os.path.join(dest, name)
    if kind == "file":
        with open(target, "wb") as f:
            f.write(blob)
        return target
    if kind == "link":
        os.symlink(os.fsdecode(blob), target)
        return target
    if kind != "tar":
        raise HwcheckError(f"unknown submission kind {kind!r}")
    os.mkdir(target)
    root = os.path.realpath(target)
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:") as tar:
        for m in tar.getmembers():
            rel = os.path.normpath(m.name)
            out = os.path.join(root, rel)
            if rel.startswith(("..", "/")) or not _inside(root, os.path.dirname(out)):
                continue  # never written outside the submission's folder (a link met on the way included)
            try:
                if m.isdir():
                    os.makedirs(out, exist_ok=True)
                elif m.issym():
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    os.symlink(m.linkname, out)
                elif m.isfile():
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    # a new file, never through a link or over a name written before
                    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                    with tar.extractfile(m) as src, open(fd, "wb") as f:
                        shutil.copyfileobj(src, f)
            except FileExistsError:
                continue  # a name given twice: the first one stands
    return target


def _inside(root, path):
    """Whether `path`, its links resolved, is `root` or lies under it (not merely starts with its name)."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


# ---------------------------------------------------------------------------
# the worker side
# ---------------------------------------------------------------------------

def _host_root():
    """One folder per user and host for the submissions graded there (each worker has its own inside):
    a secret of every grader, so a worker without namespaces cannot read what another Dask worker grades."""
    root = os.path.join(os.path.realpath(tempfile.gettempdir()), f"hwcheck-dask-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    os.chmod(root, 0o700)
    return root


LOCK = ".lock"  # in each Dask worker's folder: held (flock) for the worker's life


def own_folder(host_root):
    """A folder of this Dask worker's in `host_root` and the descriptor that holds its lock (flock) while
    the worker lives: (path, fd). First the folders of workers that died without their teardown (killed by
    a nanny's restart, SIGKILL, the OOM killer) are removed: they hold copies of submissions. A worker's
    folder is its lock's: one whose lock anybody holds, or that has none yet (being made), is left alone."""
    for name in os.listdir(host_root):
        path = os.path.join(host_root, name)
        if not name.startswith("w-") or os.path.islink(path) or not os.path.isdir(path):
            continue
        try:
            fd = os.open(os.path.join(path, LOCK), os.O_RDONLY | os.O_NOFOLLOW)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            os.close(fd)
            continue
        shutil.rmtree(path, ignore_errors=True)
        os.close(fd)
    path = tempfile.mkdtemp(prefix="w-", dir=host_root)
    # the lock file appears under its name already locked: made under another name, locked, then renamed (a
    # lock is the file's, whatever its name). Created as LOCK and locked after, it could be taken in between
    # by another worker starting beside this one (a LocalCluster starts its workers together), which then
    # removed this live worker's folder as a dead one's: every submission it graded crashed (FileNotFoundError)
    making = os.path.join(path, LOCK + ".making")
    fd = os.open(making, os.O_CREAT | os.O_EXCL | os.O_RDWR | os.O_NOFOLLOW, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    os.rename(making, os.path.join(path, LOCK))
    return path, fd


try:
    from distributed.diagnostics.plugin import WorkerPlugin as _PluginBase
except ImportError:  # Dask is an optional extra: the class is defined, and used only with it
    _PluginBase = object


class GradingContext(_PluginBase):
    """A Dask WorkerPlugin: the batch's warm Grader on one Dask worker, set up once."""

    def __init__(self, options, version=__version__):
        self.options = dict(options)
        self.version = version
        self.name = f"hwcheck-grading-{uuid.uuid4().hex[:12]}"  # one per batch: a shared cluster may run others

    def setup(self, worker=None):
        self.grader, self.error = None, None
        self.root, self._lock_fd = own_folder(_host_root())
        extra = [_host_root()] + ([worker.local_directory] if getattr(worker, "local_directory", None) else [])
        self.options["secrets"] = sorted({*self.options.get("secrets", ()), *extra})
        self._lock = threading.Lock()
        self._ready = threading.Event()
        self._calls = queue.Queue()
        # The zygote is started by a thread that lives as long as this context: the kernel sends a process
        # its PR_SET_PDEATHSIG when the THREAD that forked it ends, and the zygote arms one.
        threading.Thread(target=self._own, name="hwcheck-zygote-owner", daemon=True).start()

    def _own(self):
        self._start()
        while True:
            call = self._calls.get()
            if call is None:
                return
            fn, box, done = call
            try:
                box.append(fn())
            except BaseException as e:  # noqa: BLE001 - handed to the caller
                box.append(e)
            done.set()

    def _in_owner(self, fn):
        box, done = [], threading.Event()
        self._calls.put((fn, box, done))
        done.wait()
        if isinstance(box[0], BaseException):
            raise box[0]
        return box[0]

    def _start(self):
        try:
            from checker.records import grading
            if self.version != __version__:
                raise HwcheckError(f"this Dask worker runs hwcheck {__version__}, the batch is graded with "
                                   f"hwcheck {self.version}: install the same hwcheck on every worker")
            self.grader = grading.new_grader(self.options)  # its zygote imports torch while the tests are collected
            grading.warm_up(self.options["assignment"])
            try:
                import torch
                torch.set_num_threads(1)  # no torch op runs here; several Dask workers may share the CPUs
            except Exception:  # noqa: BLE001
                pass
        except Exception as e:  # noqa: BLE001 - each task says so (a crashed scorecard, retried elsewhere)
            self.error = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
        finally:
            self._ready.set()

    def ready_grader(self):
        """The warm Grader (a fresh one when its zygote died); raises HwcheckError when none could start."""
        self._ready.wait()
        if self.error:
            raise HwcheckError(f"the grading context did not start on this Dask worker: {self.error}")
        from checker.records import grading
        if not self.grader.zygote.alive():
            self.grader.close()
            self.grader = self._in_owner(lambda: grading.new_grader(self.options))
        return self.grader

    def grade(self, sid, name, kind, blob):
        """Grade one packed submission; return {"card", "raw", "seconds"} (plain data)."""
        from checker.records import grading
        t0 = time.perf_counter()
        with self._lock:  # one submission at a time per context (threads_per_worker > 1 would share it)
            grader = self.ready_grader()
            where = tempfile.mkdtemp(prefix="s-", dir=self.root)
            try:
                path = unpack_submission(where, name, kind, blob)
                assignment, mode, seed = self.options["assignment"], grader.mode, grader.seed
                try:
                    card = grader.grade(path, assignment)
                except HwcheckError as e:
                    card = grading.crashed_scorecard(sid, path, assignment, mode, grading.one_line(e),
                                                     duration_s=time.perf_counter() - t0, seed=seed)
                except Exception as e:  # noqa: BLE001 - a bug of hwcheck must not stop the batch
                    card = grading.crashed_scorecard(sid, path, assignment, mode,
                                                     f"internal error {type(e).__name__}: {grading.one_line(e)} "
                                                     f"({grading.where(e)})",
                                                     duration_s=time.perf_counter() - t0, seed=seed)
            finally:
                shutil.rmtree(where, ignore_errors=True)
        raw = card.pop("_raw_report", None)
        return {"card": card, "raw": raw, "seconds": time.perf_counter() - t0}

    def teardown(self, worker=None):
        self._ready.wait(timeout=60)
        if self.grader is not None:
            self.grader.close()
        self._calls.put(None)
        shutil.rmtree(self.root, ignore_errors=True)
        os.close(self._lock_fd)


def grade_on_worker(plugin_name, sid, name, kind, blob):
    """The Dask task: grade one submission with this worker's GradingContext."""
    from distributed import get_worker
    plugins = get_worker().plugins
    if plugin_name not in plugins:
        raise HwcheckError("this Dask worker has no hwcheck grading context (it joined after the batch began "
                           "and the plugin was not set up)")
    return plugins[plugin_name].grade(sid, name, kind, blob)


def _worker_version():
    return __version__


# ---------------------------------------------------------------------------
# the client side
# ---------------------------------------------------------------------------

class ClusterLost(HwcheckError):
    """The batch cannot go on: the Dask scheduler was lost, or the local cluster could not start its workers.
    `hwcheck grade` says it as a stop (what is kept, the `--resume` that goes on) and exits 1, not as an internal
    error: the scorecards that landed are kept, the submissions the cluster held are graded by `--resume`."""
    stops_batch = True


def _lost_by(e):
    """Whether the exception `e` says the client lost its scheduler (rather than a task's own failure)."""
    return type(e).__name__ in ("ClosedClientError", "CommClosedError", "CancelledError", "StreamClosedError",
                                "FutureCancelledError") or isinstance(e, (ConnectionError, EOFError))


class DaskExecutor:
    """Runs a batch's submissions on a Dask cluster; an executor for `checker.records.batch.grade_batch`."""

    def __init__(self, scheduler=None, local_workers=None, window=None, say=None):
        if (scheduler is None) == (local_workers is None):
            raise ValueError("give either a scheduler address or a number of local workers")
        missing = missing_extra()
        if missing:
            raise HwcheckError(f"grading on a Dask cluster needs Dask: {missing}")
        self.scheduler, self.local_workers, self.window = scheduler, local_workers, window
        self.workers = local_workers or 0  # how many Dask workers graded (known once connected)
        self.client = self.cluster = None
        self.say = say or (lambda line: print(line, file=sys.stderr, flush=True))  # the TA's lines while connecting

    def describe(self):
        return (f"a LocalCluster of {self.local_workers} processes" if self.local_workers
                else f"the Dask cluster at {self.scheduler}")

    def _connect(self):
        import logging

        import dask
        from distributed import Client, LocalCluster
        if self.local_workers:
            import signal
            # the workers start with Ctrl-C ignored (a disposition a new process keeps): the terminal's SIGINT
            # reaches the whole process group, and each worker printed its own traceback; this process stops them
            main_thread = threading.current_thread() is threading.main_thread()
            before = signal.signal(signal.SIGINT, signal.SIG_IGN) if main_thread else None
            try:
                with dask.config.set({"distributed.scheduler.allowed-failures": ALLOWED_FAILURES}):
                    self.cluster = LocalCluster(n_workers=self.local_workers, threads_per_worker=1,
                                                processes=True, dashboard_address=None,
                                                # a worker's heartbeat cut by the close logs an ERROR with its
                                                # traceback (seen after Ctrl-C); what fails is said in scorecards
                                                silence_logs=logging.CRITICAL)
            except Exception as e:  # noqa: BLE001 - "Nanny failed to start" (a worker killed while starting), ...
                raise ClusterLost(f"the local cluster could not start its {self.local_workers} Dask workers "
                                  f"({type(e).__name__}: {' '.join(str(e).split())[:200]}; a worker killed while "
                                  f"starting, or too little memory)") from None
            finally:
                if main_thread:
                    signal.signal(signal.SIGINT, before)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(self.scheduler, timeout=30)
            except (OSError, TimeoutError) as e:
                raise HwcheckError(f"could not reach the Dask scheduler at {self.scheduler}: {e}") from None
            try:
                if not self.client.scheduler_info().get("workers"):  # said, rather than waiting silent for minutes
                    self.say(f"hwcheck: no Dask worker has joined {self.scheduler} yet: waiting up to "
                             f"{WORKER_WAIT_S} s for one (start them with `dask worker {self.scheduler} --nthreads 1`)")
                self.client.wait_for_workers(1, timeout=WORKER_WAIT_S)
            except TimeoutError:
                raise HwcheckError(f"no Dask worker joined {self.scheduler} in {WORKER_WAIT_S} s") from None
        versions = self.client.run(_worker_version)
        other = {addr: v for addr, v in versions.items() if v != __version__}
        if other:
            addr, v = next(iter(other.items()))
            raise HwcheckError(f"the Dask worker {addr} runs hwcheck {v}, this is hwcheck {__version__}: "
                               f"install the same hwcheck on every worker")
        self.workers = max(self.workers, len(versions))

    def close(self, lost=False):
        if self.client is not None and lost:  # its scheduler gone: not waited for to come back (30 s), nor logged
            import logging
            logging.getLogger("distributed.client").setLevel(logging.CRITICAL)
            try:
                self.client.close(timeout=2)
            except Exception:  # noqa: BLE001 - closing a client whose scheduler is gone
                pass
        elif self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        self.client = self.cluster = None

    def __call__(self, todo, options, report):
        from checker.records import grading
        from checker.spec import spec_sha256
        from checker.running.submission_files import sha256_of
        self._connect()
        context = GradingContext(options)
        futures = {}
        try:
            self.client.register_plugin(context, name=context.name)
            pending = list(reversed(todo))
            spec_sha = spec_sha256(options["assignment"])
            from distributed import as_completed
            done = as_completed()

            def send():
                width = self.window or max(4, 2 * max(1, len(self.client.scheduler_info().get("workers", {}))))
                while pending and len(futures) < width:
                    sid, path = pending.pop()
                    try:
                        name, kind, blob = pack_submission(path, options.get("secrets", ()))
                    except (OSError, HwcheckError) as e:
                        report(grading.crash(sid, path, options, f"it could not be sent to the cluster: "
                                                                 f"{grading.one_line(e)}"))
                        continue
                    fut = self.client.submit(grade_on_worker, context.name, sid, name, kind, blob,
                                             key=f"hwcheck-grade-{uuid.uuid4().hex}", pure=False, retries=1)
                    futures[fut] = (sid, path, time.monotonic())
                    done.add(fut)

            send()
            while futures:
                fut = next(done)
                if fut.status == "cancelled" and self._lost():  # the scheduler went: no crash of the student's
                    raise ClusterLost(self._lost_words("its tasks were cancelled"))
                sid, path, started = futures.pop(fut)
                report(self._land(fut, sid, path, started, options, spec_sha, sha256_of))
                send()
        except BaseException as e:  # Ctrl-C or a bug: cancel what is out (files are atomic; --resume redoes)
            if futures and self.client is not None:
                try:
                    self.client.cancel(list(futures))
                except Exception:  # noqa: BLE001
                    pass
            if isinstance(e, Exception) and not isinstance(e, ClusterLost) and (_lost_by(e) or self._lost()):
                raise ClusterLost(self._lost_words(f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")) from None
            raise
        finally:
            lost = self._lost()
            try:
                if self.client is not None and not lost:
                    self.client.unregister_worker_plugin(context.name)
            except Exception:  # noqa: BLE001 - a worker that died or a closed cluster: nothing to tear down
                pass
            self.close(lost)

    def _lost(self):
        """Whether the client has lost its scheduler (reconnecting, or closed for want of it)."""
        return self.client is None or getattr(self.client, "status", "running") != "running"

    def _lost_words(self, how):
        where = (f"the Dask scheduler at {self.scheduler}" if self.scheduler else
                 f"the scheduler of the local cluster of {self.local_workers} Dask workers")
        return (f"{where} was lost ({how}), so the batch cannot go on"
                + (" (start the scheduler and its workers again, or give --scheduler another one)"
                   if self.scheduler else ""))

    @staticmethod
    def _land(fut, sid, path, started, options, spec_sha, sha256_of):
        """Write one finished submission's files as the local batch does; return its short result."""
        from checker.records import grading
        from checker.records.outfolder import write_submission
        try:
            # A result whose worker died after it finished, before it was fetched, is "lost": Dask computes it
            # again elsewhere, and result() waits for that (the status alone would read "lost", a crash).
            out = fut.result()
        except Exception as e:  # noqa: BLE001 - the task's own failure, said in the scorecard
            if type(e).__name__ == "KilledWorker":
                why = "the Dask worker grading it died, and again on its retry"
            elif fut.status == "cancelled":
                why = "the Dask task was cancelled (the scheduler or its client closed)"
            else:
                why = f"the Dask task failed: {type(e).__name__}: {grading.one_line(e)}"
            return grading.crash(sid, path, options, why, time.monotonic() - started)
        seconds = time.monotonic() - started
        card, raw = out["card"], out.get("raw")
        grader = card.setdefault("grader", {})
        if grader.get("spec_sha256") != spec_sha and not grader.get("internal_error"):
            return grading.crash(sid, path, options, "the Dask worker graded it with other grading tests "
                                                     "(another spec_sha256): install the same hwcheck there")
        try:  # as the TA's folder has it: where the report reads the code, what --resume compares
            sha = sha256_of(path)
        except OSError:
            sha = card["submission"].get("sha256")
        card["submission"].update(id=sid, path=os.path.abspath(path), sha256=sha)
        try:
            write_submission(options["outdir"], sid, card, keep_raw=options["keep_raw"], raw=raw)
        except (OSError, ValueError) as e:
            if grading.disk_full(e):
                raise  # OUT's disk is full: the batch stops there (the TA frees space and resumes)
            return grading.crash(sid, path, options, f"writing its files failed: {type(e).__name__}: "
                                                     f"{grading.one_line(e)}", seconds)
        return grading.summary_of(sid, card, float(out.get("seconds") or seconds))
