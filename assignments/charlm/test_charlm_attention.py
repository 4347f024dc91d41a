"""Grading tests of `charlm`, question attention (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._by_hand import *  # noqa: F401,F403 - written by hand: the judge and the names it looks for
from ._in_place import *  # noqa: F401,F403 - the arguments-unchanged check
from ._gradients import *  # noqa: F401,F403 - the gradient test's message
from checker.errors import BadReturn
from checker.running.modules import function_gradient_check


def _check_mask(sub, close, T):
    m = A.masks(T)
    want = m["want"]
    got, info = sub.call_info("causal_mask", T)
    what = f"causal_mask({T})"
    arr = np.asarray(got) if isinstance(got, np.ndarray) else None
    if arr is not None and arr.dtype.kind == "f" and np.isneginf(arr).any():
        right = arr.shape == m["additive"].shape and np.array_equal(arr, m["additive"])
        _fail(f"{what}: returned a float mask with -inf in it, an additive mask (added to the scores), "
              + ("on the right positions" if right else f"not the expected one ({np.isneginf(arr).sum()} -inf "
                                                         f"entries, {int(want.sum())} positions to hide)")
              + ". The handout asks for a bool mask, True where attention is NOT allowed (j > i), as "
              "masked_fill takes it: `torch.ones(T, T, dtype=torch.bool).triu(1)`")
    close(got, want, what=what, hints=[
        (DIAGONAL_MASK_HINT, m["diagonal"]), (NEXT_TOKEN_HINT, m["next_token"]),
        ("your mask lets position i see j > i (True must be on the strict upper triangle, key j > query i)", want.T),
        ("True marks the allowed positions (key j <= query i) in your mask, the opposite of the handout's "
         "convention: True must mark the positions NOT allowed (j > i). Even if your own masked_attention "
         "inverts it, code written against the handout (`masked_fill(mask, -inf)`) would hide the past and "
         "let position i see the future", ~want)])
    dt = (info.get("dtypes") or [None])[0]
    if dt != "bool":
        kind = f"a {dt} array or tensor" if dt else "no array or tensor (a nested list?)"
        _fail(f"{what}: the values are right but the mask is {kind}; return a bool tensor "
              "(masked_fill needs one; e.g. `torch.ones(T, T, dtype=torch.bool).triu(1)`)")


@pytest.mark.question("attention")
@pytest.mark.parametrize("T", [1, 2, 5])
def test_causal_mask(sub, close, T):
    _check_mask(sub, close, T)
    if T == 1:  # [[False]]: a mask on either triangle, or off by one, is right here
        only_if_right_elsewhere("causal_mask", "T = 1", "causal_mask(5)", lambda: _check_mask(sub, close, 5))


@pytest.mark.question("attention")
@pytest.mark.parametrize("T", [16])
def test_causal_mask_more_sizes(sub, close, T):
    _check_mask(sub, close, T)


@pytest.mark.question("attention")
@pytest.mark.weight(8)
def test_masked_attention_by_hand(sub, ref, close, rng):
    # d_k = 6 in every public test: at d_k = 4, d_k / 2 (`d_k ** 1/2`, precedence) equals sqrt(d_k)
    Q, K, V = (_tensor(rng.standard_normal((2, 5, 6)), "float32") for _ in range(3))
    try:
        _check_by_hand(sub, close, ref.masked_attention(Q, K, V), "masked_attention", Q, K, V,
                       hints=_attention_hints(Q, K, V))
    except GradingFailure as e:
        hint = None if e.hinted else _random_attention_hint(sub, Q, K, V)
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None


@pytest.mark.question("attention")
def test_masked_attention(sub, ref, close, rng, device, float_dtype):
    _check_attention(sub, ref, close, rng, (6, 6), 4, device, float_dtype)


@pytest.mark.question("attention")
def test_masked_attention_batched(sub, ref, close, rng, device, float_dtype):
    _check_attention(sub, ref, close, rng, (2, 3, 5, 6), 3, device, float_dtype)


@pytest.mark.question("attention")
@pytest.mark.parametrize("q_shape,d_v", [((1, 3), 2), ((7, 8), 2), ((2, 2, 3, 4, 6), 5)])
def test_masked_attention_more_shapes(sub, ref, close, rng, device, q_shape, d_v):
    _check_attention(sub, ref, close, rng, q_shape, d_v, device, "float64")
    if q_shape[-2] == 1:  # one token: no mask, no scaling and any softmax axis give the same answer
        only_if_right_elsewhere("masked_attention", "a single token", "Q, K (7, 8), V (7, 2)",
                                lambda: _check_attention(sub, ref, close, rng, (7, 8), 2, device, "float64"))


@pytest.mark.question("attention")
def test_masked_attention_large_scores(sub, ref, close, rng, device):
    # Q == K: the diagonal scores are in the thousands, so exp() without the max subtracted overflows
    _check_attention(sub, ref, close, rng, (2, 6, 4), 3, device, "float64", scale=40.0, same_qk=True)


@pytest.mark.question("attention")
@pytest.mark.weight(2)
def test_masked_attention_runs_on_another_device(sub):
    # causal_mask(T) makes its mask on the CPU (the handout gives it no device argument): masked_attention
    # must move it to the scores' device, or it fails on every GPU
    shape = check_call_on_another_device(sub, "masked_attention", [(2, 5, 4), (2, 5, 4), (2, 5, 3)],
                                         "masked_attention(Q, K, V)")
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, 5, 3]:
        _fail(f"masked_attention(Q, K, V) on another device returned shape {_shape(shape)}; expected (2, 5, 3)")


@pytest.mark.question("attention")
@pytest.mark.weight(3)  # a model's queries, keys and values are its own tensors: attention must not change them
def test_masked_attention_leaves_its_arguments_unchanged(sub, ref, close, rng):
    Q, K, V = (_tensor(rng.standard_normal(s), "float64") for s in ((2, 5, 4), (2, 5, 4), (2, 5, 3)))
    _check_arguments_unchanged_in_both_dtypes(sub, close, "masked_attention", (Q, K, V), ("Q", "K", "V"),
                               ref.masked_attention(Q, K, V), "masked_attention(Q, K, V) on (2, 5, 4) float64 inputs")


@pytest.mark.question("attention")
@pytest.mark.weight(3)  # a model trains through masked_attention: detached weights leave Q and K untrained
def test_masked_attention_gradient_follows_the_output(sub, rng):
    # The values tests see the forward only; `weights.detach() @ V` answers the same and gives Q and K no gradient.
    # autograd's slope of loss = sum(output * W) along two random directions of each of Q, K and V (float64) must
    # agree with central finite differences of the function's own outputs (checker.running.modules).
    Q, K, V = (_tensor(rng.standard_normal(s), "float64") for s in ((2, 5, 4), (2, 5, 4), (2, 5, 3)))
    weight = _tensor(rng.standard_normal((2, 5, 3)), "float64")
    what = "masked_attention(Q, K, V) with Q, K (2, 5, 4), V (2, 5, 3), float64"
    try:
        check = function_gradient_check(sub, "masked_attention", [Q, K, V], weight, ["Q", "K", "V"])
    except BadReturn as e:
        pytest.skip(f"judged by the values tests, not here: {e.message.splitlines()[0][:200]}")
    except GradingFailure as e:
        if "returned shape" in e.message or "did not return a tensor" in e.message:
            pytest.skip(f"judged by the values tests, not here: {e.message.splitlines()[0][:200]}")
        raise
    text = gradient_failure_text(check, what, kind="inputs", output="outputs", grad_of=lambda n: f"{n}.grad")
    if text:
        _fail(text)
