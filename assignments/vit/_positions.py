"""Positions multiplied into the tokens (trusted side): what test_vit_attention_branch_reads_a_normalized_input
(test_vit_blocks.py) names before it blames the attention branch.

What it is for: that test adds a constant to each patch token through the rows of `positional_embedding`; in a
model that adds its positions (`z = tokens + pos`) a LayerNorm removes such a constant, but in one that multiplies
them (`z = tokens * pos`) the constant scales the tokens, and the logits move although every branch reads LN(Z).
Layout-free, through the parameter the handout names: with `positional_embedding` set to zero, the handout's
model still sees the image (z = [class, patches] + 0), while one that multiplies gets z = 0 for every image, so
two different images give the same logits. The model's own values are put back afterwards.

What it is not: a test of its own, or code that runs student code other than through the handle.
"""

import numpy as np
import torch

from checker.errors import GradingFailure
from ._common import _positional_param, _same_rows, check_shape, explained, forward, randn, with_params_forward

POSITIONS_MULTIPLIED_HINT = ("the positional embedding is multiplied into the tokens (`z = z * "
                             "self.positional_embedding`), not added: a product scales each token's features by its "
                             "position's, so positions set to zero wipe out the image, and a constant through them "
                             "changes what the blocks' LayerNorms see. The handout adds it: `z = torch.cat([cls, x], "
                             "dim=1) + self.positional_embedding`")


def positions_multiplied(m, rng, img, N, D, out):
    """True where model handle `m` gives two random images different logits with its own positional embedding and
    the same logits with it set to zero (see above); False where it does not, or it cannot be told (no such
    parameter, a forward that fails)."""
    key, shape, _ = _positional_param(m, N, D)
    if key is None:
        return False
    try:
        with explained():
            kept = m.get_params([key])
        if not isinstance(kept, dict) or key not in kept:
            return False
        kind = np.asarray(kept[key]).dtype  # a model built in float64 runs on float64 images
        x = randn(rng, (2, *img), "float64" if kind == np.float64 else "float32")
        base = check_shape(forward(m, [x]).outputs[0], (2, out), "output")
        if _same_rows(base):
            return False  # the logits do not depend on the image at all: judged elsewhere
        zeroed = with_params_forward(m, {key: torch.zeros(shape, dtype=x.dtype)}, [x],
                                     {key: torch.from_numpy(np.ascontiguousarray(kept[key], dtype=kind))},
                                     lambda r: check_shape(r.outputs[0], (2, out), "output"))
    except GradingFailure:
        return False
    return _same_rows(zeroed)
