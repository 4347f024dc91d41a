"""Benchmark: the same batch at `-j 2` and on `--cluster local:2` (and `local:1`), the Dask overhead per
submission, and how throughput grows with workers.

What it is for: the figures in the README's "Grading on a cluster" section. Each run is the real command
(`python -m checker.cli grade`) on a copy of the assignment's examples/ (public tests, one seed), timed
from the outside; the times of the scorecards' landing (their mtimes) split a run into start-up (first
scorecard) and steady state (first to last). Per-submission overhead of the cluster = steady seconds per
submission on local:2 minus on -j 2. Throughput model: with n workers, t the seconds one grader needs per
submission and c the client's serial seconds per submission (unpacking a result, writing its files and the
gradebook), rate(n) = min(n / t, 1 / c, cores / t); measured at n = 1 and 2 here.

Usage: python bench/bench_cluster.py [--assignment attention] [--copies 1]
Not for: the local pool's own benchmark (bench/bench.py).
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
from checker.spec import example_dirs  # noqa: E402


def _run(subs, out, *extra):
    t0 = time.time()
    r = subprocess.run([sys.executable, "-m", "checker.cli", "grade", subs, "-a", ARGS.assignment, "-o", out,
                        "--public", "--seed", "4242", *extra], capture_output=True, text=True, cwd=ROOT)
    wall = time.time() - t0
    if r.returncode not in (0, 1):
        raise SystemExit(r.stderr[-2000:])
    cards = [os.path.join(out, n) for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")
             and n != "shard.json"]
    landed = sorted(os.stat(p).st_mtime for p in cards)
    scores = {}
    for p in cards:
        with open(p) as f:
            c = json.load(f)
        if isinstance(c, dict) and "score" in c:
            scores[c["submission"]["id"]] = c["score"]
    n = len(landed)
    steady = (landed[-1] - landed[0]) / (n - 1) if n > 1 else float("nan")
    return {"wall_s": round(wall, 1), "first_scorecard_s": round(landed[0] - t0, 1),
            "steady_s_per_submission": round(steady, 2), "submissions": n, "scores": scores}


def main():
    work = tempfile.mkdtemp(prefix="hwcheck-bench-cluster-")
    subs = os.path.join(work, "subs")
    os.makedirs(subs)
    src = example_dirs(ARGS.assignment)[0]
    for k in range(ARGS.copies):
        for name in sorted(os.listdir(src)):
            if name.endswith((".py", ".ipynb")) or os.path.isdir(os.path.join(src, name)):
                stem, ext = os.path.splitext(name) if not os.path.isdir(os.path.join(src, name)) else (name, "")
                dst = os.path.join(subs, f"{stem}_{k}{ext}")
                (shutil.copytree if os.path.isdir(os.path.join(src, name)) else shutil.copy)(
                    os.path.join(src, name), dst)
    results = {}
    for label, extra in (("-j 2", ["-j", "2"]), ("--cluster local:2", ["--cluster", "local:2"]),
                         ("--cluster local:1", ["--cluster", "local:1"])):
        results[label] = _run(subs, os.path.join(work, label.replace(" ", "_").replace(":", "")), *extra)
        print(label, {k: v for k, v in results[label].items() if k != "scores"}, flush=True)
    same = results["-j 2"]["scores"] == results["--cluster local:2"]["scores"]
    j2, c2, c1 = (results[k]["steady_s_per_submission"] for k in ("-j 2", "--cluster local:2", "--cluster local:1"))
    print(f"same scores on -j 2 and local:2: {same}")
    print(f"cluster overhead per submission (steady, 2 workers): {c2 - j2:+.2f} s "
          f"({(c2 - j2) * 2:+.2f} s of one worker's time)")
    print(f"throughput: local:1 {60 / c1:.1f}/min, local:2 {60 / c2:.1f}/min (x{c1 / c2:.2f}); "
          f"cores here: {os.cpu_count()}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--assignment", default="attention")
    p.add_argument("--copies", type=int, default=1)
    ARGS = p.parse_args()
    main()
