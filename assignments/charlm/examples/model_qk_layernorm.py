# Homework charlm -- mistake: each head's queries and keys go through a LayerNorm of their own before the
# scores (timm's qk_norm=True): the scores are a dot product of normalised vectors, not q . k / sqrt(d_k).
# The rest is correct_nanogpt_init_sinusoidal.py (nanoGPT-style, sinusoidal positions as a buffer).

import math
import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(1337)

# ---------------- data ----------------

def build_vocab(text):
    chars = sorted(list(set(text)))
    stoi = {ch: i for i, ch in enumerate(chars)}
    itos = chars  # a list works the same as a dict: itos[i]
    return stoi, itos


def make_blocks(data, block_size):
    xs = []
    ys = []
    for i in range(len(data) - block_size):
        xs.append(data[i:i + block_size])
        ys.append(data[i + 1:i + block_size + 1])
    return torch.stack(xs), torch.stack(ys)


# ---------------- attention ----------------

def causal_mask(T):
    return torch.triu(torch.ones(T, T), diagonal=1) == 1


def masked_attention(Q, K, V):
    d_k = Q.size(-1)
    T = Q.size(-2)
    scores = torch.matmul(Q, K.transpose(-2, -1)) / math.sqrt(d_k)
    scores = scores.masked_fill(causal_mask(T).to(Q.device), float("-inf"))
    # stable softmax by hand
    scores = scores - scores.max(dim=-1, keepdim=True).values
    w = torch.exp(scores)
    w = w / w.sum(dim=-1, keepdim=True)
    return torch.matmul(w, V)


# ---------------- layer norm ----------------

def layer_norm(x, eps=1e-5):
    mu = x.mean(dim=-1, keepdim=True)
    var = x.var(dim=-1, keepdim=True, unbiased=False)
    return (x - mu) / torch.sqrt(var + eps)


# ---------------- positions ----------------

def sinusoidal_positions(T, d_model):
    pe = torch.zeros(T, d_model)
    position = torch.arange(0, T, dtype=torch.float).unsqueeze(1)
    div_term = torch.exp(torch.arange(0, d_model, 2).float() * (-math.log(10000.0) / d_model))
    pe[:, 0::2] = torch.sin(position * div_term)
    pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])
    return pe



# ---------------- model (nanoGPT style) ----------------

class CausalSelfAttention(nn.Module):
    def __init__(self, d_model, num_heads, block_size, dropout):
        super().__init__()
        assert d_model % num_heads == 0
        self.c_attn = nn.Linear(d_model, 3 * d_model)
        self.c_proj = nn.Linear(d_model, d_model)
        self.attn_dropout = nn.Dropout(dropout)
        self.resid_dropout = nn.Dropout(dropout)
        self.n_head = num_heads
        self.n_embd = d_model
        self.q_norm = nn.LayerNorm(d_model // num_heads)  # qk-norm, as timm's Attention(qk_norm=True)
        self.k_norm = nn.LayerNorm(d_model // num_heads)
        self.register_buffer("bias", torch.tril(torch.ones(block_size, block_size)).view(1, 1, block_size, block_size))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        q, k = self.q_norm(q), self.k_norm(k)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        att = self.attn_dropout(att)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    def __init__(self, d_model, dropout):
        super().__init__()
        self.c_fc = nn.Linear(d_model, 4 * d_model)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * d_model, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    def __init__(self, d_model, num_heads, block_size, dropout):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d_model)
        self.attn = CausalSelfAttention(d_model, num_heads, block_size, dropout)
        self.ln_2 = nn.LayerNorm(d_model)
        self.mlp = MLP(d_model, dropout)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        x = x + self.mlp(self.ln_2(x))
        return x


class CharTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers, dropout=0.0):
        super().__init__()
        self.block_size = block_size
        self.wte = nn.Embedding(vocab_size, d_model)
        self.register_buffer("wpe", sinusoidal_positions(block_size, d_model))  # fixed, not learned
        self.drop = nn.Dropout(dropout)
        self.h = nn.ModuleList([Block(d_model, num_heads, block_size, dropout) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.lm_head = nn.Linear(d_model, vocab_size, bias=False)
        self.wte.weight = self.lm_head.weight  # weight tying, as in GPT-2
        # nanoGPT's initialisation: N(0, 0.02) weights, zero biases, residual projections scaled down
        self.apply(self._init_weights)
        for pn, p in self.named_parameters():
            if pn.endswith("c_proj.weight"):
                torch.nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * num_layers))

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        B, T = idx.size()
        assert T <= self.block_size
        pos = torch.arange(0, T, dtype=torch.long, device=idx.device)
        tok_emb = self.wte(idx)
        pos_emb = self.wpe[pos]
        x = self.drop(tok_emb + pos_emb)
        for block in self.h:
            x = block(x)
        x = self.ln_f(x)
        return self.lm_head(x)
