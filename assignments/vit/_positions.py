"""Positions and the class token as they reach the tokens (trusted side): what the tests name before they blame
something else. Three checks, each read from the model's behaviour through the parameters the handout names:

  * `positions_multiplied`, for test_vit_attention_branch_reads_a_normalized_input (test_vit_blocks.py), below;
  * `class_added_to_patches`, for test_vit_classifies_from_the_class_token (test_vit_vit.py): a class embedding
    added to every patch token (`x = x + cls`) instead of prepended as a token of its own. Adding a vector v to
    `class_embedding` then gives the same logits as adding v to the patches' rows 1..N of `positional_embedding`,
    which in the handout's model (the class token a token of its own) it does not (a model that adds the class
    embedding and rows 0..N-1 to the patches is not told: rows 0..N-1 hold the class token's in a right model);
  * `patch_rows_unused`, for test_vit_positions_reach_the_encoder (test_vit_vit.py): whether rows 1..N of
    `positional_embedding` change the logits at all (where they do not, the blocks see no patch's position: added
    after the blocks, to the class token alone, or one row, position 0's, added to every token: POSITIONS_UNUSED_HINT
    names the three, which this check does not tell apart).

`positions_multiplied` in detail: that test adds a constant to each patch token through the rows of `positional_embedding`; in a
model that adds its positions (`z = tokens + pos`) a LayerNorm removes such a constant, but in one that multiplies
them (`z = tokens * pos`) the constant scales the tokens, and the logits move although every branch reads LN(Z).
Layout-free, through the parameter the handout names: with `positional_embedding` set to zero, the handout's
model still sees the image (z = [class, patches] + 0), while one that multiplies gets z = 0 for every image, so
two different images give the same logits. The model's own values are put back afterwards.

`positions_premise` runs the last two on a fresh model, for a test that sets its tokens through the positional
embedding (test_vit_block_attention_is_the_handouts) and must not blame what it judges where they do not get there.

What it is not: a test of its own, or code that runs student code other than through the handle; each check
answers False where it cannot be told (no such parameter, a forward that fails) and puts the model's values back.
"""

import numpy as np
import torch

from checker.errors import GradingFailure
from ._common import (PRECISE_REL, _positional_param, _same_rows, _vit, changed, check_shape, explained, forward,
                      randn, with_params_forward)

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


CLASS_ADDED_HINT = ("no class token is prepended: the class embedding is added to every patch token (`x = x + "
                    "self.class_embedding`) instead of being put in front of them as a token of its own, so the "
                    "output at position 0 is a patch's, and the classifier reads a patch. Prepend it, `z = "
                    "torch.cat([cls.expand(B, -1, -1), x], dim=1)` (N+1 tokens), add all N+1 rows of "
                    "positional_embedding, and read the output at position 0")


def _class_param(m, D):
    """(name, shape) of the registered parameter that is `class_embedding` ((1, D) or (1, 1, D)), or (None, None):
    a parameter of that name, else the one parameter of the attribute's shape (a @property, an alias)."""
    params = {p["name"]: tuple(p["shape"]) for p in m.params
              if isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("shape"), list)}
    fits = {(1, D), (1, 1, D)}
    if params.get("class_embedding") in fits:
        return "class_embedding", params["class_embedding"]
    with explained():
        info = m.attr_shape("class_embedding")
    shape = info.get("shape") if isinstance(info, dict) else None
    shape = tuple(shape) if isinstance(shape, list) else None
    same = [n for n, s in params.items() if s == shape] if shape in fits else []
    return (same[0], shape) if len(same) == 1 else (None, None)


def class_added_to_patches(m, x, N, D, out):
    """True where model handle `m` on images `x` gives, with a random v added to its class embedding, other logits
    than its own and the same as with v added to rows 1..N of its positional embedding, the patches': the class
    embedding reaches every patch token alike (see above). False where it does not, or it cannot be told."""
    try:
        pe, pe_shape, _ = _positional_param(m, N, D)
        ce, ce_shape = _class_param(m, D)
        if pe is None or ce is None:
            return False
        with explained():
            kept = m.get_params([pe, ce])
        if not isinstance(kept, dict) or pe not in kept or ce not in kept:
            return False
        kind = np.float64 if np.asarray(kept[pe]).dtype == np.float64 else np.float32  # as the model was built
        P = np.array(kept[pe], dtype=kind).reshape(N + 1, D)
        C = np.array(kept[ce], dtype=kind)
        v = np.random.default_rng(N * 7919 + D).standard_normal(D).astype(kind)
        back = {pe: torch.from_numpy(P.reshape(pe_shape)), ce: torch.from_numpy(C)}

        def logits(values):
            return with_params_forward(m, values, [x], back, lambda r: check_shape(r.outputs[0], (x.shape[0], out),
                                                                                   "output"))
        base = check_shape(forward(m, [x]).outputs[0], (x.shape[0], out), "output")
        moved = logits({ce: torch.from_numpy((C + v.reshape((1,) * (C.ndim - 1) + (D,))).astype(kind))})
        scale, rel = float(np.max(np.abs(base))), (PRECISE_REL if kind == np.float64 else 1e-4)
        if not changed(moved, base, scale, rel):
            return False
        Pv = P.copy()
        Pv[1:] += v  # the patches' rows only: with rows 0..N-1, a right model whose attention barely moves the
        # class token (weights started at std 0.02) would answer alike, its class token moved by v in both
        return not changed(logits({pe: torch.from_numpy(Pv.reshape(pe_shape))}), moved, scale, rel)
    except GradingFailure:
        return False


POSITIONS_UNUSED_HINT = (
    "the positions never reach the encoder blocks, one row per token: rows 1..N of positional_embedding (the "
    "patches' positions) change nothing. Either it is added after the blocks (`z = self.encoder(z) + "
    "self.positional_embedding`), or to the class token alone, or one of its rows is added to every token (`pos[0]`, "
    "`pos[:, :1]`, or rows picked by the batch index, `pos[torch.arange(B)]`, instead of the token index), so every "
    "token gets the same position; either way the blocks see the patch tokens as an unordered set. Add all N+1 "
    "rows to the tokens, row t to token t, once the class token is prepended, and run the first block on that sum")


def patch_rows_unused(m, key, rows, x, before, dtype, rel):
    """True where model handle `m`, its positional embedding `key` set to `rows` (an array of its shape) giving the
    logits `before` on images `x`, gives the same logits with rows 1..N replaced by others (row 0 kept): no patch's
    row reaches the output. False where they change, or it cannot be told; the parameter is left as `rows`."""
    P = np.array(rows, dtype=np.float64)
    flat = P.reshape(-1, P.shape[-1]).copy()
    flat[1:] = np.random.default_rng(flat.shape[0]).standard_normal(flat[1:].shape)
    try:
        got = with_params_forward(m, {key: torch.from_numpy(flat.reshape(P.shape).astype(dtype))}, [x],
                                  {key: torch.from_numpy(P.astype(dtype))},
                                  lambda r: check_shape(r.outputs[0], np.shape(before), "output"))
    except GradingFailure:
        return False
    return not changed(got, before, float(np.max(np.abs(before))), rel)


def positions_premise(sub, seed, rng, img, patch, D, h, out):
    """(what was seen, hint) where a fresh one-block ViT (its own weights, float64 where it runs so) does not read
    its tokens as [class token, patches] + positional_embedding, row t to token t: its class embedding added to
    the patches, or rows 1..N that change nothing; None where neither shows, or it cannot be told."""
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (img[1] // P_h) * (img[2] // P_w)
    for dtype, rel in (("float64", PRECISE_REL), ("float32", 1e-4)):
        try:
            m = _vit(sub, seed + 11, img, patch, D, h, out, 1, dtype=dtype)
            key, shape, _ = _positional_param(m, N, D)
            if key is None:
                return None
            with explained():
                rows = np.asarray(m.get_params([key])[key], dtype=np.float64)
            x = randn(rng, (1, *img), dtype)
            before = check_shape(forward(m, [x]).outputs[0], (1, out), "output")
        except (GradingFailure, KeyError, TypeError):
            continue
        if class_added_to_patches(m, x, N, D, out):
            return ("adding a vector to class_embedding moves the logits as adding it to the patches' rows of "
                    "positional_embedding does, so the class embedding is on the patch tokens", CLASS_ADDED_HINT)
        if patch_rows_unused(m, key, rows, x, before, dtype, rel):
            return ("rows 1..N of positional_embedding (the patches') leave the logits as they are, so the tokens "
                    "the grader set through them never reached the block", POSITIONS_UNUSED_HINT)
        return None
    return None
