"""Q1: context vector of dot-product attention (homework 1)."""
import math

import numpy as np


def get_scores(matrix, vector):
    return np.einsum("tn,n->t", matrix, vector)


def scale_scores(scores, n):
    return scores / math.sqrt(n)


def get_attention_weights(scores):
    z = np.asarray(scores, dtype=np.float64)
    z = z - np.max(z, axis=-1, keepdims=True)
    p = np.exp(z)
    p /= np.sum(p, axis=-1, keepdims=True)
    return p


def get_context_vector(attention_weights, hidden_encoder_matrix):
    return np.einsum("t,tn->n", attention_weights, hidden_encoder_matrix)


def context_vector(encoder_states, decoder_state):
    scores = scale_scores(get_scores(encoder_states, decoder_state), encoder_states.shape[1])
    return get_context_vector(get_attention_weights(scores), encoder_states)


if __name__ == "__main__":
    H_e = np.array([[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
                    [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]])
    H_d = np.array([[0.58, -0.13, 0.94, 0.22], [0.45, 0.11, -0.88, 0.67]])
    print(context_vector(H_e, H_d[0]), context_vector(H_e, H_d[1]))
