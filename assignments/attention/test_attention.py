"""Grading tests of the `attention` assignment (trusted side)."""
import numpy as np
import pytest

H_E = np.array([[0.64, -0.27, 0.89, -0.12], [-0.45, 0.33, 0.71, 0.08],
                [0.19, -0.94, 0.56, 0.37], [0.03, 0.85, -0.41, 0.76]])
H_D = np.array([[0.58, -0.13, 0.94, 0.22], [0.45, 0.11, -0.88, 0.67]])


@pytest.mark.question("Q1")
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_context_vector_handout(sub, ref, close, dtype):
    e, d = H_E.astype(dtype), H_D[1].astype(dtype)
    got = sub.call("context_vector", e, d)
    w = ref.get_attention_weights(ref.scale_scores(ref.get_scores(e, d), 4))
    close(got, ref.context_vector(e, d), what="context_vector(H_e, H_d[1])", dtype=dtype,
          hints=[("the weights were applied along the feature axis instead of the token axis", (e * w).sum(0))])


@pytest.mark.question("Q2")
def test_self_attention_random(sub, ref, close, rng):
    X, Wq, Wk, Wv = (rng.standard_normal(s) for s in [(5, 3), (3, 4), (3, 4), (3, 2)])
    close(sub.call("self_attention", X, Wq, Wk, Wv), ref.self_attention(X, Wq, Wk, Wv), what="self_attention")
