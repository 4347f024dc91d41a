"""The one comparison of a student's numbers with the reference's.

What it is for: deciding whether `got` matches `expected` and, when it does
not, saying why in words that teach: shape first, then NaN/Inf, then dtype
(only where the test is about dtype), then values with dtype-aware
tolerances. When a known mistake's answer is given (`hints`), a failing
answer that matches it is named ("no 1/sqrt(d_k) scaling").

What it is not: aware of processes or pytest. It is pure: plain values in,
`None` or a raised `GradingFailure` out. `got` is always converted to a
base-class float64/bool/int numpy array first, so no student object's
`__eq__` or `__array__` takes part in a comparison. Only real numbers are
numbers: a bool (True, np.True_, a bool array or tensor), a string, a complex
number or an object where numbers are expected is refused by name, wherever it
sits in the answer (True is neither 1 nor "truthy, so right"); True/False are
compared as such only where the expected answer is itself bool (a mask).
"""

import math

import numpy as np

from checker.errors import GradingFailure

__all__ = ["TOLERANCES", "tolerance", "as_plain_array", "compare", "compare_lowp", "lowp_blind", "describe_mismatch"]

# (rtol, atol), torch.testing.assert_close's defaults
TOLERANCES = {
    "float64": (1e-7, 1e-7),
    "float32": (1.3e-6, 1e-5),
    "float16": (1e-3, 1e-5),
    "bfloat16": (1.6e-2, 1e-5),
}


def tolerance(dtype, overrides=None, rtol=None, atol=None):
    """(rtol, atol) for a dtype name, with spec overrides and explicit values winning in that order."""
    name = str(dtype).replace("torch.", "") if dtype is not None else "float64"
    r, a = TOLERANCES.get(name, TOLERANCES["float64"])
    over = (overrides or {}).get(name)
    if over:
        r, a = over.get("rtol", r), over.get("atol", a)
    return (r if rtol is None else rtol), (a if atol is None else atol)


def as_plain_array(value, what="the value", allow_bool=False):
    """A base-class numpy array copy of plain data, or a GradingFailure saying what was wrong.

    Only real numbers are numbers here: a bool (True, np.True_, an array or tensor of dtype bool),
    a string, a complex number or an object is refused, wherever it sits in a nested answer, with its
    type named: True is not read as 1, nor as any truthy number (an array of True of the right shape
    is not the answer). `allow_bool` is for answers that are themselves True/False (a causal mask)."""
    if value is None:
        raise GradingFailure(f"{what} returned None: does the function end with `return ...`?")
    if isinstance(value, dict):
        raise GradingFailure(f"{what} returned a {type(value).__name__} ({_short(value)}), not numbers")
    if isinstance(value, (tuple, list)) and 1 < len(value) <= 4 and all(isinstance(v, np.ndarray) for v in value) \
            and len({v.shape for v in value}) > 1:
        shapes = " and ".join(_shape(v) for v in value)
        raise GradingFailure(
            f"{what} returned a {type(value).__name__} of {len(value)} arrays (shapes {shapes}), not one array: "
            "return only the result (nn.MultiheadAttention, for one, returns (output, weights): take its [0])")
    bad = _not_a_number(value, allow_bool)
    if bad:
        raise GradingFailure(f"{what} returned {bad}, where numbers are expected" + _why_not(bad))
    try:
        arr = np.array(value, copy=True, subok=False)
    except (ValueError, TypeError) as e:
        raise GradingFailure(f"{what} returned a ragged or non-numeric value ({e})") from None
    if arr.dtype.kind not in ("biuf" if allow_bool else "iuf"):
        raise GradingFailure(f"{what} returned values of dtype {arr.dtype} ({_short(value)}), not numbers"
                             + _why_not(_KIND_WORDS.get(arr.dtype.kind, "")))
    return arr


_KIND_WORDS = {"b": "dtype bool", "c": "complex", "U": "str", "S": "bytes", "O": "object"}


def _not_a_number(value, allow_bool, budget=None):
    """Words naming the first part of a (nested) answer that is not a real number (its type, and its
    dtype for an array), or ''. Lists and tuples are walked: np.array([4, True]) would hide the bool."""
    budget = [100_000] if budget is None else budget
    if isinstance(value, (bool, np.bool_)):
        return "" if allow_bool else f"the {'numpy ' if isinstance(value, np.bool_) else ''}bool {value!r}"
    if isinstance(value, (str, bytes)):
        return f"a {type(value).__name__} ({_short(value, 30)})"
    if isinstance(value, (complex, np.complexfloating)):
        return f"the complex number {value!r}"
    if isinstance(value, np.ndarray):
        kind = value.dtype.kind
        if kind in ("c", "U", "S", "O", "V", "M", "m") or (kind == "b" and not allow_bool):
            what = "a 0-d array (or numpy scalar)" if value.ndim == 0 else \
                f"an array (or tensor) of shape {_shape(value)}"
            return f"{what} and dtype {value.dtype} ({_excerpt_any(value)})"
        return ""
    if isinstance(value, (list, tuple)):
        for i, v in enumerate(value):
            budget[0] -= 1
            if budget[0] < 0:
                return ""
            bad = _not_a_number(v, allow_bool, budget)
            if bad:
                return bad + (f" at index {i} of the {type(value).__name__}" if " at index " not in bad else "")
    return ""


def _excerpt_any(a, n=4):
    flat = a.reshape(-1)[:n].tolist()
    return ", ".join(_short(x, 20) for x in flat) + (", ..." if a.size > n else "")


def _why_not(bad):
    """What to do instead, for the kind of value named in `bad`."""
    if "bool" in bad:
        return (": True/False are not numbers here (True is not read as 1). Return the computed values "
                "(floats; ints for a shape or an index), not a comparison or a mask of them")
    if "str" in bad or "bytes" in bad:
        return ": a string is not a number (`'1.0'` is not 1.0). Return the value itself, not its text"
    if "complex" in bad:
        return (": the answers are real numbers; a complex value usually comes from the square root or power "
                "of a negative number")
    if "object" in bad:
        return ": an object array holds Python objects, not numbers; build the array from numbers (a float dtype)"
    return ""


def _short(v, n=80):
    s = repr(v)
    return s if len(s) <= n else s[: n - 3] + "..."


def _excerpt(a, idx=None, n=6, digits=6):
    flat = a.reshape(-1)
    if flat.size == 0:
        return "[]"
    start = 0 if idx is None else max(0, min(idx - n // 2, flat.size - n))
    part = flat[start:start + n]
    body = ", ".join(f"{x:.{digits}g}" if a.dtype.kind == "f" else str(x) for x in part.tolist())
    pre = "..., " if start > 0 else ""
    post = ", ..." if start + n < flat.size else ""
    return f"[{pre}{body}{post}]"


def _shape(a):
    return "(" + ", ".join(str(s) for s in a.shape) + ("," if a.ndim == 1 else "") + ")"


def _matches(got, exp, rtol, atol):
    """Whether got matches exp: two bool arrays exactly; otherwise by numeric value (a bool counts
    as 0 or 1 against a number, never as the truthiness of that number)."""
    if got.shape != exp.shape:
        return False
    if exp.dtype.kind == "b" and got.dtype.kind == "b":
        return bool(np.array_equal(got, exp))
    return bool(_close(got.astype(np.float64), exp.astype(np.float64), rtol, atol).all())


def _close(g, e, rtol, atol):
    """Element by element: within atol + rtol * |e| of a finite e; NaN where e is NaN; an infinite e only by
    itself (|g - inf| <= rtol * inf holds for every finite g, and -inf's distance to inf is no smaller)."""
    with np.errstate(invalid="ignore"):
        near = np.abs(g - e) <= atol + rtol * np.abs(e)
    inf = np.isinf(e)
    return np.where(inf, g == e, near) | (np.isnan(g) & np.isnan(e))


def describe_mismatch(got, exp, rtol, atol):
    """Max abs/rel error with where, share of elements off, excerpts of both."""
    g, e = got.astype(np.float64), exp.astype(np.float64)
    with np.errstate(invalid="ignore"):
        diff = np.abs(g - e)
    bad = ~_close(g, e, rtol, atol)
    n_bad, n = int(bad.sum()), bad.size
    i_abs = int(np.nanargmax(np.where(np.isnan(diff), -1, diff)))
    with np.errstate(divide="ignore", invalid="ignore"):
        rel = np.where(np.abs(e) > 0, diff / np.abs(e), np.where(diff > 0, np.inf, 0.0))
    i_rel = int(np.nanargmax(np.where(np.isnan(rel), -1, rel)))
    ge, gg = e.reshape(-1)[i_abs], g.reshape(-1)[i_abs]
    digits = next((d for d in range(6, 18) if f"{ge:.{d}g}" != f"{gg:.{d}g}"), 6)  # enough to show the gap
    where_abs = np.unravel_index(i_abs, e.shape) if e.ndim else ()
    where_rel = np.unravel_index(i_rel, e.shape) if e.ndim else ()
    lines = [
        f"{n_bad} of {n} values differ ({100.0 * n_bad / max(n, 1):.1f}%), tolerance rtol={rtol:g}, atol={atol:g}",
        f"greatest absolute difference {diff.reshape(-1)[i_abs]:.6g} at index {tuple(int(x) for x in where_abs)}",
        f"greatest relative difference {rel.reshape(-1)[i_rel]:.6g} at index {tuple(int(x) for x in where_rel)}",
        f"expected {_excerpt(e, i_abs, digits=digits)}",
        f"     got {_excerpt(g, i_abs, digits=digits)}",
    ]
    return "\n".join(lines)


def _hint_text(got, hints, rtol, atol, expected=None):
    """The hints whose mistaken answer `got` matches (two at most, when this input cannot tell them apart);
    a mistaken answer that also matches the expected one (this input cannot tell the mistake from the
    right answer: T = 1, say) names nothing."""
    rtol, atol = max(rtol, 1e-6), max(atol, 1e-6)
    named = []
    for text, mistaken in hints or ():
        if mistaken is None:
            continue
        try:
            m = as_plain_array(mistaken, allow_bool=True)
        except GradingFailure:
            continue
        if expected is not None and m.shape == expected.shape and _matches(expected, m, rtol, atol):
            continue
        if text not in named and _matches(got, m, rtol, atol):
            named.append(text)
    if len(named) > 1:
        return f"\nLikely mistake: {named[0]}; or {named[1]} (this input cannot tell these apart)."
    return f"\nLikely mistake: {named[0]}." if named else ""


def compare(got, expected, *, what="the result", dtype=None, rtol=None, atol=None, hints=(),
            overrides=None, check_dtype=None):
    """Raise GradingFailure unless `got` matches `expected` within the tolerance of `dtype`."""
    exp = np.array(expected, copy=True, subok=False)
    # True/False are an answer only where the expected answer is True/False itself (a mask)
    got_arr = as_plain_array(got, what, allow_bool=exp.dtype.kind == "b")
    if dtype is None:
        dtype = exp.dtype.name if exp.dtype.kind == "f" else "float64"
    judged = _judged_dtype(str(dtype).replace("torch.", ""), got_arr)
    rtol, atol = tolerance(judged, overrides, rtol, atol)
    if got_arr.shape != exp.shape:
        if (isinstance(got, (tuple, list)) and 1 < len(got) <= 4 and all(isinstance(v, np.ndarray) for v in got)
                and {v.shape for v in got} == {exp.shape}):
            # (out, weights) of the same shape stack into one array with an axis more: say what it was
            raise GradingFailure(
                f"{what} returned a {type(got).__name__} of {len(got)} arrays (each of shape {_shape(exp)}), not "
                "one array: return only the result (nn.MultiheadAttention, for one, returns (output, weights): "
                "take its [0])")
        msg = f"{what}: expected shape {_shape(exp)}, got {_shape(got_arr)}"
        if got_arr.size == exp.size and got_arr.size:
            msg += " (same number of values: a reshape, transpose or missing/extra axis?)"
        raise GradingFailure(msg + _hint_text(got_arr, hints, rtol, atol, exp))
    if got_arr.dtype.kind == "f":
        g_bad = ~np.isfinite(got_arr)
        e_bad = ~np.isfinite(exp.astype(np.float64)) if exp.dtype.kind == "f" else np.zeros(exp.shape, bool)
        new = g_bad & ~e_bad
        if new.any():
            first = tuple(int(x) for x in np.argwhere(new)[0]) if new.ndim else ()
            kind = "NaN" if np.isnan(got_arr[new]).any() else "Inf"
            hint = _hint_text(got_arr, hints, rtol, atol, exp) or (
                "\nNaN or Inf usually comes from a softmax of large scores (subtract each row's maximum before "
                "exp), a row whose scores are all masked to -inf, or a division by zero.")
            raise GradingFailure(
                f"{what}: contains {kind} at {int(new.sum())} of {new.size} positions (first at {first}) "
                f"where the expected values are finite" + hint)
    if check_dtype and got_arr.dtype.name != str(check_dtype):
        raise GradingFailure(f"{what}: expected dtype {check_dtype}, got {got_arr.dtype.name}")
    if exp.dtype.kind == "b":
        if got_arr.dtype.kind != "b" and not np.isin(got_arr, (0, 1)).all():
            raise GradingFailure(f"{what}: expected True/False values, got {_excerpt(got_arr)}")
        if not np.array_equal(got_arr.astype(bool), exp):
            n_bad = int((got_arr.astype(bool) != exp).sum())
            raise GradingFailure(
                f"{what}: {n_bad} of {exp.size} entries differ\nexpected {_excerpt(exp.astype(int))}\n"
                f"     got {_excerpt(got_arr.astype(int))}" + _hint_text(got_arr, hints, rtol, atol, exp))
        return
    if not _matches(got_arr, exp, rtol, atol) and exp.dtype.kind in "iu" and _whole_numbers(got_arr):
        # a shape, a count or an index: told exactly, not in a float tolerance's words
        raise GradingFailure(f"{what}: " + _exact_mismatch(got_arr, exp) + _hint_text(got_arr, hints, rtol, atol, exp))
    if not _matches(got_arr, exp, rtol, atol):
        note = ""
        if judged != dtype and got_arr.dtype.name == dtype:
            note = (f"\n(your values are all {judged} numbers, so they were judged with {judged} tolerances; "
                    f"the inputs were {dtype})")
        elif judged != dtype:
            note = (f"\n(your answer came back as {got_arr.dtype.name}, so it was judged with {judged} "
                    f"tolerances; the inputs were {dtype})")
        elif judged == "float64" and _matches(got_arr, exp, *tolerance("float32")):
            note = ("\nYour values agree with the expected ones to float32 precision only: was this float64 input "
                    "computed in float32 somewhere (np.float32, a torch tensor made without dtype=, "
                    ".float())? Keep the input's dtype all the way through.")
        raise GradingFailure(f"{what}: values differ\n" + describe_mismatch(got_arr, exp, rtol, atol)
                             + note + _hint_text(got_arr, hints, rtol, atol, exp))


def _whole_numbers(a):
    """An integer array, or a float one holding whole numbers only (a shape returned as floats)?"""
    if a.dtype.kind in "iu":
        return True
    return (a.dtype.kind == "f" and bool(a.size) and bool(np.isfinite(a).all())
            and bool(np.all(np.abs(a) < 2.0 ** 53)) and bool(np.array_equal(a, np.round(a))))


def _exact_mismatch(got, exp):
    """How an integer answer (a shape, a count, an index) differs from the expected one, exactly."""
    g, e = got.astype(np.int64), exp.astype(np.int64)
    if e.ndim == 1 and e.size <= 8:
        return f"expected {tuple(int(v) for v in e)}, got {tuple(int(v) for v in g)}"
    if e.ndim == 0:
        return f"expected {int(e)}, got {int(g)}"
    n_bad = int((g != e).sum())
    return f"{n_bad} of {e.size} entries differ\nexpected {_excerpt(e)}\n     got {_excerpt(g)}"


def _judged_dtype(dtype, got_arr):
    """The dtype whose tolerances judge an answer: a float64 test's answer that came back in a lower
    precision (a float32 array, say) is judged by its values with float32 tolerances, not failed
    for rounding that its own precision makes; whether the dtype itself is right is a separate check.
    So is one whose values are all float32 numbers, whatever carried them (`.tolist()` of a float32
    tensor, `.astype(np.float64)` at the end): HOMEWORK.md judges a numpy answer by its values, not
    by the container it came back in."""
    if dtype == "float64" and got_arr.dtype.kind == "f" and (got_arr.dtype.itemsize < 8 or _float32_values(got_arr)):
        return "float32"
    return dtype


def _float32_values(a):
    """Whether every finite value of a float64 array is exactly a float32 number (float32 maths, returned
    in another container); a float64 computation gives that only for round values, which the float32
    tolerance judges the same."""
    v = a[np.isfinite(a)]
    with np.errstate(over="ignore"):
        return (bool(v.size) and bool(np.array_equal(v.astype(np.float32).astype(np.float64), v))
                # all round values (1, 0.5, 0): nothing says float32, and a float64 answer may be right
                and not np.array_equal(v.astype(np.float16).astype(np.float64), v))


def lowp_blind(golden, ref_lowp, hints, *, dtype="float16", k=5.0):
    """The hints whose mistaken answer (float64, computed from the same rounded input) `compare_lowp` would
    pass as right: in this precision the input cannot tell that mistake from the right answer (an eps
    placed on the std, which moves a layer norm by ~1e-5, passes in bfloat16). Their texts, in order."""
    gold = np.array(golden, dtype=np.float64)
    ref = np.array(ref_lowp, dtype=np.float64)
    _, atol = tolerance(dtype)
    allowed = max(atol, k * (float(np.nanmax(np.abs(ref - gold))) if gold.size else 0.0))
    blind = []
    for text, mistaken in hints or ():
        if mistaken is None:
            continue
        try:
            m = np.array(mistaken, dtype=np.float64)
        except (TypeError, ValueError):
            continue
        if m.shape == gold.shape and np.isfinite(m).all() and (not m.size or np.max(np.abs(m - gold)) <= allowed):
            blind.append(text)
    return blind


def compare_lowp(got, golden, ref_lowp, *, what="the result", dtype="float16", k=5.0, hints=()):
    """PyTorch's rule for low-precision attention: |got - golden| <= max(atol, k * |ref_lowp - golden|max)."""
    got_arr = as_plain_array(got, what).astype(np.float64)
    gold = np.array(golden, dtype=np.float64)
    ref = np.array(ref_lowp, dtype=np.float64)
    if got_arr.shape != gold.shape:
        raise GradingFailure(f"{what}: expected shape {_shape(gold)}, got {_shape(got_arr)}")
    _, atol = tolerance(dtype)
    ref_err = float(np.nanmax(np.abs(ref - gold))) if gold.size else 0.0
    allowed = max(atol, k * ref_err)
    if not np.isfinite(got_arr).all():
        raise GradingFailure(f"{what}: contains NaN or Inf in {dtype}" + _hint_text(got_arr, hints, 1e-2, atol))
    err = float(np.max(np.abs(got_arr - gold))) if gold.size else 0.0
    if not math.isfinite(err) or err > allowed:
        raise GradingFailure(
            f"{what}: in {dtype} your error against a float64 answer is {err:.3g}, more than {k:g} x the "
            f"reference's own {dtype} error ({ref_err:.3g}); allowed {allowed:.3g}\n"
            + describe_mismatch(got_arr, gold, 0.0, allowed) + _hint_text(got_arr, hints, 1e-2, allowed, gold))
