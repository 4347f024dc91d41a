import torch
import torch.nn as nn

from .attention import MultiHeadSelfAttention
from .patches import patchify, _pair


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = MultiHeadSelfAttention(d, h)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

    def forward(self, z):
        z = z + self.attn(self.ln1(z))
        return z + self.mlp(self.ln2(z))


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch = _pair(patch_dims)
        n = (H // self.patch[0]) * (W // self.patch[1])
        self.embed = nn.Linear(C * self.patch[0] * self.patch[1], hidden_dim)
        self.class_embedding = nn.Parameter(torch.randn(1, 1, hidden_dim) * 0.02)
        self.positional_embedding = nn.Parameter(torch.randn(1, n + 1, hidden_dim) * 0.02)
        self.blocks = nn.ModuleList([Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        z = self.embed(patchify(images, self.patch))
        z = torch.cat([self.class_embedding.expand(z.shape[0], -1, -1), z], dim=1) + self.positional_embedding
        for blk in self.blocks:
            z = blk(z)
        return self.head(self.norm(z[:, 0]))
