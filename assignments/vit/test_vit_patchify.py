"""Grading tests of `vit`, question patchify (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._patchify import *  # noqa: F401,F403 - the judge of patchify and its hints


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 8), 4), ((1, 3, 12, 12), 4), ((2, 1, 8, 8), 2)])
def test_patchify_square(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 12), 4), ((1, 1, 12, 6), 3)])
def test_patchify_non_square_image(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 12), (4, 6)), ((1, 3, 6, 8), (3, 2))])
def test_patchify_tuple_patch(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
def test_patchify_dtype_and_device(sub, ref, close, rng, device, float_dtype):
    images = randn(rng, (2, 3, 8, 12), float_dtype, device)
    with explained():
        got, info = sub.call_info("patchify", images, 4)
    dtypes = info.get("dtypes") or []
    if dtypes[:1] != [float_dtype]:
        raise GradingFailure(f"patchify of {float_dtype} images returned "
                             f"{dtypes[0] if dtypes else 'something that is not an array'}: the patches must "
                             "keep the images' dtype (and device)")
    _check_patchify(sub, ref, close, images, 4, dtype=float_dtype, got=got)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [
    ((3, 1, 6, 9), (2, 3)),
    ((1, 3, 16, 8), (8, 4)),
    ((2, 2, 10, 15), 5),
    ((2, 3, 4, 4), 4),  # a single patch
    ((1, 3, 4, 12), (4, 2)),  # a single row of patches
])
def test_patchify_more_shapes(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)
