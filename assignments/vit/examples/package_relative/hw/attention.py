import math
import torch
import torch.nn as nn


def _to_tokens(x, B, N, h):
    """(B, h, N, d) -> (B, N, h*d): merge the heads back into tokens"""
    return x.transpose(1, 2).reshape(B, N, -1)


class MultiHeadSelfAttention(nn.Module):
    def __init__(self, hidden_dim, num_heads):
        super().__init__()
        assert hidden_dim % num_heads == 0
        self.h = num_heads
        self.d = hidden_dim // num_heads
        self.qkv = nn.Linear(hidden_dim, 3 * hidden_dim)
        self.o = nn.Linear(hidden_dim, hidden_dim)

    def forward(self, x):
        B, N, D = x.shape
        q, k, v = self.qkv(x).view(B, N, 3, self.h, self.d).permute(2, 0, 3, 1, 4)
        a = torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(self.d), dim=-1)
        return self.o(_to_tokens(a @ v, B, N, self.h))
