# Homework 1 - attention by hand
# Name: Jamie Student
# self_attention forgets the query and key projections (softmax(X X^T / sqrt(d)) X W_V), and
# multi_head_attention is one head of the full width (it never splits): with that self_attention the
# heads, concatenated, are one head, so no credit for Q2's mistake can be carried to it.
import numpy as np

def get_scores(matrix, vector):
    return matrix @ vector

def scale_scores(scores, n):
    return scores / np.sqrt(n)

#SOFTMAX
def get_attention_weights(scores):
    scores = np.asarray(scores)
    e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
#END

def get_context_vector(attention_weights, hidden_encoder_matrix):
    return attention_weights @ hidden_encoder_matrix

def context_vector(encoder_states, decoder_state):
    n = encoder_states.shape[1]
    return get_context_vector(get_attention_weights(scale_scores(get_scores(encoder_states, decoder_state), n)), encoder_states)

#SA
def self_attention_token(X, W_Q, W_K, W_V, i):
    return self_attention(X, W_Q, W_K, W_V)[i]

def self_attention(X, W_Q, W_K, W_V):
    # queries and keys are the tokens themselves; values are projected
    V = X @ W_V
    return get_attention_weights(X @ X.T / np.sqrt(X.shape[1])) @ V
#END

def split_heads(W, num_heads):
    if W.shape[1] % num_heads:
        raise ValueError("bad")
    return np.split(W, num_heads, axis=1)

def head_weight_shape(d_model, num_heads):
    return (d_model, d_model // num_heads)

def head_output_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model // num_heads)

def concat_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model)

def w_o_shape(d_model, num_heads):
    return (num_heads * (d_model // num_heads), d_model)

#MHA
def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
    # all heads at once: one attention over the full width, then the output projection
    return self_attention(X, W_Q, W_K, W_V) @ W_O
#END

