"""Benchmark of batch grading: `python bench/bench.py [-n 10] [--assignments attention vit charlm]` (default: every assignment found).

What it is for: measuring, in one run on one machine, what issue 6 asks:
submissions per minute per assignment at -j 1 and -j 2; the per-submission
fixed overhead (grading time minus the in-process time of the same calls on
the reference); the naive way (one `python -m pytest` process per
submission) as a baseline ratio; `hwcheck check` of a correct submission
against `python -c "import torch"`; and the slowest grading test on the
reference; and where a grade's time goes per test (`where_time_goes`: worker round trips, the reference
and the answer models on the trusted side, the rest of the tests' code, and what lies outside the tests).
It generates its batch from the repository (copies of the
reference, every example submission, one slow submission), so it runs from
a clean clone.

What it is not: a test. It asserts nothing; it prints figures (and writes
them to bench/out/results.json) for the README.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from checker.errors import StudentError  # noqa: E402
from checker.records.batch import grade_batch  # noqa: E402
from checker.running.plugin import HwcheckPlugin  # noqa: E402
from checker.worker.probes import Probes  # noqa: E402
from checker.running.runner import PYTEST_ARGS, run_pytest  # noqa: E402
from checker.running.sandbox import SubmissionHandle  # noqa: E402
from checker.spec import assignment_ids, example_dirs, load_spec, reference_file, grading_test_files  # noqa: E402
from checker import wire  # noqa: E402


def make_batch(aid, n, dest):
    """n copies of the reference, every example submission, one slow submission."""
    os.makedirs(dest)
    ref = reference_file(load_spec(aid))
    for i in range(n):
        shutil.copy(ref, os.path.join(dest, f"ref_{i:02d}.py"))
    for examples in example_dirs(aid):
        for e in sorted(os.listdir(examples)):
            src = os.path.join(examples, e)
            if e == "expected.json" or e.startswith((".", "__")) or os.path.exists(os.path.join(dest, "ex_" + e)):
                continue
            (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, os.path.join(dest, "ex_" + e))
    with open(ref) as f:
        src = f.read()
    with open(os.path.join(dest, "slow.py"), "w") as f:
        f.write("import time\ntime.sleep(2.0)  # a slow cell: loads data, trains, ...\n" + src)
    return [(os.path.splitext(e)[0] if e.endswith((".py", ".ipynb")) else e, os.path.join(dest, e))
            for e in sorted(os.listdir(dest))]


def timed_batch(entries, aid, jobs, out, stamps=None):
    t0 = time.perf_counter()
    on_progress = (lambda event: stamps.append(time.perf_counter() - t0)) if stamps is not None else None
    grade_batch(entries, aid, out, jobs=jobs, resume=False, timeout=None, mode="hidden", keep_raw=False,
                on_progress=on_progress)
    return time.perf_counter() - t0


class InProcessHandle(SubmissionHandle):
    """The reference run in this process through the same probes: the cost of the calls alone."""

    def __init__(self, aid):
        import importlib
        mod = importlib.import_module(load_spec(aid)["reference"])  # assignments/<id>/reference.py
        self.probes = Probes(vars(mod))
        self.path, self.id = mod.__file__, aid  # the "by hand" tests read the source on the trusted side
        self.names = [n for n in vars(mod) if not n.startswith("_")]
        self.loaded = self.load_ok = True
        self.call_time = 0.0
        self.generation = 1
        self.last_dtypes = []
        self.called, self.defs, self.origins, self.classes, self.timeouts = [], {}, {}, [], {}
        self.sock = None  # no worker: asks a test sends together (sub.together()) go one by one, in process

    def request(self, op, args, timeout=None, what=None, key=None, **_):  # bounds (expected_bytes) are a worker's
        obj, bufs = wire.encode(args)
        args = wire.decode_worker(obj, bufs)
        t0 = time.perf_counter()
        try:
            if op == "call":
                value = self.probes.call(args["name"], args.get("args", []), args.get("kwargs", {}))
            else:
                value = getattr(self.probes, op)(**args)
        except Exception as e:  # as the worker reports it (the tests that expect a ValueError)
            err = StudentError(f"{what} raised {type(e).__name__}: {e}")
            err.exc_types = tuple(c.__name__ for c in type(e).__mro__)
            raise err from None
        finally:
            self.call_time += time.perf_counter() - t0
        obj, bufs = wire.encode(value)
        value, self.last_dtypes = wire.decode_trusted(obj, bufs)
        return value

    def close(self):
        pass


def inprocess_call_time(aid):
    import pytest
    from pytest_jsonreport.plugin import JSONReport
    import contextlib
    import io
    spec = load_spec(aid)
    handle = InProcessHandle(aid)
    plugin = HwcheckPlugin(handle, spec, mode="hidden", seed=1)
    report = JSONReport()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        run_pytest([*grading_test_files(spec), *PYTEST_ARGS], [plugin, report])
    failed = [t["nodeid"] for t in (report.report or {}).get("tests", []) if t["outcome"] not in ("passed", "skipped")]
    if failed:  # a broken stand-in would time nothing and make the overhead look like the whole cost
        raise SystemExit(f"the in-process reference run failed {len(failed)} tests, e.g. {failed[:3]}")
    return handle.call_time


def naive_command(aid, path):
    """One plain `python -m pytest` process grading one submission (checker.standalone's options)."""
    return [sys.executable, "-m", "pytest", *grading_test_files(load_spec(aid)), "-q", "-p", "no:cacheprovider",
            "-p", "checker.standalone", "--hwcheck-submission", path, "--hwcheck-assignment", aid,
            "--hwcheck-mode", "hidden"]


def naive(entries, aid):
    t0 = time.perf_counter()
    for _, e in entries:
        subprocess.run(naive_command(aid, e), cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       check=False)
    return time.perf_counter() - t0


def median_time(cmd, k=3):
    times = []
    for _ in range(k):
        t0 = time.perf_counter()
        subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def per_submission(refs, aid, jobs, out):
    """Steady-state seconds per submission, from the finish times of one batch: start-up left out.

    Returns (seconds per submission, start-up seconds before the first result).
    """
    stamps = []
    timed_batch(refs, aid, jobs, out, stamps)
    # skip the first `jobs` results (each process's first submission) and time the rest
    done = stamps[jobs - 1:]
    return (done[-1] - done[0]) / (len(done) - 1), stamps[0]


def fixed_cost(aid, k=8):
    """Worker start, load, pytest session with collection, scorecard: a grade with every test deselected."""
    from checker.running.runner import Grader
    ref = reference_file(load_spec(aid))
    with Grader(mode="hidden", seed=1, pytest_args=["-k", "not test_"]) as g:
        g.grade(ref, aid)
        t0 = time.perf_counter()
        for _ in range(k):
            g.grade(ref, aid)
        return (time.perf_counter() - t0) / k


def where_time_goes(aid, k=2):
    """Per test, on the reference (after one grade that warms the grader and its reference cache): worker
    round trips (an ask alone, or asks sent together: one each) and their wall time, the trusted side's reference and answer-model time, and the rest
    (pytest's bookkeeping, the tests' own code, comparisons, hints, load and scorecard), as means over k grades."""
    import checker.running.recorded as kit  # Answers: the answer models (checker.running.recorded)
    import checker.running.ref_cache as ref_cache
    from checker.running.runner import Grader
    import checker.running.together as together
    stats = dict(round_trips=0, round_trip_s=0.0, ref_s=0.0, answers_s=0.0, asks_together=0)
    orig_request, orig_cached, orig_getattr = SubmissionHandle.request, ref_cache.cached_call, kit.Answers.__getattr__
    orig_send = together.Together.send

    def send(self):  # asks sent together (checker.running.together): one round trip for all of them
        if self.sent:
            return orig_send(self)
        t0 = time.perf_counter()
        try:
            return orig_send(self)
        finally:
            if self.round_trips:
                stats["round_trips"] += 1
                stats["asks_together"] += sum(1 for p in self.asks if p.call_id is not None)
                stats["round_trip_s"] += time.perf_counter() - t0

    def request(self, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return orig_request(self, *args, **kwargs)
        finally:
            stats["round_trips"] += 1
            stats["round_trip_s"] += time.perf_counter() - t0

    def cached_call(*args, **kwargs):
        t0 = time.perf_counter()
        try:
            return orig_cached(*args, **kwargs)
        finally:
            stats["ref_s"] += time.perf_counter() - t0

    def answers_getattr(self, name):
        fn = orig_getattr(self, name)

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                stats["answers_s"] += time.perf_counter() - t0
        return timed

    ref = reference_file(load_spec(aid))
    SubmissionHandle.request, ref_cache.cached_call, kit.Answers.__getattr__ = request, cached_call, answers_getattr
    together.Together.send = send
    try:
        with Grader(mode="hidden", seed=1) as g:
            g.grade(ref, aid)
            for key in stats:
                stats[key] = 0 * stats[key]
            t0 = time.perf_counter()
            cards = [g.grade(ref, aid) for _ in range(k)]
            total = (time.perf_counter() - t0) / k
            hits, misses = g.ref_cache.hits, g.ref_cache.misses
    finally:
        SubmissionHandle.request, ref_cache.cached_call, kit.Answers.__getattr__ = orig_request, orig_cached, orig_getattr
        together.Together.send = orig_send
    n_tests = sum(1 for q in cards[0]["questions"] for t in q["tests"] if t["outcome"] != "skipped")
    in_tests = sum(t["duration_s"] for q in cards[0]["questions"] for t in q["tests"])
    per = {key: v / k for key, v in stats.items()}
    return {
        "tests": n_tests,
        "grade_s": round(total, 3),
        "round_trips_per_test": round(per["round_trips"] / max(n_tests, 1), 2),
        # asks that went with others in one round trip (sub.together), per test
        "asks_together_per_test": round(per["asks_together"] / max(n_tests, 1), 2),
        "round_trip_ms_per_test": round(1000 * per["round_trip_s"] / max(n_tests, 1), 2),
        "ref_ms_per_test": round(1000 * per["ref_s"] / max(n_tests, 1), 3),
        "answer_models_ms_per_test": round(1000 * per["answers_s"] / max(n_tests, 1), 3),
        # everything else, per test: pytest's bookkeeping and fixtures, the tests' own code and comparisons, and
        # the worker's fork and load, collection and the scorecard spread over the tests
        "other_ms_per_test": round(1000 * (total - per["round_trip_s"] - per["ref_s"] - per["answers_s"])
                                   / max(n_tests, 1), 2),
        "pytest_reported_s_in_tests": round(in_tests, 3),
        "ref_cache_hits_misses": [hits, misses],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=16, help="reference copies per assignment")
    ap.add_argument("--assignments", nargs="+", default=assignment_ids(),
                    help="default: every assignment hwcheck finds")
    ap.add_argument("--naive", type=int, default=6, help="submissions graded the naive way (0: skip)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="hwcheck-bench-")
    results = {"machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]}, "assignments": {}}
    try:
        for aid in a.assignments:
            entries = make_batch(aid, a.n, os.path.join(work, aid, "in"))
            refs = [e for e in entries if e[0].startswith("ref_")]
            r = {"mixed_batch": len(entries)}
            for jobs in (1, 2):  # the whole mixed batch, start-up included
                secs = timed_batch(entries, aid, jobs, os.path.join(work, aid, f"mixed{jobs}"))
                r[f"mixed_j{jobs}_per_min"] = round(60 * len(entries) / secs, 1)
            r["mixed_speedup_j2"] = round(r["mixed_j2_per_min"] / r["mixed_j1_per_min"], 2)
            per1, first1 = per_submission(refs, aid, 1, os.path.join(work, aid, "refs1"))
            per2, _ = per_submission(refs, aid, 2, os.path.join(work, aid, "refs2"))
            r["steady_j1_per_min"] = round(60 / per1, 1)
            r["steady_j2_per_min"] = round(60 / per2, 1)
            r["steady_speedup_j2"] = round(per1 / per2, 2)
            r["batch_startup_s"] = round(first1 - per1, 2)
            cards = []
            for sid, _ in refs:
                with open(os.path.join(work, aid, "refs1", sid + ".json")) as f:
                    cards.append(json.load(f))
            inprocess_call_time(aid)  # once to warm lazy imports (meta kernels), as the zygote does
            calls = inprocess_call_time(aid)
            n_tests = sum(1 for q in cards[0]["questions"] for t in q["tests"] if t["outcome"] != "skipped")
            r["reference_s_per_submission"] = round(per1, 3)
            r["inprocess_call_s"] = round(calls, 3)
            r["overhead_s"] = round(per1 - calls, 3)
            r["fixed_cost_s"] = round(fixed_cost(aid), 3)
            r["tests_run"] = n_tests
            r["harness_ms_per_test"] = round(1000 * (per1 - calls - r["fixed_cost_s"]) / max(n_tests, 1), 2)
            r["slowest_test_on_reference_s"] = max(t["duration_s"] for c in cards for q in c["questions"]
                                                   for t in q["tests"])
            r["reference_score"] = f"{cards[0]['score']}/{cards[0]['max_score']}"
            r["where_time_goes"] = where_time_goes(aid)
            if a.naive:
                sample = refs[: a.naive]
                naive_s = naive(sample, aid)
                ours = timed_batch(sample, aid, 1, os.path.join(work, aid, "naive_ours"))
                r["naive_s_per_submission"] = round(naive_s / len(sample), 2)
                r["ours_s_per_submission_same_batch"] = round(ours / len(sample), 2)
                r["naive_over_ours"] = round(naive_s / ours, 2)
            results["assignments"][aid] = r
            print(aid, json.dumps(r), flush=True)
        correct = next(os.path.join(d, "correct.py") for d in example_dirs("attention")
                       if os.path.isfile(os.path.join(d, "correct.py")))
        t_torch = median_time([sys.executable, "-c", "import torch"], k=5)
        t_check = median_time([sys.executable, "-m", "checker.cli", "check", correct, "-a", "attention"], k=5)
        results["check_vs_import_torch"] = {"import_torch_s": round(t_torch, 2), "check_s": round(t_check, 2),
                                            "ratio": round(t_check / t_torch, 2)}
        print("check", json.dumps(results["check_vs_import_torch"]))
        os.makedirs(os.path.join(ROOT, "bench", "out"), exist_ok=True)
        with open(os.path.join(ROOT, "bench", "out", "results.json"), "w") as f:
            json.dump(results, f, indent=1)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
