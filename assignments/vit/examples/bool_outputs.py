# A submission that computes nothing: patchify and both modules return tensors of True of the right
# shape. The layers exist (so parameters are registered), but forward only reads the input's shape.
import torch
from torch import nn


def patchify(images, patch_size):
    P_h, P_w = (patch_size, patch_size) if isinstance(patch_size, int) else patch_size
    B, C, H, W = images.shape
    return torch.ones(B, (H // P_h) * (W // P_w), C * P_h * P_w, dtype=torch.bool, device=images.device)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.proj = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, x):
        return torch.ones(x.shape, dtype=torch.bool, device=x.device)


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        P_h, P_w = (patch_dims, patch_dims) if isinstance(patch_dims, int) else patch_dims
        N = (H // P_h) * (W // P_w)
        self.out_dim = out_dim
        self.embed = nn.Linear(C * P_h * P_w, hidden_dim)
        self.class_embedding = nn.Parameter(torch.zeros(1, hidden_dim))
        self.positional_embedding = nn.Parameter(torch.zeros(N + 1, hidden_dim))
        self.blocks = nn.ModuleList(MultiHeadSelfAttention(hidden_dim, num_heads) for _ in range(num_encoder_blocks))
        self.head = nn.Linear(hidden_dim, out_dim)

    def forward(self, images):
        return torch.ones(images.shape[0], self.out_dim, dtype=torch.bool, device=images.device)
