"""Vision Transformer homework -- mistake: every encoder block reads the embeddings (the loop keeps
only the last block's output), so the blocks are not chained."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    ph, pw = (patch_size, patch_size) if isinstance(patch_size, int) else patch_size
    return F.unfold(images, kernel_size=(ph, pw), stride=(ph, pw)).transpose(1, 2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.out = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, x):
        B, N, D = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (t.reshape(B, N, self.num_heads, self.head_dim).transpose(1, 2) for t in (q, k, v))
        att = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.head_dim), dim=-1)
        y = (att @ v).transpose(1, 2).reshape(B, N, D)
        return self.out(y)


class Block(nn.Module):
    def __init__(self, hidden_dim, num_heads, mlp_dim=None, p=0.1):
        super().__init__()
        mlp_dim = mlp_dim or 4 * hidden_dim
        self.ln1 = nn.LayerNorm(hidden_dim)
        self.attn = MultiHeadSelfAttention(hidden_dim, num_heads)
        self.ln2 = nn.LayerNorm(hidden_dim)
        # feed-forward part of the block
        self.ffn = nn.Sequential(nn.Linear(hidden_dim, mlp_dim), nn.GELU(), nn.Dropout(p), nn.Linear(mlp_dim, hidden_dim))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        x = x + self.ffn(self.ln2(x))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch_dims = (patch_dims, patch_dims) if isinstance(patch_dims, int) else tuple(patch_dims)
        ph, pw = self.patch_dims
        N = (H // ph) * (W // pw)
        self.embed = nn.Linear(C * ph * pw, hidden_dim)
        self.class_embedding = nn.Parameter(torch.randn(1, 1, hidden_dim) * 0.02)
        self.positional_embedding = nn.Parameter(torch.randn(1, N + 1, hidden_dim) * 0.02)
        self.blocks = nn.ModuleDict({'b' + chr(97 + i): Block(hidden_dim, num_heads) for i in range(num_encoder_blocks)})
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        x = self.embed(patchify(images, self.patch_dims))
        cls = self.class_embedding.expand(x.shape[0], -1, -1)
        x = torch.cat([cls, x], dim=1) + self.positional_embedding
        out = x
        for blk in self.blocks.values():
            out = blk(x)  # each block sees the tokens
        return self.head(self.norm(out[:, 0]))
