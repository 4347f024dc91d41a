import torch
import torch.nn as nn
from torch.nn import functional as F

dropout = 0.2


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    B, C, H, W = images.shape
    ph, pw = patch_size
    x = images.reshape(B, C, H // ph, ph, W // pw, pw)
    x = x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, -1, C * ph * pw)


class Head(nn.Module):
    """ one head of self-attention """

    def __init__(self, n_embd, head_size):
        super().__init__()
        self.key = nn.Linear(n_embd, head_size, bias=False)
        self.query = nn.Linear(n_embd, head_size, bias=False)
        self.value = nn.Linear(n_embd, head_size, bias=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B, T, C = x.shape
        k = self.key(x)   # (B,T,hs)
        q = self.query(x)  # (B,T,hs)
        wei = q @ k.transpose(-2, -1) * C**-0.5  # (B, T, T)
        wei = F.softmax(wei, dim=-1)
        wei = self.dropout(wei)
        v = self.value(x)
        out = wei @ v
        return out


class MultiHeadSelfAttention(nn.Module):
    """ multiple heads of self-attention in parallel """

    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        head_size = hidden_dim // num_heads
        self.heads = nn.ModuleList([Head(hidden_dim, head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(head_size * num_heads, hidden_dim)
        self.gain = nn.Parameter(torch.ones(1))  # a learnable output gain
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        out = self.dropout(self.proj(out))
        return out * self.gain


class FeedFoward(nn.Module):
    def __init__(self, n_embd):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embd, 4 * n_embd),
            nn.GELU(),
            nn.Linear(4 * n_embd, n_embd),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.sa = MultiHeadSelfAttention(n_embd, n_head)
        self.ffwd = FeedFoward(n_embd)
        self.ln1 = nn.LayerNorm(n_embd)
        self.ln2 = nn.LayerNorm(n_embd)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.ffwd(self.ln2(x))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch_dims = patch_dims
        ph, pw = (patch_dims, patch_dims) if isinstance(patch_dims, int) else patch_dims
        N = (H // ph) * (W // pw)
        self.linear_mapper = nn.Linear(C * ph * pw, hidden_dim)
        self.class_embedding = nn.Parameter(torch.rand(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(N + 1, hidden_dim) * 0.02)
        self.blocks = nn.Sequential(*[Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.ln_f = nn.LayerNorm(hidden_dim)
        self.mlp = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        n = images.shape[0]
        tokens = self.linear_mapper(patchify(images, self.patch_dims))
        tokens = torch.cat([self.class_embedding.expand(n, 1, -1), tokens], dim=1)
        out = tokens + self.positional_embedding
        out = self.blocks(out)
        return self.mlp(self.ln_f(out[:, 0]))
