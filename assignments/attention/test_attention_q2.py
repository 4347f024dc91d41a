"""Grading tests of `attention`, question Q2 (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._carried import *  # noqa: F401,F403 - carried-forward credit for the student's own softmax
from ._by_hand import *  # noqa: F401,F403 - the by-hand tests' library calls and check


@pytest.mark.question("Q2")
@pytest.mark.parametrize("i", [0, 1, 2])
def test_self_attention_token_handout(sub, ref, close, note, i):
    got = sub.call("self_attention_token", X_HANDOUT, W_Q, W_K, W_V, i)
    _close_own_softmax(sub, close, note, "self_attention_token", got, ref.self_attention_token(X_HANDOUT, W_Q, W_K, W_V, i),
          own=_own_self_attention(sub, X_HANDOUT, W_Q, W_K, W_V, row=i),
          what=f"self_attention_token(X, W_Q, W_K, W_V, {i}) (token {TOKENS[i]!r})",
          hints=_self_attention_hints(X_HANDOUT, W_Q, W_K, W_V, row=i))


@pytest.mark.question("Q2")
def test_self_attention_handout(sub, ref, close, note):
    got = sub.call("self_attention", X_HANDOUT, W_Q, W_K, W_V)
    carry.judged(sub, "self_attention", (X_HANDOUT, W_Q, W_K, W_V), got, lambda: _close_own_softmax(
        sub, close, note, "self_attention", got, ref.self_attention(X_HANDOUT, W_Q, W_K, W_V),
        own=_own_self_attention(sub, X_HANDOUT, W_Q, W_K, W_V),
        what="self_attention(X, W_Q, W_K, W_V) (handout data)",
        hints=_self_attention_hints(X_HANDOUT, W_Q, W_K, W_V)))


@pytest.mark.question("Q2")
def test_self_attention_by_hand(sub, ref, close, note):
    _check_by_hand(sub, close, ref.self_attention(X_HANDOUT, W_Q, W_K, W_V), ATTENTION_CALLS,
                   "self_attention(X, W_Q, W_K, W_V) (handout data)", "self_attention", X_HANDOUT, W_Q, W_K, W_V,
                   own=_own_self_attention(sub, X_HANDOUT, W_Q, W_K, W_V), note=note)


@pytest.mark.question("Q2")
def test_q2_functions_leave_their_arguments_unchanged(sub, ref, close):
    args = {"X": X_HANDOUT, "W_Q": W_Q, "W_K": W_K, "W_V": W_V}
    _check_arguments_unchanged(sub, close, [
        ("self_attention_token", {**args, "i": 1}, ref.self_attention_token(*args.values(), 1)),
        ("self_attention", args, ref.self_attention(*args.values()))])


SA_SHAPES = [(5, 3, 4, 2), (1, 4, 4, 4), (2, 7, 3, 5)]  # (T, d, d_k, d_v)


@pytest.mark.question("Q2")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,d,dk,dv", SA_SHAPES)
def test_self_attention_random(sub, ref, close, note, rng, T, d, dk, dv, dtype):
    with sub.together(chain=True) as t:
        edge = asked(_check_self_attention(sub, ref, close, note, rng, T, d, dk, dv, dtype, t))
        other = asked(_check_self_attention(sub, ref, close, _QUIET, rng, 5, 3, 4, 2, dtype, t)) if T == 1 else None
    edge()
    if other:
        only_if_right_elsewhere("self_attention", ONE_TOKEN, "T=5, d=3, d_k=4, d_v=2", other)


def _check_self_attention(sub, ref, close, note, rng, T, d, dk, dv, dtype, t):
    """A generator (checker.running.together.asked): the call is asked of `t`, judged once answered."""
    X, Wq, Wk, Wv = _tokens_and_projections(rng, T, d, (dk, dk, dv), dtype)
    got = yield t.call("self_attention", X, Wq, Wk, Wv)
    carry.judged(sub, "self_attention", (X, Wq, Wk, Wv), got, lambda: _close_own_softmax(
        sub, close, note, "self_attention", got, ref.self_attention(*map(_f64, (X, Wq, Wk, Wv))),
        own=_own_self_attention(sub, X, Wq, Wk, Wv),
        what=f"self_attention(X, W_Q, W_K, W_V) with T={T}, d={d}, d_k={dk}, d_v={dv}, {dtype}", dtype=dtype,
        hints=_self_attention_hints(X, Wq, Wk, Wv)))


@pytest.mark.question("Q2")
@pytest.mark.parametrize("dtype", DTYPES)
def test_self_attention_token_random(sub, ref, close, note, rng, dtype):
    T, d, dk, dv = 5, 3, 2, 4
    X, Wq, Wk, Wv = _tokens_and_projections(rng, T, d, (dk, dk, dv), dtype)
    i = int(rng.integers(T))
    got = sub.call("self_attention_token", X, Wq, Wk, Wv, i)
    _close_own_softmax(sub, close, note, "self_attention_token", got, ref.self_attention_token(*map(_f64, (X, Wq, Wk, Wv)), i),
          own=_own_self_attention(sub, X, Wq, Wk, Wv, row=i),
          what=f"self_attention_token(X, W_Q, W_K, W_V, {i}) with T={T}, d={d}, d_k={dk}, d_v={dv}, {dtype}",
          dtype=dtype, hints=_self_attention_hints(X, Wq, Wk, Wv, row=i))


@pytest.mark.question("Q2")
def test_self_attention_handout_shape_new_values(sub, ref, close, note, rng):
    """3 x 4 and 4 x 4 like the handout but other numbers: names a function that reads X / W_Q / ... globals."""
    args = [rng.standard_normal(s) for s in [(3, 4), (4, 4), (4, 4), (4, 4)]]
    handout = [X_HANDOUT, W_Q, W_K, W_V]
    hints = _self_attention_hints(*args)
    for mask in itertools.product([False, True], repeat=4):
        if any(mask):
            mixed = [h if m else a for a, h, m in zip(args, handout, mask)]
            hints.append((GLOBALS.format(names="X, W_Q, W_K, W_V"), A.mistaken_self_attention(*mixed)))
    got = sub.call("self_attention", *args)
    carry.judged(sub, "self_attention", args, got, lambda: _close_own_softmax(
        sub, close, note, "self_attention", got, ref.self_attention(*args), own=_own_self_attention(sub, *args),
        what="self_attention(new random X (3 x 4), W_Q, W_K, W_V (4 x 4))", hints=hints))


@pytest.mark.question("Q2")
def test_self_attention_token_handout_shape_new_values(sub, ref, close, note, rng):
    """Public: 3 x 4 and 4 x 4 like the handout but other numbers, every token: a self_attention_token that
    reads the notebook's X / W_Q / W_K / W_V shows here, not first in the hidden tests (issue 20)."""
    args = [rng.standard_normal(s) for s in [(3, 4), (4, 4), (4, 4), (4, 4)]]
    handout = [X_HANDOUT, W_Q, W_K, W_V]
    with sub.together(chain=True) as t:
        rows = [t.call("self_attention_token", *args, i) for i in range(3)]
    for i in range(3):
        hints = _self_attention_hints(*args, row=i)
        for mask in itertools.product([False, True], repeat=4):
            if any(mask):
                mixed = [h if m else a for a, h, m in zip(args, handout, mask)]
                hints.append((GLOBALS.format(names="X, W_Q, W_K, W_V"), A.mistaken_self_attention(*mixed)[i]))
        got = rows[i].get()
        _close_own_softmax(sub, close, note, "self_attention_token", got, ref.self_attention_token(*args, i),
                           own=_own_self_attention(sub, *args, row=i),
                           what=f"self_attention_token(new random X (3 x 4), W_Q, W_K, W_V (4 x 4), {i})",
                           hints=hints)


@pytest.mark.question("Q2")
def test_self_attention_token_every_row(sub, ref, close, note, rng):
    T, d, dk, dv = 6, 5, 3, 2
    X, Wq, Wk, Wv = (rng.standard_normal(s) for s in [(T, d), (d, dk), (d, dk), (d, dv)])
    with sub.together(chain=True) as t:
        rows = [t.call("self_attention_token", X, Wq, Wk, Wv, i) for i in range(T)]
    for i in range(T):
        got = rows[i].get()
        _close_own_softmax(sub, close, note, "self_attention_token", got, ref.self_attention_token(X, Wq, Wk, Wv, i),
              own=_own_self_attention(sub, X, Wq, Wk, Wv, row=i),
              what=f"self_attention_token(X, W_Q, W_K, W_V, {i}) with T={T}, d={d}, d_k={dk}, d_v={dv}",
              hints=_self_attention_hints(X, Wq, Wk, Wv, row=i))


@pytest.mark.question("Q2")
@settings(deadline=None, max_examples=25, derandomize=True, database=None, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(T=st.integers(1, 7), n=st.integers(1, 6), dk=st.integers(1, 6), dv=st.integers(1, 6), f32=st.booleans())
def test_self_attention_property(sub, ref, close, note, seed, T, n, dk, dv, f32):
    """self_attention == the reference for any T, d (= n), d_k, d_v; data seeded by (seed, shapes)."""
    dtype = "float32" if f32 else "float64"
    rng = np.random.default_rng([seed, T, n, dk, dv, int(f32)])
    X, Wq, Wk, Wv = _tokens_and_projections(rng, T, n, (dk, dk, dv), dtype)
    got = sub.call("self_attention", X, Wq, Wk, Wv)
    carry.judged(sub, "self_attention", (X, Wq, Wk, Wv), got, lambda: _close_own_softmax(
        sub, close, note, "self_attention", got, ref.self_attention(*map(_f64, (X, Wq, Wk, Wv))),
        own=_own_self_attention(sub, X, Wq, Wk, Wv),
        what=f"self_attention(X, W_Q, W_K, W_V) with T={T}, d={n}, d_k={dk}, d_v={dv}, {dtype}", dtype=dtype,
        hints=_self_attention_hints(X, Wq, Wk, Wv)))
