"""Grading tests of `vit`, question vit: the encoder block's wiring, one branch at a time (see _common.py for what
the tests share; test_vit_blocks.py holds the other block tests, whose mistakes this one leaves to them)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from . import test_vit_blocks as _blocks  # (a module, so that pytest collects none of its tests here)


ATTENTION_NOT_ADDED_HINT = ("the attention's output never enters the residual stream: the MLP branch is added to the "
                            "block's input instead of the stream after the attention (`y = z + self.attn(self.norm1(z)); "
                            "return z + self.mlp(self.norm2(y))`), so the attention reaches the output only through "
                            "the MLP. The handout's block updates one stream twice: `z = z + self.attn(self.norm1(z))`, "
                            "then `z = z + self.mlp(self.norm2(z))` on that new z, and returns it")
MLP_READS_BRANCH_HINT = ("the MLP reads the attention's output alone, not the stream after the attention: `a = "
                         "self.attn(self.norm1(z)); z = z + a + self.mlp(self.norm2(a))`. The handout's MLP reads LN "
                         "of the whole updated stream, Z + MHSA(LN(Z)): `z = z + a`, then `z = z + "
                         "self.mlp(self.norm2(z))`")
BLOCK_WIRING_HINT = ("the encoder block wires its two branches otherwise than `Z = Z + MHSA(LN(Z)); Z = Z + "
                     "MLP(LN(Z))`: each branch must read LN of the stream as it is at that point and add its output "
                     "to that same stream (`z = z + self.attn(self.norm1(z))`, then `z = z + self.mlp(self.norm2(z))`, "
                     "`return z`); check which tensor each branch reads and which one each result is added to")


def _second_block_by_number(s1, s2):
    """[(name in block 0, the same parameter in block 1)] of a two-block model, from the shapes ({name: shape}) of the
    models with one (`s1`) and two (`s2`) blocks: each parameter the second block adds, with the number a part of its
    name ends with (`blocks.1.attn.qkv.weight`, torchvision's `encoder_layer_1`) counted down to the one-block
    model's name of the same shape. None when they do not line up so (see _block_names for the general case)."""
    extra = sorted(set(s2) - set(s1))
    pairs = []
    for name in extra:
        parts = name.split(".")
        for i, part in enumerate(parts):
            if not part.endswith("1") or part[:-1][-1:].isdigit():  # `1`, `layer_1`, `h1`; never `11`
                continue
            lower = ".".join(parts[:i] + [part[:-1] + "0"] + parts[i + 1:])
            if s1.get(lower) == s2[name] and s2.get(lower) == s2[name]:
                pairs.append((lower, name))
                break
        else:
            return None
    if not pairs or len({a for a, _ in pairs}) != len(pairs):
        return None
    return pairs


def _mlp_pair(shapes, D):
    """(a, b, m): the two matrices of a block's widening MLP among `shapes` ({name: shape} of one block), shapes
    (m, D) and (D, m), m > D (nn.Linear's fc1 and fc2, or a raw x @ W layout's W2 and W1); where several pairs fit
    (an attention's output projection (D, m) beside the MLP's first layer), the one whose names share the longest
    dotted prefix (`mlp.fc1`, `mlp.fc2`). None when there is none, or no one pair is the closest."""
    pairs = [(a, b) for a, sa in shapes.items() for b, sb in shapes.items()
             if a != b and len(sa) == 2 and sa[1] == D and sa[0] > D and sb == (D, sa[0])]

    def shared(pair):
        n = 0
        for x, y in zip(*(p.split(".") for p in pair)):
            if x != y:
                break
            n += 1
        return n

    if not pairs:
        return None
    best = max(shared(p) for p in pairs)
    closest = [p for p in pairs if shared(p) == best]
    if len(closest) != 1:
        return None
    a, b = closest[0]
    return a, b, shapes[a][0]


def _wiring_plan(s1, s2, D, seed, third=None):
    """What test_vit_block_is_wired_as_the_handout sets, from the shapes ({name: shape}) of the models with one
    (`s1`) and two (`s2`) blocks (and, only where their blocks are not numbered, `third()`: the three-block model's):
    ("skipped", why) or ("planned", {"steps": {config: {name: float32 tensor}}, "mlp": (a, b)}), each configuration's
    values set from the one before it in the order Q, P, R, S, T (see the test). Pure: no worker."""
    pairs = _second_block_by_number(s1, s2)
    if pairs is None and set(s2) - set(s1) and third is not None:  # keyed otherwise (letters, words): by order
        s3 = third()
        blocks = _blocks._blocks_by_number([s1, s2, s3]) or _blocks._blocks_by_order([s1, s2, s3])
        if blocks and set(blocks[1]) == set(s2) - set(s1) and all(s2.get(n) == s3[n] for n in blocks[0] + blocks[1]):
            pairs = list(zip(blocks[0], blocks[1]))
    if pairs is None:
        return "skipped", ("the parameters of the models with one and two blocks do not line up block by block (blocks "
                           "sharing weights, stacked in one tensor, or each block more than one entry of the list that holds them, as `Residual(PreNorm(...))` pairs in one nn.Sequential)")
    first = {a: s2[a] for a, _ in pairs}
    mlp = _mlp_pair(first, D)
    if mlp is None:
        return "skipped", ("no one pair of parameters of shapes (m, D) and (D, m), m > D, in an encoder block: the "
                           "MLP's two layers were not found")
    a, b, m = mlp
    # The grader's weights, the same in both blocks (whatever the model's init: a zero-init or a LayerScale of 1e-5
    # would hide a branch). Every parameter of D values or one value (LayerNorm weights and biases, the biases the
    # branches end with, LayerScale gains) is 1: a constant vector c * (1, ..., 1) is what a silenced branch then
    # adds, and a LayerNorm does not see it. A vector of the MLP's hidden width (its first bias) is not silenced with
    # either branch (zero in T only); every other parameter (the attention's) is zero where the attention is silenced.
    noise = np.random.default_rng(seed)
    role, on, flat = {}, {}, {}
    for n, shape in sorted(first.items()):
        size = int(np.prod(shape)) if shape else 1
        if n in (a, b):
            role[n], on[n] = "mlp", noise.standard_normal(shape) / np.sqrt(D)
            # (for T: zero sums along the D axis, so that the MLP of a constant vector adds its last bias alone)
            flat[n] = on[n] - on[n].mean(axis=1 if n == a else 0, keepdims=True)
        elif size in (1, D):
            role[n], on[n] = "one", np.ones(shape)
        elif size == m and sum(d > 1 for d in shape) <= 1:
            role[n], on[n], flat[n] = "hidden", 0.1 * noise.standard_normal(shape), np.zeros(shape)
        else:
            fan = size / max(shape) if len(shape) >= 2 else 100.0
            role[n], on[n] = "attention", noise.standard_normal(shape) / np.sqrt(fan)
    second = dict(pairs)

    def state(block, attention, mlp_on, only=("mlp", "one", "hidden", "attention"), values=on):
        """{name: value} of the parameters of `block` (0 or 1) of the roles `only`, with its attention and MLP on
        (`values`) or silenced (zero)."""
        chosen = {}
        for n in first:
            if role[n] not in only:
                continue
            live = role[n] in ("one", "hidden") or (mlp_on if role[n] == "mlp" else attention)
            v = values.get(n, on[n]) if live else np.zeros(first[n])
            chosen[n if block == 0 else second[n]] = torch.from_numpy(v.astype(np.float32))
        return chosen

    # Q the handout's block in block 0, block 1 silenced; P block 0's attention alone in block 0, its MLP alone in
    # block 1; R block 0's attention alone, block 1 silenced; S both blocks silenced; T block 1's MLP alone (with the
    # `flat` weights). Only what changes from the configuration before is set.
    steps = {"Q": {**state(0, True, True), **state(1, False, False)},
             "P": {**state(0, True, False, ["mlp"]), **state(1, False, True, ["mlp"])},
             "R": state(1, False, False, ["mlp"]),
             "S": state(0, False, False, ["attention"]),
             "T": state(1, False, True, ["mlp", "hidden"], flat)}
    return "planned", {"steps": steps, "mlp": (a, b)}


def _wired_block(sub, rng, seed):
    """test_vit_block_is_wired_as_the_handout's model: ("skipped", why) or ("ran", run) where run(keys) gives the
    logits {key: (2, out) array} of the configurations named by `keys` (see the test), asked in one round trip, and
    run.what describes the comparison."""
    # D, out and N + 1 = 5 pairwise different; a small D keeps the weights the configurations send within one round trip
    img, patch, D, h, out = (3, 8, 8), 4, 8, 2, 6
    one, two = _vits(sub, seed, img, patch, D, h, out, (1, 2))  # (one round trip)
    s1 = {p["name"]: tuple(p["shape"]) for p in one.params}
    s2 = {p["name"]: tuple(p["shape"]) for p in two.params}
    planned = _wiring_plan(s1, s2, D, seed, third=lambda: {p["name"]: tuple(p["shape"]) for p in
                                                           _vit(sub, seed, img, patch, D, h, out, 3).params})
    if planned[0] == "skipped":
        return planned
    steps, (a, b) = planned[1]["steps"], planned[1]["mlp"]
    x = randn(rng, (2, *img))
    name = _vit_name(img, patch, D, h, out, 2)

    def run(keys):
        with sub.together(chain=True) as t:
            asked = [(key, t.set_params(two, steps[key]), t.forward(two, [x])) for key in keys]
        logits = {}
        with naming_globals(sub, getattr(two, "sizes", {}), two.cls), explained():
            for key, setting, result in asked:
                setting.get()
                logits[key] = check_shape(result.get().outputs[0], (2, out), f"{name} output")
        return logits

    run.what = (f"{name}, with the grader's weights in its blocks: block 0's attention in block 0 (its MLP's layers "
                f"`{a}` and `{b}` set to zero) and block 0's MLP in block 1 (every other weight of block 1 set to "
                "zero), against both branches in block 0 and block 1 silenced; in the handout's block `Z = Z + "
                "MHSA(LN(Z)); Z = Z + MLP(LN(Z))` the MLP reads the same stream either way, so the logits must be equal")
    return "ran", run


def _judged_elsewhere(sub, close, rng, seed):
    """Why a block that fails the wiring test is charged by another test of the blocks, whose message names its
    mistake (no residual, post-norm, unchained blocks, a branch that does not read LN(Z), a parallel block), or None."""
    try:
        outcome, said = _blocks._zeroed_block(sub, close, rng, seed, lambda *_: None)
    except GradingFailure:
        outcome, said = "failed", None
    if outcome != "passed":
        return ("judged by test_vit_blocks_are_pre_norm_residual, not here" if outcome == "failed" else
                f"judged by the other tests, not here: {said}")
    for test, args in ((_blocks.test_vit_mlp_branch_reads_a_normalized_input, (sub, rng, seed)),
                       (_blocks.test_vit_attention_branch_reads_a_normalized_input, (sub, close, rng, seed)),
                       (_blocks.test_vit_mlp_reads_the_attention_output, (sub, rng, seed))):
        try:
            test(*args)
        except GradingFailure:
            return f"judged by {test.__name__}, not here"
        except pytest.skip.Exception:
            pass
    return None


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # the handout's block; a block that drops the attention from the stream passes every other test
def test_vit_block_is_wired_as_the_handout(sub, close, rng, seed):
    # The handout's block, Y = Z + A(Z), then Y + M(Y) (A = MHSA(LN(.)), M = MLP(LN(.))), can be run one branch per
    # block: block 0 with its MLP silenced gives Y, block 1 with its attention silenced gives Y + M(Y): the logits of
    # both branches in block 0 and block 1 silenced. A branch is silenced by setting weights to zero: the MLP's two
    # layers (found by shape, as test_vit_mlp_is_not_linear finds them), or every other weight of the block (only
    # the attention is left). What a silenced branch still adds (the bias it ends with, times a LayerScale gain) is
    # made a constant vector c * (1, ..., 1) by setting every parameter of D values to 1, and a LayerNorm does not
    # see it; so the equality holds in every layout (fused or per-head projections, nn.MultiheadAttention,
    # nn.TransformerEncoderLayer(norm_first=True), LayerScale, extra LayerNorms on a branch), with whatever readout.
    # Wired otherwise it fails: `y = z + attn(norm1(z)); return z + mlp(norm2(y))` loses the attention when the MLP
    # is silenced; `a = attn(norm1(z)); return z + a + mlp(norm2(a))` feeds block 1's MLP a constant (its
    # attention silenced). The zeroed-block test sees neither (a block of zeros adds nothing in both), nor does
    # test_vit_mlp_reads_the_attention_output (that MLP does read the image, through the attention's output).
    # Mistakes another block test names (no residual, post-norm, a branch that does not read LN(Z), a parallel
    # block, unchained blocks) fail here too; they are left to that test.
    ran = _wired_block(sub, rng, seed)
    if ran[0] == "skipped":
        pytest.skip(f"the block's wiring was not checked: {ran[1]}")
    run = ran[1]
    logits = run(["Q", "P"])
    try:
        close(logits["P"], logits["Q"], dtype="float32", what=run.what)
    except GradingFailure as e:
        elsewhere = _judged_elsewhere(sub, close, rng, seed)
        if elsewhere:
            pytest.skip(f"{elsewhere}: a block that fails that test fails this one too")
        try:
            more = run(["R", "S", "T"])  # from P, in this order
        except GradingFailure:  # (the model is gone with a worker that a test above restarted: no diagnosis)
            more = None
        seen, hint = _wiring_diagnosis({**logits, **(more or {})})
        raise e.retold(f"{e.message}\n{seen + chr(10) if seen else ''}Likely mistake: {hint}.") from None


def _wiring_diagnosis(logits):
    """(what was seen, the likely mistake) of a block that failed test_vit_block_is_wired_as_the_handout, from the
    logits of its configurations (Q, and R, S, T where they could be run)."""
    scale = float(np.max(np.abs(logits["Q"])))
    if not all(k in logits for k in "RST"):
        return "", BLOCK_WIRING_HINT
    if not changed(logits["R"], logits["S"], scale):
        return ("With its MLP silenced, block 0's attention changed nothing: the logits were those of the model with "
                "both branches of both blocks silenced."), ATTENTION_NOT_ADDED_HINT
    if not changed(logits["T"], logits["S"], scale):
        return ("With its attention silenced (block 0 silenced too), block 1's MLP changed nothing: what it read was "
                "the same for every token and image, not the stream Z."), MLP_READS_BRANCH_HINT
    return "", BLOCK_WIRING_HINT
