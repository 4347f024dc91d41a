"""split_heads's answer is a list of blocks by the handout's contract (assignments/attention/README.md): a list
whose blocks have different shapes is judged in the contract's words, never with the comparison's words for a
function that returns several arrays instead of one ("not one array: ... take its [0]"), and a cut along the rows
is named as such (the examples' split_heads_rows_sliced grades this end to end). Judged on the trusted side, the
student's split_heads computed here."""
import numpy as np
import pytest

Q3 = pytest.importorskip("assignments.attention.test_attention_q3")
ref = pytest.importorskip("assignments.attention.reference")
from checker.errors import GradingFailure  # noqa: E402
from checker.judging.compare import compare  # noqa: E402


class _Sub:
    """A stand-in for the submission handle: `call("split_heads", W, h)` answers with `split_heads`."""

    def __init__(self, split_heads):
        self.split_heads = split_heads

    def call(self, name, *args):
        assert name == "split_heads"
        return self.split_heads(*args)


def _rows_by_width(W, h):  # the student's: W[i*k:(i+1)*k, :] with k = width // h
    k = W.shape[1] // h
    return [W[i * k:(i + 1) * k, :] for i in range(h)]


def _message(split_heads, d, width, h):
    W = np.arange(d * width, dtype=np.float64).reshape(d, width) / 10
    with pytest.raises(GradingFailure) as e:
        Q3._check_blocks(_Sub(split_heads), ref, compare, W, h, "float64", "W")
    return e.value.message


@pytest.mark.parametrize("d,width,h", [(3, 6, 3), (5, 10, 5), (4, 6, 6), (7, 12, 4), (1, 9, 3)])
def test_blocks_of_different_shapes_are_named_as_rows_not_as_a_tuple(d, width, h):
    msg = _message(_rows_by_width, d, width, h)
    assert "not one array" not in msg and "take its [0]" not in msg
    assert "ragged" not in msg
    assert f"expected a list of {h} blocks, each of shape ({d}, {width // h})" in msg
    assert "Likely mistake: the blocks were cut along the rows (axis 0) instead of the columns." in msg


def test_blocks_of_one_shape_cut_along_the_rows_are_named_where_the_rows_do_not_split_evenly():
    msg = _message(_rows_by_width, 6, 5, 5)  # five (1, 5) blocks: rows of W, np.split(W, 5, axis=0) impossible
    assert "expected 5 blocks of shape (6, 1), got 5 of shape (1, 5)" in msg
    assert "cut along the rows (axis 0)" in msg


def test_other_lists_are_left_to_the_comparison():
    assert Q3._check_blocks(_Sub(ref.split_heads), ref, compare, np.ones((4, 6)), 3, "float64", "W") is None
    msg = _message(lambda W, h: [b.T for b in ref.split_heads(W, h)], 4, 6, 2)  # (3, 4) blocks, transposed
    assert "came back transposed" in msg and "cut along the rows" not in msg
    msg = _message(lambda W, h: [b[:, :1] if i else b for i, b in enumerate(ref.split_heads(W, h))], 4, 6, 3)
    assert "expected a list of 3 blocks, each of shape (4, 2)" in msg and "Likely mistake" not in msg
    assert "not one array" not in msg
