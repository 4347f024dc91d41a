"""Grading tests of `vit`, question vit (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._determinism import *  # noqa: F401,F403 - eval mode is deterministic
from ._positions import CLASS_ADDED_HINT, POSITIONS_UNUSED_HINT, class_added_to_patches, patch_rows_unused


@pytest.mark.question("vit")
@pytest.mark.parametrize("B,img,patch,D,h,out,blocks", [
    (2, (3, 8, 8), 4, 16, 2, 10, None),  # the default number of blocks
    (3, (3, 8, 8), 2, 12, 3, 7, 1),
    (2, (3, 8, 12), (2, 4), 12, 3, 6, 1),  # non-square patches on a non-square image
])
def test_vit_output_shape(sub, rng, seed, B, img, patch, D, h, out, blocks):
    _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks)


@pytest.mark.question("vit")
@pytest.mark.parametrize("B,img,patch,D,h,out,blocks", [
    (2, (3, 8, 12), 4, 16, 4, 5, 2),
    (1, (1, 6, 10), (3, 5), 10, 5, 3, 1),
    (2, (2, 12, 8), (4, 2), 12, 3, 6, 1),
])
def test_vit_output_shape_non_square(sub, rng, seed, B, img, patch, D, h, out, blocks):
    _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks)


def _vit_embeddings(sub, rng, seed, img, patch, D, h, out):
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (H // P_h) * (W // P_w)
    m = _vit(sub, seed, img, patch, D, h, out, 1)
    name = _vit_name(img, patch, D, h, out, 1)
    for attr, shapes in (("class_embedding", ([1, D], [1, 1, D])),
                         ("positional_embedding", ([N + 1, D], [1, N + 1, D]))):
        with explained():
            info = m.attr_shape(attr)
        shape = info.get("shape") if isinstance(info, dict) else info
        if shape is None:
            # what the module has of that shape instead, as timm names it (cls_token, pos_embed) or otherwise
            fits = [p.get("name") for p in m.params if isinstance(p, dict) and isinstance(p.get("name"), str)
                    and list(p.get("shape") or []) in [list(s) for s in shapes]]
            found = ""
            if fits:
                shown = ", ".join(f"`{n}`" for n in fits[:3])
                found = (f". It has {shown} of that shape: if {'that is' if len(fits) == 1 else 'one of them is'} "
                         f"the handout's {attr}, rename it `{attr}` (or add a line `self.{attr} = self.{fits[0]}` "
                         "after it, where it is a direct attribute)")
            raise GradingFailure(f"{name} has no tensor attribute `{attr}` (the handout names it; it must be "
                                 f"an nn.Parameter of shape {tuple(shapes[0])} or {tuple(shapes[1])}){found}")
        if list(shape) not in [list(s) for s in shapes]:
            mistake = _patch_count_mistake(int(shape[-2]) - 1, img, patch) if (
                attr == "positional_embedding" and len(shape) >= 2) else None
            raise GradingFailure(f"{name}.{attr} has shape {tuple(shape)}; expected {tuple(shapes[0])} or "
                                 f"{tuple(shapes[1])} (N = {N} patches, D = {D})"
                                 + (f"\nLikely mistake: {mistake}." if mistake else ""))
        if isinstance(info, dict) and info.get("is_parameter") is False:
            raise GradingFailure(f"{name}.{attr} is a plain tensor, not an nn.Parameter: it is learnable, "
                                 "so wrap it in nn.Parameter(...)")
    _vit_structure_earns_if_it_runs(sub, rng, seed)


@pytest.mark.question("vit")
def test_vit_embedding_shapes(sub, rng, seed):
    _vit_embeddings(sub, rng, seed, (3, 8, 12), (2, 4), 16, 2, 10)


@pytest.mark.question("vit")
def test_vit_embedding_shapes_non_square(sub, rng, seed):
    _vit_embeddings(sub, rng, seed, (2, 12, 8), (4, 2), 12, 3, 6)


def _vit_every_patch(sub, rng, seed, img, patch, D, h, out, blocks):
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    gh, gw = H // P_h, W // P_w
    x = randn(rng, (1, *img), "float64")
    inputs = [x]
    for k in range(gh * gw):
        r_, c_ = divmod(k, gw)
        xk = x.clone()
        xk[:, :, r_ * P_h:(r_ + 1) * P_h, c_ * P_w:(c_ + 1) * P_w] = randn(rng, (1, C, P_h, P_w), "float64")
        inputs.append(xk)
    # in float64: a correct model whose blocks start with a tiny gain (LayerScale 1e-5) changes its logits by less
    # than float32's rounding threshold, yet far more than float64's (_vit_precise)
    m, r, rel = _vit_precise(sub, seed, img, patch, D, h, out, blocks, inputs)
    name = _vit_name(img, patch, D, h, out, blocks)
    base = check_shape(r.outputs[0], (1, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    outs = [check_shape(o, (1, out), f"{name} output") for o in r.outputs[1:]]
    if len(outs) > 1 and not any(changed(o, base, scale, rel) for o in outs):
        raise GradingFailure(
            f"{name}: changing any one patch of a {gh} x {gw} grid did not change the output: the logits do "
            "not depend on the image at all.\nLikely mistake: the class token never attends to the patches: "
            "nn.MultiheadAttention without batch_first=True reads (B, N+1, D) as (sequence, batch, D), so each "
            "token attends across the images of the batch instead of across its own tokens (build it with "
            "batch_first=True); or a causal mask copied from a GPT (`torch.tril`, is_causal=True) lets the class "
            "token, first in the sequence, attend only to itself; or the logits are read from the class token "
            "before the encoder blocks, or the class token joins the sequence only after the blocks ran (it "
            "must be prepended before them, so that it attends to the patches), or the patch embeddings never "
            "join the sequence.")
    for k, ok in enumerate(outs):
        if not changed(ok, base, scale, rel):
            r_, c_ = divmod(k, gw)
            raise GradingFailure(
                f"{name}: changing only patch {k} (grid row {r_}, column {c_} of a {gh} x {gw} grid) did not "
                "change the output: the model ignores part of the image (is every patch embedded and "
                "attended to, and is the output read from the class token after the encoder blocks?)")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # a ViT blind to part of its image cannot classify it
def test_vit_depends_on_every_patch(sub, rng, seed):
    _vit_every_patch(sub, rng, seed, (3, 8, 8), 4, 16, 4, 10, 2)


@pytest.mark.question("vit")
def test_vit_depends_on_every_patch_non_square(sub, rng, seed):
    _vit_every_patch(sub, rng, seed, (2, 6, 8), (3, 4), 12, 3, 5, 1)


@pytest.mark.question("vit")
def test_vit_batch_independent(sub, close, rng, seed, note):
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    x1, x2, x3 = (randn(rng, (1, *img)) for _ in range(3))
    r = forward(m, [torch.cat([x1, x2]), torch.cat([x1, x3])])
    name = _vit_name(img, patch, D, h, out, blocks)
    a = check_shape(r.outputs[0], (2, out), f"{name} output")
    b = check_shape(r.outputs[1], (2, out), f"{name} output")
    close(b[0], a[0], dtype="float32",
          what=f"{name}: the logits of the first image of a batch, when only the second image changes "
               "(images of a batch must not see each other)")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the contract: every size comes from the constructor (HOMEWORK: no notebook globals)
def test_vit_parameters_grow_with_hidden_dim(sub, rng, seed):
    # The logits' shape (B, out_dim) does not show the width: a model that takes it from the notebook (`dim =
    # 64`) answers in the right shape whatever hidden_dim is. Twice the width is more parameters in every
    # layout (the patch embedding, the class token, the projections, the classifier).
    img, patch, h, out, blocks = (3, 8, 8), 4, 2, 10, 2
    m = _vit(sub, seed, img, patch, 16, h, out, blocks)
    m2 = _vit(sub, seed, img, patch, 32, h, out, blocks)
    if m2.n_params <= m.n_params:
        raise GradingFailure(
            f"{_vit_name(img, patch, 32, h, out, blocks)} has {m2.n_params} parameters, no more than "
            f"{m.n_params} with hidden_dim=16: the model's width does not come from its hidden_dim argument (a "
            "size read from the notebook, or fixed in the code?). Build every layer from the constructor's "
            "arguments.")
    _vit_structure_earns_if_it_runs(sub, rng, seed)


@pytest.mark.question("vit")
def test_vit_parameters_registered(sub, rng, seed):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 2
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    name = _vit_name(img, patch, D, h, out, blocks)
    C, H, W = img
    N = (H // patch) * (W // patch)
    low = blocks * 4 * D * D + C * patch * patch * D + D * out + (N + 1) * D + D
    if m.n_params < low:
        raise GradingFailure(
            f"{name} has {m.n_params} registered parameter values, fewer than the {low} that the patch "
            f"embedding, the class and positional embeddings, the classifier and the Q, K, V and output "
            f"projections of {blocks} blocks need at the least.\nLikely mistake: {LIST_HINT} (the same for "
            "a list of encoder blocks).")
    check_registered(m, name, hint=f"{LIST_HINT} (the same for a list of encoder blocks)")
    _vit_structure_earns_if_it_runs(sub, rng, seed)


@pytest.mark.question("vit")
def test_vit_every_parameter_in_graph(sub, rng, seed):
    img, patch, D, h, out, blocks = (1, 8, 8), (4, 2), 12, 3, 4, 2
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    check_in_graph(m, randn(rng, (2, *img)), randn(rng, (2, out)), _vit_name(img, patch, D, h, out, blocks))


@pytest.mark.question("vit")
def test_vit_b16_on_meta(sub, rng, seed, note):
    args, kwargs = [(3, 224, 224), 16, 768, 12, 1000], {"num_encoder_blocks": 12}
    name = "VisionTransformer((3, 224, 224), 16, 768, 12, 1000, num_encoder_blocks=12) (ViT-B/16)"
    fallback = None
    try:
        with explained():
            try:
                r = sub.meta_forward("VisionTransformer", args, kwargs, (2, 3, 224, 224))
            except GradingFailure as e:
                if not _blocks_named_otherwise(e, kwargs):
                    raise
                args, kwargs = args + [kwargs["num_encoder_blocks"]], {}  # (charged by the test below)
                r = sub.meta_forward("VisionTransformer", args, kwargs, (2, 3, 224, 224))
        fallback = r.get("fallback") if isinstance(r, dict) else None
    except StudentError as e:
        if not meta_only(e.message):
            raise
        fallback = e.message
    if fallback:
        # Looking at values (.item(), a data-dependent branch) is legal but impossible on the meta device:
        # run the ViT-B/16 geometry for real instead, with a narrow width so that it is quick.
        m = new(sub, "VisionTransformer", (3, 224, 224), 16, 48, 12, 1000, seed=seed, **kwargs)
        out = forward(m, [randn(rng, (1, 3, 224, 224))])
        check_shape(out.outputs[0], (1, 1000),
                    "VisionTransformer((3, 224, 224), 16, 48, 12, 1000, num_encoder_blocks=12) (run for real "
                    "because the model looks at values, which the meta device cannot do) on a (1, 3, 224, 224) "
                    "image")
        said = " ".join(str(fallback).split())
        said = said if len(said) <= 160 else said[:157] + "..."
        note("checked by a real run of the ViT-B/16 geometry at width 48 instead of a full-size run on the meta "
             f"device, where the model stopped ({said}). Reading tensor values (.item()) stops it there and is "
             "allowed; a tensor made on a fixed device is not, and the device test of this question says so")
        return
    shape = r.get("shape") if isinstance(r, dict) else None
    if list(shape or []) != [2, 1000]:
        raise GradingFailure(f"{name} on a (2, 3, 224, 224) batch built on the meta device returned shape "
                             f"{tuple(shape) if shape is not None else None}; expected (2, 1000)")


@pytest.mark.question("vit")
def test_vit_takes_num_encoder_blocks_by_name(sub, seed):
    """The handout's signature ends with `num_encoder_blocks=6`: a caller (the TA's notebook, this grader)
    passes it by that name. A model that calls it otherwise is judged by the other tests all the same."""
    img, patch, D, h, out = (3, 8, 8), 4, 8, 2, 5
    try:
        with explained():
            m = sub.new("VisionTransformer", img, patch, D, h, out, num_encoder_blocks=1, seed=seed,
                        example=example_input("VisionTransformer", {"img_shape": img}))
    except GradingFailure as e:
        if not _blocks_named_otherwise(e, {"num_encoder_blocks": 1}):
            raise
        raise e.retold(
            f"{e.message}\nThe handout's signature is VisionTransformer(img_shape, patch_dims, hidden_dim, "
            "num_heads, out_dim, num_encoder_blocks=6): your __init__ calls its last argument something else. "
            "Rename it num_encoder_blocks, so that code written against the handout can call your model. "
            "(The other tests passed the number of blocks by position, so they judged your model.)") from None
    with explained():  # a model that only builds (a starter's) earns nothing here
        r = m.forward([randn(np.random.default_rng(seed), (2, *img))])
    check_shape(r.outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} on images of shape {(2, *img)}")


@pytest.mark.question("vit")
def test_vit_dtype_and_device(sub, rng, seed, device, float_dtype):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 1
    m = _vit(sub, seed, img, patch, D, h, out, blocks, device=device, dtype=float_dtype)
    r = forward(m, [randn(rng, (2, *img), float_dtype, device)])
    what = f"{_vit_name(img, patch, D, h, out, blocks)} in {float_dtype} on {device}"
    check_shape(r.outputs[0], (2, out), f"{what}: the output")
    if r.dtypes[:1] != [float_dtype] or not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"{what}: the output is {r.dtypes[0]} on {r.devices[0]}; it must have the "
                             "input's dtype and device (create new tensors with the input's dtype and device, "
                             "no hard-coded .float(), float32 or device inside forward)")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # a module that fails on every GPU
def test_vit_runs_on_another_device(sub, rng, seed, note):
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    name = _vit_name(img, patch, D, h, out, blocks)
    shape = check_runs_on_another_device(m, (2, *img), name)
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, out]:
        raise GradingFailure(f"{name} on another device returned shape {tuple(shape)}; expected (2, {out})")


@pytest.mark.question("vit")
@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_vit_to_cuda(sub, rng, seed, device):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 1
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    with explained():
        moved = m.to(device)
    stayed = [p["name"] for p in moved.get("params", []) + moved.get("buffers", [])
              if not str(p.get("device")).startswith(device)]
    if stayed:
        raise GradingFailure(f"VisionTransformer.to('cuda') left these tensors behind: {', '.join(stayed[:5])}"
                             f"\nLikely mistake: {LIST_HINT}.")
    r = forward(m, [randn(rng, (2, *img), "float32", device)])
    check_shape(r.outputs[0], (2, out), "VisionTransformer moved to cuda: the output")
    if not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"VisionTransformer moved to cuda returned its output on {r.devices[0]}")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # what the class token is for; a mean-pooling model passes every other test
def test_vit_classifies_from_the_class_token(sub, close, rng, seed, note):
    # On a constant one-channel image every patch token has the same content, however the patches are
    # cut. Swapping two rows of the positional embedding then only swaps two tokens, and attention does
    # not care about order: the class token, and the logits, must stay the same. A ViT that reads a patch
    # token (x[:, 1], x[:, -1]) instead of the class token x[:, 0] changes its answer.
    img, patch, D, h, out, blocks = (1, 8, 8), 4, 16, 2, 10, 2
    zero_blocks_checked = _class_token_without_blocks(sub, close, rng, seed, img, patch, D, h, out)
    name = _vit_name(img, patch, D, h, out, blocks)
    kept = rng.bit_generator.state
    with sub.together(chain=True) as t:  # the model and check_deterministic's two forwards: one round trip
        made = _vit_asked(t, sub, seed, img, patch, D, h, out, blocks)
        x0 = randn(rng, (1, *img))
        asks = deterministic_asks(t, made, x0)
    try:
        m = made.get()
    except BaseException:
        rng.bit_generator.state = kept  # (drawn after the model was made, as before)
        raise
    check_deterministic_asked(m, x0, name, asks)
    with explained():
        shape = m.attr_shape("positional_embedding")
    shape = shape.get("shape") if isinstance(shape, dict) else None
    if not shape or len(shape) < 2 or shape[-2] != 5:
        # test_vit_embedding_shapes charges the embedding; the readout is judged here only as far as it can be
        has = f"shape {tuple(shape)}" if shape else "no such attribute at all"
        if zero_blocks_checked:
            note("the readout was checked with no encoder block (the logits are the same for every image); "
                 "the check that swaps rows of `positional_embedding` was not made: the model has no such "
                 f"attribute with N+1 = 5 rows ({has}), which test_vit_embedding_shapes charges")
            return
        pytest.skip("judged by test_vit_embedding_shapes, not here: the model has no `positional_embedding` with "
                    f"N+1 = 5 rows ({has}), whose rows this test swaps")
    x = torch.full((1, *img), 0.7)
    before = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    with explained():
        m.swap_rows("positional_embedding", 1, 4)  # rows of the first and last patch (row 0: the class token)
    after = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    try:
        close(after, before, dtype="float32",
              what=f"{name} on a constant image: the logits after swapping the positional embeddings of two "
                   "patches with the same content (the class token sees the same tokens, so its logits must "
                   "not change)")
    except GradingFailure as e:
        if _class_token_last(m, x, before, close, name, out) and _last_row_unused(m, x, before, close, name, out):
            hint = ("the positional embedding is added to the patch tokens before the class token is prepended "
                    "(rows 0..N-1 go to the patches, the class token gets none): prepend the class token first, "
                    "then add all N+1 rows, so that row 0 is the class token's")
        elif _class_token_last(m, x, before, close, name, out, swapped=True):
            hint = ("the class token is appended after the patches (its positional row is the last one, N) and "
                    "read there: the handout prepends it, at position 0, so that row 0 of positional_embedding "
                    "is the class token's and the classifier reads the output at position 0")
        elif zero_blocks_checked:  # the readout is the class token's: the tokens themselves are not what they should be
            hint = ("patches with the same content do not give the same tokens, or the encoder is not equivariant "
                    "to their order: a patch embedding that scrambles the tokens (e.g. a Conv2d output reshaped "
                    "to (B, N, D) instead of `.flatten(2).transpose(1, 2)`), a positional term other than "
                    "`positional_embedding`, or an attention that fails its own permutation test (see mhsa)")
        else:
            hint = ("the classifier reads a patch token instead of the class token (use the output at position "
                    "0, where the class embedding was prepended)")
        raise GradingFailure(f"{e.message}\nLikely mistake: {hint}.") from e


def _class_token_last(m, x, before, close, name, out, swapped=False):
    """Do the patches use rows 0..N-1 of the positional embedding (the class token kept last, or given no
    row)? Rows 1 and 4 of it are swapped; swap them back, then swap rows 0 and 3, two patches' rows then:
    the logits on the constant image stay the same only then. `swapped`: rows 0 and 3 are swapped already
    (an earlier call), so only compare."""
    try:
        if not swapped:
            with explained():
                m.swap_rows("positional_embedding", 1, 4)
                m.swap_rows("positional_embedding", 0, 3)
        again = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
        close(again, before, dtype="float32", what="")
    except GradingFailure:
        return False
    return True


def _last_row_unused(m, x, before, close, name, out):
    """After _class_token_last: does changing row N of the positional embedding leave the logits alone (no
    token uses it: the embedding was added before the class token was prepended)? False when the row is
    used, or when the embedding is not a parameter by that name; the row is put back either way."""
    try:
        key, _, _ = _positional_param(m, 4, None)  # (the constant image of test_vit_classifies_from_the_class_token)
        if key is None:
            return False
        with explained():
            got = m.get_params([key])
        pe = got.get(key) if isinstance(got, dict) else None
        if pe is None:
            return False
        pe = np.array(pe, dtype=np.float32)
        changed_pe = pe.copy()
        # a random change: a constant one would vanish in every LayerNorm
        changed_pe[..., -1, :] += np.random.default_rng(0).standard_normal(pe.shape[-1]).astype(np.float32)
        with explained():
            m.set_params({key: torch.from_numpy(changed_pe)})
        try:
            again = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
        finally:
            with explained():
                m.set_params({key: torch.from_numpy(pe)})
        close(again, before, dtype="float32", what="")
    except GradingFailure:
        return False
    return True


def _class_token_without_blocks(sub, close, rng, seed, img, patch, D, h, out):
    """With no encoder block the class token never meets the image, so the logits of a ViT that
    classifies from it are the same for every image; a mean over the tokens (or a patch token) is not.
    A model that cannot be built with zero blocks is not judged here (the handout does not ask for it):
    returns whether the check was made."""
    name = _vit_name(img, patch, D, h, out, 0)
    try:
        m, ran = _vit_then_forward(sub, rng, seed, img, patch, D, h, out, 0,
                                   lambda: [randn(rng, (1, *img)), randn(rng, (1, *img))])
        r = ran.get()
    except StudentError:
        return False
    a = check_shape(r.outputs[0], (1, out), f"{name} output")
    b = check_shape(r.outputs[1], (1, out), f"{name} output")
    if changed(a, b, float(np.max(np.abs(a)))):
        check_deterministic(m, randn(rng, (1, *img)), name)
        N = (img[1] // patch) * (img[2] // patch)
        hint = CLASS_ADDED_HINT if class_added_to_patches(m, randn(rng, (1, *img)), N, D, out) else (
            "the classifier reads a patch token instead of the class token, or a mean over the tokens (it must read "
            "the class token alone: the output at position 0, where the class embedding was prepended); or a layer "
            "mixes the tokens outside the attention (e.g. a LayerNorm over (N+1, D) instead of D)")
        raise GradingFailure(
            f"{name}: with no encoder block the class token never sees the image, so the logits must be the "
            f"same for every image; two random images gave {np.round(a[0, :4], 4).tolist()}... and "
            f"{np.round(b[0, :4], 4).tolist()}...\nLikely mistake: {hint}.")
    return True


RESHAPED_TOKENS_HINT = ("the ViT's forward makes its tokens by a plain reshape of the image (`images.reshape(B, N, "
                        "-1)`{order}): each token is then a run of consecutive values of the flattened image (a "
                        "strip across rows, or across channels), not a P_h x P_w tile. Cut the tiles inside forward "
                        "as patchify does (call your patchify, F.unfold(...).transpose(1, 2), or a Conv2d patch "
                        "embedding with kernel_size = stride = patch size)")


def _swapped_tiles(x, patch, i, j):
    """x (B, C, H, W) with the P_h x P_w tiles number i and j of the grid (row-major) swapped."""
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    gw = x.shape[-1] // P_w
    y = x.clone()
    (ri, ci), (rj, cj) = divmod(i, gw), divmod(j, gw)
    a = (slice(None), slice(None), slice(ri * P_h, (ri + 1) * P_h), slice(ci * P_w, (ci + 1) * P_w))
    b = (slice(None), slice(None), slice(rj * P_h, (rj + 1) * P_h), slice(cj * P_w, (cj + 1) * P_w))
    y[a], y[b] = x[b], x[a]
    return y


def _swapped_runs(x, N, i, j, channel_last):
    """x (B, C, H, W) with runs i and j of its flattening into N equal runs swapped: the tokens of
    `x.reshape(B, N, -1)` (channel-first) or of `x.permute(0, 2, 3, 1).reshape(B, N, -1)` (channel-last)."""
    B, C, H, W = x.shape
    flat = (x.permute(0, 2, 3, 1) if channel_last else x).reshape(B, N, -1).clone()
    flat[:, [i, j]] = flat[:, [j, i]]
    if channel_last:
        return flat.reshape(B, H, W, C).permute(0, 3, 1, 2).contiguous()
    return flat.reshape(B, C, H, W)


@pytest.mark.question("vit")
@pytest.mark.weight(4)  # the tokens are the patches: a reshape inside forward passes every other test
def test_vit_tokens_are_tiles_of_the_image(sub, rng, seed, note):
    # With `positional_embedding` the same at every position, nothing in a ViT knows where a token came from: its tokens
    # are the embedded tiles, in some order, the encoder is equivariant to their order and the logits are read
    # from the class token. So swapping two P_h x P_w tiles of the image leaves the logits as they were, whatever
    # the order of the tiles or of the values inside a patch (channel-first, channel-last, the grid read column
    # by column, a Conv2d patch embedding). A ViT whose tokens are N runs of the flattened image
    # (`images.reshape(B, N, -1)`) is unchanged when two runs are swapped instead: that is the one mistake this
    # test fails; a model that is neither (a positional term elsewhere, a readout from a patch token, an
    # attention that is not equivariant) is skipped here and judged by the other tests.
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (H // P_h) * (W // P_w)
    name = _vit_name(img, patch, D, h, out, blocks)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    key, pe, why = _positional_param(m, N, D)
    if key is None:
        pytest.skip(f"judged by the other tests, not here: {why}; this test sets it to the same row at every "
                    "position")
    # the same random row at every position (not zeros, which code could tell from a trained embedding): no
    # token can be told from another by its position
    row = torch.from_numpy(rng.standard_normal(pe[-1]).astype(np.float32))
    x = randn(rng, (1, *img))
    first, last = 0, N - 1  # two tiles in different rows and columns of the grid
    inputs = [x, _swapped_tiles(x, patch, first, last), _swapped_runs(x, N, first, last, False),
              _swapped_runs(x, N, first, last, True)]
    outs = [check_shape(o, (1, out), f"{name} output")
            for o in set_then_forward(m, {key: row.expand(pe).contiguous()}, inputs).outputs]
    scale = float(np.max(np.abs(outs[0])))
    tiles, runs_cf, runs_cl = (not changed(o, outs[0], scale) for o in outs[1:])
    if tiles:
        return
    if not (runs_cf or runs_cl):
        pytest.skip("judged by the other tests, not here: with positional_embedding the same at every position, the logits "
                    "change when two tiles of the image are swapped, and also when two runs of its flattening "
                    "are: the tokens are neither the tiles nor a plain reshape of the image (or something other "
                    "than positional_embedding tells the positions apart)")
    order = "" if runs_cf else ", after moving the channels last"
    probe = torch.from_numpy(np.random.default_rng(0).standard_normal((2, *img))).float()
    wrong = (probe.reshape(2, N, -1) if runs_cf else probe.permute(0, 2, 3, 1).reshape(2, N, -1)).double().numpy()
    try:
        with explained():
            own = as_plain_array(sub.call("patchify", probe, patch), "patchify")
    except GradingFailure:
        own = None
    if own is not None and own.shape == wrong.shape and np.allclose(own, wrong, rtol=1e-5, atol=1e-6):
        note("the tokens are not tiles of the image, but they are what your own patchify gives (it reshapes the "
             "image): counted in the patchify question only (fix patchify and the ViT follows)")
        return
    raise GradingFailure(
        f"{name}, with positional_embedding the same at every position: swapping two {P_h} x {P_w} tiles of the image (tiles "
        f"{first} and {last} of the grid) changed the logits, which a ViT whose tokens are the tiles cannot do; "
        f"swapping two runs of {C * P_h * P_w} consecutive values of the flattened image instead left them as "
        f"they were: each token is such a run.\nLikely mistake: {RESHAPED_TOKENS_HINT.format(order=order)}.")


POSITIONS_AFTER_ENCODER_HINT = (
    "the positions never reach the encoder blocks: the positional embedding is added after them (`z = "
    "self.encoder(z) + self.positional_embedding`), or to the class token alone, so the blocks see the patch tokens "
    "as an unordered set and the class token cannot tell where a tile was. Add all N+1 rows to the tokens, once the "
    "class token is prepended, and run the first block on that sum")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # what the positional embedding is for; added after the encoder it passes every other test
def test_vit_positions_reach_the_encoder(sub, rng, seed, note):
    # The positional embedding is what tells the tokens' places apart. With its rows set to random values (set
    # here, so that a model that starts it at zero is judged the same), swapping two tiles of the image puts each
    # tile's content at another position: the tokens the blocks read are other sums of content and position, and
    # the class token's logits change. A ViT whose blocks never see the positions (added after the encoder, or to
    # the class token only) is equivariant to the order of the patch tokens, so its class token ends as it was.
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (H // P_h) * (W // P_w)
    name = _vit_name(img, patch, D, h, out, blocks)
    # In float64 where the model runs so (as _vit_precise): a correct model whose blocks start with a small gain
    # (LayerScale, or timm's init of every weight at std 0.02) changes its logits by less than float32's threshold
    # when two tiles trade places, far more than float64's.
    drawn = {}

    def run(dtype):
        m = _vit(sub, seed, img, patch, D, h, out, blocks, dtype=dtype)
        key, pe, why = _positional_param(m, N, D)
        if key is None:
            pytest.skip(f"judged by the other tests, not here: {why}; this test sets it to random rows")
        if not drawn:  # the same rows and images in either dtype
            drawn.update(rows=rng.standard_normal(pe), x=randn(rng, (1, *img), "float64"),
                         other=randn(rng, (1, *img), "float64"))
        x, other = (drawn[k].to(getattr(torch, dtype)) for k in ("x", "other"))
        return m, key, pe, x, set_then_forward(m, {key: torch.from_numpy(drawn["rows"].astype(dtype))},
                                               [x, _swapped_tiles(x, patch, 0, N - 1), other])

    try:
        m, key, pe, x, r = run("float64")
        dtype, rel = ("float64", PRECISE_REL) if list(r.dtypes[:1]) == ["float64"] else (None, None)
    except GradingFailure:  # (test_vit_dtype_and_device charges a model that fails in float64)
        dtype = None
    if dtype is None:
        dtype, rel = "float32", 1e-4
        m, key, pe, x, r = run(dtype)
    first, last = 0, N - 1  # two tiles in different rows and columns of the grid
    outs = [check_shape(o, (1, out), f"{name} output") for o in r.outputs]
    scale = float(np.max(np.abs(outs[0])))
    if changed(outs[1], outs[0], scale, rel):
        return
    if not changed(outs[2], outs[0], scale, rel):
        pytest.skip("judged by test_vit_depends_on_every_patch, not here: the logits are the same for two random "
                    "images, so no order of the tiles can show")
    with explained():  # does the positional embedding count at all? (test_vit_every_parameter_in_graph says so)
        m.set_params({key: torch.from_numpy(rng.standard_normal(pe).astype(dtype))})
    again = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    if not changed(again, outs[0], scale, rel):
        pytest.skip("judged by test_vit_every_parameter_in_graph, not here: new values of the positional embedding "
                    "leave the logits as they were, so it takes no part in the output")
    unused = patch_rows_unused(m, key, drawn["rows"], x, outs[0], dtype, rel)
    raise GradingFailure(
        f"{name}, with random rows in its positional embedding: swapping two {P_h} x {P_w} tiles of the image (tiles "
        f"{first} and {last} of the grid) left the logits as they were, although the positional embedding does "
        "change them: the model cannot tell where in the image a tile is.\nLikely mistake: "
        f"{POSITIONS_UNUSED_HINT if unused else POSITIONS_AFTER_ENCODER_HINT}.")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # detached attention weights in the blocks: the right logits, and attention never learns
def test_vit_gradient_follows_the_logits(sub, rng, seed):
    # as test_mhsa_gradient_follows_the_output, for the whole model (its blocks may use attention of their own)
    img, patch, D, h, out, blocks = (1, 6, 6), (3, 2), 8, 2, 3, 1
    check_gradient_follows(lambda dtype: _vit(sub, seed, img, patch, D, h, out, blocks, dtype=dtype),
                           randn(rng, (2, *img), "float64"), randn(rng, (2, out), "float64"), seed,
                           _vit_name(img, patch, D, h, out, blocks), output="logits")
