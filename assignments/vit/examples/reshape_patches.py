"""Homework 3 (ViT) — patches by reshape.

Example submission for the grader's own tests: correct except for one known
mistake: patchify reshapes the image instead of cutting it into tiles.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    p_h, p_w = patch_size
    B, C, H, W = images.shape
    n_patches = (H // p_h) * (W // p_w)
    # every patch has C * p_h * p_w values, so reshape into that many columns
    return images.reshape(B, n_patches, C * p_h * p_w)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.d_head = hidden_dim // num_heads
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.out_proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, X):
        B, N, D = X.shape
        q, k, v = self.qkv(X).chunk(3, dim=-1)
        q = q.reshape(B, N, self.num_heads, self.d_head).transpose(1, 2)
        k = k.reshape(B, N, self.num_heads, self.d_head).transpose(1, 2)
        v = v.reshape(B, N, self.num_heads, self.d_head).transpose(1, 2)
        scores = q @ k.transpose(-2, -1) / math.sqrt(self.d_head)
        out = F.softmax(scores, dim=-1) @ v
        out = out.transpose(1, 2).reshape(B, N, D)
        return self.out_proj(out)


class EncoderBlock(nn.Module):
    def __init__(self, hidden_dim, num_heads, num_tokens):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_dim)
        self.attn = MultiHeadSelfAttention(hidden_dim, num_heads)
        self.norm2 = nn.LayerNorm(hidden_dim)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_dim, 4 * hidden_dim),
            nn.GELU(),
            nn.Linear(4 * hidden_dim, hidden_dim),
        )

    def forward(self, z):
        z = z + self.attn(self.norm1(z))
        z = z + self.mlp(self.norm2(z))
        return z


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        if isinstance(patch_dims, int):
            patch_dims = (patch_dims, patch_dims)
        self.patch_dims = patch_dims
        n_patches = (H // patch_dims[0]) * (W // patch_dims[1])
        self.patch_embedding = nn.Linear(C * patch_dims[0] * patch_dims[1], hidden_dim)
        self.class_embedding = nn.Parameter(torch.randn(1, 1, hidden_dim) * 0.02)
        self.positional_embedding = nn.Parameter(torch.randn(1, n_patches + 1, hidden_dim) * 0.02)
        self.blocks = nn.ModuleList(
            [EncoderBlock(hidden_dim, num_heads, n_patches + 1) for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        x = self.patch_embedding(patchify(images, self.patch_dims))
        cls = self.class_embedding.expand(x.shape[0], -1, -1)
        z = torch.cat([cls, x], dim=1) + self.positional_embedding
        for block in self.blocks:
            z = block(z)
        return self.head(self.norm(z[:, 0]))
