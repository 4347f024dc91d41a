"""Tests of checker/judging/notebook_globals.py: naming the notebook global a class reads instead of its argument."""
import pytest

from checker.errors import GradingFailure, StudentError, StudentTimeout
from checker.judging.notebook_globals import globals_hint, naming_globals, order_hint

SIZES = {"vocab_size": 23, "block_size": 37, "d_model": 20}
ERROR = ("CharTransformer.forward raised RuntimeError: The size of tensor a (32) must match the size of "
         "tensor b (37) at non-singleton dimension 2")


def test_the_global_whose_value_shows_in_the_error_is_named():
    hint = globals_hint({"block_size": 32, "batch_size": 32, "max_iters": 5000}, ERROR, SIZES)
    assert "`block_size = 32`" in hint and "batch_size" not in hint  # a size's name wins over batch_size
    assert "block_size=37" in hint and "instead of its own argument" in hint


@pytest.mark.parametrize("top_level", [
    {},                                  # no globals
    {"block_size": 37},                  # the value the grader used: not a suspect
    {"block_size": 64},                  # a value that is not in the error
    {"n": 2},                            # too small to tell from any other number
])
def test_no_hint_without_a_suspect(top_level):
    assert globals_hint(top_level, ERROR, SIZES) is None


def test_a_square_mask_of_the_globals_size_counts():
    message = "shape '[1, 1, 37, 37]' is invalid for input of size 1024"
    assert "`block_size = 32`" in globals_hint({"block_size": 32}, message, SIZES)


def test_numbers_in_matrix_shapes_count():
    message = "mat1 and mat2 shapes cannot be multiplied (74x64 and 20x60)"
    assert "`n_embd = 64`" in globals_hint({"n_embd": 64}, message, SIZES)


def test_an_index_past_a_smaller_global_table_names_the_global():
    message = "CharTransformer.forward raised IndexError: index out of range in self"
    hint = globals_hint({"block_size": 32, "max_iters": 5000, "eval_interval": 8}, message, SIZES)
    assert "`block_size = 32`" in hint and "an index ran past the end of a table" in hint
    assert "max_iters" not in hint and "eval_interval" not in hint  # not sizes, or not smaller
    assert globals_hint({"block_size": 64}, message, SIZES) is None  # a larger table cannot overflow


def test_numbers_inside_names_or_decimals_do_not_count():
    assert globals_hint({"block_size": 32}, "layer32 failed at 0.32 and 1.32e5", SIZES) is None


CFG = {"vocab_size": 11, "block_size": 9, "d_model": 20, "num_heads": 2, "num_layers": 2}


def test_arguments_in_another_order_are_named():
    hint = order_hint(["self", "vocab_size", "d_model", "num_heads", "num_layers", "block_size"], CFG, "M")
    assert "M.__init__ takes (vocab_size, d_model, num_heads, num_layers, block_size)" in hint
    assert "your `d_model` received block_size=9" in hint
    # nanoGPT's names are understood too
    assert "your `n_layer` received" in order_hint(["vocab", "block", "n_embd", "n_layer", "n_head"], CFG, "M")


@pytest.mark.parametrize("params", [
    ["self", "vocab_size", "block_size", "d_model", "num_heads", "num_layers"],  # the handout's order
    ["self", "vocab_size", "block_size", "d_model", "num_heads", "num_layers", "dropout"],  # and an extra
    ["self", "a", "b", "c", "d", "e"],  # names that say nothing
    ["self", "config"],  # too few to judge
    None,  # no signature
])
def test_no_order_hint_when_the_order_is_right_or_unknown(params):
    assert order_hint(params, CFG, "M") is None


class FakeSub:
    def __init__(self, top):
        self.top, self.asked = top, 0

    def top_level_ints(self):
        self.asked += 1
        return self.top


def test_naming_globals_adds_the_hint_and_keeps_the_failure_type_and_place():
    sub = FakeSub({"block_size": 32})
    err = StudentError(ERROR)
    err.where = {"file": "nb.ipynb", "cell": 9, "line": 14}
    with pytest.raises(StudentError) as info:
        with naming_globals(sub, SIZES):
            raise err
    assert info.value.message.startswith(ERROR) and "Likely mistake: your submission defines `block_size = 32`" \
        in info.value.message
    assert info.value.where == err.where


def test_naming_globals_leaves_timeouts_and_explained_failures_alone():
    sub = FakeSub({"block_size": 32})
    for failure in (StudentTimeout(f"{ERROR} was stopped"), GradingFailure(f"{ERROR}\nLikely mistake: other.")):
        with pytest.raises(type(failure)) as info:
            with naming_globals(sub, SIZES):
                raise failure
        assert info.value is failure
    assert sub.asked == 0


def test_a_patch_of_the_globals_side_counts_and_tuple_sizes_are_used_sizes():
    # a notebook's `PATCH = 4` read in forward: a 3-channel patch of side 4 is 48 numbers
    sizes = {"img_shape": (3, 8, 8), "patch_dims": 2, "hidden_dim": 12}
    message = "mat1 and mat2 shapes cannot be multiplied (12x48 and 12x12)"
    assert "`PATCH = 4`" in globals_hint({"PATCH": 4}, message, sizes)
    # 8 is in img_shape: a global equal to a size the grader used is no suspect
    assert globals_hint({"IMG": 8}, "expected 8, got 3", sizes) is None


def test_the_vit_constructors_argument_order_is_checked_too():
    hint = order_hint(["self", "num_heads", "hidden_dim"], {"hidden_dim": 12, "num_heads": 3},
                      "MultiHeadSelfAttention")
    assert "your `num_heads` received hidden_dim=12" in hint
    assert order_hint(["self", "dim", "heads"], {"hidden_dim": 12, "num_heads": 3}, "MultiHeadSelfAttention") is None


def test_the_graders_own_arguments_in_a_message_name_no_global():
    """`CharTransformer(..., num_layers=4) has ... parameters`: the 4 is the grader's own argument, and the hint
    named the student's `n_head = 4` as the global the model reads."""
    from checker.judging.notebook_globals import globals_hint
    message = ("CharTransformer(vocab_size=11, block_size=9, d_model=20, num_heads=2, num_layers=4) has 101707 "
               "parameters, no more than 101707 with num_layers=2")
    assert globals_hint({"n_head": 4, "n_embd": 64}, message, {"num_layers": 2, "d_model": 20}) is None
    # a number of the student's own in the error still names the global
    assert "n_embd = 64" in globals_hint({"n_embd": 64}, "mat1 and mat2 shapes cannot be multiplied (2x64 and 20x20)",
                                         {"d_model": 20})
