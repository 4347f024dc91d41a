import torch


def _pair(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x, x)


def _to_tokens(images, ph, pw):
    """(B, C, H, W) -> (B, N, C*ph*pw), row-major patches, channel-first inside a patch"""
    B, C, H, W = images.shape
    x = images.reshape(B, C, H // ph, ph, W // pw, pw)
    x = x.permute(0, 2, 4, 1, 3, 5)
    return x.reshape(B, (H // ph) * (W // pw), C * ph * pw)


def patchify(images, patch_size):
    ph, pw = _pair(patch_size)
    return _to_tokens(images, ph, pw)
