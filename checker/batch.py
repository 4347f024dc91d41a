"""Grade a folder of submissions: scorecards, Gradescope results, the gradebook, resumably.

What it is for: the library behind `hwcheck grade`. `list_entries(folder)`
finds the submissions (a .py or .ipynb file, or a folder; hidden entries and
other files are skipped); `grade_batch(...)` grades them and, for each, writes

    OUTDIR/<id>.json                       the full (TA) scorecard
    OUTDIR/gradescope/<id>/results.json    Gradescope's results.json
    OUTDIR/<id>.raw.json                   pytest-json-report's report (keep_raw only)

then `OUTDIR/grades.csv` over every scorecard of the assignment in OUTDIR (and
`OUTDIR/answers.csv`, the written answers to the questions a person grades).
Every file is written atomically, and the scorecard last: a scorecard that
exists is complete, which is what `resume` relies on. A submission that
cannot be graded at all gets a "crashed" scorecard with 0 points and
`grader.internal_error` set (so `resume` grades it again), and the batch
goes on.

Processes: with jobs == 1 everything runs in this process with one warm
zygote. With jobs > 1 this process starts ONE zygote with `jobs` control
channels, then forks `jobs` trusted worker processes (multiprocessing's
"fork" context, so torch, pytest and the grading tests are imported once).
Each builds a `Grader` on its own channel, receives submissions one at a
time on its own pipe, grades, writes that submission's files itself and
sends back a short result. One pipe per worker (rather than one shared task
queue) means this process always knows which submission a worker holds: if a
worker dies, that submission gets a crashed scorecard, the worker is
replaced, and the others go on. If the zygote itself dies, the workers are
stopped, their submissions are put back once, and a fresh zygote and workers
take over.

What it is not: a renderer (the progress and summary texts are
`checker.progress`), the folder listing (`checker.entries`), or a command
line (`checker.cli`). The names of those two modules are importable from here
too, for callers of the library.
"""

import collections
import json
import multiprocessing
import multiprocessing.connection
import os
import re
import secrets
import signal
import time
import traceback

from checker import __version__
from checker.atomic import write_json_atomic, read_json
from checker.entries import MAX_ID_BYTES, SUBMISSION_SUFFIXES, list_entries, skipped_entries  # noqa: F401
from checker.errors import HwcheckError
from checker.outputs import Gradebook, is_own_output
from checker.progress import isolation_gaps, progress_bar, progress_line, summary_lines  # noqa: F401
from checker.gradescope import make_failure_results, make_results
from checker.submission_files import sha256_of
from checker.scorecard import SCHEMA_VERSION, STATUSES, build_scorecard
from checker.spec import load_spec, spec_sha256

__all__ = ["SUBMISSION_SUFFIXES", "BatchResult", "list_entries", "skipped_entries", "grade_batch", "grade_one",
           "scorecard_path", "results_path", "raw_path", "gradebook_path", "is_current",
           "crashed_scorecard", "collect_scorecards", "progress_line", "progress_bar",
           "summary_lines"]

MAX_POOL_RESTARTS = 3       # fresh zygotes after the zygote died
MAX_IDLE_DEATHS = 3         # a worker slot that dies this often holding no submission is given up
_STALE_TMP = re.compile(r"^\..+\.(json|csv)\.[^.]+\.tmp$")   # checker.atomic's temporary names


# ---------------------------------------------------------------------------
# where things are
# ---------------------------------------------------------------------------

def scorecard_path(outdir, sid):
    return os.path.join(outdir, f"{sid}.json")


def results_path(outdir, sid):
    return os.path.join(outdir, "gradescope", sid, "results.json")


def raw_path(outdir, sid):
    return os.path.join(outdir, f"{sid}.raw.json")


def gradebook_path(outdir):
    return os.path.join(outdir, "grades.csv")


# ---------------------------------------------------------------------------
# one submission's files
# ---------------------------------------------------------------------------

_ENV = None


def _environment():
    global _ENV
    if _ENV is None:
        from checker.runner import environment
        _ENV = environment()
    return _ENV


def crashed_scorecard(sid, path, assignment, mode, message, *, duration_s=0.0, seed=None):
    """The scorecard of a submission hwcheck could not grade: status crashed, 0 points."""
    try:
        sha = sha256_of(path)
    except OSError:
        sha = None
    grader = {"version": __version__, "mode": mode, "spec_sha256": spec_sha256(assignment),
              "internal_error": str(message)}
    if seed is not None:
        grader["seed"] = seed
    return build_scorecard(
        None, load_spec(assignment),
        submission={"id": sid, "path": os.path.abspath(path), "sha256": sha},
        load={"ok": False, "messages": [f"hwcheck could not grade this submission: {message}"]},
        environment=_environment(), grader=grader, duration_s=duration_s, status="crashed")


def _write(outdir, sid, card, *, keep_raw, raw=None):
    """Write one submission's files, the scorecard last (it marks the submission done)."""
    if keep_raw and raw is not None:
        try:
            write_json_atomic(raw_path(outdir, sid), raw)
        except ValueError:  # NaN or the like in the raw report: keep the text JSON can hold
            write_json_atomic(raw_path(outdir, sid), json.loads(json.dumps(raw, default=str)
                                                                .replace("NaN", "null")))
    elif not keep_raw:
        try:
            os.unlink(raw_path(outdir, sid))  # a raw report of an older grading would mislead
        except FileNotFoundError:
            pass
    internal = (card.get("grader") or {}).get("internal_error")
    results = (make_failure_results(f"hwcheck could not grade this submission: {internal}",
                                    execution_time=card.get("duration_s", 0))
               if internal else make_results(card))
    write_json_atomic(results_path(outdir, sid), results)
    write_json_atomic(scorecard_path(outdir, sid), card)


def _summary_of(sid, card, seconds):
    return {"id": sid, "status": card.get("status"), "score": card.get("score"),
            "max_score": card.get("max_score"), "seconds": round(seconds, 3),
            "internal": (card.get("grader") or {}).get("internal_error"), "resumed": False,
            "gaps": isolation_gaps((card.get("grader") or {}).get("isolation"))}


def grade_one(grader, sid, path, assignment, outdir, *, keep_raw=False):
    """Grade one submission with `grader`, write its files; return its short result dict.

    Never raises for a problem of this submission: a failure to grade it
    becomes a crashed scorecard.
    """
    t0 = time.perf_counter()
    try:
        card = grader.grade(path, assignment)
    except HwcheckError as e:
        card = crashed_scorecard(sid, path, assignment, grader.mode, _one_line(e),
                                 duration_s=time.perf_counter() - t0, seed=grader.seed)
    except Exception as e:  # noqa: BLE001 - a bug of hwcheck must not stop the batch
        card = crashed_scorecard(sid, path, assignment, grader.mode,
                                 f"internal error {type(e).__name__}: {_one_line(e)} "
                                 f"({_where(e)})",
                                 duration_s=time.perf_counter() - t0, seed=grader.seed)
    raw = card.pop("_raw_report", None)
    card["submission"]["id"] = sid
    _write(outdir, sid, card, keep_raw=keep_raw, raw=raw)
    return _summary_of(sid, card, time.perf_counter() - t0)


def _one_line(e):
    text = " ".join(str(e).split())
    return text[:500] if text else type(e).__name__


def _where(e):
    tb = traceback.extract_tb(e.__traceback__)
    return f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else "?"


# ---------------------------------------------------------------------------
# resume
# ---------------------------------------------------------------------------

def is_current(outdir, sid, path, assignment, mode, *, keep_raw=False, sha=None, spec_sha=None):
    """True when OUTDIR/<id>.json is a complete scorecard of this very submission and grader.

    Same assignment, submission id and sha256, grader version, mode and spec
    sha256, a known status, and no internal error of hwcheck. With keep_raw,
    the raw report must be there too.
    """
    card = read_json(scorecard_path(outdir, sid))
    if not isinstance(card, dict) or card.get("schema_version") != SCHEMA_VERSION:
        return False
    sub, grader = card.get("submission"), card.get("grader")
    if not isinstance(sub, dict) or not isinstance(grader, dict):
        return False
    try:
        sha = sha or sha256_of(path)
    except OSError:
        return False
    return (card.get("assignment") == assignment and sub.get("id") == sid and sub.get("sha256") == sha
            and grader.get("version") == __version__ and grader.get("mode") == mode
            and grader.get("spec_sha256") == (spec_sha or spec_sha256(assignment))
            and card.get("status") in STATUSES and not grader.get("internal_error")
            and not grader.get("student_kit")
            and (not keep_raw or os.path.isfile(raw_path(outdir, sid))))


def _restore_results(outdir, sid):
    """A current scorecard whose results.json is gone or broken: rewrite it from the scorecard."""
    if isinstance(read_json(results_path(outdir, sid)), dict):
        return
    write_json_atomic(results_path(outdir, sid), make_results(read_json(scorecard_path(outdir, sid))))


def _remove_stale_temps(outdir):
    """Temporary files of atomic writes cut short by a kill (none of ours is running now)."""
    folders = [outdir]
    gs = os.path.join(outdir, "gradescope")
    if os.path.isdir(gs):
        folders += [os.path.join(gs, d) for d in os.listdir(gs)]
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        for name in names:
            if _STALE_TMP.match(name):
                try:
                    os.unlink(os.path.join(folder, name))
                except OSError:
                    pass


def _scorecards_in(outdir):
    """Every scorecard in OUTDIR, whatever its assignment (other JSON files, raw reports included, are not)."""
    try:
        names = sorted(os.listdir(outdir))
    except OSError:
        return
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        card = read_json(os.path.join(outdir, name))
        if (isinstance(card, dict) and card.get("schema_version") == SCHEMA_VERSION
                and isinstance(card.get("assignment"), str) and isinstance(card.get("submission"), dict)
                and isinstance(card.get("questions"), list)):
            yield card


def _other_assignments(outdir, assignment):
    """{assignment: count} of the scorecards in OUTDIR that belong to another assignment."""
    return collections.Counter(c["assignment"] for c in _scorecards_in(outdir) if c["assignment"] != assignment)


def collect_scorecards(outdir, assignment):
    """Every scorecard of `assignment` in OUTDIR (other JSON files, raw reports included, are ignored)."""
    return [c for c in _scorecards_in(outdir) if c["assignment"] == assignment]


# ---------------------------------------------------------------------------
# the batch
# ---------------------------------------------------------------------------

class BatchResult:
    """What a batch did: one short result per submission (graded or resumed), in finishing order."""

    def __init__(self, assignment, outdir, total, jobs):
        self.assignment, self.outdir, self.total, self.jobs = assignment, outdir, total, jobs
        self.results = []
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.gradebook = None
        self.answers = None  # answers.csv, when the assignment has questions a person grades
        self.interrupted = False
        self.stale = []  # ids of scorecards in OUTDIR whose submission was not in this batch
        self.seed = None  # the batch's seed (kept in its scorecards), for a later --only regrade
        self.manual = None  # manual.csv, the TA's grades (checker.manual)
        self.manual_added = 0  # rows appended to it for new submissions
        self.problems = []  # rows of manual.csv that could not be used, and why

    @property
    def graded(self):
        return [r for r in self.results if not r["resumed"]]

    @property
    def resumed(self):
        return [r for r in self.results if r["resumed"]]

    @property
    def failed(self):
        """Submissions whose status is not "graded" (load failures, timeouts, crashes)."""
        return [r for r in self.results if r["status"] != "graded"]

    @property
    def internal(self):
        """Submissions hwcheck could not grade (its own failure, not the student's)."""
        return [r for r in self.results if r["internal"]]

    def event(self, result):
        """The progress event after `result`: the result plus done/total/failed/elapsed/eta."""
        elapsed = time.monotonic() - self.started
        graded = len(self.graded)
        left = self.total - len(self.results)
        eta = elapsed / graded * left if graded else None
        return {**result, "done": len(self.results), "total": self.total,
                "failed": len(self.failed), "elapsed": elapsed, "eta": eta}


def grade_batch(entries, assignment, outdir, *, jobs=1, resume=False, timeout=None, mode="hidden",
                keep_raw=False, on_progress=None, seed=None, devices=("cpu", "cuda"), only=None, executor=None):
    """Grade `entries` ([(id, path)]) and write their files and the gradebook into `outdir`.

    jobs: trusted processes (1: in this process). resume: skip submissions
    whose scorecard is current (`is_current`). timeout: each submission's time
    budget in seconds (None: the spec's). mode: "hidden" or "public". seed:
    the run seed (default: random in hidden mode, the public seed in public
    mode); one seed for the whole batch, so every student gets the same
    inputs. on_progress(event) is called once per submission (see
    `BatchResult.event`). only: ids to regrade (whatever their scorecard
    says); the others keep their scorecards, and the seed, when not given,
    is the one the batch's scorecards in OUTDIR were graded with. Entries that
    are OUTDIR's own files (`checker.outputs.is_own_output`) are never graded.
    executor(todo, options, report), when given, grades instead of the local
    processes (`checker.cluster.DaskExecutor`). Returns a `BatchResult`.
    """
    if mode not in ("public", "hidden"):
        raise ValueError(f"mode must be 'public' or 'hidden', not {mode!r}")
    spec = load_spec(assignment)
    spec_sha = spec_sha256(assignment)
    from checker.runner import KIT_HAS_NO_HIDDEN, is_student_kit
    if mode == "hidden" and is_student_kit(spec):
        raise HwcheckError(KIT_HAS_NO_HIDDEN)
    others = _other_assignments(outdir, assignment)
    if others:
        raise HwcheckError(
            f"{outdir} already holds scorecards of {', '.join(sorted(others))} "
            f"({sum(others.values())} files); grading {assignment} there would mix two assignments "
            f"in one grades.csv and could overwrite their scorecards: choose another output folder")
    entries = [(sid, path) for sid, path in entries if not is_own_output(outdir, path)]
    if only is not None:
        only = set(only)
        unknown = sorted(only - {sid for sid, _ in entries})
        if unknown:
            raise HwcheckError(f"--only: no submission {', '.join(map(repr, unknown))} in the folder graded "
                               f"(ids: {', '.join(sid for sid, _ in entries[:20])}"
                               f"{', ...' if len(entries) > 20 else ''})")
    os.makedirs(outdir, exist_ok=True)
    lock = _lock(outdir)
    try:
        return _grade_batch(list(entries), assignment, outdir, spec, spec_sha, jobs=jobs, resume=resume,
                            timeout=timeout, mode=mode, keep_raw=keep_raw, on_progress=on_progress,
                            seed=seed, devices=devices, only=only, executor=executor)
    finally:
        os.close(lock)


def _lock(outdir):
    """Hold OUTDIR/.hwcheck.lock: two batches writing one OUTDIR would undo each other's work."""
    import fcntl
    fd = os.open(os.path.join(outdir, ".hwcheck.lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        raise HwcheckError(f"another `hwcheck grade` is writing into {outdir}; wait for it to finish") from None
    return fd


def _grade_batch(entries, assignment, outdir, spec, spec_sha, *, jobs, resume, timeout, mode, keep_raw,
                 on_progress, seed, devices, only=None, executor=None):
    _remove_stale_temps(outdir)
    batch = BatchResult(assignment, outdir, len(entries), jobs)
    book = Gradebook(outdir, spec, collect_scorecards(outdir, assignment), [sid for sid, _ in entries])
    book.ensure_manual()  # the TA's file exists, with a row per submission, before the first scorecard

    def report(result):
        batch.results.append(result)
        book.update(result["id"], scorecard_path(outdir, result["id"]))
        try:  # the gradebook stays as current as the scorecards (a SIGKILL loses nothing of it)
            book.write()
        except OSError:
            pass  # written again at the end
        if on_progress is not None:
            on_progress(batch.event(result))

    todo, seeds = [], []
    if only is not None and seed is None and mode == "hidden":  # a regrade uses the batch's own seed
        seeds = [(c.get("grader") or {}).get("seed") for c in book.cards.values()
                 if (c.get("grader") or {}).get("mode") == mode and not (c.get("grader") or {}).get("internal_error")]
    for sid, path in entries:
        if only is not None and sid not in only:
            card = read_json(scorecard_path(outdir, sid))
            if isinstance(card, dict) and isinstance(card.get("submission"), dict):
                report({**_summary_of(sid, card, 0.0), "seconds": card.get("duration_s", 0.0), "resumed": True})
            else:
                batch.total -= 1  # not graded yet, and not asked for: left for a full run
            continue
        if only is None and resume and is_current(outdir, sid, path, assignment, mode, keep_raw=keep_raw,
                                                  spec_sha=spec_sha):
            _restore_results(outdir, sid)
            card = read_json(scorecard_path(outdir, sid))
            seeds.append((card.get("grader") or {}).get("seed"))
            report({**_summary_of(sid, card, 0.0), "seconds": card.get("duration_s", 0.0), "resumed": True})
        else:
            todo.append((sid, path))
    if seed is None and mode == "hidden":
        # A resumed batch goes on with the seed of its scorecards: one seed for the whole class.
        known = [x for x in seeds if isinstance(x, int) and not isinstance(x, bool)]
        seed = collections.Counter(known).most_common(1)[0][0] if known else secrets.randbits(31)
    batch.seed = seed

    # Workers may read neither the output folder nor the folders holding the other submissions.
    secrets_ = sorted({os.path.abspath(outdir)} | {os.path.dirname(os.path.abspath(p)) for _, p in entries})
    options = {"assignment": assignment, "outdir": outdir, "mode": mode, "seed": seed, "secrets": secrets_,
               "timeout": timeout, "keep_raw": keep_raw, "devices": tuple(devices)}
    try:
        if todo and executor is not None:
            executor(todo, options, report)
        elif todo and (jobs <= 1 or len(todo) == 1):
            _run_in_process(todo, options, report)
        elif todo:
            _run_parallel(todo, min(jobs, len(todo)), options, report)
    except KeyboardInterrupt:
        batch.interrupted = True
        raise
    finally:
        batch.elapsed = time.monotonic() - batch.started
        book.write(final=True)
        batch.stale, batch.gradebook, batch.answers = book.stale, book.gradebook, book.answers
        batch.manual, batch.manual_added, batch.problems = book.manual, book.added, book.problems
    return batch


def _uses_torch(assignment):
    return load_spec(assignment).get("framework") == "torch"


def _warm_up(assignment):
    """Import the grading tests, what they import, the reference and torch, once per batch.

    The first pytest session of a process pays for importing the test module
    (and hypothesis, numpy ...): done here, that cost is charged to no
    submission's time budget, and forked workers inherit the warm modules.
    """
    import contextlib
    import importlib
    import io

    import pytest

    from checker import runner  # noqa: F401 - the Grader's own imports (plugin, pytest-json-report)
    from checker.spec import tests_path
    spec = load_spec(assignment)
    path = tests_path(spec)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        pytest.main([path, "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                     "-p", "no:xdist", "--rootdir", os.path.dirname(path)])
    try:
        importlib.import_module(spec["reference"])
    except ImportError:
        pass  # the grading tests will say so
    _environment()


def _new_grader(options, zygote=None):
    from checker.runner import Grader
    return Grader(mode=options["mode"], seed=options["seed"], devices=options["devices"],
                  timeout=options["timeout"], keep_raw=options["keep_raw"], zygote=zygote,
                  extra_secrets=options.get("secrets", ()), warm_meta=_uses_torch(options["assignment"]))


def _run_in_process(todo, options, report):
    grader = _new_grader(options)  # its zygote imports torch while this process warms up
    _warm_up(options["assignment"])
    try:
        for sid, path in todo:
            if grader is not None and not grader.zygote.alive():
                grader.close()  # the zygote died: start a fresh one for the rest
                grader = None
            if grader is None:
                grader = _new_grader(options)  # a zygote that cannot start stops the batch (exit 2)
            try:
                result = grade_one(grader, sid, path, options["assignment"], options["outdir"],
                                   keep_raw=options["keep_raw"])
            except Exception as e:  # noqa: BLE001 - writing its files failed: the batch goes on
                result = _crash(sid, path, options, f"writing its files failed: {type(e).__name__}: "
                                                    f"{_one_line(e)}")
            report(result)
    finally:
        if grader is not None:
            grader.close()


def _crash(sid, path, options, message, seconds=0.0):
    """Write a crashed scorecard from this (the parent) process; return its short result.

    Where even that cannot be written (a full disk, a name the file system
    refuses), the result says so and the batch goes on without the file.
    """
    card = crashed_scorecard(sid, path, options["assignment"], options["mode"], message,
                             duration_s=seconds, seed=options["seed"])
    try:
        _write(options["outdir"], sid, card, keep_raw=False)
    except (OSError, ValueError) as e:
        card["grader"]["internal_error"] = f"{message}; no scorecard could be written: {_one_line(e)}"
    return _summary_of(sid, card, seconds)


# ---------------------------------------------------------------------------
# parallel: one zygote, several forked trusted workers
# ---------------------------------------------------------------------------

def _die_with_parent():
    """Ask the kernel to SIGKILL this process when its parent dies (Linux)."""
    try:
        import ctypes
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _worker_main(index, zygote, conn, options, parent_pid):
    """Body of one forked trusted worker: grade what arrives on `conn` until None or EOF."""
    _die_with_parent()
    if os.getppid() != parent_pid:  # the parent died before the line above took effect
        os._exit(1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:  # several graders share the CPUs; torch's pool must not be used across the fork either
        import torch
        torch.set_num_threads(1)
    except Exception:  # noqa: BLE001
        pass
    try:
        grader = _new_grader(options, zygote=zygote.channel(index))
    except Exception:  # noqa: BLE001 - the parent sees the exit and replaces this worker
        os._exit(3)
    while True:
        try:
            task = conn.recv()
        except (EOFError, OSError):
            break
        if task is None:
            break
        sid, path = task
        try:
            result = grade_one(grader, sid, path, options["assignment"], options["outdir"],
                               keep_raw=options["keep_raw"])
        except Exception as e:  # noqa: BLE001 - even writing failed: say so to the parent
            result = {"id": sid, "error": f"{type(e).__name__}: {_one_line(e)}"}
        try:
            conn.send(result)
        except (OSError, ValueError):
            break
    grader.close()  # its scratch dir (the zygote is the parent's to close)
    os._exit(0)


class _Slot:
    def __init__(self, process, conn):
        self.process, self.conn = process, conn
        self.task = None
        self.started = 0.0
        self.idle_deaths = 0


class _Pool:
    """One zygote with `n` channels and `n` forked trusted workers, one per channel."""

    def __init__(self, n, options):
        from checker.zygote_client import Zygote
        # the zygote imports torch in the background while this process warms up, once, before forking
        # (no torch op runs in this process)
        self.zygote = Zygote(channels=n, warm_meta=_uses_torch(options["assignment"]))
        _warm_up(options["assignment"])
        self.options = options
        self.ctx = multiprocessing.get_context("fork")
        self.slots = [None] * n
        for i in range(n):
            self.start(i)

    def start(self, i):
        old = self.slots[i]
        parent_conn, child_conn = self.ctx.Pipe()
        process = self.ctx.Process(target=_worker_main, name=f"hwcheck-grader-{i}",
                                   args=(i, self.zygote, child_conn, self.options, os.getpid()))
        process.daemon = True
        process.start()
        child_conn.close()
        slot = _Slot(process, parent_conn)
        slot.idle_deaths = old.idle_deaths if old else 0
        self.slots[i] = slot

    def drain(self, i):
        """Drop any reply of the zygote that a dead worker did not read (it would confuse the next)."""
        ch = self.zygote.channels[i]
        time.sleep(0.05)
        try:
            ch.setblocking(False)
            while True:
                ch.recv(65536)
        except (BlockingIOError, OSError):
            pass
        finally:
            try:
                ch.settimeout(30)
            except OSError:
                pass

    def close(self, kill=False):
        for slot in self.slots:
            if slot is None:
                continue
            if not kill:
                try:
                    slot.conn.send(None)
                except (OSError, ValueError):
                    pass
        for slot in self.slots:
            if slot is None:
                continue
            if kill:
                slot.process.kill()
            slot.process.join(timeout=10 if not kill else 2)
            if slot.process.is_alive():
                slot.process.kill()
                slot.process.join(timeout=2)
            slot.conn.close()
        self.zygote.close()


def _run_parallel(todo, n, options, report):
    pending = collections.deque(todo)
    retried = set()
    restarts = 0
    pool = _Pool(n, options)
    try:
        while True:
            live = [i for i, s in enumerate(pool.slots) if s is not None]
            if not live:  # every slot was given up: the rest cannot be graded in workers
                while pending:
                    sid, path = pending.popleft()
                    report(_crash(sid, path, options, "the grading processes kept dying at start"))
                return
            for i in live:
                slot = pool.slots[i]
                if slot.task is None and pending and slot.process.is_alive():
                    slot.task = pending.popleft()
                    slot.started = time.monotonic()
                    try:
                        slot.conn.send(slot.task)
                    except (OSError, ValueError):
                        pass  # its death is handled below
            busy = [pool.slots[i] for i in live if pool.slots[i].task is not None]
            if not busy and not pending:
                return
            waitables = [s.conn for s in busy] + [pool.slots[i].process.sentinel for i in live]
            ready = multiprocessing.connection.wait(waitables, timeout=1.0)

            for i in live:
                slot = pool.slots[i]
                if slot.task is not None and slot.conn in ready:
                    try:
                        result = slot.conn.recv()
                    except (EOFError, OSError):
                        result = None
                    if result is not None:
                        sid, path = slot.task
                        slot.task = None
                        slot.idle_deaths = 0
                        if result.get("internal") and sid not in retried and not pool.zygote.alive():
                            retried.add(sid)  # the zygote's death, not this submission: once more
                            pending.appendleft((sid, path))
                            continue
                        if "error" in result:
                            result = _crash(sid, path, options, f"writing its files failed: {result['error']}",
                                            time.monotonic() - slot.started)
                        report(result)
                if not slot.process.is_alive():
                    _replace_dead(pool, i, options, report)

            if not pool.zygote.alive():
                # The zygote died: every worker's next fork would fail. Stop them, put their
                # submissions back (once each), and start over with a fresh zygote.
                for slot in pool.slots:
                    if slot is not None and slot.task is not None:
                        sid, path = slot.task
                        slot.task = None
                        if sid in retried:
                            report(_crash(sid, path, options, "the worker zygote died twice while grading it"))
                        else:
                            retried.add(sid)
                            pending.appendleft((sid, path))
                pool.close(kill=True)
                restarts += 1
                if restarts > MAX_POOL_RESTARTS:
                    while pending:
                        sid, path = pending.popleft()
                        report(_crash(sid, path, options, "the worker zygote kept dying"))
                    pool = None
                    return
                pool = _Pool(n, options)
    except BaseException:  # Ctrl-C or a bug: stop the workers now (files are atomic; resume redoes)
        if pool is not None:
            pool.close(kill=True)
            pool = None
        raise
    finally:
        if pool is not None:
            pool.close()


def _replace_dead(pool, i, options, report):
    """A trusted worker died: its submission (if any) is crashed, and a new worker takes its slot."""
    slot = pool.slots[i]
    try:  # a result sent just before dying still counts
        while slot.task is not None and slot.conn.poll():
            result = slot.conn.recv()
            if result is not None and "error" not in result:
                slot.task = None
                report(result)
    except (EOFError, OSError):
        pass
    slot.process.join(timeout=1)
    code = slot.process.exitcode
    why = (f"signal {signal.Signals(-code).name}" if code is not None and code < 0
           else f"exit status {code}")
    if slot.task is not None:
        sid, path = slot.task
        slot.task = None
        report(_crash(sid, path, options, f"the grading process died while grading it ({why})",
                      time.monotonic() - slot.started))
        slot.idle_deaths = 0
    else:
        slot.idle_deaths += 1
    slot.conn.close()
    if slot.idle_deaths >= MAX_IDLE_DEATHS:
        pool.slots[i] = None
        return
    pool.drain(i)
    pool.start(i)


