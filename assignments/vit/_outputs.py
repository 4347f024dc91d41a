"""A module's output as the tests read it (trusted side): one array of the expected shape, or a failure that names
what came back instead. _common.py imports these (this module imports nothing of the assignment's).

  * `plain_output`: a forward that returns several tensors, `(output, weights)` as nn.MultiheadAttention does, is
    told to return only its output, also where the tensors have the same shape (2 tokens of width 2: the weights
    (B, N, N) and the output (B, N, D)), which the comparison's conversion would otherwise stack into one array of
    an odd shape ("expected shape (2, 6, 6), got (2, 2, 6, 6)");
  * `check_shape`: that array, of the expected shape and finite;
  * `shape_before_gradients`: a gradient request (loss = sum(output * W), W of the output's expected shape) that
    raised: where the output has another shape, the product is the grader's operation that failed, not the
    student's code, so the shape is what is said, in the words of the other tests.
"""

import numpy as np

from checker.errors import GradingFailure, StudentError, StudentTimeout, WorkerCrashed
from checker.judging.compare import as_plain_array

__all__ = ["plain_output", "check_shape", "shape_before_gradients"]


def plain_output(value, what):
    """`value` (one forward's output) as a plain array, or a GradingFailure: several arrays returned where one
    is expected are named as such whatever their shapes."""
    if isinstance(value, (tuple, list)) and 1 < len(value) <= 4 and all(isinstance(v, np.ndarray) for v in value) \
            and len({v.shape for v in value}) == 1 and value[0].ndim >= 2:
        shapes = " and ".join(str(tuple(int(n) for n in v.shape)) for v in value)
        raise GradingFailure(
            f"{what} returned a {type(value).__name__} of {len(value)} arrays (shapes {shapes}), not one array: "
            "return only the result (nn.MultiheadAttention, for one, returns (output, weights): take its [0])")
    return as_plain_array(value, what)


def check_shape(value, shape, what):
    """The answer as a plain array, after checking its shape and that it is finite."""
    arr = plain_output(value, what)
    if tuple(arr.shape) != tuple(shape):
        raise GradingFailure(f"{what}: expected shape {tuple(shape)}, got {tuple(arr.shape)}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise GradingFailure(f"{what}: contains NaN or Inf")
    return arr.astype(np.float64)


def shape_before_gradients(failure, m, x, shape, what):
    """Raise what to say of `failure`, raised by a gradient request of module `m` on input `x` whose loss
    multiplies the output by a weight of the expected `shape`: the shape failure (`what` output: expected shape
    ..., got ...) where a forward on `x` answers another shape, else `failure` itself (a forward that raises,
    a timeout or a crash included)."""
    if not isinstance(failure, StudentError) or isinstance(failure, (StudentTimeout, WorkerCrashed)):
        raise failure
    try:
        out = m.forward([x]).outputs[0]
    except GradingFailure:
        raise failure from None
    try:
        check_shape(out, shape, f"{what} output")
    except GradingFailure as shaped:
        if "expected shape" in shaped.message or "not one array" in shaped.message:
            raise shaped from None
    raise failure
