"""Grade one Gradescope submission inside the autograder container (`hwcheck autograde`).

What it is for: the zip's `run_autograder` (see `checker.platforms.autograder`) runs
`hwcheck autograde -a ID --root /autograder`, which grades ROOT/submission as
ONE submission whatever it holds (one file, several files, a folder; the
shipped starter beside the student's file is left out by the sandbox's copy;
the `__MACOSX` folders and `._*` files a Mac's zip adds are left out here) with
all tests (hidden mode, a fresh seed) and writes ROOT/results/results.json.

`autograde(root, assignment)` never raises and always writes that file: an
error of hwcheck becomes a results.json with 0 points and a message for the
student (the traceback goes to stderr, Gradescope's log, which the TA sees).
`autograder_results(scorecard)` is the pure mapping: Gradescope's results
(`checker.render.gradescope.make_results`) with the tests that did not run for want
of a GPU left out and counted in one line of `output`, and each question's
points shared again among its tests (its passed tests share exactly its
score) so that the top-level score is exactly the sum of the tests (the
scorecard rounds a question's score once, but each test's share on its own).

What it is not: a batch (`checker.records.batch`: one submission here, no manual.csv,
no grades.csv) or the zip's builder (`checker.platforms.autograder`).
"""

from __future__ import annotations

import copy
import os
import shutil
import sys
import tempfile
import time
import traceback
from decimal import ROUND_FLOOR, Decimal

from checker.judging.portability import gpu_skip_reason
from checker.records.atomic import write_json_atomic
from checker.walk import walk
from checker.render.gradescope import make_failure_results, make_results

__all__ = ["autograde", "autograder_results", "gpu_skipped", "results_file", "INTERNAL_TEXT"]

INTERNAL_TEXT = ("The autograder could not grade this submission (an error of the grading program, not of "
                 "your work): {detail}. Please tell your course staff; your submission was received.")
_JUNK_DIRS = ("__MACOSX",)


def results_file(root):
    return os.path.join(root, "results", "results.json")


def gpu_skipped(test):
    """A scorecard test that did not run because this machine has no GPU (a CUDA variant, a CUDA-only dtype): by
    its device or by the grading plugin's own reason, never by a word in a message a student's text may fill."""
    return test.get("outcome") == "skipped" and (test.get("device") == "cuda" or gpu_skip_reason(test.get("message")))


def _dec(x):
    return Decimal(str(x or 0))


def _num(d):
    d = d.quantize(Decimal("0.0001"))
    return int(d) if d == d.to_integral_value() else float(d)


def _apportion(amount, weights):
    """`amount` split by `weights` into 4-decimal shares that add up to it exactly (largest remainder)."""
    unit = Decimal("0.0001")
    total = sum(weights, Decimal(0))
    if not weights:
        return []
    if total <= 0:
        weights, total = [Decimal(1)] * len(weights), Decimal(len(weights))
    exact = [amount * w / total for w in weights]
    shares = [(x / unit).to_integral_value(rounding=ROUND_FLOOR) * unit for x in exact]
    left = int(((amount - sum(shares, Decimal(0))) / unit).to_integral_value())
    for i in sorted(range(len(shares)), key=lambda i: shares[i] - exact[i])[:max(0, left)]:
        shares[i] += unit
    return shares


def _respread(question):
    """Give the question's passed tests exactly its score and the others the rest of its points.

    The scorecard rounds each test's share and, once, the question's score: its
    passed shares may add up to a little more or less than the score
    (0.001 over 20 tests). Here the passed tests share the score, and the
    others the points it did not earn, each in proportion to its own share.
    """
    runnable = [t for t in question.get("tests") or [] if t.get("outcome") != "skipped"]
    passed = [t for t in runnable if t.get("outcome") == "passed"]
    others = [t for t in runnable if t.get("outcome") != "passed"]
    score = _dec(question.get("score"))
    for group, amount, earned in ((passed, score, True), (others, _dec(question.get("max_score")) - score, False)):
        for t, share in zip(group, _apportion(amount, [_dec(t.get("max_points")) for t in group])):
            t["max_points"] = _num(share)
            t["points"] = _num(share) if earned else 0


def _total(results):
    """Each entry's numbers in 4 decimals, and the top-level score exactly their sum."""
    for t in results["tests"]:
        t["score"], t["max_score"] = _num(_dec(t["score"])), _num(_dec(t["max_score"]))
    results["score"] = _num(sum((_dec(t["score"]) for t in results["tests"]), Decimal(0)))
    return results


def autograder_results(scorecard):
    """Gradescope's results.json dict for one autograded scorecard (pure)."""
    internal = (scorecard.get("grader") or {}).get("internal_error")
    if internal:
        return make_failure_results(INTERNAL_TEXT.format(detail=internal),
                                    execution_time=scorecard.get("duration_s", 0))
    card = copy.deepcopy(scorecard)
    folded = 0
    for q in card.get("questions") or []:
        kept = [t for t in q.get("tests") or [] if not gpu_skipped(t)]
        folded += len(q.get("tests") or []) - len(kept)
        q["tests"] = kept
        if not q.get("manual"):
            _respread(q)
    results = _total(make_results(card))
    if folded:
        results["output"] += (f"\n{folded} test variants need a GPU (CUDA) and were not run here; they are worth "
                              "0 points: your score comes from the tests that ran.")
    grader = card.get("grader") or {}
    results["extra_data"] = {"hwcheck": {
        "version": grader.get("version"), "mode": grader.get("mode"), "seed": grader.get("seed"),
        "status": card.get("status"), "gpu_tests_not_run": folded,
        "isolation": [str(w)[:120] for w in grader.get("isolation") or [] if isinstance(w, str)][:20]}}
    return results


def _is_junk(name):
    return name in _JUNK_DIRS or name.startswith("._") or name == ".DS_Store"


def _without_junk(sub, tmp):
    """`sub`, or a copy of it in `tmp` without what a Mac's zip adds (links copied as links, never followed)."""
    if not any(_is_junk(n) for _, dirs, files in walk(sub) for n in dirs + files):
        return sub
    dest = os.path.join(tmp, "submission")
    # checker.walk, not shutil.copytree: a folder nested a thousand deep made copytree raise RecursionError
    for dirpath, dirs, files in walk(sub):
        dirs[:] = [d for d in dirs if not _is_junk(d)]
        here = os.path.join(dest, os.path.relpath(dirpath, sub))
        os.makedirs(here, exist_ok=True)
        for name in files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]:
            src = os.path.join(dirpath, name)
            if _is_junk(name):
                continue
            try:
                if os.path.islink(src):
                    os.symlink(os.readlink(src), os.path.join(here, name))
                elif os.path.isfile(src):
                    shutil.copy2(src, os.path.join(here, name))
            except OSError:
                pass  # what cannot be copied is not graded; the grader's own copy says what it left out
    return dest


def _grade(root, assignment, timeout):
    from checker.errors import HwcheckError
    from checker.running.runner import Grader
    from checker.spec import uses_torch
    sub = os.path.join(root, "submission")
    if not os.path.isdir(sub):
        raise HwcheckError(f"there is no submission folder ({sub})")
    warm = uses_torch(assignment)
    with tempfile.TemporaryDirectory(prefix="hwcheck-autograde-") as tmp:
        # /autograder (results, the zip's files, the submission's original) is kept from the worker, as a
        # batch keeps its OUTDIR and submissions folder: the worker reads its own copy of the submission
        keep = (os.path.abspath(root),)
        with Grader(mode="hidden", timeout=timeout, warm_meta=warm, extra_secrets=keep) as grader:
            card = grader.grade(_without_junk(sub, tmp), assignment)
    card.pop("_raw_report", None)
    return card


def autograde(root, assignment, *, timeout=None, log=sys.stderr):
    """Grade ROOT/submission, write ROOT/results/results.json; return the results dict. Never raises."""
    t0 = time.monotonic()
    try:
        if os.environ.get("HWCHECK_AUTOGRADE_CRASH"):  # tests: an error of hwcheck itself, mid-grading
            raise RuntimeError("HWCHECK_AUTOGRADE_CRASH is set")
        results = autograder_results(_grade(root, assignment, timeout))
    except BaseException as e:  # noqa: BLE001 - whatever happens, the student gets a results.json
        print("hwcheck autograde: grading failed:", file=log)
        traceback.print_exc(file=log)
        detail = " ".join(str(e).split())[:300] or type(e).__name__
        results = make_failure_results(INTERNAL_TEXT.format(detail=f"{type(e).__name__}: {detail}"),
                                       execution_time=time.monotonic() - t0)
    try:
        write_json_atomic(results_file(root), results)
    except (ValueError, TypeError) as e:  # NaN or the like: say so rather than leave no file
        results = make_failure_results(INTERNAL_TEXT.format(detail=f"the results could not be written ({e})"),
                                       execution_time=time.monotonic() - t0)
        write_json_atomic(results_file(root), results)
    return results
