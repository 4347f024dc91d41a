"""Whether CUDA starts inside the worker's walls, asked once per grader of a worker that runs no student code.

What it is for: the trusted side sees a GPU (`torch.cuda.is_available()`), but the code it grades runs in
a worker behind walls (namespaces, a uid of its own, Landlock, seccomp) that a driver may not start
under: on a real H200 the CUDA driver's `cuInit` failed with error 304 until the worker could write its
threads' names under /proc (see `checker.worker.isolation`). A wall that breaks CUDA would charge every
student for every CUDA test. `cuda_in_walls(zygote)` loads hwcheck's own two-line module (no student
code) in a worker with the same walls and has it put a tensor on the GPU and read it back: None when
that works, else the reason, which the grader shows as the reason its CUDA items were skipped (worth 0,
as on a machine without a GPU) and as a missing wall in the batch's summary.

What it is not: a test of the student's code on the GPU (the CUDA variants of the tests are), nor run
where the trusted side sees no GPU (nothing to ask then).
"""

import os
import shutil
import tempfile

from checker.running.sandbox import Limits, SubmissionHandle

__all__ = ["cuda_in_walls", "PROBE_SOURCE"]

PROBE_SOURCE = '''\
def cuda_probe():
    import torch
    return float((torch.arange(4.0, device="cuda") * 2).sum().cpu())
'''


def cuda_in_walls(zygote, secrets=(), limit_s=60.0):
    """None when a walled worker running no student code computes on the GPU; else why not (a sentence)."""
    folder = tempfile.mkdtemp(prefix="hwcheck-cuda-probe-")
    try:
        os.chmod(folder, 0o755)
        path = os.path.join(folder, "hwcheck_cuda_probe.py")
        with open(path, "w") as f:
            f.write(PROBE_SOURCE)
        os.chmod(path, 0o644)
        handle = SubmissionHandle(path, zygote, Limits(call_s=limit_s, submission_s=limit_s, cell_s=limit_s),
                                  secrets=list(secrets), sub_id="hwcheck-cuda-probe")
        try:
            report = handle.load()
            if not report.get("ok"):
                return "a worker could not be started: " + "; ".join(report.get("messages") or ["no reason given"])
            try:
                got = handle.call("cuda_probe")
            except Exception as e:  # noqa: BLE001 - the worker's failure, whatever it is, is the reason
                return str(e)[:400]
            return None if got == 12.0 else f"the GPU computed {got!r} for 12.0"
        finally:
            handle.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)
