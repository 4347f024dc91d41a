"""checker.worker.gpumem: a worker's share of the GPU's memory is its memory budget (torch's allocator).

On the CPU: the cap is arranged for the moment CUDA starts, at the budget's fraction of each GPU, and not at
all without a GPU or without torch (a stand-in torch records what is asked of it). Where CUDA runs: a walled
worker whose budget is 1 GiB gets 128 MiB on the GPU and not 2 GiB (the allocation past it raises in the
student's own code), while the GPU holds far more.
"""
import sys
import textwrap
import types

import pytest

from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from checker.worker import gpumem
from sandbox_helpers import write


def _stand_in_torch(monkeypatch, devices=2, total=(80 << 30, 141 << 30)):
    asked = {"queued": [], "fractions": {}}
    cuda = types.SimpleNamespace(
        _lazy_call=asked["queued"].append,
        device_count=lambda: devices,
        get_device_properties=lambda d: types.SimpleNamespace(total_memory=total[d]),
        set_per_process_memory_fraction=lambda f, d: asked["fractions"].__setitem__(d, f))
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    return asked


def test_the_cap_waits_for_cuda_then_gives_each_gpu_the_budgets_fraction(monkeypatch):
    asked = _stand_in_torch(monkeypatch)
    assert gpumem.cap_gpu_memory(6144, True) == "gpu-memory-6144MiB(torch-allocator)"
    assert asked["fractions"] == {}  # nothing asked of CUDA before it starts
    for call in asked["queued"]:
        call()
    assert asked["fractions"] == {0: (6144 << 20) / (80 << 30), 1: (6144 << 20) / (141 << 30)}


def test_a_budget_larger_than_the_gpu_is_the_whole_gpu(monkeypatch):
    asked = _stand_in_torch(monkeypatch, devices=1, total=(4 << 30,))
    gpumem.cap_gpu_memory(6144, True)
    asked["queued"][0]()
    assert asked["fractions"] == {0: 1.0}


def test_no_gpu_or_no_torch_no_cap(monkeypatch):
    asked = _stand_in_torch(monkeypatch)
    assert gpumem.cap_gpu_memory(6144, False) is None and asked["queued"] == []
    monkeypatch.delitem(sys.modules, "torch")
    assert gpumem.cap_gpu_memory(6144, True) is None


GREEDY = textwrap.dedent('''\
    import torch

    def on_gpu(mb):
        x = torch.empty(mb << 20, dtype=torch.uint8, device="cuda")
        x.fill_(1)
        return int(x.numel() >> 20)
    ''')


def test_a_worker_gets_its_budget_on_the_gpu_and_no_more(tmp_path):
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("no CUDA here: the cap is arranged but never applied (the tests above check what it asks)")
    if torch.cuda.get_device_properties(0).total_memory < (8 << 30):
        pytest.skip("a GPU with less than 8 GiB: 2 GiB past a 1 GiB budget cannot be told from the GPU's own limit")
    with Zygote() as z:
        h = SubmissionHandle(str(write(tmp_path, "greedy.py", GREEDY)), z,
                             Limits(call_s=60, cell_s=60, submission_s=120, memory_mb=1024))
        try:
            assert h.load()["ok"]
            assert "gpu-memory-1024MiB(torch-allocator)" in h.isolation, h.isolation
            assert h.call("on_gpu", 128) == 128
            with pytest.raises(Exception) as e:
                h.call("on_gpu", 2048)
            assert "out of memory" in str(e.value).lower(), e.value
        finally:
            h.close()
