"""Eval mode is deterministic (vit): the same input under another random seed gives the same output.

What it is for: `check_deterministic` and its one-round-trip form (`deterministic_asks`,
`check_deterministic_asked`), shared by the MHSA, blocks and ViT tests, and the hint they give
(`RANDOM_IN_EVAL_HINT`: dropout that ignores `self.training`). What it is not: a test of its own, or a
place that runs student code (every forward goes through the module's handle).
"""

import numpy as np

from checker.errors import GradingFailure
from ._common import changed, forward, forward_asked, plain_output

RANDOM_IN_EVAL_HINT = (
    "the module gives different outputs for the same input in eval mode: dropout that ignores "
    "`self.training` (`F.dropout(x, p)` is on by default; use an nn.Dropout layer built in `__init__` "
    "(`self.drop = nn.Dropout(p)`), or pass `training=self.training`; an nn.Dropout made inside forward "
    "(`nn.Dropout(p)(x)`) is a new layer on every call, always in training mode, which `model.eval()` never "
    "reaches; F.scaled_dot_product_attention(..., dropout_p=p) drops whatever the mode: "
    "pass `dropout_p=p if self.training else 0.0`), or random numbers drawn in forward")


def check_deterministic(m, x, what):
    """Eval mode is deterministic: the same input with a different random seed gives the same output."""
    a = forward(m, [x]).outputs[0]
    b = m.forward([x], seed=1).outputs[0]  # (not `forward`: the error hints are the same)
    a, b = plain_output(a, what), plain_output(b, what)
    if a.shape == b.shape and a.dtype.kind == "f" and changed(a.astype(np.float64), b.astype(np.float64),
                                                              float(np.max(np.abs(a), initial=0.0))):
        raise GradingFailure(f"{what}: {RANDOM_IN_EVAL_HINT}.")


def deterministic_asks(t, made, x):
    """check_deterministic's two forwards of `made` (a _NewAsk of the same batch or a module) asked of `t`."""
    return forward_asked(t, made, [x]), forward_asked(t, made, [x], seed=1, plain=True)


def check_deterministic_asked(m, x, what, asks=None):
    """check_deterministic, its two forwards asked in one round trip (each raising as alone, in the same order), or
    given as `asks` (deterministic_asks, sent with the asks before them)."""
    if asks is None:
        with m.sub.together(chain=True) as t:
            asks = deterministic_asks(t, m, x)
    a = asks[0].get().outputs[0]
    b = asks[1].get().outputs[0]  # (not `forward`: the error hints are the same)
    a, b = plain_output(a, what), plain_output(b, what)
    if a.shape == b.shape and a.dtype.kind == "f" and changed(a.astype(np.float64), b.astype(np.float64),
                                                              float(np.max(np.abs(a), initial=0.0))):
        raise GradingFailure(f"{what}: {RANDOM_IN_EVAL_HINT}.")


__all__ = [n for n in dir() if not n.startswith("__")]
