# Homework charlm -- mistake: the learned position table has vocab_size rows (`nn.Embedding(vocab_size, d_model)`), not block_size

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

# ------------------------------------------------------------------------ data


def build_vocab(text):
    """(stoi, itos) over the sorted unique characters of text: stoi {str: int}, itos {int: str}."""
    chars = sorted(set(text))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = {i: ch for i, ch in enumerate(chars)}
    return stoi, itos


def make_blocks(data, block_size):
    """All training windows of a 1-D token tensor: x, y each (L - block_size, block_size), y = x one ahead."""
    x = data[:-1].unfold(0, block_size, 1)  # (L - block_size, block_size): windows starting at 0 .. L-bs-1
    y = data[1:].unfold(0, block_size, 1)  # (L - block_size, block_size): the same windows shifted by one
    return x, y


# ------------------------------------------------------------------- attention


def causal_mask(T, device=None):
    """Bool (T, T), True where attention is NOT allowed: key position j > query position i."""
    return torch.ones(T, T, dtype=torch.bool, device=device).triu(diagonal=1)  # (T, T), strictly upper


def masked_attention(Q, K, V):
    """Causal scaled dot-product attention over the last two axes: (..., T, d_k)x2, (..., T, d_v) -> (..., T, d_v)."""
    T, d_k = Q.shape[-2], Q.shape[-1]
    att = (Q @ K.transpose(-2, -1)) / math.sqrt(d_k)  # (..., T, T): row i = query i against every key
    att = att.masked_fill(causal_mask(T, device=Q.device), float("-inf"))  # (..., T, T), future keys removed
    att = F.softmax(att, dim=-1)  # (..., T, T), over the keys 0..i
    return att @ V  # (..., T, d_v)


# ------------------------------------------------------------------ layer norm


def layer_norm(x, eps=1e-5):
    """Normalise the last axis: biased variance, eps inside the sqrt (== F.layer_norm without affine)."""
    mean = x.mean(dim=-1, keepdim=True)  # (..., 1)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)  # (..., 1), divided by d, not d - 1
    return (x - mean) / torch.sqrt(var + eps)  # (..., d)


# ------------------------------------------------------------------- positions


def sinusoidal_positions(T, d_model):
    """(T, d_model): PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d))."""
    pos = torch.arange(T, dtype=torch.float64)[:, None]  # (T, 1)
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)  # (ceil(d/2),): 0, 2, 4, ...
    angles = pos / 10000.0 ** (two_i / d_model)  # (T, ceil(d/2))
    pe = torch.zeros(T, d_model, dtype=torch.float64)  # (T, d)
    pe[:, 0::2] = torch.sin(angles)  # (T, ceil(d/2))
    pe[:, 1::2] = torch.cos(angles[:, : d_model // 2])  # (T, floor(d/2))
    return pe.to(torch.get_default_dtype())  # (T, d)


# ----------------------------------------------------------------------- model


class CausalSelfAttention(nn.Module):
    """Masked multi-head self-attention: (B, T, C) -> (B, T, C); fused q/k/v projection + output projection."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        if num_heads <= 0 or d_model % num_heads:
            raise ValueError(f"num_heads={num_heads} does not divide d_model={d_model}")
        self.num_heads = num_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        nh, hs = self.num_heads, C // self.num_heads
        q, k, v = self.qkv(x).split(C, dim=2)  # 3 x (B, T, C)
        q = q.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        k = k.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        v = v.view(B, T, nh, hs).transpose(1, 2)  # (B, nh, T, hs)
        y = masked_attention(q, k, v)  # (B, nh, T, hs)
        y = y.transpose(1, 2).reshape(B, T, C)  # (B, T, C), heads side by side
        return self.proj(y)  # (B, T, C)


class MLP(nn.Module):
    """Per-token feed-forward network: C -> 4C -> C with GELU."""

    def __init__(self, d_model):
        super().__init__()
        self.fc = nn.Linear(d_model, 4 * d_model)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * d_model, d_model)

    def forward(self, x):
        return self.proj(self.gelu(self.fc(x)))  # (B, T, C)


class Block(nn.Module):
    """Pre-norm decoder block: x = x + attn(LN(x)); x = x + MLP(LN(x))."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))  # (B, T, C)
        x = x + self.mlp(self.ln_2(x))  # (B, T, C)
        return x


class CharTransformer(nn.Module):
    """Causal character-level language model: (B, T) token ids, T <= block_size -> (B, T, V) logits."""

    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.token_embedding = nn.Embedding(vocab_size, d_model)
        self.position_embedding = nn.Embedding(vocab_size, d_model)
        self.blocks = nn.ModuleList(Block(d_model, num_heads) for _ in range(num_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        B, T = idx.shape
        if T > self.block_size:
            raise ValueError(f"sequence of length {T} is longer than block_size={self.block_size}")
        pos = torch.arange(T, device=idx.device)  # (T,)
        x = self.token_embedding(idx) + self.position_embedding(pos)  # (B, T, C)
        for block in self.blocks:
            x = block(x)  # (B, T, C)
        x = self.ln_f(x)  # (B, T, C)
        return self.lm_head(x)  # (B, T, V)
