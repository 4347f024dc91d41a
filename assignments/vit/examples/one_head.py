"""ViT homework -- mistake: MHSA ignores num_heads and runs one head of width D."""
import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    return F.unfold(images, patch_size, stride=patch_size).transpose(1, 2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        assert hidden_dim % num_heads == 0
        self.hidden_dim = hidden_dim
        self.num_heads = num_heads
        self.head_dim = hidden_dim // num_heads
        self.W_q = nn.Linear(hidden_dim, hidden_dim)
        self.W_k = nn.Linear(hidden_dim, hidden_dim)
        self.W_v = nn.Linear(hidden_dim, hidden_dim)
        self.W_o = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, X):
        B, N, D = X.shape
        Q = self.W_q(X)
        K = self.W_k(X)
        V = self.W_v(X)
        scores = Q @ K.transpose(-2, -1) / math.sqrt(self.head_dim)
        A = torch.softmax(scores, dim=-1)
        out = A @ V
        return self.W_o(out)


class EncoderBlock(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(hidden_dim)
        self.mhsa = MultiHeadSelfAttention(hidden_dim, num_heads)
        self.ln2 = nn.LayerNorm(hidden_dim)
        self.mlp = nn.Sequential(nn.Linear(hidden_dim, 4 * hidden_dim), nn.GELU(), nn.Linear(4 * hidden_dim, hidden_dim))

    def forward(self, z):
        z = z + self.mhsa(self.ln1(z))
        z = z + self.mlp(self.ln2(z))
        return z


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        if isinstance(patch_dims, int):
            patch_dims = (patch_dims, patch_dims)
        self.patch_dims = patch_dims
        n = (H // patch_dims[0]) * (W // patch_dims[1])
        self.patch_embedding = nn.Linear(C * patch_dims[0] * patch_dims[1], hidden_dim)
        self.class_embedding = nn.Parameter(torch.randn(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(n + 1, hidden_dim))
        self.blocks = nn.Sequential(*[EncoderBlock(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(hidden_dim), nn.Linear(hidden_dim, out_dim))

    def forward(self, images):
        x = self.patch_embedding(patchify(images, self.patch_dims))
        cls = self.class_embedding.expand(x.shape[0], 1, -1)
        z = torch.cat([cls, x], dim=1) + self.positional_embedding
        z = self.blocks(z)
        return self.head(z[:, 0])
