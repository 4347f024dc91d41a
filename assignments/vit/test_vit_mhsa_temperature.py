"""Grading tests of `vit`, question mhsa: the temperature of the softmax (see _common.py for what the tests share).

What it is for: with its projections set to the identity and its biases to zero, a multi-head self-attention
is a fixed function of its input whose one free choice is the temperature (and, where a mistake puts it
there, a factor on its output); the test fits both and names what the module divides its scores by. Apart
from test_vit_mhsa.py because every other mhsa test holds at any temperature. The same forwards tell whether Q, K
and V are split into heads alike: a module whose keys are split one way (every h-th feature) and its queries
another (contiguous blocks) is, over all weights, the same family of functions as a right one (its W^K's columns
permuted), so no property of its behaviour tells it apart; with its projections known (the identity), it answers as
no consistent split does, and as its mismatched splits do (_MISMATCHED_SPLITS). And where no temperature fits, the
same forwards still tell attention of some kind (each head's output an average of its values whose weights grow with
q . k: a mask, a layout the grader does not know) from an average whose weights do not follow the scores at all
(`sqrt(d_k) / (Q K^T)`, negated scores: _recovered_weights), which no other mhsa test judges by value. The same
forwards, with the 5 tokens also sent scaled by QK_SCALE, tell scores that are the plain q . k (whose weights sharpen
with the input's scale as softmax(c^2 q . k / sqrt(d_k)) says, at any temperature) from q and k normalised (timm's
qk-norm, Swin-V2's cosine attention: weights that do not change with it) or clamped (_qk_scale.py).
"""

import itertools

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._qk_scale import QK_SCALE, gain_ways, qk_scale_failure  # do the scores grow with the input as q . k?
from checker.judging.packed_layouts import (head_index, identity_readings, identity_weights, unread_message,
                                            unread_projections)


MAX_WAYS = 4  # readings of the layout tried, each one set_params and one forward (all sent together)


def _head_index(name, h):
    """The head a per-head parameter's name numbers (its first number), or None (packed_layouts.head_index)."""
    return head_index(name, h)


def _identity_readings(shape, D, h, head=None):
    """packed_layouts.identity_readings: the axis readings of a projection, or its packed ones."""
    return identity_readings(shape, D, h, head)


def _identity_weights(m, D, h, guessed=None):
    """packed_layouts.identity_weights (its docstring says how), at most MAX_WAYS ways; `guessed` gets the names
    read only from their size (packed)."""
    return identity_weights(m, D, h, MAX_WAYS, guessed)


def _attention_with_identity_weights(x, h, tau, strided=False, splits=None):
    """MHSA of x (N, D) with the identity for W^Q, W^K, W^V and W^O, no biases, scores divided by `tau`; head i
    holds the features i*D/h .. (i+1)*D/h - 1, or, `strided`, the features i, i+h, i+2h, ... (a head split by
    `view(B, N, D/h, h)`: the same attention with its weights' columns in another order). `splits`, four flags
    (strided or not) for the queries, the keys, the values and the merge of the heads back into D features, splits
    each its own way (a module whose splits disagree: _MISMATCHED_SPLITS)."""
    N, D = x.shape
    dh, out = D // h, np.zeros_like(x)
    sq, sk, sv, so = splits or (strided,) * 4
    for i in range(h):
        q, k, v, o = (slice(i, D, h) if s else slice(i * dh, (i + 1) * dh) for s in (sq, sk, sv, so))
        s = x[:, q] @ x[:, k].T / tau                                                 # (N, N)
        a = np.exp(s - s.max(axis=-1, keepdims=True))
        out[:, o] = (a / a.sum(axis=-1, keepdims=True)) @ x[:, v]                     # (N, dh)
    return out


# Any split of the features into heads is a layout, contiguous blocks (`view(B, N, h, D/h)`) or every h-th feature
# (`view(B, N, D/h, h)`), but the queries, the keys and the values are split the same way and the heads merged
# back the way they were split: head i's queries meet head i's keys and average head i's values. A module whose
# splits disagree (the keys split by `view(B, N, D/h, h)`, the queries by `view(B, N, h, D/h)`) answers, with the
# identity for its projections, as no consistent split at any temperature does, and as one of these at sqrt(D/h).
# (Each flag: strided or not, for the queries, keys, values and merge; the two where all agree are the layouts.)
_MISMATCHED_SPLITS = [s for s in itertools.product((False, True), repeat=4) if len(set(s)) > 1]

_SPLIT_NAMES = ("contiguous blocks of D/num_heads features (`view(B, N, num_heads, D // num_heads)`)",
                "every num_heads-th feature (`view(B, N, D // num_heads, num_heads)`)")


def _mismatch_hint(splits):
    """The likely mistake of a module that answers as `splits` (one of _MISMATCHED_SPLITS)."""
    sq, sk, sv, so = splits
    if sq != sk:
        what = (f"the queries and the keys are split into heads differently (the queries into "
                f"{_SPLIT_NAMES[sq]}, the keys into {_SPLIT_NAMES[sk]}), so head i's queries meet another "
                "head's keys")
    elif sv != sq:
        what = (f"the values are split into heads differently from the queries and keys (the values into "
                f"{_SPLIT_NAMES[sv]}, the queries and keys into {_SPLIT_NAMES[sq]}), so head i's attention "
                "weights average another head's values")
    else:
        what = (f"the heads are merged back in another order than they were split (split into "
                f"{_SPLIT_NAMES[sq]}, merged as {_SPLIT_NAMES[so]}), so each head's output lands on another "
                "head's features")
    return (f"mismatched head splits: {what}. Split Q, K and V the same way, e.g. each with "
            "`.view(B, N, num_heads, D // num_heads).transpose(1, 2)`, and merge with the inverse, "
            "`.transpose(1, 2).reshape(B, N, D)`")


# (hint, the temperature it gives as a function of D, D/num_heads, num_heads and the number of tokens N): the
# scores of a module that divides them by one of these fail naming it; any other temperature fails too, with
# the value the fit found. The test's sizes keep them pairwise apart and apart from the right one, sqrt(6):
# D = 24, 4 heads, N = 5 and 7 (with 3 heads of 4, `4 ** 1/2` = 2 = sqrt(4); with 2 heads, 2 D/h = D).
SCALING_HINTS = (("no scaling: the scores Q K^T are not divided at all", lambda D, dh, h, N: 1.0),
                 ("the scores are divided by sqrt(D), the model's width, not by sqrt(D/num_heads), the width "
                  "of a head (a single-head formula such as `* C**-0.5` with C the input's last size)",
                  lambda D, dh, h, N: np.sqrt(D)),
                 ("the scores are divided by D/num_heads, not by its square root", lambda D, dh, h, N: float(dh)),
                 ("the scores are divided by D, not by sqrt(D/num_heads)", lambda D, dh, h, N: float(D)),
                 ("operator precedence: `head_dim ** 1/2` is (head_dim ** 1) / 2 = D/num_heads / 2, not its square "
                  "root, because `**` binds tighter than `/`; write `head_dim ** 0.5` or `math.sqrt(head_dim)`",
                  lambda D, dh, h, N: dh / 2),
                 ("operator precedence: `scores / head_dim ** 1/2` divides by head_dim and then by 2, because `**` "
                  "binds tighter than `/`; write `scores / head_dim ** 0.5` or `scores / math.sqrt(head_dim)`",
                  lambda D, dh, h, N: 2.0 * dh),
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


# With V and W^O the identity, each head of any attention outputs, for each query, a convex combination of that head's
# value rows: out_h = A_h X_h, A_h (N, N) row-stochastic. On N tokens with N < D/num_heads, A_h is determined (D/h
# equations a row for N unknowns, one to spare) and recovered by least squares, whatever the temperature, a mask, or
# how the scores were made; whether they grow with the scores Q K^T is then read off A_h: a softmax of anything
# increasing in q_i . k_j weighs, in each row, the key with the larger dot product more (log A[i, j] - log A[i, k]
# has the sign of s_ij - s_ik). A module that answers as such an average but not so ordered (scores divided the wrong
# way round, negated, fed through a function that does not grow with them) is not attention, at any temperature.
WEIGHT_FLOOR = 5e-3  # weights compared only where both are at least this (their log read to ~1e-3 in float32)
LOG_MARGIN = 0.05    # a pair of keys is out of order where their log weights differ by more, the wrong way
SCORE_MARGIN = 0.05  # ... and their scores, q_i . k_j, by more than this (pairs of nearly equal scores are left out)


def _recovered_weights(got, x, h, strided):
    """The per-head weights (h, N, N) A with got[:, head i] = A[i] @ x[:, head i] (the identity for V and W^O,
    heads split `strided` or in blocks) where that holds to float32 rounding and each row of each A[i] is a
    convex combination (weights >= 0 summing to 1), else None. Needs N < D/h (an equation to spare a row)."""
    N, D = x.shape
    dh = D // h
    if N >= dh:
        return None
    got, x = got.astype(np.float64), x.astype(np.float64)
    weights = []
    for i in range(h):
        cols = slice(i, D, h) if strided else slice(i * dh, (i + 1) * dh)
        v, o = x[:, cols], got[:, cols]                                          # (N, dh) each
        a = np.linalg.lstsq(v.T, o.T, rcond=None)[0].T                           # o = a @ v, a (N, N)
        if not (np.all(np.isfinite(a)) and _close_to(a @ v, o)
                and np.all(a >= -1e-3) and np.all(np.abs(a.sum(axis=-1) - 1) <= 1e-3)):
            return None
        weights.append(a)
    return np.stack(weights)


def _order_of_weights(a, x, h, strided):
    """(concordant, discordant): the pairs of keys (j, k) of a query i in one head, over all heads, whose weights
    a[head, i, j] > a[head, i, k] (both measurable: WEIGHT_FLOOR) while q_i . k_j > q_i . k_k (the identity for
    W^Q and W^K: the head's features of x), by LOG_MARGIN and SCORE_MARGIN, or the other way round."""
    N, D = x.shape
    dh = D // h
    x = x.astype(np.float64)
    concordant = discordant = 0
    for i in range(h):
        cols = slice(i, D, h) if strided else slice(i * dh, (i + 1) * dh)
        s = x[:, cols] @ x[:, cols].T                                            # (N, N) the head's scores
        la = np.log(np.maximum(a[i], 1e-300))
        ok = a[i] >= WEIGHT_FLOOR
        ds, dl = s[:, :, None] - s[:, None, :], la[:, :, None] - la[:, None, :]  # (query, j, k)
        both = ok[:, :, None] & ok[:, None, :] & (ds > SCORE_MARGIN)
        concordant += int(np.sum(both & (dl > LOG_MARGIN)))
        discordant += int(np.sum(both & (dl < -LOG_MARGIN)))
    return concordant, discordant


SCORES_HINT = ("the scores must reach the softmax as Q K^T / sqrt(D/num_heads), growing with the dot product of "
               "query and key: here they do not (divided the wrong way round, `math.sqrt(d_k) / (q @ k^T)` where "
               "`(q @ k^T) / math.sqrt(d_k)` was meant; negated; or passed through another function first), or "
               "each token's keys are weighed by another token's query (the queries split into heads by a reshape "
               "that mixes tokens: `q.reshape(B, num_heads, N, d_k)` where `q.view(B, N, num_heads, "
               "d_k).transpose(1, 2)` was meant)")


def _qk_scale(answers, plain, what, h):
    """(message, unchanged) where the weights of a module, recovered from its answers (each [on 5 tokens, on 7, on
    the 5 scaled by QK_SCALE]) in every way and head split, do not grow with the input's scale as q . k /
    sqrt(d_k)'s do (_qk_scale.py: q and k normalised, a clamp) and one reading at least shows it; else None."""
    readings = []
    for got in answers:
        for strided in (False, True):
            if not all(np.all(np.isfinite(got[i])) for i in (0, 2)):
                continue
            a1, a2 = (_recovered_weights(got[i], plain[i], h, strided) for i in (0, 2))
            if a1 is not None and a2 is not None:
                readings.append((a1, a2))
    return qk_scale_failure(readings, what, plain[0].shape[1] // h)


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # the temperature: softmax(Q K^T / sqrt(D/num_heads)), step 3 of the handout
def test_mhsa_scales_the_scores_by_the_head_width(sub, rng, seed):
    # Every other test holds at any temperature. With its projections set to the identity and its biases to
    # zero (what the layout allows: _identity_weights), the module is a fixed function of its input whose only
    # free choice is the temperature: it must match sqrt(D/num_heads) on 5 tokens and on 7. Otherwise the
    # temperature is fitted (and, failing that, a factor on the output with it: a scale put after the softmax),
    # on each input, and the test fails naming what the scores are divided by (a divisor that changes with the
    # number of tokens reads the wrong axis). A module that answers as no temperature does, but as an average of
    # each head's values (its weights recovered on the 5 tokens, fewer than a head's 6 features) whose weights do
    # not grow with q . k in any way its layout was read, fails: its scores are not Q K^T scaled (divided the wrong
    # way round, negated). Only a module that answers as attention at no temperature (a mask or a norm inside, a
    # head split the grader does not know: weights that follow q . k, or outputs that are no average of a head's
    # values), or whose projections the grader cannot set from their names and shapes (the skip names the
    # parameters it cannot read), is skipped: the other tests judge it (a skip earns nothing, and costs a right
    # module nothing). A forward that fails with these weights fails
    # here, though it runs with its own: a right module runs whatever its weights hold, and a skip would reward
    # a forward that refuses the grader's weights (seen on charlm's version of this test). A module that answers
    # as attention at sqrt(D/num_heads) only with its queries, keys and values split into heads each its own way
    # (or merged back another way) fails too, naming the mismatched splits (no round trip of its own). The 5 tokens
    # go scaled by QK_SCALE as well (same round trip): a right module is right there too, and one whose weights,
    # recovered at both scales, do not sharpen with the input as q . k / sqrt(d_k)'s do (q and k normalised:
    # qk-norm, cosine attention; a clamp, a nonlinearity on q or k) fails, naming what was seen (_qk_scale.py);
    # a norm's gain, zeroed with the biases above (q = k = 0, even weights), is also tried at one for that.
    # a head width of 6 (at 4, head_width / 2, `hs ** 1/2`, equals sqrt(4)); see SCALING_HINTS for why 24, 4
    D, h, Ns = 24, 4, (5, 7)
    dh = D // h
    what = f"MultiHeadSelfAttention({D}, {h})"
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    guessed = []  # the parameters read only from their size (packed): their layout may be one the grader misread
    ways, unknown = _identity_weights(m, D, h, guessed)
    closed = unread_projections(m.params, D, h, guessed)  # projections it cannot read, or read from a size only
    if not ways and closed:  # a wrong scale could hide there: failed closed, for a TA to check (packed_layouts)
        raise GradingFailure(unread_message(what, closed))
    if not ways:  # more than the handout's attention holds (heads of another width): the other tests judge it
        pytest.skip("the temperature was not checked: the grader cannot set this module's projections to the "
                    "identity from their names and shapes: it does not know how to read "
                    f"{', '.join(unknown[:4])}{' ...' if len(unknown) > 4 else ''} (the other tests judge it)")
    xs = [randn(rng, (1, n, D)) for n in Ns]
    xs.append(xs[0] * QK_SCALE)  # the 5 tokens scaled: a right module's q . k scale by QK_SCALE ** 2 (_qk_scale.py)
    plain = [as_np(x[0]) for x in xs]                                                  # (N, D) each
    extra = gain_ways(ways)  # a norm's gain set to one, not zero (only where one is named): for _qk_scale alone
    # every way's weights and its forward go to the worker together, in one round trip
    with sub.together(chain=True) as t:
        asks = [(t.set_params(m, {n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in values.items()}),
                 t.forward(m, xs)) for values in ways + extra]
    answers, right_here = [], False
    for k, (was_set, out) in enumerate(asks):  # a right module passes in the first way its names allow
        try:
            with naming_globals(m.sub, getattr(m, "sizes", {}), m.cls), explained():
                was_set.get()
                outs = out.get().outputs
        except GradingFailure as e:
            if k >= len(ways) or right_here:  # a gain set to one is the grader's guess; a module right on the
                continue                      # inputs as drawn is not failed by another way (it was not, before)
            # a forward that fails only with these weights (it runs with its own: the other tests say so) is
            # failed here, never skipped: a right module runs whatever values its weights hold
            raise e.retold(f"{what}, with its projections set to the identity and its biases to zero (to read the "
                           f"temperature of its softmax), failed: {e.message}") from None
        try:
            got = [check_shape(o, (1, len(p), D), f"{what} output")[0] for o, p in zip(outs, plain)]
        except GradingFailure:
            if k >= len(ways) or right_here:  # (as above: only the ways' own answers as drawn are judged here)
                continue
            raise
        right = [any(_close_to(g, _attention_with_identity_weights(p, h, np.sqrt(dh), strided))
                     for strided in (False, True)) for g, p in zip(got, plain)]
        if all(right) and k < len(ways):
            return
        right_here = right_here or (all(right[:len(Ns)]) and k < len(ways))
        answers.append(got)
    if right_here:  # right on the inputs as drawn, not on them scaled: judged by how its weights scale alone
        scale = _qk_scale(answers, plain, what, h)
        if scale:
            raise GradingFailure(scale[0])
        return
    every, answers = answers, [got[:len(Ns)] for got in answers[:len(ways)]]  # the ways' answers as drawn
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
    for got in answers:  # no temperature: the queries, keys or values split into heads each its own way?
        for splits in _MISMATCHED_SPLITS:
            if all(_close_to(g, _attention_with_identity_weights(p, h, np.sqrt(dh), splits=splits))
                   for g, p in zip(got, plain)):
                raise GradingFailure(
                    f"{what}, with its projections set to the identity and its biases to zero, answers as "
                    f"attention scaled by sqrt(D/num_heads) = sqrt({dh}) whose heads take their queries, keys and "
                    "values (or put their outputs) from different features, not as any split of the features "
                    "into heads shared by Q, K and V (contiguous blocks or every num_heads-th feature): head i's "
                    "queries must be compared with head i's keys and average head i's values.\n"
                    f"Likely mistake: {_mismatch_hint(splits)}.")
    # no temperature, no mismatched splits: is it still an average of each head's values, and do its weights grow
    # with q . k? Attention of some kind (a mask, a head split or layout the grader does not know) is skipped; an
    # average whose weights are ordered against the scores in every way it was read (and in order in none) fails.
    scale = _qk_scale(every, plain, what, h)
    if scale and scale[1]:  # weights that do not change with the input's scale: q and k normalised, said so first
        raise GradingFailure(scale[0])
    orders = []
    for got in answers:
        for g, p in zip(got, plain):
            for strided in (False, True):
                a = _recovered_weights(g, p, h, strided)
                if a is not None:
                    orders.append(_order_of_weights(a, p, h, strided))
    if orders and not any(c > 0 and d == 0 for c, d in orders) and all(d > 0 for c, d in orders):
        c, d = max(orders, key=lambda o: o[1] - o[0])
        how = ("they fall as it grows: " if d > c else "") + (
            f"in {d} of the {c + d} pairs of keys compared, the key with the larger dot product with the query gets "
            "the smaller weight")
        raise GradingFailure(
            f"{what}, with its projections set to the identity and its biases to zero, answers as an average of "
            f"each head's values (weights >= 0 summing to 1 over the keys) whose weights do not grow with the "
            f"query-key dot product q_i . k_j; {how}. Attention weighs each key by softmax(q_i . k_j / "
            f"sqrt(D/num_heads)) = softmax(q_i . k_j / {np.sqrt(dh):.4g}): the more a key is like the query, the "
            f"more it weighs.\nLikely mistake: {SCORES_HINT}.")
    if scale:  # weights that follow q . k in order, but not as its scale says: a clamp, a nonlinearity
        raise GradingFailure(scale[0])
    if closed:  # read only from their size: a misread layout cannot be told from a wrong scale
        raise GradingFailure(unread_message(what, closed))
    pytest.skip("the temperature was not checked: with its projections set to the identity the module answers "
                "as attention at no temperature, even with a factor on its output (a mask or a norm inside, or a "
                "head split the grader does not know); the other tests judge it")
