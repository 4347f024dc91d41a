# Homework charlm -- mistake: nn.MultiheadAttention without batch_first=True on (B, T, C) input
import math
import torch
import torch.nn as nn
import torch.nn.functional as F

def build_vocab(text):
    chars = sorted(set(text))
    return {c: i for i, c in enumerate(chars)}, {i: c for i, c in enumerate(chars)}

def make_blocks(data, block_size):
    return data[:-1].unfold(0, block_size, 1), data[1:].unfold(0, block_size, 1)

def causal_mask(T):
    return torch.ones(T, T, dtype=torch.bool).triu(1)

def masked_attention(Q, K, V):
    s = Q @ K.transpose(-2, -1) / math.sqrt(K.shape[-1])
    s = s.masked_fill(causal_mask(s.shape[-1]).to(s.device), float("-inf"))
    return torch.softmax(s, -1) @ V

def layer_norm(x, eps=1e-5):
    m = x.mean(-1, keepdim=True)
    v = ((x - m) ** 2).mean(-1, keepdim=True)
    return (x - m) / torch.sqrt(v + eps)

def sinusoidal_positions(T, d_model):
    pe = torch.zeros(T, d_model)
    pos = torch.arange(T).float().unsqueeze(1)
    for i in range(0, d_model, 2):
        pe[:, i] = torch.sin(pos[:, 0] / 10000 ** (i / d_model))
        if i + 1 < d_model:
            pe[:, i + 1] = torch.cos(pos[:, 0] / 10000 ** (i / d_model))
    return pe

class Block(nn.Module):
    def __init__(self, d_model, num_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = nn.MultiheadAttention(d_model, num_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(), nn.Linear(4 * d_model, d_model))
    def forward(self, x):
        T = x.shape[1]
        mask = causal_mask(T).to(x.device)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask)[0]
        return x + self.ff(self.ln2(x))

class CharTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.tok = nn.Embedding(vocab_size, d_model)
        self.pos = nn.Parameter(torch.zeros(1, block_size, d_model))
        self.blocks = nn.ModuleList([Block(d_model, num_heads) for _ in range(num_layers)])
        self.ln = nn.LayerNorm(d_model)
        self.out = nn.Linear(d_model, vocab_size)
    def forward(self, idx):
        x = self.tok(idx) + self.pos[:, :idx.shape[1]]
        for b in self.blocks:
            x = b(x)
        return self.out(self.ln(x))
