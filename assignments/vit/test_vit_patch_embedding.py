"""Grading tests of `vit`, question vit: the patch embedding is a linear projection of each patch (see _common.py for
what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._positions import positions_multiplied


NONLINEAR_PATCH_EMBEDDING_HINT = ("the patch embedding is not a linear projection: a nonlinearity after it "
                                  "(`nn.Sequential(nn.Conv2d(C, D, P, stride=P), nn.GELU())`), an MLP over each patch, "
                                  "or a norm inside it. The handout embeds each flattened patch linearly, `x @ E + "
                                  "b`: one nn.Linear(C * P_h * P_w, hidden_dim) over patchify's output, or one "
                                  "nn.Conv2d(C, hidden_dim, kernel_size=P, stride=P), and nothing else before the "
                                  "class token and the positions")

EMBED_STEP = 1e-4  # central differences in float64: error ~ step^2, far below the bar below
EMBED_LINEAR = 1e-3  # one change of the tokens explaining every image's change of the logits: relative residual
EMBED_SMOOTH = 1e-5  # central differences over one step and twice it agree to this (relative) in a smooth forward
EMBED_IMAGES = 8  # images * out_dim equations for (N + 1) * D unknowns: 96 for 40


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # "embeds each patch linearly": a nonlinear patch embedding passes every other test
def test_vit_patch_embedding_is_linear(sub, rng, seed):
    # A patch reaches the encoder only as its token, E(p) plus its row of `positional_embedding`. Moving the first
    # patch by eps * d moves its token by E(p + eps d) - E(p), which for a linear (affine) E is eps * W d: the same
    # for every image. Moving a row of the positional embedding moves that token itself, so the logits' derivatives
    # along every row's D features (J, per image, by central differences) read the patch's change as a change v of
    # the tokens: J v = the logits' derivative along d. For a linear E one v (W d at the patch's token, 0 elsewhere,
    # whatever the tokens' order) explains every image; for GELU(conv(p)) or an MLP, E'(p) d depends on the image.
    # No name or layout is assumed but the positional embedding's (found as every test that sets it finds it); a
    # model whose patch tokens do not meet the positional embedding before the blocks skips.
    img, patch, D, h, out = (1, 8, 8), 4, 8, 2, 12
    N = (img[1] // patch) * (img[2] // patch)
    name = _vit_name(img, patch, D, h, out, 1)
    xs = randn(rng, (EMBED_IMAGES, *img), "float64")
    d = torch.zeros((1, *img), dtype=torch.float64)
    d[..., :patch, :patch] = randn(rng, (1, img[0], patch, patch), "float64")
    m, r, rel = _vit_precise(sub, seed, img, patch, D, h, out, 1, [xs])
    if rel != PRECISE_REL:
        pytest.skip("the model does not run in float64, where the derivatives this test reads are precise enough: "
                    "the linearity of the patch embedding was not checked")
    key, shape, why = _positional_param(m, N, D)
    if key is None:
        pytest.skip(f"{why}; this test moves the tokens through its rows: the patch embedding was not checked")
    if positions_multiplied(m, rng, img, N, D, out):
        pytest.skip("judged by test_vit_attention_branch_reads_a_normalized_input, not here: the positional embedding "
                    "multiplies the tokens, so it cannot move them on its own")
    with explained():
        pe = np.array(m.get_params([key])[key], dtype=np.float64)
    moves = []
    for row in range(N + 1):
        for k in range(D):
            for sign in (1.0, -1.0):
                v = pe.copy()
                v[..., row, k] += sign * EMBED_STEP
                moves.append({key: torch.from_numpy(v)})
    with m.sub.together(chain=True) as t:
        asks = [(t.set_params(m, mv), forward_asked(t, m, [xs])) for mv in moves]
        back = t.set_params(m, {key: torch.from_numpy(pe)})
        image = forward_asked(t, m, [torch.cat([xs + s * EMBED_STEP * d for s in (1, -1, 2, -2)])])
    got = []
    for put, ran in asks:
        with explained():
            put.get()
        got.append(check_shape(ran.get().outputs[0], (EMBED_IMAGES, out), f"{name} output").astype(np.float64))
    with explained():
        back.get()
    moved = check_shape(image.get().outputs[0], (4 * EMBED_IMAGES, out), f"{name} output").astype(np.float64)
    moved = moved.reshape(4, EMBED_IMAGES, out)
    J = np.stack([(got[2 * c] - got[2 * c + 1]) / (2 * EMBED_STEP) for c in range((N + 1) * D)], axis=-1)
    dy = (moved[0] - moved[1]) / (2 * EMBED_STEP)                                          # (images, out)
    wide = (moved[2] - moved[3]) / (4 * EMBED_STEP)  # the same derivative over twice the step
    if not np.all(np.isfinite(J)) or not np.all(np.isfinite(dy)):
        pytest.skip("the logits' derivatives are not finite: the patch embedding was not checked")
    if float(np.max(np.abs(wide - dy))) > EMBED_SMOOTH * max(float(np.max(np.abs(dy))), 1e-300):
        pytest.skip("the logits do not move smoothly at small steps (a part of forward computed in low precision, "
                    "as scores in bfloat16): the derivatives this test reads cannot be taken, so the patch embedding "
                    "was not checked")
    scale = max(float(np.max(np.abs(np.asarray(r.outputs[0], dtype=np.float64)))), 1e-12)
    rows = J.reshape(EMBED_IMAGES, out, N + 1, D)
    if float(np.max(np.abs(dy))) <= 1e-6 * scale or any(float(np.max(np.abs(rows[:, :, i]))) <= 1e-6 * scale
                                                       for i in range(1, N + 1)):
        pytest.skip("the first patch, or a row of the positional embedding, hardly moves the logits (positions added "
                    "after the blocks, say): the patch embedding was not checked")
    A, b = J.reshape(EMBED_IMAGES * out, (N + 1) * D), dy.reshape(-1)
    v = np.linalg.lstsq(A, b, rcond=None)[0]
    misfit = float(np.max(np.abs(A @ v - b))) / max(float(np.max(np.abs(b))), 1e-300)
    if misfit > EMBED_LINEAR:
        raise GradingFailure(
            f"{name} on {EMBED_IMAGES} random images: moving the first patch by the same small step changes the "
            "logits as no single change of the tokens does (read through the logits' derivatives along every row "
            f"of positional_embedding, the best one leaves {misfit:.2g} of the change unexplained): the patch "
            "embedding depends on the patch nonlinearly, while a linear projection moves the patch's token by the "
            f"same W d whatever the patch was.\nLikely mistake: {NONLINEAR_PATCH_EMBEDDING_HINT}.")
