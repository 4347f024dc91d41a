"""Attention, layer norm and positions written by hand."""
import math

import torch


def causal_mask(T):
    rows = torch.arange(T).view(T, 1)
    cols = torch.arange(T).view(1, T)
    return cols > rows


def masked_attention(Q, K, V):
    scores = torch.einsum("...id,...jd->...ij", Q, K) / math.sqrt(K.shape[-1])
    scores = torch.where(causal_mask(Q.shape[-2]).to(Q.device), torch.full_like(scores, -float("inf")), scores)
    weights = torch.softmax(scores, dim=-1)
    return torch.einsum("...ij,...jd->...id", weights, V)


def layer_norm(x, eps=1e-5):
    n = x.shape[-1]
    mean = x.sum(-1, keepdim=True) / n
    centered = x - mean
    var = (centered * centered).sum(-1, keepdim=True) / n
    return centered / torch.sqrt(var + eps)


def sinusoidal_positions(T, d_model):
    pe = torch.zeros(T, d_model, dtype=torch.float64)
    for p in range(T):
        for i in range(0, d_model, 2):
            pe[p, i] = math.sin(p / 10000 ** (i / d_model))
            if i + 1 < d_model:
                pe[p, i + 1] = math.cos(p / 10000 ** (i / d_model))
    return pe
