"""ViT homework, lucidrains-style attention (to_q (D, D) and a fused to_kv (2D, D), einops heads) -- mistake: the scores
are scaled by D ** -0.5, the model's width, not by the width of a head.
"""
from einops import rearrange

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _pair(p):
    """An int patch size p means (p, p)."""
    return (p, p) if isinstance(p, int) else tuple(p)


def patchify(images, patch_size):
    """Cut images into non-overlapping tiles: (B, C, H, W) -> (B, N, C*P_h*P_w).

    Patches in row-major order over the grid, each flattened channel first, i.e.
    exactly F.unfold(images, P, stride=P).transpose(1, 2); like unfold, rows and
    columns that do not fill a whole patch are dropped. Views only (no copy of
    the pixels until the final reshape).
    """
    P_h, P_w = _pair(patch_size)
    B, C, H, W = images.shape
    gh, gw = H // P_h, W // P_w  # patch grid
    x = images[:, :, :gh * P_h, :gw * P_w]  # (B, C, gh*P_h, gw*P_w)
    x = x.reshape(B, C, gh, P_h, gw, P_w)  # (B, C, gh, P_h, gw, P_w)
    x = x.permute(0, 2, 4, 1, 3, 5)  # (B, gh, gw, C, P_h, P_w)
    return x.reshape(B, gh * gw, C * P_h * P_w)  # (B, N, C*P_h*P_w)


class MultiHeadSelfAttention(nn.Module):
    """lucidrains-style: to_q and a fused to_kv, einops heads."""

    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.heads = num_heads
        self.scale = hidden_dim ** -0.5
        self.to_q = nn.Linear(hidden_dim, hidden_dim, bias=False)
        self.to_kv = nn.Linear(hidden_dim, hidden_dim * 2, bias=False)
        self.to_out = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, x):
        q = self.to_q(x)
        k, v = self.to_kv(x).chunk(2, dim=-1)
        q, k, v = map(lambda t: rearrange(t, 'b n (h d) -> b h n d', h=self.heads), (q, k, v))
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = dots.softmax(dim=-1)
        out = torch.matmul(attn, v)
        out = rearrange(out, 'b h n d -> b n (h d)')
        return self.to_out(out)


class MLP(nn.Module):
    """Per-token feed-forward network: D -> 4D -> D with GELU."""

    def __init__(self, hidden_dim):
        super().__init__()
        self.fc = nn.Linear(hidden_dim, 4 * hidden_dim)
        self.gelu = nn.GELU()
        self.proj = nn.Linear(4 * hidden_dim, hidden_dim)

    def forward(self, x):
        return self.proj(self.gelu(self.fc(x)))  # (B, N, D)


class EncoderBlock(nn.Module):
    """Pre-norm transformer encoder block: Z = Z + MHSA(LN(Z)); Z = Z + MLP(LN(Z))."""

    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden_dim)
        self.attn = MultiHeadSelfAttention(hidden_dim, num_heads)
        self.ln_2 = nn.LayerNorm(hidden_dim)
        self.mlp = MLP(hidden_dim)

    def forward(self, z):
        z = z + self.attn(self.ln_1(z))  # (B, N+1, D)
        z = z + self.mlp(self.ln_2(z))  # (B, N+1, D)
        return z


class VisionTransformer(nn.Module):
    """ViT classifier: (B, C, H, W) images -> (B, out_dim) logits from the class token.

    img_shape = (C, H, W); patch_dims an int or (P_h, P_w). Attributes
    `class_embedding` (1, 1, D) and `positional_embedding` (1, N+1, D) are
    learnable parameters.
    """

    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch_size = _pair(patch_dims)
        P_h, P_w = self.patch_size
        num_patches = (H // P_h) * (W // P_w)  # N
        self.patch_embedding = nn.Linear(C * P_h * P_w, hidden_dim)  # one flattened patch -> D
        self.class_embedding = nn.Parameter(0.02 * torch.randn(1, 1, hidden_dim))  # (1, 1, D)
        self.positional_embedding = nn.Parameter(0.02 * torch.randn(1, num_patches + 1, hidden_dim))  # (1, N+1, D)
        self.blocks = nn.ModuleList(EncoderBlock(hidden_dim, num_heads) for _ in range(num_encoder_blocks))
        self.ln_f = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        B = images.shape[0]
        x = patchify(images, self.patch_size)  # (B, N, C*P_h*P_w)
        x = self.patch_embedding(x)  # (B, N, D)
        cls = self.class_embedding.expand(B, -1, -1)  # (B, 1, D)
        z = torch.cat([cls, x], dim=1) + self.positional_embedding  # (B, N+1, D)
        for block in self.blocks:
            z = block(z)  # (B, N+1, D)
        z = self.ln_f(z)  # (B, N+1, D)
        return self.head(z[:, 0])  # (B, out_dim), from the class token
