"""Words for outputs of the wrong kind, judged on the trusted side with stand-in module handles (the examples
mhsa_returns_output_and_weights, logits_for_every_token (vit) and logits_batch_vocab_time (charlm) grade them end to
end):

  * a gradient request computes loss = sum(output * W), W of the output's expected shape, in the worker: on an output
    of another shape that product, the grader's own operation, raises ("The size of tensor a (9) must match the size
    of tensor b (2)"); the student is told the output's shape, as every other test tells it, never that their code
    raised (vit: check_in_graph, check_gradient_follows; charlm: the model `_new` makes);
  * a forward that returns (output, weights) of one shape (as many tokens as features) is told it returned a tuple,
    as where the shapes differ, not "expected shape (2, 6, 6), got (2, 2, 6, 6)" (vit: check_shape).
"""
import numpy as np
import pytest
import torch

V = pytest.importorskip("assignments.vit._common")
L = pytest.importorskip("assignments.charlm._common")
from checker.errors import GradingFailure, StudentError, StudentTimeout  # noqa: E402

PRODUCT = ("VisionTransformer forward + backward (for the gradients) raised RuntimeError: The size of tensor a (9) "
           "must match the size of tensor b (2) at non-singleton dimension 1")


class _Result:
    def __init__(self, out):
        self.outputs, self.dtypes = [out], [str(getattr(out, "dtype", ""))]


class _Module:
    """A stand-in for a module handle whose gradient requests raise `failure` and whose forward answers `out`."""

    def __init__(self, out, failure, cls="VisionTransformer"):
        self.out, self.failure, self.cls, self.sizes = out, failure, cls, {}
        self.params = [{"name": "w", "shape": [2], "requires_grad": True}]
        self.sub = None

    def grads(self, x, weight, seed=0, **kw):
        raise self.failure

    def gradient_check(self, x, weight, seed=0, directions=2):
        raise self.failure

    def forward(self, inputs, seed=0):
        if isinstance(self.out, Exception):
            raise self.out
        return _Result(self.out)


def _vit_failure(out, failure=None, gradient_check=False):
    m = _Module(out, failure or StudentError(PRODUCT))
    x, weight = torch.zeros((2, 3, 8, 8)), torch.zeros((2, 10))
    with pytest.raises(GradingFailure) as e:
        if gradient_check:
            V.check_gradient_follows(lambda dtype: m, x, weight, 0, "VisionTransformer(...)")
        else:
            V.check_in_graph(m, x, weight, "VisionTransformer(...)")
    return e.value


@pytest.mark.parametrize("gradient_check", [False, True])
def test_vit_gradient_requests_on_an_output_of_another_shape_say_the_shape(gradient_check):
    e = _vit_failure(np.zeros((2, 5, 10), np.float32), gradient_check=gradient_check)
    assert e.message == "VisionTransformer(...) output: expected shape (2, 10), got (2, 5, 10)"
    assert not isinstance(e, StudentError)


@pytest.mark.parametrize("gradient_check", [False, True])
def test_vit_gradient_requests_keep_the_students_error_where_the_shape_is_right(gradient_check):
    e = _vit_failure(np.zeros((2, 10), np.float32), StudentError("VisionTransformer raised ValueError: mine"),
                     gradient_check=gradient_check)
    assert isinstance(e, StudentError) and "raised ValueError: mine" in e.message
    e = _vit_failure(StudentError("forward raised too"), gradient_check=gradient_check)  # no shape to say
    assert isinstance(e, StudentError) and e.message == PRODUCT
    e = _vit_failure(np.zeros((2, 5, 10), np.float32), StudentTimeout("took too long"), gradient_check=gradient_check)
    assert isinstance(e, StudentTimeout)


def test_charlm_gradient_requests_on_logits_of_another_shape_say_the_shape():
    cfg = (7, 5, 6, 2, 1)
    failure = StudentError(PRODUCT.replace("VisionTransformer", "CharTransformer"))
    made = _Module(np.zeros((2, 7, 5), np.float32), failure, cls="CharTransformer")

    class _Sub:
        def new(self, cls, *args, **kwargs):
            return made

    m = L._new(_Sub(), cfg, seed=0, dtype="float64")
    idx = torch.zeros((2, 5), dtype=torch.long)
    for ask in (lambda: m.gradient_check(idx, torch.zeros((2, 5, 7)), seed=0),
                lambda: m.grads(idx, torch.zeros((2, 5, 7)), seed=0)):
        with pytest.raises(GradingFailure) as e:
            ask()
        assert not isinstance(e.value, StudentError)
        assert "expected logits of shape (2, 5, 7), got (2, 7, 5)" in e.value.message
    made.out = np.zeros((2, 5, 7), np.float32)  # the right shape: the failure stands as it was
    with pytest.raises(StudentError):
        m.gradient_check(idx, torch.zeros((2, 5, 7)), seed=0)


def test_a_tuple_of_arrays_of_one_shape_is_named_as_a_tuple():
    out, weights = np.zeros((2, 6, 6), np.float32), np.ones((2, 6, 6), np.float32)
    with pytest.raises(GradingFailure) as e:
        V.check_shape((out, weights), (2, 6, 6), "MultiHeadSelfAttention(6, 1) on input of shape (2, 6, 6)")
    assert "returned a tuple of 2 arrays (shapes (2, 6, 6) and (2, 6, 6)), not one array" in e.value.message
    assert "got (2, 2, 6, 6)" not in e.value.message
    with pytest.raises(GradingFailure) as e:  # shapes that differ: the comparison's own words, as before
        V.check_shape((out, weights[..., :5]), (2, 6, 6), "M")
    assert "returned a tuple of 2 arrays (shapes (2, 6, 6) and (2, 6, 5)), not one array" in e.value.message
    assert V.check_shape(out, (2, 6, 6), "M").shape == (2, 6, 6)
