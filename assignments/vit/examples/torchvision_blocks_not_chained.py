# HW2 ViT, adapted from torchvision/models/vision_transformer.py (the vit_b_16 code)
import math
from collections import OrderedDict
from functools import partial
from typing import Callable

import torch
import torch.nn as nn


def patchify(images, patch_size):
    if isinstance(patch_size, int):
        patch_size = (patch_size, patch_size)
    return nn.functional.unfold(images, patch_size, stride=patch_size).transpose(1, 2)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads, attention_dropout=0.0):
        super().__init__()
        self.self_attention = nn.MultiheadAttention(hidden_dim, num_heads, dropout=attention_dropout, batch_first=True)

    def forward(self, x):
        x, _ = self.self_attention(x, x, x, need_weights=False)
        return x


class MLPBlock(nn.Sequential):
    """Transformer MLP block."""

    def __init__(self, in_dim: int, mlp_dim: int, dropout: float):
        super().__init__(
            nn.Linear(in_dim, mlp_dim), nn.GELU(), nn.Dropout(dropout),
            nn.Linear(mlp_dim, in_dim), nn.Dropout(dropout),
        )
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
                if m.bias is not None:
                    nn.init.normal_(m.bias, std=1e-6)


class EncoderBlock(nn.Module):
    """Transformer encoder block."""

    def __init__(self, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer: Callable[..., torch.nn.Module] = partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.num_heads = num_heads

        # Attention block
        self.ln_1 = norm_layer(hidden_dim)
        self.self_attention = MultiHeadSelfAttention(hidden_dim, num_heads, attention_dropout)
        self.dropout = nn.Dropout(dropout)

        # MLP block
        self.ln_2 = norm_layer(hidden_dim)
        self.mlp = MLPBlock(hidden_dim, mlp_dim, dropout)

    def forward(self, input: torch.Tensor):
        torch._assert(input.dim() == 3, f"Expected (batch_size, seq_length, hidden_dim) got {input.shape}")
        x = self.ln_1(input)
        x = self.self_attention(x)
        x = self.dropout(x)
        x = x + input

        y = self.ln_2(x)
        y = self.mlp(y)
        return x + y


class Encoder(nn.Module):
    """Transformer Model Encoder for sequence to sequence translation."""

    def __init__(self, seq_length, num_layers, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout,
                 norm_layer=partial(nn.LayerNorm, eps=1e-6)):
        super().__init__()
        self.dropout = nn.Dropout(dropout)
        layers: OrderedDict[str, nn.Module] = OrderedDict()
        for i in range(num_layers):
            layers[f"encoder_layer_{i}"] = EncoderBlock(num_heads, hidden_dim, mlp_dim, dropout, attention_dropout, norm_layer)
        self.layers = nn.Sequential(layers)
        self.ln = norm_layer(hidden_dim)

    def forward(self, input: torch.Tensor):
        x = self.dropout(input)
        out = x
        for name, layer in self.layers.named_children():
            out = layer(x)
        return self.ln(out)


class VisionTransformer(nn.Module):
    """Vision Transformer as per https://arxiv.org/abs/2010.11929."""

    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6,
                 dropout=0.0, attention_dropout=0.0):
        super().__init__()
        C, H, W = img_shape
        if isinstance(patch_dims, int):
            patch_dims = (patch_dims, patch_dims)
        torch._assert(H % patch_dims[0] == 0 and W % patch_dims[1] == 0, "Input shape indivisible by patch size!")
        self.image_size = (H, W)
        self.patch_size = patch_dims
        self.hidden_dim = hidden_dim
        mlp_dim = 4 * hidden_dim

        self.conv_proj = nn.Conv2d(in_channels=C, out_channels=hidden_dim, kernel_size=patch_dims, stride=patch_dims)

        seq_length = (H // patch_dims[0]) * (W // patch_dims[1])

        # Add a class token
        self.class_embedding = nn.Parameter(torch.zeros(1, 1, hidden_dim))
        seq_length += 1
        self.positional_embedding = nn.Parameter(torch.empty(1, seq_length, hidden_dim).normal_(std=0.02))  # from BERT

        self.encoder = Encoder(seq_length, num_encoder_blocks, num_heads, hidden_dim, mlp_dim, dropout, attention_dropout)
        self.seq_length = seq_length

        heads_layers: OrderedDict[str, nn.Module] = OrderedDict()
        heads_layers["head"] = nn.Linear(hidden_dim, out_dim)
        self.heads = nn.Sequential(heads_layers)

        # Init the patchify stem
        fan_in = self.conv_proj.in_channels * self.conv_proj.kernel_size[0] * self.conv_proj.kernel_size[1]
        nn.init.trunc_normal_(self.conv_proj.weight, std=math.sqrt(1 / fan_in))
        if self.conv_proj.bias is not None:
            nn.init.zeros_(self.conv_proj.bias)

        if isinstance(self.heads.head, nn.Linear):
            nn.init.zeros_(self.heads.head.weight)
            nn.init.zeros_(self.heads.head.bias)

    def _process_input(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        p_h, p_w = self.patch_size
        torch._assert(h == self.image_size[0], f"Wrong image height! Expected {self.image_size[0]} but got {h}!")
        torch._assert(w == self.image_size[1], f"Wrong image width! Expected {self.image_size[1]} but got {w}!")
        n_h = h // p_h
        n_w = w // p_w

        # (n, c, h, w) -> (n, hidden_dim, n_h, n_w)
        x = self.conv_proj(x)
        # (n, hidden_dim, n_h, n_w) -> (n, hidden_dim, (n_h * n_w))
        x = x.reshape(n, self.hidden_dim, n_h * n_w)
        # (n, hidden_dim, (n_h * n_w)) -> (n, (n_h * n_w), hidden_dim)
        x = x.permute(0, 2, 1)
        return x

    def forward(self, x: torch.Tensor):
        # Reshape and permute the input tensor
        x = self._process_input(x)
        n = x.shape[0]

        # Expand the class token to the full batch
        batch_class_token = self.class_embedding.expand(n, -1, -1)
        x = torch.cat([batch_class_token, x], dim=1)
        x = x + self.positional_embedding
        x = self.encoder(x)

        # Classifier "token" as used by standard language architectures
        x = x[:, 0]

        x = self.heads(x)

        return x
