"""Answer models of the `vit` grading tests (trusted side; never in the student kit).

What it is for: the known patchify mistakes test_vit.py's hints name (a plain reshape, channel-last
patches, the grid read column by column). Each is a permutation away from the right patches, so they live
here, apart from the tests: the test file reaches them through `checker.running.recorded.Answers`, which computes them
in the full package and, in the student kit (which does not ship this file), replays what they gave on
the public tests' inputs.

What it is not: the reference solutions (`reference.py` beside this file, which the tests' `ref` is), or code a worker
runs. Only plain data and tensors in, numpy arrays out: every result is recorded for the kit.
"""

import torch


def _np(t):
    return t.detach().to("cpu", torch.float64).numpy()


def patchify_mistakes(images, patch):
    """{mistake: patchify(images, patch) with it, float64 numpy}."""
    B, C, H, W = images.shape
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (H // P_h) * (W // P_w)
    images = images.cpu()
    tiles = images.unfold(2, P_h, P_h).unfold(3, P_w, P_w)                                   # (B, C, gh, gw, P_h, P_w)
    unfolded = torch.nn.functional.unfold(images, (P_h, P_w), stride=(P_h, P_w))             # (B, C*P_h*P_w, N)
    return {"reshape": _np(images.reshape(B, N, C * P_h * P_w)),
            "channel_last": _np(tiles.permute(0, 2, 3, 4, 5, 1).reshape(B, N, -1)),     # each patch (P_h, P_w, C)
            "column_major": _np(tiles.permute(0, 3, 2, 1, 4, 5).reshape(B, N, -1)),     # grid read column by column
            "tiles_unpermuted": _np(tiles.reshape(B, N, -1)),                           # (B, C, gh, gw, ...) as is
            "unfold_reshaped": _np(unfolded.reshape(B, N, -1))}                         # F.unfold not transposed
