"""The gradient tests' helpers (trusted side): does the gradient autograd gives agree with how the output moves?

A forward whose values are right can still cut part of itself off from autograd (`.detach()` on the attention
weights, `torch.no_grad()`, `.data`, a numpy round trip): the model answers as it should and does not learn, and
with a fused qkv projection every parameter still gets a gradient (the values' rows), so `grad is not None` cannot
tell. checker.running.modules measures it: autograd's slope of loss = sum(output * W) along random directions of the
parameters (or of the function's arguments), against central finite differences of forwards computed here; these
helpers word what it found.

A gradient request multiplies the output by a weight of the output's expected shape, on the worker's side: on an
output of another shape ((B, V, T) logits, say) that product, the grader's own operation, is what raises ("The
size of tensor a (9) must match the size of tensor b (2)"). `shape_first` words such a failure as the other tests
word the shape (the output is asked for again, on the failure's path only), never as an error of the student's code.
"""

import functools

from checker.errors import GradingFailure, StudentError, StudentTimeout, WorkerCrashed
from checker.running.modules import DETACHED_HINT, gradient_failure_text

__all__ = ["shape_first", "DETACHED_HINT", "gradient_failure_text", "StudentError", "StudentTimeout", "WorkerCrashed"]


def shape_first(m, judge):
    """`m` (a module handle), its `grads` and `gradient_check` wrapped: where one raises (the student's code raised,
    or the grader's product of the output and the weight did), `judge(output, x)` is given the output of a forward
    on the same input and raises the shape failure where the shape is not the one the weight has; otherwise, and
    where that forward raises too, the first failure stands. Returns `m`."""
    for name in ("grads", "gradient_check"):
        setattr(m, name, functools.partial(_shape_first_call, getattr(m, name), m, judge))
    return m


def _shape_first_call(call, m, judge, x, weight, *args, **kwargs):
    try:
        return call(x, weight, *args, **kwargs)
    except StudentError as e:
        if isinstance(e, (StudentTimeout, WorkerCrashed)):
            raise
        failure = e
    try:
        out = m.forward([x], seed=kwargs.get("seed", 0)).outputs[0]
    except GradingFailure:
        raise failure from None
    judge(out, x)  # raises the shape failure, if any
    raise failure
