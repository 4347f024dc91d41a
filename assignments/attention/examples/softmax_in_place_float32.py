"""Homework 1 - attention by hand (student submission, one mistake).

The softmax keeps float32 scores in float32 and computes anything else in float64: `astype` copies a float64
array, but a float32 one is used as it is, and the in-place steps after it (`s -= ...`, `np.exp(s, out=s)`,
`s /= ...`) then overwrite the caller's float32 scores with the weights (a softmax written with
`np.asarray(scores, dtype=np.float32)` does the same, and loses float64's precision besides; this file once got
full marks: the arguments were checked in float64 only).
"""

import math

import numpy as np

# --------------------------------------------------------------------------- Q1


def get_scores(matrix, vector):
    """Dot product of the decoder state with every encoder state: (T, n), (n,) -> (T,)."""
    return matrix @ vector  # (T,)


def scale_scores(scores, n):
    """Scores divided by sqrt(n), n the width of the vectors that were compared."""
    return scores / math.sqrt(n)  # same shape as scores


def get_attention_weights(scores):
    s = np.asarray(scores)
    if s.dtype != np.float32:  # float32 stays float32 (half the memory); ints and float64 in float64
        s = s.astype(np.float64)
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    s /= s.sum(axis=-1, keepdims=True)
    return s


def get_context_vector(attention_weights, hidden_encoder_matrix):
    """Weighted sum of the encoder states along the token axis: (T,), (T, n) -> (n,)."""
    return attention_weights @ hidden_encoder_matrix  # (n,)


def context_vector(encoder_states, decoder_state):
    """Q1 end to end: scores, scaled by sqrt(n), softmax, weighted sum of encoder states."""
    n = encoder_states.shape[-1]
    scores = get_scores(encoder_states, decoder_state)  # (T,)
    weights = get_attention_weights(scale_scores(scores, n))  # (T,)
    return get_context_vector(weights, encoder_states)  # (n,)


# --------------------------------------------------------------------------- Q2


def self_attention(X, W_Q, W_K, W_V):
    """Unmasked single-head self-attention of all tokens: (T, d) -> (T, d_v)."""
    Q = X @ W_Q  # (T, d_k)
    K = X @ W_K  # (T, d_k)
    V = X @ W_V  # (T, d_v)
    scores = Q @ K.T / math.sqrt(K.shape[-1])  # (T, T): row i = query i against every key
    return get_attention_weights(scores) @ V  # (T, d_v)


def self_attention_token(X, W_Q, W_K, W_V, i):
    """Output of token i alone: softmax((X[i] W_Q)(X W_K)^T / sqrt(d_k)) (X W_V) -> (d_v,)."""
    q = X[i] @ W_Q  # (d_k,)
    K = X @ W_K  # (T, d_k)
    V = X @ W_V  # (T, d_v)
    weights = get_attention_weights(K @ q / math.sqrt(K.shape[-1]))  # (T,)
    return weights @ V  # (d_v,)


# --------------------------------------------------------------------------- Q3


def _head_size(width, num_heads):
    """Width of one head; ValueError when num_heads does not divide the width."""
    if num_heads <= 0 or width % num_heads:
        raise ValueError(f"num_heads={num_heads} does not divide the width {width}")
    return width // num_heads


def split_heads(W, num_heads):
    """The num_heads column blocks of W, in order: (d, w) -> list of (d, w // num_heads)."""
    hs = _head_size(W.shape[-1], num_heads)
    return [W[:, h * hs:(h + 1) * hs] for h in range(num_heads)]  # num_heads x (d, hs)


def head_weight_shape(d_model, num_heads):
    """Shape of each W_i^Q (= W_i^K = W_i^V): it maps d_model to d_model // num_heads."""
    return (d_model, d_model // num_heads)


def head_output_shape(seq_len, d_model, num_heads):
    """Shape of one head's output: one d_model // num_heads row per token."""
    return (seq_len, d_model // num_heads)


def concat_shape(seq_len, d_model, num_heads):
    """Shape of Concat(head_1, ..., head_h): the heads side by side, num_heads * (d_model // num_heads) == d_model."""
    return (seq_len, d_model)


def w_o_shape(d_model, num_heads):
    """Shape of W^O for a layer whose output is as wide as its input."""
    return (num_heads * (d_model // num_heads), d_model)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
    """Multi-head self-attention, all heads at once: (T, d) -> (T, d_out of W_O).

    Head i uses the i-th column blocks of W_Q, W_K, W_V (as split_heads cuts
    them), is scaled by sqrt(d_k / num_heads); the heads are concatenated in
    order and multiplied by W_O.
    """
    T = X.shape[0]
    hs = _head_size(W_Q.shape[-1], num_heads)  # d_k of one head
    hv = _head_size(W_V.shape[-1], num_heads)  # d_v of one head
    Q = (X @ W_Q).reshape(T, num_heads, hs).transpose(1, 0, 2)  # (nh, T, hs)
    K = (X @ W_K).reshape(T, num_heads, hs).transpose(1, 0, 2)  # (nh, T, hs)
    V = (X @ W_V).reshape(T, num_heads, hv).transpose(1, 0, 2)  # (nh, T, hv)
    scores = Q @ K.transpose(0, 2, 1) / math.sqrt(hs)  # (nh, T, T)
    heads = get_attention_weights(scores) @ V  # (nh, T, hv)
    concat = heads.transpose(1, 0, 2).reshape(T, -1)  # (T, nh * hv): head 0 first
    return concat @ W_O  # (T, d_out)
