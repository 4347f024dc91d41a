"""Layer norm's checks (trusted side): test_charlm_layernorm.py's values, hints and the large-mean test.

What it is for: `_check_layer_norm` (a layer_norm's values against the reference on rows whose eps and n-1
mistakes show, with the hints that name them) and `_check_layer_norm_large_mean` (rows far from zero, where a
one-pass variance loses its digits), with their inputs and hint texts.

What it is not: a place that runs student code (everything goes through `sub`).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers

# layer norm -------------------------------------------------------------


def _ln_input(rng, shape):
    """Rows with a small spread (std 0.02-0.08) and a small offset: eps and n-1 both show beyond tolerance."""
    rows = tuple(shape[:-1]) + (1,)
    return rng.uniform(-0.1, 0.1, rows) + rng.uniform(0.02, 0.08, rows) * rng.standard_normal(shape)


LN_DIM1_HINT = ("normalized over a fixed axis (dim=1), not the last one: x.mean(1) is the feature axis of a "
                "(T, d) input only; a transformer's activations are (B, T, d), where dim=1 is the token axis. "
                "Use dim=-1 (x.mean(-1, keepdim=True)), the features whatever the leading axes")


def _ln_hints(x, eps, default=False):
    """The known layer-norm mistakes on `x`; with `default`, the call used the default eps, so a
    default other than the handout's 1e-5 is a mistake too."""
    m = A.ln_mistakes(x, eps, default)
    hints = [
        ("unbiased variance in layer norm (divide by n, not n - 1: unbiased=False / correction=0)", m["unbiased"]),
        ("eps added to the std instead of inside the square root: use sqrt(var + eps)", m["eps_on_std"]),
        ("unbiased std and eps added to the std", m["unbiased_eps_on_std"]),
        ("eps added after the division, to the normalized values ((x - mean) / sqrt(var) + eps: the operator "
         "precedence puts + eps outside): it belongs inside the square root, (x - mean) / sqrt(var + eps)",
         m["eps_after_division"]),
        ("no eps at all", m["no_eps"]),
    ]
    if m.get("whole_tensor") is not None:
        hints.append(("the mean and variance are taken over the whole tensor (x.mean() with no dim): each row is "
                      "normalized on its own, over its last axis: x.mean(-1, keepdim=True) and "
                      "x.var(-1, unbiased=False, keepdim=True)", m["whole_tensor"]))
    if m["first_axis"] is not None:
        hints.append(("normalized over the first axis instead of the last one", m["first_axis"]))
    if x.dim() >= 3 and x.shape[1] > 1:  # dim=1 is the last axis of a (T, d) input only
        over_dim1 = A.torch_layer_norm(x.detach().to("cpu", torch.float64).transpose(1, -1).contiguous(), eps)
        hints.append((LN_DIM1_HINT, _np64(over_dim1.transpose(1, -1))))
    if default:
        hints += [(f"the default eps is {e:g}: the handout's signature is layer_norm(x, eps=1e-5)", v)
                  for e, v in m["eps"].items()]
    else:
        hints += [(f"the eps argument is ignored: the function used {e:g} when called with eps={eps:g} "
                   "(use the eps it is given, inside the square root)", v) for e, v in m["eps"].items()]
    return hints


def _check_layer_norm(sub, ref, close, rng, shape, eps, device, dtype):
    x = _tensor(_ln_input(rng, shape), dtype, device)
    if eps is None:
        eps_v, what = 1e-5, f"layer_norm(x) with x {_shape(shape)} {dtype} on {device} (default eps)"
    else:
        eps_v, what = eps, f"layer_norm(x, {eps:g}) with x {_shape(shape)} {dtype} on {device}"
    try:
        got, info = sub.call_info("layer_norm", x) if eps is None else sub.call_info("layer_norm", x, eps)
    except StudentError as e:
        if not re.search(r"must match the size of tensor b|operands could not be broadcast", e.message):
            raise
        raise e.retold(f"{e.message}\nLikely mistake: x.mean(-1) and x.var(-1) drop the last axis, so they do "
                       "not line up with x: keep it with keepdim=True (x.mean(-1, keepdim=True)).") from None
    golden = A.torch_layer_norm(x.to("cpu", torch.float64), eps_v)
    expected = ref.layer_norm(x, eps_v) if dtype in LOWP or eps is None else A.torch_layer_norm(x, eps_v)
    def in_float64():
        x64 = x.to(torch.float64)
        again = sub.call("layer_norm", x64) if eps is None else sub.call("layer_norm", x64, eps)
        close(again, _np64(golden), dtype="float64", what=what.replace(dtype, "float64"))

    _check_values(close, got, expected=expected, golden=golden, what=what, dtype=dtype,
                  hints=_ln_hints(x, eps_v, default=eps is None), name="layer_norm", recheck=in_float64)
    _check_dtype(info, dtype, what)


LN_ONE_PASS_HINT = ("the variance is computed in one pass, E[x^2] - E[x]^2 (`(x * x).mean(-1) - mean ** 2`): on rows "
                    "far from zero with a small spread the two terms are nearly equal, and their difference keeps "
                    "few of float32's digits (a row of 1000 +- 1 keeps about one). Average the squared deviations "
                    "instead (two passes): `((x - mean) ** 2).mean(-1, keepdim=True)` or "
                    "`x.var(-1, unbiased=False, keepdim=True)`")
LN_LOSES_DIGITS_HINT = ("layer_norm is right on the same rows in float64 but not in float32: it loses digits on rows "
                        "far from zero with a small spread, as the one-pass variance E[x^2] - E[x]^2 does. Average "
                        "the squared deviations instead: `((x - mean) ** 2).mean(-1, keepdim=True)` or "
                        "`x.var(-1, unbiased=False, keepdim=True)`")


# float32 loses up to ~3e-4 on rows far from zero (_ln_large_mean_input) in any two-pass layer norm, F.layer_norm's
# included (2e-4 at most over 2000 draws, Welford's too); a one-pass variance loses 1.5e-2 or more
LN_LARGE_MEAN_TOL = {"rtol": 1.3e-6, "atol": 2e-3}


def _ln_large_mean_input(rng, shape):
    """Rows far from zero (mean +-500..1000) with a spread of 1..2 (each row's std exactly so): the variance of
    x - mean keeps its digits in float32, E[x^2] - E[x]^2 keeps one or two of them (a row's variance is
    1e-6 to 2e-5 of E[x^2] there)."""
    rows = tuple(shape[:-1]) + (1,)
    z = rng.standard_normal(shape)
    z = (z - z.mean(-1, keepdims=True)) / z.std(-1, keepdims=True)
    return rng.choice([-1.0, 1.0], rows) * rng.uniform(500, 1000, rows) + rng.uniform(1, 2, rows) * z


def _check_layer_norm_large_mean(sub, ref, close, rng, shape):
    """layer_norm on float32 rows far from zero with a small spread (_ln_large_mean_input), against the exact
    answer (float64 from the same float32 input) within LN_LARGE_MEAN_TOL.

    Asked in one round trip with it: the same rows in float64 (an answer wrong in float32 only, for a reason
    no hint names, is told that it loses digits) and rows of a small spread in float32 (_ln_input, at the usual
    tolerance): beside a variance of 1 to 4, eps changes nothing a tolerance sees, so a pass earns only for a
    layer_norm also right where eps, its place and the variance's divisor show (edge_gate)."""
    x = _tensor(_ln_large_mean_input(rng, shape), "float32")
    x64 = x.to(torch.float64)
    small = _tensor(_ln_input(rng, (2, 3, 16)), "float32")
    golden, small_expected = _np64(A.torch_layer_norm(x64, 1e-5)), _np64(ref.layer_norm(small))
    hints = [(LN_ONE_PASS_HINT, A.ln_one_pass(x, 1e-5))] + _ln_hints(x, 1e-5, default=True)
    small_hints = _ln_hints(small, 1e-5, default=True)
    what = (f"layer_norm(x) with x {_shape(shape)} float32 on cpu (default eps), rows far from zero "
            "(mean +-500..1000, std 1..2)")
    with sub.together() as t:
        asks = t.call("layer_norm", x), t.call("layer_norm", x64), t.call("layer_norm", small)
    got = asks[0].get()
    try:
        close(got, golden, dtype="float32", what=what, hints=hints, **LN_LARGE_MEAN_TOL)
    except GradingFailure as e:
        if e.hinted:
            raise
        try:
            close(asks[1].get(), golden, dtype="float64", what="")  # what="": not logged as an answer
        except GradingFailure:
            raise e from None
        raise e.retold(f"{e.message}\nLikely mistake: {LN_LOSES_DIGITS_HINT}.") from None
    only_if_right_elsewhere(
        "layer_norm", "rows far from zero, whose variance of 1 to 4 hides eps and where it is added",
        "rows of a small spread (2, 3, 16) in float32", lambda: close(
            asks[2].get(), small_expected, dtype="float32", hints=small_hints,
            what="layer_norm(x) with x (2, 3, 16) float32 on cpu (default eps), rows of a small spread"))


# every name, underscored helpers included: test_charlm_layernorm.py imports them with `*`
__all__ = [n for n in dir() if not n.startswith("__")]
