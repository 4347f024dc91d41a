# HW1 attention -- I do everything in float32 like on the GPU in lecture
# My own exception for bad head counts (it is a ValueError, so `except ValueError` still catches it)
import numpy as np


class HeadCountError(ValueError):
    pass


def _f32(a):
    return np.asarray(a, dtype=np.float32)


def get_scores(matrix, vector):
    return _f32(matrix) @ _f32(vector)


def scale_scores(scores, n):
    return _f32(scores) / np.float32(np.sqrt(n))


def get_attention_weights(scores):
    s = _f32(scores)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def get_context_vector(attention_weights, hidden_encoder_matrix):
    return _f32(attention_weights) @ _f32(hidden_encoder_matrix)


def context_vector(encoder_states, decoder_state):
    s = scale_scores(get_scores(encoder_states, decoder_state), len(decoder_state))
    return get_context_vector(get_attention_weights(s), encoder_states)


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = _f32(X) @ _f32(W_Q), _f32(X) @ _f32(W_K), _f32(X) @ _f32(W_V)
    return get_attention_weights(Q @ K.T / np.float32(np.sqrt(K.shape[1]))) @ V


def self_attention_token(X, W_Q, W_K, W_V, i):
    return self_attention(X, W_Q, W_K, W_V)[i]


def split_heads(W, num_heads):
    if W.shape[1] % num_heads:
        raise HeadCountError(f"{num_heads} heads do not divide {W.shape[1]} columns")
    return np.split(W, num_heads, axis=1)


def head_weight_shape(d_model, num_heads):
    return (d_model, d_model // num_heads)


def head_output_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model // num_heads)


def concat_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model)


def w_o_shape(d_model, num_heads):
    return (num_heads * (d_model // num_heads), d_model)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
    heads = [self_attention(X, q, k, v) for q, k, v in
             zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads))]
    return np.concatenate(heads, axis=1) @ _f32(W_O)
