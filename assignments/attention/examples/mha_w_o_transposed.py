import numpy as np

# ---- Q1
def get_scores(matrix, vector):
    return np.asarray(matrix) @ np.asarray(vector)

def scale_scores(scores, n):
    return np.asarray(scores) / np.sqrt(n)

def get_attention_weights(scores):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def get_context_vector(attention_weights, hidden_encoder_matrix):
    return np.asarray(attention_weights) @ np.asarray(hidden_encoder_matrix)

def context_vector(encoder_states, decoder_state):
    n = np.asarray(encoder_states).shape[1]
    return get_context_vector(get_attention_weights(scale_scores(get_scores(encoder_states, decoder_state), n)), encoder_states)

# ---- Q2
def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    A = get_attention_weights(Q @ K.T / np.sqrt(K.shape[-1]))
    return A @ V

def self_attention_token(X, W_Q, W_K, W_V, i):
    return self_attention(X, W_Q, W_K, W_V)[i]

# ---- Q3
def split_heads(W, num_heads):
    if W.shape[1] % num_heads:
        raise ValueError("num_heads must divide the width")
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
    heads = [self_attention(X, q, k, v) for q, k, v in zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads))]
    return np.concatenate(heads, axis=-1) @ W_O.T

# Q3-text
# Each head has its own softmax so heads can attend to different tokens at once; one head of width d
# must average everything into one distribution, while h heads of width d/h cost about the same.
