"""Independent evidence that reference/vit.py is right: F.unfold, nn.MultiheadAttention, ViT-B/16 on meta."""

import pytest
import torch
import torch.nn.functional as F

import importlib

from checker.spec import load_spec

ref = importlib.import_module(load_spec('vit')["reference"])  # assignments/vit/reference.py


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)  # every test sees the same random inputs, run alone or together


@pytest.mark.parametrize("shape,patch", [
    ((2, 3, 8, 8), 4),
    ((2, 3, 12, 8), 4),
    ((1, 2, 12, 10), (3, 5)),
    ((3, 1, 6, 9), (2, 3)),
    ((2, 3, 10, 9), 4),  # not a multiple of the patch: unfold drops the remainder
])
def test_patchify_matches_unfold(shape, patch):
    images = torch.randn(shape, dtype=torch.float64)
    expected = F.unfold(images, patch, stride=patch).transpose(1, 2)
    got = ref.patchify(images, patch)
    assert got.shape == expected.shape
    assert torch.equal(got, expected)


def test_patchify_is_not_a_plain_reshape():
    images = torch.arange(2 * 3 * 8 * 8, dtype=torch.float32).reshape(2, 3, 8, 8)
    got = ref.patchify(images, 4)
    assert not torch.equal(got, images.reshape(2, 4, 48))
    assert torch.equal(got[0, 1], images[0, :, 0:4, 4:8].reshape(-1))  # top-right tile, channel first


def _mhsa_as_torch(m, D, h):
    """torch.nn.MultiheadAttention holding the reference module's weights (both compute x @ W.T + b)."""
    mha = torch.nn.MultiheadAttention(D, h, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(m.qkv.weight)
        mha.in_proj_bias.copy_(m.qkv.bias)
        mha.out_proj.weight.copy_(m.proj.weight)
        mha.out_proj.bias.copy_(m.proj.bias)
    return mha


@pytest.mark.parametrize("B,N,D,h", [(2, 5, 8, 2), (1, 7, 12, 3), (3, 4, 16, 1)])
def test_mhsa_matches_torch_multihead_attention(B, N, D, h):
    torch.manual_seed(0)
    m = ref.MultiHeadSelfAttention(D, h).double()
    x = torch.randn(B, N, D, dtype=torch.float64)
    with torch.no_grad():
        expected, _ = _mhsa_as_torch(m, D, h)(x, x, x, need_weights=False)
        got = m(x)
    assert got.shape == (B, N, D)
    torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_mhsa_parameters_registered_and_follow_dtype():
    m = ref.MultiHeadSelfAttention(16, 4)
    names = {n for n, _ in m.named_parameters()}
    assert names == {"qkv.weight", "qkv.bias", "proj.weight", "proj.bias"}
    m = m.to(torch.float64)
    assert all(p.dtype == torch.float64 for p in m.parameters())
    assert m(torch.randn(2, 3, 16, dtype=torch.float64)).dtype == torch.float64


def test_mhsa_value_error_when_heads_do_not_divide():
    with pytest.raises(ValueError):
        ref.MultiHeadSelfAttention(10, 4)


def test_mhsa_permutation_equivariant_and_mixes_tokens():
    torch.manual_seed(1)
    m = ref.MultiHeadSelfAttention(12, 3).double().eval()
    x = torch.randn(2, 6, 12, dtype=torch.float64)
    perm = torch.randperm(6)
    with torch.no_grad():
        y = m(x)
        torch.testing.assert_close(m(x[:, perm]), y[:, perm], rtol=1e-12, atol=1e-12)
        x2 = x.clone()
        x2[:, 0] += 1.0  # change token 0 only
        y2 = m(x2)
    assert not torch.allclose(y2[:, 1:], y[:, 1:], atol=1e-6)  # other tokens' outputs move too


def test_vit_b16_on_meta_device():
    with torch.device("meta"):
        model = ref.VisionTransformer((3, 224, 224), 16, 768, 12, 1000, num_encoder_blocks=12)
        out = model(torch.empty(2, 3, 224, 224))
    assert out.shape == (2, 1000)
    assert model.class_embedding.shape == (1, 1, 768)
    assert model.positional_embedding.shape == (1, 197, 768)
    assert len(model.blocks) == 12
    assert sum(p.numel() for p in model.parameters()) == 86_567_656  # ViT-B/16 (timm, torchvision)


def test_vit_small_real_non_square_float64_with_gradients():
    torch.manual_seed(2)
    model = ref.VisionTransformer((2, 12, 20), (3, 5), 16, 4, 7, num_encoder_blocks=2).double()
    assert isinstance(model.class_embedding, torch.nn.Parameter)
    assert isinstance(model.positional_embedding, torch.nn.Parameter)
    assert model.positional_embedding.shape == (1, 4 * 4 + 1, 16)
    images = torch.randn(3, 2, 12, 20, dtype=torch.float64)
    out = model(images)
    assert out.shape == (3, 7) and out.dtype == torch.float64
    out.sum().backward()
    missing = [n for n, p in model.named_parameters() if p.grad is None]
    assert not missing, missing


def test_vit_default_block_count_and_int_patch():
    model = ref.VisionTransformer((1, 8, 8), 4, 8, 2, 3)
    assert len(model.blocks) == 6
    assert model(torch.randn(2, 1, 8, 8)).shape == (2, 3)


def test_vit_is_pre_norm():
    """One block by hand, pre-norm: Z + MHSA(LN(Z)), then + MLP(LN(Z)), GELU MLP 4D wide."""
    torch.manual_seed(3)
    block = ref.VisionTransformer((1, 4, 4), 2, 8, 2, 3, num_encoder_blocks=1).double().blocks[0]
    z = torch.randn(2, 5, 8, dtype=torch.float64)
    ln = lambda t, mod: F.layer_norm(t, (8,), mod.weight, mod.bias)  # noqa: E731
    z1 = z + block.attn(ln(z, block.ln_1))
    mlp = block.mlp
    assert mlp.fc.out_features == 32
    expected = z1 + mlp.proj(F.gelu(mlp.fc(ln(z1, block.ln_2))))
    torch.testing.assert_close(block(z), expected, rtol=1e-12, atol=1e-12)
