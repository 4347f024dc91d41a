# Homework charlm -- right: Karpathy's per-head `Head` modules, each with one fused qkv = Linear(n_embd, 3 * head_size)
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



class Head(nn.Module):
    """ one head of self-attention (q, k, v from one layer) """
    def __init__(self, n_embd, head_size, block_size, dropout=0.2):
        super().__init__()
        self.qkv = nn.Linear(n_embd, 3 * head_size, bias=False)
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B,T,C = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        wei = q @ k.transpose(-2,-1) * k.shape[-1]**-0.5 # (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf'))
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        return wei @ v

class MultiHeadAttention(nn.Module):
    def __init__(self, n_embd, num_heads, head_size, block_size, dropout=0.2):
        super().__init__()
        self.heads = nn.ModuleList([Head(n_embd, head_size, block_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, n_embd)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        out = self.dropout(self.proj(out))
        return out

class FeedFoward(nn.Module):
    def __init__(self, n_embd, dropout=0.2):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.ReLU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)

class Block(nn.Module):
    def __init__(self, n_embd, n_head, block_size):
        super().__init__()
        head_size = n_embd // n_head
        self.sa = MultiHeadAttention(n_embd, n_head, head_size, block_size)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x

class CharTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.token_embedding_table = nn.Embedding(vocab_size, d_model)
        self.position_embedding_table = nn.Embedding(block_size, d_model)
        self.blocks = nn.Sequential(*[Block(d_model, n_head=num_heads, block_size=block_size) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(d_model) # final layer norm
        self.lm_head = nn.Linear(d_model, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape
        tok_emb = self.token_embedding_table(idx) # (B,T,C)
        pos_emb = self.position_embedding_table(torch.arange(T, device=idx.device)) # (T,C)
        x = tok_emb + pos_emb # (B,T,C)
        x = self.blocks(x) # (B,T,C)
        x = self.ln_f(x) # (B,T,C)
        logits = self.lm_head(x) # (B,T,vocab_size)
        if targets is None:
            return logits
        B, T, C = logits.shape
        loss = F.cross_entropy(logits.view(B*T, C), targets.view(B*T))
        return logits, loss
