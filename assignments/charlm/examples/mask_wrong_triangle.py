# Homework charlm -- mistake: the mask is on the wrong triangle (True where j < i)
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def build_vocab(text):
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    itos = {i: c for i, c in enumerate(chars)}
    return stoi, itos


def make_blocks(data, block_size):
    n = data.shape[0] - block_size
    idx = torch.arange(n)[:, None] + torch.arange(block_size)[None, :]
    return data[idx], data[idx + 1]


def causal_mask(T):
    return torch.tril(torch.ones(T, T), diagonal=-1).bool()


def masked_attention(Q, K, V):
    d_k = Q.shape[-1]
    att = Q @ K.transpose(-2, -1) / math.sqrt(d_k)
    att = att.masked_fill(causal_mask(Q.shape[-2]).to(Q.device), float("-inf"))
    att = torch.softmax(att, dim=-1)
    return att @ V


def layer_norm(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    var = x.var(-1, keepdim=True, unbiased=False)
    return (x - mean) / torch.sqrt(var + eps)


def sinusoidal_positions(T, d_model):
    pe = torch.zeros(T, d_model)
    for p in range(T):
        for j in range(0, d_model, 2):
            angle = p / (10000 ** (j / d_model))
            pe[p, j] = math.sin(angle)
            if j + 1 < d_model:
                pe[p, j + 1] = math.cos(angle)
    return pe


class SelfAttention(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.q = nn.Linear(d_model, d_model)
        self.k = nn.Linear(d_model, d_model)
        self.v = nn.Linear(d_model, d_model)
        self.out = nn.Linear(d_model, d_model)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q(x).view(B, T, self.h, C // self.h).transpose(1, 2)
        k = self.k(x).view(B, T, self.h, C // self.h).transpose(1, 2)
        v = self.v(x).view(B, T, self.h, C // self.h).transpose(1, 2)
        y = masked_attention(q, k, v)
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(d_model)
        self.sa = SelfAttention(d_model, num_heads)
        self.norm2 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))

    def forward(self, x):
        x = x + self.sa(self.norm1(x))
        x = x + self.mlp(self.norm2(x))
        return x


class CharTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.embed = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(block_size, d_model))
        self.layers = nn.ModuleList([Block(d_model, num_heads) for _ in range(num_layers)])
        self.norm = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.embed(idx) + self.pos[:T]
        for layer in self.layers:
            x = layer(x)
        return self.lm_head(self.norm(x))


stoi, itos = build_vocab("hello world")
print(stoi)
print(causal_mask(3))
