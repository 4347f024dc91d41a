"""The comparison engine: order of checks, tolerances per dtype, hints, and hostile values."""
import numpy as np
import pytest

from checker.judging.compare import TOLERANCES, compare, compare_lowp, lowp_blind, tolerance
from checker.errors import GradingFailure


def fails(*args, **kw):
    with pytest.raises(GradingFailure) as e:
        compare(*args, **kw)
    return str(e.value)


def test_defaults_are_torch_testing_defaults():
    assert TOLERANCES["float32"] == (1.3e-6, 1e-5)
    assert TOLERANCES["float64"] == (1e-7, 1e-7)
    assert tolerance("float32", {"float32": {"rtol": 1e-4}}) == (1e-4, 1e-5)
    assert tolerance("float16") == (1e-3, 1e-5)


def test_equal_values_pass_in_any_plain_form():
    exp = np.array([1.0, 2.0, 3.0])
    compare([1, 2, 3], exp)
    compare(np.array([1, 2, 3], dtype=np.float32), exp, dtype="float32")
    compare(np.float64(3.0), np.array(3.0))


def test_shape_is_checked_first_and_says_both_shapes():
    msg = fails(np.zeros((4, 1)), np.zeros(4), what="get_scores")
    assert "expected shape (4,), got (4, 1)" in msg and "same number of values" in msg


def test_nan_reported_before_values():
    msg = fails(np.array([np.nan, 1.0]), np.array([0.5, 0.5]))
    assert "NaN" in msg and "softmax" in msg


@pytest.mark.parametrize("got", [[0.0, 5.0, -7.0], [0.0, np.inf, -np.inf], [0.0, 0.0, 0.0], [0.0, -1e308, 1e308]])
def test_an_infinite_expected_value_is_matched_by_itself_only(got):
    # |g - inf| <= rtol * |inf| holds for every finite g: a masked score (-inf) is not any number
    exp = np.array([0.0, -np.inf, np.inf])
    msg = fails(got, exp, what="masked scores")
    assert "values differ" in msg and "2 of 3" in msg
    compare([0.0, -np.inf, np.inf], exp)


def test_a_hint_with_an_infinity_is_named_only_for_that_infinity():
    exp = np.array([[0.0, -np.inf], [0.0, 0.0]])
    mistake = np.array([[0.0, np.inf], [0.0, 0.0]])
    assert "the sign" in fails(mistake, exp, hints=[("the sign of the mask", mistake)])
    assert "the sign" not in fails(np.array([[0.0, 3.0], [0.0, 0.0]]), exp, hints=[("the sign of the mask", mistake)])


def test_value_message_has_errors_where_share_and_excerpts():
    exp = np.arange(10, dtype=float)
    got = exp.copy()
    got[7] += 0.5
    msg = fails(got, exp, what="f(x)")
    assert "1 of 10 values differ (10.0%)" in msg
    assert "greatest absolute difference 0.5 at index (7,)" in msg
    assert "expected [" in msg and "got [" in msg


def test_float32_tolerance_is_looser_than_float64():
    exp = np.array([1.0])
    compare(np.array([1.0 + 5e-6]), exp, dtype="float32")
    fails(np.array([1.0 + 5e-6]), exp, dtype="float64")


def test_a_float32_answer_to_a_float64_test_is_judged_with_float32_tolerances():
    exp = np.array([1.0, 2.0, 3.0])
    got32 = (exp * (1 + 4e-7)).astype(np.float32)  # accumulated float32 rounding: 4e-7 relative
    compare(got32, exp, dtype="float64")
    # the same numbers in another container are judged the same: by their values (HOMEWORK.md)
    compare(got32.astype(np.float64), exp, dtype="float64")
    compare(got32.tolist(), exp, dtype="float64")
    msg = fails((got32 + np.float32(1e-3)).astype(np.float64), exp, dtype="float64")
    assert "your values are all float32 numbers, so they were judged with float32 tolerances" in msg
    fails(exp * (1 + 4e-7), exp, dtype="float64")  # float64 numbers are judged as float64
    msg = fails(got32 + np.float32(1e-3), exp, dtype="float64")
    assert "came back as float32, so it was judged with float32 tolerances; the inputs were float64" in msg
    # round float64 values say nothing of float32: no such note on a plainly wrong answer
    msg = fails(np.array([1.0, 1.0, 1.0, 0.0, 0.0, 0.0]), np.array([0.5, 0.5, 0.5, 0.5, 0.5, 0.5]), dtype="float64")
    assert "float32" not in msg, msg


def test_expected_and_got_show_enough_digits_to_differ():
    msg = fails(np.array([1234.56789]), np.array([1234.5670]), dtype="float64")
    exp_line = next(line for line in msg.splitlines() if line.startswith("expected"))
    got_line = next(line for line in msg.splitlines() if line.strip().startswith("got"))
    assert exp_line.split(" ", 1)[1] != got_line.strip().split(" ", 1)[1], msg


def test_hint_names_the_mistake_only_when_it_matches():
    exp = np.array([1.0, 2.0])
    mistaken = np.array([2.0, 4.0])
    assert "Likely mistake: no scaling" in fails(mistaken, exp, hints=[("no scaling", mistaken)])
    assert "Likely mistake" not in fails(np.array([9.0, 9.0]), exp, hints=[("no scaling", mistaken)])


def test_a_mistake_this_input_cannot_tell_from_the_right_answer_is_not_named():
    # for T = 1 "no scaling" gives the right answer: a near miss must not be told it forgot the scaling
    exp = np.array([1.0, 2.0])
    near_miss = exp + 1e-5
    msg = fails(near_miss, exp, hints=[("no scaling", exp.copy()), ("scaled twice", exp / 2)])
    assert "Likely mistake" not in msg
    # the next hint that does tell them apart is still named
    assert "Likely mistake: scaled twice" in fails(exp / 2, exp, hints=[("no scaling", exp.copy()),
                                                                       ("scaled twice", exp / 2)])


def test_two_mistakes_this_input_cannot_tell_apart_are_both_named():
    exp = np.array([[False]])  # causal_mask(1): the allowed-positions mask and the diagonal-hiding one agree
    msg = fails(np.array([[True]]), exp, hints=[("hides the diagonal", np.array([[True]])),
                                                ("marks the allowed ones", np.array([[True]])),
                                                ("wrong triangle", exp.copy())])
    assert "Likely mistake: hides the diagonal; or marks the allowed ones (this input cannot tell these apart)." \
        in msg


def test_float64_answers_computed_in_float32_are_told_so():
    exp = np.linspace(0.5, 2.0, 12)
    via32 = exp.astype(np.float32).astype(np.float64) * (1 + 3e-7)  # float32 maths, returned as float64
    assert "agree with the expected ones to float32 precision only" in fails(via32, exp, dtype="float64")
    assert "float32 precision" not in fails(exp + 1e-3, exp, dtype="float64")


def test_booleans_compared_exactly():
    mask = np.triu(np.ones((3, 3), bool), 1)
    compare(mask, mask)
    msg = fails(mask.T, mask, hints=[("wrong triangle", mask.T)])
    assert "entries differ" in msg and "wrong triangle" in msg


def test_always_equal_subclass_is_judged_by_its_values():
    class Liar(np.ndarray):
        def __eq__(self, other):
            return np.ones(self.shape, bool)

    liar = np.zeros(3).view(Liar)
    fails(liar, np.array([1.0, 2.0, 3.0]))


@pytest.mark.parametrize("bad", [None, "text", {"a": 1}, [[1, 2], [3]], [object()]])
def test_non_numbers_fail_with_a_message(bad):
    msg = fails(bad, np.array([1.0, 2.0]))
    assert msg


def test_lowp_rule_accepts_errors_within_k_times_the_reference_error():
    gold = np.linspace(-1, 1, 50)
    ref16 = gold.astype(np.float16).astype(np.float64)
    compare_lowp(ref16, gold, ref16, dtype="float16")
    with pytest.raises(GradingFailure, match="more than 5 x"):
        compare_lowp(gold + 0.05, gold, ref16, dtype="float16")


def test_a_tuple_of_arrays_is_named_as_such_not_as_a_ragged_value():
    """nn.MultiheadAttention's (output, weights) passed on as the module's output: say what came back."""
    out, weights = np.zeros((2, 5, 8)), np.zeros((2, 2, 5, 5))
    msg = fails((out, weights), np.zeros((2, 5, 8)), what="MultiHeadSelfAttention(8, 2)")
    assert "returned a tuple of 2 arrays (shapes (2, 5, 8) and (2, 2, 5, 5)), not one array" in msg
    assert "take its [0]" in msg and "ragged" not in msg
    compare([np.ones(2), np.ones(2)], np.ones((2, 2)))  # same shapes: a list of rows is still an answer


def test_a_tuple_of_arrays_each_of_the_answers_shape_is_named_not_stacked():
    """(output, weights) of one shape (a single head's (T, T) weights beside a (T, T) output) stack into an array
    with one more axis: the tuple is named, not "expected shape (2, 6, 6), got (2, 2, 6, 6)"."""
    msg = fails((np.zeros((2, 6, 6)), np.zeros((2, 6, 6))), np.zeros((2, 6, 6)), what="MultiHeadSelfAttention(6, 1)")
    assert "returned a tuple of 2 arrays (each of shape (2, 6, 6)), not one array" in msg and "got (" not in msg
    with pytest.raises(GradingFailure, match="expected shape"):  # a list of heads is judged as the list it is
        compare([np.ones((3, 2))] * 2, np.ones((3, 2, 2)))


# ------------------------------------------------ answers that are not numbers (issue 17 item 1)

@pytest.mark.parametrize("got,expected,words", [
    (np.ones(3, bool), np.array([0.5, 2.0, -1.0]), "dtype bool"),          # truthy, of the right shape
    (np.array([0.5, 2.0, -1.0]) != 0, np.array([0.5, 2.0, -1.0]), "dtype bool"),  # the right answer cast to bool
    ((True, True), (4, 2), "the bool True"),                               # a shape made of True
    ((4, True), (4, 1), "the bool True at index 1 of the tuple"),          # True where the int 1 is right
    ((np.bool_(True), 2), (1, 2), "the numpy bool"),
    ((np.array(True), 2), (1, 2), "0-d array (or numpy scalar) and dtype bool"),  # np.True_ off the wire
    ([np.ones(2, bool), np.zeros(2)], np.ones((2, 2)), "dtype bool"),      # hidden in a list of rows
    ("1.0", np.array(1.0), "a str ('1.0')"),
    (["1.0", "2.0"], np.array([1.0, 2.0]), "a str ('1.0') at index 0 of the list"),
    (np.array([1.0, 2.0], dtype=object), np.array([1.0, 2.0]), "dtype object"),
    (np.array([1.0, 2.0], dtype=complex), np.array([1.0, 2.0]), "dtype complex128"),
    (1 + 0j, np.array(1.0), "the complex number"),
])
def test_what_is_not_a_real_number_is_refused_by_name(got, expected, words):
    msg = fails(got, expected, what="f(x)")
    assert msg.startswith("f(x) returned ") and words in msg and "where numbers are expected" in msg, msg


def test_a_bool_answer_counts_where_the_answer_is_bool():
    mask = np.triu(np.ones((3, 3), bool), 1)
    compare(mask, mask)
    compare(mask.astype(int), mask)  # 0/1 for a mask: the dtype is another test's matter
    assert "expected True/False values" in fails(mask * 2, mask)
    # a numeric answer against a bool hint is compared by value, not by truthiness
    msg = fails(np.where(mask, 5, 0), mask, hints=[("hint", mask)])
    assert "Likely mistake" not in msg


def test_a_numeric_answer_is_not_matched_to_a_hint_by_truthiness():
    exp = np.array([1.0, 2.0])
    msg = fails(np.array([3.0, 3.0]), exp, hints=[("all True", np.array([True, True]))])
    assert "Likely mistake" not in msg


def test_a_wrong_shape_or_count_is_told_exactly_not_in_tolerance_words():
    # issue 19: a shape answered wrong read "relative difference 0.875"
    msg = fails((2, 2, 48), (2, 16, 48), what="grid(...)")
    assert msg == "grid(...): expected (2, 16, 48), got (2, 2, 48)", msg
    assert "expected (2, 16, 48), got (2, 2, 48)" in fails(np.array([2.0, 2.0, 48.0]), (2, 16, 48))
    msg = fails(np.arange(12).reshape(3, 4) * 0, np.arange(12).reshape(3, 4))
    assert "11 of 12 entries differ" in msg and "tolerance" not in msg and "relative" not in msg
    # a fractional answer to a count is judged as before
    assert "relative difference" in fails(np.array([2.5]), np.array([2]))


def test_lowp_blind_names_the_mistakes_a_low_precision_input_cannot_show():
    golden = np.linspace(-1, 1, 20)
    ref_lowp = golden + 4e-3  # the reference's own bfloat16 error: 5 x that is allowed
    hints = [("eps on the std", golden * (1 + 1e-5)), ("unbiased variance", golden * 1.12),
             ("not a number", None), ("another shape", golden[:5])]
    assert lowp_blind(golden, ref_lowp, hints, dtype="bfloat16") == ["eps on the std"]
    # in float64 nothing hides that mistake: the allowed error is the reference's own, 1e-12 here
    assert lowp_blind(golden, golden + 1e-12, hints, dtype="float16") == []
