"""ViT homework, timm-style Attention (fused qkv) -- mistake: the keys are split into heads by stride (`view(B, N, D/h, h)`), the queries and values into blocks, so head i's queries meet another head's keys."""
import math
from functools import partial
from typing import Optional, Tuple, Union

import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images: torch.Tensor, patch_size: Union[int, Tuple[int, int]]) -> torch.Tensor:
    ph, pw = (patch_size, patch_size) if isinstance(patch_size, int) else tuple(patch_size)
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // ph, ph, W // pw, pw)
    x = x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // ph) * (W // pw), C * ph * pw)


class MultiHeadSelfAttention(nn.Module):
    fused_attn: bool = True

    def __init__(self, hidden_dim: int, num_heads: int = 8, qkv_bias: bool = True,
                 attn_drop: float = 0.0, proj_drop: float = 0.0) -> None:
        super().__init__()
        assert hidden_dim % num_heads == 0, 'dim should be divisible by num_heads'
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.scale = self.head_dim ** -0.5
        self.qkv = nn.Linear(hidden_dim, hidden_dim * 3, bias=qkv_bias)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj = nn.Linear(hidden_dim, hidden_dim)
        self.proj_drop = nn.Dropout(proj_drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, N, C = x.shape
        qkv = self.qkv(x).reshape(B, N, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4)
        q, _, v = qkv.unbind(0)
        k = self.qkv(x)[..., C:2 * C].reshape(B, N, self.head_dim, self.num_heads).permute(0, 3, 1, 2)
        if self.fused_attn:
            x = F.scaled_dot_product_attention(q, k, v, dropout_p=self.attn_drop.p if self.training else 0.)
        else:
            q = q * self.scale
            attn = q @ k.transpose(-2, -1)
            attn = attn.softmax(dim=-1)
            attn = self.attn_drop(attn)
            x = attn @ v
        x = x.transpose(1, 2).reshape(B, N, C)
        x = self.proj(x)
        x = self.proj_drop(x)
        return x


class Mlp(nn.Module):
    def __init__(self, in_features, hidden_features=None, act_layer=nn.GELU, drop=0.):
        super().__init__()
        hidden_features = hidden_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.drop1 = nn.Dropout(drop)
        self.fc2 = nn.Linear(hidden_features, in_features)
        self.drop2 = nn.Dropout(drop)

    def forward(self, x):
        return self.drop2(self.fc2(self.drop1(self.act(self.fc1(x)))))


class Block(nn.Module):
    def __init__(self, dim, num_heads, mlp_ratio=4., qkv_bias=True, drop=0.1,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.norm1 = norm_layer(dim)
        self.attn = MultiHeadSelfAttention(dim, num_heads, qkv_bias=qkv_bias, attn_drop=drop, proj_drop=drop)
        self.ls1 = nn.Identity()
        self.norm2 = norm_layer(dim)
        self.mlp = Mlp(dim, int(dim * mlp_ratio), drop=drop)
        self.ls2 = nn.Identity()

    def forward(self, x):
        x = x + self.ls1(self.attn(self.norm1(x)))
        x = x + self.ls2(self.mlp(self.norm2(x)))
        return x


class PatchEmbed(nn.Module):
    def __init__(self, img_size, patch_size, in_chans, embed_dim):
        super().__init__()
        self.grid_size = (img_size[0] // patch_size[0], img_size[1] // patch_size[1])
        self.num_patches = self.grid_size[0] * self.grid_size[1]
        self.proj = nn.Conv2d(in_chans, embed_dim, kernel_size=patch_size, stride=patch_size)

    def forward(self, x):
        return self.proj(x).flatten(2).transpose(1, 2)


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        patch = (patch_dims, patch_dims) if isinstance(patch_dims, int) else tuple(patch_dims)
        self.patch_embed = PatchEmbed((H, W), patch, C, hidden_dim)
        num_patches = self.patch_embed.num_patches
        self.class_embedding = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(1, num_patches + 1, hidden_dim) * .02)
        self.pos_drop = nn.Dropout(p=0.1)
        self.blocks = nn.Sequential(*[Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim, eps=1e-6)
        self.head = nn.Linear(hidden_dim, out_dim)
        self.apply(self._init_weights)

    def _init_weights(self, m):
        if isinstance(m, nn.Linear):
            nn.init.trunc_normal_(m.weight, std=.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)

    def forward_features(self, x):
        x = self.patch_embed(x)
        x = torch.cat((self.class_embedding.expand(x.shape[0], -1, -1), x), dim=1)
        x = self.pos_drop(x + self.positional_embedding)
        x = self.blocks(x)
        return self.norm(x)

    def forward_head(self, x, pre_logits: bool = False):
        x = x[:, 0]
        return x if pre_logits else self.head(x)

    def forward(self, images):
        return self.forward_head(self.forward_features(images))
