# Homework charlm -- mistake: the scores divided by sqrt(d_model), not sqrt(d_model/num_heads), its attention's q, k, v and output projections packed into one flat parameter viewed as (4, D, D)
# (my solution; I trained it on tiny shakespeare on colab, see the bottom)

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


# quick checks
print(causal_mask(4))
x = torch.randn(2, 5, 8)
print(torch.allclose(layer_norm(x), F.layer_norm(x, (8,)), atol=1e-5))



class PackedAttention(nn.Module):
    """Causal multi-head attention whose q, k, v and output projections live in one flat parameter."""

    def __init__(self, d_model, num_heads):
        super().__init__()
        self.h = num_heads
        self.blob = nn.Parameter(torch.randn(4 * d_model * d_model) / math.sqrt(d_model))
        self.bias = nn.Parameter(torch.zeros(4 * d_model))

    def forward(self, x, mask):
        B, T, D = x.shape
        W = self.blob.view(4, D, D)
        b = self.bias.view(4, D)
        q, k, v = [(x @ W[i] + b[i]).view(B, T, self.h, D // self.h).transpose(1, 2) for i in range(3)]
        s = q @ k.transpose(-2, -1) / math.sqrt(D)
        s = s.masked_fill(mask, float("-inf"))
        o = (s.softmax(-1) @ v).transpose(1, 2).reshape(B, T, D)
        return o @ W[3] + b[3]


# ---------------- model ----------------

class Block(nn.Module):
    def __init__(self, d_model, num_heads, dropout=0.1):
        super().__init__()
        self.ln1 = nn.LayerNorm(d_model)
        self.attn = PackedAttention(d_model, num_heads)
        self.ln2 = nn.LayerNorm(d_model)
        self.ff = nn.Sequential(
            nn.Linear(d_model, 4 * d_model),
            nn.ReLU(),
            nn.Linear(4 * d_model, d_model),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        T = x.size(1)
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool, device=x.device), diagonal=1)
        h = self.ln1(x)
        a = self.attn(h, mask)
        x = x + a
        x = x + self.ff(self.ln2(x))
        return x


class CharTransformer(nn.Module):
    def __init__(self, vocab_size, block_size, d_model, num_heads, num_layers):
        super().__init__()
        self.block_size = block_size
        self.tok_emb = nn.Embedding(vocab_size, d_model)
        # fixed sinusoidal positions (a buffer so .to() moves it)
        self.register_buffer("pos_emb", sinusoidal_positions(block_size, d_model))
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[Block(d_model, num_heads) for _ in range(num_layers)])
        self.ln_f = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab_size)

    def forward(self, idx):
        B, T = idx.shape
        assert T <= self.block_size
        x = self.tok_emb(idx) + self.pos_emb[:T]
        x = self.drop(x)
        x = self.blocks(x)
        x = self.ln_f(x)
        return self.head(x)


model = CharTransformer(65, 32, 64, 4, 2)
print(sum(p.numel() for p in model.parameters()), "parameters")

if __name__ == "__main__":
    with open("input.txt") as f:
        text = f.read()
    stoi, itos = build_vocab(text)
    data = torch.tensor([stoi[c] for c in text], dtype=torch.long)
    X, Y = make_blocks(data[:10000], 32)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step in range(2000):
        ix = torch.randint(len(X), (32,))
        logits = model(X[ix])
        loss = F.cross_entropy(logits.view(-1, logits.size(-1)), Y[ix].view(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 200 == 0:
            print(step, loss.item())
