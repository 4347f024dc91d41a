"""Judging a student's `patchify` (vit, question patchify): the reference's patches, the listed mistakes' hints, and
the edge-case gate where a mistake gives the right patches on the input at hand.

What it is for: `_check_patchify`, the one judge test_vit_patchify.py's tests share, and the hint texts
expected.json quotes for patchify. What it is not: the tests (test_vit_patchify.py) or a place that runs student
code (every call goes through `sub`).
"""

import numpy as np
import torch

from checker.errors import GradingFailure
from checker.judging.compare import as_plain_array
from checker.judging.edge_gate import only_if_right_elsewhere
from ._common import A, as_np, explained

RESHAPE_HINT = "patches cut by reshape, not tiles"
CHANNEL_LAST_HINT = ("the tiles are right but each patch is flattened channel-last (P_h, P_w, C); flatten it "
                     "channel-first (C, P_h, P_w), as F.unfold does")
COLUMN_MAJOR_HINT = ("the tiles are right but in column-major order: number the patches row by row over the "
                     "grid (left to right, then top to bottom)")
TILES_UNPERMUTED_HINT = ("the tiles are cut (Tensor.unfold twice gives (B, C, H/P_h, W/P_w, P_h, P_w)) but reshaped to "
                         "(B, N, C*P_h*P_w) without moving the channel axis: permute to (B, H/P_h, W/P_w, C, P_h, "
                         "P_w) first (`.permute(0, 2, 3, 1, 4, 5)`), then reshape")
UNFOLD_RESHAPED_HINT = ("F.unfold gives (B, C*P_h*P_w, N), the patches as columns: transpose it (`.transpose(1, 2)`); "
                        "a reshape to (B, N, C*P_h*P_w) cuts across the patches")
SWAPPED_PATCH_HINT = ("patch_dims read in the wrong order: it is (P_h, P_w), the patch height first, as the "
                      "image is (C, H, W); `ph, pw = patch_dims`, and H // P_h patches down, W // P_w across")

def _check_patchify(sub, ref, close, images, patch, dtype="float64", got=None, gate=True):
    """Judge patchify on `images`. Where a listed mistake gives the right patches on these images (one patch
    is a plain reshape, one channel hides the channel order, one row or column of patches hides the grid
    order), the test earns only for a patchify that is also right where they show (`gate`)."""
    expected = as_np(ref.patchify(images.cpu(), patch))
    m = A.patchify_mistakes(images, patch)
    reshaped, channel_last, column_major = m["reshape"], m["channel_last"], m["column_major"]
    try:
        if got is None:
            with explained():
                got = sub.call("patchify", images, patch)
        close(got, expected, what=f"patchify(images of shape {tuple(images.shape)}, {patch!r})", dtype=dtype,
              hints=[(RESHAPE_HINT, reshaped), (CHANNEL_LAST_HINT, channel_last), (COLUMN_MAJOR_HINT, column_major),
                     (TILES_UNPERMUTED_HINT, m.get("tiles_unpermuted")), (UNFOLD_RESHAPED_HINT, m.get("unfold_reshaped"))])
    except GradingFailure as e:  # an error, a wrong shape or wrong values: all three when (P_w, P_h) is read
        if not e.hinted and _reads_patch_swapped(sub, images, patch, expected):
            raise e.retold(f"{e.message}\nLikely mistake: {SWAPPED_PATCH_HINT}.") from None
        raise
    hidden = [words for words, mistaken in (("a plain reshape", reshaped), ("channel-last patches", channel_last),
                                            ("patches numbered column by column", column_major))
              if mistaken.shape == expected.shape and np.array_equal(mistaken, expected)]
    if gate and hidden:
        revealing = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 8, 12)))
        only_if_right_elsewhere(
            "patchify", f"{' and '.join(hidden)} would be right as well",
            "images of shape (2, 3, 8, 12) cut into 4 x 4 patches",
            lambda: _check_patchify(sub, ref, close, revealing, 4, gate=False))


def _reads_patch_swapped(sub, images, patch, expected):
    """Does the student's patchify give the right patches when handed (P_w, P_h)? Then it reads the
    tuple the other way round (`pw, ph = patch_dims`)."""
    if isinstance(patch, int) or patch[0] == patch[1]:
        return False
    try:
        got = as_plain_array(sub.call("patchify", images, tuple(reversed(patch))), "patchify")
    except GradingFailure:
        return False
    return got.shape == expected.shape and np.allclose(got, expected, rtol=1e-5, atol=1e-6)


__all__ = [n for n in dir() if not n.startswith("__")]
