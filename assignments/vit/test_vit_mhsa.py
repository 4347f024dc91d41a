"""Grading tests of `vit`, question mhsa (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._determinism import *  # noqa: F401,F403 - eval mode is deterministic
from ._head_width import too_many_parameters
from ._registered import BUFFER_WEIGHTS_HINT, buffer_weights_text, weights_in_buffers


def _mhsa_shape(sub, rng, seed, B, N, D, h):
    _, ran = new_then_forward(sub, rng, lambda t: new_asked(t, sub, "MultiHeadSelfAttention", D, h, seed=seed),
                              lambda: [randn(rng, (B, N, D))])
    r = ran.get()
    check_shape(r.outputs[0], (B, N, D), f"MultiHeadSelfAttention({D}, {h}) on input of shape ({B}, {N}, {D})")


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("B,N,D,h", [(2, 5, 8, 2), (1, 1, 8, 2), (3, 4, 16, 4)])
def test_mhsa_output_shape(sub, rng, seed, B, N, D, h):
    _mhsa_shape(sub, rng, seed, B, N, D, h)


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("B,N,D,h", [(3, 7, 12, 3), (1, 9, 10, 5), (1, 1, 12, 3), (4, 13, 10, 5), (2, 6, 6, 1)])
def test_mhsa_output_shape_odd_heads(sub, rng, seed, B, N, D, h):
    _mhsa_shape(sub, rng, seed, B, N, D, h)


@pytest.mark.question("mhsa")
def test_mhsa_parameters_registered(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    check_registered(m, "MultiHeadSelfAttention(12, 3)")
    _structure_earns_if_it_runs(sub, rng, seed)


def _structure_earns_if_it_runs(sub, rng, seed):
    """A test of structure (registered parameters, their count) passes for a module whose forward is
    wrong in every way (returns None, say): it earns only for a module that also answers in the right
    shape."""
    only_if_right_elsewhere("MultiHeadSelfAttention", "the module's parameters, which a forward that does "
                            "not work has as well", "an input of shape (2, 5, 12)",
                            lambda: _mhsa_shape(sub, rng, seed, 2, 5, 12, 3))


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("D,h", [(12, 3), (16, 4)])
def test_mhsa_parameter_count(sub, rng, seed, D, h):
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    low = 4 * D * D
    if m.n_params >= low:
        wide = too_many_parameters(D, h, m.n_params)  # heads wider than D / num_heads (_head_width.py)
        if wide:
            raise GradingFailure(wide)
        _structure_earns_if_it_runs(sub, rng, seed)
        return
    buffers = weights_in_buffers(m, D, h)
    if buffers:
        hint = (f"{BUFFER_WEIGHTS_HINT}; here {buffer_weights_text(buffers)} "
                f"{'is a buffer' if len(buffers) == 1 else 'are buffers'}")
    elif m.n_params >= 3 * D * D:
        hint = ("one of the four projections is missing: no output projection (after the heads are concatenated, "
                "step 4 of the handout applies W^O, D x D, e.g. nn.Linear(D, D), which lets the heads' outputs "
                "mix), or no value projection (the values are the input itself, `v = x` split into heads: each "
                "head averages X W_i^V, with its own W_i^V of shape (D, D/num_heads))")
    elif any(tuple(p.get("shape", ())) == (D // h, D // h) for p in m.params):
        hint = (f"each head's projection sees only its own slice of D/num_heads = {D // h} features (a "
                f"Linear({D // h}, {D // h}) per head): a head's W_i^Q maps all D = {D} features to D/num_heads, "
                "so it is (D, D/num_heads), and the Q, K and V projections of all heads hold 3 * D * D values")
    else:
        hint = LIST_HINT
    raise GradingFailure(
        f"MultiHeadSelfAttention({D}, {h}) has {m.n_params} registered parameter values; the query, key, value "
        f"and output projections need at least 4 * D * D = {low} (each maps D = {D} features to D, the first "
        f"three split over the heads).\nLikely mistake: {hint}.")


@pytest.mark.question("mhsa")
def test_mhsa_every_parameter_in_graph(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    check_in_graph(m, randn(rng, (2, 5, 12)), randn(rng, (2, 5, 12)), "MultiHeadSelfAttention(12, 3)")


@pytest.mark.question("mhsa")
def test_mhsa_every_parameter_in_graph_odd_heads(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 10, 5, seed=seed)
    check_in_graph(m, randn(rng, (1, 3, 10)), randn(rng, (1, 3, 10)), "MultiHeadSelfAttention(10, 5)")


UNREAD_WEIGHTS_HINT = ("a projection is computed but its result is not what the output is made of: the values "
                       "taken from the keys (`q, k, v = qkv[0], qkv[1], qkv[1]` with a fused layer: its values' "
                       "third is never read; `attn @ k` instead of `attn @ v`), one of Q, K, V taken from another's "
                       "weights, or a result multiplied by zero or overwritten. Each of the query, key and value "
                       "projections makes its own part, `q, k, v = qkv.unbind(0)`, and the heads average the "
                       "values: softmax(Q K^T / sqrt(d_k)) V with V = X W^V")


def _runs(indices):
    """[3, 4, 5, 9] -> '3..5, 9'."""
    runs, start = [], None
    for i, j in zip(indices, indices[1:] + [None]):
        start = i if start is None else start
        if j != i + 1:
            runs.append(f"{start}..{i}" if i > start else str(i))
            start = None
    return ", ".join(runs)


def _unread_part(name, shape, axis, dead, D):
    """The words for the slices `dead` of parameter `name` along `axis` that did not move the output."""
    part = (("rows", "columns") if len(shape) == 2 else ("entries along the first axis", "entries along the last axis"))
    words = f"{part[0 if axis == 0 else 1]} {_runs(dead)} of `{name}` {tuple(shape)}"
    n = shape[axis]
    if n == 3 * D and len(dead) == D and dead == list(range(dead[0], dead[0] + D)) and dead[0] % D == 0:
        third = ("first", "second", "last")[dead[0] // D]
        words += (f": its {third} third, the {('queries', 'keys', 'values')[dead[0] // D]}' part of a fused "
                  "projection split as q, k, v in that order")
    return words


def _bias_sized(shape, D, h):
    """Whether a parameter of `shape` is too small to be a weight matrix: at most 3D values (the biases of Q, K and
    V, in any shape: a key bias (h, D/h) or (1, 1, D), which rightly never reaches the output, as softmax ignores a
    constant added to a query's scores), while a projection of the D features holds at least D * D/h (one head's
    (D/h, D)): 24 < 32 at the sizes the test uses (D = 8, 2 heads). By its size alone, never its name: a weight
    matrix called a bias is still checked."""
    return int(np.prod(shape)) <= 3 * D


PERTURBED_PER_ROUND_TRIP = 16  # perturbed weights (with their forwards) sent to the worker together


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # the values: a module that averages its keys (v = k) passes every other test
def test_mhsa_every_weight_reaches_the_output(sub, rng, seed):
    # The graph test asks that every parameter get a gradient tensor; a weight can have one and still not
    # count: its result multiplied by zero, or a third of a fused projection computed and dropped (`q, k, v =
    # qkv[0], qkv[1], qkv[1]`: the values are the keys, and the values' rows are never read). In a right
    # module every row and every column of every weight moves the output: the query and key rows through the
    # scores, the value and output rows through what the heads average. So each parameter of two or more
    # dimensions, then each of its slices along its first and its last axis, gets new random values in turn,
    # and the output must change. No layout is assumed. Left out: parameters without a gradient (the graph
    # test charges them), vectors and scalars, and any parameter of at most 3D values, whatever its shape (the
    # key bias rightly changes nothing, also as TransformerLens' b_K (h, D/h)): _bias_sized, by size, not name.
    # In float64 where the module runs in it (a change is then a change above 1e-9 of the output, not 1e-4: a
    # module initialised as GPT-2's Conv1D, weights of std 0.02, moved its output by less than 1e-4 when one key
    # column got new values, at some seeds), else in float32 (the dtype test charges a module that cannot).
    B, N, D, h = 1, 5, 8, 2
    what = f"MultiHeadSelfAttention({D}, {h})"
    for dtype in ("float64", "float32"):
        m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed, dtype=dtype)
        x = randn(rng, (B, N, D), dtype)
        try:
            base = check_shape(forward(m, [x]).outputs[0], (B, N, D), f"{what} output")
        except GradingFailure as e:
            if dtype == "float64" and DTYPE_HINT in e.message:
                continue
            raise
        break
    np_dtype, rel = (np.float64, PRECISE_REL) if dtype == "float64" else (np.float32, 1e-4)
    with explained():
        g = m.grads(x, randn(rng, (B, N, D), dtype))
    has_grad = {p.get("name") for p in (g.get("params", []) if isinstance(g, dict) else []) if p.get("has_grad")}
    shapes = {p["name"]: tuple(p["shape"]) for p in m.params
              if p.get("name") in has_grad and len(p.get("shape") or ()) >= 2 and not _bias_sized(p["shape"], D, h)}
    if not shapes:
        pytest.skip("judged by test_mhsa_every_parameter_in_graph, not here: no weight matrix of the module gets a "
                    "gradient, so none can be checked for reaching the output")
    scale = float(np.max(np.abs(base)))
    noise = np.random.default_rng(seed)
    unread = []
    for name, shape in shapes.items():
        with explained():
            kept = np.array(m.get_params([name])[name], dtype=np_dtype)
        size = max(float(kept.std()), 0.5)
        # the whole weight, then each slice along its first and its last axis, gets new random values in turn;
        # the gradient's zeros are never trusted to skip one (a module's own autograd says what it likes).
        # Each perturbed weight and its forward go to the worker together, a few dozen asks per round trip
        tries = [(Ellipsis,)] + [(slice(None),) * axis + (i,) for axis in sorted({0, len(shape) - 1})
                                 for i in range(shape[axis])]
        moved = []
        try:
            for chunk in range(0, len(tries), PERTURBED_PER_ROUND_TRIP):
                asks = []
                with sub.together(chain=True) as t:
                    for index in tries[chunk:chunk + PERTURBED_PER_ROUND_TRIP]:
                        v = kept.copy()
                        v[index] += (noise.standard_normal(v[index].shape) * size).astype(np_dtype)
                        asks.append((t.set_params(m, {name: torch.from_numpy(v)}), t.forward(m, [x])))
                    t.set_params(m, {name: torch.from_numpy(kept)})
                with naming_globals(m.sub, getattr(m, "sizes", {}), m.cls), explained():
                    for was_set, out in asks:  # in order: a forward is judged only after its weight was set
                        was_set.get()
                        moved.append(changed(check_shape(out.get().outputs[0], (B, N, D), f"{what} output"),
                                             base, scale, rel))
        finally:
            with explained():
                m.set_params({name: torch.from_numpy(kept)})
        if not moved[0]:
            unread.append(f"all of `{name}` {shape}")
            continue
        at = 1
        for axis in sorted({0, len(shape) - 1}):
            dead = [i for i in range(shape[axis]) if not moved[at + i]]
            at += shape[axis]
            if dead:
                unread.append(_unread_part(name, shape, axis, dead, D))
    if unread:
        raise GradingFailure(
            f"{what}: the output stayed as it was when these weights got new random values: "
            f"{'; '.join(unread[:4])}{' ...' if len(unread) > 4 else ''}. They get a gradient, so they are used, "
            "but what they compute never reaches the output (in a right module every row and every column of every "
            "weight matrix moves it)."
            f"\nLikely mistake: {UNREAD_WEIGHTS_HINT}.")


def _mhsa_equivariant(sub, close, rng, seed, B, N, D, h):
    perm = rng.permutation(N)
    while N > 1 and (perm == np.arange(N)).all():
        perm = rng.permutation(N)
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    x = randn(rng, (B, N, D))
    check_deterministic(m, x, f"MultiHeadSelfAttention({D}, {h})")
    r = forward(m, [x, x[:, torch.from_numpy(perm)]])
    what = f"MultiHeadSelfAttention({D}, {h})"
    out = check_shape(r.outputs[0], (B, N, D), f"{what} output")
    out_p = check_shape(r.outputs[1], (B, N, D), f"{what} output for the permuted tokens")
    try:
        close(out_p, out[:, perm], dtype="float32",
              what=f"{what}: the output for the tokens in the order {perm.tolist()} compared with the output for "
                   "the original order, permuted the same way (self-attention without positions must move each "
                   "token's output along with the token)",
              hints=[("the output does not follow the tokens: something depends on the position of a token "
                      "(a fixed positional term, or a softmax/mean over the wrong axis)", out)])
    except GradingFailure as e:
        if e.hinted:
            raise
        hint = CAUSAL_HINT if N > 1 and _causal(m, x, out) else HEAD_SPLIT_HINT
        raise GradingFailure(f"{e.message}\nLikely mistake: {hint}.") from None


CAUSAL_HINT = ("a causal mask: each token attends only to the tokens before it (changing the last token changed "
               "no other token's output), as in a GPT (`torch.tril`, `masked_fill`, is_causal=True); a ViT's "
               "self-attention sees every patch and the class token: no mask")


def _causal(m, x, out):
    """Whether the module's output for every token but the last ignores the last token (a GPT's mask)."""
    x2 = x.clone()
    x2[:, -1] = -x2[:, -1] + 1.0                                                      # (B, D): the last token
    try:
        out2 = as_plain_array(forward(m, [x2]).outputs[0])
    except GradingFailure:
        return False
    if out2 is None or out2.shape != out.shape:
        return False
    scale = max(float(np.max(np.abs(out))), 1e-6)
    return not changed(out2[:, :-1], out[:, :-1], scale) and changed(out2[:, -1], out[:, -1], scale)


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)  # what self-attention is; a head split that mixes tokens fails only here
def test_mhsa_permutation_equivariant(sub, close, rng, seed):
    _mhsa_equivariant(sub, close, rng, seed, 2, 6, 12, 3)


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)
def test_mhsa_permutation_equivariant_odd_heads(sub, close, rng, seed):
    _mhsa_equivariant(sub, close, rng, seed, 3, 7, 10, 5)


NO_MIXING_HINT = ("each token's output depends on that token alone, so the module is not attending: the "
                  "scores must compare every query with every key, Q @ K.transpose(-2, -1) of shape "
                  "(B, heads, N, N), before the softmax over the keys (the last axis). An elementwise "
                  "(Q * K).sum(-1) gives each token only itself. With nn.MultiheadAttention, build it with "
                  "batch_first=True: without it, it reads (N, B, D) and attends over the batch")


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # attention is mixing: a per-token layer passes the equivariance tests trivially
def test_mhsa_mixes_tokens(sub, rng, seed):
    B, N, D, h = 2, 5, 12, 3
    j = int(rng.integers(N))
    x = randn(rng, (B, N, D))
    x2 = x.clone()
    x2[:, j] = randn(rng, (B, D))
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    r = forward(m, [x, x2])
    what = f"MultiHeadSelfAttention({D}, {h})"
    out = check_shape(r.outputs[0], (B, N, D), f"{what} output")
    out2 = check_shape(r.outputs[1], (B, N, D), f"{what} output")
    others = [i for i in range(N) if i != j]
    if not changed(out2[:, others], out[:, others], float(np.max(np.abs(out)))):
        raise GradingFailure(
            f"{what}: changing token {j} did not change the output of any other token, so the module treats "
            "each token on its own. In self-attention every token's output is a weighted sum over the values "
            f"of all tokens.\nLikely mistake: {NO_MIXING_HINT}.")


HEAD_SPLIT_HINT = ("the heads are split or merged with reshape/view alone: (B, N, D) -> (B, h, N, D/h) needs "
                   "`.view(B, N, h, D // h).transpose(1, 2)`, and back `.transpose(1, 2).reshape(B, N, D)`; a "
                   "plain reshape across the token and head axes mixes the tokens, so the output no longer "
                   "moves with its token (or something else in forward depends on where a token is)")

SOFTMAX_HINT = ("the attention weights of a query must be a softmax over the keys: the last axis of the "
                "(B, heads, N, N) scores, `softmax(scores, dim=-1)`")


def _tokens_and_alone(sub, rng, seed, N, D, h, size=2.0):
    """The one-sequence output of N tokens and the output of each token alone (B = 1), in float64 so that
    a least-squares fit is exact: (what, x, out (N, D), single (N, D), tolerance of the fit). A module that
    cannot run in float64 (layers in a plain list stay float32; the dtype test charges it) is judged in
    float32, with a tolerance to match, so that it fails here on the property, if at all."""
    for dtype, tol in (("float64", 1e-5), ("float32", 1e-3)):
        what = f"MultiHeadSelfAttention({D}, {h}) in {dtype}"
        m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed, dtype=dtype)
        x = randn(rng, (1, N, D), dtype) * size
        try:
            check_deterministic(m, x, what)
            r = forward(m, [x] + [x[:, j:j + 1] for j in range(N)])
        except GradingFailure as e:
            if dtype == "float64" and DTYPE_HINT in e.message:
                continue
            raise
        out = check_shape(r.outputs[0], (1, N, D), f"{what} output")[0]                # (N, D)
        single = np.stack([check_shape(o, (1, 1, D), f"{what} output for one token")[0, 0]
                           for o in r.outputs[1:]])                                  # (N, D): g(x_j)
        return what, x, out, single, tol


@pytest.mark.question("mhsa")
@pytest.mark.weight(6)  # the point of attention: each token's output is a weighted average of the values
def test_mhsa_averages_the_values_over_the_keys(sub, rng, seed):
    # With one head, the output of token i is sum_j a_ij g(x_j): a per-token map g (value and output
    # projections, with their biases) averaged with weights a_ij >= 0 that sum to 1 over the keys j.
    # g(x_j) is the output for token j alone (any softmax of a single score is 1), so a least-squares fit of
    # each output row on the single-token outputs (N <= D: a unique fit) must be exact, with weights >= 0
    # summing to 1. Softmax over the queries, or no softmax, leaves weights that do not sum to 1 over the
    # keys (and, with biases, an inexact fit). Any projection layout passes; float64 makes the fit exact.
    B, N, D, h = 1, 4, 8, 1
    what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h)
    fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N): a_ij
    scale = max(float(np.max(np.abs(out))), 1e-12)
    misfit = float(np.max(np.abs(fit @ single - out))) / scale
    rows, cols = fit.sum(axis=1), fit.sum(axis=0)                                  # (N,), (N,)
    alone = np.max(np.abs(out - single)) <= tol * 1e-3 * scale  # every token's output is its output alone
    if misfit <= tol and np.all(np.abs(rows - 1) <= tol) and fit.min() >= -tol and not alone:
        return
    if alone:
        raise GradingFailure(f"{what} on {N} tokens with one head: the output of each token is exactly its "
                             f"output when it is alone: the weights over the keys are the identity, no token "
                             f"is averaged with another.\nLikely mistake: {NO_MIXING_HINT}.")
    found = (f"the output of each token, written as a weighted sum of the outputs of the tokens alone, has "
             f"weights over the keys that sum to {np.round(rows, 4).tolist()} (they must sum to 1 and be >= 0)"
             + (f", and even that sum misses the output by {misfit:.2g} of its size" if misfit > tol else ""))
    xs = as_np(x[0])                                                                   # (N, D)
    fit_res = np.linalg.lstsq((single - xs).T, (out - xs).T, rcond=None)[0].T         # (N, N)
    if (np.max(np.abs(fit_res @ (single - xs) - (out - xs))) / scale <= tol
            and np.all(np.abs(fit_res.sum(axis=1) - 1) <= tol)):
        mistake = ("the module adds its input to the attention output (a residual connection inside "
                   "MultiHeadSelfAttention). The encoder block adds the residual (Z = Z + MHSA(LN(Z))); the "
                   "module is the attention alone, or the block adds its input twice")
    elif np.all(np.abs(cols - 1) <= 10 * tol):
        mistake = ("softmax over the queries (dim=-2) instead of the keys: the weights sum to 1 down each "
                   "column of the attention matrix, not along each row; " + SOFTMAX_HINT)
    elif float(np.ptp(rows)) <= 10 * tol and abs(float(rows.mean())) > 10 * tol:  # every query's: one c, not 1 or 0
        mistake = (f"the weights are changed after the softmax: every query's weights sum to the same "
                   f"{float(rows.mean()):.4g}, not 1, as a softmax's do once something scales or shifts them all "
                   "alike: a layer applied to the weights (CaiT's talking heads: a linear map across the heads "
                   "after the softmax, `attn = self.proj_w(attn)`), a gain or a bias on them. The weights of a "
                   "query are the softmax itself, applied to the values as they are; " + SOFTMAX_HINT)
    else:
        mistake = (f"no softmax, or a softmax over the wrong axis; {SOFTMAX_HINT}. (A residual connection or "
                   "a normalization inside the module has the same effect: the encoder block adds the "
                   "residual, MHSA is the attention alone.)")
    raise GradingFailure(f"{what} on {N} tokens with one head: {found}.\nLikely mistake: {mistake}")


SYMMETRIC_HINT = ("the keys are the queries: K is computed with the query layer (`k = self.q(x)`), or Q and K are "
                  "one tensor, so the scores Q @ K^T are symmetric and token i weighs token j as j weighs i. The "
                  "key projection W^K is a layer of its own, next to W^Q and W^V")


@pytest.mark.question("mhsa")
@pytest.mark.weight(6)  # queries and keys are what attention compares: with K = Q it is another function
def test_mhsa_queries_and_keys_differ(sub, rng, seed):
    # With one head the weights a_ij of query i over key j are recovered exactly (see the test above). If
    # the scores are symmetric (s_ij = s_ji: the keys made by the query layer), a_ij = exp(s_ij) / Z_i, so
    # around every cycle of three tokens a_ij a_jk a_ki = a_ik a_kj a_ji (the products of the Z_i cancel).
    # Separate query and key projections break that by O(1) in the log. No layout is assumed.
    B, N, D, h = 1, 5, 8, 1
    # tokens of a smaller size where the first ones' weights are too peaked to read (a query scoring itself far
    # above the rest, as symmetric scores do: every cycle holds a weight near 0); the scores shrink with the
    # square of the size, the cycles of separate query and key projections with them, the rounding does not
    for size in (2.0, 0.5, 0.125):
        what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h, size)
        fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N): a_ij
        scale = max(float(np.max(np.abs(out))), 1e-12)
        misfit = float(np.max(np.abs(fit @ single - out))) / scale
        if (misfit > tol or np.any(np.abs(fit.sum(axis=1) - 1) > tol) or fit.min() < -tol
                or np.max(np.abs(out - single)) <= tol * 1e-3 * scale):
            pytest.skip("judged by test_mhsa_averages_the_values_over_the_keys, not here: the outputs are not a "
                        "softmax-weighted average of the values with weights of a useful size, so the weights of "
                        "the queries over the keys cannot be read off")
        log_a = np.log(np.maximum(fit, 1e-300))
        # how far each weight read may be off: the fit's residual (the outputs' rounding, in float64 or float32)
        # through the inverse of the single-token outputs, ten times over; a cycle's own bar is what its six
        # weights' errors give in the log
        err = 10 * (float(np.max(np.abs(fit @ single - out))) + _eps(tol) * scale * D) \
            / max(float(np.linalg.svd(single, compute_uv=False).min()), 1e-300)
        cycles = [(abs(log_a[i, j] + log_a[j, k] + log_a[k, i] - log_a[i, k] - log_a[k, j] - log_a[j, i]),
                   sum(err / fit[a, b] for a, b in ((i, j), (j, k), (k, i), (i, k), (k, j), (j, i))))
                  for i in range(N) for j in range(i + 1, N) for k in range(j + 1, N)
                  if min(fit[a, b] for a in (i, j, k) for b in (i, j, k)) > 1e-3]  # weights read accurately
        if cycles:
            break
    if not cycles:
        pytest.skip("the attention weights of these tokens are too close to 0 to compare the cycles")
    # how far the scores of a query differ, over the weights read accurately (as the cycles): a weight the
    # fit reads as ~0 or below (log clamped at 1e-300) would make the spread, and the bar below, huge
    accurate = fit > 1e-3
    spread = max((float(log_a[i][accurate[i]].max() - log_a[i][accurate[i]].min())
                  for i in range(N) if accurate[i].sum() >= 2), default=0.0)
    if spread < 1e-3:
        pytest.skip("judged by the other tests, not here: every query weighs the keys (almost) equally, so "
                    "there is no order of the scores to compare")
    # symmetric scores leave only the fit's rounding in the cycles, within each cycle's bar; separate query
    # and key projections leave the antisymmetric part of the scores, s_ij - s_ji, around each cycle: small
    # where the scores are (small weights), or where the draw makes it so, but far above the rounding (a
    # bar in proportion to the spread of the scores failed a correct module whose largest cycle was 1% of it)
    if any(gap > bar for gap, bar in cycles):
        return
    if max(bar for _, bar in cycles) > 0.1 * spread:  # (float32 and nearly parallel single-token outputs)
        pytest.skip("the attention weights could not be read off precisely enough to compare the cycles "
                    "(the outputs' rounding is too large beside the spread of the scores)")
    raise GradingFailure(
        f"{what} on {N} tokens with one head: the attention weights a_ij (query i over key j), read off the "
        f"outputs, satisfy a_ij a_jk a_ki = a_ik a_kj a_ji around every cycle of three tokens (largest gap in "
        f"the log: {max(g for g, _ in cycles):.2g}, within the rounding of the outputs): the scores are "
        f"symmetric, token i scores token j exactly as j scores i.\nLikely mistake: {SYMMETRIC_HINT}.")


def _eps(tol):
    """The rounding unit of the dtype _tokens_and_alone ran in, told by its tolerance (float64: 1e-5)."""
    return float(np.finfo(np.float64 if tol <= 1e-5 else np.float32).eps)


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # "multi-head": one attention pattern for every feature is a single head
def test_mhsa_uses_several_heads(sub, rng, seed):
    # With one head, out_i = sum_j a_ij g(x_j), g(x_j) being the output for token j alone: every output row
    # lies in the span of the single-token outputs (see test_mhsa_averages_the_values_over_the_keys). With h
    # heads, each with its own softmax, out_i = sum_h sum_j a^h_ij g^h(x_j) leaves that span (N < D), because
    # the heads weigh the tokens differently. A module that ignores num_heads (one head of width D), or shares
    # one attention pattern across the heads, stays in it exactly.
    B, N, D, h = 1, 3, 12, 3
    what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h)
    fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N)
    scale = max(float(np.max(np.abs(out))), 1e-12)
    misfit = float(np.max(np.abs(fit @ single - out))) / scale
    if np.max(np.abs(out - single)) <= tol * 1e-3 * scale:
        raise GradingFailure(f"{what} on {N} tokens: each token's output is its output alone, so there is no "
                             f"attention, and no heads to tell apart.\nLikely mistake: {NO_MIXING_HINT}.")
    if misfit > tol / 10:
        return  # several heads
    raise GradingFailure(
        f"{what} on {N} tokens: every output row is a weighted sum of the outputs of the tokens alone, which "
        f"is what one attention head gives: all {D} features were mixed with the same attention weights.\n"
        f"Likely mistake: the heads are not split (num_heads is ignored, or one softmax over the full width is "
        f"shared by the heads): each of the {h} heads needs its own scores from its own {D // h}-wide slice of "
        "Q and K, its own softmax, and its own slice of V; then concatenate the heads.")


def _mhsa_batch_independent(sub, close, rng, seed, N, D, h):
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    x1, x2, x3 = (randn(rng, (1, N, D)) for _ in range(3))
    r = forward(m, [torch.cat([x1, x2]), torch.cat([x1, x3])])
    what = f"MultiHeadSelfAttention({D}, {h})"
    a = check_shape(r.outputs[0], (2, N, D), f"{what} output")
    b = check_shape(r.outputs[1], (2, N, D), f"{what} output")
    close(b[0], a[0], dtype="float32",
          what=f"{what}: the output for the first sequence of a batch, when only the second sequence "
               "changes (sequences of a batch must not see each other: is attention, a softmax or a mean "
               "taken over the batch axis? nn.MultiheadAttention reads (N, B, D) unless built with "
               "batch_first=True)")


@pytest.mark.question("mhsa")
def test_mhsa_batch_independent(sub, close, rng, seed):
    _mhsa_batch_independent(sub, close, rng, seed, 5, 12, 3)


@pytest.mark.question("mhsa")
def test_mhsa_batch_independent_odd_heads(sub, close, rng, seed):
    _mhsa_batch_independent(sub, close, rng, seed, 3, 10, 5)


@pytest.mark.question("mhsa")
def test_mhsa_dtype_and_device(sub, rng, seed, device, float_dtype):
    B, N, D, h = 2, 5, 12, 3
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed, device=device, dtype=float_dtype)
    r = forward(m, [randn(rng, (B, N, D), float_dtype, device)])
    what = f"MultiHeadSelfAttention({D}, {h}) in {float_dtype} on {device}"
    check_shape(r.outputs[0], (B, N, D), f"{what}: the output")
    if r.dtypes[:1] != [float_dtype] or not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"{what}: the output is {r.dtypes[0]} on {r.devices[0]}; it must have the "
                             "input's dtype and device (no hard-coded .float(), float32 or device inside forward)")


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)  # a module that fails on every GPU
def test_mhsa_runs_on_another_device(sub, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    shape = check_runs_on_another_device(m, (2, 5, 12), "MultiHeadSelfAttention(12, 3)")
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, 5, 12]:
        raise GradingFailure(f"MultiHeadSelfAttention(12, 3) on another device returned shape {tuple(shape)}; "
                             "expected (2, 5, 12)")


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_mhsa_to_cuda(sub, rng, seed, device):
    B, N, D, h = 2, 5, 12, 3
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    with explained():
        moved = m.to(device)
    stayed = [p["name"] for p in moved.get("params", []) if not str(p.get("device")).startswith(device)]
    if stayed:
        raise GradingFailure(f"MultiHeadSelfAttention.to('cuda') left these parameters behind: "
                             f"{', '.join(stayed[:5])}\nLikely mistake: {LIST_HINT}.")
    r = forward(m, [randn(rng, (B, N, D), "float32", device)])
    check_shape(r.outputs[0], (B, N, D), "MultiHeadSelfAttention moved to cuda: the output")
    if not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"MultiHeadSelfAttention moved to cuda returned its output on {r.devices[0]}")


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # detached attention weights: the right output, and the queries and keys never learn
def test_mhsa_gradient_follows_the_output(sub, rng, seed):
    # test_mhsa_every_parameter_in_graph asks `grad is not None` only (the key bias rightly gets a zero gradient);
    # with a fused qkv projection a module that detaches its attention weights still gives every parameter a
    # gradient (the values' rows). Here autograd's slope of loss = sum(output * W) along two random directions of
    # the parameters must agree with central finite differences of forwards (checker.running.modules), in float64.
    B, N, D, h = 2, 5, 8, 2
    check_gradient_follows(lambda dtype: new(sub, "MultiHeadSelfAttention", D, h, seed=seed, dtype=dtype),
                           randn(rng, (B, N, D), "float64"), randn(rng, (B, N, D), "float64"), seed,
                           f"MultiHeadSelfAttention({D}, {h})")


AFFINE_HINT = ("a normalization or a nonlinearity inside the module (a LayerNorm of X before the projections, an "
               "activation on the queries, keys, values or the output): MultiHeadSelfAttention is the attention alone, "
               "W^O Concat(softmax(Q K^T / sqrt(D/num_heads)) V) with Q, K and V linear projections of X itself; the "
               "encoder block applies the LayerNorm before it (Z = Z + MHSA(LN(Z))). (A softmax over another axis than "
               "the keys does this too: over a single key it is exactly 1, over the heads or the features it is not)")
ONE_TOKEN_MIXES = (2.0, -1.0, 0.25)  # a: the token a x + (1 - a) y; outside [0, 1] a scale-invariant map shows


def _one_token_points(x, y):
    """The single tokens the affinity test sends: x, y, 0, x + y and a x + (1 - a) y for each a."""
    return [x, y, torch.zeros_like(x), x + y] + [a * x + (1 - a) * y for a in ONE_TOKEN_MIXES]


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)  # MHSA is the attention alone: a LayerNorm (or an activation) inside passes the other tests
def test_mhsa_is_affine_on_one_token(sub, rng, seed):
    # With one token (N = 1) every softmax is of a single score, so every weight is 1 and the output is
    # W^O (W^V x + b_V) + b_O, whatever the layout (fused or per-head projections, nn.MultiheadAttention, SDPA,
    # with or without biases): an affine function g of the token. So g(a x + (1 - a) y) = a g(x) + (1 - a) g(y),
    # also for a outside [0, 1] (a LayerNorm, invariant to the scale of its input, fails there), and g(x + y) + g(0)
    # = g(x) + g(y). A LayerNorm, an activation or any normalization inside the module breaks that by O(1); the
    # outputs are compared in float64 (float32 where the module cannot run in it, with a tolerance to match).
    D, h = 12, 3
    for dtype, tol in (("float64", 1e-5), ("float32", 1e-3)):  # (float64: room for a part computed in float32)
        what = f"MultiHeadSelfAttention({D}, {h}) in {dtype}"
        x, y = randn(rng, (1, 1, D), dtype), randn(rng, (1, 1, D), dtype)
        several = randn(rng, (1, 5, D), dtype)  # the determinism check's input (dropout shows on several tokens)
        points = _one_token_points(x, y)
        try:
            with sub.together(chain=True) as t:  # the module, the determinism check and every point: one round trip
                made = new_asked(t, sub, "MultiHeadSelfAttention", D, h, seed=seed, dtype=dtype)
                asks = deterministic_asks(t, made, several)
                ran = forward_asked(t, made, points)
            m = made.get()
            check_deterministic_asked(m, several, what, asks)
            r = ran.get()
        except GradingFailure as e:
            if dtype == "float64" and DTYPE_HINT in e.message:
                continue
            raise
        g = [check_shape(o, (1, 1, D), f"{what} output for one token")[0, 0] for o in r.outputs]
        if dtype == "float64" and list(r.dtypes[:1]) != ["float64"]:
            tol = 1e-3  # answered in another dtype (a cast inside forward, which the dtype test charges)
        gx, gy, g0, gxy = g[:4]
        scale = max(float(np.max(np.abs(np.stack(g)))), 1e-12)
        gaps = [(f"g({a:g} x {'-' if a > 1 else '+'} {abs(1 - a):g} y) against {a:g} g(x) {'-' if a > 1 else '+'} "
             f"{abs(1 - a):g} g(y)",
                 float(np.max(np.abs(ga - (a * gx + (1 - a) * gy)))) / scale)
                for a, ga in zip(ONE_TOKEN_MIXES, g[4:])]
        gaps.append(("g(x + y) + g(0) against g(x) + g(y)", float(np.max(np.abs(gxy + g0 - gx - gy))) / scale))
        worst = max(gaps, key=lambda t: t[1])
        if worst[1] <= tol:
            return
        # random in eval mode after all (a dropout the check above missed): the determinism check's words
        again = m.forward(points, seed=1).outputs
        if any(changed(check_shape(o, (1, 1, D), f"{what} output for one token")[0, 0], gi, scale)
               for o, gi in zip(again, g)):
            raise GradingFailure(f"{what}: {RANDOM_IN_EVAL_HINT}.")
        raise GradingFailure(
            f"{what} on one token (N = 1, where every softmax weight is 1): the output g(x) is not an affine function "
            f"of the token, as W^O (W^V x + b_V) + b_O is: {worst[0]} differ by {worst[1]:.3g} of the outputs' size "
            f"(rounding would be under {tol:g}).\nLikely mistake: {AFFINE_HINT}.")
