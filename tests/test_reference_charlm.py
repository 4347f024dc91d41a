"""Independent evidence that reference/charlm.py is right: torch's own ops and the formulas written out."""

import math

import pytest
import torch
import torch.nn.functional as F

import importlib

from checker.spec import load_spec

ref = importlib.import_module(load_spec('charlm')["reference"])  # assignments/charlm/reference.py


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)  # every test sees the same random inputs, run alone or together


def test_build_vocab_small_text():
    stoi, itos = ref.build_vocab("hello world")
    assert list(stoi) == [" ", "d", "e", "h", "l", "o", "r", "w"]
    assert stoi == {ch: i for i, ch in enumerate(" dehlorw")}
    assert itos == {i: ch for ch, i in stoi.items()}
    assert "".join(itos[stoi[c]] for c in "hello world") == "hello world"


def test_make_blocks_small_text():
    stoi, _ = ref.build_vocab("abcabd")
    data = torch.tensor([stoi[c] for c in "abcabd"], dtype=torch.long)  # [0, 1, 2, 0, 1, 3]
    x, y = ref.make_blocks(data, 3)
    assert x.shape == y.shape == (3, 3)
    assert x.tolist() == [[0, 1, 2], [1, 2, 0], [2, 0, 1]]
    assert y.tolist() == [[1, 2, 0], [2, 0, 1], [0, 1, 3]]


@pytest.mark.parametrize("L,bs", [(20, 4), (9, 8), (50, 1)])
def test_make_blocks_against_windows(L, bs):
    data = torch.randint(0, 10, (L,))
    x, y = ref.make_blocks(data, bs)
    assert x.shape == y.shape == (L - bs, bs)
    for i in range(L - bs):
        assert torch.equal(x[i], data[i:i + bs]) and torch.equal(y[i], data[i + 1:i + bs + 1])


def test_causal_mask():
    m = ref.causal_mask(4)
    assert m.dtype == torch.bool and m.shape == (4, 4)
    assert m.tolist() == [[i < j for j in range(4)] for i in range(4)]  # True where key j > query i


@pytest.mark.parametrize("lead", [(), (3,), (2, 4)])
def test_masked_attention_matches_sdpa(lead):
    T, dk, dv = 6, 8, 5
    Q, K = torch.randn(*lead, T, dk, dtype=torch.float64), torch.randn(*lead, T, dk, dtype=torch.float64)
    V = torch.randn(*lead, T, dv, dtype=torch.float64)
    expected = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    got = ref.masked_attention(Q, K, V)
    assert got.shape == (*lead, T, dv)
    torch.testing.assert_close(got, expected, rtol=1e-12, atol=1e-12)


def test_masked_attention_first_row_is_first_value():
    Q, K, V = torch.randn(2, 5, 4), torch.randn(2, 5, 4), torch.randn(2, 5, 3)
    torch.testing.assert_close(ref.masked_attention(Q, K, V)[:, 0], V[:, 0])


@pytest.mark.parametrize("shape", [(7,), (3, 10), (2, 4, 6)])
@pytest.mark.parametrize("eps", [1e-5, 0.1])
def test_layer_norm_matches_torch(shape, eps):
    x = 3 * torch.randn(shape, dtype=torch.float64) + 1
    expected = F.layer_norm(x, x.shape[-1:], eps=eps)
    torch.testing.assert_close(ref.layer_norm(x, eps=eps), expected, rtol=1e-12, atol=1e-12)


def test_layer_norm_is_not_unbiased_or_eps_on_std():
    x = torch.tensor([[1.0, 2.0, 4.0]], dtype=torch.float64)
    got = ref.layer_norm(x, eps=0.5)
    mu = x.mean(-1, keepdim=True)
    assert not torch.allclose(got, (x - mu) / torch.sqrt(x.var(-1, keepdim=True) + 0.5))
    assert not torch.allclose(got, (x - mu) / (x.std(-1, unbiased=False, keepdim=True) + 0.5))


def _positions_by_loop(T, d):
    pe = [[0.0] * d for _ in range(T)]
    for p in range(T):
        for i in range((d + 1) // 2):
            angle = p / 10000 ** (2 * i / d)
            pe[p][2 * i] = math.sin(angle)
            if 2 * i + 1 < d:
                pe[p][2 * i + 1] = math.cos(angle)
    return torch.tensor(pe, dtype=torch.float64)


@pytest.mark.parametrize("T,d", [(10, 16), (7, 5), (1, 2), (64, 33)])
def test_sinusoidal_positions_against_loop(T, d):
    got = ref.sinusoidal_positions(T, d)
    assert got.shape == (T, d) and got.dtype == torch.get_default_dtype()
    torch.testing.assert_close(got.double(), _positions_by_loop(T, d), rtol=0, atol=1e-6)


def _tiny_model(seed=0):
    torch.manual_seed(seed)
    return ref.CharTransformer(vocab_size=11, block_size=8, d_model=16, num_heads=4, num_layers=2).double().eval()


def test_char_transformer_shapes_and_gradients():
    model = _tiny_model()
    idx = torch.randint(0, 11, (3, 8))
    logits = model(idx)
    assert logits.shape == (3, 8, 11) and logits.dtype == torch.float64
    assert model(idx[:, :5]).shape == (3, 5, 11)
    F.cross_entropy(logits.reshape(-1, 11), idx.reshape(-1)).backward()
    assert all(p.grad is not None for p in model.parameters())
    with pytest.raises(ValueError):
        model(torch.zeros(1, 9, dtype=torch.long))


@pytest.mark.parametrize("t", [0, 3, 6])
def test_char_transformer_is_causal(t):
    model = _tiny_model(1)
    idx = torch.randint(0, 11, (2, 8))
    changed = idx.clone()
    changed[:, t + 1:] = (changed[:, t + 1:] + 1 + torch.randint(0, 10, changed[:, t + 1:].shape)) % 11
    with torch.no_grad():
        a, b = model(idx), model(changed)
    torch.testing.assert_close(a[:, :t + 1], b[:, :t + 1], rtol=0, atol=1e-12)
    assert not torch.allclose(a[:, t + 1:], b[:, t + 1:])  # the future tokens did change something


def test_char_transformer_on_meta_device():
    with torch.device("meta"):
        model = ref.CharTransformer(65, 256, 384, 6, 6)
        out = model(torch.zeros(2, 256, dtype=torch.long))
    assert out.shape == (2, 256, 65)
