"""The temperature of a CharTransformer's attention (trusted side): what test_model_attention_scaled_by_the_head_width
in test_charlm_model.py judges, and how.

What it is for: every other model test holds at any temperature. In one layer whose attention projections are
the identity, biases zero and MLP silent (`_temperature_ways`), with the token embedding and the output layer
set to one known matrix, the logits are a fixed function of the ids whose only free choices, beside the
structure (pre- or post-norm, a final norm, which positions), are the temperature of the softmax (the scores
divided by tau) and any scale on the attention's output (times c). A right model has tau = sqrt(d_model /
num_heads) and c = 1 at every length T. The logits of the known structures at the right and the known wrong
temperatures are answer models (`_answers.identity_model`, recorded for the kit); an answer that matches none
of them is FITTED (`_answers.fit_identity_model`: the tau and c, and the structure, that explain it), on a
full block and on a shorter input, so that a scale on the output, or one computed from T, is named with the
values it has. Only the full package fits (a fit depends on the student's answer, which no recording of the
kit holds). What the kit can tell as well: with the queries' and keys' projections set to zero too, every
score is 0 and each position averages the ones it sees evenly whatever the temperature; a model that then
gives a known structure's logits (`pinned`) is right in everything but its scores, so an answer at no right
temperature fails there too, and the full package adds the fitted values as the likely mistake.

A fit whose output scale c does not show (any c explains the logits as well: the attention's output alone
reaches the next norm, no residual around the attention, which the handout's "typical design" leaves open) is no
measurement of c: such a model is judged by its fitted temperature alone (`_judge_without_output_scale`).

An answer that neither a known structure nor a fit explains may come from attention without a softmax (the
masked scores used as weights): `_check_weights_sum_to_one` asks the model, with every position holding the same
input, whether it gives the same logits at every position, as any attention whose weights sum to one does.

What it is not: a test (the test function is in test_charlm_model.py), or code that computes an answer (every
logit comes from `A`).
"""

import math

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._layouts import _temperature_ways  # how the model's parameters are set, from their names and shapes

TEMPERATURE_CFG = (17, 7, 12, 2, 1)  # one layer; every shape below tells its part apart (d_model/num_heads = 6)
SCALE_HINTS = (("no scaling: the scores q @ k^T are not divided at all (divide them by sqrt(head_size) = "
                "sqrt(d_model/num_heads): `* k.size(-1) ** -0.5`)", lambda D, dh: 1.0),
               ("the scores are divided by sqrt(d_model), the model's width, not by sqrt(d_model/num_heads), the "
                "width of a head (Karpathy's `wei = q @ k.transpose(-2, -1) * C**-0.5` with C = n_embd, the input's "
                "last size): scale by the keys' own width, `* k.size(-1) ** -0.5`", lambda D, dh: math.sqrt(D)),
               ("the scores are divided by d_model/num_heads, the head width, not by its square root",
                lambda D, dh: float(dh)),
               ("the scores are divided by d_model, not by sqrt(d_model/num_heads)", lambda D, dh: float(D)),
               ("the scores are multiplied by sqrt(d_model/num_heads) instead of divided by it (`* math.sqrt(d_k)` "
                "where `/ math.sqrt(d_k)` was meant)", lambda D, dh: 1.0 / math.sqrt(dh)),
               ("operator precedence: `head_size ** 1/2` is (head_size ** 1) / 2 = head_size / 2, not its square "
                "root, because `**` binds tighter than `/`; write `head_size ** 0.5` or `math.sqrt(head_size)`",
                lambda D, dh: dh / 2))
TEMPERATURE_RTOL = 2e-4  # float32 logits against float64 ones, relative to max(1, their largest)
TEMPERATURE_APART = 2e-3  # a right and a wrong temperature's answers nearer than this tell nothing
TEMPERATURE_SHORT = 5  # the shorter input: a scale computed from T shows as another value there (T = block_size = 7)
TEMPERATURE_SAME = 0.01  # a fitted tau or c this near a value (relative) is that value
FORWARD_ONLY_PLAIN = ("forward depends on the values of its weights (a check on them, or an operation that works "
                      "only for some of them): a model must compute the same function whatever its weights are, "
                      "and this test sets them to known values to see the temperature of the attention")
def _temperature_candidates(cfg, E, P, sines, ids, taus):
    """{tau: (n, T, vocab_size) logits}: what a one-layer model set by _temperature_ways gives on the ids `ids`
    (T,) with its scores divided by tau, for each structure a right model may have (_answers.identity_model:
    recorded for the kit, in float32)."""
    return dict(zip(taus, A.identity_logits(E, P, sines, ids, cfg[3], taus).astype(np.float64)))


def _telling_candidates(candidates, right):
    """(right_ok, {tau: wrong_ok}): which of the candidate answers (_temperature_candidates) can judge a model:
    the right temperature's answers that lie apart from every wrong temperature's (of any structure), and each
    wrong temperature's that lie apart from every right one, by TEMPERATURE_APART relative to the largest."""
    R = candidates[right]                                                                 # (n, T, V)
    scale = np.maximum(1.0, np.abs(R).max(axis=(1, 2)))
    right_ok, wrong_ok = np.ones(len(R), dtype=bool), {}
    for tau, W in candidates.items():
        if tau == right:
            continue
        apart = np.abs(R[:, None] - W[None]).max(axis=(2, 3)) / scale[:, None] > TEMPERATURE_APART  # (n, n)
        right_ok &= apart.all(axis=1)
        wrong_ok[tau] = apart.all(axis=0)
    return right_ok, wrong_ok


ONE_HEAD_HINT = ("the heads are not split: num_heads is ignored and the attention is a single head of the full "
                 "width (`nn.MultiheadAttention(d_model, 1)`, or one softmax over q @ k^T of all d_model features). "
                 "Each of the num_heads heads needs its own scores from its own d_model/num_heads-wide slice of Q "
                 "and K, its own softmax, and its own slice of V; then concatenate the heads "
                 "(`nn.MultiheadAttention(d_model, num_heads, batch_first=True)` does all of it)")


def _apart(R, W):
    """Which structures' answers (n,) of R, the right temperature's (n, T, V), lie apart from every answer of W
    (n, T, V), by TEMPERATURE_APART relative to the largest (as _telling_candidates)."""
    scale = np.maximum(1.0, np.abs(R).max(axis=(1, 2)))
    return (np.abs(R[:, None] - W[None]).max(axis=(2, 3)) / scale[:, None] > TEMPERATURE_APART).all(axis=1)


def _sizes(cfg, T, globals_=None):
    """The sizes a scale may have been computed from, with their names, on an input of T tokens: the model's,
    then the notebook's top-level ints (`globals_`, {name: value})."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    return ((("d_model/num_heads", D // h), ("d_model", D), ("num_heads", h), ("T", T), ("block_size", bs))
            + tuple((f"your notebook's `{name}`", g) for name, g in sorted((globals_ or {}).items())))


_FORMS = (("sqrt({})", math.sqrt), ("{}", float), ("1/sqrt({})", lambda n: 1 / math.sqrt(n)), ("1/{}", lambda n: 1 / n))


def _same(a, b):
    return abs(a / b - 1) <= TEMPERATURE_SAME


def _named(value, sizes):
    """{"sqrt(7)": ["sqrt(T)", "sqrt(block_size)"], ...}: what `value` is among the powers of `sizes`."""
    named = {}
    for name, n in sizes:
        for form, f in _FORMS:
            if n > 1 and _same(value, f(n)):
                named.setdefault(form.format(n), []).append(form.format(name))
    return named


def _value(value, sizes):
    """`value` and what it is: "1.414 = sqrt(2) (sqrt(num_heads))"."""
    named = _named(value, sizes)
    if not named:
        return f"{value:.4g}"
    number, exprs = next(iter(named.items()))
    return f"{value:.4g} = {number} ({' or '.join(exprs)})"


# why a size is not the head's width, for a fitted scale computed from it
SIZE_CAUSES = {"d_model": "C = n_embd, the input's last size, is the model's width, not a head's",
               "num_heads": "`C // head_size` (n_embd // head_size) is the number of heads, not the width of one",
               "T": "T (`B, T, C = x.shape`) is the number of tokens, which changes with the input",
               "block_size": "block_size is the length of the context, not a width",
               "your notebook's": "a size read from a notebook global is not this model's: every size must come "
                                  "from the constructor's arguments (or from k.size(-1))"}


def _fit(cfg, E, P, sines, ids, got):
    """The best fit of `got` (_answers.fit_identity_model) where it explains it within TEMPERATURE_RTOL with a
    tau that no other one 10% away could replace (a softmax the scores move: not a model whose attention adds
    nothing), else None; False in the kit, which holds no fit of an answer it never saw (a recording holds the
    reference's answers only). Its c is the best one even where a band around it would do nearly as well."""
    fits = A.maybe.fit_identity_model(E, P, sines, ids, cfg[3], got, TEMPERATURE_RTOL)
    if fits is None:
        return False
    best = fits[0] if fits else None
    if best is None or best["err"] > TEMPERATURE_RTOL or not best["tau_determined"]:
        return None
    return best


def _fitted_cause(cfg, full, short, T_short, globals_):
    """The likely mistake, for a model whose logits on a full block (`full`: the fitted tau, c and structure, or
    None where the full block is right) and on T_short tokens (`short`, None where nothing was fitted there)
    are those of _fit."""
    bs, dh = cfg[1], cfg[2] // cfg[3]
    right = {"tau": math.sqrt(dh), "c": 1.0}
    at = [(bs, full or right)] + ([(T_short, short)] if short is not None else [])
    varies = short is not None and not (_same(short["tau"], at[0][1]["tau"]) and _same(short["c"], at[0][1]["c"]))

    def scale(f, T):
        sizes = _sizes(cfg, T, globals_)
        text = "not divided at all" if _same(f["tau"], 1.0) else f"divided by {_value(f['tau'], sizes)}"
        return text + ("" if _same(f["c"], 1.0) else
                       f" and the attention's output multiplied by {_value(f['c'], sizes)}")

    if full is None:
        said = (f"divided by sqrt({dh}) = {right['tau']:.4g} on a full block of {bs} tokens, as they should be, but "
                f"{scale(short, T_short)} on {T_short} tokens")
    elif varies:
        said = f"{scale(full, bs)} on {bs} tokens but {scale(short, T_short)} on {T_short} tokens"
    else:
        said = f"{scale(full, bs)} on {bs}{f' and on {T_short}' if short is not None else ''} tokens"
    fitted = f"fitted to your logits, the scores are {said} (read as {(full or short)['structure']})"
    scaled_out = any(not _same(f["c"], 1.0) for _, f in at)
    if varies:
        in_T = [form.format("T") for form, fn in _FORMS if all(_same(f["tau"], fn(T)) for T, f in at)]
        cause = ("the scale is computed from T, the number of tokens (`B, T, C = x.shape`), which changes with the "
                 "input" + (f" (the scores are divided by {in_T[0]})" if in_T else "")
                 + "; the temperature is the width of the keys, the same for every T: `* k.size(-1) ** -0.5`")
    elif scaled_out and _same(full["tau"], 1.0):
        cause = ("the 1/sqrt(d_k) is applied to the attention's output (`(wei @ v) * d_k ** -0.5`) instead of to the "
                 "scores before the softmax: there it sets how sharp each head's weights are, while after the "
                 "softmax it only shrinks the output and leaves the weights those of unscaled scores. Scale the "
                 "scores: `wei = q @ k.transpose(-2, -1) * k.size(-1) ** -0.5`, then the softmax, then `wei @ v`")
    elif scaled_out:
        cause = ("the attention's output is multiplied by a scale of its own: only the scores are scaled, by "
                 "1/sqrt(d_k), before the softmax")
    else:
        cores = [e[len("1/"):] if e.startswith("1/") else e
                 for exprs in _named(full["tau"], _sizes(cfg, bs, globals_)).values() for e in exprs]
        cores = [e[len("sqrt("):-1] if e.startswith("sqrt(") else e for e in cores]
        why = next((SIZE_CAUSES["your notebook's" if n.startswith("your notebook's") else n] for n in cores
                    if n in SIZE_CAUSES or n.startswith("your notebook's")), None)
        cause = (f"the scale comes from another size than sqrt(d_model/num_heads), the width of a head"
                 f"{': ' + why if why else ''}. Scale the scores by the keys' own width, `* k.size(-1) ** -0.5`")
    return f"{fitted}: {cause}"


def _check_temperature(sub, ref, rng, seed, cfg, note=None):
    """test_model_attention_scaled_by_the_head_width: the right temperature on a full block and on
    TEMPERATURE_SHORT tokens passes; a known wrong one (SCALE_HINTS) fails naming it; so does any other that a
    fit explains, with the values fitted, or (what the kit can tell without a fit) a model `pinned` by its queries
    and keys set to zero; so does one whose attention's weights do not sum to one over the keys (no softmax:
    _check_weights_sum_to_one); a layout the grader cannot set, an answer near the right one where the
    temperature hardly shows, or one nothing explains, skips."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    dh = D // h
    E = (0.5 * rng.standard_normal((V, D))).astype(np.float32)  # scores of O(1): no head's softmax saturates
    P = (0.5 * rng.standard_normal((bs, D))).astype(np.float32)
    ids = rng.integers(0, V, size=bs)
    short = ids[:TEMPERATURE_SHORT]
    sines = _np64(torch.as_tensor(ref.sinusoidal_positions(bs, D)))
    right = math.sqrt(dh)
    taus = (right,) + tuple(tau(D, dh) for _, tau in SCALE_HINTS)
    candidates = _temperature_candidates(cfg, E, P, sines, ids, taus)
    # num_heads ignored: one head of the full width d_model, its scores divided by sqrt(d_model) (what
    # nn.MultiheadAttention(d_model, 1) does) or by sqrt(d_model/num_heads)
    one_head = {tau: A.identity_logits(E, P, sines, ids, 1, (tau,))[0].astype(np.float64)
                for tau in (math.sqrt(D), right)} if h > 1 else {}
    short_right = _temperature_candidates(cfg, E, P, sines, short, (right,))[right]
    # every answer model is asked before the student's answer is known, so that the kit records them all
    with_positions = np.array(A.identity_structures_with_positions(), dtype=bool)
    even = _temperature_candidates(cfg, E, P, sines, ids, (math.inf,))[math.inf][with_positions]  # scores all 0
    what = _cfg_text(cfg)
    set_as = (f"{what}, with its attention's projections set to the identity, its biases to zero, its MLP silenced "
              "and its token embedding and output layer set to one known matrix,")
    not_checked = "the temperature of the attention was not checked: "
    plain = {}

    def plain_fails(ids_):
        """The first line of what goes wrong when a fresh module with the weights it was made with runs on `ids_`
        (as the other tests run it), or "" where it gives logits: only a model that fails so is judged by the
        other tests; one that fails only with the weights set here fails here (FORWARD_ONLY_PLAIN)."""
        if len(ids_) not in plain:
            try:
                module, idx = _new(sub, cfg, seed), torch.tensor(ids_[None], dtype=torch.int64)
                r = module.forward([idx], seed=seed) if ids_ is short else _forward(module, cfg, [idx], seed)
                _logits(r.outputs[0], 1, len(ids_), V, what)
                plain[len(ids_)] = ""
            except GradingFailure as e:
                plain[len(ids_)] = e.message.splitlines()[0][:200] or type(e).__name__
        return plain[len(ids_)]

    try:
        m = _new(sub, cfg, seed)
    except GradingFailure as e:
        pytest.skip(f"{not_checked}judged by the other tests: {e.message.splitlines()[0][:200]}")
    try:
        flat = [p["name"] for p in m.params if len(p.get("shape", ())) == 1 and isinstance(p.get("name"), str)]
        got_1d = m.get_params(flat) if flat else {}
    except GradingFailure as e:
        if plain_fails(ids):
            pytest.skip(f"{not_checked}judged by the other tests: {plain_fails(ids)}")
        _fail(f"{what}: the grader could not read its 1-D parameters (its norms' weights) to set them: "
              f"{e.message.splitlines()[0][:300] if e.message else type(e).__name__}")
    # a norm's weight starts at one (a zero bias was given small random values when the model was made)
    ones = {n for n, v in got_1d.items() if isinstance(v, np.ndarray) and v.size and np.all(v == 1)}
    ways, unread, left = _temperature_ways(m, cfg, E, P, ones)
    if not ways:
        pytest.skip(f"{not_checked}the grader cannot set this model's attention projections to the identity from "
                    f"their names and shapes: {unread} (the other tests judge it)")
    # a candidate whose answer at the right temperature lies near one at a wrong temperature (a softmax saturated
    # by a large input, where the temperature hardly shows) neither passes nor fails a model
    right_ok, wrong_ok = _telling_candidates(candidates, right)
    fresh = iter([m])

    def matches(want, got, telling=True):                                               # want: (n, T, V)
        err = np.abs(want - got).max(axis=(-2, -1)) / np.maximum(1.0, np.abs(want).max(axis=(-2, -1)))
        return bool(np.any((err <= TEMPERATURE_RTOL) & telling))

    def run(values, ids_):
        """The logits of a module set to `values` on `ids_`, each run on a module of its own (a forward that
        changes its module, a mask sliced into self.mask, must not change the next run). A forward that fails
        with these weights fails the test where the same model with its own weights gives logits on the same ids
        (a model must compute for any weights: failing only here would turn this test's failure into a skip);
        where it fails with its own weights too, the other tests judge it: skipped on a full block, None on the
        shorter input (test_model_causal_on_shorter_input says why)."""
        try:
            module = next(fresh, None) or _new(sub, cfg, seed)
            module.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in values.items()})
            idx = torch.tensor(ids_[None], dtype=torch.int64)
            r = module.forward([idx], seed=seed) if ids_ is short else _forward(module, cfg, [idx], seed)
            return _logits(r.outputs[0], 1, len(ids_), V, what)[0].astype(np.float64)
        except GradingFailure as e:
            said = (e.message.splitlines()[0][:300].rstrip(":") if e.message else "") or type(e).__name__
            why = plain_fails(ids_)
            if not why:
                _fail(f"{set_as} fails on ids {_shape((1, len(ids_)))}: {said}. With the weights it was made with, "
                      f"the same forward on the same ids gives logits: forward fails only with the weights this "
                      f"test sets.\nLikely mistake: {FORWARD_ONLY_PLAIN}.")
            if ids_ is short:
                return None
            pytest.skip(f"{not_checked}judged by the other tests: {why}")

    def globals_():
        try:
            return {k: g for k, g in sub.top_level_ints().items() if g > 1 and g not in cfg}
        except GradingFailure:
            return {}

    unexplained = []
    for values, uniform in ways:
        got = run(values, ids)
        if matches(candidates[right], got, right_ok):
            got_short = run(values, short)
            if got_short is None or matches(short_right, got_short):
                return
            fitted = _fit(cfg, E, P, sines, short, got_short)  # right on a full block, not on fewer tokens
            if fitted and not (_same(fitted["tau"], right) and _same(fitted["c"], 1.0)):
                _fail(f"{set_as} gives on a full block of {bs} tokens the logits of attention whose scores are "
                      f"divided by sqrt(d_model/num_heads) = sqrt({dh}) = {right:.4g}, but not on {TEMPERATURE_SHORT} "
                      "tokens: the temperature of a head must be the same whatever the number of tokens.\nLikely "
                      f"mistake: {_fitted_cause(cfg, None, fitted, TEMPERATURE_SHORT, globals_())}.")
            return  # what differs on fewer tokens is not the temperature (positions?): the other tests judge it
        for hint, tau in SCALE_HINTS:
            if matches(candidates[tau(D, dh)], got, wrong_ok[tau(D, dh)]):
                _fail(f"{set_as} gives the logits of attention whose scores are divided by {tau(D, dh):.4g}, not by "
                      f"sqrt(d_model/num_heads) = sqrt({dh}) = {right:.4g}: each head's softmax is too sharp or too "
                      f"flat, so every position averages the earlier ones with the wrong weights.\nLikely mistake: "
                      f"{hint}.")
        for tau, want in one_head.items():
            if matches(want, got, _apart(candidates[right], want)):
                _fail(f"{set_as} gives the logits of attention with one head of the full width d_model = {D}, its "
                      f"scores divided by sqrt({D if tau != right else dh}) = {tau:.4g}, not {h} heads of "
                      f"d_model/num_heads = {dh} features each with a softmax of their own.\nLikely mistake: "
                      f"{ONE_HEAD_HINT}.")
        # an answer within the tolerance of a right one, where the temperature hardly shows: never failed below
        unexplained.append((values, uniform, got, matches(candidates[right], got)))
    # at no known temperature: first, are the weights over the keys a softmax's, summing to one? (any structure)
    _check_weights_sum_to_one(sub, cfg, seed, E, P, sines, [(v, u) for v, u, _, near in unexplained if not near],
                              set_as)
    # With the queries' and keys' projections set to zero as well, every score is 0: each
    # position averages the ones it sees evenly, whatever the temperature. Where the model then gives a known
    # structure's logits (with absolute positions: rotary or relative ones act on the scores only), everything but
    # the scores is right, and the scores of the identity projections are not divided by sqrt(d_model/num_heads)
    pinned = any(not near and u is not None and (g := run(u, ids)) is not None and matches(even, g)
                 for _, u, _, near in unexplained)
    message = (f"{set_as} gives the logits a model the grader knows gives when its queries' and keys' projections are "
               "set to zero too (every position then averages the earlier ones evenly, whatever the temperature), but "
               "with them set to the identity it does not give those of attention whose scores are divided by "
               f"sqrt(d_model/num_heads) = sqrt({dh}) = {right:.4g}, the width of a head: each head's softmax is too "
               "sharp or too flat, so every position averages the earlier ones with the wrong weights." if pinned else
               f"{set_as} gives the logits of attention whose scores are not divided by sqrt(d_model/num_heads) = "
               f"sqrt({dh}) = {right:.4g}, the width of a head, or whose output is scaled: each head's softmax is too "
               "sharp or too flat, so every position averages the earlier ones with the wrong weights.")
    for values, _, got, near in unexplained:  # which single temperature and output scale, if any, explain it?
        fitted = not near and _fit(cfg, E, P, sines, ids, got)
        if not fitted or (_same(fitted["tau"], right) and _same(fitted["c"], 1.0)):
            continue  # (the kit has no fit: False)
        got_short = run(values, short)
        fitted_short = None if got_short is None else _fit(cfg, E, P, sines, short, got_short)
        if not fitted["c_determined"]:  # no output scale shows: judged by the temperature alone, or not at all
            _judge_without_output_scale(cfg, fitted, fitted_short, message, not_checked, note, globals_)
            return
        _fail(f"{message}\nLikely mistake: "
              f"{_fitted_cause(cfg, fitted, fitted_short or None, TEMPERATURE_SHORT, globals_())}.")
    if pinned:  # what the kit can tell without a fit
        _fail(message)
    pytest.skip(f"{not_checked}with its projections set to the identity, the model answers as no structure the "
                "grader knows at a temperature it can tell (pre- or post-norm, learned or sinusoidal positions, "
                "another head split or extra layers inside)"
                + (f"; parameters whose layout the grader does not know were left as they are: {', '.join(left[:6])}"
                   f"{' ...' if len(left) > 6 else ''}" if left else "") + "; the other tests judge it")


UNSCALED_OUTPUT_NOTE = ("the attention's output reaches the next norm alone, not added to its input (no residual "
                        "around the attention: a design the handout leaves open), so no scale on it shows in the "
                        "logits")


def _judge_without_output_scale(cfg, fitted, fitted_short, message, not_checked, note, globals_):
    """Where the fit of a full block explains the logits with an output scale c that does not show (any other c
    explains them as well: `c_determined` False, a c of 1e10 that merely drowns the residual stream, because the
    attention's output alone reaches the next norm): the scale of the output is no measurement, and the
    temperature is judged alone. Right at both lengths (fitted there too, with no scale showing): passes with a
    note; the same wrong one at both, or one that changes with T: fails naming it (c left out); a shorter input
    the fit does not explain in the same way: skips, saying so."""
    bs, dh = cfg[1], cfg[2] // cfg[3]
    right = math.sqrt(dh)
    if not fitted_short or fitted_short["c_determined"]:
        pytest.skip(f"{not_checked}{UNSCALED_OUTPUT_NOTE} on a full block of {bs} tokens, where the scores are "
                    f"divided by {fitted['tau']:.4g}, but on {TEMPERATURE_SHORT} tokens the logits are not explained "
                    "in the same way; the other tests judge it")
    if _same(fitted["tau"], right) and _same(fitted_short["tau"], right):
        if note is not None:
            note(f"{UNSCALED_OUTPUT_NOTE}: the temperature was checked alone, sqrt(d_model/num_heads) = sqrt({dh}) = "
                 f"{right:.4g} on {bs} and on {TEMPERATURE_SHORT} tokens")
        return
    full, short = ({**f, "c": 1.0} for f in (fitted, fitted_short))
    _fail(f"{message}\n({UNSCALED_OUTPUT_NOTE}: the temperature is judged alone.)\nLikely mistake: "
          f"{_fitted_cause(cfg, None if _same(full['tau'], right) else full, short, TEMPERATURE_SHORT, globals_())}.")


SAME_INPUT_FLAT = 1e-4  # logits this near at every position (relative to max(1, their largest)) are the same
SAME_INPUT_GROWS = 5e-3  # ... and this far apart, clearly not
NO_SOFTMAX_HINT = ("the attention's weights over the keys do not sum to one: the masked scores are used as weights "
                   "without a softmax (`att = scores * tril`, or `masked_fill(mask, 0)` and then `att @ v`), or "
                   "exponentiated without dividing by their sum, so each position's output grows with the number "
                   "of keys it sees. Fill the masked scores with float('-inf') and take `torch.softmax(att, dim=-1)` "
                   "over the keys before `att @ v`")


def _same_inputs(values, cfg, E, P, sines, gains):
    """[(what, values, ids)]: `values` (a way of _temperature_ways) changed so that every position of the ids holds
    the same input vector: one token repeated with the learned positions (the (block_size, d_model) parameters set
    to P) set to zero, which also holds for positions that act on the scores only (rotary, relative) or none;
    and for sinusoidal positions added to the token embedding (`E[idx] + PE`, or `E[idx] * sqrt(d_model) + PE`
    as the Annotated Transformer has it), the ids 0..T-1 with the token embedding's row t set to c - PE[t] (or
    (c - PE[t]) / sqrt(d_model)), PE the handout's sinusoidal positions, which the embedding then cancels.
    The norms' weights (set to one) are set to `gains`, positive and unequal: with the identity projections a
    head's value would otherwise be the normalized input itself, and whatever multiple of it the attention adds to
    the residual stream, the next norm would take away again."""
    V, bs, D = cfg[0], cfg[1], cfg[2]
    c = E[0].astype(np.float64)
    learned = {n for n, v in values.items() if v.shape in ((bs, D), (1, bs, D)) and np.array_equal(v.reshape(bs, D), P)}
    tables = {n for n, v in values.items() if v.shape == (V, D) and np.array_equal(v, E)}
    heads = {n for n, v in values.items() if v.shape == (D, V) and np.array_equal(v, E.T)}
    norms = {n for n, v in values.items() if v.ndim == 1 and v.size and np.all(v == 1)}  # the norms' weights
    base = {**values, **{n: np.zeros_like(values[n]) for n in learned},
            **{n: np.resize(gains, values[n].shape).astype(np.float32) for n in norms}}
    out = [("one token repeated" + (", the learned positions set to zero" if learned else ""), base,
            np.zeros(bs, dtype=np.int64))]
    if (tables or heads) and V >= bs:
        for scale, said in ((1.0, ""), (math.sqrt(D), " / sqrt(d_model)")):
            E2 = E.astype(np.float64).copy()
            E2[:bs] = (c[None] - sines) / scale
            E2 = E2.astype(np.float32)
            out.append((f"the tokens 0..{bs - 1}, token t's embedding row set to (c - PE[t]){said}, PE the "
                        "handout's sinusoidal positions", {**base, **{n: E2 for n in tables},
                                                           **{n: np.ascontiguousarray(E2.T) for n in heads}},
                        np.arange(bs, dtype=np.int64)))
    return out


def _spread(logits):
    """How far the logits (T, V) of the positions lie from position 0's, relative to max(1, their largest)."""
    return float(np.abs(logits - logits[:1]).max() / max(1.0, float(np.abs(logits).max())))


def _check_weights_sum_to_one(sub, cfg, seed, E, P, sines, ways, set_as):
    """Where a model set by _temperature_ways answers as no structure the grader knows: whether its attention's
    weights over the keys sum to one, a property of any softmax over the keys whatever the structure around it.

    When every position holds the same input (_same_inputs), every query, key and value is the same at every
    position, so attention whose weights sum to one gives each position that value, and a causal model then gives
    the same logits at every position. Attention whose weights do not sum to one (the masked scores used as
    weights, no softmax) adds up one value per key it sees: its output grows with the position. Both are asked:
    the model as set (`values`), and the same with the queries' or keys' projections zero (`uniform`, every score
    0, where the grader can tell them), and the same with every attention projection zero (`silent`: the attention
    adds nothing, whatever its weights). A model fails whose logits are the same at every position with the scores
    zero (so its inputs are the same: the positions were cancelled, and what its attention adds does not grow
    then) but not with the scores of its identity projections; or whose logits are the same at every position with
    its attention silent (so its inputs are the same) but grow with the position where every score is 0 (weights
    of exp(0) = 1 that were never divided by their sum: each position adds up one value per key). Any other answer
    leaves the judging to the fit and the skip that follow. Two round trips: the modules, then each one's
    parameters and forward."""
    V = cfg[0]
    # fixed, unequal and small: the attention's output at position 0 about a third of the input's, so that what an
    # attention whose weights do not sum to one adds (one value per key) visibly turns the residual stream
    gains = 0.3 * np.exp(0.5 * np.sin(np.arange(cfg[2]) * 2.3))
    runs = [(what, (values, uniform_values, silent_values), ids)
            for values, uniform in ways[:2] if uniform is not None
            for (what, values, ids), (_, uniform_values, _), (_, silent_values, _)
            in zip(_same_inputs(values, cfg, E, P, sines, gains), _same_inputs(uniform, cfg, E, P, sines, gains),
                   _same_inputs(_silent(values, cfg), cfg, E, P, sines, gains))]
    if not runs:
        return
    try:
        with sub.together() as t:
            made = [t.new("CharTransformer", *cfg, seed=seed, example=_example(cfg)) for _ in range(3 * len(runs))]
        modules = [p.get() for p in made]
        with sub.together() as t:
            asked_ = [[(t.set_params(m, {n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in vals.items()}),
                        t.forward(m, [torch.tensor(ids[None], dtype=torch.int64)], seed=seed))
                       for m, vals in zip(modules[3 * k:3 * k + 3], three)] for k, (_, three, ids) in enumerate(runs)]
            # the model as set once more under another seed: dropout left on in eval (`dropout_p=self.dropout`
            # whatever self.training says) scales the weights at random, which is not a missing softmax
            again = [t.forward(modules[3 * k], [torch.tensor(ids[None], dtype=torch.int64)], seed=seed + 1)
                     for k, (_, _, ids) in enumerate(runs)]
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        return
    for (what, _, ids), asked_three, once_more in zip(runs, asked_, again):
        try:
            scored, even, silent = (_logits((s.get(), f.get())[1].outputs[0], 1, len(ids), V, "")[0]
                                    .astype(np.float64) for s, f in asked_three)
            repeat = _logits(once_more.get().outputs[0], 1, len(ids), V, "")[0].astype(np.float64)
        except (StudentTimeout, WorkerCrashed):
            raise
        except GradingFailure:
            continue
        if _spread(scored) <= SAME_INPUT_FLAT:
            return  # the weights sum to one: the same output at every position
        if np.abs(repeat - scored).max() > SAME_INPUT_FLAT * max(1.0, float(np.abs(scored).max())):
            return  # random in eval mode (dropout left on?): the tests of determinism and dropout judge that
        if _spread(even) <= SAME_INPUT_FLAT and _spread(scored) > SAME_INPUT_GROWS:
            grow = np.abs(scored - scored[:1]).max(axis=1)
            _fail(f"{set_as} gives different logits at the positions of a block whose every position holds the "
                  f"same input ({what}): attention whose weights over the keys sum to one gives every position the "
                  "value all of its keys hold, and so the same logits, but here the logits move away from those of "
                  f"position 0 as the position grows (by {', '.join(f'{g:.3g}' for g in grow[1:])} at positions "
                  f"1..{len(ids) - 1}), while with the queries' and keys' projections set to zero (every score 0) "
                  "they are the same at every position: what the attention adds grows with the number of keys "
                  f"each position sees.\nLikely mistake: {NO_SOFTMAX_HINT}.")
        if _spread(silent) <= SAME_INPUT_FLAT and _spread(even) > SAME_INPUT_GROWS:
            grow = np.abs(even - even[:1]).max(axis=1)
            _fail(f"{set_as} gives different logits at the positions of a block whose every position holds the "
                  f"same input ({what}) with its queries' and keys' projections set to zero, so that every score is 0: "
                  "attention whose weights over the keys sum to one then averages the same value at every position, "
                  "and gives the same logits there, but here the logits move away from those of position 0 as the "
                  f"position grows (by {', '.join(f'{g:.3g}' for g in grow[1:])} at positions 1..{len(ids) - 1}), "
                  "while with every attention projection set to zero (the attention adding nothing) they are the "
                  "same at every position: what the attention adds grows with the number of keys each position "
                  f"sees.\nLikely mistake: {NO_SOFTMAX_HINT}.")


def _silent(values, cfg):
    """`values` (a way of _temperature_ways) with every attention projection zero, so that the attention adds
    nothing whatever its weights: every parameter of two or more axes but the token embedding, the output layer
    and the learned positions (the MLP's are zero already), whose shapes TEMPERATURE_CFG tells apart."""
    V, bs, D = cfg[0], cfg[1], cfg[2]
    kept = {(V, D), (D, V), (bs, D), (1, bs, D)}
    out = {}
    for n, v in values.items():
        core = v.shape
        while len(core) > 2 and core[-1] == 1:
            core = core[:-1]
        out[n] = v if v.ndim < 2 or core in kept else np.zeros_like(v)
    return out


__all__ = [n for n in dir() if not n.startswith("__")]
