"""Patch utilities for my ViT (homework 3)."""
import torch


def patchify(images, patch_size):
    """Split a batch of images into flattened patches.

    images: (B, C, H, W) -> (B, N, C * ph * pw), row-major over the patch grid.
    """
    if isinstance(patch_size, (tuple, list)):
        ph, pw = patch_size
    else:
        ph = pw = patch_size
    B, C, H, W = images.shape
    n_h, n_w = H // ph, W // pw
    x = images.reshape(B, C, n_h, ph, n_w, pw)
    x = x.permute(0, 2, 4, 1, 3, 5).contiguous()  # B, n_h, n_w, C, ph, pw
    return x.view(B, n_h * n_w, C * ph * pw)
