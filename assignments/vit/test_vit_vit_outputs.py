"""Grading tests of `vit`, question vit: what the ViT's forward gives back (see _common.py for what the tests share).

What it is for: two properties of `VisionTransformer.forward` as a whole that the handout states and no other test
reads off the logits themselves: they are logits (a softmax at the end, probabilities, passes every test of shape,
dependence and wiring: it is a function of the class token), and the model is deterministic in eval() mode (the
other tests' determinism checks run one image under two seeds; a stochastic depth drawn per image, kept or dropped
with probability 0.9, is kept under both there, and its 1/0.9 rescaling then passes for another attention).

What it is not: the tests of what the logits are computed from (test_vit_vit.py, test_vit_blocks*.py). The helper
`random_in_eval` is shared with test_vit_blocks_attention.py, whose failure it keeps from blaming the attention.
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers

IMG, PATCH, D, H, OUT, BLOCKS = (3, 8, 8), 4, 16, 2, 10, 2
EVAL_BATCH = 16              # images per forward: a per-image random draw shows on some of them
EVAL_SEEDS = (0, 1, 2, 3)    # the worker's random seeds of the forwards compared

RANDOM_IN_EVAL_TEXT = ("forward gives different outputs for the same input in eval() mode: dropout/stochastic depth "
                       "must follow self.training")
STOCHASTIC_DEPTH_HINT = ("a random draw in forward that ignores the mode: stochastic depth (drop path) that keeps or "
                         "drops each image's branch with `torch.rand(...)` in eval() mode too (and rescales it by "
                         "1/keep there), dropout called as `F.dropout(x, p)` (on by default) or made inside forward; "
                         "apply them only `if self.training` (timm's DropPath, nn.Dropout built in __init__, "
                         "`F.dropout(x, p, training=self.training)`): in eval() mode the model is a fixed function")
PROBABILITIES_HINT = ("return the classifier's output itself, the logits: F.cross_entropy (the loss) applies the "
                      "softmax, and a softmax at the end of forward makes training work on probabilities (a second "
                      "softmax inside the loss); predictions are `logits.argmax(-1)` either way")


def _images(seed, img, n):
    """`n` random images drawn from their own generator (a test's `rng` is left as it was)."""
    return randn(np.random.default_rng([int(seed) & 0xFFFFFFFF, 6151]), (n, *img))


def _eval_runs(sub, seed, img, patch, D_, h, out, blocks):
    """(name, [logits of the same batch of images under each of EVAL_SEEDS]): the model and its forwards in one
    round trip."""
    x = _images(seed, img, EVAL_BATCH)
    with sub.together(chain=True) as t:
        made = _vit_asked(t, sub, seed, img, patch, D_, h, out, blocks)
        runs = [forward_asked(t, made, [x], seed=s, plain=k > 0) for k, s in enumerate(EVAL_SEEDS)]
    made.get()
    name = _vit_name(img, patch, D_, h, out, blocks)
    return name, [check_shape(r.get().outputs[0], (EVAL_BATCH, out), f"{name} output") for r in runs]


def random_in_eval(sub, seed, img=IMG, patch=PATCH, D_=D, h=H, out=OUT, blocks=BLOCKS):
    """Whether this ViT gives different logits for the same batch of images under different random seeds in eval()
    mode; False where it cannot be built or run (the tests of shape charge that)."""
    try:
        _, outs = _eval_runs(sub, seed, img, patch, D_, h, out, blocks)
    except GradingFailure:
        return False
    scale = max(float(np.max(np.abs(o))) for o in outs)
    return any(changed(o, outs[0], scale) for o in outs[1:])


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # "the module is deterministic in eval() mode" (the handout): the grader's premise
def test_vit_deterministic_in_eval(sub, rng, seed):
    # The worker runs every forward in eval() mode, each under the random seed it is given. A batch of 16 images
    # under four seeds must give the same logits each time: dropout and stochastic depth follow self.training. A
    # draw per image (drop path with probability 0.1 in each of two blocks) leaves the 16 images' 32 draws the same
    # under two seeds far too rarely to hide; the other tests' checks (one image, two seeds) miss it often.
    name, outs = _eval_runs(sub, seed, IMG, PATCH, D, H, OUT, BLOCKS)
    scale = max(float(np.max(np.abs(o))) for o in outs)
    differ = [s for s, o in zip(EVAL_SEEDS[1:], outs[1:]) if changed(o, outs[0], scale)]
    if not differ:
        return
    rows = sorted({int(i) for o in outs[1:] for i in np.nonzero(np.max(np.abs(o - outs[0]), axis=1)
                                                                 > 1e-4 * max(scale, 1e-6))[0]})
    raise GradingFailure(
        f"{name} in eval() mode, the same {EVAL_BATCH} images under random seeds {list(EVAL_SEEDS)}: "
        f"{RANDOM_IN_EVAL_TEXT}. The logits of images {rows[:8]}{' ...' if len(rows) > 8 else ''} changed with "
        f"the seed (by up to {max(float(np.max(np.abs(o - outs[0]))) for o in outs[1:]):.3g}).\n"
        f"Likely mistake: {STOCHASTIC_DEPTH_HINT}.")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the loss applies the softmax: probabilities out of forward train badly
def test_vit_returns_logits_not_probabilities(sub, rng, seed):
    # Logits are any real numbers; a freshly built model's never are all >= 0 with every row summing to 1 (out_dim
    # = 10 classes on 6 random images). Rows that do are a softmax (or another normalization) at the end of forward.
    B = 6
    m, ran = _vit_then_forward(sub, rng, seed, IMG, PATCH, D, H, OUT, BLOCKS, lambda: [randn(rng, (B, *IMG))])
    name = _vit_name(IMG, PATCH, D, H, OUT, BLOCKS)
    y = check_shape(ran.get().outputs[0], (B, OUT), f"{name} output")
    if y.min() >= -1e-6 and np.allclose(y.sum(axis=1), 1.0, rtol=0, atol=1e-4):
        raise GradingFailure(
            f"{name} on {B} random images: every row of the output is >= 0 and sums to 1 (sums "
            f"{np.round(y.sum(axis=1), 6).tolist()}): forward returns probabilities, not the (B, out_dim) logits "
            f"the handout asks for.\nLikely mistake: {PROBABILITIES_HINT}.")
