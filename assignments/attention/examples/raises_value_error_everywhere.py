"""Every function raises ValueError, whatever it is given (an attacker's probe, h37: it scored 3.62 of 100).

Q3's tests of a num_heads that does not divide the width accept a ValueError, as the handout asks of
split_heads; they earn their points only for a function that also answers right where num_heads divides it.
"""


def _refuse(*args, **kwargs):
    raise ValueError("not implemented")


get_scores = scale_scores = get_attention_weights = get_context_vector = context_vector = _refuse
self_attention_token = self_attention = _refuse
split_heads = head_weight_shape = head_output_shape = concat_shape = w_o_shape = multi_head_attention = _refuse
