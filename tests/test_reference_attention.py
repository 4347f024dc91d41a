"""Independent evidence that assignments/attention/reference.py is right: HOMEWORK.md's numbers and torch."""

import numpy as np
import pytest
import torch

import importlib

from checker.spec import load_spec

ref = importlib.import_module(load_spec('attention')["reference"])  # assignments/attention/reference.py

H_E = np.array([[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
                [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]])
H_D = np.array([[0.58, -0.13, 0.94, 0.22], [0.45, 0.11, -0.88, 0.67]])
W_Q = np.array([[0.12, -0.87, 0.33, 0.45], [0.76, 0.21, -0.34, 0.67],
                [-0.55, 0.18, 0.29, -0.73], [0.03, -0.99, 0.42, 0.11]])
W_K = H_E.copy()
W_V = np.array([[0.58, -0.13, 0.94, 0.22], [-0.31, 0.66, -0.74, 0.09],
                [0.45, 0.11, -0.88, 0.67], [-0.92, 0.37, 0.28, -0.50]])
X = np.array([[0.12, -0.87, 0.33, 0.45], [0.76, 0.21, -0.34, 0.67], [0.03, -0.99, 0.42, 0.11]])

Q2_ALL = np.array([[0.053825, -0.254583, 0.671428, -0.081824],
                   [0.126008, -0.337654, 0.610113, -0.034071],
                   [0.019838, -0.21797, 0.698875, -0.104016]])

ATOL6 = 5e-7  # HOMEWORK.md rounds to 6 places


def test_q1_decoder_state_2_step_by_step():
    scores = ref.get_scores(H_E, H_D[1])
    np.testing.assert_allclose(scores, [-0.6053, -0.7374, -0.2628, 0.977], atol=1e-12)
    weights = ref.get_attention_weights(ref.scale_scores(scores, 4))
    np.testing.assert_allclose(weights, [0.187659, 0.175665, 0.222712, 0.413964], atol=ATOL6)
    context = ref.get_context_vector(weights, H_E)
    np.testing.assert_allclose(context, [0.095787, 0.149822, 0.246732, 0.38855], atol=ATOL6)
    np.testing.assert_allclose(ref.context_vector(H_E, H_D[1]), context, atol=1e-15)


def test_q1_common_wrong_answer_is_feature_axis_multiplication():
    weights = ref.get_attention_weights(ref.scale_scores(ref.get_scores(H_E, H_D[1]), 4))
    wrong = (H_E * weights).sum(axis=0)  # weight j scales feature column j, then sum over tokens
    np.testing.assert_allclose(wrong, [0.07694, -0.00527, 0.389746, 0.451221], atol=ATOL6)
    assert not np.allclose(wrong, ref.context_vector(H_E, H_D[1]), atol=1e-3)


def test_q1_decoder_state_1():
    np.testing.assert_allclose(ref.context_vector(H_E, H_D[0]),
                               [0.174417, -0.147478, 0.552182, 0.200911], atol=ATOL6)


def test_q1_context_vector_for_t_not_equal_n():
    rng = np.random.default_rng(0)
    enc, dec = rng.normal(size=(7, 3)), rng.normal(size=3)
    w = torch.softmax(torch.tensor(enc @ dec) / 3 ** 0.5, dim=0).numpy()
    got = ref.context_vector(enc, dec)
    assert got.shape == (3,)
    np.testing.assert_allclose(got, (w[:, None] * enc).sum(axis=0), atol=1e-12)


def test_q2_all_three_tokens():
    np.testing.assert_allclose(ref.self_attention(X, W_Q, W_K, W_V), Q2_ALL, atol=ATOL6)
    for i in range(3):
        np.testing.assert_allclose(ref.self_attention_token(X, W_Q, W_K, W_V, i), Q2_ALL[i], atol=ATOL6)


def test_softmax_large_scores_finite_and_exact():
    w = ref.get_attention_weights(np.array([1000.0, 1000.0, 0.0]))
    assert np.all(np.isfinite(w))
    np.testing.assert_allclose(w, [0.5, 0.5, np.exp(-1000.0) / 2], atol=0, rtol=1e-15)


def test_softmax_2d_is_over_last_axis_and_keeps_dtype():
    s = np.random.default_rng(1).normal(size=(3, 5)).astype(np.float32)
    w = ref.get_attention_weights(s)
    assert w.dtype == np.float32
    np.testing.assert_allclose(w, torch.softmax(torch.from_numpy(s), dim=-1).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(w.sum(axis=1), 1.0, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_functions_keep_input_dtype(dtype):
    x, w = X.astype(dtype), W_Q.astype(dtype)
    assert ref.context_vector(H_E.astype(dtype), H_D[1].astype(dtype)).dtype == dtype
    assert ref.self_attention(x, w, w, w).dtype == dtype
    assert ref.self_attention_token(x, w, w, w, 0).dtype == dtype
    assert ref.multi_head_attention(x, w, w, w, w, 2).dtype == dtype


@pytest.mark.parametrize("T,d,h", [(3, 4, 2), (10, 512, 8), (7, 96, 12), (1, 6, 1)])
def test_q3_shapes(T, d, h):
    assert ref.head_weight_shape(d, h) == (d, d // h)
    assert ref.head_output_shape(T, d, h) == (T, d // h)
    assert ref.concat_shape(T, d, h) == (T, d)
    assert ref.w_o_shape(d, h) == (d, d)
    rng = np.random.default_rng(T)
    Xr, W = rng.normal(size=(T, d)), rng.normal(size=(d, d))
    heads = ref.split_heads(W, h)
    assert len(heads) == h and all(b.shape == ref.head_weight_shape(d, h) for b in heads)
    np.testing.assert_array_equal(np.concatenate(heads, axis=1), W)
    assert (Xr @ heads[0]).shape == ref.head_output_shape(T, d, h)
    assert ref.multi_head_attention(Xr, W, W, W, W, h).shape == (T, d)


@pytest.mark.parametrize("width,h", [(4, 3), (10, 4), (6, 0)])
def test_split_heads_value_error(width, h):
    with pytest.raises(ValueError):
        ref.split_heads(np.zeros((4, width)), h)


@pytest.mark.parametrize("T,d,h", [(5, 8, 2), (3, 12, 3), (6, 8, 1)])
def test_multi_head_attention_matches_torch(T, d, h):
    rng = np.random.default_rng(d + h)
    Xr = rng.normal(size=(T, d))
    Wq, Wk, Wv, Wo = (rng.normal(size=(d, d)) for _ in range(4))
    mha = torch.nn.MultiheadAttention(d, h, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        # torch computes x @ in_proj_weight.T with in_proj_weight (3d, d): the row-vector W is its transpose.
        mha.in_proj_weight.copy_(torch.from_numpy(np.concatenate([Wq, Wk, Wv], axis=1).T))
        mha.out_proj.weight.copy_(torch.from_numpy(Wo.T))
        x = torch.from_numpy(Xr)[None]
        expected, _ = mha(x, x, x, need_weights=False)
    got = ref.multi_head_attention(Xr, Wq, Wk, Wv, Wo, h)
    np.testing.assert_allclose(got, expected[0].numpy(), rtol=1e-10, atol=1e-12)


def test_multi_head_attention_one_head_is_self_attention():
    got = ref.multi_head_attention(X, W_Q, W_K, W_V, np.eye(4), 1)
    np.testing.assert_allclose(got, Q2_ALL, atol=ATOL6)
