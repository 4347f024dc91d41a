"""Tests of checker/judging/portability.py: a student's torch code run on the meta device, in a real worker.

The submission below defines one module or function per way of handling devices; each test builds it
in a real worker and asks whether it would run on another device. No GPU is needed, which is the point.
"""
import textwrap

import pytest

from checker.errors import GradingFailure, StudentError
from checker.judging.portability import MOVE_HINT, NOT_CHECKED, check_call_on_another_device, check_runs_on_another_device, meta_only
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from sandbox_helpers import write

SUB = textwrap.dedent('''\
    import torch
    import torch.nn as nn


    class Good(nn.Module):
        def __init__(self, d):
            super().__init__()
            self.lin = nn.Linear(d, d)
            self.register_buffer("mask", torch.ones(d, dtype=torch.bool))

        def forward(self, x):
            return self.lin(x).masked_fill(~self.mask, 0.0) + torch.zeros(x.shape, device=x.device)


    class ZerosOnCpu(Good):
        def forward(self, x):
            return self.lin(x) + torch.zeros(x.shape)


    class PlainAttribute(Good):
        def __init__(self, d):
            super().__init__(d)
            self.plain = torch.ones(d, dtype=torch.bool)

        def forward(self, x):
            return self.lin(x).masked_fill(~self.plain, 0.0)


    class BackToCpu(Good):
        def forward(self, x):
            return self.lin(x).cpu()


    class CpuRoundTrip(Good):
        def forward(self, x):
            buf = torch.empty(x.shape)
            buf.copy_(x)  # through a CPU buffer (a numpy step, a logging copy) and back: legal on a GPU
            h = torch.from_numpy(x.detach().cpu().numpy() * 0 + buf.numpy()).to(x.device)
            return self.lin(h.to(x.device))


    class CpuNotBack(Good):
        def forward(self, x):
            return self.lin(x.cpu())  # the CPU copy meets the weights, which are on the GPU


    class FreshOutput(Good):
        def forward(self, x):
            return torch.zeros(x.shape)  # never meets a tensor on x's device


    class ReturnsNothing(Good):
        def forward(self, x):
            self.lin(x)


    class SquareOnly(Good):
        def __init__(self, d):
            super().__init__(d)
            self.pos = nn.Parameter(torch.zeros(d, d))  # sized for T == d only: a shape bug, on any device

        def forward(self, x):
            return self.lin(x) + self.pos


    class LooksAtValues(Good):
        def forward(self, x):
            if x.abs().max().item() > 1e6:
                x = x / 1e6
            return self.lin(x)


    class LooksAtValuesOnCpu(Good):
        def forward(self, x):
            assert not torch.isnan(x).any().item()
            return self.lin(x) + torch.zeros(x.shape[-1])

    class NeedsRealValues(Good):
        def forward(self, x):
            assert x.abs().max().item() > 0, "an all-zero input"  # a stand-in 0 fails this
            return self.lin(x)

    class HidesOnMeta(ZerosOnCpu):
        def forward(self, x):
            if x.is_meta:  # an attacker's: an empty answer of the right shape where the grader stands in for a GPU
                return torch.empty_like(x)
            return super().forward(x)


    class ExcusesItselfOffTheCpu(ZerosOnCpu):
        def forward(self, x):
            if x.device.type != "cpu":  # the meta device's limit, in its words, raised by the code itself
                raise RuntimeError("Tensor.item() cannot be called on meta tensors")
            return super().forward(x)


    def masked_hidden(q, k):
        if str(q.device) == "meta":
            return torch.empty(q.shape[:-1] + (k.shape[-2],), device=q.device)
        return masked(q, k)


    class Positions(nn.Module):
        def __init__(self, d, follow_input):
            super().__init__()
            self.tok, self.pos, self.follow = nn.Embedding(5, d), nn.Embedding(8, d), follow_input

        def forward(self, idx):
            T = idx.shape[1]
            return self.tok(idx) + self.pos(torch.arange(T, device=idx.device) if self.follow else torch.arange(T))


    def masked(q, k):
        scores = q @ k.transpose(-2, -1)
        return scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))


    def masked_moved(q, k):
        scores = q @ k.transpose(-2, -1)
        return scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool).triu(1).to(q.device), 0.0)


    def masked_square_only(q, k):
        scores = q @ k.transpose(-2, -1)
        return scores.masked_fill(torch.ones(q.shape[1], q.shape[1], dtype=torch.bool).triu(1), 0.0)
''')


@pytest.fixture(scope="module")
def sub(tmp_path_factory):
    path = write(tmp_path_factory.mktemp("portability"), "devices.py", SUB)
    with Zygote() as z:
        h = SubmissionHandle(path, z, Limits(call_s=20, cell_s=20, submission_s=120))
        assert h.load()["ok"]
        yield h
        h.close()


def test_a_module_that_follows_its_input_runs_on_another_device(sub):
    assert check_runs_on_another_device(sub.new("Good", 4), (2, 3, 4), "Good(4)") == [2, 3, 4]


@pytest.mark.parametrize("cls", ["ZerosOnCpu", "PlainAttribute"])
def test_a_tensor_left_on_the_cpu_fails_with_the_reason(sub, cls):
    with pytest.raises(StudentError) as info:
        check_runs_on_another_device(sub.new(cls, 4), (2, 3, 4), f"{cls}(4)")
    text = info.value.message
    assert "is not on the expected device" in text and f"The grader moved {cls}(4)" in text
    assert MOVE_HINT in text and info.value.where["line"]  # where in the student's file it happened


def test_embedding_indices_left_on_the_cpu_fail_as_on_cuda(sub):
    # the meta device alone accepts CPU indices into a meta nn.Embedding; CUDA does not
    assert check_runs_on_another_device(sub.new("Positions", 4, True), (2, 6), "P", vocab=5) == [2, 6, 4]
    with pytest.raises(StudentError) as info:
        check_runs_on_another_device(sub.new("Positions", 4, False), (2, 6), "P", vocab=5)
    assert "found the indices on cpu and the embedding weight on meta" in info.value.message
    assert MOVE_HINT in info.value.message and info.value.where["line"]


def test_an_output_copied_to_the_cpu_is_named(sub):
    with pytest.raises(StudentError, match=r"copies a tensor to the CPU \(`\.cpu\(\)`"):
        check_runs_on_another_device(sub.new("BackToCpu", 4), (2, 3, 4), "BackToCpu(4)")


def test_an_output_made_on_the_cpu_is_caught_even_without_an_error(sub):
    with pytest.raises(GradingFailure, match="returned its result on cpu") as info:
        check_runs_on_another_device(sub.new("FreshOutput", 4), (2, 3, 4), "FreshOutput(4)")
    assert not isinstance(info.value, StudentError) and MOVE_HINT in info.value.message


def test_a_forward_that_fails_on_the_cpu_too_is_not_charged_again_as_a_device_bug(sub):
    # a forward that returns nothing, or a shape bug, fails on the CPU as well: the other tests charge it;
    # the device test is skipped with that reason (no device hint, no second charge)
    why = check_runs_on_another_device(sub.new("ReturnsNothing", 4), (2, 3, 4), "ReturnsNothing(4)")
    assert isinstance(why, str) and "ReturnsNothing(4) fails on the CPU already" in why
    assert "returned None" in why and MOVE_HINT not in why
    why = check_runs_on_another_device(sub.new("SquareOnly", 4), (2, 3, 4), "SquareOnly(4)")
    assert isinstance(why, str) and "fails on the CPU already" in why and "SquareOnly" in why
    why = check_call_on_another_device(sub, "masked_square_only", [(2, 5, 4), (2, 6, 4)], "masked_square_only")
    assert isinstance(why, str) and "fails on the CPU already" in why


def test_looking_at_values_is_not_held_against_the_student(sub):
    # .item() cannot run on the meta device; on a GPU it is legal: it is run again with stand-in values
    assert check_runs_on_another_device(sub.new("LooksAtValues", 4), (2, 3, 4), "LooksAtValues(4)") == [2, 3, 4]
    # code that cannot run even then is not checked (the test skips with NOT_CHECKED), not failed
    assert check_runs_on_another_device(sub.new("NeedsRealValues", 4), (2, 3, 4), "NeedsRealValues(4)") == NOT_CHECKED


def test_looking_at_values_does_not_hide_a_tensor_left_on_the_cpu(sub):
    with pytest.raises(StudentError) as info:
        check_runs_on_another_device(sub.new("LooksAtValuesOnCpu", 4), (2, 3, 4), "LooksAtValuesOnCpu(4)")
    assert "with stand-in values for what the code read from tensors" in info.value.message
    assert MOVE_HINT in info.value.message


def test_functions_are_called_with_tensors_on_another_device(sub):
    assert check_call_on_another_device(sub, "masked_moved", [(2, 5, 4), (2, 5, 4)], "masked_moved") == [2, 5, 5]
    with pytest.raises(StudentError, match="moved with `.to"):
        check_call_on_another_device(sub, "masked", [(2, 5, 4), (2, 5, 4)], "masked(q, k)")


def test_meta_only_reads_the_students_exception_not_the_callers_words():
    assert meta_only("Net.forward raised RuntimeError: Tensor.item() cannot be called on meta tensors")
    assert not meta_only("Net on meta tensors raised RuntimeError: Tensor on device cpu is not on the expected "
                         "device meta!")


def test_a_copy_through_the_cpu_and_back_runs_on_another_device(sub):
    # the meta device cannot copy out (`Cannot copy out of meta tensor`); a GPU can: the copies are given
    # stand-in values, and the module passes because what it copied comes back to the input's device
    assert check_runs_on_another_device(sub.new("CpuRoundTrip", 4), (2, 3, 4), "CpuRoundTrip(4)") == [2, 3, 4]
    with pytest.raises(StudentError) as info:
        check_runs_on_another_device(sub.new("CpuNotBack", 4), (2, 3, 4), "CpuNotBack(4)")
    assert "does not bring it back to the input's device" in info.value.message


def test_code_that_looks_for_the_meta_device_is_not_judged_by_its_run_there(sub):
    """The meta device stands in for a GPU; code that tells it apart (`x.is_meta`, a "meta" device string,
    read on the trusted side from the source of all it reaches) could answer there what it would not on a
    GPU: the check fails, naming it, whatever the run would have given."""
    for make, what in ((lambda: check_runs_on_another_device(sub.new("HidesOnMeta", 4), (2, 3, 4), "H(4)"), "x.is_meta"),
                       (lambda: check_call_on_another_device(sub, "masked_hidden", [(2, 5, 4), (2, 5, 4)], "m"), "'meta'")):
        with pytest.raises(GradingFailure, match="looks for PyTorch's `meta` device") as info:
            make()
        assert what in info.value.message and not isinstance(info.value, StudentError)
    # code that names no meta device is run there as before
    assert check_call_on_another_device(sub, "masked_moved", [(2, 5, 4), (2, 5, 4)], "masked_moved") == [2, 5, 5]


def test_the_meta_devices_limit_in_the_codes_own_raise_is_not_an_excuse(sub):
    """An error in the words of the meta device's limits ("cannot be called on meta tensors") excuses a
    device test only when torch raised it: raised by the code itself (off the CPU), it fails the test."""
    with pytest.raises(StudentError, match="cannot be called on meta tensors") as info:
        check_runs_on_another_device(sub.new("ExcusesItselfOffTheCpu", 4), (2, 3, 4), "E(4)")
    assert "raise RuntimeError" in info.value.message


def test_a_file_that_never_spells_meta_is_not_read_again_and_one_that_may_is(tmp_path):
    """The source scan for the meta device (~10-20 ms a grade) is skipped for a one-file submission whose bytes
    never spell "meta" (a notebook's "metadata" aside); bytes that Python may read as other letters (escapes,
    non-ASCII, a coding line) go to the scan, which reads the source as Python does."""
    from checker.running.meta_scan import _no_meta_in
    cases = {"plain.py": ("def f(x):\n    return x * 2\n", True),
             "looks.py": ("def f(x):\n    return x.is_meta\n", False),
             "escaped.py": ("def f(x):\n    return x.device.type == '\\x6deta'\n", False),
             "wide.py": ("def f(x):\n    return x.is_\uff4deta\n", False),
             "coded.py": ("# -*- coding: utf-8 -*-\ndef f(x):\n    return x\n", False)}
    for name, (text, quick) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
        assert _no_meta_in(str(tmp_path / name)) is quick, name
    assert _no_meta_in(str(tmp_path)) is False  # a folder: the scan reads it
