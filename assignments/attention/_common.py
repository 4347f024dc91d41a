"""What every question of `attention`'s grading tests shares (trusted side): the handout's data, the hint
texts expected.json quotes, and the helpers; the tests themselves are in test_attention_<question>.py,
one file per question, the fixtures they share in conftest.py, carried-forward credit for the student's own
softmax in _carried.py, the by-hand check's library calls in _by_hand.py, and what a failing comparison says of
an answer rounded to a few decimal places in _rounded.py.

Grading tests of the `attention` assignment (trusted side).

What it is for: checking a student's Q1-Q3 functions (HOMEWORK.md, README.md)
against the reference (`ref`) on the handout data and on random inputs of
other shapes (T != n, T = 1, odd widths, odd head counts), in float64 and
float32, and naming the known mistakes when an answer matches one: weights
applied along the feature axis, no 1/sqrt(d_k) scaling, a softmax that
overflows or runs over the wrong axis, a head scaled by sqrt(d_model), the
head-weight shape answered as a head's output shape, a function that reads
the handout's notebook variables instead of its arguments. Each mistaken
answer is computed on the trusted side by the answer models of `_answers.py`
(through `A`, checker.running.recorded.Answers: the student kit replays their results on
the public inputs and holds no code that computes an answer). A shape
answer is judged as a shape, in shape words. An edge case where some mistakes are invisible (one token, n = 1, one head, rows of
one score) earns only for a function also right where they show, and an
answer equal to one the function gave earlier for other inputs is named as a
cached answer (checker.judging.edge_gate).

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

from checker.running import carry
from checker.judging.edge_gate import answer_log, logged_close, only_if_right_elsewhere
from checker.running.together import asked
from checker.errors import GradingFailure, StudentError
from checker.running.recorded import Answers

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
CAUSAL = ("a causal mask: token i attends only to tokens 0..i (a decoder's mask, as in a GPT); self-attention "
          "here has no mask, every token attends to every token, the later ones too")
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


# the answer models (a softmax, the known mistakes): computed in the full package, replayed in the student kit
A = Answers(__package__ + "._answers")  # this folder's _answers.py (a copy of the folder uses its own)


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
    return asked(_ask_with_shape_note(sub, name, *args, T=T, n=n))()


def _ask_with_shape_note(sub, name, *args, T, n):
    """_call_with_shape_note as a generator (yield from it) over a Together or a handle."""
    try:
        return (yield sub.call(name, *args))
    except StudentError as e:
        if T != n and re.search(r"broadcast|matmul|shapes|aligned|mismatch|size", e.message):
            raise StudentError(e.message + f"\nThis input has T={T} tokens of width n={n}. Where the handout data "
                               "(T == n == 4) gives no such error, it usually means the weights were applied "
                               "along the feature axis instead of the token axis, or that the function uses a "
                               "handout variable (H_e) instead of its argument"
                               + (", or, with a single token, that np.squeeze / .squeeze() dropped the token axis "
                                  "(shape (1,) becomes ())" if T == 1 else "")
                               + f". Where the handout data fails too, look first at what {name} is given by the "
                               "functions it calls: one that returns None (it prints instead of returning) or an "
                               "array of another shape ((T, 1) rather than (T,), an np.matrix) breaks it.") from None
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
            (CAUSAL, pick(m["causal"])),
            (GLOBALS.format(names="X, W_Q, W_K, W_V"), handout[row]
             if row is not None and row < len(X_HANDOUT) else handout if row is None else None)]


def _mha_hints(X, Wq, Wk, Wv, Wo, h):
    m = A.mha_mistakes(X, Wq, Wk, Wv, Wo, h)
    return [(HEAD_SCALED_BY_D_K, m["d_k"]), (HEAD_SCALED_BY_D_MODEL, m["d_model"]), (NO_SCALING, m["none"]),
            ("each head's scores were divided by sqrt(num_heads) instead of sqrt(d_k) = sqrt(d_model / num_heads), "
             "the width of one head's keys", m["heads"]),
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
             "that its columns meet the first rows of W_O", m["reverse"]),
            ("the heads were stacked on a last axis (np.stack(heads, axis=-1), shape (T, d/num_heads, num_heads)) "
             "and reshaped to (T, d), which interleaves the heads' features column by column: concatenate them "
             "along the features, `np.concatenate(heads, axis=1)`, head 1's columns first", m["stacked_last"]),
            ("Q, K and V (shape (T, d)) were split into heads by reshape(num_heads, T, d/num_heads), which mixes "
             "the tokens' rows into the heads: a head is a block of columns, so reshape to (T, num_heads, "
             "d/num_heads) and then transpose to (num_heads, T, d/num_heads)", m["split_reshaped"]),
            ("W_O was applied transposed (Concat(...) @ W_O.T): the output is Concat(head_1, ..., head_h) @ W_O, "
             "with W_O of shape (num_heads * d/num_heads, d_model) as given", m["wo_transposed"])]


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
        hint = (None if e.hinted or args is None
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
    from checker.judging.compare import as_plain_array
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


def _shape_right(sub, ref, name, *args, ask=None):
    """GradingFailure unless the shape function `name` answers the reference's shape for `args` (`ask`: that
    call already sent with others, a checker.running.together Pending)."""
    what = f"{name}{args}"
    _same_shape(ask.get() if ask is not None else sub.call(name, *args), getattr(ref, name)(*args), what)


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


def _expect_value_error(get, what):
    """`get()` (an ask's answer) passes only if the student's code raised ValueError."""
    try:
        got = get()
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
    cannot earn the point here (its own tests say why), so the test is skipped then. Each call is made with
    float64 arguments and again with float32 ones (the float arrays cast): `np.asarray(x, dtype=np.float32)`
    copies a float64 array but hands a float32 one back as it is, so `s -= s.max()` after it writes into the
    caller's float32 array only."""
    changed, raised = [], []
    variants = [(name, params, expected, dtype) for dtype in ("float64", "float32")
                for name, params, expected in calls]
    with sub.together() as t:  # every call is made whatever the others answer: one round trip
        asked_ = [t.call_changes(name, *[_as_dtype(v, dtype) for v in params.values()])
                  for name, params, _, dtype in variants]
    for (name, params, expected, dtype), ask in zip(variants, asked_):
        try:
            value, which = ask.get()
        except GradingFailure as e:  # it raised, hung, or is missing
            raised.append(f"{name} ({dtype}): {e.message.splitlines()[0][:200]}")
            continue
        names = list(params)
        changed += [(name, names[i], dtype) for i in which]
        try:
            close(value, expected, what=name, **({"dtype": dtype} if dtype != "float64" else {}))
        except GradingFailure:
            raised.append(f"{name} does not give the right answer ({dtype} arguments)")
    if changed:
        dtypes = {}
        for name, arg, dtype in changed:
            dtypes.setdefault((name, arg), []).append(dtype)
        said = [f"{name} changed its {'' if len(set(d)) > 1 else d[0] + ' '}argument `{arg}`"
                for (name, arg), d in dtypes.items()]
        raise GradingFailure(
            "; ".join(_unique_in_order(said)) + " in place (an augmented assignment such as `x /= ...`, `x *= ...`, `x -= ...` or "
            "`x[...] = ...` on an argument writes into the caller's array): the caller's data is changed, so "
            "calling it twice gives two answers. Make a new array instead: `x = x / ...`.")
    if raised:
        pytest.skip("judged by the other tests, not here (an answer that is not right earns nothing here): "
                    + "; ".join(raised))


def _as_dtype(v, dtype):
    """A copy of `v`, its floats in `dtype` (anything else as it is)."""
    a = np.array(v, copy=True)
    return a.astype(dtype) if a.dtype.kind == "f" else a


def _unique_in_order(items):
    out = []
    for x in items:
        if x not in out:
            out.append(x)
    return out


SPLIT_ROWS = "the blocks were cut along the rows (axis 0) instead of the columns"


def _blocks_as_one_array(got, w_shape, h, what):
    """split_heads's answer for a W of shape `w_shape` in `h` heads, ready for close() against the reference's
    blocks stacked. A list (or tuple) of blocks is the handout's contract, so the comparison's words for a
    function that returns several arrays instead of one ("not one array: take its [0]") must never be given
    here: blocks that no one array can hold (shapes that differ) are judged here, block by block, in the
    contract's words, with the rows-for-columns hint where every block has all of W's columns (a cut along
    axis 0 with the columns' block width: (2, 6), (1, 6), (0, 6) for a (3, 6) W in 3 heads); so are blocks
    of one shape that are rows of W, which no value hint names where the rows do not split evenly. Anything
    else is returned as it is, for close() to judge."""
    if not isinstance(got, (list, tuple)) or not got or len(w_shape) != 2:
        return got
    try:
        blocks = [np.asarray(b) for b in got]
    except (ValueError, TypeError):
        return got
    if any(b.dtype.kind not in "biuf" for b in blocks):
        return got
    d, width = w_shape
    want = (d, width // h if h else 0)
    shapes = [b.shape for b in blocks]
    rows_cut = h > 1 and width != d and all(len(s) == 2 and s[1] == width for s in shapes) \
        and sum(s[0] for s in shapes) <= d
    if len(set(shapes)) == 1:
        if rows_cut and shapes[0] != want:
            raise GradingFailure(f"{what}: expected {h} blocks of shape {want}, got {h} of shape {shapes[0]} "
                                 f"(all {width} columns of W each)\nLikely mistake: {SPLIT_ROWS}.")
        return got
    said = ", ".join(str(tuple(int(n) for n in s)) for s in shapes)
    msg = (f"{what}: expected a list of {h} blocks, each of shape {want} (head i gets the i-th {want[1]} "
           f"columns of W), got blocks of different shapes: {said}")
    if rows_cut:
        msg += f"\nLikely mistake: {SPLIT_ROWS}."
    raise GradingFailure(msg)


ONE_TOKEN = "a single token, whose only weight is 1 whatever the scores"


_QUIET = lambda text: None  # noqa: E731  (a note fixture that keeps nothing: a gate's own check)


# every name, underscored helpers included: each question's file starts `from ._common import *`
__all__ = [n for n in dir() if not n.startswith("__")]
