"""Answer models of the `attention` grading tests (trusted side; never in the student kit).

What it is for: the numbers test_attention.py computes itself rather than asking the reference: a
softmax to make inputs with, and the known mistakes its hints name (no scaling, the wrong axis, the keys
made with W_Q, ...). Each is a step or an argument away from a right answer (`mistaken_context(enc, dec)`
with its defaults *is* Q1's context vector), so they live here, apart from the tests: the test file
reaches them through `checker.running.recorded.Answers`, which computes them in the full package and, in the student
kit (which does not ship this file), replays what they gave on the public tests' inputs.

What it is not: the reference solutions (`reference.py` beside this file, which the tests' `ref` is), or code a
worker runs. Only plain data, arrays and strings in and out: every result is recorded for the kit.
"""

import math

import numpy as np

def _f64(a):
    return np.asarray(a, dtype=np.float64)


def softmax(s, axis=-1):
    s = np.asarray(s, dtype=np.float64)
    e = np.exp(s - s.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def softmax_naive(s):
    """A softmax without the max subtraction (overflows for large scores)."""
    with np.errstate(all="ignore"):
        e = np.exp(np.asarray(s, dtype=np.float64))
        return e / e.sum(axis=-1, keepdims=True)


def softmax_global_max(s):
    """A softmax that subtracts the maximum of the whole array, not of each row."""
    s = np.asarray(s, dtype=np.float64)
    with np.errstate(all="ignore"):
        e = np.exp(s - s.max())
        return e / e.sum(axis=-1, keepdims=True)


def softmax_axis0(s):
    return softmax(s, axis=0)


def softmax_whole_array(s):
    s = _f64(s)
    e = np.exp(s - s.max())
    return e / e.sum()


def abs_normalised(s, axis=-1):
    """Weights made by dividing the scores by the sum of their absolute values (not a softmax)."""
    s = _f64(s)
    with np.errstate(all="ignore"):
        return s / np.abs(s).sum(axis=axis, keepdims=True)


SOFTMAXES = {"softmax": softmax, "axis0": softmax_axis0, "abs": abs_normalised}


def mistaken_softmaxes(s):
    """{mistake: the weights it gives for the scores s, or None where it cannot show}."""
    return {"overflow": softmax_naive(s), "global_max": softmax_global_max(s),
            "wrong_axis": softmax_axis0(s) if np.ndim(s) == 2 else None,
            "whole_array": softmax_whole_array(s) if np.ndim(s) == 2 and np.shape(s)[0] > 1 else None,
            "abs_norm": abs_normalised(s)}


def columns_of_matrix(matrix, vector):
    """get_scores with the dot products taken with the columns: matrix.T @ vector."""
    return _f64(matrix).T @ _f64(vector)


def scale_mistakes(s, n):
    """{mistake: scale_scores(s, n) as it gives it}: divided by n, by n/2 (`n**1/2`), by 2n
    (`s / n**1/2`), by sqrt(4) whatever n, and multiplied by sqrt(n)."""
    s = _f64(s)
    return {"by_n": s / n, "half": s / (n / 2), "twice": s / (2 * n), "fixed": s / 2.0, "times": s * math.sqrt(n)}


def combine_mistakes(w, H, H_E):
    """Mistaken answers of get_context_vector(w, H): along the feature axis (where the shapes let it
    run), the handout's H_e (`H_E`) used instead of H (likewise), the plain average of H."""
    w, H, H_E = _f64(w), _f64(H), _f64(H_E)
    T, n = H.shape
    return {"feature_sum": (H * w).sum(0) if n in (1, T) else None,
            "feature_matmul": H @ w if n == T else None,
            "handout_h_e": (w[:, None] * H_E).sum(0) if T in (1, 4) else None,
            "averaged": H.mean(0)}


def mistaken_context(enc, dec, *, scale="sqrt", enc_scores=None, enc_sum=None, weights="softmax"):
    """Q1 end to end with one mistake: scale in {"sqrt", "none", "n", "T", "half", "twice", "fixed"};
    enc_scores/enc_sum replace enc in a step; weights: what made the weights of the scaled scores."""
    enc, dec = _f64(enc), _f64(dec)
    es = enc if enc_scores is None else _f64(enc_scores)
    ew = enc if enc_sum is None else _f64(enc_sum)
    n = dec.shape[-1]
    scores = es @ dec
    div = {"sqrt": math.sqrt(n), "none": 1.0, "n": float(n), "T": math.sqrt(len(es)), "half": n / 2,
           "twice": 2.0 * n, "fixed": 2.0}[scale]
    return SOFTMAXES[weights](scores / div) @ ew


def context_mistakes(enc, dec, H_E):
    """{mistake: context_vector(enc, dec) with it, or None where it cannot show} and the combine step's
    mistakes on the right weights (`combine`; `H_E` the handout's encoder states)."""
    enc, dec = _f64(enc), _f64(dec)
    n = dec.shape[-1]
    return {"none": mistaken_context(enc, dec, scale="none"), "n": mistaken_context(enc, dec, scale="n"),
            "T": mistaken_context(enc, dec, scale="T") if len(enc) != n else None,
            "half": mistaken_context(enc, dec, scale="half") if n != 4 else None,
            "twice": mistaken_context(enc, dec, scale="twice"),
            "fixed": mistaken_context(enc, dec, scale="fixed") if n != 4 else None,
            "abs": mistaken_context(enc, dec, weights="abs"),
            "combine": combine_mistakes(softmax(enc @ dec / math.sqrt(n)), enc, H_E)}


def mistaken_self_attention(X, Wq, Wk, Wv, *, scale=None, softmax_of="softmax", kq=False, query=None, key=None,
                            causal=False):
    """All-token self-attention with one mistake (scale: the divisor; kq: K Q^T instead of Q K^T; query, key:
    the matrix the queries or keys were projected with, when not W_Q or W_K; causal: token i attends to tokens
    0..i only, a decoder's mask)."""
    X, Wq, Wk, Wv = map(_f64, (X, Wq, Wk, Wv))
    Q, K, V = X @ (Wq if query is None else _f64(query)), X @ (Wk if key is None else _f64(key)), X @ Wv
    S = K @ Q.T if kq else Q @ K.T
    div = math.sqrt(K.shape[-1]) if scale is None else scale
    S = S / div
    if causal:
        S = np.where(np.triu(np.ones(S.shape, dtype=bool), k=1), -np.inf, S)
    return SOFTMAXES[softmax_of](S) @ V


def self_attention_mistakes(X, Wq, Wk, Wv):
    """{mistake: self_attention(X, Wq, Wk, Wv) with it, all tokens, or None where it cannot show}."""
    X, Wq, Wk, Wv = map(_f64, (X, Wq, Wk, Wv))
    d, dk = X.shape[-1], Wk.shape[-1]
    m = lambda **kw: mistaken_self_attention(X, Wq, Wk, Wv, **kw)  # noqa: E731
    return {"none": m(scale=1.0), "n": m(scale=float(dk)), "half": m(scale=dk / 2) if dk != 4 else None,
            "twice": m(scale=2.0 * dk), "d_v": m(scale=math.sqrt(Wv.shape[-1])) if Wv.shape[-1] != dk else None,
            "fixed": m(scale=2.0) if dk != 4 else None,
            "transposed": mistaken_self_attention(X, Wq.T, Wk.T, Wv.T)
            if Wq.shape[0] == Wq.shape[1] == Wk.shape[1] == Wv.shape[1] else None,
            "weights": softmax((X @ Wq) @ (X @ Wk).T / math.sqrt(dk)),
            "d_model": m(scale=math.sqrt(d)) if d != dk else None,
            "wrong_axis": m(softmax_of="axis0"), "kq": m(kq=True),
            "query_wk": m(query=Wk) if Wk.shape == Wq.shape else None,
            "query_wv": m(query=Wv) if Wv.shape == Wq.shape else None,
            "key_wq": m(key=Wq) if Wk.shape == Wq.shape else None,
            "key_wv": m(key=Wv) if Wv.shape == Wk.shape else None,
            "abs": m(softmax_of="abs"), "T": m(scale=math.sqrt(X.shape[0])) if X.shape[0] != dk else None,
            # row i holds token i-1's answer (the last token's for row 0): an off-by-one in the token index
            "previous_row": np.roll(m(), 1, axis=0) if len(X) > 1 else None,
            "causal": m(causal=True) if len(X) > 1 else None}


def scores_and_values(X, Wq, Wk, Wv):
    """The scaled scores Q K^T / sqrt(d_k) and the values X W_V: what a softmax (the student's own, for
    carried credit) turns into self-attention."""
    X, Wq, Wk, Wv = map(_f64, (X, Wq, Wk, Wv))
    Q, K = X @ Wq, X @ Wk
    return Q @ K.T / math.sqrt(K.shape[-1]), X @ Wv


def heads_scores_and_values(X, Wq, Wk, Wv, h):
    """[(scores, values)] of each of the h heads (contiguous column blocks): what a softmax turns into the
    heads of multi_head_attention."""
    X, Wq, Wk, Wv = map(_f64, (X, Wq, Wk, Wv))
    hs = Wq.shape[1] // h
    out = []
    for i in range(h):
        c = slice(i * hs, (i + 1) * hs)
        Q, K, V = X @ Wq[:, c], X @ Wk[:, c], X @ Wv[:, c]
        out.append((Q @ K.T / math.sqrt(hs), V))
    return out


def split_mistakes(W, h):
    """{mistake: split_heads(W, h) with it, stacked, or None where it cannot show}."""
    W = _f64(W)
    return {"rows": np.stack(np.split(W, h, axis=0)) if W.shape[0] % h == 0 else None,
            "interleaved": np.stack([W[:, i::h] for i in range(h)])}


def mistaken_mha(X, Wq, Wk, Wv, Wo, h, *, scale=None, softmax_of="softmax", interleaved=False, apply_wo=True,
                 reverse=False, stacked=False, keys_q=False, stacked_last=False, wo_transposed=False,
                 split_reshaped=False):
    """Multi-head attention with one mistake, head by head (scale: the divisor of every head; reverse:
    the heads concatenated last first; stacked_last: np.stack(heads, axis=-1) reshaped to (T, d), each
    token's features interleaved head by head; wo_transposed: C @ W_O.T; split_reshaped: Q, K, V of shape
    (T, d) reshaped to (h, T, d/h) without moving the token axis, which mixes the tokens' rows)."""
    X, Wq, Wk, Wv, Wo = map(_f64, (X, Wq, Wk, Wv, Wo))
    d = Wq.shape[1]
    hs = d // h
    heads = []
    T = X.shape[0]
    for i in range(h):
        cols = np.arange(i, d, h) if interleaved else np.arange(i * hs, (i + 1) * hs)
        Q, K, V = X @ Wq[:, cols], X @ (Wq if keys_q else Wk)[:, cols], X @ Wv[:, cols]
        if split_reshaped:  # (X @ W).reshape(h, T, d/h)[i]
            Q, K, V = ((X @ W).reshape(h, T, hs)[i] for W in (Wq, Wq if keys_q else Wk, Wv))
        div = math.sqrt(hs) if scale is None else scale
        heads.append(SOFTMAXES[softmax_of](Q @ K.T / div) @ V)
    C = np.concatenate(heads[::-1] if reverse else heads, axis=1)
    if stacked:  # np.array(heads) is (h, T, d/h): reshaped to (T, d) without moving the head axis
        C = np.array(heads).reshape(X.shape[0], -1)
    if split_reshaped:  # the heads' (h, T, d/h) moved back to (T, h, d/h) as the student does
        C = np.array(heads).transpose(1, 0, 2).reshape(T, -1)
    if stacked_last:  # (T, d/h, h): feature j of head i lands in column j*h + i
        C = np.stack(heads, axis=-1).reshape(X.shape[0], -1)
    if apply_wo and wo_transposed:
        return C @ Wo.T
    return C @ Wo if apply_wo else C


def mha_mistakes(X, Wq, Wk, Wv, Wo, h):
    """{mistake: multi_head_attention(X, Wq, Wk, Wv, Wo, h) with it, or None where it cannot show}."""
    d = _f64(Wq).shape[1]
    m = lambda **kw: mistaken_mha(X, Wq, Wk, Wv, Wo, h, **kw)  # noqa: E731
    return {"d_k": m(scale=float(d // h)) if d // h > 1 else None,
            "d_model": m(scale=math.sqrt(d)) if h > 1 else None,
            "none": m(scale=1.0), "half": m(scale=(d // h) / 2) if d // h != 4 else None,
            # sqrt(num_heads): the same as the right scale where h * h = d, as sqrt(d_model) where h = d
            "heads": m(scale=math.sqrt(h)) if 1 < h and h * h != d and h != d else None,
            "twice": m(scale=2.0 * (d // h)), "wrong_axis": m(softmax_of="axis0"),
            "interleaved": m(interleaved=True) if 1 < h < d else None,
            "stacked": m(stacked=True) if h > 1 and np.shape(X)[0] > 1 else None,
            "keys_q": m(keys_q=True), "no_wo": m(apply_wo=False), "reverse": m(reverse=True) if h > 1 else None,
            "stacked_last": m(stacked_last=True) if 1 < h < d else None,
            "split_reshaped": m(split_reshaped=True) if h > 1 and np.shape(X)[0] > 1 else None,
            "wo_transposed": m(wo_transposed=True) if _f64(Wo).shape[0] == _f64(Wo).shape[1]
            and not np.allclose(_f64(Wo), _f64(Wo).T) else None}
