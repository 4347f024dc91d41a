"""A worker's share of the GPU's memory: its memory budget, through torch's CUDA allocator.

What it is for: workers graded side by side (`-j 8` on one GPU) share the GPU's memory, which no cgroup or
rlimit counts. A submission that allocates most of it (a batch far too large, a cache that never frees) would
make the CUDA items of the submissions beside it fail with "CUDA out of memory", charging students for a
neighbour. `cap_gpu_memory(memory_mb)` asks torch, for the moment CUDA starts in this worker
(`torch.cuda._lazy_call`: the worker never starts CUDA before student code asks for it), to let its caching
allocator hold at most the worker's memory budget on each GPU (`set_per_process_memory_fraction`). Past it,
the student's own allocation raises torch's OutOfMemoryError in their traceback, and the neighbours' budgets
stay free. Named `gpu-memory-<N>MiB(torch-allocator)` in `grader.isolation`.

What it is not: a wall against hostile code. Code that sets the fraction again, or allocates through the
CUDA driver itself (ctypes), is not stopped; MIG or MPS limits are the way to split a GPU against that. The
CUDA context's own memory (a few hundred MiB per process) is outside the allocator and not counted.
"""

import sys

__all__ = ["cap_gpu_memory"]


def cap_gpu_memory(memory_mb, gpu_present):
    """Arrange the cap (see the module's doc); the wall's name, or None where there is no GPU or no torch."""
    torch = sys.modules.get("torch")  # imported by the zygote when the assignment needs it; never imported here
    if not gpu_present or not memory_mb or torch is None or not hasattr(torch.cuda, "_lazy_call"):
        return None
    budget = int(memory_mb) << 20

    def cap():
        for device in range(torch.cuda.device_count()):
            total = torch.cuda.get_device_properties(device).total_memory
            torch.cuda.set_per_process_memory_fraction(min(1.0, budget / total), device)
    torch.cuda._lazy_call(cap)
    return f"gpu-memory-{int(memory_mb)}MiB(torch-allocator)"
