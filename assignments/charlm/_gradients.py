"""The gradient tests' helpers (trusted side): does the gradient autograd gives agree with how the output moves?

A forward whose values are right can still cut part of itself off from autograd (`.detach()` on the attention
weights, `torch.no_grad()`, `.data`, a numpy round trip): the model answers as it should and does not learn, and
with a fused qkv projection every parameter still gets a gradient (the values' rows), so `grad is not None` cannot
tell. checker.running.modules measures it: autograd's slope of loss = sum(output * W) along random directions of the
parameters (or of the function's arguments), against central finite differences of forwards computed here; these
helpers word what it found.
"""

from checker.errors import StudentError, StudentTimeout, WorkerCrashed
from checker.running.modules import DETACHED_HINT, gradient_failure_text

__all__ = ["DETACHED_HINT", "gradient_failure_text", "StudentError", "StudentTimeout", "WorkerCrashed"]
