"""Homework 3: Vision Transformer -- mistake: the class embedding is added to the patch tokens, not prepended.

correct.py, except that no class token is prepended: the class embedding is added to every patch token
(with the patches' rows 1..N of the positional embedding) and the classifier reads position 0, a patch.

Written differently from the reference on purpose: patchify with Tensor.unfold,
attention with one weight tensor per projection and einsum over the heads,
an nn.Conv2d patch embedding, dropout, and a (1, D) class embedding with an
(N+1, D) positional embedding.
"""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        ph, pw = patch_size, patch_size
    else:
        ph, pw = patch_size
    B, C, H, W = images.shape
    # (B, C, H/ph, W/pw, ph, pw)
    tiles = images.unfold(2, ph, ph).unfold(3, pw, pw)
    tiles = tiles.permute(0, 2, 3, 1, 4, 5)  # B, gh, gw, C, ph, pw
    return tiles.reshape(B, (H // ph) * (W // pw), C * ph * pw)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        super().__init__()
        assert hidden_dim % num_heads == 0, "hidden_dim must be divisible by num_heads"
        self.h = num_heads
        self.d_k = hidden_dim // num_heads
        # W_Q, W_K, W_V as (heads, D, d_k) tensors: X @ W like in the lecture
        self.W_q = nn.Parameter(torch.randn(num_heads, hidden_dim, self.d_k) / math.sqrt(hidden_dim))
        self.W_k = nn.Parameter(torch.randn(num_heads, hidden_dim, self.d_k) / math.sqrt(hidden_dim))
        self.W_v = nn.Parameter(torch.randn(num_heads, hidden_dim, self.d_k) / math.sqrt(hidden_dim))
        self.W_o = nn.Linear(hidden_dim, hidden_dim)
        self.attn_drop = nn.Dropout(dropout)

    def forward(self, X):
        q = torch.einsum("bnd,hdk->bhnk", X, self.W_q)
        k = torch.einsum("bnd,hdk->bhnk", X, self.W_k)
        v = torch.einsum("bnd,hdk->bhnk", X, self.W_v)
        scores = torch.einsum("bhnk,bhmk->bhnm", q, k) / math.sqrt(self.d_k)
        weights = self.attn_drop(scores.softmax(dim=-1))
        heads = torch.einsum("bhnm,bhmk->bnhk", weights, v)
        out = heads.flatten(2)  # concat the heads: (B, N, D)
        return self.W_o(out)


class TransformerEncoderBlock(nn.Module):
    def __init__(self, hidden_dim, num_heads, mlp_ratio=2, dropout=0.1):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_dim)
        self.attention = MultiHeadSelfAttention(hidden_dim, num_heads, dropout)
        self.norm2 = nn.LayerNorm(hidden_dim)
        self.mlp = nn.Sequential(
            nn.Linear(hidden_dim, mlp_ratio * hidden_dim),
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(mlp_ratio * hidden_dim, hidden_dim),
        )

    def forward(self, z):
        z = z + self.attention(self.norm1(z))
        z = z + self.mlp(self.norm2(z))
        return z


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        if isinstance(patch_dims, int):
            patch_dims = (patch_dims, patch_dims)
        n_patches = (H // patch_dims[0]) * (W // patch_dims[1])
        # a conv with stride = kernel = patch size is a linear map of each patch
        self.patch_embed = nn.Conv2d(C, hidden_dim, kernel_size=patch_dims, stride=patch_dims)
        self.class_embedding = nn.Parameter(torch.zeros(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(n_patches + 1, hidden_dim) * 0.02)
        self.dropout = nn.Dropout(0.1)
        self.encoder = nn.Sequential(*[TransformerEncoderBlock(hidden_dim, num_heads)
                                       for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim)
        self.classifier = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        x = self.patch_embed(images)          # B, D, gh, gw
        x = x.flatten(2).transpose(1, 2)      # B, N, D
        z = x + self.class_embedding + self.positional_embedding[1:]  # the class embedding on every patch
        z = self.encoder(self.dropout(z))
        return self.classifier(self.norm(z[:, 0]))


if __name__ == "__main__":
    model = VisionTransformer((3, 32, 32), 4, 64, 4, 10)
    print(model(torch.randn(2, 3, 32, 32)).shape)
