"""Grading tests of `vit`, question vit: each branch of an encoder block has a LayerNorm of its own (see _common.py
for what the tests share; test_vit_blocks.py holds the other block tests, whose mistakes this one leaves to them)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from . import test_vit_blocks as _blocks  # (a module, so that pytest collects none of its tests here)


SHARED_NORM_HINT = ("one LayerNorm serves both branches of the encoder block (`z = z + self.attn(self.norm1(z)); z = "
                    "z + self.mlp(self.norm1(z))`): its gain and bias are shared, so the attention and the MLP cannot "
                    "learn their own scales. The handout's block gives each branch its own: `self.norm1 = "
                    "nn.LayerNorm(hidden_dim)` before the attention and `self.norm2 = nn.LayerNorm(hidden_dim)` before "
                    "the MLP, `z = z + self.attn(self.norm1(z))`, then `z = z + self.mlp(self.norm2(z))`")


def _moves(m, name, values, x, base, rel, out, kind):
    """Whether setting the parameters `values` ({name: array}) moves the logits of `m` on `x` from `base`; the
    parameters are put back afterwards."""
    with explained():
        kept = {n: np.array(v, dtype=kind) for n, v in m.get_params(list(values)).items()}
    got = with_params_forward(m, {n: torch.from_numpy(np.asarray(v, dtype=kind)) for n, v in values.items()}, [x],
                              {n: torch.from_numpy(v) for n, v in kept.items()},
                              lambda r: check_shape(r.outputs[0], base.shape, f"{name} output"))
    return changed(got, base, float(np.max(np.abs(base))), rel)


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; one LayerNorm for both branches passes every other test
def test_vit_each_branch_has_its_own_layernorm(sub, close, rng, seed):
    # Found by name, whatever the layout: the parameters the second block of a two-block model adds (those a one-block
    # model lacks), among them the LayerNorm gains (shape (D,), all ones as nn.LayerNorm starts them) and the MLP's
    # two layers (shapes (m, D) and (D, m), m > D, as test_vit_mlp_is_not_linear finds them). With the MLP's two
    # weight matrices set to zero its output no longer depends on its input, so the gain of the LayerNorm before the
    # MLP stops mattering, while the one before the attention still moves the logits. A block with a LayerNorm of
    # its own before the MLP has a gain that moves the logits with the MLP on and not with it silenced; a block whose
    # one LayerNorm feeds both branches has none: its gain moves the logits either way.
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    name = _vit_name(img, patch, D, h, out, 2)
    x = randn(rng, (2, *img), "float64")
    m, r, rel = _vit_precise(sub, seed, img, patch, D, h, out, 2, [x])
    x = x if rel == PRECISE_REL else x.float()
    kind = np.float64 if rel == PRECISE_REL else np.float32
    base = check_shape(r.outputs[0], (2, out), f"{name} output")
    one = _vit(sub, seed + 1, img, patch, D, h, out, 1)
    shapes = {p["name"]: tuple(p["shape"]) for p in m.params}
    extra = [n for n in shapes if n not in {p["name"] for p in one.params}]
    if not extra:
        pytest.skip("the parameters of a one-block and a two-block model do not line up by name: the block's "
                    "LayerNorms were not checked")
    with explained():
        flat = m.get_params([n for n in extra if shapes[n] == (D,)])
    gains = [n for n in extra if n in flat and np.all(np.asarray(flat[n]) == 1)]
    pairs = [(a, b) for a in extra for b in extra
             if a != b and len(shapes[a]) == 2 and shapes[a][1] == D and shapes[a][0] > D and shapes[b] == (D, shapes[a][0])]
    if not gains or not pairs:
        pytest.skip("the second block has no LayerNorm gain the grader can tell (a parameter of shape (D,) that starts "
                    "at one) or no MLP of two layers (shapes (m, D) and (D, m), m > D): the block's LayerNorms were "
                    "not checked")
    noise = np.random.default_rng(seed)
    moved = {g: noise.uniform(0.5, 1.5, D) for g in gains}
    used = [g for g in gains if _moves(m, name, {g: moved[g]}, x, base, rel, out, kind)]
    if not used:
        pytest.skip("no LayerNorm gain of the second block moves the logits: the block's LayerNorms were not checked")
    for a, b in pairs:
        with explained():
            kept = {n: np.array(v, dtype=kind) for n, v in m.get_params([a, b]).items()}
        silent = {n: torch.zeros(shapes[n], dtype=torch.float64 if kind is np.float64 else torch.float32)
                  for n in (a, b)}
        with explained():
            m.set_params(silent)
        try:
            quiet = check_shape(forward(m, [x]).outputs[0], (2, out), f"{name} output")
            if any(not _moves(m, name, {g: moved[g]}, x, quiet, rel, out, kind) for g in used):
                return  # a gain that reaches the MLP only: a LayerNorm of the MLP's own
        finally:
            with explained():
                m.set_params({n: torch.from_numpy(v) for n, v in kept.items()})
    # the same signature as an MLP that reads Z unnormalized, or a post-norm block: their own tests judge them
    if _blocks._zeroed_block(sub, close, rng, seed, lambda *_: None)[0] != "passed":
        pytest.skip("judged by test_vit_blocks_are_pre_norm_residual, not here: the block is not the handout's "
                    "pre-norm residual block, so which LayerNorm feeds which branch cannot be seen")
    N = (img[1] // patch) * (img[2] // patch)
    shifts = rng.uniform(1.0, 3.0, N) * rng.choice([-1.0, 1.0], N)
    two = _vit(sub, seed, img, patch, D, h, out, 2)
    if _blocks._shift_blind(two, name, out, randn(rng, (1, *img)), shifts, D) is not True:
        pytest.skip("judged by test_vit_mlp_branch_reads_a_normalized_input and test_vit_attention_branch_reads_a_"
                    "normalized_input, not here: a branch reads the residual stream unnormalized")
    raise GradingFailure(
        f"{name}: the LayerNorm gains of its second block ({', '.join(used[:4])}) each move the logits also with the "
        f"block's MLP silenced (its two layers, {', '.join(pairs[0])}, set to zero), and none moves them only with "
        f"the MLP on: no LayerNorm is the MLP's own, the attention's LayerNorm normalizes the MLP's input too."
        f"\nLikely mistake: {SHARED_NORM_HINT}.")
