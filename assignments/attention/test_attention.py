"""Grading tests of the `attention` assignment (trusted side).

What it is for: checking a student's Q1-Q3 functions (HOMEWORK.md, README.md)
against the reference (`ref`) on the handout data and on random inputs of
other shapes (T != n, T = 1, odd widths, odd head counts), in float64 and
float32, and naming the known mistakes when an answer matches one: weights
applied along the feature axis, no 1/sqrt(d_k) scaling, a softmax that
overflows or runs over the wrong axis, a head scaled by sqrt(d_model), the
head-weight shape answered as a head's output shape, a function that reads
the handout's notebook variables instead of its arguments. Each mistaken
answer is computed on the trusted side by the answer models of `_answers.py`
(through `A`, checker.kit.Answers: the student kit replays their results on
the public inputs and holds no code that computes an answer). A shape
answer is judged as a shape, in shape words. An edge case where some mistakes are invisible (one token, n = 1, one head, rows of
one score) earns only for a function also right where they show, and an
answer equal to one the function gave earlier for other inputs is named as a
cached answer (checker.edge_gate).

What it is not: a test of the reference itself (tests/test_reference_attention.py
checks it against HOMEWORK.md's numbers and torch), or code that runs in a
worker. Student code is reached only through `sub.call`, which returns plain
data. Which tests are hidden is said in spec.toml (`hidden_tests`): the
handout-value tests are public, most random-shape sweeps are hidden.
"""

import itertools
import math
import os
import random
import re
import weakref

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings, strategies as st

from checker import carry
from checker.edge_gate import answer_log, logged_close, only_if_right_elsewhere
from checker.errors import GradingFailure, StudentError
from checker.kit import Answers

# --------------------------------------------------------------------------- handout data (HOMEWORK.md)

H_E = np.array([[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
                [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]])
H_D = np.array([[0.58, -0.13, 0.94, 0.22], [0.45, 0.11, -0.88, 0.67]])
W_Q = np.array([[0.12, -0.87, 0.33, 0.45], [0.76, 0.21, -0.34, 0.67],
                [-0.55, 0.18, 0.29, -0.73], [0.03, -0.99, 0.42, 0.11]])
W_K = H_E.copy()
W_V = np.array([[0.58, -0.13, 0.94, 0.22], [-0.31, 0.66, -0.74, 0.09],
                [0.45, 0.11, -0.88, 0.67], [-0.92, 0.37, 0.28, -0.50]])
X_HANDOUT = np.array([[0.12, -0.87, 0.33, 0.45], [0.76, 0.21, -0.34, 0.67], [0.03, -0.99, 0.42, 0.11]])
TOKENS = ["this", "is", "translation"]

DTYPES = ["float64", "float32"]

# --------------------------------------------------------------------------- hint texts (expected.json quotes them)

FEATURE_AXIS = ("the weights were applied along the feature axis instead of the token axis "
                "(e.g. `(H * w).sum(0)` or `H @ w`); weight t must scale the whole row H[t], i.e. `w @ H`. "
                "It only runs at all when T == n")
NO_SCALING = "no 1/sqrt(d_k) scaling: the scores must be divided by sqrt(d_k) before the softmax"
SCALED_BY_N = "the scores were divided by n (or d_k) instead of sqrt(n)"
# `n**1/2` for sqrt(n), by the name of the width in each question (n, d_k)
HALF_OF = ("operator precedence: `{n}**1/2` is ({n}**1)/2 = {n}/2, not sqrt({n}), because `**` binds tighter than "
           "`/`; write `{n}**0.5` or `np.sqrt({n})`")
TWICE_OF = ("operator precedence: `scores / {n}**1/2` divides by {n} and then by 2, because `**` binds tighter than "
            "`/`; write `scores / {n}**0.5` or `scores / np.sqrt({n})`")
HALF_N, TWICE_N = HALF_OF.format(n="n"), TWICE_OF.format(n="n")
FIXED_SQRT4 = ("the scores were divided by 2 = sqrt(4), the handout's width, whatever the width: divide by the "
               "square root of the width of the inputs you are given (e.g. `np.sqrt(len(decoder_state))`, "
               "`K.shape[-1]`)")
SCALED_BY_T = ("the scores were divided by sqrt(T), the number of tokens, instead of sqrt(n), the width of "
               "one hidden state (T == n == 4 in the handout, so its data cannot tell them apart)")
SCALED_BY_D_MODEL = ("the scores were scaled by sqrt(d) (the width of X) instead of sqrt(d_k) "
                     "(the width of the keys)")
HEAD_SCALED_BY_D_K = ("each head's scores were divided by d_k = d_model / num_heads instead of sqrt(d_k) "
                      "(a helper that divides by n, reused for the heads?)")
HEAD_SCALED_BY_D_MODEL = ("each head was scaled by sqrt(d_model) instead of sqrt(d_model / num_heads), "
                          "the width of one head's keys")
OVERFLOW = ("the softmax overflows or underflows (np.exp(1000) is inf and inf/inf is NaN; np.exp(-1000) is 0 "
            "and 0/0 is NaN): subtract the largest score of each row before np.exp")
GLOBAL_MAX = ("the softmax subtracts the maximum of the whole array instead of the maximum of each row: "
              "a row far below it underflows to 0/0")
WRONG_AXIS = ("the softmax ran over the wrong axis (axis 0, the queries/rows); it must normalise over the "
              "last axis (the keys), e.g. `e / e.sum(axis=-1, keepdims=True)`")
WHOLE_ARRAY = ("the softmax normalised over the whole array, so all the rows together sum to 1: with 2-D "
               "scores each row must sum to 1 on its own, e.g. `e / e.sum(axis=-1, keepdims=True)`")
KQ_SWAPPED = "the scores were computed as K Q^T instead of Q K^T (row i must be query i against every key)"
HEAD_WEIGHT_IS_OUTPUT = ("this is the shape of one head's output (T x d_model/num_heads); one head's weight "
                         "W_i^Q maps d_model features to d_model/num_heads, so it is "
                         "(d_model, d_model // num_heads) and does not depend on T")
ABS_NORM = ("the weights were normalised by the sum of their absolute values (`s / np.abs(s).sum()`), which is "
            "not a softmax: the weights are exp(s) / sum(exp(s)), so they are all positive and a larger score "
            "always gets a larger weight")
AVERAGED = ("this is the plain average of the encoder states (`H.mean(axis=0)`): the context vector weights "
            "each state by its attention weight, `w @ H`")
KEYS_WITH_W_Q = ("the keys were computed with W_Q (or W_V) instead of W_K: k_j = X[j] @ W_K, "
                 "while the queries use W_Q")
GLOBALS = ("the function seems to use the handout's notebook variables ({names}) instead of its own "
           "arguments: it must work on whatever it is given")


# --------------------------------------------------------------------------- trusted-side helpers


@pytest.fixture
def close(close, sub):
    """The plugin's close, naming an answer that this function already gave for other inputs
    (checker.edge_gate: a result cached in a global)."""
    return logged_close(close, sub)


# the answer models (a softmax, the known mistakes): computed in the full package, replayed in the student kit
A = Answers("assignments.attention._answers")


@pytest.fixture(autouse=True)
def _answers_as_ref(ref):
    """A computes, records or replays as this test's `ref` does (checker.kit.Answers)."""
    with A.following(ref):
        yield


def _f64(a):
    """A float64 copy of an input, so expected answers are computed exactly from what was sent."""
    return np.asarray(a, dtype=np.float64)


def _rand(rng, shape, dtype, scale=1.0):
    return (rng.standard_normal(shape) * scale).astype(dtype)


def _tokens_and_projections(rng, T, d, widths, dtype):
    """X (T, d) with N(0, 1) entries and one (d, w) projection per width with N(0, 1/d) entries.

    The 1/d variance (as in a Xavier-style init) keeps projections, scores and outputs of order 1,
    so a correct float32 computation stays well inside float32 tolerances at any width.
    """
    return [_rand(rng, (T, d), dtype)] + [_rand(rng, (d, w), dtype, scale=1 / math.sqrt(d)) for w in widths]


def _mistaken_softmaxes(s):
    m = A.mistaken_softmaxes(s)
    return [(OVERFLOW, m["overflow"]), (GLOBAL_MAX, m["global_max"]), (WRONG_AXIS, m["wrong_axis"]),
            (WHOLE_ARRAY, m["whole_array"]), (ABS_NORM, m["abs_norm"])]


def _combine_hints(w, H):
    """Mistaken answers of get_context_vector(w, H): feature axis, or the handout's H_e used instead of H."""
    return _combine_hints_of(A.combine_mistakes(w, H, H_E))


def _combine_hints_of(m):
    return [(FEATURE_AXIS, m["feature_sum"]), (FEATURE_AXIS, m["feature_matmul"]),
            (GLOBALS.format(names="H_e"), m["handout_h_e"]), (AVERAGED, m["averaged"])]


def _call_with_shape_note(sub, name, *args, T, n):
    """sub.call, adding what a shape error on a T != n input usually means."""
    try:
        return sub.call(name, *args)
    except StudentError as e:
        if T != n and re.search(r"broadcast|matmul|shapes|aligned|mismatch|size", e.message):
            raise StudentError(e.message + f"\nThis input has T={T} tokens of width n={n}. A shape error that the "
                               "handout data (T == n == 4) does not show usually means the weights were applied "
                               "along the feature axis instead of the token axis, or that the function uses a "
                               "handout variable (H_e) instead of its argument"
                               + (", or, with a single token, that np.squeeze / .squeeze() dropped the token axis "
                                  "(shape (1,) becomes ())" if T == 1 else "") + ".") from None
        raise


def _context_hints(enc, dec):
    m = A.context_mistakes(enc, dec, H_E)
    return [(NO_SCALING, m["none"]), (SCALED_BY_N, m["n"]), (SCALED_BY_T, m["T"]), (HALF_N, m["half"]),
            (TWICE_N, m["twice"]), (FIXED_SQRT4, m["fixed"]), (ABS_NORM, m["abs"])] + _combine_hints_of(m["combine"])


def _self_attention_hints(X, Wq, Wk, Wv, row=None):
    m = A.self_attention_mistakes(X, Wq, Wk, Wv)
    pick = (lambda a: a) if row is None else (lambda a: None if a is None else a[row])
    handout = A.mistaken_self_attention(X_HANDOUT, W_Q, W_K, W_V)
    query_wk = "the query was projected with W_K (or W_V) instead of W_Q: q = X[i] @ W_Q"
    return [(NO_SCALING, pick(m["none"])), (SCALED_BY_N, pick(m["n"])),
            (HALF_OF.format(n="d_k"), pick(m["half"])), (TWICE_OF.format(n="d_k"), pick(m["twice"])),
            ("the scores were divided by sqrt(d_v), the width of the values, instead of sqrt(d_k), the width of "
             "the keys and queries they compare", pick(m["d_v"])),
            (FIXED_SQRT4, pick(m["fixed"])),
            ("the weights were used as (out, in), `X @ W.T`: with row vectors a projection is `X @ W`, W of "
             "shape (d_in, d_out)", pick(m["transposed"])),
            ("this is the attention weights (one per token), not the output: multiply them by the values, "
             "`weights @ V`", pick(m["weights"])),
            (SCALED_BY_D_MODEL, pick(m["d_model"])), (WRONG_AXIS, pick(m["wrong_axis"])),
            (KQ_SWAPPED, pick(m["kq"])), (query_wk, pick(m["query_wk"])), (query_wk, pick(m["query_wv"])),
            (KEYS_WITH_W_Q, pick(m["key_wq"])), (KEYS_WITH_W_Q, pick(m["key_wv"])), (ABS_NORM, pick(m["abs"])),
            ("the scores were divided by sqrt(T), the number of tokens, instead of sqrt(d_k), the width of the keys",
             pick(m["T"])),
            (f"this is the answer for token {row - 1 if row else len(X) - 1}, not token {row}: tokens are counted "
             "from 0 and the query of token i is X[i] @ W_Q (an off-by-one?)",
             pick(m["previous_row"]) if row is not None else None),
            (GLOBALS.format(names="X, W_Q, W_K, W_V"), handout[row]
             if row is not None and row < len(X_HANDOUT) else handout if row is None else None)]


def _mha_hints(X, Wq, Wk, Wv, Wo, h):
    m = A.mha_mistakes(X, Wq, Wk, Wv, Wo, h)
    return [(HEAD_SCALED_BY_D_K, m["d_k"]), (HEAD_SCALED_BY_D_MODEL, m["d_model"]), (NO_SCALING, m["none"]),
            (HALF_OF.format(n="d_k") + " (d_k = d_model / num_heads)", m["half"]),
            (TWICE_OF.format(n="d_k"), m["twice"]), (WRONG_AXIS, m["wrong_axis"]),
            ("head i must use the i-th contiguous block of d/num_heads columns (columns i*d/h .. (i+1)*d/h - 1), "
             "not every num_heads-th column", m["interleaved"]),
            ("the heads were stacked (np.array(heads), shape (num_heads, T, d/num_heads)) and reshaped to (T, d) "
             "without moving the head axis, which mixes the tokens' rows: concatenate along the features, "
             "`np.concatenate(heads, axis=1)` (or transpose to (T, num_heads, d/num_heads) before the reshape)",
             m["stacked"]),
            (KEYS_WITH_W_Q, m["keys_q"]), ("the concatenated heads were not multiplied by W_O", m["no_wo"]),
            ("the heads were concatenated in reverse order: Concat(head_1, ..., head_h) keeps head 1 first, so "
             "that its columns meet the first rows of W_O", m["reverse"])]


def _close_shape(close, got, expected, what, hints=(), sub=None, fn=None, args=None):
    """Compare a shape answer; an array returned instead of a shape is named as such. With the reference
    `fn` and its `args` {param: value}, a wrong answer that a notebook global explains is named."""
    if isinstance(got, np.ndarray) and got.shape != (len(expected),):
        advice = ("an array of that shape: return its `.shape`, not the array" if got.shape == tuple(expected)
                  else f"an array of shape {got.shape}: return the shape itself (a tuple), not an array")
        raise GradingFailure(f"{what}: expected the shape {tuple(expected)}, a tuple of {len(expected)} ints, "
                             f"but got {advice}")
    bools = _bools_in(got)
    if bools:
        raise GradingFailure(f"{what}: expected the shape {tuple(expected)}, a tuple of {len(expected)} ints, but "
                             f"it holds {bools[0]}, a bool: True/False are not sizes (isinstance(True, int) holds "
                             "in Python, but a shape made of True is not the shape). Return the ints themselves")
    log, key = answer_log(sub), what.split("(")[0]
    stale = [(text, tuple(int(x) for x in m.reshape(-1))) for text, m in log.stale_hints(key, expected)
             if m.ndim == 1 and np.all(m == np.round(m))]
    log.add(key, [float(x) for x in np.asarray(got, dtype=object).reshape(-1)] if _plain_sizes(got) else None, expected)
    # the answer for one head, asked whatever the answer (so that the student kit has it recorded)
    one_head = (_shape_or_none(fn, [1 if p == "num_heads" else v for p, v in args.items()])
                if args is not None and args.get("num_heads", 1) != 1 else None)
    try:
        _same_shape(got, expected, what, list(hints) + stale)
    except GradingFailure as e:
        hint = (None if "Likely mistake" in e.message or args is None
                else _global_argument_hint(sub, got, fn, args, one_head))
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None
    floats = _floats_in(got)
    if floats:
        raise GradingFailure(f"{what}: the numbers are right but {floats[0]} is a float; a shape holds ints "
                             "(np.zeros((4, 2.0)) raises TypeError): use // (d_model // num_heads), not / "
                             "(np.floor and np.ceil return floats too: wrap them in int(...))")


def _same_shape(got, expected, what, hints=()):
    """A shape answer judged as a shape and told in shape words ("expected the shape (4, 2), got (2, 4)"),
    never in a float comparison's words (a relative difference); a known wrong shape among `hints`
    [(text, shape)] is named. Right sizes held in floats pass here (_close_shape says that next)."""
    from checker.compare import as_plain_array
    arr = as_plain_array(got, what)  # a string, None or an object is refused in its own words
    exp = tuple(int(x) for x in expected)
    flat = arr.astype(np.float64).reshape(-1)
    if arr.ndim == 1 and flat.size == len(exp) and np.array_equal(flat, np.array(exp, dtype=np.float64)):
        return
    sizes = tuple(int(x) if float(x).is_integer() else float(x) for x in flat[:8])
    shown = ("(" + ", ".join(map(str, sizes)) + ("," if len(sizes) == 1 else "") + (", ..." if flat.size > 8 else "")
             + ")") if arr.ndim == 1 else (f"the single number {sizes[0]}" if arr.ndim == 0 else
                                           f"nested sizes of array shape {arr.shape}")
    msg = f"{what}: expected the shape {exp}, got {shown}"
    if arr.ndim == 1 and flat.size != len(exp):
        msg += f": {flat.size} size{'s' if flat.size != 1 else ''} for a shape of {len(exp)} axes"
    elif arr.ndim == 0:
        msg += f": a shape is a tuple of {len(exp)} sizes"
    named = []
    for text, mistaken in hints or ():
        if mistaken is None or text in named:
            continue
        m = tuple(mistaken)
        if m != exp and arr.ndim == 1 and len(m) == flat.size and np.array_equal(np.array(m, dtype=np.float64), flat):
            named.append(text)
    if named:
        msg += (f"\nLikely mistake: {named[0]}; or {named[1]} (this input cannot tell these apart)."
                if len(named) > 1 else f"\nLikely mistake: {named[0]}.")
    raise GradingFailure(msg)


def _shape_right(sub, ref, name, *args):
    """GradingFailure unless the shape function `name` answers the reference's shape for `args`."""
    what = f"{name}{args}"
    _same_shape(sub.call(name, *args), getattr(ref, name)(*args), what)


def _plain_sizes(got):
    """Whether a shape answer is a flat tuple/list of real numbers (what the answer log keeps)."""
    return isinstance(got, (tuple, list)) and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                  for x in got)


def _bools_in(got):
    """The entries of a shape answer that are bools (Python or numpy; a numpy scalar arrives as a 0-d
    array), shown as the student would see them."""
    items = list(got) if isinstance(got, (tuple, list)) else [got]
    out = []
    for x in items:
        if isinstance(x, (bool, np.bool_)):
            out.append(repr(x))
        elif isinstance(x, np.ndarray) and x.dtype.kind == "b":
            out.append(repr(x.item()) if x.ndim == 0 else f"an array of dtype bool {x.tolist()!r}")
    return out


def _floats_in(got):
    """The entries of a shape answer that are floats (a numpy float scalar arrives as a 0-d array), shown
    as the student would see them."""
    if isinstance(got, np.ndarray):
        return [f"np.{got.dtype}({x!r})" for x in got.reshape(-1).tolist()][:1] if got.dtype.kind == "f" else []
    out = []
    for x in got if isinstance(got, (tuple, list)) else []:
        if isinstance(x, float):
            out.append(repr(x))
        elif isinstance(x, np.ndarray) and x.ndim == 0 and x.dtype.kind == "f":
            out.append(f"np.{x.dtype}({x.item()!r})")
    return out


def _shape_or_none(fn, values):
    """The reference shape function `fn` of `values` as a list of ints, or None where it raises or (in the
    student kit) was never asked for these values: a notebook global's value."""
    try:
        return [int(x) for x in fn(*values)]
    except (ArithmeticError, TypeError, ValueError, pytest.skip.Exception):
        return None


def _global_argument_hint(sub, got, fn, args, one_head=None):
    """A shape function that answers what the reference `fn` gives with one argument replaced by one of
    the notebook's top-level ints (`h = 2` for num_heads) reads that global: name it. `args` {param: value};
    `one_head` the answer for num_heads=1."""
    try:
        got = [int(x) for x in np.asarray(got).reshape(-1)]
    except (TypeError, ValueError):
        return None
    if one_head is not None and one_head == got:  # num_heads left out, whatever globals equal 1
        return ("this is the answer for num_heads=1: the function seems to leave num_heads out "
                "(one head's width is d_model // num_heads)")
    try:
        tops = sub.top_level_ints()
    except GradingFailure:
        return None
    for param, value in args.items():
        for name, g in sorted(tops.items()):
            if g == value or g <= 0:
                continue
            alt = _shape_or_none(fn, [g if p == param else v for p, v in args.items()])
            if alt is not None and alt == got:
                return (f"this is the answer for {param}={g}, the value of your notebook's `{name} = {g}`: the "
                        f"function seems to read that global instead of its argument `{param}`")
    return None


OWN_SOFTMAX = ("right with your own get_attention_weights as the softmax, which is wrong on these scores: "
               "counted in Q1 only (fix get_attention_weights and {name} follows)")
NOT_CARRIED = ("\n(Your get_attention_weights was not used to excuse this answer: {why}.)")


class _Carry:
    """What carrying a softmax mistake forward needs to know about one submission, kept across its tests.

    `q1_failed`: a Q1 test of get_attention_weights failed on its values in this run (only a mistake that
    cost points in Q1 is carried). `q1`: [(scores, answer)] the student's softmax gave in those Q1 tests.
    `oracle`: a second worker of the same submission, loaded fresh, that is only ever asked
    get_attention_weights: the answers used to excuse a Q2/Q3 answer come from there, never from the
    worker that has just run the function under test (a softmax that keeps a counter or a flag, or reads
    its stack, answered the "right" weights there only after a stub that ignores W_Q and W_K)."""

    def __init__(self):
        self.q1_failed, self.q1, self.oracle, self.refused = False, [], None, None


_CARRIES = weakref.WeakKeyDictionary()


def _carry(sub):
    try:
        return _CARRIES.setdefault(sub, _Carry())
    except TypeError:  # a handle that cannot be weakly referenced: nothing is carried
        return _Carry()


_ASK_SEED = {}  # the run's seed, for the order of _softmax_answers' asks (a regrade asks in the same order)


@pytest.fixture(scope="module", autouse=True)
def _softmax_oracles_closed(request):
    """The fresh workers of _Carry (and of checker.carry) end with the submission's grading (this module's
    tests)."""
    plugin = next((p for p in request.config.pluginmanager.get_plugins()
                   if isinstance(getattr(p, "run_seed", None), int)), None)
    _ASK_SEED["seed"] = plugin.run_seed if plugin is not None else None
    carry.set_seed(_ASK_SEED["seed"])
    yield
    carry.close_workers()
    for state in list(_CARRIES.values()):
        if state.oracle is not None:
            state.oracle.close()
            state.oracle = None


def _q1_softmax_judged(sub, close, scores, got, expected, **kw):
    """close() for a Q1 test of get_attention_weights, remembering its input, answer and whether it failed."""
    state = _carry(sub)
    if len(state.q1) < 16:
        try:
            from checker.compare import as_plain_array
            answer = as_plain_array(got, "get_attention_weights")
            # kept only where it can be compared (the shape of the scores): a huge wrong answer is not kept
            state.q1.append((np.array(scores, copy=True), answer if answer.shape == np.shape(scores) else None))
        except (GradingFailure, TypeError, ValueError):
            pass
    try:
        close(got, expected, **kw)
    except GradingFailure:
        state.q1_failed = True
        raise


def _oracle(sub):
    """The fresh worker that answers get_attention_weights for carried credit (see _Carry)."""
    state = _carry(sub)
    if state.oracle is None:
        from checker.sandbox import SubmissionHandle
        handle = SubmissionHandle(sub.path, sub.zygote, sub.limits, sub.secrets, sub.id + "-softmax")
        weakref.finalize(sub, handle.close)
        handle.load()
        state.oracle = handle
    return state.oracle


def _same(a, b):
    return a is not None and b is not None and a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0,
                                                                                     equal_nan=True)


def _softmax_answers(sub, scores):
    """The student's get_attention_weights of each of `scores`, as the fresh worker answers them.

    Each input is asked twice, and its mirror image (keys reversed) once, shuffled among the inputs of
    the Q1 tests, in an order the student's code cannot predict. Credit is refused (GradingFailure, with
    the reason) unless the function answers as a function of its scores would: the same scores, the same
    answer, now and in Q1; and an answer that changes when the scores do."""
    from checker.compare import as_plain_array
    state = _carry(sub)
    if state.refused:
        raise GradingFailure(state.refused)
    asks = [("s", i, S) for i, S in enumerate(scores)] * 2 + [("m", i, np.flip(S, -1)) for i, S in enumerate(scores)]
    asks += [("q", i, S) for i, (S, _) in enumerate(state.q1[:4])]
    # an order the student's code cannot predict (the run's seed never reaches a worker), the same in a regrade
    seed = _ASK_SEED.get("seed")
    random.Random(os.urandom(8) if seed is None else f"{seed}:{getattr(sub, 'id', '')}:softmax").shuffle(asks)
    oracle, got = _oracle(sub), {}
    for kind, i, S in asks:
        try:
            w = as_plain_array(oracle.call("get_attention_weights", _f64(S)), "get_attention_weights")
            w = w.astype(np.float64) if w.shape == np.shape(S) else None
        except (GradingFailure, TypeError, ValueError):
            w = None
        got.setdefault((kind, i), []).append(w)
    why = None
    for i, S in enumerate(scores):
        first, again = got[("s", i)]
        if first is None:
            raise GradingFailure("")
        if not _same(first, again):
            why = "it gave two different answers to the same scores"
        elif not np.array_equal(S, np.flip(S, -1)) and _same(first, got[("m", i)][0]):
            why = "its answer did not change when the scores did"
    for i, (S, answer) in enumerate(state.q1[:4]):
        if not _same(got[("q", i)][0], answer.astype(np.float64) if answer is not None
                     and answer.shape == np.shape(S) else None):
            why = "it answered scores of the Q1 tests otherwise than it did in those tests"
    if why:
        state.refused = why
        raise GradingFailure(why)
    return [got[("s", i)][0] for i in range(len(scores))]


def _close_own_softmax(sub, close, note, name, got, expected, own, **kw):
    """close(got, expected), with the error carried forward: an answer that is `own()`, the computation
    redone with the student's own get_attention_weights (called on the trusted side's scores), passes with
    a note. The softmax's mistake is Q1's and costs points there only (HOMEWORK.md: a mistake loses points
    on its own question); a function whose own mistake is elsewhere still fails.

    Carried only when the mistake cost points in Q1 (a Q1 test of get_attention_weights failed in this
    run), and only from answers the softmax gave when it could not know what they were for: in a fresh
    worker that never runs the function under test, each asked twice among Q1's inputs in a random order
    (_softmax_answers). A softmax that answers otherwise at other times, or ignores its scores, or
    degenerates (zeros, NaN) earns nothing here."""
    try:
        close(got, expected, **kw)
    except GradingFailure as e:
        if not _carry(sub).q1_failed:
            raise
        try:
            carried = own()
            # no credit for a degenerate softmax (zeros, NaN) met by a stub that returns the same
            if not (np.isfinite(carried).all() and np.any(carried)):
                raise e from None
            close(got, carried, what="", dtype=kw.get("dtype"))
        except GradingFailure as failure:
            refused = _carry(sub).refused
            if failure is not e and refused and failure.message == refused:
                raise e.retold(e.message + NOT_CARRIED.format(why=refused)) from None
            raise e from None
        note(OWN_SOFTMAX.format(name=name))


def _weights_by(sub, S):
    """The student's get_attention_weights of the scores S (float64), as a float64 array, from the fresh
    worker (_softmax_answers)."""
    return _softmax_answers(sub, [_f64(S)])[0]


def _own_self_attention(sub, X, Wq, Wk, Wv, row=None):
    """own() for _close_own_softmax: self_attention redone with the student's get_attention_weights on the
    trusted side's scores (asked now, so that the kit has them recorded)."""
    S, V = A.scores_and_values(X, Wq, Wk, Wv)
    return lambda: _weights_by(sub, S) @ V if row is None else _weights_by(sub, S[row]) @ V


def _own_mha(sub, X, Wq, Wk, Wv, Wo, h):
    """own() for _close_own_softmax: multi_head_attention redone with the student's get_attention_weights."""
    parts, Wo = A.heads_scores_and_values(X, Wq, Wk, Wv, h), _f64(Wo)
    return lambda: np.concatenate([_weights_by(sub, S) @ V for S, V in parts], axis=1) @ Wo


def _expect_value_error(sub, what, name, *args):
    """Call `name(*args)` and pass only if the student's code raised ValueError."""
    try:
        got = sub.call(name, *args)
    except StudentError as e:
        if "ValueError" in e.exc_types:  # ValueError or a subclass of it
            return
        raise GradingFailure(f"{what}: expected a ValueError, but {e.message}") from None
    raise GradingFailure(f"{what}: expected a ValueError (num_heads does not divide the width), "
                         f"but it returned without an error ({type(got).__name__} value). "
                         "Check the width with `%` and `raise ValueError(...)`.")


def _check_arguments_unchanged(sub, close, calls):
    """Call each (name, {param: value}, expected answer) and fail if the function changed one of its array
    arguments in place (`scores /= ...`, `H *= w[:, None]`): the caller's array changes, so a second call
    gives another answer. The test passes only for right answers: a call that raises or answers wrongly
    cannot earn the point here (its own tests say why), so the test is skipped then."""
    changed, raised = [], []
    for name, params, expected in calls:
        try:
            value, which = sub.call_changes(name, *[np.array(v, copy=True) for v in params.values()])
        except GradingFailure as e:  # it raised, hung, or is missing
            raised.append(f"{name}: {e.message.splitlines()[0][:200]}")
            continue
        names = list(params)
        changed += [f"{name} changed its argument `{names[i]}`" for i in which]
        try:
            close(value, expected, what=name)
        except GradingFailure:
            raised.append(f"{name} does not give the right answer")
    if changed:
        raise GradingFailure(
            "; ".join(_unique_in_order(changed)) + " in place (an augmented assignment such as `x /= ...`, `x *= ...`, `x -= ...` or "
            "`x[...] = ...` on an argument writes into the caller's array): the caller's data is changed, so "
            "calling it twice gives two answers. Make a new array instead: `x = x / ...`.")
    if raised:
        pytest.skip("judged by the other tests, not here (an answer that is not right earns nothing here): "
                    + "; ".join(raised))


# ============================================================================ Q1


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


# Library calls that would do a function's work for the student (the handout: "by hand", numpy only).
# torch's calls are named as torch names them; other libraries' as "library:function".
SOFTMAX_CALLS = {"softmax": "torch.softmax", "log_softmax": "torch.log_softmax", "scipy:softmax":
                 "scipy.special.softmax", "scipy:log_softmax": "scipy.special.log_softmax",
                 "sklearn:softmax": "sklearn's softmax", "jax:softmax": "jax.nn.softmax",
                 "tensorflow:softmax": "tf.nn.softmax"}
ATTENTION_CALLS = {"scaled_dot_product_attention": "torch's scaled_dot_product_attention",
                   "multi_head_attention_forward": "torch.nn.MultiheadAttention"}


# The same, as bare names read in the source (checker.by_hand): F.softmax, x.softmax(...), nn.Softmax, ...
SOFTMAX_NAMES = {"softmax", "log_softmax", "Softmax", "LogSoftmax"}
ATTENTION_NAMES = {"scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention"}
SOURCE_NAMES = {id(SOFTMAX_CALLS): SOFTMAX_NAMES, id(ATTENTION_CALLS): ATTENTION_NAMES}
UNCLEAR = ("{name} uses {what}, which hides from a reading of the code what it calls (or reads the grader's "
           "own state): the grader could not check that it is written by hand. Write it with plain calls "
           "(np.exp, np.max, np.sum, @)")


def _check_by_hand(sub, close, expected, forbidden, what, name, *args, own=None, note=None, judge=None):
    """Right values, written by hand: a call that went through a library's own softmax or attention fails.
    `own` and `note`: the error carried forward from the student's softmax, as _close_own_softmax; `judge(got,
    what)`: the values judged so instead (multi_head_attention: _close_mha).

    "By hand" is decided on the trusted side, from the submission's files (checker.by_hand: the function's
    source and everything it reaches by name). The worker's trace (sub.torch_calls) comes from the
    student's own process, which can read the probe's frames, replace it through gc or call the library
    from another thread: it may name a library call and fail the test, never pass it."""
    from checker.by_hand import library_use
    got, calls = sub.torch_calls(name, *args)
    if judge is not None:
        judge(got, what)
    elif own is None:
        close(got, expected, what=what)
    else:
        _close_own_softmax(sub, close, note, name, got, expected, own, what=what)
    source = library_use(sub.path, name, SOURCE_NAMES[id(forbidden)], getattr(sub, "secrets", ()))
    used = _unique_in_order(shown for fn, shown in forbidden.items() if fn in calls) or source.used
    if used:
        raise GradingFailure(f"{name} calls {' and '.join(used)}: its values are right, but the handout asks you "
                             "to write it by hand with numpy (np.exp, np.max, np.sum, @)")
    if source.missing:
        raise GradingFailure(f"the grader found no `def {name}` in your files, so it could not check that {name} is "
                             "written by hand")
    if source.unclear:
        raise GradingFailure(UNCLEAR.format(name=name, what=" and ".join(source.unclear[:3])))


def _unique_in_order(items):
    out = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


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


ONE_TOKEN = "a single token, whose only weight is 1 whatever the scores"


def _check_get_scores(sub, ref, close, rng, T, n, dtype):
    M, v = _rand(rng, (T, n), dtype), _rand(rng, (n,), dtype)
    got = sub.call("get_scores", M, v)
    close(got, ref.get_scores(_f64(M), _f64(v)), what=f"get_scores(matrix, vector) with T={T}, n={n}, {dtype}",
          dtype=dtype)


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_get_scores_random(sub, ref, close, rng, T, n, dtype):
    _check_get_scores(sub, ref, close, rng, T, n, dtype)
    if T == 1:
        only_if_right_elsewhere("get_scores", "a single token", "T=5, n=3",
                                lambda: _check_get_scores(sub, ref, close, rng, 5, 3, dtype))


def _check_get_context_vector(sub, ref, close, rng, T, n, dtype):
    w = A.softmax(rng.standard_normal(T)).astype(dtype)
    H = _rand(rng, (T, n), dtype)
    got = _call_with_shape_note(sub, "get_context_vector", w, H, T=T, n=n)
    close(got, ref.get_context_vector(_f64(w), _f64(H)),
          what=f"get_context_vector(w, H) with T={T}, n={n}, {dtype}", dtype=dtype, hints=_combine_hints(w, H))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_get_context_vector_random(sub, ref, close, rng, T, n, dtype):
    _check_get_context_vector(sub, ref, close, rng, T, n, dtype)
    if T == 1:  # one state: its average, its sum and its weighted sum are all the same
        only_if_right_elsewhere("get_context_vector", ONE_TOKEN, "T=5, n=3",
                                lambda: _check_get_context_vector(sub, ref, close, rng, 5, 3, dtype))


def _check_context_vector(sub, ref, close, rng, T, n, dtype):
    enc, dec = _rand(rng, (T, n), dtype), _rand(rng, (n,), dtype)
    got = _call_with_shape_note(sub, "context_vector", enc, dec, T=T, n=n)
    close(got, ref.context_vector(_f64(enc), _f64(dec)),
          what=f"context_vector(encoder_states, decoder_state) with T={T}, n={n}, {dtype}", dtype=dtype,
          hints=_context_hints(enc, dec))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", SCORE_SHAPES)
def test_context_vector_random(sub, ref, close, rng, T, n, dtype):
    _check_context_vector(sub, ref, close, rng, T, n, dtype)
    if T == 1:  # one token: any scaling, any normalisation of one score gives the weight 1
        only_if_right_elsewhere("context_vector", ONE_TOKEN, "T=5, n=3",
                                lambda: _check_context_vector(sub, ref, close, rng, 5, 3, dtype))


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
    _check_softmax_shape(sub, ref, close, rng, shape, dtype)
    if shape[-1] == 1:  # rows of one score: any normalisation gives 1
        only_if_right_elsewhere("get_attention_weights", "rows of a single score", "scores of shape (3, 6)",
                                lambda: _check_softmax_shape(sub, ref, close, rng, (3, 6), dtype))


def _check_softmax_shape(sub, ref, close, rng, shape, dtype):
    s = _rand(rng, shape, dtype, scale=3.0)
    got = sub.call("get_attention_weights", s)
    _q1_softmax_judged(sub, close, s, got, ref.get_attention_weights(_f64(s)),
                       what=f"get_attention_weights(scores of shape {shape}) in {dtype}",
          dtype=dtype, hints=_mistaken_softmaxes(s))


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,n", [(1, 1), (6, 9), (3, 2)])
def test_scale_scores_random(sub, ref, close, rng, T, n, dtype):
    _check_scale_scores(sub, ref, close, rng, T, n, dtype)
    if n == 1:  # sqrt(1) = 1: dividing by it, by 1, or not at all are the same
        only_if_right_elsewhere("scale_scores", "n = 1", "n = 9",
                                lambda: _check_scale_scores(sub, ref, close, rng, 6, 9, dtype))


def _check_scale_scores(sub, ref, close, rng, T, n, dtype):
    s = _rand(rng, (T,), dtype, scale=3.0)
    got = sub.call("scale_scores", s, n)
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


# ============================================================================ Q2


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
    _check_self_attention(sub, ref, close, note, rng, T, d, dk, dv, dtype)
    if T == 1:
        only_if_right_elsewhere("self_attention", ONE_TOKEN, "T=5, d=3, d_k=4, d_v=2",
                                lambda: _check_self_attention(sub, ref, close, _QUIET, rng, 5, 3, 4, 2, dtype))


_QUIET = lambda text: None  # noqa: E731  (a note fixture that keeps nothing: a gate's own check)


def _check_self_attention(sub, ref, close, note, rng, T, d, dk, dv, dtype):
    X, Wq, Wk, Wv = _tokens_and_projections(rng, T, d, (dk, dk, dv), dtype)
    got = sub.call("self_attention", X, Wq, Wk, Wv)
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
    for i in range(3):
        hints = _self_attention_hints(*args, row=i)
        for mask in itertools.product([False, True], repeat=4):
            if any(mask):
                mixed = [h if m else a for a, h, m in zip(args, handout, mask)]
                hints.append((GLOBALS.format(names="X, W_Q, W_K, W_V"), A.mistaken_self_attention(*mixed)[i]))
        got = sub.call("self_attention_token", *args, i)
        _close_own_softmax(sub, close, note, "self_attention_token", got, ref.self_attention_token(*args, i),
                           own=_own_self_attention(sub, *args, row=i),
                           what=f"self_attention_token(new random X (3 x 4), W_Q, W_K, W_V (4 x 4), {i})",
                           hints=hints)


@pytest.mark.question("Q2")
def test_self_attention_token_every_row(sub, ref, close, note, rng):
    T, d, dk, dv = 6, 5, 3, 2
    X, Wq, Wk, Wv = (rng.standard_normal(s) for s in [(T, d), (d, dk), (d, dk), (d, dv)])
    for i in range(T):
        got = sub.call("self_attention_token", X, Wq, Wk, Wv, i)
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


# ============================================================================ Q3


def _check_blocks(sub, ref, close, W, h, dtype, label):
    got = sub.call("split_heads", W, h)
    what = f"split_heads({label}, {h})"
    if isinstance(got, (list, tuple)) and len(got) != h:
        raise GradingFailure(f"{what}: expected a list of {h} arrays (one per head), got {len(got)} items")
    Wf = _f64(W)
    m = A.split_mistakes(Wf, h)
    close(got, np.stack(ref.split_heads(Wf, h)), what=what, dtype=dtype,
          hints=[("the blocks were cut along the rows (axis 0) instead of the columns", m["rows"]),
                 ("head i must get the i-th block of contiguous columns, not every num_heads-th column",
                  m["interleaved"]),
                 ("each block came back transposed (d/num_heads x d) instead of (d x d/num_heads)",
                  np.stack([b.T for b in ref.split_heads(Wf, h)]))])


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,width,h", [(4, 4, 2), (3, 6, 3), (5, 10, 5), (2, 6, 1), (4, 6, 6)])
def test_split_heads_blocks(sub, ref, close, d, width, h):
    _check_arange_blocks(sub, ref, close, d, width, h)
    if h in (1, width):  # one head (the whole W) or one column a head: every way of cutting agrees
        only_if_right_elsewhere("split_heads", f"{h} head{'s' if h > 1 else ''} of width {width // h}",
                                "W of shape (3, 6) in 3 heads", lambda: _check_arange_blocks(sub, ref, close, 3, 6, 3))


def _check_arange_blocks(sub, ref, close, d, width, h):
    W = np.arange(d * width, dtype=np.float64).reshape(d, width) / 10  # every entry tells where it came from
    _check_blocks(sub, ref, close, W, h, "float64", f"W of shape ({d}, {width}) with W[r, c] = r*{width/10:g} + c/10")


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,width,h", [(4, 6, 4), (3, 5, 2), (4, 4, 3), (2, 8, 16)])
def test_split_heads_not_divisible(sub, d, width, h):
    W = np.ones((d, width))
    _expect_value_error(sub, f"split_heads(W of shape ({d}, {width}), {h})", "split_heads", W, h)


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d,width,h", [(7, 12, 4), (1, 9, 3), (6, 5, 5)])
def test_split_heads_random(sub, ref, close, rng, d, width, h, dtype):
    W = _rand(rng, (d, width), dtype)
    _check_blocks(sub, ref, close, W, h, dtype, f"random W of shape ({d}, {width}), {dtype}")


SHAPE_CASES = [(3, 4, 2), (7, 6, 3), (1, 10, 5), (128, 512, 8), (5, 64, 1)]  # (T, d_model, num_heads)
WEIGHT_CASES = [(d, h) for _, d, h in SHAPE_CASES]  # (d_model, num_heads)


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,h", WEIGHT_CASES)
def test_head_weight_shape(sub, ref, close, d, h):
    got = sub.call("head_weight_shape", d, h)
    # a head's output shape (t, d/h) for any t the student may have used (a notebook T, X.shape[0], ...)
    hints = [(HEAD_WEIGHT_IS_OUTPUT, (t, d // h)) for t in range(1, 1025) if t not in (d, h)]
    hints.append(("the first dimension is the number of features a head's weight takes in, d_model, not the "
                  "number of heads: (d_model, d_model // num_heads)", (h, d // h) if h != d else None))
    hints.append(("the shape is transposed: with row vectors (X @ W) a weight is (d_in, d_out) = "
                  "(d_model, d_model // num_heads)", (d // h, d) if h > 1 else None))
    _close_shape(close, got, ref.head_weight_shape(d, h), what=f"head_weight_shape(d_model={d}, num_heads={h})",
                 hints=hints, sub=sub, fn=ref.head_weight_shape, args={"d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("head_weight_shape", "num_heads=1", "head_weight_shape(d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "head_weight_shape", 6, 3))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("T,d,h", SHAPE_CASES)
def test_head_output_shape(sub, ref, close, T, d, h):
    got = sub.call("head_output_shape", T, d, h)
    _close_shape(close, got, ref.head_output_shape(T, d, h),
                 what=f"head_output_shape(seq_len={T}, d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's weight (d_model, d_model // num_heads), not of its output",
                         (d, d // h) if T != d else None),
                        ("the shape is transposed: one row per token, (seq_len, d_model // num_heads)",
                         (d // h, T) if T != d // h else None)],
                 sub=sub, fn=ref.head_output_shape, args={"seq_len": T, "d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("head_output_shape", "num_heads=1", "head_output_shape(seq_len=7, d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "head_output_shape", 7, 6, 3))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("T,d,h", SHAPE_CASES)
def test_concat_shape(sub, ref, close, T, d, h):
    got = sub.call("concat_shape", T, d, h)
    _close_shape(close, got, ref.concat_shape(T, d, h), what=f"concat_shape(seq_len={T}, d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's output; the concatenation puts all num_heads heads side by side",
                         (T, d // h) if h > 1 else None)],
                 sub=sub, fn=ref.concat_shape, args={"seq_len": T, "d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("concat_shape", "num_heads=1", "concat_shape(seq_len=7, d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "concat_shape", 7, 6, 3))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,h", WEIGHT_CASES)
def test_w_o_shape(sub, ref, close, d, h):
    got = sub.call("w_o_shape", d, h)
    _close_shape(close, got, ref.w_o_shape(d, h), what=f"w_o_shape(d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's weight; W^O maps the concatenated heads "
                         "(num_heads * d_model // num_heads features) back to d_model",
                         (d, d // h) if h > 1 else None)],
                 sub=sub, fn=ref.w_o_shape, args={"d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("w_o_shape", "num_heads=1", "w_o_shape(d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "w_o_shape", 6, 3))


@pytest.mark.question("Q3")
def test_q3_functions_leave_their_arguments_unchanged(sub, ref, close):
    mha = {"X": X_HANDOUT, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": np.eye(4), "num_heads": 2}
    _check_arguments_unchanged(sub, close, [
        ("split_heads", {"W": W_Q, "num_heads": 2}, np.stack(ref.split_heads(W_Q, 2))),
        ("multi_head_attention", mha, ref.multi_head_attention(*mha.values()))])


INDIVISIBLE = [(3, 10, 3), (5, 7, 2), (2, 6, 4)]  # (T, d_model, num_heads): num_heads does not divide d_model


@pytest.mark.question("Q3")
@pytest.mark.parametrize("name", ["head_weight_shape", "head_output_shape", "w_o_shape"])
def test_shapes_when_num_heads_does_not_divide(sub, ref, close, name):
    """The handout's formulas round d_model / num_heads down (`//`); a ValueError, as split_heads raises,
    is accepted too."""
    for T, d, h in INDIVISIBLE:
        params = {"seq_len": T, "d_model": d, "num_heads": h} if name == "head_output_shape" else \
            {"d_model": d, "num_heads": h}
        what = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        try:
            got = sub.call(name, *params.values())
        except StudentError as e:
            if "ValueError" in e.exc_types:
                continue
            raise
        up = -(-d // h)  # d_model / num_heads rounded up
        rounded_up = ("d_model / num_heads was rounded up; the handout's formula rounds it down: "
                      "d_model // num_heads")
        hints = {"head_weight_shape": [(rounded_up, (d, up))],
                 "head_output_shape": [(rounded_up, (T, up))],
                 "w_o_shape": [("W^O takes the concatenated heads, num_heads * (d_model // num_heads) features, "
                                "which is fewer than d_model when num_heads does not divide it: the handout's "
                                "formula is (num_heads * (d_model // num_heads), d_model)", (d, d)),
                               (rounded_up, (h * up, d))]}[name]
        _close_shape(close, got, getattr(ref, name)(*params.values()), what=what, hints=hints, sub=sub,
                     fn=getattr(ref, name), args=params)


def _mha_case(rng, T, d, dtype):
    X, *Ws = _tokens_and_projections(rng, T, d, (d, d, d, d), dtype)
    return X, Ws


def _check_mha(sub, ref, close, note, X, Ws, h, dtype, label):
    got = sub.call("multi_head_attention", X, *Ws, h)
    args = [_f64(a) for a in (X, *Ws)]
    _close_mha(sub, ref, close, note, got, X, Ws, h, what=f"multi_head_attention({label}, num_heads={h})",
               dtype=dtype, hints=_mha_hints(*args, h))


def _close_mha(sub, ref, close, note, got, X, Ws, h, **kw):
    """close() for multi_head_attention with both mistakes of earlier questions carried forward: the
    student's softmax (Q1, _close_own_softmax) and their self_attention (Q2, checker.carry).

    The handout's multi-head attention is self-attention per head: head i is self_attention(X, W_Q_i,
    W_K_i, W_V_i) with the i-th column blocks (HOMEWORK.md, Q3), the heads concatenated in order and
    multiplied by W_O. Where the student's self_attention lost points in Q2, an answer equal to that
    composition with their own self_attention (asked of a fresh worker; the blocks cut here, by the
    handout's split, not by their split_heads) passes with a note naming self_attention."""
    args = [_f64(a) for a in (X, *Ws)]
    blocks = [ref.split_heads(W, h) for W in args[1:4]]  # asked up front, so that the kit has them recorded
    try:
        _close_own_softmax(sub, close, note, "multi_head_attention", got, ref.multi_head_attention(*args, h),
                           own=_own_mha(sub, *args, h), **kw)
    except GradingFailure as failure:
        Xs = np.asarray(X)

        def compose(ask):
            heads = ask([(Xs, *(np.asarray(b, dtype=Xs.dtype) for b in bs)) for bs in zip(*blocks)])
            return np.concatenate(heads, axis=1) @ args[4]

        carry.close_carried(sub, close, note, failure, got, name="multi_head_attention", by="self_attention",
                            question="Q2", compose=compose, vary=_other_tokens, dtype=kw.get("dtype"))


def _other_tokens(args):
    """self_attention's arguments with the tokens in reverse order: its answer changes (its rows do)."""
    X, *Ws = args
    return (np.ascontiguousarray(np.asarray(X)[::-1]), *Ws)


@pytest.mark.question("Q3")
def test_multi_head_attention_handout(sub, ref, close, note):
    Wo = np.eye(4)
    _check_mha(sub, ref, close, note, X_HANDOUT, [W_Q, W_K, W_V, Wo], 2, "float64",
               "handout X, W_Q, W_K, W_V, W_O = identity (4 x 4)")


@pytest.mark.question("Q3")
def test_multi_head_attention_by_hand(sub, ref, close, note):
    Ws = [W_Q, W_K, W_V, np.eye(4)]
    _check_by_hand(sub, close, ref.multi_head_attention(X_HANDOUT, *Ws, 2), ATTENTION_CALLS,
                   "multi_head_attention(handout X, W_Q, W_K, W_V, W_O = identity, 2)", "multi_head_attention",
                   X_HANDOUT, *Ws, 2, judge=lambda got, what: _close_mha(sub, ref, close, note, got, X_HANDOUT, Ws,
                                                                        2, what=what))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,d,h", [(3, 4, 2), (5, 6, 3), (2, 10, 5), (1, 8, 4)])
def test_multi_head_attention(sub, ref, close, note, rng, T, d, h, dtype):
    X, Ws = _mha_case(rng, T, d, dtype)
    _check_mha(sub, ref, close, note, X, Ws, h, dtype, f"random X ({T} x {d}), W_Q, W_K, W_V, W_O ({d} x {d}), {dtype}")
    _mha_gate(sub, ref, close, rng, T, d, h, dtype)


def _mha_gate(sub, ref, close, rng, T, d, h, dtype):
    """An edge case of multi_head_attention (one token, one head, heads of width 1) earns only for a
    function also right on 5 tokens, d = 6 in 3 heads (checker.edge_gate)."""
    edge = [w for w, hit in [(ONE_TOKEN, T == 1), ("a single head, which any split and concatenation keeps whole",
                                                    h == 1), ("heads of width 1, where sqrt(d_k) = 1", d // h == 1)]
            if hit]
    if edge:
        X, Ws = _mha_case(rng, 5, 6, dtype)
        only_if_right_elsewhere("multi_head_attention", "; ".join(edge), "5 tokens, d = 6, 3 heads",
                                lambda: _check_mha(sub, ref, close, _QUIET, X, Ws, 3, dtype, f"random X (5 x 6), {dtype}"))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,d,h", [(7, 9, 3), (4, 12, 4), (6, 5, 5), (3, 6, 1), (1, 3, 3)])
def test_multi_head_attention_random(sub, ref, close, note, rng, T, d, h, dtype):
    X, Ws = _mha_case(rng, T, d, dtype)
    _check_mha(sub, ref, close, note, X, Ws, h, dtype, f"random X ({T} x {d}), W_Q, W_K, W_V, W_O ({d} x {d}), {dtype}")
    _mha_gate(sub, ref, close, rng, T, d, h, dtype)
