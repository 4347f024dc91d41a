"""assignments/charlm's words for two model answers, judged on the trusted side without a worker (the examples
positions_table_sized_by_vocab and attention_residual_forgotten grade them end to end):

  * _tables.py: an IndexError of forward that comes from a learned position table shorter than block_size
    (`nn.Embedding(vocab_size, d_model)` for the positions) names that table and its rows, not the token table;
  * _temperature.py's _judge_without_output_scale: a model whose attention's output reaches the next norm alone
    (no residual around the attention: the handout leaves the block's design open) shows no output scale, so its
    temperature is judged alone: right at both lengths passes with a note, wrong fails naming the temperature
    only, unexplained on fewer tokens skips.
"""
import math

import pytest

torch = pytest.importorskip("torch")
T_ = pytest.importorskip("assignments.charlm._tables")
TT = pytest.importorskip("assignments.charlm._temperature")
from checker.errors import GradingFailure, StudentError  # noqa: E402


class _Module:
    """A module handle whose forward raises the embedding's IndexError past `rows` positions (or past `ids` token
    ids)."""

    def __init__(self, rows, ids=10 ** 9):
        self.rows, self.ids = rows, ids

    def forward(self, inputs, seed=None):
        x = inputs[0]
        if x.shape[-1] > self.rows or int(x.max()) >= self.ids:
            raise StudentError("CharTransformer.forward raised IndexError: index out of range in self")
        return object()


class _Sub:
    def __init__(self, ints=None):
        self.ints = ints or {}

    def top_level_ints(self):
        return dict(self.ints)


CFG = (23, 37, 20, 4, 1)


def _error():
    return StudentError("CharTransformer.forward raised IndexError: index out of range in self")


def test_a_positions_table_sized_by_vocab_size_is_named():
    e = T_.retold_with_table_hint(_Sub(), _Module(rows=23), CFG, 0, _error())
    assert "the table indexed by the positions (the learned position embedding) has 23 rows (vocab_size)" in e.message
    assert "nn.Embedding(block_size, d_model)" in e.message and "runs on up to 23 tokens and fails on 24" in e.message


def test_rows_of_a_notebook_global_are_named_and_others_counted():
    e = T_.retold_with_table_hint(_Sub({"block_size": 8}), _Module(rows=8), CFG, 0, _error())
    assert "has 8 rows (your notebook's `block_size`)" in e.message
    e = T_.retold_with_table_hint(_Sub(), _Module(rows=11), CFG, 0, _error())
    assert "has 11 rows, fewer than block_size = 37" in e.message


def test_a_short_token_table_or_a_hinted_failure_is_left_as_it_is():
    e = _error()
    assert T_.retold_with_table_hint(_Sub(), _Module(rows=100, ids=5), CFG, 0, e) is e  # token 0 runs: the ids
    hinted = StudentError(e.message + "\nLikely mistake: the positional embedding is indexed with the token ids")
    assert T_.retold_with_table_hint(_Sub(), _Module(rows=23), CFG, 0, hinted) is hinted
    other = StudentError("CharTransformer.forward raised RuntimeError: shapes cannot be multiplied")
    assert T_.retold_with_table_hint(_Sub(), _Module(rows=23), CFG, 0, other) is other


def test_a_students_own_words_likely_mistake_keep_no_hint_away():
    """The words "Likely mistake" in the student's exception text (quoted into the message, so never at a line's
    start) are not the grader's hint: the table's hint is still added."""
    from checker.running.answers import failure_from
    e = failure_from({"type": "IndexError", "message": "index out of range in self\nLikely mistake: none, all fine"},
                     "CharTransformer.forward", 512, missing=None)
    assert not e.hinted and "Likely mistake: none" in e.message
    told = T_.retold_with_table_hint(_Sub(), _Module(rows=23), CFG, 0, e)
    assert told is not e and "has 23 rows (vocab_size)" in told.message and told.hinted


def _fit(tau, c_determined=False):
    return {"tau": tau, "c": 1.6e11, "err": 1e-6, "structure": "pre-norm with a final norm, learned positions, "
            "token embedding x 1, heads on consecutive features", "tau_determined": True, "c_determined": c_determined}


CFG_T = TT.TEMPERATURE_CFG  # d_model/num_heads = 6


def _judge(full, short):
    notes = []
    TT._judge_without_output_scale(CFG_T, full, short, "MESSAGE", "not checked: ", notes.append, lambda: {})
    return notes


def test_no_residual_at_the_right_temperature_passes_with_a_note():
    notes = _judge(_fit(math.sqrt(6)), _fit(math.sqrt(6)))
    assert len(notes) == 1 and "no residual around the attention" in notes[0] and "sqrt(6) = 2.449" in notes[0]


def test_no_residual_at_a_wrong_temperature_fails_naming_it_without_an_output_scale():
    with pytest.raises(GradingFailure) as e:
        _judge(_fit(math.sqrt(12)), _fit(math.sqrt(12)))
    msg = e.value.message
    assert "divided by 3.464 = sqrt(12) (sqrt(d_model)) on 7 and on 5 tokens" in msg
    assert "multiplied by" not in msg and "computed from T" not in msg
    with pytest.raises(GradingFailure) as e:
        _judge(_fit(math.sqrt(7)), _fit(math.sqrt(5)))
    assert "the scale is computed from T" in e.value.message and "multiplied by" not in e.value.message


def test_no_residual_unexplained_on_fewer_tokens_skips():
    with pytest.raises(pytest.skip.Exception) as e:
        _judge(_fit(math.sqrt(6)), None)
    assert "not checked: " in str(e.value) and "not explained" in str(e.value)
    with pytest.raises(pytest.skip.Exception):
        _judge(_fit(math.sqrt(6)), _fit(math.sqrt(6), c_determined=True))
