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


def block_mistakes(data, block_size):
    """make_blocks(data, block_size) with known mistakes, numpy int arrays: "stride" [x of non-overlapping
    windows, one every block_size tokens, for each count a loop is likely to make: (L - 1) // block_size and
    L // block_size], "chunked" (x of the data cut into chunks of block_size + 1, `view(n, block_size + 1)`,
    each chunk less its last token; None where no chunk fits), "next_only" (y as the one token after each
    window, shape (L - block_size,))."""
    data = np.asarray(data)
    L, bs = len(data), block_size
    stride = [data[np.arange(n)[:, None] * bs + np.arange(bs)[None, :]]
              for n in sorted({(L - 1) // bs, L // bs}) if n > 0]
    n = L // (bs + 1)
    chunked = data[np.arange(n)[:, None] * (bs + 1) + np.arange(bs)[None, :]] if n > 0 else None
    return {"stride": stride, "chunked": chunked, "next_only": data[np.arange(L - bs) + bs]}


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
           "d_v": attend(Q, K, V, 1 / math.sqrt(d_v), upper, -1) if d_v != d_k else None,
           # `d_k ** 1/2` is d_k / 2 (equal to sqrt(d_k) at d_k = 4), `s / d_k ** 1/2` divides by 2 d_k
           "half_d_k": attend(Q, K, V, 2 / d_k, upper, -1) if d_k != 4 else None,
           "twice_d_k": attend(Q, K, V, 1 / (2 * d_k), upper, -1)}
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


def ln_one_pass(x, eps):
    """layer_norm(x, eps) with the variance taken in one pass, E[x^2] - E[x]^2, computed in x's own dtype (in
    float32 the two terms cancel on rows far from zero), as float64 numpy."""
    x = x.detach().cpu()
    mean = x.mean(-1, keepdim=True)
    var = (x * x).mean(-1, keepdim=True) - mean * mean
    return ((x - mean) / torch.sqrt(var + eps)).to(torch.float64).numpy()


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
            "eps_after_division": ((x - mean) / torch.sqrt(var_b) + eps).numpy(),
            "first_axis": None if over_first is None else over_first.numpy(),
            "whole_tensor": ((x - x.mean()) / torch.sqrt(x.var(unbiased=False) + eps)).numpy()
            if x.dim() > 1 else None,
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
            "column_doubled": build(torch.sin(freq(2 * two_i)), torch.cos(freq(2 * (two_i[:n_cos] + 1)))),
            "from_1": build(torch.sin((pos + 1) / 10000.0 ** (two_i / d)),
                            torch.cos((pos + 1) / 10000.0 ** (two_i[:n_cos] / d)))}


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


# the temperature of a model's attention (test_model_attention_scaled_by_the_head_width) -----------------------

IDENTITY_KINDS = ("pre-norm, no final norm", "pre-norm with a final norm", "post-norm", "post-norm with a final norm",
                  "no norm")
IDENTITY_INPUTS = tuple(f"{pos}, token embedding x {emb}" for pos in ("learned positions", "sinusoidal positions",
                                                                      "no positions") for emb in ("1", "sqrt(d_model)"))
IDENTITY_SPLITS = ("heads on consecutive features", "heads on every h-th feature")


def _ln(x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + eps)


def identity_structure(i):
    """The words for structure `i` of identity_model's second axis."""
    kind, rest = divmod(int(i), len(IDENTITY_SPLITS) * len(IDENTITY_INPUTS))
    split, inputs = divmod(rest, len(IDENTITY_INPUTS))
    return f"{IDENTITY_KINDS[kind]}, {IDENTITY_INPUTS[inputs]}, {IDENTITY_SPLITS[split]}"


def identity_structures_with_positions():
    """[structure i of identity_model's second axis: whether its input holds absolute positions (learned or
    sinusoidal)], a list of bools."""
    n = len(IDENTITY_KINDS) * len(IDENTITY_SPLITS) * len(IDENTITY_INPUTS)
    return ["no positions" not in identity_structure(i) for i in range(n)]


def identity_model(E, P, sines, ids, h, taus, cs=None):
    """(n, structures, T, vocab_size) float64: the logits a one-layer CharTransformer whose attention projections
    are the identity, biases zero, norms plain and MLP silent gives on the ids `ids` (T,), with its token
    embedding and output layer set to E (vocab_size, d_model), its scores divided by taus[i] and its attention's
    output multiplied by cs[i] (1 where `cs` is None), for each structure a right model may have (the second
    axis, identity_structure names each): pre-norm (x + attn(LN(x)), with or without a final LN), post-norm
    (LN(x + attn(x)), once or twice), no norm; positions from the learned P (block_size, d_model), the handout's
    `sines` (block_size, d_model) or none; the token embedding times 1 or sqrt(d_model); head i on the features
    i*D/h .. (i+1)*D/h - 1 or on i, i+h, ... (a `view(B, T, D/h, h)` split)."""
    E = np.asarray(E, dtype=np.float64)
    ids = np.asarray(ids)
    T, D = len(ids), E.shape[1]
    dh = D // h
    taus = np.asarray(taus, dtype=np.float64).reshape(-1)
    cs = np.ones_like(taus) if cs is None else np.asarray(cs, dtype=np.float64).reshape(-1)
    tok = E[ids]                                                                         # (T, D)
    pos = (np.asarray(P, dtype=np.float64)[:T], np.asarray(sines, dtype=np.float64)[:T], np.zeros((T, D)))
    x0 = np.stack([c * tok + p for p in pos for c in (1.0, math.sqrt(D))])              # (6, T, D)
    z = np.stack([_ln(x0), x0])                                                          # (2, 6, T, D): pre, post
    heads = np.stack([z.reshape(z.shape[:-1] + (h, dh)), z.reshape(z.shape[:-1] + (dh, h)).swapaxes(-1, -2)])
    heads = np.moveaxis(heads, -2, -3)                                                   # (2 splits, 2, 6, h, T, dh)
    s = heads @ heads.swapaxes(-1, -2)                                                   # (2, 2, 6, h, T, T)
    s = s[None] / taus[:, None, None, None, None, None, None]                            # (n, 2, 2, 6, h, T, T)
    s = np.where(np.triu(np.ones((T, T), dtype=bool), 1), -np.inf, s)
    w = np.exp(s - s.max(-1, keepdims=True))
    att = (w / w.sum(-1, keepdims=True)) @ heads[None]                                   # (n, 2, 2, 6, h, T, dh)
    att = np.moveaxis(att, -3, -2)                                                       # (n, 2, 2, 6, T, h, dh)
    att = np.stack([att[:, 0].reshape(att.shape[:1] + att.shape[2:-2] + (D,)),
                    att[:, 1].swapaxes(-1, -2).reshape(att.shape[:1] + att.shape[2:-2] + (D,))], axis=1)
    y = x0 + cs[:, None, None, None, None, None] * att                                   # (n, 2 splits, 2, 6, T, D)
    ln1 = _ln(y)
    hidden = np.stack([y[:, :, 0], ln1[:, :, 0], ln1[:, :, 1], _ln(ln1[:, :, 1]), y[:, :, 1]], axis=1)
    return hidden.reshape(len(taus), -1, T, D) @ E.T                                    # (n, 5 * 2 * 6, T, V)


def identity_logits(E, P, sines, ids, h, taus, cs=None):
    """identity_model in float32: what the tests compare with (within 2e-4), half the size in the kit's
    recording."""
    return identity_model(E, P, sines, ids, h, taus, cs).astype(np.float32)


def _relative_errors(logits, got):
    """max |logits - got| over (T, V), relative to max(1, the largest |logit|), for every leading index."""
    return np.abs(logits - got).max(axis=(-2, -1)) / np.maximum(1.0, np.abs(logits).max(axis=(-2, -1)))


def fit_identity_model(E, P, sines, ids, h, got, rtol):
    """Which single temperature tau (the scores divided by it) and output scale c (the attention's output
    multiplied by it) explain the logits `got` (T, vocab_size) of the model identity_model describes, in any of
    its structures: a list of {"tau", "c", "err" (identity_model's largest relative error there), "structure"
    (its words), "tau_determined" (False where another tau, 10% away, explains `got` as well with some c: a
    softmax the scores hardly move), "c_determined"}, the best first: within `rtol` before beyond it, a token
    embedding taken as it is before one times sqrt(d_model) (without positions, a post-norm model cannot tell
    the two apart: the scale cancels in its norms and moves into tau), then by error. Empty where nothing came
    within 100 * rtol.

    A grid of tau (0.05 .. 200) and c (1/64 .. 64) for every structure, then least squares in (log tau, log c)
    from the best grid points of the eight best structures."""
    from scipy.optimize import least_squares
    got = np.asarray(got, dtype=np.float64)
    scale = max(1.0, float(np.abs(got).max()))
    grid_t, grid_c = np.geomspace(0.05, 200.0, 33), np.geomspace(1 / 64, 64.0, 25)
    sse = np.stack([((identity_model(E, P, sines, ids, h, np.full_like(grid_c, t), grid_c) - got) ** 2)
                    .sum(axis=(-2, -1)) for t in grid_t])                               # (taus, cs, structures)
    flat = sse.reshape(-1, sse.shape[-1])
    best_of = flat.argmin(axis=0)                                                        # per structure
    order = np.argsort(flat[best_of, np.arange(flat.shape[1])])[:8]

    def logits(s, t, c):
        return identity_model(E, P, sines, ids, h, [t], [c])[0, s]

    def residuals(s, t, c):
        with np.errstate(all="ignore"):
            r = ((logits(s, t, c) - got) / scale).ravel()
        return np.nan_to_num(r, nan=1e6, posinf=1e6, neginf=-1e6)

    def refine(s, t, c, fixed=None):
        """(tau, c) fitted from (t, c); with `fixed` ("tau" or "c"), that one kept as given."""
        with np.errstate(all="ignore"):
            if fixed is None:
                x = least_squares(lambda x: residuals(s, *np.exp(x)), np.log([t, c]), method="lm",
                                  xtol=1e-12, ftol=1e-12).x
                return float(np.exp(x[0])), float(np.exp(x[1]))
            if fixed == "tau":
                x = least_squares(lambda x: residuals(s, t, np.exp(x[0])), np.log([c]), method="lm").x
                return t, float(np.exp(x[0]))
            x = least_squares(lambda x: residuals(s, np.exp(x[0]), c), np.log([t]), method="lm").x
            return float(np.exp(x[0])), c

    def err(s, t, c):
        with np.errstate(all="ignore"):
            e = float(_relative_errors(logits(s, t, c), got))
        return e if math.isfinite(e) else math.inf

    found = []
    for s in map(int, order):
        ti, ci = divmod(int(best_of[s]), len(grid_c))
        t, c = refine(s, grid_t[ti], grid_c[ci])
        if math.isfinite(t) and math.isfinite(c) and err(s, t, c) <= 100 * rtol:
            found.append({"tau": t, "c": c, "err": err(s, t, c), "structure": identity_structure(s), "_s": s})
    found.sort(key=lambda f: (f["err"] > rtol, "sqrt(d_model)" in f["structure"], f["err"]))
    for f in found[:3]:
        s, t, c, e = f.pop("_s"), f["tau"], f["c"], f["err"]
        bar = max(rtol, 2 * e)  # a move of 10% in one, the other fitted again: explains `got` as well?
        f["tau_determined"] = all(err(s, *refine(s, t2, c, fixed="tau")) > bar for t2 in (t * 1.1, t / 1.1))
        f["c_determined"] = all(err(s, *refine(s, t, c2, fixed="c")) > bar for c2 in (c * 1.1, c / 1.1))
    return [f for f in found[:3]]
