"""Grading tests of `vit`, question vit: the attention inside the ViT's encoder blocks (see _common.py for what the
tests share).

What it is for: the mhsa tests judge the student's MultiHeadSelfAttention class; a ViT whose blocks use an attention
of their own (or that class built with other arguments: one head whatever num_heads says, a scale overwritten) was
never checked there. This test sets the block's attention to known weights and compares its output, as the logits
show it, with the handout's attention (softmax over the keys of Q K^T / sqrt(D/num_heads), num_heads heads).
The projections are read in any layout checker.judging.packed_layouts knows, one flat parameter packing q, k, v
(and W_O) included. Where the attention then does not answer as the handout's but some of its parameters were read
only from their size or left as built, a misread layout cannot be told from a wrong attention: no mistake is
named; the test fails closed for a TA to check where those may be the projections (unread_projections), else skips.

What it is not: a second charge for a mistake of the student's MultiHeadSelfAttention: a block attention that
answers as that class does (built with the ViT's hidden_dim and num_heads) is left to the mhsa tests (a skip).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from . import test_vit_blocks as _blocks  # (modules, so that pytest collects none of their tests here)
from . import test_vit_blocks_wiring as _wiring
from . import test_vit_mhsa_temperature as _temperature
from . import test_vit_vit_outputs as _eval_mode  # random_in_eval: a batch under several seeds (drop path per image)
from checker.judging.packed_layouts import (identity_weights, packed_readings,  # any layout, packed ones too
                                            unread_message, unread_projections)


# the test's sizes: a head width of 6 (D/h not a square; sqrt(6) apart from every divisor SCALING_HINTS lists at
# N + 1 = 5 tokens), 4 heads (a single head, or a head split along the wrong axis, gives another answer), out = 7
# apart from D and N + 1 (see _common.py)
IMG, PATCH, D, H, OUT = (3, 8, 8), 4, 24, 4, 7
TOKENS = (IMG[1] // PATCH) * (IMG[2] // PATCH) + 1  # N + 1 = 5
TOL = 2e-3  # |A - B| relative to what the attention's output moves the logits by (float32, LayerNorm's eps: ~1e-5)

ONE_HEAD_HINT = ("the encoder blocks' attention uses one head, whatever num_heads says (`Block(hidden_dim, 1)`, "
                 "`num_heads=1`, or an attention that never splits Q, K and V into heads): each block must build "
                 "its attention with the ViT's num_heads, `MultiHeadSelfAttention(hidden_dim, num_heads)`, whose "
                 "heads each attend with their own D/num_heads features")
QUERY_AXIS_HINT = ("the softmax inside the encoder blocks' attention runs over the queries (dim=-2), not over the "
                   "keys: each query's weights must sum to 1 over the keys, `scores.softmax(dim=-1)`")
NO_SOFTMAX_HINT = ("the encoder blocks' attention does not turn its scores into weights that sum to 1 over the "
                   "keys: no softmax (`att = q @ k.transpose(-2, -1) / ...` used as it is), or a softmax over "
                   "another axis; each block computes softmax(Q K^T / sqrt(D/num_heads), dim=-1) V")
BLOCK_ATTENTION_HINT = ("the attention inside the encoder blocks is not the handout's: each head computes "
                        "softmax(Q K^T / sqrt(D/num_heads)) V, softmax over the keys (the last axis), with "
                        "num_heads heads of D/num_heads features each; check the attention your Block uses (does "
                        "it use your MultiHeadSelfAttention, built with hidden_dim and num_heads?)")


def _first_block(sub, seed):
    """(the one-block model, {name in block 0: its name inside the block}) or (None, why not)."""
    one, two = _vits(sub, seed, IMG, PATCH, D, H, OUT, (1, 2))  # (one round trip)
    s1 = {p["name"]: tuple(p["shape"]) for p in one.params}
    s2 = {p["name"]: tuple(p["shape"]) for p in two.params}
    pairs = _wiring._second_block_by_number(s1, s2)
    if pairs is None and set(s2) - set(s1):  # keyed otherwise (letters, words): by order
        s3 = {p["name"]: tuple(p["shape"]) for p in _vit(sub, seed, IMG, PATCH, D, H, OUT, 3).params}
        blocks = _blocks._blocks_by_number([s1, s2, s3]) or _blocks._blocks_by_order([s1, s2, s3])
        if blocks and set(blocks[1]) == set(s2) - set(s1) and all(s2.get(n) == s3[n] for n in blocks[0] + blocks[1]):
            pairs = list(zip(blocks[0], blocks[1]))
    if pairs is None:
        return None, ("the parameters of the models with one and two blocks do not line up block by block (blocks "
                      "sharing weights, stacked in one tensor, or each block more than one entry of the list that holds them, as `Residual(PreNorm(...))` pairs in one nn.Sequential)")
    local = {}
    for a, b in pairs:  # the name inside the block: what follows the part that numbers the block
        pa, pb = a.split("."), b.split(".")
        i = next((k for k, (x, y) in enumerate(zip(pa, pb)) if x != y), len(pa) - 1)
        local[a] = ".".join(pa[i + 1:]) or a
    if len(set(local.values())) != len(local):
        local = {a: a for a in local}
    return one, local


class _Params:
    """A stand-in for a module handle, for identity_weights: its `params` only."""

    def __init__(self, shapes):
        self.params = [{"name": n, "shape": list(s)} for n, s in shapes.items()]


def _centred(ways):
    """Each way's projections turned from the identity into the centring P = I - 11^T/D (every entry of an identity
    reading is an input feature i against an output feature f(o), 1 where i = f(o): P's entry is that minus 1/D,
    whichever axis is the input); its biases (the zeros of _identity_weights) set to 1, as the block's other small
    parameters. P kills what the biases add to the values, (1, ..., 1) times a number, and keeps every token, whose
    features sum to zero (see _tokens)."""
    out = []
    for way in ways:
        centred = {}
        for n, v in way.items():
            v = np.asarray(v, dtype=np.float32)
            if v.size and np.all(v == 0):                       # a bias (no projection is all zeros)
                centred[n] = np.ones(v.shape, dtype=np.float32)
            elif v.size > 3 * D:                                # a projection (a scalar set to 1 stays 1)
                centred[n] = (v - np.float32(1.0 / D)).astype(np.float32)
            else:
                centred[n] = v
        out.append(centred)
    return out


def _tokens(seed):
    """(N + 1, D) tokens whose features sum to zero over each head, split either way (features i*D/h .. (i+1)*D/h
    - 1, or i, i + h, i + 2h, ...), of variance 1: their LayerNorm is themselves, and the constant vectors the
    block's biases add to queries and keys change no score beyond a constant per query."""
    rng = np.random.default_rng(seed + 17)
    dh = D // H
    rows = [np.arange(D) // dh == i for i in range(H)] + [np.arange(D) % H == i for i in range(H)]
    C = np.array(rows, dtype=np.float64)                       # (2h, D): the sums that must be zero
    x = rng.standard_normal((TOKENS, D)) * 1.5
    x = x - x @ np.linalg.pinv(C) @ C                          # projected onto their zero set
    return x / np.sqrt((x ** 2).mean(axis=1, keepdims=True))


def _attention(x, h, tau, strided=False, axis=-1, c_v=0.0):
    """Attention of the tokens x (T, D) with q = k = v = x (the centred projections), `h` heads, scores divided by
    `tau`, softmax over `axis` (-1 the keys, -2 the queries), then centred (P); `c_v` the constant the values'
    biases add (nothing when each query's weights sum to 1)."""
    T, Dm = x.shape
    dh, out = Dm // h, np.zeros_like(x)
    for i in range(h):
        cols = slice(i, Dm, h) if strided else slice(i * dh, (i + 1) * dh)
        xi = x[:, cols]
        s = xi @ xi.T / tau
        a = np.exp(s - s.max(axis=axis, keepdims=True))
        a = a / a.sum(axis=axis, keepdims=True)
        out[:, cols] = a @ (xi + c_v)
    return out - out.mean(axis=1, keepdims=True)


def _plan(one, local):
    """("skipped", why) or ("planned", what the configurations set): the block's parameters by role."""
    shapes = {p["name"]: tuple(p["shape"]) for p in one.params}
    first = {n: shapes[n] for n in local}
    mlp = _wiring._mlp_pair(first, D)
    if mlp is None:
        return "skipped", ("no one pair of parameters of shapes (m, D) and (D, m), m > D, in an encoder block: the "
                           "MLP's two layers were not found")
    a, b, m = mlp
    small, scalars, projections, unsure = {}, {}, {}, []
    for n, s in first.items():
        size = int(np.prod(s)) if s else 1
        if n in (a, b):
            continue
        if size == 1 or size == H:                       # a gain or temperature: as built, or 1
            scalars[n] = s
        elif size > 3 * D and size != m and packed_readings(s, D, H):  # q, k, v (and W_O) packed: one flat blob
            projections[n] = s
        elif sum(d > 1 for d in s) <= 1 or size <= 3 * D:  # a LayerNorm's, a bias, a LayerScale, the MLP's bias
            small[n] = s
            if size > 3 * D and size != m:  # no bias, norm or the MLP's: a layout the grader does not know
                unsure.append(f"`{n}` {tuple(s)}")
        else:
            projections[n] = s
    if not projections:
        return "skipped", "no parameter of the encoder block's attention was found (its projections)"
    guessed = []
    ways, unknown = identity_weights(_Params({local[n]: s for n, s in projections.items()}), D, H, guessed=guessed)
    left = {local[n]: first[n] for n in first if f"`{n}` {tuple(first[n])}" in unsure}  # large, left as built
    unsure += [f"`{n}` {tuple(projections[n])}" for n in projections if local[n] in guessed]
    # those that may be the attention's projections (packed_layouts.unread_projections): where the test cannot
    # tell a misread layout from a wrong attention, it fails closed for a TA to check, as the mhsa test does
    closed = unread_projections([{"name": local[n], "shape": list(s)} for n, s in projections.items()]
                                + [{"name": n, "shape": list(s)} for n, s in left.items()], D, H, guessed + list(left))
    if not ways:
        return "skipped", ("the grader cannot set the attention's projections from their names and shapes: it does "
                           f"not know how to read {', '.join(unknown[:4])}{' ...' if len(unknown) > 4 else ''}")
    back = {local[n]: n for n in projections}
    ways = [{back[k]: v for k, v in w.items()} for w in _centred(ways)]
    pe, pe_shape, why = _positional_param(one, TOKENS - 1, D)
    if pe is None:
        return "skipped", why
    outside = {n: s for n, s in shapes.items() if n not in first and n != pe and int(np.prod(s) if s else 1) == D}
    f32 = np.float32
    base = {**{n: np.zeros(first[n], f32) for n in (a, b)}, **{n: np.ones(s, f32) for n, s in small.items()},
            **{n: np.ones(s, f32) for n, s in outside.items()}, **{n: np.zeros(s, f32) for n, s in projections.items()}}
    settings = [{}] + ([{n: np.ones(s, f32) for n, s in scalars.items()}] if scalars else [])
    return "planned", {"base": base, "ways": ways, "settings": settings, "pe": (pe, pe_shape),
                       "projections": projections, "mlp": (a, b), "unsure": unsure, "closed": closed}


def _positions(pe_shape, x, add=None):
    """The positional embedding of shape `pe_shape` holding the tokens x, plus `add` ((N + 1, D): one row for each
    token, the class token's and every patch token's)."""
    v = x.copy()
    if add is not None:
        v = v + add
    return torch.from_numpy(v.reshape(pe_shape).astype(np.float32))


def _run(one, asks, seeds=None):
    """[logits] of the configurations `asks` ([values to set, or None for none], each followed by a forward on one
    zero image, under the seed `seeds` gives it, else 0), in one round trip."""
    x = torch.zeros((1, *IMG))
    seeds = seeds or [0] * len(asks)
    with one.sub.together(chain=True) as t:
        sent = [(t.set_params(one, {n: torch.from_numpy(np.ascontiguousarray(v)) if isinstance(v, np.ndarray) else v
                                    for n, v in values.items()}) if values else None, t.forward(one, [x], seed=s))
                for values, s in zip(asks, seeds)]
    got = []
    with naming_globals(one.sub, getattr(one, "sizes", {}), one.cls), explained():
        for setting, result in sent:
            if setting is not None:
                setting.get()
            got.append(check_shape(result.get().outputs[0], (1, OUT), "VisionTransformer output")[0])
    return got


def _gap(a, b, scale):
    return float(np.max(np.abs(a - b))) / max(scale, 1e-30)


@pytest.mark.question("vit")
@pytest.mark.weight(4)  # the attention the ViT runs: a block with an attention of its own is judged nowhere else
def test_vit_block_attention_is_the_handouts(sub, rng, seed):
    # In a one-block ViT, on an all-zero image, with every parameter of D values outside the blocks set to 1 (the
    # class token, the patch embedding's bias, the final LayerNorm: constant vectors a LayerNorm does not see) and
    # the positional embedding set to tokens x of our choosing (_tokens), the block reads LN(Z) = x. The block's
    # MLP is silenced (its two layers set to zero), its other small parameters set to 1 (LayerNorm weights and
    # biases, the attention's biases, LayerScale gains), and its attention's projections set to the centring P =
    # I - 11^T/D in whatever layout the names and shapes allow (identity_weights, packed ones too, read as P): the
    # handout's attention then adds A(x) = softmax(x_h x_h^T / sqrt(D/h)) x_h, head by head, to every token,
    # plus a constant vector. Configuration A is that; configuration B silences the attention (projections zero:
    # it adds the same constant, and mixes no tokens) and adds the handout's A(x) to every token through the
    # positional embedding. The block's output, every token of it, is then the same in both, and so is
    # everything after the block, whichever tokens the head reads: the logits must be equal. (Read through the
    # class token alone, the test would blame the attention of a head that pools otherwise, a mean over the
    # tokens, which test_vit_classifies_from_the_class_token charges.) A block whose attention uses one head,
    # another scale, another softmax axis or none, changes the tokens otherwise. A block that answers as the
    # student's own MultiHeadSelfAttention(D, h) is left to the mhsa tests.
    one, local = _first_block(sub, seed)
    if one is None:
        pytest.skip(f"the attention inside the encoder blocks was not checked: {local}")
    planned = _plan(one, local)
    if planned[0] == "skipped":
        pytest.skip(f"the attention inside the encoder blocks was not checked: {planned[1]}")
    plan = planned[1]
    x = _tokens(seed)
    pe, pe_shape = plan["pe"]
    refs = [_attention(x, H, np.sqrt(D // H), strided) for strided in (False, True)]
    asks = []
    for setting in plan["settings"]:  # B0 (nothing added), B for each head split, then A for each way
        asks.append({**plan["base"], **setting, pe: _positions(pe_shape, x)})
        asks += [{pe: _positions(pe_shape, x, r)} for r in refs]
        asks += [{pe: _positions(pe_shape, x), **w} for w in plan["ways"]]
    name = _vit_name(IMG, PATCH, D, H, OUT, 1)
    try:
        got = _run(one, asks)
    except GradingFailure as e:
        raise e.retold(f"{name}, with the grader's weights in its block (its attention's projections set to known "
                       f"values, its MLP silenced), failed: {e.message}") from None
    per, best = 1 + len(refs) + len(plan["ways"]), None
    for k in range(len(plan["settings"])):
        b0, bs, as_ = got[k * per], got[k * per + 1:k * per + 1 + len(refs)], got[k * per + 1 + len(refs):(k + 1) * per]
        for w, a in enumerate(as_):
            for r, b in enumerate(bs):
                effect = float(np.max(np.abs(b - b0)))
                gap = _gap(a, b, effect)
                if best is None or gap < best[0]:
                    best = (gap, k, w, r, effect, a, b0)
    gap, k, w, r, effect, a, b0 = best
    scale = float(np.max(np.abs(b0)))
    if effect <= 1e-4 * max(scale, 1e-6):
        pytest.skip("the attention inside the encoder blocks was not checked: the handout's attention output, added "
                    "to the tokens, hardly moves the logits (the other tests judge how the tokens are read)")
    if gap <= TOL:
        return
    if _normalized_branch(one, plan, x, k, a, effect):
        return
    what = (f"{name} on an all-zero image, its positional embedding set to tokens of the grader's, the block's MLP "
            "silenced and its attention's projections set to known values (the centring I - 11^T/D), against the same "
            "model with its attention silenced and the handout's attention output, softmax(Q K^T / "
            f"sqrt(D/num_heads)) V with {H} heads of {D // H}, added to the tokens")
    said = f"the logits differ by {gap:.3g} of what the attention's output moves them by"
    try:  # configuration A again, under two seeds: random in eval mode (dropout), which another test charges
        again = _run(one, [{**plan["settings"][k], pe: _positions(pe_shape, x), **plan["ways"][w]}, None], [0, 1])
    except GradingFailure:
        again = None
    if (again is not None and changed(again[0], again[1], scale)) or _eval_mode.random_in_eval(sub, seed):
        pytest.skip("judged by the tests of determinism in eval mode, not here: the model gives different logits for "
                    "the same input under another random seed, so its attention cannot be compared")
    if _unregistered(sub, seed, one):
        pytest.skip("the attention inside the encoder blocks was not checked: two models with the same registered "
                    "parameters give different logits, so some weights are not registered parameters (see the "
                    "parameter test), and the grader's weights do not reach them")
    if _as_own_mhsa(sub, seed, one, plan, x, k, a, effect):
        pytest.skip("judged by the mhsa tests, not here: the encoder blocks' attention answers as the submission's "
                    "MultiHeadSelfAttention(hidden_dim, num_heads) does, which those tests judge")
    if _image_blind(sub, seed, rng, IMG, PATCH, D, H, OUT, 1):
        raise GradingFailure(f"{_vit_name(IMG, PATCH, D, H, OUT, 1)}: {IMAGE_BLIND}.")
    before = _before_the_projection(one, plan, x, refs)
    if before:
        raise GradingFailure(f"{what}: {said}, but not because of the block's attention: with "
                             f"{', '.join(before[:4])} zeroed, it answers as the handout's.\n"
                             f"Likely mistake: {PATCH_EMBEDDING_HINT}.")
    if plan["unsure"]:  # a layout read from a size, or left as built: the failure may be the grader's reading
        if plan["closed"]:  # the block's own attention, in a layout that may hide a wrong scale: for a TA
            raise GradingFailure(unread_message(f"{name}'s encoder block", plan["closed"],
                                                "the attention inside the encoder blocks (softmax(Q K^T / "
                                                "sqrt(D/num_heads)) V, num_heads heads)"))
        pytest.skip("the attention inside the encoder blocks was not checked: with its projections set in every "
                    "way the grader can read them, it does not answer as the handout's attention, but the layout "
                    f"of {', '.join(plan['unsure'][:4])}{' ...' if len(plan['unsure']) > 4 else ''} was only guessed "
                    "from its size or left as built, so a wrong reading cannot be told from a wrong attention")
    hint = _diagnosis(one, plan, x, [got[kk * per + 1 + len(refs):(kk + 1) * per]
                                     for kk in range(len(plan["settings"]))], effect)
    raise GradingFailure(f"{what}: {said}, so the block's attention computes another function.\n"
                         f"Likely mistake: {hint}.")


def _unregistered(sub, seed, one):
    """Do two one-block models given the same registered parameters (`one`'s, as the test left them) give different
    logits? Then some of their weights are no parameters (layers in a plain Python list: the registration test
    charges that), and the weights the grader set never reached the attention."""
    names = sorted(p["name"] for p in one.params)
    other = _vit(sub, seed + 5, IMG, PATCH, D, H, OUT, 1)
    try:
        with explained():
            other.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in one.get_params(names).items()})
        x = torch.zeros((1, *IMG))
        a, b = (forward(m, [x]).outputs[0] for m in (one, other))
    except GradingFailure:
        return False
    return not np.allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=1e-4, atol=1e-5)


def _normalized_branch(one, plan, x, k, a, effect):
    """Does configuration A (logits `a`, setting `k`) match the handout's attention output put through a LayerNorm,
    token by token (its weight and bias the 1 every small parameter holds)? A branch that ends with a LayerNorm of its
    own (NormFormer's, a "sandwich" norm) is the handout's attention followed by a norm, which the wiring test
    accepts as well."""
    pe, pe_shape = plan["pe"]
    outs = [_attention(x, H, np.sqrt(D // H), strided) for strided in (False, True)]
    normed = [(o - o.mean(axis=1, keepdims=True)) / np.sqrt(o.var(axis=1, keepdims=True) + 1e-5) for o in outs]
    asks = [{**plan["settings"][k], **{n: np.zeros(s, np.float32) for n, s in plan["projections"].items()},
             pe: _positions(pe_shape, x, normed[0])}, {pe: _positions(pe_shape, x, normed[1])}]
    try:
        got = _run(one, asks)
    except GradingFailure:
        return False
    return any(_gap(a, g, effect) <= TOL for g in got)


def _candidates(x):
    """[(hint, the attention output of every token)] of the known mistakes."""
    dh, T = D // H, x.shape[0]
    found = [(hint, _attention(x, H, tau(D, dh, H, T))) for hint, tau in _temperature.SCALING_HINTS]
    found += [(ONE_HEAD_HINT, _attention(x, 1, tau)) for tau in (np.sqrt(D), np.sqrt(dh), 1.0)]
    found += [(QUERY_AXIS_HINT, _attention(x, H, np.sqrt(dh), axis=-2, c_v=c)) for c in (0.0, 1.0, 2.0)]
    return found


def _diagnosis(one, plan, x, a_of, effect):
    """The likely mistake of a block attention whose configuration A failed (`a_of[k][w]`: its logits in setting `k`,
    way `w`). Every setting and every way of reading the projections is tried, not only the one whose A came closest
    to B: where the attention moves the logits little, a wrong way can come closest by chance, and under it every
    candidate misses and equal tokens are not kept (seed 15847156: a softmax over the queries told "no softmax").
    A cause is named only where it fits: a candidate within 10 TOL in some setting and way, else "no softmax" where
    equal tokens are not kept whatever the setting and way; else none of them (BLOCK_ATTENTION_HINT)."""
    pe, pe_shape = plan["pe"]
    cands = _candidates(x)
    same = np.repeat(x[:1], x.shape[0], axis=0)  # every token the class token's: any softmax gives its value
    zero = {n: np.zeros(s, np.float32) for n, s in plan["projections"].items()}
    asks = []
    for setting in plan["settings"]:  # per setting: B of each candidate, B of the equal tokens, A of them each way
        asks.append({**setting, **zero, pe: _positions(pe_shape, x, cands[0][1])})
        asks += [{pe: _positions(pe_shape, x, c)} for _, c in cands[1:]]
        asks.append({pe: _positions(pe_shape, same, same)})
        asks += [{**zero, **w, pe: _positions(pe_shape, same)} for w in plan["ways"]]
    try:
        got = _run(one, asks)
    except GradingFailure:
        return BLOCK_ATTENTION_HINT
    per, fits, kept = len(cands) + 1 + len(plan["ways"]), [], []
    for k, a_ways in enumerate(a_of):
        bs = got[k * per:k * per + len(cands)]
        b_same, a_same = got[k * per + len(cands)], got[k * per + len(cands) + 1:(k + 1) * per]
        for a, a_s in zip(a_ways, a_same):
            kept.append(_gap(a_s, b_same, effect) <= 10 * TOL)
            fits += [(_gap(a, b, effect), hint) for (hint, _), b in zip(cands, bs)]
    gap, hint = min(fits, key=lambda t: t[0])
    if gap <= 10 * TOL:
        return hint if hint in (ONE_HEAD_HINT, QUERY_AXIS_HINT) else f"in the encoder blocks' attention, {hint}"
    if kept and not any(kept):
        return NO_SOFTMAX_HINT
    return BLOCK_ATTENTION_HINT


PATCH_EMBEDDING_HINT = ("the patch embedding does more than embed each patch linearly: a LayerNorm over each patch's "
                        "pixels before the projection (vit-pytorch's `nn.LayerNorm(patch_dim)`) makes the tokens of "
                        "an all-zero image something else than the projection's bias, so the tokens the encoder "
                        "block reads are not the ones the grader set; the handout embeds each flattened patch by one "
                        "linear layer")


def _before_the_projection(one, plan, x, refs):
    """The names of the parameters outside the blocks that the test leaves as built and that hold vectors of a
    flattened patch's width C*P*P (a LayerNorm over a patch's pixels, before the patch projection), where zeroing
    them makes configuration A answer as B: then the tokens the block read were not the grader's (on a zero image
    such a norm gives its bias, which the projection turns into a vector that is not constant), and the attention was
    not to blame. [] where there are none, or zeroing them changes nothing (they stay zero for _diagnosis then)."""
    shapes = {p["name"]: tuple(p["shape"]) for p in one.params}
    pe, pe_shape = plan["pe"]
    inside = set(plan["base"]) | set(plan["projections"]) | {n for s in plan["settings"] for n in s}
    width = IMG[0] * PATCH * PATCH  # a flattened patch's C*P*P values
    before = sorted(n for n, s in shapes.items() if n not in inside and n != pe and s == (width,))
    if not before:
        return []
    extra = {n: np.zeros(shapes[n], np.float32) for n in before}
    zero = {n: np.zeros(s, np.float32) for n, s in plan["projections"].items()}
    asks = []
    for setting in plan["settings"]:
        asks.append({**plan["base"], **setting, **extra, pe: _positions(pe_shape, x)})
        asks += [{pe: _positions(pe_shape, x, r)} for r in refs]
        asks += [{**zero, **w, pe: _positions(pe_shape, x)} for w in plan["ways"]]
    try:
        got = _run(one, asks)
    except GradingFailure:
        return []
    per = 1 + len(refs) + len(plan["ways"])
    for k in range(len(plan["settings"])):
        b0, bs = got[k * per], got[k * per + 1:k * per + 1 + len(refs)]
        as_ = got[k * per + 1 + len(refs):(k + 1) * per]
        for b in bs:
            effect = float(np.max(np.abs(b - b0)))
            if effect > 0 and any(_gap(a, b, effect) <= TOL for a in as_):
                return before
    return []


def _as_own_mhsa(sub, seed, one, plan, x, k, a, effect):
    """Does the block's attention (configuration A, logits `a`) answer as the submission's MultiHeadSelfAttention(D,
    h) does with the same weights (its projections the centring, its biases 1)? Its output on LN(Z), less its output
    with its projections zero (the constant its output bias adds, which B adds as well), added to every token."""
    try:
        m = new(sub, "MultiHeadSelfAttention", D, H, seed=seed)
    except (GradingFailure, StudentError):
        return False
    ways, _ = identity_weights(m, D, H)
    if not ways:
        return False
    ways = _centred(ways)
    zero = {n: (np.zeros_like(v) if v.size > 3 * D else v) for n, v in ways[0].items()}
    inp = torch.from_numpy((x + 1.0).astype(np.float32))[None]   # LN(Z) with the LayerNorm's bias of 1
    try:
        with sub.together(chain=True) as t:
            sent = [(t.set_params(m, {n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in w.items()}),
                     t.forward(m, [inp])) for w in [zero] + ways]
        outs = []
        with naming_globals(sub, getattr(m, "sizes", {}), m.cls), explained():
            for setting, result in sent:
                setting.get()
                outs.append(check_shape(result.get().outputs[0], (1, TOKENS, D), "MultiHeadSelfAttention output")[0])
        pe, pe_shape = plan["pe"]
        asks = [{**plan["settings"][k], **{n: np.zeros(s, np.float32) for n, s in plan["projections"].items()},
                 pe: _positions(pe_shape, x, outs[1] - outs[0])}]
        asks += [{pe: _positions(pe_shape, x, o - outs[0])} for o in outs[2:]]
        got = _run(one, asks)
    except GradingFailure:
        return False
    return any(_gap(a, g, effect) <= TOL for g in got)
