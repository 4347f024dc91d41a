import numpy as np

def get_scores(matrix, vector):
    scores = []
    for row in matrix:
        scores.append(np.dot(row, vector))
    return np.array(scores)

def scale_scores(scores, n):
    return scores / np.sqrt(n)

def get_attention_weights(scores):
    # stable softmax
    e = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)

def get_context_vector(attention_weights, hidden_encoder_matrix):
    return np.sum(attention_weights[:, None] * hidden_encoder_matrix, axis=0)

def context_vector(encoder_states, decoder_state):
    n = encoder_states.shape[1]
    s = scale_scores(get_scores(encoder_states, decoder_state), n)
    return get_context_vector(get_attention_weights(s), encoder_states)

def self_attention_token(X, W_Q, W_K, W_V, i):
    q = X[i] @ W_Q
    K = X @ W_K
    V = X @ W_V
    w = get_attention_weights(scale_scores(K @ q, K.shape[1]))
    return get_context_vector(w, V)

def self_attention(X, W_Q, W_K, W_V):
    return np.stack([self_attention_token(X, W_Q, W_K, W_V, i) for i in range(X.shape[0])])

def split_heads(W, num_heads):
    return np.split(W, num_heads, axis=1)

def head_weight_shape(d_model, num_heads):
    return (d_model, int(d_model / num_heads))

def head_output_shape(seq_len, d_model, num_heads):
    return (seq_len, int(d_model / num_heads))

def concat_shape(seq_len, d_model, num_heads):
    return (seq_len, d_model)

def w_o_shape(d_model, num_heads):
    return (num_heads * (d_model // num_heads), d_model)

def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
    heads = []
    for wq, wk, wv in zip(split_heads(W_Q, num_heads), split_heads(W_K, num_heads), split_heads(W_V, num_heads)):
        heads.append(self_attention(X, wq, wk, wv))
    return np.concatenate(heads, axis=1) @ W_O

# Q3-text
# Several heads can attend to different positions and learn different
# relations (syntax, coreference, ...) while costing about the same as one
# wide head. One head averages everything into one distribution.
