"""Heads D/num_heads wide (vit, question mhsa): the count of an MHSA's parameters says how wide its heads are.

What it is for: the handout's MHSA splits D into num_heads heads of D/num_heads features, so its query, key,
value and output projections hold 4 * D * D weights and at most a few D of biases, whatever their layout (one
fused qkv layer, a Linear per head, (heads, D, d_k) tensors, nn.MultiheadAttention). Heads of another width hold
4 * D * (num_heads * width): lucidrains' `dim_head=64` kept, Keras's `key_dim` set to D, a Linear(D, D) per head.
Those modules pass every test that reads their outputs (their temperature cannot be set to the identity's, so
its test skips), and only the count tells. `too_many_parameters(D, h, n)`: the failure's words, or None. What it
is not: the lower bound (test_mhsa_parameter_count's: too few, a Python list of layers) or a test of its own.
"""

MOST_BIASES = 8  # biases allowed beyond 4 * D * D, in units of D: four projections' and a bias per head's output


def too_many_parameters(D, h, n):
    """The failure's message for an MHSA(D, h) of n parameter values, where n is more than the handout's
    projections and their biases can hold; None where it is not."""
    most = 4 * D * D + MOST_BIASES * D
    if n <= most:
        return None
    width = n / (4 * D * h)
    return (f"MultiHeadSelfAttention({D}, {h}) has {n} registered parameter values; the query, key, value and output "
            f"projections of heads D/num_heads = {D // h} wide hold 4 * D * D = {4 * D * D} weights and a few D of "
            f"biases, at most {most}: {n} is what heads about {width:.3g} features wide would hold.\nLikely mistake: "
            f"the heads are wider than D/num_heads: a head width fixed in the code (lucidrains' `dim_head=64` kept), "
            f"or each head D wide (Keras's `key_dim=D`, a Linear(D, D) per head). Split D = {D} into {h} heads of "
            f"D/num_heads = {D // h} features each (`d_k = hidden_dim // num_heads`), their scores scaled by "
            f"1/sqrt(D/num_heads)")


__all__ = ["too_many_parameters", "MOST_BIASES"]
