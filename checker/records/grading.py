"""Grading one submission of a batch in a trusted process, and what it reports back.

What it is for: the pieces that every way of running a batch shares (in
this process, the forked pool of `checker.records.pool`, a Dask worker of
`checker.platforms.cluster`):

- `new_grader(options)` builds the `Grader` a batch's process (or pool slot)
  grades with, and `warm_up(assignment)` imports the grading tests, the
  reference and torch once, before any submission's time budget runs;
- `grade_one(grader, ...)` grades one submission and writes its files
  (`checker.records.outfolder.write_submission`); a failure to grade it becomes a
  crashed scorecard (`crashed_scorecard`), never an exception;
- `crash(...)` writes a crashed scorecard from the batch's own process (a
  worker died, a file could not be sent), and `summary_of` is the short
  result a batch reports for each submission (`checker.records.batch.BatchResult`);
- a crashed scorecard whose cause is the grader's own machinery (its worker
  zygote died or stopped answering: `zygote_failed`) says so with
  `grader.grader_failure`: the batch grades that submission again at once
  with a fresh zygote (it may owe its crash to another submission's worker),
  and `--resume` never keeps it (it has `grader.internal_error`);
- `one_line(e)` and `where(e)` make an exception of hwcheck one short line.

What it is not: the grading itself (`checker.running.runner`'s Grader), the
processes (`checker.records.pool`, `checker.platforms.cluster`), or the output folder's paths
and reading (`checker.records.outfolder`).
"""

import os
import time
import traceback

from checker._version import __version__
from checker.errors import HwcheckError
from checker.records.outfolder import write_submission
from checker.records.progress import isolation_gaps
from checker.judging.scorecard import build_scorecard
from checker.spec import load_spec, spec_sha256, uses_torch
from checker.running.submission_files import sha256_of

__all__ = ["crashed_scorecard", "summary_of", "grade_one", "one_line", "where", "warm_up",
           "new_grader", "crash", "disk_full", "zygote_failed"]

_ENV = None


def _environment():
    global _ENV
    if _ENV is None:
        from checker.running.runner import environment
        _ENV = environment()
    return _ENV


def crashed_scorecard(sid, path, assignment, mode, message, *, duration_s=0.0, seed=None, grader_failure=False):
    """The scorecard of a submission hwcheck could not grade: status crashed, 0 points.

    grader_failure: the grader's own machinery failed (not this submission, as far as is known)."""
    try:
        sha = sha256_of(path)
    except OSError:
        sha = None
    grader = {"version": __version__, "mode": mode, "spec_sha256": spec_sha256(assignment),
              "internal_error": str(message)}
    if seed is not None:
        grader["seed"] = seed
    if grader_failure:
        grader["grader_failure"] = True
    return build_scorecard(
        None, load_spec(assignment),
        submission={"id": sid, "path": os.path.abspath(path), "sha256": sha},
        load={"ok": False, "messages": [f"hwcheck could not grade this submission: {message}"]},
        environment=_environment(), grader=grader, duration_s=duration_s, status="crashed")


def summary_of(sid, card, seconds):
    """The short result a batch reports for one submission (`checker.records.progress` prints it)."""
    return {"id": sid, "status": card.get("status"), "score": card.get("score"),
            "max_score": card.get("max_score"), "seconds": round(seconds, 3),
            "internal": (card.get("grader") or {}).get("internal_error"), "resumed": False,
            "grader_failure": bool((card.get("grader") or {}).get("grader_failure")),
            "gaps": isolation_gaps((card.get("grader") or {}).get("isolation")),
            "written_for": (card.get("load") or {}).get("written_for")}


def grade_one(grader, sid, path, assignment, outdir, *, keep_raw=False):
    """Grade one submission with `grader`, write its files; return its short result dict.

    Never raises for a problem of this submission: a failure to grade it
    becomes a crashed scorecard.
    """
    t0 = time.perf_counter()
    try:
        card = grader.grade(path, assignment)
    except HwcheckError as e:
        card = crashed_scorecard(sid, path, assignment, grader.mode, one_line(e),
                                 duration_s=time.perf_counter() - t0, seed=grader.seed,
                                 grader_failure=zygote_failed(grader))
    except Exception as e:  # noqa: BLE001 - a bug of hwcheck must not stop the batch
        card = crashed_scorecard(sid, path, assignment, grader.mode,
                                 f"internal error {type(e).__name__}: {one_line(e)} "
                                 f"({where(e)})",
                                 duration_s=time.perf_counter() - t0, seed=grader.seed,
                                 grader_failure=zygote_failed(grader))
    zygote = getattr(grader, "zygote", None)
    if card.get("status") != "crashed" and hasattr(zygote, "alive") and not zygote.alive():
        # it died during this grading: tests after its death failed for the grader's reason, not the student's
        card = crashed_scorecard(sid, path, assignment, grader.mode, "the worker zygote died while grading it",
                                 duration_s=time.perf_counter() - t0, seed=grader.seed, grader_failure=True)
    raw = card.pop("_raw_report", None)
    card["submission"]["id"] = sid
    write_submission(outdir, sid, card, keep_raw=keep_raw, raw=raw)
    return summary_of(sid, card, time.perf_counter() - t0)


def zygote_failed(grader):
    """After a submission could not be graded: is the cause the grader's worker zygote (dead, hung)?"""
    zygote = getattr(grader, "zygote", None)
    if zygote is None or not hasattr(zygote, "answers"):
        return False
    try:
        return not zygote.answers()
    except Exception:  # noqa: BLE001 - a zygote that cannot even be asked has failed
        return True


def one_line(e):
    """An exception's message on one line of at most 500 characters (its type when it has none)."""
    text = " ".join(str(e).split())
    return text[:500] if text else type(e).__name__


def where(e):
    """file:line where an exception was raised, for an internal error's message."""
    tb = traceback.extract_tb(e.__traceback__)
    return f"{os.path.basename(tb[-1].filename)}:{tb[-1].lineno}" if tb else "?"


def warm_up(assignment):
    """Import the grading tests, what they import, the reference and torch, once per batch.

    The first pytest session of a process pays for importing the test module
    (and hypothesis, numpy ...): done here, that cost is charged to no
    submission's time budget, and forked workers inherit the warm modules.
    """
    import contextlib
    import importlib
    import io

    import pytest

    from checker.running import runner  # noqa: F401 - the Grader's own imports (plugin, pytest-json-report)
    from checker.spec import grading_test_files, tests_path
    spec = load_spec(assignment)
    sink = io.StringIO()
    with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
        pytest.main([*grading_test_files(spec), "--collect-only", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
                     "-p", "no:xdist", "--rootdir", tests_path(spec)])
    try:
        importlib.import_module(spec["reference"])
    except ImportError:
        pass  # the grading tests will say so
    _environment()


def new_grader(options, zygote=None):
    """The Grader of a batch's process or pool slot (`zygote`: a channel of a shared zygote, else its own)."""
    from checker.running.runner import Grader
    return Grader(mode=options["mode"], seed=options["seed"], devices=options["devices"],
                  timeout=options["timeout"], keep_raw=options["keep_raw"], zygote=zygote,
                  extra_secrets=options.get("secrets", ()), warm_meta=uses_torch(options["assignment"]))


def disk_full(e):
    """Whether `e` (an exception, or the errno a grading process sent) says OUT's disk or quota is full: the
    batch stops there (the TA frees space and resumes), rather than give every submission left a crashed card."""
    import errno
    codes = {errno.ENOSPC, getattr(errno, "EDQUOT", 122)}
    return (e in codes) if isinstance(e, int) else (isinstance(e, OSError) and e.errno in codes)


def crash(sid, path, options, message, seconds=0.0, grader_failure=False):
    """Write a crashed scorecard from this (the parent) process; return its short result.

    Where even that cannot be written (a full disk, a name the file system
    refuses), the result says so and the batch goes on without the file.
    """
    card = crashed_scorecard(sid, path, options["assignment"], options["mode"], message,
                             duration_s=seconds, seed=options["seed"], grader_failure=grader_failure)
    try:
        write_submission(options["outdir"], sid, card, keep_raw=False)
    except (OSError, ValueError) as e:
        card["grader"]["internal_error"] = f"{message}; no scorecard could be written: {one_line(e)}"
    return summary_of(sid, card, seconds)
