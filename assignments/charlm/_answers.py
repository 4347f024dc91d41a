"""Answer models of the `charlm` grading tests (trusted side; never in the student kit).

What it is for: the numbers test_charlm.py computes itself rather than asking the reference: the
windows make_blocks must cut, torch's own layer norm as the expected value, and the known mistakes its
hints name (the mask on the wrong triangle, the softmax over the queries, the unbiased variance, sin and
cos swapped, ...). Each is a step or an argument away from a right answer (`attend` with the causal
mask and 1/sqrt(d_k) *is* masked_attention), so they live here, apart from the tests: the test file
reaches them through `checker.running.recorded.Answers`, which computes them in the full package and, in the student
kit (which does not ship this file), replays what they gave on the public tests' inputs.

What it is not: the reference solutions (`reference.py` beside this file, which the tests' `ref` is), or code a
worker runs. Only plain data, arrays and tensors in and out: every result is recorded for the kit.
"""

import math

import numpy as np
import torch
import torch.nn.functional as F


def blocks(data, block_size):
    """(x, y, one window too many) of make_blocks(data, block_size), as numpy int arrays."""
    data = np.asarray(data)
    L = len(data)
    idx = np.arange(L - block_size)[:, None] + np.arange(block_size)[None, :]
    extra = np.arange(L - block_size + 1)[:, None] + np.arange(block_size)[None, :]
    return data[idx], data[idx + 1], data[extra]


def attend(Q, K, V, scale, mask, dim):
    """Attention with the scores times `scale`, `mask` (True: hidden) filled with -inf, a softmax over `dim`."""
    s = (Q @ K.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=dim) @ V


def attention_mistakes(Q, K, V):
    """{mistake: masked_attention(Q, K, V) with it, in float64 numpy, or None where it cannot show};
    "batch_axes": [the softmax over each batch or heads axis]."""
    Q, K, V = (t.detach().to("cpu", torch.float64) for t in (Q, K, V))
    T, d_k, d_v = Q.shape[-2], Q.shape[-1], V.shape[-1]
    upper = torch.ones(T, T, dtype=torch.bool).triu(1)
    sc = 1 / math.sqrt(d_k)
    scores = Q @ K.transpose(-2, -1) * sc
    out = {"query_axis": attend(Q, K, V, sc, upper, -2),
           "diagonal": attend(Q, K, V, sc, torch.ones(T, T, dtype=torch.bool).triu(0), -1),
           "next_token": attend(Q, K, V, sc, torch.ones(T, T, dtype=torch.bool).triu(2), -1),
           "lower": attend(Q, K, V, sc, upper.T, -1), "inverted": attend(Q, K, V, sc, ~upper, -1),
           "none": attend(Q, K, V, 1.0, upper, -1), "d_k": attend(Q, K, V, 1 / d_k, upper, -1),
           "no_mask": attend(Q, K, V, sc, None, -1),
           "zero_fill": torch.softmax(scores.masked_fill(upper, 0.0), dim=-1) @ V,
           "after_softmax": torch.softmax(scores, dim=-1).masked_fill(upper, 0.0) @ V,
           "T": attend(Q, K, V, 1 / math.sqrt(T), upper, -1) if T > 1 and T != d_k else None,
           "d_v": attend(Q, K, V, 1 / math.sqrt(d_v), upper, -1) if d_v != d_k else None}
    out = {k: None if v is None else v.numpy() for k, v in out.items()}
    out["batch_axes"] = [attend(Q, K, V, sc, upper, axis).numpy() for axis in range(Q.dim() - 2)]
    return out


def scaled_by(Q, K, V, g):
    """masked_attention scaled by 1/sqrt(g) (a notebook global g) instead of 1/sqrt(d_k), float64 numpy."""
    Q, K, V = (t.detach().to("cpu", torch.float64) for t in (Q, K, V))
    T = Q.shape[-2]
    return attend(Q, K, V, 1 / math.sqrt(g), torch.ones(T, T, dtype=torch.bool).triu(1), -1).numpy()


def torch_layer_norm(x, eps):
    """torch's own layer norm of the last axis (no affine), in x's dtype and on its device."""
    return F.layer_norm(x, x.shape[-1:], eps=eps)


def ln_mistakes(x, eps, default=False):
    """{mistake: layer_norm(x, eps) with it, float64 numpy, or None where it cannot show}; "eps": {another
    eps: the right layer norm with it} (an ignored eps argument, or a default other than 1e-5)."""
    x = x.detach().to("cpu", torch.float64)
    mean = x.mean(-1, keepdim=True)
    var_b = x.var(-1, unbiased=False, keepdim=True)
    var_u = x.var(-1, unbiased=True, keepdim=True) if x.shape[-1] > 1 else var_b
    xt = x.transpose(0, -1) if x.dim() > 1 else x
    over_first = (F.layer_norm(xt, xt.shape[-1:], eps=eps).transpose(0, -1)
                  if x.dim() > 1 and x.shape[0] > 1 else None)
    others = (1e-6, 1e-8, 1e-3, 1e-4) if default else tuple(e for e in (1e-5, 1e-6, 1e-8, 1e-12) if e != eps)
    return {"unbiased": ((x - mean) / torch.sqrt(var_u + eps)).numpy(),
            "eps_on_std": ((x - mean) / (torch.sqrt(var_b) + eps)).numpy(),
            "unbiased_eps_on_std": ((x - mean) / (torch.sqrt(var_u) + eps)).numpy(),
            "no_eps": ((x - mean) / torch.sqrt(var_b)).numpy(),
            "first_axis": None if over_first is None else over_first.numpy(),
            "eps": {e: ((x - mean) / torch.sqrt(var_b + e)).numpy() for e in others}}


def pe_mistakes(T, d):
    """{mistake: sinusoidal_positions(T, d) with it, float64 numpy}."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]
    n_sin, n_cos = (d + 1) // 2, d // 2
    freq = lambda expo: pos / 10000.0 ** (expo / d)  # noqa: E731
    two_i = torch.arange(0, d, 2, dtype=torch.float64)  # 2i for every pair
    i = torch.arange(n_sin, dtype=torch.float64)

    def build(even, odd):
        pe = torch.zeros(T, d, dtype=torch.float64)
        pe[:, 0::2], pe[:, 1::2] = even, odd
        return pe.numpy()
    a = freq(two_i)
    return {"swapped": build(torch.cos(a), torch.sin(a[:, :n_cos])),
            "exponent_i": build(torch.sin(freq(i)), torch.cos(freq(i)[:, :n_cos])),
            "cos_own_index": build(torch.sin(a), torch.cos(freq(two_i[:n_cos] + 1))),
            "halves": torch.cat([torch.sin(a), torch.cos(a[:, :n_cos])], dim=1).numpy(),
            "column_doubled": build(torch.sin(freq(2 * two_i)), torch.cos(freq(2 * (two_i[:n_cos] + 1))))}


def vocab(text):
    """build_vocab(text)'s characters in order and stoi, and stoi in the order of first appearance."""
    chars = sorted(set(text))
    return chars, {c: i for i, c in enumerate(chars)}, {c: i for i, c in enumerate(dict.fromkeys(text))}


def masks(T):
    """causal_mask(T) and its mistakes, numpy bool: the diagonal hidden too, off by one (the next token
    seen), and additive (-inf on the hidden positions, 0 elsewhere)."""
    want = np.triu(np.ones((T, T), dtype=bool), 1)
    return {"want": want, "diagonal": np.triu(np.ones((T, T), dtype=bool), 0),
            "next_token": np.triu(np.ones((T, T), dtype=bool), 2), "additive": np.where(want, -np.inf, 0.0)}
