"""Grading tests of `vit`, question vit: the encoder blocks a ViT builds (see _common.py for what the tests share).

What it is for: `num_encoder_blocks` blocks, each with weights of its own. What it is not: a test of what a block
computes (test_vit_blocks*.py) or of the rest of the model (test_vit_vit.py).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from checker.judging.block_count import describe, wrong_counts

BLOCKS_HINT = ("the model does not build num_encoder_blocks blocks: the number of blocks must be num_encoder_blocks "
               "itself, `nn.ModuleList([Block(...) for _ in range(num_encoder_blocks)])` (not range(1, n), n - 1, "
               "n + 1, 2 * n or a number of blocks fixed in the code)")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # a ViT whose blocks share one set of weights passes every other test
def test_vit_each_block_has_its_own_weights(sub, rng, seed):
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    one, three = (_vit(sub, seed, img, patch, D, h, out, n) for n in (1, 3))
    per_block = (three.n_params - one.n_params) / 2
    if per_block >= 4 * D * D:
        _vit_structure_earns_if_it_runs(sub, rng, seed)
        return
    what = (f"{_vit_name(img, patch, D, h, out, 3)} has {three.n_params} registered parameter values, "
            f"{_vit_name(img, patch, D, h, out, 1)} {one.n_params}")
    if per_block <= 0:
        raise GradingFailure(
            f"{what}: the two extra blocks add no weights of their own.\nLikely mistake: the blocks share one "
            "set of weights (`nn.ModuleList([Block()] * n)` or `nn.Sequential(*[block] * n)` repeat one module n "
            "times: build n modules, `nn.ModuleList([Block() for _ in range(n)])`), or num_encoder_blocks is "
            "ignored (a fixed number of blocks).")
    raise GradingFailure(
        f"{what}: each extra block adds {per_block:g}, fewer than the 4 * D * D = {4 * D * D} of its attention's "
        "Q, K, V and output projections.\nLikely mistake: part of each block is shared between the blocks, or "
        "kept outside nn.ModuleList.")


@pytest.mark.question("vit")
def test_vit_builds_num_encoder_blocks(sub, rng, seed):
    # Parameter counts cannot tell two blocks per num_encoder_blocks (range(2 * n)) from one of twice the size;
    # the parameters' names can (checker.judging.block_count): a list of blocks, `blocks.<i>.<rest>`, holds n
    # copies of one block for n = 0 .. 3. Where the names show no such list, the parameter counts are judged by
    # test_vit_each_block_has_its_own_weights.
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    try:
        models = _vits(sub, seed, img, patch, D, h, out, (0, 1, 2, 3))
    except GradingFailure:
        try:
            models = [None] + _vits(sub, seed, img, patch, D, h, out, (1, 2, 3))  # a ViT may refuse 0 blocks
        except GradingFailure as e:
            pytest.skip(f"judged by the other tests: the model cannot be built with 1 to 3 blocks: "
                        f"{e.message.splitlines()[0][:200]}")
    wrong = wrong_counts({n: (m.params if m is not None else None) for n, m in enumerate(models)}, large=D * D)
    if not wrong:
        _vit_structure_earns_if_it_runs(sub, rng, seed)
        return
    text = describe(wrong, lambda n: _vit_name(img, patch, D, h, out, n), "num_encoder_blocks")
    raise GradingFailure(f"{text}\nLikely mistake: {BLOCKS_HINT}.")


@pytest.mark.question("vit")
def test_vit_builds_six_blocks_by_default(sub, rng, seed):
    # The handout's signature: VisionTransformer(..., num_encoder_blocks=6). Built without the argument, the model
    # must have the parameters of one built with num_encoder_blocks=6 (whatever its layout); a model that refuses
    # to be built without it is judged by test_vit_output_shape (its first case leaves the argument out).
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    try:
        default = _vit(sub, seed, img, patch, D, h, out, None)
    except GradingFailure as e:
        if isinstance(e, StudentError) and type(e).__name__ in ("StudentTimeout", "WorkerCrashed"):
            raise
        pytest.skip(f"judged by test_vit_output_shape: the model cannot be built without num_encoder_blocks: "
                    f"{e.message.splitlines()[0][:200]}")
    six = _vit(sub, seed, img, patch, D, h, out, 6)
    if default.n_params == six.n_params:
        _vit_structure_earns_if_it_runs(sub, rng, seed)  # (a starter's stub builds no block either way)
        return
    others = {n: m.n_params for n, m in zip((4, 8, 12), _vits(sub, seed, img, patch, D, h, out, (4, 8, 12)))}
    same = [n for n, p in others.items() if p == default.n_params]
    raise GradingFailure(
        f"{_vit_name(img, patch, D, h, out, None)} has {default.n_params} registered parameter values, "
        f"{_vit_name(img, patch, D, h, out, 6)} {six.n_params}: built without num_encoder_blocks the model does not "
        f"have 6 blocks{f' (it has as many parameters as with num_encoder_blocks={same[0]})' if same else ''}.\n"
        "Likely mistake: the default in the signature is not the handout's: "
        "`def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6)`.")
