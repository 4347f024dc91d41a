"""Arguments changed in place (trusted side): test_masked_attention_leaves_its_arguments_unchanged and
test_layer_norm_leaves_its_argument_unchanged share `_check_arguments_unchanged`.

What it is for: a function that writes into its arguments (`x -= mean`, `Q /= math.sqrt(d_k)`) changes the
caller's tensor, the residual stream of a model, behind its back. sub.call_changes says which arguments came
back changed; the worker's trace names the in-place operations used.

What it is not: a place that runs student code (everything goes through `sub`).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers

# arguments changed in place -----------------------------------------------


# torch's names for the in-place forms of the operations (the trace of sub.torch_calls), as a student writes them
IN_PLACE_OPS = {"__iadd__": "`x += ...`", "__isub__": "`x -= ...`", "__imul__": "`x *= ...`",
                "__itruediv__": "`x /= ...`", "__idiv__": "`x /= ...`", "__ipow__": "`x **= ...`",
                "__setitem__": "`x[...] = ...`"}


def _tensor_changes_seen(sub):
    """Can sub.call_changes tell a torch argument changed in place? It compares the copies of the arguments
    it keeps on the trusted side with what the worker hands back after the call; where it keeps none for a
    tensor (only numpy arrays), every tensor argument would look unchanged, and the test cannot be made."""
    try:
        kept = sub.before("call_changes", [torch.zeros(2)]).get("kept")
    except Exception:  # noqa: BLE001 - a handle without that hook: the check cannot be made
        return False
    return isinstance(kept, list) and len(kept) == 1 and kept[0] is not None


def _check_arguments_unchanged_in_both_dtypes(sub, close, name, args, params, expected, what):
    """`_check_arguments_unchanged` with the float64 tensors `args`, then with them in float32 (what a model
    passes): `x.to(torch.float64)` or `.double()` copies a float32 tensor but hands a float64 one back as it is,
    and the reverse for float32, so a function may change only one dtype's arguments in place."""
    for dtype in ("float64", "float32"):
        cast = tuple(a.to(getattr(torch, dtype)) if isinstance(a, torch.Tensor) and a.is_floating_point() else a
                     for a in args)
        _check_arguments_unchanged(sub, close, name, cast, params, expected, what.replace("float64", dtype),
                                   dtype=None if dtype == "float64" else dtype)


def _check_arguments_unchanged(sub, close, name, args, params, expected, what, dtype=None):
    """Call `name(*args)` (torch tensors) and fail where it changed one of its arguments in place: the caller's
    tensor (the residual stream a model passes to layer_norm, the queries it passes to attention) is then
    changed behind its back, and calling twice gives two answers. A call that answers wrongly earns nothing here
    (its own tests say why): the test is then skipped; so is one that raises, where the function fails on other
    inputs of the same kind too (_failed_here)."""
    if not _tensor_changes_seen(sub):
        pytest.skip("not checked: this grader cannot see a torch tensor argument after the call (it compares "
                    "numpy arguments only), so a change made in place cannot be told from none")
    try:
        value, which = sub.call_changes(name, *args)
    except GradingFailure as e:
        _failed_here(sub, name, args, e, what)
    if which:
        changed_ = ", ".join(f"`{params[i]}`" for i in which)
        ops = []
        try:
            _, calls = sub.torch_calls(name, *args)
            ops = sorted({IN_PLACE_OPS.get(c) or f"`.{c}(...)`" for c in calls
                          if c in IN_PLACE_OPS or (c.endswith("_") and not c.startswith("_") and c != "requires_grad_")})
        except GradingFailure:
            pass
        used = f" (it uses {', '.join(ops)})" if ops else ""
        _fail(f"{what} changed its argument{'s' if len(which) > 1 else ''} {changed_} in place{used}: the caller's "
              "tensor now holds other values, so a model that passes its activations in sees them changed, and "
              "calling it twice on the same tensor gives two answers.\nLikely mistake: an in-place operation on "
              "an argument: an augmented assignment (`x -= mean`, `x /= std`, `Q /= math.sqrt(d_k)`), a method "
              "ending in `_` (`x.sub_(...)`, `Q.div_(...)`, `masked_fill_`) or `x[...] = ...` writes into the "
              "caller's tensor. Make a new tensor instead: `x = x - mean`, `Q = Q / math.sqrt(d_k)`.")
    try:
        close(value, _np64(expected), what=what, **({"dtype": dtype} if dtype else {}))
    except GradingFailure:
        pytest.skip("judged by the other tests, not here: the answer is not right (a wrong answer earns nothing "
                    "here)")


def _failed_here(sub, name, args, e, what):
    """`name(*args)` failed (`e`) while the grader watched its arguments: skipped where the function also fails on
    other inputs of the same kind (each argument twice over along its first axis), which its own tests judge;
    failed where it fails only on this test's inputs (a failure only here would turn the test's failure into a
    skip)."""
    try:
        more = [torch.cat([a, a]) if isinstance(a, torch.Tensor) and a.dim() >= 2 else a for a in args]
        sub.call(name, *more)
    except GradingFailure as other:
        pytest.skip(f"judged by the other tests, not here: {other.message.splitlines()[0][:200]}")
    said = (e.message.splitlines()[0][:300].rstrip(":") if e.message else "") or type(e).__name__
    _fail(f"{what} failed: {said}. The same function runs on these arguments stacked twice along their first "
          f"axis, so it fails only on this test's inputs, where the grader checks whether it changes them in place."
          "\nLikely mistake: the function treats some inputs apart (a check on their shape, dtype or values, or on "
          "what calls it): it must compute the same thing for every input.")


__all__ = [n for n in dir() if not n.startswith("__")]
