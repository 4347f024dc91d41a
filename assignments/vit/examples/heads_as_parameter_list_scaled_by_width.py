import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    return F.unfold(images, kernel_size=patch_size, stride=patch_size).transpose(1, 2)



class MultiHeadSelfAttention(nn.Module):
    """W_i^Q of shape (D, D/h) per head, X @ W as in the lecture; the scores divided by sqrt(D), not sqrt(D/h)."""
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.h = num_heads
        dh = hidden_dim // num_heads
        self.W_Q = nn.ParameterList([nn.Parameter(torch.randn(hidden_dim, dh) / math.sqrt(hidden_dim)) for _ in range(num_heads)])
        self.W_K = nn.ParameterList([nn.Parameter(torch.randn(hidden_dim, dh) / math.sqrt(hidden_dim)) for _ in range(num_heads)])
        self.W_V = nn.ParameterList([nn.Parameter(torch.randn(hidden_dim, dh) / math.sqrt(hidden_dim)) for _ in range(num_heads)])
        self.W_O = nn.Parameter(torch.randn(hidden_dim, hidden_dim) / math.sqrt(hidden_dim))

    def forward(self, X):
        D = X.shape[-1]
        heads = []
        for i in range(self.h):
            q, k, v = X @ self.W_Q[i], X @ self.W_K[i], X @ self.W_V[i]
            s = q @ k.transpose(-2, -1) / math.sqrt(D)
            heads.append(torch.softmax(s, dim=-1) @ v)
        return torch.cat(heads, dim=-1) @ self.W_O



class Block(nn.Module):
    def __init__(self, D, h):
        super().__init__()
        self.ln1 = nn.LayerNorm(D)
        self.attn = MultiHeadSelfAttention(D, h)
        self.ln2 = nn.LayerNorm(D)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, z):
        z = z + self.attn(self.ln1(z))
        z = z + self.mlp(self.ln2(z))
        return z


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        if isinstance(patch_dims, int):
            patch_dims = (patch_dims, patch_dims)
        self.patch_dims = tuple(patch_dims)
        N = (H // patch_dims[0]) * (W // patch_dims[1])
        self.N = N
        self.embed = nn.Linear(C * patch_dims[0] * patch_dims[1], hidden_dim)
        self.class_embedding = nn.Parameter(torch.randn(1, 1, hidden_dim) * 0.02)
        self.positional_embedding = nn.Parameter(torch.randn(1, N + 1, hidden_dim) * 0.02)
        self.blocks = nn.ModuleList([Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.norm = nn.LayerNorm(hidden_dim)
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        B = images.shape[0]
        p = patchify(images, self.patch_dims)
        x = self.embed(p)
        x = torch.cat([self.class_embedding.expand(B, -1, -1), x], dim=1)
        x = x + self.positional_embedding
        for blk in self.blocks:
            x = blk(x)
        return self.head(self.norm(x[:, 0]))
