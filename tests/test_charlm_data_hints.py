"""assignments/charlm/_data.py's words for make_blocks and build_vocab answers that are wrong in a known way,
judged on the trusted side without a worker (the examples blocks_*, vocab_* grade them end to end).

  * make_blocks with windows that are all windows of the data but the wrong ones: one every block_size tokens,
    chunks of block_size + 1 (`view(n, block_size + 1)`), random or shuffled starts (nanoGPT's get_batch);
  * build_vocab's pair returned as (itos, stoi); its itos a copy of stoi (characters to ids), or keyed otherwise;
  * the student's exception words, without the file and code the message quotes.
"""
import numpy as np
import pytest

C = pytest.importorskip("assignments.charlm._data")
M = pytest.importorskip("assignments.charlm._answers")


def _data(L=10, seed=3):
    return np.random.default_rng(seed).integers(0, 20, size=L)


def test_block_mistakes_cut_the_windows_students_cut():
    data = np.arange(10) * 7 % 10 + 100  # distinct values: every window tells where it starts
    m = M.block_mistakes(data, 3)
    assert [x.tolist() for x in m["stride"]] == [[data[0:3].tolist(), data[3:6].tolist(), data[6:9].tolist()]]
    assert m["chunked"].tolist() == [data[0:3].tolist(), data[4:7].tolist()]
    assert m["next_only"].tolist() == data[3:10].tolist()
    assert M.block_mistakes(data[:4], 3)["chunked"].tolist() == [data[0:3].tolist()]  # one window: right there
    assert M.block_mistakes(data[:3], 3)["chunked"] is None


def test_windows_hint_names_the_starts_it_sees():
    data = np.arange(100, 110)
    _, _, windows = M.blocks(data, 3)  # every window, the last one (no next token) included
    pick = lambda starts: windows[starts]  # noqa: E731
    assert C._windows_hint(pick([0, 3, 6]), windows, 3) == C.BLOCKS_STRIDE_HINT
    assert C._windows_hint(pick([0, 4]), windows, 3) == C.BLOCKS_CHUNKED_HINT
    assert C._windows_hint(pick([4, 1, 1, 6, 0, 2, 5]), windows, 3) == C.BLOCKS_RANDOM_HINT
    assert C._windows_hint(pick([6, 5, 4, 3, 2, 1, 0]), windows, 3) == C.BLOCKS_RANDOM_HINT
    # shifted by one (x = y), a window that is not one of the data's, a short answer: nothing named
    assert C._windows_hint(pick([1, 2, 3, 4, 5, 6, 7]), windows, 3) is None
    assert C._windows_hint(np.array([[1, 2, 3], [4, 5, 6]]), windows, 3) is None
    assert C._windows_hint(pick([3]), windows, 3) is None
    assert C._windows_hint("not an array", windows, 3) is None


def test_windows_hint_says_nothing_where_a_window_repeats_in_the_data():
    data = np.array([1, 2, 1, 2, 1, 2, 1, 2])  # block_size 1 or 2: a row could start at several places
    _, _, windows = M.blocks(data, 2)
    assert C._windows_hint(windows[[2, 0, 1]], windows, 2) is None


def test_ids_to_chars_tells_an_itos_from_a_stoi():
    assert C._ids_to_chars({0: "a", 1: "b"})
    assert C._ids_to_chars({np.int64(1): "b", np.int64(0): "a"})
    assert not C._ids_to_chars({"a": 0, "b": 1})
    assert not C._ids_to_chars({0: "a", 2: "b"})  # not 0..V-1
    assert not C._ids_to_chars({})
    assert not C._ids_to_chars({True: "a"})


@pytest.mark.parametrize("itos_second,words", [
    (True, "the pair is returned in the wrong order, (itos, stoi)"),
    (False, "stoi is built the wrong way round"),
])
def test_a_swapped_vocabulary_is_named(itos_second, words):
    stoi, itos = {"e": 0, "h": 1, "l": 2, "o": 3}, {0: "e", 1: "h", 2: "l", 3: "o"}
    with pytest.raises(C.GradingFailure) as e:
        C._check_vocab((itos, stoi if itos_second else itos), "hello")
    assert words in e.value.message and "a global?" not in e.value.message


def test_an_itos_that_maps_characters_is_named():
    # itos a copy of stoi: once told "itos[0] = None ... it has 1 entries for 4 characters" (its keys, read as
    # ids, all collapsed to None), a dict of 4 entries that never said it maps characters to ids
    stoi = {"e": 0, "h": 1, "l": 2, "o": 3}
    with pytest.raises(C.GradingFailure) as e:
        C._check_vocab((stoi, dict(stoi)), "hello")
    msg = e.value.message
    assert "itos maps the characters to their ids" in msg and "copy of stoi" in msg and "itos['e'] = 0" in msg
    assert "1 entries" not in msg and "None" not in msg


def test_an_itos_keyed_by_other_things_is_counted_as_it_is():
    with pytest.raises(C.GradingFailure) as e:
        C._check_vocab(({"e": 0, "h": 1, "l": 2, "o": 3}, {0: "e", 1: "h", "2": "l", 3.0: "o"}), "hello")
    msg = e.value.message
    assert "2 of its 4 keys are not ids: '2', 3.0" in msg and "1 entries" not in msg


def test_student_words_leave_out_the_quoted_code():
    msg = ("sinusoidal_positions(5, 7) raised RuntimeError: The expanded size of the tensor (3) must match at "
           "sub.py, line 152:\n    pe[:, 1::2] = torch.cos(position * div_term)")
    assert C._student_words(msg) == "RuntimeError: The expanded size of the tensor (3) must match"
    assert "cos" not in C._student_words(msg)
