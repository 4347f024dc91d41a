"""How long `checker.check()` takes in a real Jupyter kernel: the first time, and again in the same kernel.

What it is for: issue 28's target for a student in a notebook, a warm re-check (`checker.check()` a second
time in the same kernel, after editing a cell) in at most 0.5 s. A real ipykernel (jupyter_client, as
nbclient uses) runs an example submission's code as one cell, then `checker.check()` N times; each
check's wall time is measured from the client (sending the cell to its reply), which is what the student
waits. What it is not: a test (timing belongs here, not in the suite).

Usage: python bench/bench_notebook.py [--assignment attention] [--example correct] [-n 3]
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)


def _run(kc, code, timeout=300):
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    errors = []
    while True:
        msg = kc.get_iopub_msg(timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "error":
            errors.append("\n".join(msg["content"]["traceback"])[-1500:])
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
    return time.perf_counter() - t0, errors


def main():
    from jupyter_client.manager import start_new_kernel

    from checker.spec import example_path

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--assignment", default="attention")
    ap.add_argument("--example", default="correct")
    ap.add_argument("-n", type=int, default=3, help="checks in the same kernel")
    args = ap.parse_args()
    with open(example_path(args.assignment, args.example + ".py"), encoding="utf-8") as f:
        source = f.read().split('\nif __name__ == "__main__":')[0]  # a training run is not the check's time
    km, kc = start_new_kernel(kernel_name="python3", cwd=ROOT)
    try:
        t, err = _run(kc, source)
        assert not err, err
        print(f"the submission's cell: {t:.2f} s")
        for i in range(args.n):
            t, err = _run(kc, f"import checker\n_r = checker.check(assignment={args.assignment!r})\n"
                              "assert type(_r).__name__ == 'NotebookCheck', _r")
            assert not err, err
            print(f"checker.check() #{i + 1}: {t:.2f} s" + ("  (cold: starts the zygote, imports torch)" if i == 0
                                                             else "  (warm: the same kernel again)"))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
