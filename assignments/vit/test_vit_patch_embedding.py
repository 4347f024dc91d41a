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

    def along(t, row, k=None, u=None):
        """The two asks of a central difference of the logits along row `row` of the positional embedding: its
        feature k, or the direction u over its D features."""
        pair = []
        for sign in (1.0, -1.0):
            v = pe.copy()
            if k is not None:
                v[..., row, k] += sign * EMBED_STEP
            else:
                v[..., row, :] += sign * EMBED_STEP * u
            pair.append((t.set_params(m, {key: torch.from_numpy(v)}), forward_asked(t, m, [xs])))
        return pair

    def slope(pair):
        got = []
        for put, ran in pair:
            with explained():
                put.get()
            got.append(check_shape(ran.get().outputs[0], (EMBED_IMAGES, out), f"{name} output").astype(np.float64))
        return (got[0] - got[1]) / (2 * EMBED_STEP)                                         # (images, out)

    # First the handout's order alone (the class token at row 0, the first patch at row 1): every feature of row 1,
    # one random direction of each other patch's row (do they move the logits at all). Where row 1 explains the
    # patch's move, so would every row (more columns, a smaller residual): the test passes here. Otherwise every
    # row's every feature is read, as the verdict has always been read.
    others = [(row, rng.standard_normal(D)) for row in range(2, N + 1)]
    with m.sub.together(chain=True) as t:
        first = [along(t, 1, k=k) for k in range(D)]
        probes = [along(t, row, u=u / np.linalg.norm(u)) for row, u in others]
        back = t.set_params(m, {key: torch.from_numpy(pe)})
        image = forward_asked(t, m, [torch.cat([xs + s * EMBED_STEP * d for s in (1, -1, 2, -2)])])
    J1 = np.stack([slope(pair) for pair in first], axis=-1)                                 # (images, out, D)
    moves = [slope(pair) for pair in probes]
    with explained():
        back.get()
    moved = check_shape(image.get().outputs[0], (4 * EMBED_IMAGES, out), f"{name} output").astype(np.float64)
    moved = moved.reshape(4, EMBED_IMAGES, out)
    dy = (moved[0] - moved[1]) / (2 * EMBED_STEP)                                          # (images, out)
    wide = (moved[2] - moved[3]) / (4 * EMBED_STEP)  # the same derivative over twice the step
    if not np.all(np.isfinite(J1)) or not np.all(np.isfinite(dy)):
        pytest.skip("the logits' derivatives are not finite: the patch embedding was not checked")
    if float(np.max(np.abs(wide - dy))) > EMBED_SMOOTH * max(float(np.max(np.abs(dy))), 1e-300):
        pytest.skip("the logits do not move smoothly at small steps (a part of forward computed in low precision, "
                    "as scores in bfloat16): the derivatives this test reads cannot be taken, so the patch embedding "
                    "was not checked")
    scale = max(float(np.max(np.abs(np.asarray(r.outputs[0], dtype=np.float64)))), 1e-12)
    if float(np.max(np.abs(dy))) <= 1e-6 * scale or any(float(np.max(np.abs(g))) <= 1e-6 * scale
                                                       for g in [J1, *moves]):
        pytest.skip("the first patch, or a row of the positional embedding, hardly moves the logits (positions added "
                    "after the blocks, say): the patch embedding was not checked")
    if _misfit(J1.reshape(EMBED_IMAGES * out, D), dy.reshape(-1)) <= EMBED_LINEAR:
        return
    with m.sub.together(chain=True) as t:
        rest = {(row, k): along(t, row, k=k) for row in range(N + 1) if row != 1 for k in range(D)}
        back = t.set_params(m, {key: torch.from_numpy(pe)})
    columns = {(1, k): J1[..., k] for k in range(D)}
    columns.update({rk: slope(pair) for rk, pair in rest.items()})
    with explained():
        back.get()
    J = np.stack([columns[(row, k)] for row in range(N + 1) for k in range(D)], axis=-1)
    if not np.all(np.isfinite(J)):
        pytest.skip("the logits' derivatives are not finite: the patch embedding was not checked")
    misfit = _misfit(J.reshape(EMBED_IMAGES * out, (N + 1) * D), dy.reshape(-1))
    if misfit > EMBED_LINEAR:
        raise GradingFailure(
            f"{name} on {EMBED_IMAGES} random images: moving the first patch by the same small step changes the "
            "logits as no single change of the tokens does (read through the logits' derivatives along every row "
            f"of positional_embedding, the best one leaves {misfit:.2g} of the change unexplained): the patch "
            "embedding depends on the patch nonlinearly, while a linear projection moves the patch's token by the "
            f"same W d whatever the patch was.\nLikely mistake: {NONLINEAR_PATCH_EMBEDDING_HINT}.")


def _misfit(A, b):
    """What the best single change of the tokens leaves unexplained of b, relative to b's largest entry."""
    v = np.linalg.lstsq(A, b, rcond=None)[0]
    return float(np.max(np.abs(A @ v - b))) / max(float(np.max(np.abs(b))), 1e-300)
