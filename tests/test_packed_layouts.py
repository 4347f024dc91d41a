"""checker.judging.packed_layouts: the readings of packed projections, and what a gradebook says of a test that
failed closed on a layout it could not read (checker.records.outputs.unread_note).

The examples model_packed_* (charlm) and mhsa_*packed* (vit) grade the layouts end to end; here, the readings
themselves: a flat parameter of 3 D x D values (q, k, v packed, as `x @ W.view(3, D, D)[c].T` reads it) is read
so that each copy is the identity, with and without its biases after it, and a gradebook note names the tests
that failed closed, for a TA to check by hand.
"""
import numpy as np

from checker.judging.packed_layouts import UNREAD_MARK, packed_readings, unread_message
from checker.records.outputs import unread_note

D, H = 6, 2


def test_a_flat_qkv_parameter_reads_as_three_identities_first():
    readings = packed_readings((3 * D * D,), D, H)
    assert readings, "a (3 D^2,) parameter has packed readings"
    values, copies = readings[0]
    assert values.shape == (3 * D * D,) and sorted(set(copies.tolist())) == [0, 1, 2]
    for c in range(3):  # the likeliest order, (k, D_out, D_in): each copy the identity
        np.testing.assert_array_equal(values.reshape(3, D, D)[c], np.eye(D, dtype=values.dtype))


def test_biases_after_the_weights_are_read_as_biases():
    readings = packed_readings((3 * D * D + 3 * D,), D, H)
    assert readings
    values, copies = readings[0]
    assert (copies[-3 * D:] == -1).all() and not values[-3 * D:].any()  # the biases: zero


def test_a_size_that_packs_no_projection_has_no_reading():
    assert packed_readings((3 * D * D + 1,), D, H) == [] and packed_readings((D,), D, H) == []


def test_a_test_failed_closed_is_flagged_in_the_gradebook_note():
    message = unread_message("CharTransformer(17, 7, 12, 2, 1)", ["`blob` (432,)"])
    assert message.startswith(UNREAD_MARK) and "Likely mistake" not in message
    card = {"questions": [{"id": "model", "tests": [
        {"name": "test_model_attention_scaled_by_the_head_width", "outcome": "failed", "message": message},
        {"name": "test_model_causality", "outcome": "failed", "message": "logits depend on later tokens"}]}]}
    note = unread_note(card)
    assert note.startswith("TA check:") and "model: test_model_attention_scaled_by_the_head_width" in note
    assert "test_model_causality" not in note
    card["questions"][0]["tests"][0]["outcome"] = "passed"
    assert unread_note(card) == ""
