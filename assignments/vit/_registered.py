"""Weights a module keeps as buffers (trusted side): what test_mhsa_parameter_count names when a module has fewer
registered parameter values than its projections need and the missing weights are buffers.

What it is for: `self.register_buffer("W_v", torch.randn(D, D))` keeps a weight in the module's state (it follows
`.to(device)` and is saved), but it is no parameter: `.parameters()` and the optimizer never see it, so it keeps
its random start. Such a module is short of parameter values exactly as one without an output projection is; the
buffers' names and shapes (read in the worker: `.to()` lists the buffers, `attr_shape` a top-level one's shape)
tell the two apart, whatever the layout. A buffer is counted as a weight where its shape is known and holds at
least D * D/num_heads values (one head's projection): a causal mask of another size, a scalar scale or a norm's
running statistics is not one.

What it is not: a test (test_vit_mhsa.py has it), or code that runs student code other than through the handle.
"""

import math

from checker.errors import GradingFailure

BUFFER_WEIGHTS_HINT = ("a weight registered as a buffer (`self.register_buffer(...)`), not as a parameter: "
                       "`.parameters()` and the optimizer never see it, so it keeps its random start and is never "
                       "trained (a frozen weight). Make every projection a parameter: `nn.Parameter(...)`, or an "
                       "nn.Linear")


def weights_in_buffers(m, D, h):
    """[(name, shape)] of the buffers of module handle `m` that hold a weight's worth of values (see above), in the
    order the module lists them; [] where the module has none, or its buffers cannot be read."""
    try:
        moved = m.to("cpu")
    except GradingFailure:
        return []
    buffers = moved.get("buffers", []) if isinstance(moved, dict) else []
    names = [b.get("name") for b in buffers if isinstance(b, dict) and isinstance(b.get("name"), str)]
    found = []
    for name in names:
        try:
            got = m.attr_shape(name)
        except GradingFailure:
            continue
        shape = got.get("shape") if isinstance(got, dict) else None
        if not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape):
            continue
        dh = max(D // max(h, 1), 1)
        if math.prod(shape) >= D * dh and (D in shape or dh in shape):
            found.append((name, tuple(shape)))
    return found


def buffer_weights_text(found):
    """`W_v` (3, 12, 4), ... for the failure message."""
    return ", ".join(f"`{n}` {s}" for n, s in found[:6]) + (" ..." if len(found) > 6 else "")
