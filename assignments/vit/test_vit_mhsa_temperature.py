"""Grading tests of `vit`, question mhsa: the temperature of the softmax (see _common.py for what the tests share).

What it is for: with its projections set to the identity and its biases to zero, a multi-head self-attention
is a fixed function of its input whose one free choice is the temperature (and, where a mistake puts it
there, a factor on its output); the test fits both and names what the module divides its scores by. Apart
from test_vit_mhsa.py because every other mhsa test holds at any temperature.
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers


def _identity_weights(m, D, h):
    """The ways to make the module's projections the identity and its biases zero that its names and shapes
    allow, each {name: value}: square (D, D) projections, a fused (3D, D) one (any order of Q, K, V: all are
    the identity; or split head by head, timm's `reshape(B, N, h, 3, D/h)`), a (h, D, D/h) tensor of the heads'
    projections, and one projection of Q, K and V per head, (D/h, D) as a layer's weight or (D, D/h) used as
    `X @ W` (`heads.2.query`, `W_Q.2`: the head's number in the name gives its slice). An empty list for any
    other parameter (a norm's weight, a per-head layout it cannot number): the temperature is then not checked
    here. A learnable scalar (a gain on the output, a temperature) is left as the module made it, and in a
    second way set to 1."""
    dh, eye = D // h, np.eye(D, dtype=np.float32)
    values, per_head, fused, scalars = {}, {}, [], []
    for p in m.params:
        name, shape = p.get("name"), tuple(p.get("shape", ()))
        if not isinstance(name, str):
            return []
        if int(np.prod(shape)) == 1:  # a learnable scalar (a gain, a temperature): as built, or 1
            scalars.append((name, shape))
            continue
        if shape == (D, D):
            values[name] = eye
        elif shape == (3 * D, D):
            values[name] = np.concatenate([eye, eye, eye])
            fused.append(name)
        elif shape in ((D,), (3 * D,), (dh,)):
            values[name] = np.zeros(shape, dtype=np.float32)
        elif shape == (h, D, dh):  # one (D, D/h) matrix a head, used as x @ W[i]
            values[name] = np.stack([eye[:, i * dh:(i + 1) * dh] for i in range(h)])
        elif shape == (h, dh, D) and dh != D:  # ... used as x @ W[i].T
            values[name] = np.stack([eye[i * dh:(i + 1) * dh] for i in range(h)])
        elif shape in ((dh, D), (D, dh)) and h > 1:  # one head's projection: a layer's weight, or x @ W
            head = re.findall(r"(?<!\d)\d{1,6}(?!\d)", name)  # a head index; a run of 5,000 digits is none
            if not head or not 0 <= int(head[0]) < h:
                return []
            per_head.setdefault(int(head[0]), []).append(name)
            rows = eye[int(head[0]) * dh:(int(head[0]) + 1) * dh]                      # (dh, D)
            values[name] = rows if shape == (dh, D) else np.ascontiguousarray(rows.T)
        else:
            return []
    if per_head and sorted(per_head) != list(range(h)):
        return []
    ways = [values]
    if fused and h > 1:  # rows of the fused projection head by head: (head, Q/K/V, D/h)
        by_head = np.concatenate([eye[i * dh:(i + 1) * dh] for i in range(h) for _ in range(3)])
        ways.append({**values, **{name: by_head for name in fused}})
    if scalars:  # each way with its scalars as the module made them, then set to 1 (a gain that starts elsewhere)
        ways += [{**way, **{n: np.ones(shape, dtype=np.float32) for n, shape in scalars}} for way in list(ways)]
    return ways


def _attention_with_identity_weights(x, h, tau, strided=False):
    """MHSA of x (N, D) with the identity for W^Q, W^K, W^V and W^O, no biases, scores divided by `tau`; head i
    holds the features i*D/h .. (i+1)*D/h - 1, or, `strided`, the features i, i+h, i+2h, ... (a head split by
    `view(B, N, D/h, h)`: the same attention with its weights' columns in another order)."""
    N, D = x.shape
    dh, out = D // h, np.zeros_like(x)
    for i in range(h):
        cols = slice(i, D, h) if strided else slice(i * dh, (i + 1) * dh)
        xi = x[:, cols]                                                               # (N, dh): q = k = v
        s = xi @ xi.T / tau                                                           # (N, N)
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        out[:, cols] = (a / a.sum(axis=-1, keepdims=True)) @ xi                       # (N, dh)
    return out


# (hint, the temperature it gives as a function of D, D/num_heads, num_heads and the number of tokens N): the
# scores of a module that divides them by one of these fail naming it; any other temperature fails too, with
# the value the fit found. The sizes below keep them pairwise apart (D = 12, 3 heads, N = 5 and 7).
SCALING_HINTS = (("no scaling: the scores Q K^T are not divided at all", lambda D, dh, h, N: 1.0),
                 ("the scores are divided by sqrt(D), the model's width, not by sqrt(D/num_heads), the width "
                  "of a head (a single-head formula such as `* C**-0.5` with C the input's last size)",
                  lambda D, dh, h, N: np.sqrt(D)),
                 ("the scores are divided by D/num_heads, not by its square root", lambda D, dh, h, N: float(dh)),
                 ("the scores are divided by D, not by sqrt(D/num_heads)", lambda D, dh, h, N: float(D)),
                 ("the scores are multiplied by sqrt(D/num_heads) instead of divided by it",
                  lambda D, dh, h, N: 1.0 / np.sqrt(dh)),
                 ("the scores are divided by sqrt(num_heads), the number of heads, not by sqrt(D/num_heads), the "
                  "width of one head (`math.sqrt(self.num_heads)` where `math.sqrt(self.head_dim)` was meant)",
                  lambda D, dh, h, N: np.sqrt(h)),
                 ("the scores are divided by num_heads, not by sqrt(D/num_heads)", lambda D, dh, h, N: float(h)),
                 ("the scores are divided by sqrt(N), the number of tokens, not by sqrt(D/num_heads), the width of "
                  "a head: the size of the wrong axis of the keys (`k.size(-2)`, `x.shape[1]`, the tokens) where "
                  "`k.size(-1)` (the head's features) was meant",
                  lambda D, dh, h, N: np.sqrt(N)),
                 ("the scores are divided by N, the number of tokens, not by sqrt(D/num_heads)",
                  lambda D, dh, h, N: float(N)))

OUTSIDE_HINT = ("the scale is applied outside the softmax (to the values, to each head's output or to the attention "
                "output) instead of to the scores: softmax(Q K^T) V / sqrt(d_k) is not softmax(Q K^T / sqrt(d_k)) "
                "V. Divide the scores, before the softmax")

TEMPERATURE_HINT = ("the scale of the scores: each head divides Q K^T by sqrt(d_k), d_k = D/num_heads the width of "
                    "one head's keys (`k.size(-1)`, `self.head_dim`), before the softmax, and nothing else scales "
                    "the attention")


def _close_to(got, want):
    return float(np.max(np.abs(got - want))) <= 1e-4 * max(float(np.max(np.abs(want))), 1.0)


def _fit_temperature(got, xs, h, gain):
    """(tau, c) such that c * _attention_with_identity_weights(xs, h, tau) (either head split) is `got` up to
    float32 rounding, or None. c is 1 unless `gain`, where it is fitted too (least squares for each tau). tau is
    searched on a log grid from 0.05 to 200, then refined around the best point; a best point at either end (a
    hard max, or a plain mean of the tokens) is no temperature."""
    best = None
    for strided in (False, True):
        def model(log_tau):
            f = _attention_with_identity_weights(xs, h, float(np.exp(log_tau)), strided)
            c = float((f * got).sum() / max(float((f * f).sum()), 1e-300)) if gain else 1.0
            return float(((got - c * f) ** 2).sum()), c, f

        grid = np.linspace(np.log(0.05), np.log(200.0), 281)
        errs = [model(t)[0] for t in grid]
        i = int(np.argmin(errs))
        if i in (0, len(grid) - 1):
            continue
        lo, hi, g = grid[i - 1], grid[i + 1], (np.sqrt(5) - 1) / 2
        for _ in range(60):  # golden-section search: the misfit is unimodal between the grid's neighbours
            a, b = hi - g * (hi - lo), lo + g * (hi - lo)
            if model(a)[0] <= model(b)[0]:
                hi = b
            else:
                lo = a
        t = (lo + hi) / 2
        _, c, f = model(t)
        if abs(c) > 1e-3 and _close_to(got, c * f) and (best is None or model(t)[0] < best[2]):
            best = (float(np.exp(t)), c, model(t)[0])
    return None if best is None else best[:2]


def _same(a, b, rel=2e-3):
    return abs(a - b) <= rel * max(abs(a), abs(b))


def _diagnosis(fits, D, h, Ns):
    """What the temperatures fitted on len(Ns) inputs of Ns tokens (a list of (tau, c)) say: (the scores'
    divisor in words, the likely mistake)."""
    dh = D // h
    taus, gains = [f[0] for f in fits], [f[1] for f in fits]
    named = next((hint for hint, tau in SCALING_HINTS
                  if all(_same(t, tau(D, dh, h, n)) for t, n in zip(taus, Ns))), None)
    if all(_same(t, taus[0]) for t in taus):
        said = f"{taus[0]:.4g}"
    else:
        said = ("a number that changes with the number of tokens (" + ", ".join(
            f"{t:.4g} for {n} tokens" for t, n in zip(taus, Ns)) + ")")
        named = named or ("the scale changes with the number of tokens: it reads the size of the token axis "
                          "(`k.size(-2)`, `x.shape[1]`, N) where the width of a head, D/num_heads, was meant")
    if all(_same(c, 1.0, 1e-3) for c in gains):
        return said, named or f"{TEMPERATURE_HINT}, not by {said}"
    c = gains[0]
    said += f", and whose output is then multiplied by {c:.4g}"
    if all(_same(t, 1.0) for t in taus) and all(_same(g, 1 / np.sqrt(dh)) for g in gains):
        return said + f" = 1/sqrt({dh})", OUTSIDE_HINT
    return said, (f"a factor outside the softmax ({c:.4g} on the output: on the values, the heads' outputs or the "
                  f"attention output){'' if named is None else ', and ' + named}; {TEMPERATURE_HINT}")


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # the temperature: softmax(Q K^T / sqrt(D/num_heads)), step 3 of the handout
def test_mhsa_scales_the_scores_by_the_head_width(sub, rng, seed):
    # Every other test holds at any temperature. With its projections set to the identity and its biases to
    # zero (what the layout allows: _identity_weights), the module is a fixed function of its input whose only
    # free choice is the temperature: it must match sqrt(D/num_heads) on 5 tokens and on 7. Otherwise the
    # temperature is fitted (and, failing that, a factor on the output with it: a scale put after the softmax),
    # on each input, and the test fails naming what the scores are divided by (a divisor that changes with the
    # number of tokens reads the wrong axis). Only a module that answers as attention at no temperature (a mask
    # or a norm inside, a head split the grader does not know), or whose projections the grader cannot set from
    # their names and shapes, is skipped: the other tests judge it (a skip earns nothing, and costs a right
    # module nothing).
    D, h, Ns = 12, 3, (5, 7)
    dh = D // h
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    ways = _identity_weights(m, D, h)
    if not ways:  # no parameters, or a layout the names and shapes do not tell: the other tests judge it
        pytest.skip("the temperature was not checked: the grader cannot set this module's projections to the "
                    "identity from their names and shapes (the other tests judge it)")
    xs = [randn(rng, (1, n, D)) for n in Ns]
    plain = [as_np(x[0]) for x in xs]                                                  # (N, D) each
    answers = []
    for values in ways:  # a right module passes in the first way its names allow that makes it attention
        m.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in values.items()})
        outs = forward(m, xs).outputs
        got = [check_shape(o, (1, n, D), f"MultiHeadSelfAttention({D}, {h}) output")[0] for o, n in zip(outs, Ns)]
        if all(any(_close_to(g, _attention_with_identity_weights(p, h, np.sqrt(dh), strided))
                   for strided in (False, True)) for g, p in zip(got, plain)):
            return
        answers.append(got)
    for gain in (False, True):  # a temperature alone explains it, else a temperature and a factor on the output
        for got in answers:
            fits = [_fit_temperature(g, p, h, gain) for g, p in zip(got, plain)]
            if all(f is not None for f in fits):
                said, hint = _diagnosis(fits, D, h, Ns)
                raise GradingFailure(
                    f"MultiHeadSelfAttention({D}, {h}), with its projections set to the identity and its biases to "
                    f"zero, answers as attention whose scores are divided by {said}; a right one divides them by "
                    f"sqrt(D/num_heads) = sqrt({dh}) = {np.sqrt(dh):.4g}, before the softmax, and scales nothing "
                    f"else: the softmax is too sharp or too flat, so each token averages the values with the wrong "
                    f"weights.\nLikely mistake: {hint}.")
    pytest.skip("the temperature was not checked: with its projections set to the identity the module answers "
                "as attention at no temperature, even with a factor on its output (a mask or a norm inside, or a "
                "head split the grader does not know); the other tests judge it")
