"""assignments/vit/_common.py's `explained()`: the likely mistake named under a student's error.

On a real H200 the `global_device_in_forward` example (a tensor sent to a device chosen once for the whole
program) raised PyTorch's "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be
the same", and the hint said the dtype was wrong: the words "should be the same" were taken for a dtype
mismatch. A CUDA type beside a CPU type is a device mismatch; two CPU types of two dtypes stay a dtype one.
"""
import pytest

from checker.errors import StudentError

C = pytest.importorskip("assignments.vit._common")


def _told(message):
    with pytest.raises(StudentError) as e:
        with C.explained():
            raise StudentError(message)
    return e.value.message


def test_a_cuda_input_beside_cpu_weights_is_named_a_device_mismatch():
    told = _told("VisionTransformer.forward raised RuntimeError: Input type (torch.cuda.FloatTensor) and weight "
                 "type (torch.FloatTensor) should be the same")
    assert C.DEVICE_HINT in told and C.DTYPE_HINT not in told


def test_two_dtypes_on_one_device_stay_a_dtype_mismatch():
    told = _told("VisionTransformer.forward raised RuntimeError: Input type (torch.DoubleTensor) and weight type "
                 "(torch.FloatTensor) should be the same")
    assert C.DTYPE_HINT in told and C.DEVICE_HINT not in told


def test_a_numpy_round_trip_of_bfloat16_is_named():
    told = _told("patchify(tensor (2, 3, 8, 12) bfloat16, 4) raised TypeError: Got unsupported ScalarType BFloat16")
    assert "numpy has no bfloat16" in told
