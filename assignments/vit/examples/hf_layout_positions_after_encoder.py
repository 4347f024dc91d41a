"""Homework 3: Vision Transformer (mistake: positions added after the encoder, HuggingFace's layout).

hf_layout.py, except that the embeddings module no longer adds the positional embedding and forward
adds it to the encoder's output: `self.layernorm(self.encoder(self.embeddings(images)) +
self.embeddings.position_embeddings)`.
"""
import math
import torch
import torch.nn as nn
from einops import rearrange


def patchify(images, patch_size):
    ph, pw = (patch_size, patch_size) if isinstance(patch_size, int) else patch_size
    return rearrange(images, "b c (h p1) (w p2) -> b (h w) (c p1 p2)", p1=ph, p2=pw)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        self.num_attention_heads = num_heads
        self.attention_head_size = hidden_dim // num_heads
        self.query = nn.Linear(hidden_dim, hidden_dim)
        self.key = nn.Linear(hidden_dim, hidden_dim)
        self.value = nn.Linear(hidden_dim, hidden_dim)
        self.dense = nn.Linear(hidden_dim, hidden_dim)
        self.dropout = nn.Dropout(0.0)

    def forward(self, hidden_states):
        q = rearrange(self.query(hidden_states), "b n (h d) -> b h n d", h=self.num_attention_heads)
        k = rearrange(self.key(hidden_states), "b n (h d) -> b h n d", h=self.num_attention_heads)
        v = rearrange(self.value(hidden_states), "b n (h d) -> b h n d", h=self.num_attention_heads)
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.attention_head_size)
        probs = self.dropout(nn.functional.softmax(scores, dim=-1))
        ctx = rearrange(torch.matmul(probs, v), "b h n d -> b n (h d)")
        return self.dense(ctx)


class ViTEmbeddings(nn.Module):
    def __init__(self, C, H, W, P, D):
        super().__init__()
        N = (H // P[0]) * (W // P[1])
        self.cls_token = nn.Parameter(torch.zeros(1, 1, D))
        self.position_embeddings = nn.Parameter(torch.randn(1, N + 1, D) * 0.02)
        self.patch_embeddings = nn.Conv2d(C, D, kernel_size=P, stride=P)

    def forward(self, pixel_values):
        x = self.patch_embeddings(pixel_values).flatten(2).transpose(1, 2)
        cls = self.cls_token.expand(x.shape[0], -1, -1)
        return torch.cat((cls, x), dim=1)


class ViTLayer(nn.Module):
    def __init__(self, D, h):
        super().__init__()
        self.layernorm_before = nn.LayerNorm(D, eps=1e-12)
        self.attention = MultiHeadSelfAttention(D, h)
        self.layernorm_after = nn.LayerNorm(D, eps=1e-12)
        self.intermediate = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU())
        self.output = nn.Linear(4 * D, D)

    def forward(self, hidden_states):
        hidden_states = self.attention(self.layernorm_before(hidden_states)) + hidden_states
        return self.output(self.intermediate(self.layernorm_after(hidden_states))) + hidden_states


class ViTEncoder(nn.Module):
    def __init__(self, D, h, n):
        super().__init__()
        self.layer = nn.ModuleList([ViTLayer(D, h) for _ in range(n)])

    def forward(self, x):
        for layer_module in self.layer:
            x = layer_module(x)
        return x


class VisionTransformer(nn.Module):
    def __init__(self, img_shape, patch_dims, hidden_dim, num_heads, out_dim, num_encoder_blocks=6):
        super().__init__()
        C, H, W = img_shape
        P = (patch_dims, patch_dims) if isinstance(patch_dims, int) else tuple(patch_dims)
        self.embeddings = ViTEmbeddings(C, H, W, P, hidden_dim)
        self.encoder = ViTEncoder(hidden_dim, num_heads, num_encoder_blocks)
        self.layernorm = nn.LayerNorm(hidden_dim, eps=1e-12)
        self.classifier = nn.Linear(hidden_dim, out_dim)

    @property
    def class_embedding(self):
        return self.embeddings.cls_token

    @property
    def positional_embedding(self):
        return self.embeddings.position_embeddings

    def forward(self, images):
        seq = self.layernorm(self.encoder(self.embeddings(images)) + self.embeddings.position_embeddings)
        return self.classifier(seq[:, 0, :])
