"""Homework 3: Vision Transformer (student submission, one mistake).

correct.py, except that the attention scale is written `self.head_dim ** 1/2`: precedence makes it
head_dim / 2, not sqrt(head_dim). The two agree only at a head width of 4, the width the temperature
test once used (this file then got 100).
"""

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
    """Unmasked multi-head self-attention: (B, N, D) -> (B, N, D).

    One fused q/k/v projection and one output projection, both registered
    nn.Linear layers (with bias); the heads are a reshape, not a list of layers.
    """

    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        if num_heads <= 0 or hidden_dim % num_heads:
            raise ValueError(f"num_heads={num_heads} does not divide hidden_dim={hidden_dim}")
        self.num_heads = num_heads
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)  # q, k, v for all heads at once
        self.proj = nn.Linear(hidden_dim, hidden_dim)  # W_O
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** 1/2  # intended sqrt(head_dim); precedence makes it head_dim / 2

    def forward(self, x):
        B, N, D = x.shape
        nh, hs = self.num_heads, D // self.num_heads
        q, k, v = self.qkv(x).split(D, dim=2)  # 3 x (B, N, D)
        q = q.view(B, N, nh, hs).transpose(1, 2)  # (B, nh, N, hs)
        k = k.view(B, N, nh, hs).transpose(1, 2)  # (B, nh, N, hs)
        v = v.view(B, N, nh, hs).transpose(1, 2)  # (B, nh, N, hs)
        att = (q @ k.transpose(-2, -1)) / self.scale  # (B, nh, N, N)
        att = F.softmax(att, dim=-1)  # (B, nh, N, N), over the keys
        y = att @ v  # (B, nh, N, hs)
        y = y.transpose(1, 2).reshape(B, N, D)  # (B, N, D), heads side by side
        return self.proj(y)  # (B, N, D)


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
