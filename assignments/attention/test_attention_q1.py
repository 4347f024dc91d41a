"""Grading tests of `attention`, question Q1 (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._carried import *  # noqa: F401,F403 - carried-forward credit for the student's own softmax
from ._by_hand import *  # noqa: F401,F403 - the by-hand tests' library calls and check


@pytest.mark.question("Q1")
@pytest.mark.parametrize("state", [0, 1])
def test_get_scores_handout(sub, ref, close, state):
    got = sub.call("get_scores", H_E, H_D[state])
    close(got, ref.get_scores(H_E, H_D[state]), what=f"get_scores(H_e, H_d[{state}])",
          hints=[("the dot products were taken with the columns of the matrix (matrix.T @ vector), "
                  "not with its rows (one per token)", A.columns_of_matrix(H_E, H_D[state]))])


@pytest.mark.question("Q1")
def test_scale_scores_handout(sub, ref, close):
    scores = ref.get_scores(H_E, H_D[1])
    got = sub.call("scale_scores", scores, 4)
    m = A.scale_mistakes(scores, 4)
    close(got, ref.scale_scores(scores, 4), what="scale_scores(scores of H_d[1], 4)",
          hints=[(SCALED_BY_N, m["by_n"]), ("the scores were multiplied by sqrt(n)", m["times"])])


@pytest.mark.question("Q1")
@pytest.mark.parametrize("n", [9, 3])
def test_scale_scores_new_values(sub, ref, close, rng, n):
    """Public: scores and widths other than the handout's (n = 4), so a scale_scores that divides by a
    notebook value instead of its `n` shows in the self-check (issue 20)."""
    s = rng.standard_normal(5) * 3
    got = sub.call("scale_scores", s, n)
    m = A.scale_mistakes(s, n)
    close(got, ref.scale_scores(s, n), what=f"scale_scores(5 random scores, {n})",
          hints=[(SCALED_BY_N, m["by_n"]), (HALF_N, m["half"]), (TWICE_N, m["twice"]), (FIXED_SQRT4, m["fixed"]),
                 ("the scores were multiplied by sqrt(n)", m["times"])])


@pytest.mark.question("Q1")
def test_attention_weights_handout(sub, ref, close):
    scaled = ref.scale_scores(ref.get_scores(H_E, H_D[1]), 4)
    got = sub.call("get_attention_weights", scaled)
    _q1_softmax_judged(sub, close, scaled, got, ref.get_attention_weights(scaled),
                       what="get_attention_weights(scaled scores of H_d[1])",
          hints=_mistaken_softmaxes(scaled))


@pytest.mark.question("Q1")
@pytest.mark.weight(3)
def test_attention_weights_by_hand(sub, ref, close):
    scaled = ref.scale_scores(ref.get_scores(H_E, H_D[1]), 4)
    _check_by_hand(sub, close, ref.get_attention_weights(scaled), SOFTMAX_CALLS,
                   "get_attention_weights(scaled scores of H_d[1])", "get_attention_weights", scaled)


@pytest.mark.question("Q1")
def test_get_context_vector_handout(sub, ref, close):
    w = ref.get_attention_weights(ref.scale_scores(ref.get_scores(H_E, H_D[1]), 4))
    got = sub.call("get_context_vector", w, H_E)
    close(got, ref.get_context_vector(w, H_E), what="get_context_vector(weights of H_d[1], H_e)",
          hints=[h for h in _combine_hints(w, H_E) if h[0] == FEATURE_AXIS])


@pytest.mark.question("Q1")
@pytest.mark.parametrize("state", [0, 1])
def test_context_vector_handout(sub, ref, close, state):
    got = sub.call("context_vector", H_E, H_D[state])
    close(got, ref.context_vector(H_E, H_D[state]), what=f"context_vector(H_e, H_d[{state}])",
          hints=_context_hints(H_E, H_D[state]))


@pytest.mark.question("Q1")
def test_q1_functions_leave_their_arguments_unchanged(sub, ref, close):
    scores = ref.get_scores(H_E, H_D[1])
    scaled = ref.scale_scores(scores, 4)
    w = ref.get_attention_weights(scaled)
    both = np.stack([scaled, scores])
    _check_arguments_unchanged(sub, close, [
        ("get_scores", {"matrix": H_E, "vector": H_D[1]}, scores),
        ("scale_scores", {"scores": scores, "n": 4}, scaled),
        ("get_attention_weights", {"scores": scaled}, w),
        ("get_attention_weights", {"scores": both}, ref.get_attention_weights(both)),
        ("get_context_vector", {"attention_weights": w, "hidden_encoder_matrix": H_E}, ref.get_context_vector(w, H_E)),
        ("context_vector", {"encoder_states": H_E, "decoder_state": H_D[1]}, ref.context_vector(H_E, H_D[1]))])


SOFTMAX_LARGE = {
    "1d-equal-1000": [1000.0, 1000.0],
    "1d-1000-999-0": [1000.0, 999.0, 0.0],
    "2d-rows-far-apart": [[1000.0, 1000.5, 0.0], [-1000.0, -999.0, -1001.0]],
    # beyond any float's exp: np.longdouble (exp overflows above ~11356) or a mean subtracted instead of the
    # max passes the scores of 1000 and fails here (last, so the Q1 answers carried to Q2/Q3 stay the same)
    "1d-1e5": [1e5, 99999.0, -1e5],
}


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", list(SOFTMAX_LARGE))
def test_softmax_large_scores(sub, ref, close, case, dtype):
    s = np.array(SOFTMAX_LARGE[case], dtype=dtype)
    got = sub.call("get_attention_weights", s)
    _q1_softmax_judged(sub, close, s, got, ref.get_attention_weights(_f64(s)),
                       what=f"get_attention_weights({s.tolist()}) in {dtype}",
          dtype=dtype, hints=_mistaken_softmaxes(s))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_2d_over_last_axis(sub, ref, close, rng, dtype):
    s = _rand(rng, (3, 5), dtype, scale=2.0)
    got = sub.call("get_attention_weights", s)
    _q1_softmax_judged(sub, close, s, got, ref.get_attention_weights(_f64(s)),
                       what=f"get_attention_weights(scores of shape (3, 5)) in {dtype}",
          dtype=dtype, hints=_mistaken_softmaxes(s))


SCORE_SHAPES = [(5, 3), (1, 4), (2, 7)]  # (T, n): T != n, T = 1, odd widths


def _check_get_scores(sub, ref, close, rng, T, n, dtype):
    M, v = _rand(rng, (T, n), dtype), _rand(rng, (n,), dtype)
    got = yield sub.call("get_scores", M, v)
    close(got, ref.get_scores(_f64(M), _f64(v)), what=f"get_scores(matrix, vector) with T={T}, n={n}, {dtype}",
          dtype=dtype)


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_get_scores_random(sub, ref, close, rng, T, n, dtype):
    with sub.together(chain=True) as t:  # the edge case and the gate's input asked together
        edge = asked(_check_get_scores(t, ref, close, rng, T, n, dtype))
        other = asked(_check_get_scores(t, ref, close, rng, 5, 3, dtype)) if T == 1 else None
    edge()
    if other:
        only_if_right_elsewhere("get_scores", "a single token", "T=5, n=3", other)


def _check_get_context_vector(sub, ref, close, rng, T, n, dtype):
    w = A.softmax(rng.standard_normal(T)).astype(dtype)
    H = _rand(rng, (T, n), dtype)
    got = yield from _ask_with_shape_note(sub, "get_context_vector", w, H, T=T, n=n)
    close(got, ref.get_context_vector(_f64(w), _f64(H)),
          what=f"get_context_vector(w, H) with T={T}, n={n}, {dtype}", dtype=dtype, hints=_combine_hints(w, H))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_get_context_vector_random(sub, ref, close, rng, T, n, dtype):
    with sub.together(chain=True) as t:
        edge = asked(_check_get_context_vector(t, ref, close, rng, T, n, dtype))
        other = asked(_check_get_context_vector(t, ref, close, rng, 5, 3, dtype)) if T == 1 else None
    edge()
    if other:  # one state: its average, its sum and its weighted sum are all the same
        only_if_right_elsewhere("get_context_vector", ONE_TOKEN, "T=5, n=3", other)


def _check_context_vector(sub, ref, close, rng, T, n, dtype):
    enc, dec = _rand(rng, (T, n), dtype), _rand(rng, (n,), dtype)
    got = yield from _ask_with_shape_note(sub, "context_vector", enc, dec, T=T, n=n)
    close(got, ref.context_vector(_f64(enc), _f64(dec)),
          what=f"context_vector(encoder_states, decoder_state) with T={T}, n={n}, {dtype}", dtype=dtype,
          hints=_context_hints(enc, dec))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_context_vector_random(sub, ref, close, rng, T, n, dtype):
    with sub.together(chain=True) as t:
        edge = asked(_check_context_vector(t, ref, close, rng, T, n, dtype))
        other = asked(_check_context_vector(t, ref, close, rng, 5, 3, dtype)) if T == 1 else None
    edge()
    if other:  # one token: any scaling, any normalisation of one score gives the weight 1
        only_if_right_elsewhere("context_vector", ONE_TOKEN, "T=5, n=3", other)


@pytest.mark.question("Q1")
def test_context_vector_handout_shape_new_values(sub, ref, close, rng):
    """4 x 4 like the handout but other numbers: names a function that reads H_e / H_d instead of its arguments."""
    enc, dec = rng.standard_normal((4, 4)), rng.standard_normal(4)
    hints = [h for h in _context_hints(enc, dec) if not h[0].startswith(GLOBALS[:30])]  # named below, with H_d
    for (e_s, e_w), d in itertools.product(itertools.product([enc, H_E], repeat=2), [dec, H_D[0], H_D[1]]):
        if e_s is enc and e_w is enc and d is dec:
            continue
        hints.append((GLOBALS.format(names="H_e, H_d"), A.mistaken_context(enc, d, enc_scores=e_s, enc_sum=e_w)))
    got = sub.call("context_vector", enc, dec)
    close(got, ref.context_vector(enc, dec), what="context_vector(new random 4 x 4 encoder states, new decoder state)",
          hints=hints)


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(1,), (7,), (1, 1), (4, 1), (3, 6), (6, 2)])
def test_softmax_random_shapes(sub, ref, close, rng, shape, dtype):
    with sub.together(chain=True) as t:
        edge = asked(_check_softmax_shape(t, ref, close, rng, shape, dtype))
        other = asked(_check_softmax_shape(t, ref, close, rng, (3, 6), dtype)) if shape[-1] == 1 else None
    edge()
    if other:  # rows of one score: any normalisation gives 1
        only_if_right_elsewhere("get_attention_weights", "rows of a single score", "scores of shape (3, 6)", other)


def _check_softmax_shape(sub, ref, close, rng, shape, dtype):
    s = _rand(rng, shape, dtype, scale=3.0)
    got = yield sub.call("get_attention_weights", s)
    _q1_softmax_judged(sub.sub, close, s, got, ref.get_attention_weights(_f64(s)),
                       what=f"get_attention_weights(scores of shape {shape}) in {dtype}",
          dtype=dtype, hints=_mistaken_softmaxes(s))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", [(1, 1), (6, 9), (3, 2)])
def test_scale_scores_random(sub, ref, close, rng, T, n, dtype):
    with sub.together(chain=True) as t:
        edge = asked(_check_scale_scores(t, ref, close, rng, T, n, dtype))
        other = asked(_check_scale_scores(t, ref, close, rng, 6, 9, dtype)) if n == 1 else None
    edge()
    if other:  # sqrt(1) = 1: dividing by it, by 1, or not at all are the same
        only_if_right_elsewhere("scale_scores", "n = 1", "n = 9", other)


def _check_scale_scores(sub, ref, close, rng, T, n, dtype):
    s = _rand(rng, (T,), dtype, scale=3.0)
    got = yield sub.call("scale_scores", s, n)
    m = A.scale_mistakes(s, n)
    close(got, ref.scale_scores(_f64(s), n), what=f"scale_scores(scores of shape ({T},), {n}) in {dtype}",
          dtype=dtype, hints=([(SCALED_BY_N, m["by_n"])] if n > 1 else [])
          + ([(HALF_N, m["half"])] if n not in (2, 4) else []) + [(TWICE_N, m["twice"])]
          + ([(FIXED_SQRT4, m["fixed"])] if n != 4 else []))


@pytest.mark.question("Q1")
@settings(deadline=None, max_examples=25, derandomize=True, database=None, report_multiple_bugs=False,
          phases=[Phase.explicit, Phase.generate], suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(T=st.integers(1, 7), n=st.integers(1, 6), f32=st.booleans())
def test_context_property(sub, ref, close, seed, T, n, f32):
    """get_context_vector == the reference for any T, n (both dtypes); data seeded by (seed, T, n)."""
    dtype = "float32" if f32 else "float64"
    rng = np.random.default_rng([seed, T, n, int(f32)])
    w = A.softmax(rng.standard_normal(T)).astype(dtype)
    H = _rand(rng, (T, n), dtype)
    got = _call_with_shape_note(sub, "get_context_vector", w, H, T=T, n=n)
    close(got, ref.get_context_vector(_f64(w), _f64(H)),
          what=f"get_context_vector(w, H) with T={T}, n={n}, {dtype}", dtype=dtype, hints=_combine_hints(w, H))
