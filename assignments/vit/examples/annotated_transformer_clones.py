import math
import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    return F.unfold(images, kernel_size=patch_size, stride=patch_size).transpose(1, 2)




import copy

def clones(module, N):
    return nn.ModuleList([copy.deepcopy(module) for _ in range(N)])


def attention(query, key, value, mask=None, dropout=None):
    d_k = query.size(-1)
    scores = torch.matmul(query, key.transpose(-2, -1)) / math.sqrt(d_k)
    if mask is not None:
        scores = scores.masked_fill(mask == 0, -1e9)
    p_attn = scores.softmax(dim=-1)
    if dropout is not None:
        p_attn = dropout(p_attn)
    return torch.matmul(p_attn, value), p_attn


class MultiHeadSelfAttention(nn.Module):
    """The Annotated Transformer's MultiHeadedAttention, self-attention only."""
    def __init__(self, hidden_dim, num_heads, dropout=0.1):
        super().__init__()
        assert hidden_dim % num_heads == 0
        self.d_k = hidden_dim // num_heads
        self.h = num_heads
        self.linears = clones(nn.Linear(hidden_dim, hidden_dim), 4)
        self.attn = None
        self.dropout = nn.Dropout(p=dropout)

    def forward(self, X, mask=None):
        query = key = value = X
        nbatches = query.size(0)
        query, key, value = [lin(x).view(nbatches, -1, self.h, self.d_k).transpose(1, 2)
                             for lin, x in zip(self.linears, (query, key, value))]
        x, self.attn = attention(query, key, value, mask=mask, dropout=self.dropout)
        x = x.transpose(1, 2).contiguous().view(nbatches, -1, self.h * self.d_k)
        del query, key, value
        return self.linears[-1](x)


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
