"""Grading tests of `vit`, question vit: the encoder blocks (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._determinism import *  # noqa: F401,F403 - eval mode is deterministic
from ._positions import POSITIONS_MULTIPLIED_HINT, positions_multiplied


PRE_NORM_HINT = ("an encoder block that is not `Z = Z + MHSA(LN(Z)); Z = Z + MLP(LN(Z))`: a missing residual "
                 "connection (`Z = MHSA(LN(Z))`), a post-norm block (`Z = LN(Z + MHSA(Z))`, the original "
                 "Transformer's order, or nn.TransformerEncoderLayer without norm_first=True), or a block that "
                 "transforms Z outside its two residual branches")


POSITIONS_IN_BLOCKS_HINT = ("the positional embedding is added again inside the encoder blocks (`z = block(z + "
                            "self.positional_embedding)`, or in the block's forward): a block whose weights are all "
                            "zero still adds it, and with positional_embedding set to zero the zeroed block adds "
                            "nothing, as a pre-norm residual block must. Add it once, to the tokens before the "
                            "first block")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; every other test passes without residuals or with post-norm
def test_vit_blocks_are_pre_norm_residual(sub, close, rng, seed, note):
    # Set every parameter of the second encoder block to zero: in a pre-norm block with residual connections
    # both branches then add exactly zero (LN(Z) is 0, so MHSA and the MLP give 0), and the two-block model must
    # give the logits of the same model with one block. The block's parameters are found by name: those a
    # two-block model has and a one-block model lacks. No parameter name or layout is assumed.
    outcome, said = _zeroed_block(sub, close, rng, seed, note)
    if outcome == "skipped":
        pytest.skip(said)
    if outcome == "failed":
        raise said


def _zeroed_block(sub, close, rng, seed, note):
    """test_vit_blocks_are_pre_norm_residual's check: ("passed", None), ("skipped", why) or ("failed", the GradingFailure)."""
    D, h, out = 16, 2, 10
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    with sub.together(chain=True) as t:  # both asked whatever the first gives (it raises): one round trip
        asks = [_vit_asked(t, sub, seed, img, patch, D, h, out, 2), _vit_asked(t, sub, seed + 1, img, patch, D, h, out, 1)]
    two, one = (a.get() for a in asks)
    shapes_two = {p["name"]: tuple(p["shape"]) for p in two.params}
    shapes_one = {p["name"]: tuple(p["shape"]) for p in one.params}
    extra = sorted(set(shapes_two) - set(shapes_one))
    if not extra or any(shapes_two.get(n) != s for n, s in shapes_one.items()):
        return "skipped", ("the parameters of a one-block and a two-block model do not line up by name "
                           "(blocks sharing weights, stacked in one tensor, or each block more than one entry of the list that holds them, as `Residual(PreNorm(...))` pairs in one nn.Sequential): the block structure was not checked")
    with explained():
        shared = two.get_params(sorted(shapes_one))
        with sub.together(chain=True) as t:
            puts = [t.set_params(one, {n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in shared.items()}),
                    t.set_params(two, {n: torch.zeros(shapes_two[n]) for n in extra})]
        for put in puts:
            put.get()
    x = randn(rng, (2, *img))
    name = _vit_name(img, patch, D, h, out, 2)
    check_deterministic_asked(two, x, name)
    want = check_shape(forward(one, [x]).outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} output")
    got = check_shape(forward(two, [x]).outputs[0], (2, out), f"{name} output")
    try:
        close(got, want, dtype="float32",
              what=f"{name} with every parameter of its second block ({', '.join(extra[:4])}"
                   f"{', ...' if len(extra) > 4 else ''}) set to zero, against the same model with one block (a "
                   "pre-norm residual block whose weights are all zero adds nothing, so the logits must be equal)")
    except GradingFailure as e:
        # the check holds only if the registered parameters are all the weights: a model with layers in a
        # plain Python list computes another function with the same parameters (the registration test says so)
        again = _vit(sub, seed + 2, img, patch, D, h, out, 1)
        with explained():
            again.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in shared.items()})
        same = check_shape(forward(again, [x]).outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} output")
        if not np.allclose(same, want, rtol=1e-4, atol=1e-5):
            return "skipped", ("two models with the same registered parameters give different logits, so some "
                               "weights are not registered parameters (see the parameter test): the block structure "
                               "was not checked")
        if _unchained_block(sub, rng, seed) is not None:
            return "skipped", ("judged by test_vit_blocks_are_chained, not here: a block's weights do not reach the "
                               "logits, so a block's own structure cannot be seen through them")
        N = (img[1] // (patch if isinstance(patch, int) else patch[0])) * \
            (img[2] // (patch if isinstance(patch, int) else patch[1]))
        hint = POSITIONS_IN_BLOCKS_HINT if _positions_explain(one, two, N, D, x, out) else PRE_NORM_HINT
        return "failed", e.retold(f"{e.message}\nLikely mistake: {hint}.")
    return "passed", None


def _positions_explain(one, two, N, D, x, out):
    """With positional_embedding set to zero in both models, do the one-block model and the two-block model
    whose second block is zero give the same logits? Then that block's only effect came through the
    positional embedding: it is added inside the blocks. False when the models have no such parameter."""
    try:
        for model in (one, two):
            pe, shape, _ = _positional_param(model, N, D)
            if pe is None:
                return False
            with explained():
                model.set_params({pe: torch.zeros(shape)})
        a, b = (check_shape(model.forward([x]).outputs[0], (x.shape[0], out), "output") for model in (one, two))
    except GradingFailure:
        return False
    return np.allclose(b, a, rtol=1e-4, atol=1e-5)


def _block_names(sub, seed, img, patch, D, h, out):
    """[[names of block 0], [block 1], [block 2]] of a three-block model, found from the models with 1, 2
    and 3 blocks: the parameters the third block adds, and the same names with their block number (a
    whole dotted part, `blocks.2.attn.qkv.weight`, or the number a part ends with, torchvision's
    `encoder.layers.encoder_layer_2.ln_1.weight`) counted down, or, where no number tells them, the part in
    which they differ in the order the model lists them (`_blocks_by_order`). None when they do not line up
    so."""
    with sub.together(chain=True) as t:  # the three asked one after the other: one round trip
        asks = [_vit_asked(t, sub, seed, img, patch, D, h, out, n) for n in (1, 2, 3)]
    shapes = [{p["name"]: tuple(p["shape"]) for p in a.get().params} for a in asks]
    return _blocks_by_number(shapes) or _blocks_by_order(shapes)


def _blocks_by_number(shapes):
    """_block_names from the number in a name's part (see there); None when the names have none."""
    last = sorted(set(shapes[2]) - set(shapes[1]))
    blocks = [[], [], last]
    for name in last:
        parts = name.split(".")
        for i, part in enumerate(parts):
            if not part.endswith("2") or part[:-1][-1:].isdigit():  # `2`, `layer_2`, `h2`; never `12`
                continue
            lower = [".".join(parts[:i] + [part[:-1] + str(k)] + parts[i + 1:]) for k in (0, 1)]
            if shapes[0].get(lower[0]) == shapes[2][name] and shapes[1].get(lower[1]) == shapes[2][name] \
                    and lower[1] not in shapes[0]:
                blocks[0].append(lower[0])
                blocks[1].append(lower[1])
                break
        else:
            return None
    return blocks if last else None


def _blocks_by_order(shapes):
    """_block_names where the blocks are keyed by other names than numbers (an nn.ModuleDict of 'ba', 'bb', 'bc'
    or 'first', 'second', 'third'): the one dotted part in which each name of the third block differs from two
    other names of the same shape, its three values ordered as the model lists its parameters (the order the
    blocks were made in); the first block's names must be the one-block model's, the second's new in the
    two-block model. None when they do not line up so."""
    names = list(shapes[2])  # the order the three-block model lists them
    last = [n for n in names if n not in shapes[1]]
    if not last:
        return None
    split = [n.split(".") for n in names]
    for i in range(max(len(p) for p in split)):
        keys = {}  # the name with part i blanked -> {part i: first position}
        for pos, parts in enumerate(split):
            if len(parts) > i:
                keys.setdefault((tuple(parts[:i]), tuple(parts[i + 1:]), shapes[2][names[pos]]), {}) \
                    .setdefault(parts[i], pos)
        order, blocks = None, [[], [], []]
        for name in last:
            parts = name.split(".")
            if len(parts) <= i:
                break
            found = keys[(tuple(parts[:i]), tuple(parts[i + 1:]), shapes[2][name])]
            ranked = [k for k, _ in sorted(found.items(), key=lambda kv: kv[1])]
            if len(ranked) != 3 or ranked[2] != parts[i] or (order is not None and ranked != order):
                break
            order = ranked
            for k in range(3):
                blocks[k].append(".".join(parts[:i] + [ranked[k]] + parts[i + 1:]))
        else:
            if all(shapes[0].get(n) == shapes[2][n] for n in blocks[0]) \
                    and all(shapes[1].get(n) == shapes[2][n] and n not in shapes[0] for n in blocks[1]):
                return blocks
    return None


CHAIN_HINT = ("the blocks are not chained: each block must read the previous block's output, "
              "`for block in self.blocks: z = block(z)`; a loop that feeds every block the embeddings "
              "(`out = block(z)`, `x = block(embeddings)`) keeps only the last block's work")


def _unchained_block(sub, rng, seed):
    """None when changing the weights of any one block of a three-block model changes its logits (or the
    blocks cannot be found by name); else the failure message naming the block that does not count."""
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    blocks = _block_names(sub, seed, img, patch, D, h, out)
    if blocks is None:
        return None
    name = _vit_name(img, patch, D, h, out, 3)
    m, ran = _vit_then_forward(sub, rng, seed, img, patch, D, h, out, 3, lambda: [randn(rng, (2, *img))])
    x = ran.inputs[0]
    base = check_shape(ran.get().outputs[0], (2, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    noise = np.random.default_rng(seed)
    for k, names in enumerate(blocks):
        with explained():
            kept = {n: np.array(v, dtype=np.float32) for n, v in m.get_params(names).items()}
            moved = {n: torch.from_numpy(v + noise.standard_normal(v.shape).astype(np.float32)
                                         * max(float(v.std()), 0.5))
                     for n, v in kept.items()}
        # set, forward and put back in one round trip, each raising as alone
        got = with_params_forward(m, moved, [x], {n: torch.from_numpy(v) for n, v in kept.items()},
                                  lambda r: check_shape(r.outputs[0], (2, out), f"{name} output"))
        if not changed(got, base, scale):
            if _same_rows(base):
                return f"{name}: {IMAGE_BLIND}."
            return (f"{name}: new random values for every weight of encoder block {k} ({', '.join(names[:3])}"
                    f"{', ...' if len(names) > 3 else ''}) left the logits as they were: that block takes no "
                    f"part in the output, so a deeper model is no better than one block.\nLikely mistake: "
                    f"{CHAIN_HINT}.")
    return None


@pytest.mark.question("vit")
@pytest.mark.weight(4)  # depth is what the blocks are for: unchained, only the last block counts
def test_vit_blocks_are_chained(sub, rng, seed):
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    if _block_names(sub, seed, img, patch, D, h, out) is None:
        pytest.skip("the parameters of the models with 1, 2 and 3 blocks do not line up by block number "
                    "(blocks sharing weights, stacked in one tensor, or each block more than one entry of the list that holds them, as `Residual(PreNorm(...))` pairs in one nn.Sequential): the chaining of the blocks was not checked")
    failure = _unchained_block(sub, rng, seed)
    if failure:
        raise GradingFailure(failure)


LINEAR_MLP_HINT = ("the encoder block's MLP has no nonlinearity: Linear -> Dropout -> Linear is one linear map "
                   "(the two weight matrices multiply into one), so the MLP adds nothing a single layer could not. "
                   "Put nn.GELU() between the two Linear layers, as the handout's block has")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # the MLP is the block's nonlinearity per token; without it the block is much weaker
def test_vit_mlp_is_not_linear(sub, rng, seed):
    # Two layers with nothing elementwise between them, h = A u (+ a), y = B h, compute y = B A u: rotating the
    # hidden units, A -> S A and B -> B S^T (S orthogonal, fixing every bias-shaped parameter so biases need
    # not be found), leaves the logits exactly as they were. A GELU (any elementwise nonlinearity) between
    # them does not commute with S, so the logits change. Every pair of 2-D parameters of shapes (m, D) and
    # (D, m), m > D (the MLP widens the tokens), is tried; nn.Linear's (out, in) and a raw (in, out) matrix
    # are both covered. An attention's value and output projections are such a pair too, a whole-width one
    # (m = D) when the heads are not split, so m = D is not tried: a linear MLP of width D is not seen.
    # The model runs in float64 where it can (_vit_precise): a correct block whose MLP branch is scaled by a tiny gain
    # (LayerScale started at 1e-5) changes the logits by less than float32's threshold, far more than float64's.
    img, patch, D, h, out = (2, 8, 8), 4, 12, 3, 5
    name = _vit_name(img, patch, D, h, out, 1)
    x = randn(rng, (2, *img), "float64")  # (dropout on in eval mode draws the same masks: every forward has one seed)
    m, r, rel = _vit_precise(sub, seed, img, patch, D, h, out, 1, [x])
    x = x if rel == PRECISE_REL else x.float()
    kind = np.float64 if rel == PRECISE_REL else np.float32
    base = check_shape(r.outputs[0], (2, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    shapes = {p["name"]: tuple(p["shape"]) for p in m.params}
    pairs = [(a, b) for a, sa in shapes.items() for b, sb in shapes.items()
             if a != b and len(sa) == 2 and sa[1] == D and sa[0] > D and sb == (D, sa[0])]
    noise = np.random.default_rng(seed)
    for a, b in pairs:
        hidden = shapes[a][0]
        with explained():
            got = m.get_params([a, b] + [n for n, s in shapes.items() if s == (hidden,)])
        kept = {n: np.array(got[n], dtype=np.float64) for n in (a, b)}
        biases = [np.array(v, dtype=np.float64) for n, v in got.items() if n not in (a, b)]
        S = _rotation_fixing(hidden, biases, noise)
        if S is None:
            continue
        moved = {a: S @ kept[a], b: kept[b] @ S.T}
        if not changed(moved[a], kept[a], float(np.max(np.abs(kept[a])))):
            continue
        again = with_params_forward(m, {n: torch.from_numpy(v.astype(kind)) for n, v in moved.items()}, [x],
                                    {n: torch.from_numpy(v.astype(kind)) for n, v in kept.items()},
                                    lambda r: check_shape(r.outputs[0], (2, out), f"{name} output"))
        if not changed(again, base, scale, rel):
            if _same_rows(base):
                raise GradingFailure(f"{name}: {IMAGE_BLIND}.")
            raise GradingFailure(
                f"{name}: rotating the {hidden} hidden units between the parameters `{a}` {shapes[a]} and `{b}` "
                f"{shapes[b]} ({a} -> S {a}, {b} -> {b} S^T, S orthogonal) left the logits as they were; with a "
                f"nonlinearity between the two layers they change. Nothing but a linear map lies between them."
                f"\nLikely mistake: {LINEAR_MLP_HINT}.")


def _rotation_fixing(m, vectors, rng):
    """A random m x m orthogonal matrix that leaves every vector of `vectors` (each of length m) as it is,
    rotating only their orthogonal complement; None when that complement has fewer than two dimensions."""
    basis = np.eye(m)
    vectors = [v for v in vectors if np.all(np.isfinite(v))]  # a NaN-filled spare parameter is nothing to keep
    if vectors:
        try:
            u, sv, _ = np.linalg.svd(np.stack(vectors, axis=1), full_matrices=True)
        except np.linalg.LinAlgError:
            return None
        rank = int(np.sum(sv > 1e-9 * max(float(sv.max(initial=0.0)), 1e-300)))
        basis = u[:, rank:]
    r = basis.shape[1]
    if r < 2:
        return None
    q, _ = np.linalg.qr(rng.standard_normal((r, r)))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return np.eye(m) + basis @ (q - np.eye(r)) @ basis.T


MLP_NOT_NORMED_HINT = ("the MLP branch reads the residual stream itself, not LN(Z): `z = z + self.mlp(z)` (or a norm "
                       "applied after the MLP). The handout's block is `Z = Z + MHSA(LN(Z)); Z = Z + MLP(LN(Z))`, "
                       "with a LayerNorm of its own before the MLP: `z = z + self.mlp(self.norm2(z))`")


def _shift_blind(m, name, out, x, shifts, D=None, class_token=False):
    """Does adding shifts[i] * (1, ..., 1) to row i + 1 of `positional_embedding` (every patch token, not the
    class token) leave the logits of `m` on `x` as they were? With `class_token`, shifts has a value for every row,
    the class token's (row 0) first. The reason it cannot be checked (a str) when the parameter cannot be found
    (_positional_param)."""
    first = 0 if class_token else 1
    key, _, why = _positional_param(m, len(shifts) - 1 + first, D)
    if key is None:
        return why
    with explained():
        got = m.get_params([key])
    pe = got.get(key) if isinstance(got, dict) else None
    if pe is None:
        return "the positional embedding could not be read"
    pe = np.array(pe, dtype=np.float32)
    if pe.ndim < 2 or pe.shape[-2] != len(shifts) + first:
        return "the positional embedding has another shape than it was said to have"
    before = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    moved = pe.copy()
    moved[..., first:, :] += shifts.astype(np.float32)[:, None]
    after = check_shape(set_then_forward(m, {key: torch.from_numpy(moved)}, [x]).outputs[0], (1, out),
                        f"{name} output")
    return not changed(after, before, float(np.max(np.abs(before))))


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; the zeroed-block test cannot see a missing norm before the MLP
def test_vit_mlp_branch_reads_a_normalized_input(sub, rng, seed):
    # A LayerNorm does not see a constant added to all the features of a token: LN(z + c * 1) = LN(z). In a
    # pre-norm block both branches read LN(Z), so adding c_i * 1 to patch token i only carries c_i * 1 along the
    # residual stream: no branch sees it, and the class token, which gets no shift, ends exactly as it was, in
    # any number of blocks, whatever the layout, with or without the LN's affine parameters or a final norm. The
    # shift is made through rows 1..N of `positional_embedding`. With one block the class token's MLP reads the
    # class token alone, so a block whose MLP reads Z unnormalized still passes there; with two blocks, the first
    # block's MLP turns the shifts of the patch tokens into changes the second block's attention brings to the
    # class token. So: one block unmoved and two blocks moved is that mistake; one block moved already (the
    # attention branch not normalized: test_vit_attention_branch_reads_a_normalized_input; a post-norm block, a
    # readout from a patch token) is judged elsewhere.
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    N = (img[1] // patch) * (img[2] // patch)
    shifts = rng.uniform(1.0, 3.0, N) * rng.choice([-1.0, 1.0], N)
    x = randn(rng, (1, *img))
    verdicts = []
    for blocks in (2, 1):
        m = _vit(sub, seed, img, patch, D, h, out, blocks)
        blind = _shift_blind(m, _vit_name(img, patch, D, h, out, blocks), out, x, shifts, D)
        if isinstance(blind, str):
            pytest.skip(f"judged by the other tests, not here: {blind}; this test shifts the patch tokens through "
                        "its rows")
        if blind and blocks == 2:
            return
        verdicts.append(blind)
    if not verdicts[-1]:
        pytest.skip("judged by the other tests, not here: a constant added to every feature of the patch tokens "
                    "changes the logits of a one-block model already (its attention branch does not read LN(Z), "
                    "which test_vit_attention_branch_reads_a_normalized_input judges, a post-norm block, or a "
                    "readout that is not the class token), so the MLP branch cannot be seen on its own")
    name = _vit_name(img, patch, D, h, out, 2)
    raise GradingFailure(
        f"{name}: adding a constant to all the features of each patch token (through rows 1..N of "
        "positional_embedding) changed the logits; a LayerNorm removes such a constant, so in a block whose two "
        "branches read LN(Z) it only rides along the residual stream and the class token ends as it was. With "
        "one block (where the class token's MLP reads the class token alone) the logits did not change, so "
        f"the attention branch is normalized and the MLP branch is not.\nLikely mistake: {MLP_NOT_NORMED_HINT}.")


ATTENTION_NOT_NORMED_HINT = ("the attention branch reads the residual stream itself, not LN(Z), for its keys or "
                             "values: `self.attn(self.norm1(z), z, z)` normalizes only the queries. "
                             "nn.MultiheadAttention takes query, key and value as three arguments, and all three "
                             "are LN(Z): `h = self.norm1(z); z = z + self.attn(h, h, h)[0]`; a hand-written MHSA "
                             "given a second input for its keys or values needs LN(Z) there too (the handout's "
                             "block is `Z = Z + MHSA(LN(Z))`)")


LAYERNORM_OVER_TOKENS_HINT = ("a LayerNorm with the wrong normalized shape: it normalizes over the tokens, each "
                              "image's whole (N+1, D) sequence (`F.layer_norm(z, z.shape[1:])`, or nn.LayerNorm([N + "
                              "1, D])) or each feature across the tokens, so it mixes the tokens outside the attention. "
                              "LayerNorm normalizes each token over its own D features: `nn.LayerNorm(hidden_dim)`, "
                              "or `F.layer_norm(z, (z.shape[-1],))`")


def _norm_mixes_tokens(m, name, out, x, N, D):
    """After a constant added to each patch token moved the logits of `m`: does the same constant added to every
    token, the class token too, leave them as they were? A LayerNorm over the tokens (all of (N+1, D), or each
    feature across the tokens) removes a constant shared by every token and not one that differs from token to
    token; keys or values read from Z unnormalized move with either (the values carry it to the class token)."""
    try:
        blind = _shift_blind(m, name, out, x, np.full(N + 1, 2.0), D, class_token=True)
    except GradingFailure:
        return False
    return blind is True


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; the zeroed-block test cannot see keys and values read from Z
def test_vit_attention_branch_reads_a_normalized_input(sub, close, rng, seed):
    # As in the MLP branch's test above: a constant c_i added to all the features of patch token i (through row
    # i of `positional_embedding`) is invisible to a LayerNorm, so in pre-norm blocks it only rides along the
    # residual stream and the class token, which gets no shift, ends as it was. With one block the class token's
    # MLP reads the class token alone, so whatever moves its logits there came through the attention: keys or
    # values (or queries) read from Z instead of LN(Z) bring the shifts of the patch tokens to the class token.
    # Two other mistakes move them too, each charged by its own test and skipped here: a readout that is not the
    # class token (with no encoder block at all the logits move as well) and a block that is not pre-norm (the
    # zeroed-block test fails: a post-norm block's attention reads Z whole).
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    N = (img[1] // patch) * (img[2] // patch)
    shifts = rng.uniform(1.0, 3.0, N) * rng.choice([-1.0, 1.0], N)
    x = randn(rng, (1, *img))
    name = _vit_name(img, patch, D, h, out, 1)
    model = _vit(sub, seed, img, patch, D, h, out, 1)
    blind = _shift_blind(model, name, out, x, shifts, D)
    if isinstance(blind, str):
        pytest.skip(f"judged by the other tests, not here: {blind}; this test shifts the patch tokens through its "
                    "rows")
    if blind:
        return
    try:
        bare = _vit(sub, seed, img, patch, D, h, out, 0)
        readout_moves = _shift_blind(bare, _vit_name(img, patch, D, h, out, 0), out, x, shifts, D) is False
    except StudentError:  # no model without blocks (the handout does not ask for one): the readout is not seen here
        readout_moves = False
    if readout_moves:
        pytest.skip("judged by test_vit_classifies_from_the_class_token, not here: with no encoder block at all, a "
                    "constant added to the patch tokens moves the logits, so they are not read from the class "
                    "token alone")
    try:
        pre_norm = _zeroed_block(sub, close, rng, seed, lambda *_: None)[0]
    except GradingFailure:  # the zeroed-block test fails on the same error
        pre_norm = "failed"
    if pre_norm == "failed":
        pytest.skip("judged by test_vit_blocks_are_pre_norm_residual, not here: that test fails on this model (a "
                    "post-norm block, say, whose attention reads Z whole), so the attention branch cannot be seen "
                    "on its own")
    if positions_multiplied(model, rng, img, N, D, out):
        raise GradingFailure(
            f"{name}: adding a constant to all the features of each patch token (through rows 1..N of "
            "positional_embedding) changed the logits, which a LayerNorm before each branch would not let happen "
            "if the positions were added; and with positional_embedding set to zero, two different images give "
            f"the same logits: the positions multiply the tokens.\nLikely mistake: {POSITIONS_MULTIPLIED_HINT}.")
    if _norm_mixes_tokens(model, name, out, x, N, D):
        hint = LAYERNORM_OVER_TOKENS_HINT
    else:
        hint = ATTENTION_NOT_NORMED_HINT
    raise GradingFailure(
        f"{name}: adding a constant to all the features of each patch token (through rows 1..N of "
        "positional_embedding) changed the logits; a LayerNorm removes such a constant, so in a block whose "
        "branches read LN(Z) it only rides along the residual stream and the class token, which got no constant, "
        "ends as it was. With one block the class token's MLP reads the class token alone, so the constant "
        "reached it through the attention.\nLikely mistake: " + hint + ".")


PARALLEL_BLOCK_HINT = ("the MLP branch reads the block's input, not the stream after the attention branch: `y = "
                       "self.norm1(z); z = z + self.attn(y); z = z + self.mlp(self.norm2(y))` (a \"parallel\" block, "
                       "as in GPT-J or PaLM, or an MLP handed the block's input `x` instead of the updated `z`). The "
                       "handout's block is sequential: `z = z + self.attn(self.norm1(z))`, then `z = z + "
                       "self.mlp(self.norm2(z))` on that new z")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; the zeroed-block and LayerNorm tests pass a parallel block
def test_vit_mlp_reads_the_attention_output(sub, rng, seed):
    # In the handout's block the MLP reads LN(Z + MHSA(LN(Z))), the stream after the attention. With one block the
    # class token's attention output carries the image, so its MLP's input, and its output, depend on the image.
    # The MLP's two layers are found as in test_vit_mlp_is_not_linear (parameters of shapes (m, D) and (D, m), m >
    # D) and given random weights 100 times the usual size (set here, whatever the model's init): the MLP's output
    # then dominates the class token, and still depends on the image. A block whose MLP reads the stream from
    # before the attention (a "parallel" block) feeds the class token's MLP the class token alone: its large output
    # is the same for every image, and the logits nearly stop depending on the image (relative to their size, or
    # after a final LayerNorm). That the MLP reads something of the image is all this test sees: an MLP that reads
    # the attention's output alone (`z + a + mlp(norm2(a))`) reads the image too, and passes here; it is
    # test_vit_block_is_wired_as_the_handout (test_vit_blocks_wiring.py), which runs each branch in a block of its
    # own, that compares what the MLP reads with the handout's Z + MHSA(LN(Z)).
    img, patch, D, h, out = (2, 8, 8), 4, 12, 3, 5
    name = _vit_name(img, patch, D, h, out, 1)
    m, ran = _vit_then_forward(sub, rng, seed, img, patch, D, h, out, 1, lambda: [randn(rng, (2, *img))])
    x = ran.inputs[0]

    def spread(r):
        y = check_shape(r.outputs[0], (2, out), f"{name} output")
        return float(np.max(np.abs(y[0] - y[1]))) / max(float(np.max(np.abs(y))), 1e-12)

    base = spread(ran.get())
    if base < 1e-4:
        pytest.skip("judged by test_vit_depends_on_every_patch, not here: the logits are the same for two random "
                    "images, so what the MLP reads cannot show")
    shapes = {p["name"]: tuple(p["shape"]) for p in m.params}
    pairs = [(a, b) for a, sa in shapes.items() for b, sb in shapes.items()
             if a != b and len(sa) == 2 and sa[1] == D and sa[0] > D and sb == (D, sa[0])]
    if not pairs:
        pytest.skip("no pair of parameters of shapes (m, D) and (D, m), m > D, the two layers of a widening MLP: "
                    "what the MLP reads was not checked")
    noise = np.random.default_rng(seed)
    for a, b in pairs:
        with explained():
            kept = {n: np.array(v, dtype=np.float32) for n, v in m.get_params([a, b]).items()}
            large = {n: torch.from_numpy((100.0 * noise.standard_normal(shapes[n])
                                          / np.sqrt(max(shapes[n]))).astype(np.float32)) for n in (a, b)}
        # set, forward and put back in one round trip, each raising as alone
        big = with_params_forward(m, large, [x], {n: torch.from_numpy(v) for n, v in kept.items()}, spread)
        if big < 0.01 * base:
            raise GradingFailure(
                f"{name} on two random images: with large random weights in `{a}` {shapes[a]} and `{b}` {shapes[b]} "
                f"(the MLP's two layers) the logits became nearly the same for both images (their difference "
                f"fell from {base:.3g} to {big:.2g} of their size): the MLP's large output is the same for every "
                "image, so the class token's MLP reads nothing of the image, which only the attention brings "
                f"it.\nLikely mistake: {PARALLEL_BLOCK_HINT}.")
