"""vit's test_vit_block_is_wired_as_the_handout (found by a tester, 2026-12): a block whose attention output never
enters the residual stream (`y = x + attn(norm1(x)); return x + mlp(norm2(y))`) and one whose MLP reads the
attention's output alone (`a = attn(norm1(x)); return x + a + mlp(norm2(a))`) got full marks: the zeroed-block
test zeroes a whole block, which silences both branches of either. The wiring test runs each branch in a block of
its own (the MLP's two layers, or every other weight, set to zero; every parameter of D values set to 1) and
compares with both branches in one block. Each layout below is built here (trusted code, no worker), given the
plan's values configuration by configuration (`_wiring_plan`, the values the grading test sends), and run: every
correct layout (timm's Block with LayerScale, lucidrains' PreNorm, nn.TransformerEncoderLayer(norm_first=True),
nn.MultiheadAttention, per-head layers, extra LayerNorms on a branch, one LayerNorm for both branches, no final
LayerNorm, blocks keyed by letters) gives equal logits; each wrong wiring does not, and the two the tester found are
named by their own hints.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

T = pytest.importorskip("assignments.vit.test_vit_blocks_wiring")

D, H, OUT, IMG, P = 8, 2, 6, (3, 8, 8), 4   # the grading test's model: D, out and N + 1 = 5 pairwise different
N = (IMG[1] // P) * (IMG[2] // P)


def _attend(q, k, v):                                                   # (B, h, N, d) each
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


def _heads(t, h=H):                                                     # (B, N, h*d) -> (B, h, N, d)
    B, n, _ = t.shape
    return t.view(B, n, h, -1).transpose(1, 2)


def _merge(t):                                                          # (B, h, N, d) -> (B, N, h*d)
    B, h, n, d = t.shape
    return t.transpose(1, 2).reshape(B, n, h * d)


class FusedAttention(nn.Module):                                        # timm's Attention
    def __init__(self, bias=True):
        super().__init__()
        self.qkv, self.proj = nn.Linear(D, 3 * D, bias=bias), nn.Linear(D, D)

    def forward(self, x):
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        return self.proj(_merge(_attend(_heads(q), _heads(k), _heads(v))))


class Mlp(nn.Module):
    def __init__(self, width=4 * D):
        super().__init__()
        self.fc1, self.act, self.drop, self.fc2 = nn.Linear(D, width), nn.GELU(), nn.Dropout(0.1), nn.Linear(width, D)

    def forward(self, x):
        return self.fc2(self.drop(self.act(self.fc1(x))))


class Timm(nn.Module):
    """timm's Block: LayerScale (init_values 1e-5) on each branch, DropPath (off in eval mode)."""

    def __init__(self, layerscale=1e-5):
        super().__init__()
        self.norm1, self.attn, self.norm2, self.mlp = nn.LayerNorm(D), FusedAttention(), nn.LayerNorm(D), Mlp()
        self.layerscale = layerscale
        if layerscale:
            self.ls1, self.ls2 = nn.Parameter(layerscale * torch.ones(D)), nn.Parameter(layerscale * torch.ones(D))

    def forward(self, x):
        g1, g2 = (self.ls1, self.ls2) if self.layerscale else (1.0, 1.0)
        x = x + g1 * self.attn(self.norm1(x))
        return x + g2 * self.mlp(self.norm2(x))


class TorchLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = nn.TransformerEncoderLayer(D, H, dim_feedforward=4 * D, dropout=0.1, activation="gelu",
                                                batch_first=True, norm_first=True)

    def forward(self, x):
        return self.layer(x)


class Mha(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_a, self.mha, self.ln_b = nn.LayerNorm(D), nn.MultiheadAttention(D, H, batch_first=True), nn.LayerNorm(D)
        self.ffn = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))

    def forward(self, x):
        h = self.ln_a(x)
        x = x + self.mha(h, h, h, need_weights=False)[0]
        return x + self.ffn(self.ln_b(x))


class PreNorm(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.norm, self.fn = nn.LayerNorm(D), fn

    def forward(self, x):
        return self.fn(self.norm(x))


class LucidAttention(nn.Module):
    """lucidrains' Attention: to_qkv without bias, inner width heads * dim_head (here 32, the MLP's width too, so
    that to_out (D, 32) pairs with the MLP's first layer by shape)."""

    def __init__(self, dim_head=16):
        super().__init__()
        self.to_qkv = nn.Linear(D, 3 * H * dim_head, bias=False)
        self.to_out = nn.Sequential(nn.Linear(H * dim_head, D), nn.Dropout(0.1))

    def forward(self, x):
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        return self.to_out(_merge(_attend(_heads(q), _heads(k), _heads(v))))


class Lucid(nn.ModuleList):
    """vit-pytorch's Transformer layer: [PreNorm(Attention), PreNorm(FeedForward)], x = attn(x) + x; x = ff(x) + x."""

    def __init__(self):
        super().__init__([PreNorm(LucidAttention()),
                          PreNorm(nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Dropout(0.1), nn.Linear(4 * D, D),
                                                nn.Dropout(0.1)))])

    def forward(self, x):
        attn, ff = self
        x = attn(x) + x
        return ff(x) + x


class PerHead(nn.Module):
    """Karpathy's heads: a ModuleList of heads with key, query, value (d, D) and no bias, then proj."""

    class Head(nn.Module):
        def __init__(self):
            super().__init__()
            self.key, self.query, self.value = (nn.Linear(D, D // H, bias=False) for _ in range(3))

        def forward(self, x):
            return _attend(self.query(x), self.key(x), self.value(x))

    def __init__(self):
        super().__init__()
        self.ln1, self.heads, self.proj = nn.LayerNorm(D), nn.ModuleList(self.Head() for _ in range(H)), nn.Linear(D, D)
        self.ln2, self.ffwd = nn.LayerNorm(D), nn.Sequential(nn.Linear(D, 4 * D), nn.ReLU(), nn.Linear(4 * D, D))

    def forward(self, x):
        h = self.ln1(x)
        x = x + self.proj(torch.cat([head(h) for head in self.heads], dim=-1))
        return x + self.ffwd(self.ln2(x))


class Sandwich(Timm):
    """Extra LayerNorms: each branch's output normalized before it is added (NormFormer's, sandwich norm)."""

    def __init__(self):
        super().__init__(layerscale=0)
        self.post_attn, self.post_mlp = nn.LayerNorm(D), nn.LayerNorm(D)

    def forward(self, x):
        x = x + self.post_attn(self.attn(self.norm1(x)))
        return x + self.post_mlp(self.mlp(self.norm2(x)))


class OneNorm(Timm):
    """One LayerNorm for both branches (its weights shared): still LN(Z) each time."""

    def __init__(self):
        super().__init__(layerscale=0)
        del self.norm2

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm1(x))


class SecondResidualFromInput(Timm):
    def forward(self, x):
        y = x + self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(y))


class MlpReadsAttentionOnly(Timm):
    def forward(self, x):
        a = self.attn(self.norm1(x))
        return x + a + self.mlp(self.norm2(a))


class Parallel(Timm):
    def forward(self, x):
        h = self.norm1(x)
        return x + self.attn(h) + self.mlp(self.norm2(x))


class NoResiduals(Timm):
    def forward(self, x):
        return self.mlp(self.norm2(self.attn(self.norm1(x))))


class NoAttentionResidual(Timm):
    def forward(self, x):
        x = self.attn(self.norm1(x))
        return x + self.mlp(self.norm2(x))


class ViT(nn.Module):
    def __init__(self, block, blocks, final_norm=True, keys=None):
        super().__init__()
        self.patch_embedding = nn.Linear(IMG[0] * P * P, D)
        self.class_embedding = nn.Parameter(0.02 * torch.randn(1, 1, D))
        self.positional_embedding = nn.Parameter(0.02 * torch.randn(1, N + 1, D))
        if keys:  # an nn.ModuleDict keyed by letters: no number tells the blocks apart
            self.blocks = nn.ModuleDict({k: block() for k in keys[:blocks]})
        else:
            self.blocks = nn.ModuleList(block() for _ in range(blocks))
        self.norm = nn.LayerNorm(D) if final_norm else nn.Identity()
        self.head = nn.Linear(D, OUT)

    def forward(self, images):
        x = self.patch_embedding(F.unfold(images, P, stride=P).transpose(1, 2))
        z = torch.cat([self.class_embedding.expand(len(x), -1, -1), x], dim=1) + self.positional_embedding
        for block in (self.blocks.values() if isinstance(self.blocks, nn.ModuleDict) else self.blocks):
            z = block(z)
        return self.head(self.norm(z)[:, 0])


def _shapes(model):
    return {n: tuple(p.shape) for n, p in model.named_parameters()}


def _configurations(block, **kw):
    """{config: logits} of the two-block model given the plan's values in the grading test's order."""
    torch.manual_seed(0)
    one, two, three = (ViT(block, n, **kw) for n in (1, 2, 3))
    status, plan = T._wiring_plan(_shapes(one), _shapes(two), D, seed=1234, third=lambda: _shapes(three))
    assert status == "planned", plan
    two.eval()
    x = torch.randn(2, *IMG)
    params = dict(two.named_parameters())
    logits = {}
    with torch.no_grad():
        for key in "QPRST":
            for name, value in plan["steps"][key].items():
                params[name].copy_(value)
            logits[key] = two(x).double().numpy()
    return logits


CORRECT = {"timm_layerscale": (Timm, {}), "timm": (lambda: Timm(layerscale=0), {}),
           "torch_encoder_layer_norm_first": (TorchLayer, {}), "multihead_attention": (Mha, {}),
           "lucidrains": (Lucid, {}), "per_head": (PerHead, {}), "extra_layernorms": (Sandwich, {}),
           "one_layernorm": (OneNorm, {}), "no_final_layernorm": (Timm, {"final_norm": False}),
           "keyed_by_letters": (Timm, {"keys": ["ba", "bb", "bc"]})}


@pytest.mark.parametrize("layout", sorted(CORRECT))
def test_a_correct_block_gives_equal_logits_one_branch_at_a_time(layout):
    block, kw = CORRECT[layout]
    logits = _configurations(block, **kw)
    assert np.allclose(logits["P"], logits["Q"], rtol=1e-4, atol=1e-4), np.max(np.abs(logits["P"] - logits["Q"]))
    # and the comparison is not empty: each branch changes the logits
    scale = float(np.max(np.abs(logits["Q"])))
    assert T.changed(logits["R"], logits["S"], scale) and T.changed(logits["T"], logits["S"], scale)


@pytest.mark.parametrize("block,hint", [(SecondResidualFromInput, T.ATTENTION_NOT_ADDED_HINT),
                                        (MlpReadsAttentionOnly, T.MLP_READS_BRANCH_HINT),
                                        (Parallel, T.BLOCK_WIRING_HINT),
                                        # (in grading, left to test_vit_blocks_are_pre_norm_residual, which names them)
                                        (NoResiduals, None), (NoAttentionResidual, None)])
def test_a_block_wired_otherwise_gives_other_logits(block, hint):
    logits = _configurations(block)
    assert not np.allclose(logits["P"], logits["Q"], rtol=1e-4, atol=1e-4)
    seen, told = T._wiring_diagnosis(logits)
    if hint is not None:
        assert told == hint and bool(seen) == (hint != T.BLOCK_WIRING_HINT)


def test_the_mlp_pair_is_the_one_whose_names_are_closest():
    shapes = {"a.attn.to_out.0.weight": (D, 32), "a.ff.net.1.weight": (32, D), "a.ff.net.4.weight": (D, 32)}
    assert T._mlp_pair(shapes, D) == ("a.ff.net.1.weight", "a.ff.net.4.weight", 32)
    tie = {"x.w1": (32, D), "x.w2": (D, 32), "x.w3": (D, 32)}
    assert T._mlp_pair(tie, D) is None
