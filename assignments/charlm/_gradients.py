"""The gradient tests' helpers (trusted side): does the gradient autograd gives agree with how the output moves?

A forward whose values are right can still cut part of itself off from autograd (`.detach()` on the attention
weights, `torch.no_grad()`, `.data`, a numpy round trip): the model answers as it should and does not learn, and
with a fused qkv projection every parameter still gets a gradient (the values' rows), so `grad is not None` cannot
tell. checker.running.modules measures it: autograd's slope of loss = sum(output * W) along random directions of the
parameters (or of the function's arguments), against central finite differences of forwards computed here; these
helpers word what it found.
"""

import pytest

from checker.errors import GradingFailure, StudentError, StudentTimeout, WorkerCrashed

__all__ = ["DETACHED_HINT", "gradient_failure_text", "StudentError", "StudentTimeout", "WorkerCrashed"]

DETACHED_HINT = ("part of the computation is cut off from autograd: a `.detach()` (for instance on the attention "
                 "weights after the softmax), a `torch.no_grad()` block or decorator, `.data`, a numpy round trip "
                 "or `.item()` inside it; compute what it returns from tensors that keep their graph (an "
                 "nn.Embedding built with padding_idx gives its row no gradient, although the model reads it)")


def _num(v):
    return f"{v:.4g}"


def gradient_failure_text(check, what, kind="parameters", output="logits", grad_of=lambda n: f"`{n}`.grad"):
    """The failure message of a GradientCheck that does not agree (None where it agrees)."""
    if check.no_graph:
        nones = (", ".join(grad_of(n) for n in check.parts) + " stay None" if check.parts
                 else "every parameter's .grad stays None")
        return (f"{what}: the {output} do not require grad, so backward reaches none of the {kind} ({nones}) "
                f"although the {output} depend on them: nothing can be trained through it."
                f"\nLikely mistake: {DETACHED_HINT}.")
    if check.agrees():
        return None
    flat = check.flat_parts()
    if flat:
        pytest.skip(f"the gradient check could not be made: {what} gives the same {output} for small steps of "
                    f"{', '.join(flat[:4])}{' ...' if len(flat) > 4 else ''} while autograd gives them a slope, as a "
                    "forward that rounds to a low precision inside (a bfloat16 or float16 cast) does")
    wrong = check.disagreeing()
    if wrong:
        listed = "; ".join(
            f"{'`' + n + '`' if kind == 'parameters' else n}"
            f"{' (' + grad_of(n) + ' is None)' if not check.parts[n]['has_grad'] else ''}: "
            f"the {output} move at {', '.join(_num(c) for c in moved)}, autograd says {', '.join(_num(a) for a in ad)}"
            for n, ad, moved in wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
    else:
        listed = "all of them moved at once (no one alone shows it)"
    return (f"{what}: the gradient autograd gives does not match the finite differences of the {output}. With loss = "
            f"sum({output} * W) for a fixed random W, moving these {kind} a small step along random directions "
            f"changes the loss at one rate, while their gradients give another (per direction): {listed}. "
            + (f"Training follows the gradient, so these {kind} would be updated wrongly or not at all." if kind != "inputs"
               else "A model that calls it trains the projections that make these inputs wrongly or not at all.")
            + f"\nLikely mistake: {DETACHED_HINT}.")
