# Homework 1 - attention by hand
# Mistake: the Q3 functions were written inside the file's demo block, which runs for
# `python main_guard.py` but not when the file is imported, as the grader does.

import numpy as np

def get_scores(matrix, vector):
    return matrix @ vector

def scale_scores(scores, n):
    return scores / np.sqrt(n)

def get_attention_weights(scores):
    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)

def get_context_vector(attention_weights, hidden_encoder_matrix):
    return attention_weights @ hidden_encoder_matrix

def context_vector(encoder_states, decoder_state):
    n = decoder_state.shape[0]
    w = get_attention_weights(scale_scores(get_scores(encoder_states, decoder_state), n))
    return get_context_vector(w, encoder_states)

def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return get_attention_weights(Q @ K.T / np.sqrt(K.shape[1])) @ V

def self_attention_token(X, W_Q, W_K, W_V, i):
    q = X[i] @ W_Q
    K, V = X @ W_K, X @ W_V
    return get_attention_weights(K @ q / np.sqrt(K.shape[1])) @ V


if __name__ == '__main__':
    def split_heads(W, num_heads):
        if W.shape[1] % num_heads != 0:
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
        heads = [self_attention(X, q, k, v) for q, k, v in
                 zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads))]
        return np.concatenate(heads, axis=1) @ W_O
    print('ok')

# Q3-text
# Several heads let the model look at different things at once: each head has its own softmax, so one head can follow syntax and another coreference. One wide head averages everything into one distribution. The cost is the same since each head has width d/h.
