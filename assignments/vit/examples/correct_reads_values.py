"""ViT homework -- correct: torch.nn.MultiheadAttention inside the MHSA wrapper, dropout, F.unfold, and a .item() check in forward."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    patches = F.unfold(images, kernel_size=patch_size, stride=patch_size)  # B, C*ph*pw, N
    return patches.transpose(1, 2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.mha = nn.MultiheadAttention(hidden_dim, num_heads, batch_first=True, dropout=0.1)

    def forward(self, X):
        out, _ = self.mha(X, X, X, need_weights=False)
        return out


class Block(nn.Module):
    def __init__(self, d, h):
        super().__init__()
        self.ln_1 = nn.LayerNorm(d)
        self.attn = MultiHeadSelfAttention(d, h)
        self.ln_2 = nn.LayerNorm(d)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * d, d), nn.Dropout(0.1))

    def forward(self, z):
        z = z + self.attn(self.ln_1(z))
        z = z + self.mlp(self.ln_2(z))
        return z


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        self.patch_dims = (patch_dims, patch_dims) if isinstance(patch_dims, int) else tuple(patch_dims)
        ph, pw = self.patch_dims
        assert H % ph == 0 and W % pw == 0, "patch size must divide the image"
        self.n_patches = (H // ph) * (W // pw)
        self.linear_mapper = nn.Linear(C * ph * pw, hidden_dim)
        self.class_embedding = nn.Parameter(torch.rand(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.randn(self.n_patches + 1, hidden_dim) * 0.02)
        self.blocks = nn.ModuleList([Block(hidden_dim, num_heads) for _ in range(num_encoder_blocks)])
        self.head = nn.Sequential(nn.LayerNorm(hidden_dim), nn.Linear(hidden_dim, out_dim))

    def forward(self, images):
        # sanity check on the input (I had NaNs during training once)
        if torch.isnan(images).any().item():
            raise ValueError("NaN in input images")
        patches = patchify(images, self.patch_dims)
        tokens = self.linear_mapper(patches)
        cls = self.class_embedding.unsqueeze(0).expand(tokens.shape[0], -1, -1)
        out = torch.cat([cls, tokens], dim=1) + self.positional_embedding.unsqueeze(0)
        for block in self.blocks:
            out = block(out)
        return self.head(out[:, 0])
