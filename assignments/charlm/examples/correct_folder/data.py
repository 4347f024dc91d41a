"""Data helpers for my char-level LM."""
import torch


def build_vocab(text):
    chars = sorted(set(text))
    stoi = {c: i for i, c in enumerate(chars)}
    itos = "".join(chars)  # itos[i] is the i-th character
    return stoi, itos


def make_blocks(data, block_size):
    n = len(data) - block_size
    x = torch.empty(n, block_size, dtype=torch.long)
    y = torch.empty(n, block_size, dtype=torch.long)
    for i in range(n):
        x[i] = data[i:i + block_size]
        y[i] = data[i + 1:i + 1 + block_size]
    return x, y
