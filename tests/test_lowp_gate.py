"""A low-precision test item must not give points to a mistake its rounding hides (charlm's _check_values).

On a real H200, charlm's `layernorm_eps_std` example (eps added to the std instead of inside the square
root) passed `test_layer_norm[cuda-bfloat16]` and earned 0.625 points: in bfloat16 an eps of 1e-5 moves the
answer far less than the rounding does. Such an item now earns its points only for a function that is also
right on the same input in float64 (edge_gate.only_if_right_elsewhere); otherwise it is skipped, so its
share goes to the tests that can see the mistake. Here the same item runs in a real worker on the CPU
(bfloat16 works there too; the grading tests check it on CUDA only), for the wrong file and a right one.
"""
import numpy as np
import pytest

from checker.errors import GradingFailure
from checker.judging.compare import compare
from checker.running.sandbox import Limits, SubmissionHandle, Zygote
from checker.spec import example_path, load_spec

C = pytest.importorskip("assignments.charlm._layernorm")  # with all of _common


@pytest.fixture(scope="module")
def zyg():
    with Zygote() as z:
        yield z


def _item(zyg, example, dtype, seeds=(7,)):
    """test_layer_norm's body for (cpu, dtype) on an example submission, once per seed; what each raised
    (None where it passed)."""
    import importlib
    ref = importlib.import_module(load_spec("charlm")["reference"])
    h = SubmissionHandle(example_path("charlm", example + ".py"), zyg, Limits(call_s=30, submission_s=120))
    try:
        assert h.load()["ok"]
        out = []
        for seed in seeds:
            try:
                C._check_layer_norm(h, ref, lambda got, exp, **kw: compare(got, exp, **kw),
                                    np.random.default_rng(seed), (4, 5), None, "cpu", dtype)
                out.append(None)
            except BaseException as e:  # noqa: BLE001 - pytest's Skipped is a BaseException
                out.append(e)
        return out
    finally:
        h.close()


def test_a_mistake_bfloat16_hides_earns_nothing_there(zyg):
    outcomes = _item(zyg, "layernorm_eps_std", "bfloat16", seeds=range(12))
    hidden = [e for e in outcomes if not isinstance(e, GradingFailure)]  # inputs where rounding hides it
    assert hidden, "no input hid the mistake: the test shows nothing"
    assert all(isinstance(e, pytest.skip.Exception) for e in hidden), hidden
    assert all("judged by the other tests" in str(e) and "eps added to the std" in str(e) for e in hidden)


def test_a_right_layer_norm_keeps_its_bfloat16_points(zyg):
    assert _item(zyg, "correct", "bfloat16", seeds=range(4)) == [None] * 4
    assert _item(zyg, "correct", "float16", seeds=range(4)) == [None] * 4
