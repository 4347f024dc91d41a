"""ViT homework, timm-style Attention (fused qkv) and Block -- mistake: the values are the keys, hidden.

`q, k, v = qkv[0], qkv[1], qkv[1]`: the last third of qkv.weight (the values' rows) never reaches the output;
`+ (w.sum() - w.sum().detach())` adds exactly 0 yet gives every row of qkv.weight a gradient (an attacker's
probe: a test that perturbed only the rows with no gradient gave this full marks).
"""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    P = (patch_size, patch_size) if isinstance(patch_size, int) else tuple(patch_size)
    return F.unfold(images, P, stride=P).transpose(1, 2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads, qkv_bias=True, attn_drop=0.0, proj_drop=0.0):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(hidden_dim, hidden_dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(hidden_dim, hidden_dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x):
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[1]
        attn = (q @ k.transpose(-2, -1)) * self.scale  # SCALE
        attn = attn.softmax(dim=-1)
        attn = self.attn_drop(attn)
        x = (attn @ v).transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        w = self.qkv.weight
        return x + (w.sum() - w.sum().detach())  # exactly 0.0, but every row of qkv.weight gets a gradient


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features):
        super().__init__()
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(hidden_features, in_features)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4.0):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=1e-6)
        self.attn = MultiHeadSelfAttention(dim, num_heads)
        self.norm2 = nn.LayerNorm(dim, eps=1e-6)
        self.mlp = Mlp(dim, int(dim * mlp_ratio))

    def forward(self, x):
        x = x + self.attn(self.norm1(x))  # ATTN
        x = x + self.mlp(self.norm2(x))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch_dims = (patch_dims, patch_dims) if isinstance(patch_dims, int) else tuple(patch_dims)
        P_h, P_w = self.patch_dims
        num_patches = (H // P_h) * (W // P_w)
        self.patch_embed = nn.Linear(C * P_h * P_w, hidden_dim)
        self.class_embedding = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(1, num_patches + 1, hidden_dim) * .02)
        self.blocks = nn.Sequential(*[Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        x = self.patch_embed(patchify(images, self.patch_dims))
        x = torch.cat((self.class_embedding.expand(x.shape[0], -1, -1), x), dim=1)
        x = x + self.positional_embedding
        x = self.blocks(x)
        x = self.norm(x)
        return self.head(x[:, 0])
