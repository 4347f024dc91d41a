"""vit's temperature test reads the layouts of MultiHeadSelfAttention that students write (found by a tester,
2026-11-27): a lucidrains to_q + fused to_kv (2D, D), a ModuleList of heads each with a fused qkv (3D/h, D), Keras'
EinsumDense kernels (D, h, d_k) and (h, d_k, D), and TransformerLens' W_Q (h, D, d_head) with a 2-D bias
(h, d_head) were not understood, so the test skipped and a wrong scale kept full marks. Each layout below is built
here (trusted code, no worker), set in every way `_identity_weights` offers, and run: one way must make it attention
at the right temperature, sqrt(D/h), with the identity for its projections; a layout it cannot read is named in
the skip. And the weight test's exemption of a key bias goes by size, never by name.
"""
import math

import numpy as np
import pytest
import torch
import torch.nn as nn

T = pytest.importorskip("assignments.vit.test_vit_mhsa_temperature")
M = pytest.importorskip("assignments.vit.test_vit_mhsa")

D, H = 12, 3
DH = D // H


def _heads(t, h):                                                       # (B, N, D) -> (B, h, N, D/h)
    B, N, _ = t.shape
    return t.view(B, N, h, -1).transpose(1, 2)


def _merge(t):                                                          # (B, h, N, D/h) -> (B, N, D)
    B, h, N, d = t.shape
    return t.transpose(1, 2).reshape(B, N, h * d)


def _attend(q, k, v):
    return torch.softmax(q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]), dim=-1) @ v


class LucidToKV(nn.Module):
    def __init__(self):
        super().__init__()
        self.to_q, self.to_kv = nn.Linear(D, D, bias=False), nn.Linear(D, 2 * D, bias=False)
        self.to_out = nn.Linear(D, D)

    def forward(self, x):
        k, v = self.to_kv(x).chunk(2, dim=-1)
        return self.to_out(_merge(_attend(_heads(self.to_q(x), H), _heads(k, H), _heads(v, H))))


class Head(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv = nn.Linear(D, 3 * DH)  # (3D/h, D): square at D = 12, 3 heads, as a whole-width (D, D) is

    def forward(self, x):
        return _attend(*self.qkv(x).chunk(3, dim=-1))


class PerHeadFused(nn.Module):
    def __init__(self):
        super().__init__()
        self.heads, self.proj = nn.ModuleList(Head() for _ in range(H)), nn.Linear(D, D)

    def forward(self, x):
        return self.proj(torch.cat([h(x) for h in self.heads], dim=-1))


class KerasEinsum(nn.Module):
    def __init__(self, bias):
        super().__init__()
        self.query_kernel, self.key_kernel, self.value_kernel = (nn.Parameter(torch.randn(D, H, DH)) for _ in range(3))
        self.output_kernel, self.output_bias = nn.Parameter(torch.randn(H, DH, D)), nn.Parameter(torch.randn(D))
        self.bias = bias
        if bias:
            self.query_bias, self.key_bias, self.value_bias = (nn.Parameter(torch.randn(H, DH)) for _ in range(3))

    def forward(self, x):
        q, k, v = (torch.einsum("abc,cde->abde", x, w) for w in (self.query_kernel, self.key_kernel, self.value_kernel))
        if self.bias:
            q, k, v = q + self.query_bias, k + self.key_bias, v + self.value_bias
        out = _attend(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)).transpose(1, 2)   # (B, N, h, d_k)
        return torch.einsum("abcd,cde->abe", out, self.output_kernel) + self.output_bias


class TransformerLens(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_Q, self.W_K, self.W_V = (nn.Parameter(torch.randn(H, D, DH)) for _ in range(3))
        self.W_O = nn.Parameter(torch.randn(H, DH, D))
        self.b_Q, self.b_K, self.b_V = (nn.Parameter(torch.randn(H, DH)) for _ in range(3))
        self.b_O = nn.Parameter(torch.randn(D))

    def forward(self, x):
        q, k, v = (torch.einsum("bnd,hdk->bhnk", x, W) + b[:, None] for W, b in
                   ((self.W_Q, self.b_Q), (self.W_K, self.b_K), (self.W_V, self.b_V)))
        return torch.einsum("bhnk,hkd->bnd", _attend(q, k, v), self.W_O) + self.b_O


class TimmByHead(nn.Module):
    def __init__(self):
        super().__init__()
        self.qkv, self.proj = nn.Linear(D, 3 * D), nn.Linear(D, D)

    def forward(self, x):
        B, N, _ = x.shape
        q, k, v = self.qkv(x).reshape(B, N, H, 3, DH).permute(3, 0, 2, 1, 4)
        return self.proj(_merge(_attend(q, k, v)))


class FusedUsedAsXW(nn.Module):
    def __init__(self):
        super().__init__()
        self.W_qkv, self.W_o = nn.Parameter(torch.randn(D, 3 * D)), nn.Parameter(torch.randn(D, D))

    def forward(self, x):
        q, k, v = (x @ self.W_qkv).split(D, dim=-1)
        return _merge(_attend(_heads(q, H), _heads(k, H), _heads(v, H))) @ self.W_o


class NumberedProjections(nn.Module):
    """q, k, v and o as `proj.0` .. `proj.3`: numbered like heads, but whole-width (D, D) layers."""

    def __init__(self):
        super().__init__()
        self.proj = nn.ModuleList(nn.Linear(D, D) for _ in range(4))

    def forward(self, x):
        q, k, v = (_heads(p(x), H) for p in self.proj[:3])
        return self.proj[3](_merge(_attend(q, k, v)))


class TorchMHA(nn.Module):
    def __init__(self):
        super().__init__()
        self.mha = nn.MultiheadAttention(D, H, batch_first=True)

    def forward(self, x):
        return self.mha(x, x, x, need_weights=False)[0]


class Fake:
    """What the grader holds of a module in the worker: its parameters' names and shapes."""

    def __init__(self, module):
        self.params = [{"name": n, "shape": list(p.shape)} for n, p in module.named_parameters()]


LAYOUTS = {"lucid_to_kv": LucidToKV, "perhead_fused": PerHeadFused, "keras": lambda: KerasEinsum(True),
           "keras_nobias": lambda: KerasEinsum(False), "transformerlens": TransformerLens, "timm_by_head": TimmByHead,
           "fused_used_as_x_at_W": FusedUsedAsXW, "numbered_projections": NumberedProjections, "torch_mha": TorchMHA}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
def test_one_way_makes_the_layout_attention_at_the_head_width(layout):
    torch.manual_seed(0)
    module = LAYOUTS[layout]().eval()
    ways, unknown = T._identity_weights(Fake(module), D, H)
    assert ways and not unknown, unknown
    assert len(ways) <= 2 * T.MAX_WAYS
    x = torch.from_numpy(np.random.default_rng(1).standard_normal((1, 7, D)).astype(np.float32))
    want = T._attention_with_identity_weights(x[0].double().numpy(), H, math.sqrt(DH))
    right = []
    for values in ways:
        with torch.no_grad():
            for name, p in module.named_parameters():
                p.copy_(torch.from_numpy(values[name]))
            got = module(x)[0].double().numpy()
        right.append(T._close_to(got, want))
    assert any(right), layout


def test_a_layout_it_cannot_read_is_named_in_the_skip():
    module = TransformerLens()
    module.rel = nn.Parameter(torch.zeros(5, D))  # a relative-position table: no reading of it is known
    ways, unknown = T._identity_weights(Fake(module), D, H)
    assert ways == [] and unknown == [f"`rel` (5, {D})"]


def test_per_head_parameters_that_miss_a_head_are_not_read_by_head():
    module = PerHeadFused()
    fake = Fake(module)
    fake.params = [p for p in fake.params if not p["name"].startswith("heads.2.")]
    ways, unknown = T._identity_weights(fake, D, H)
    # heads.0 and heads.1 alone: each (D/h*3, D) = (D, D) is then read only as a whole-width identity
    assert ways and all(np.array_equal(w["heads.0.qkv.weight"], np.eye(D)) for w in ways)


def test_a_key_bias_is_exempt_by_size_never_by_name():
    D8, h2 = 8, 2  # test_mhsa_every_weight_reaches_the_output's sizes
    assert M._bias_sized((h2, D8 // h2), D8, h2)            # TransformerLens' b_K, Keras' key_bias
    assert M._bias_sized((1, 1, D8), D8, h2)
    assert M._bias_sized((3, h2, D8 // h2), D8, h2)         # q, k and v's biases together
    assert not M._bias_sized((D8, D8), D8, h2)              # a weight matrix, whatever it is called
    assert not M._bias_sized((h2, D8, D8 // h2), D8, h2)
    assert not M._bias_sized((D8 // h2, D8), D8, h2)        # one head's projection
