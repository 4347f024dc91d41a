"""What the worker's walls cost: `python bench/bench_walls.py [-n 30]`.

What it is for: timing one worker's life (fork, walls, load of a correct
attention submission, one call, close) with every wall (namespaces, new root,
nobody, memory cap, Landlock) against the same with HWCHECK_NAMESPACES=0
(resource limits, memory cap, Landlock and seccomp only), alternating the two
so the machine's drift hits both alike. The difference is what the namespaces
and the new root add to every worker, and so to every restart after a crash
or a timeout.

What it is not: a test; it asserts nothing.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

CHILD = r'''
import sys, time
import numpy as np
sys.path.insert(0, sys.argv[3])
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
times = []
with Zygote() as z:
    for i in range(int(sys.argv[2]) + 2):
        t = time.perf_counter()
        h = SubmissionHandle(sys.argv[1], z, Limits())
        h.load()
        h.call("get_scores", np.eye(3), np.ones(3))
        h.close()
        times.append(time.perf_counter() - t)
print(" ".join(f"{x:.5f}" for x in times[2:]))  # the first two warm the zygote
'''


def one_round(path, n, namespaces):
    env = {**os.environ, "HWCHECK_NAMESPACES": "1" if namespaces else "0"}
    done = subprocess.run([sys.executable, "-c", CHILD, path, str(n), ROOT], capture_output=True, text=True,
                          env=env, timeout=600)
    if done.returncode != 0:  # e.g. the fallback as root where no unprivileged uid can reach this Python
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(f"  {'all walls' if namespaces else 'without namespaces'}: no worker ran ({last[:300]})")
        return []
    return [float(x) for x in done.stdout.split()]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=30, help="workers per round")
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "correct.py")
        from checker.spec import example_path
        with open(example_path("attention", "correct.py")) as f, open(path, "w") as g:
            g.write(f.read())
        walls, fallback = [], []
        for _ in range(args.rounds):
            walls += one_round(path, args.n, True)
            fallback += one_round(path, args.n, False)
    print(f"worker life (fork, walls, load, one call, close), median of {len(walls)}:")
    a = statistics.median(walls) if walls else None
    b = statistics.median(fallback) if fallback else None
    if a is not None:
        print(f"  all walls (namespaces, new root, a uid of its own, disk and task caps): {a * 1000:.1f} ms")
    if b is not None:
        print(f"  without namespaces (HWCHECK_NAMESPACES=0): {b * 1000:.1f} ms")
    if a is not None and b is not None:
        print(f"  the namespaces and the new root add: {(a - b) * 1000:.1f} ms per worker")


if __name__ == "__main__":
    main()
