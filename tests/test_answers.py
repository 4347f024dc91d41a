"""checker.running.answers: what a worker's error answer means in a student's words (pure: no worker runs)."""

from checker.errors import MissingName
from checker.running.answers import failure_from


def _failure(etype, message):
    return failure_from({"type": etype, "message": message, "bases": [etype, "Exception"],
                         "where": {"file": "hw.py", "line": 10, "code": "mask = causal_mask(T).cuda()"}},
                        "masked_attention(...)", 1024, MissingName)


def test_a_tensor_sent_to_the_gpu_by_the_code_on_a_grader_without_one_is_named():
    """`.cuda()` on a machine without a GPU raises torch's "not compiled with CUDA" (or no driver, no GPU) words,
    which do not say that the code chose the device itself: the note says so and what to write instead."""
    for words in ("Torch not compiled with CUDA enabled", "Found no NVIDIA driver on your system.",
                  "No CUDA GPUs are available"):
        failure = _failure("AssertionError" if "compiled" in words else "RuntimeError", words)
        assert failure.message.startswith("masked_attention(...) raised ")
        assert "moved a tensor to the GPU itself (`.cuda()`" in failure.message, failure.message
        assert "`.to(x.device)`" in failure.message


def test_other_errors_get_no_gpu_note():
    failure = _failure("RuntimeError", "Expected all tensors to be on the same device, but found cpu and cuda:0")
    assert "GPU itself" not in failure.message
