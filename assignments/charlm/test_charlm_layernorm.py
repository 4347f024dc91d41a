"""Grading tests of `charlm`, question layernorm (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._by_hand import *  # noqa: F401,F403 - written by hand: the judge and the names it looks for
from ._in_place import *  # noqa: F401,F403 - the arguments-unchanged check
from ._layernorm import *  # noqa: F401,F403 - layer norm's checks, inputs and hints


@pytest.mark.question("layernorm")
@pytest.mark.weight(10)
def test_layer_norm_by_hand(sub, ref, close, rng):
    # (B, T, d) as in a transformer: a norm over dim=1 is right on a 2-D input only
    x = _tensor(_ln_input(rng, (2, 3, 16)), "float32")  # small spreads: eps and n-1 mistakes show
    _check_by_hand(sub, close, ref.layer_norm(x), "layer_norm", x, hints=_ln_hints(x, 1e-5, default=True))


@pytest.mark.question("layernorm")
def test_layer_norm(sub, ref, close, rng, device, float_dtype):
    _check_layer_norm(sub, ref, close, rng, (2, 4, 5), None, device, float_dtype)  # (B, T, d)


@pytest.mark.question("layernorm")
@pytest.mark.parametrize("shape,eps", [((3, 6), 1e-2), ((2, 3, 4), 1e-5)])  # 1e-2: an ignored eps shows
def test_layer_norm_eps_and_3d(sub, ref, close, rng, shape, eps):
    _check_layer_norm(sub, ref, close, rng, shape, eps, "cpu", "float64")


@pytest.mark.question("layernorm")
@pytest.mark.parametrize("shape,eps,dtype", [((1, 4), 1e-3, "float64"), ((2, 2, 3, 6), 1e-4, "float32"),
                                             ((5,), 1e-5, "float64")])
def test_layer_norm_more_shapes(sub, ref, close, rng, device, shape, eps, dtype):
    _check_layer_norm(sub, ref, close, rng, shape, eps, device, dtype)


@pytest.mark.question("layernorm")
@pytest.mark.weight(2)
def test_layer_norm_large_mean(sub, ref, close, rng):
    # the twin of masked_attention's large scores: rows far from zero with a small spread (a residual stream
    # drifts so), where a variance taken in one pass, E[x^2] - E[x]^2, cancels in float32
    _check_layer_norm_large_mean(sub, ref, close, rng, (2, 4, 16))


@pytest.mark.question("layernorm")
@pytest.mark.weight(3)  # in a model, x is the residual stream: a norm that changes it breaks the residual
def test_layer_norm_leaves_its_argument_unchanged(sub, ref, close, rng):
    x = _tensor(_ln_input(rng, (2, 3, 8)), "float64")
    _check_arguments_unchanged_in_both_dtypes(sub, close, "layer_norm", (x,), ("x",), ref.layer_norm(x, 1e-5),
                               "layer_norm(x) on a (2, 3, 8) float64 input")


@pytest.mark.question("layernorm")
@pytest.mark.weight(2)
def test_layer_norm_runs_on_another_device(sub, close, rng):
    # a model's activations live on the GPU: a constant made on the CPU (torch.tensor([eps])) or a numpy round
    # trip (.cpu().numpy()) fails there, even where the grader has no GPU (the meta device stands in). Only a
    # layer_norm that is right (on the CPU) earns here: a wrong one earns nothing, as in the test above
    x = _tensor(_ln_input(rng, (2, 5, 8)), "float32")
    try:
        close(sub.call("layer_norm", x), _np64(A.torch_layer_norm(x.to(torch.float64), 1e-5)), dtype="float32",
              what="layer_norm(x) with x (2, 5, 8) float32 on cpu (default eps)")
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        pytest.skip("judged by the other tests, not here: the answer on the CPU is not right (a wrong answer "
                    "earns nothing here)")
    shape = check_call_on_another_device(sub, "layer_norm", [(2, 5, 8)], "layer_norm(x)")
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, 5, 8]:
        _fail(f"layer_norm(x) on another device returned shape {_shape(shape)}; expected (2, 5, 8)")
