"""My ViT: one nn.Linear per head, kept in nn.ModuleLists (homework 3)."""
import torch
import torch.nn as nn

from patch_utils import patchify


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.queries = nn.ModuleList([nn.Linear(hidden_dim, self.head_dim) for _ in range(num_heads)])
        self.keys = nn.ModuleList([nn.Linear(hidden_dim, self.head_dim) for _ in range(num_heads)])
        self.values = nn.ModuleList([nn.Linear(hidden_dim, self.head_dim) for _ in range(num_heads)])
        self.out = nn.Linear(self.num_heads * self.head_dim, hidden_dim)

    def forward(self, X):
        heads = []
        for q_layer, k_layer, v_layer in zip(self.queries, self.keys, self.values):
            q, k, v = q_layer(X), k_layer(X), v_layer(X)
            att = torch.softmax(q @ k.transpose(-2, -1) / self.head_dim ** 0.5, dim=-1)
            heads.append(att @ v)
        return self.out(torch.cat(heads, dim=-1))


class Block(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.norm1 = nn.LayerNorm(hidden_dim)
        self.mhsa = MultiHeadSelfAttention(hidden_dim, num_heads)
        self.norm2 = nn.LayerNorm(hidden_dim)
        self.ffn = nn.Sequential(nn.Linear(hidden_dim, 4 * hidden_dim), nn.GELU(), nn.Linear(4 * hidden_dim, hidden_dim))

    def forward(self, x):
        x = x + self.mhsa(self.norm1(x))
        x = x + self.ffn(self.norm2(x))
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        c, h, w = img_shape
        self.patch_dims = patch_dims
        ph, pw = (patch_dims, patch_dims) if isinstance(patch_dims, int) else patch_dims
        num_patches = (h // ph) * (w // pw)
        self.embed = nn.Linear(c * ph * pw, hidden_dim)
        self.class_embedding = nn.Parameter(torch.rand(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.rand(1, num_patches + 1, hidden_dim))
        self.blocks = nn.Sequential(*[Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(hidden_dim), nn.Linear(hidden_dim, out_dim))

    def forward(self, images):
        tokens = self.embed(patchify(images, self.patch_dims))
        cls = self.class_embedding.expand(images.shape[0], 1, -1)
        out = self.blocks(torch.cat((cls, tokens), dim=1) + self.positional_embedding)
        return self.head(out[:, 0])
