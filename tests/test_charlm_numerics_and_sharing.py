"""assignments/charlm/_common.py's layer norm on rows far from zero, and its blocks-share-weights hint, judged
on the trusted side with the student's code run here (no worker); the examples layernorm_one_pass_variance and
model_blocks_share_weights grade them end to end.

  * test_layer_norm_large_mean: a one-pass variance, E[x^2] - E[x]^2, loses most of float32's digits on rows
    such as 1000 +- 1, while every two-pass layer norm (F.layer_norm's own included) passes in float32, and so
    does one computed in float64 and rounded back; the hint names the one-pass formula, and an answer that is
    wrong in float32 only, rounded otherwise than the hint's, is told that it loses digits;
  * test_model_parameters_registered: a model whose blocks are one module repeated (`nn.Sequential(*[block] *
    n)`) is told so, not that num_layers is ignored or that the blocks sit in a plain list.
"""
import importlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
nn, F = torch.nn, torch.nn.functional
C = pytest.importorskip("assignments.charlm._layernorm")  # with all of _common

from checker.errors import GradingFailure  # noqa: E402
from checker.judging.compare import compare  # noqa: E402
from checker.spec import load_spec  # noqa: E402


class _Pending:
    def __init__(self, fn):
        self._fn = fn

    def get(self):
        return self._fn()


class _Together:
    def __init__(self):
        self.asks = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def call(self, name, *args):
        self.asks += 1
        return _Pending(lambda: self.fn(*args).detach().numpy())

    def forward(self, m, inputs, seed=0):
        self.asks += 1

        def run():
            torch.manual_seed(seed)
            with torch.no_grad():
                return type("R", (), {"outputs": [m.module(x).numpy() for x in inputs]})
        return _Pending(run)


class _Sub:
    """The student's layer_norm (or model forward) run here; every ask goes through one `together`."""

    def __init__(self, fn=None):
        self.fn, self.batches = fn, []

    def together(self, chain=False):
        t = _Together()
        t.fn = self.fn
        self.batches.append(t)
        return t


REF = importlib.import_module(load_spec("charlm")["reference"])  # assignments/charlm/reference.py


def _check(fn, seed):
    """The test's check of layer_norm `fn`, with the plugin's close (the layernorm question has no overrides)."""
    sub = _Sub(fn)
    C._check_layer_norm_large_mean(sub, REF, compare, np.random.default_rng(seed), (2, 4, 16))
    return sub


def _two_pass_var(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + eps)


def _two_pass_squares(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(((x - mean) ** 2).mean(-1, keepdim=True) + eps)


def _var_mean(x, eps=1e-5):
    var, mean = torch.var_mean(x, -1, unbiased=False, keepdim=True)
    return (x - mean) * torch.rsqrt(var + eps)


def _in_float64(x, eps=1e-5):
    return _two_pass_squares(x.double(), eps).to(x.dtype)


def _welford(x, eps=1e-5):  # one pass, but Welford's: stable
    mean, m2 = torch.zeros_like(x[..., :1]), torch.zeros_like(x[..., :1])
    for k in range(x.shape[-1]):
        d = x[..., k:k + 1] - mean
        mean = mean + d / (k + 1)
        m2 = m2 + d * (x[..., k:k + 1] - mean)
    return (x - mean) / torch.sqrt(m2 / x.shape[-1] + eps)


def _one_pass(x, eps=1e-5):
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt((x * x).mean(-1, keepdim=True) - mean * mean + eps)


def _one_pass_sums(x, eps=1e-5):
    n = x.shape[-1]
    s, s2 = x.sum(-1, keepdim=True), x.pow(2).sum(-1, keepdim=True)
    return (x - s / n) / torch.sqrt(s2 / n - (s / n) ** 2 + eps)


def _one_pass_reversed(x, eps=1e-5):
    """The one-pass formula summed in another order: rounded otherwise than the hint's answer model."""
    n, r = x.shape[-1], x.flip(-1)
    s2 = torch.zeros_like(x[..., :1])
    for k in range(n):
        s2 = s2 + r[..., k:k + 1] * r[..., k:k + 1]
    mean = x.mean(-1, keepdim=True)
    return (x - mean) / torch.sqrt(s2 / n - mean * mean + eps)


RIGHT = {"x.var(unbiased=False)": _two_pass_var, "((x - mean) ** 2).mean()": _two_pass_squares,
         "torch.var_mean": _var_mean, "float64 inside": _in_float64, "Welford": _welford,
         "F.layer_norm": lambda x, eps=1e-5: F.layer_norm(x, x.shape[-1:], eps=eps),
         "nn.LayerNorm": lambda x, eps=1e-5: nn.LayerNorm(x.shape[-1], eps=eps, elementwise_affine=False)(x)}


@pytest.mark.parametrize("name", list(RIGHT))
def test_every_two_pass_layer_norm_passes_on_rows_far_from_zero(name):
    for seed in range(30):
        sub = _check(RIGHT[name], seed)
        assert [t.asks for t in sub.batches] == [3]  # everything asked together: one round trip


@pytest.mark.parametrize("fn", [_one_pass, _one_pass_sums])
def test_the_one_pass_variance_is_named(fn):
    for seed in range(20):
        with pytest.raises(GradingFailure) as e:
            _check(fn, seed)
        assert "Likely mistake: " + C.LN_ONE_PASS_HINT[:40] in e.value.message
        assert "unbiased variance" not in e.value.message


def test_an_answer_wrong_in_float32_only_is_told_that_it_loses_digits():
    told = set()
    for seed in range(20):
        with pytest.raises(GradingFailure) as e:
            _check(_one_pass_reversed, seed)
        told.add(C.LN_ONE_PASS_HINT in e.value.message)
        assert C.LN_ONE_PASS_HINT in e.value.message or C.LN_LOSES_DIGITS_HINT in e.value.message
    assert False in told  # the fallback was needed at some seed


def test_a_wrong_layer_norm_is_not_told_that_it_loses_digits():
    unbiased = lambda x, eps=1e-5: (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, keepdim=True) + eps)  # noqa: E731
    with pytest.raises(GradingFailure) as e:
        _check(unbiased, 0)
    assert "unbiased variance" in e.value.message and "loses digits" not in e.value.message


@pytest.mark.parametrize("fn", [
    lambda x, eps=1e-5: (x - x.mean(-1, keepdim=True)) / (x.std(-1, unbiased=False, keepdim=True) + eps),
    lambda x, eps=1e-3: _two_pass_squares(x, eps),  # another default eps
    lambda x, eps=1e-5: _two_pass_squares(x, 0.0)])  # eps ignored
def test_a_mistake_the_rows_far_from_zero_hide_earns_nothing_there(fn):
    """Beside a variance of 1 to 4, eps and where it goes change nothing a tolerance sees: the test is
    skipped (worth nothing) for a layer_norm that is wrong on rows of a small spread."""
    with pytest.raises(pytest.skip.Exception) as e:
        _check(fn, 0)
    assert "rows of a small spread" in str(e.value)


# the blocks share one set of weights ---------------------------------------------------------------------

V, BS, D, H = C.MODEL[0], C.MODEL[1], C.MODEL[2], C.MODEL[3]


class _Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(D), nn.LayerNorm(D)
        self.attn = nn.MultiheadAttention(D, H, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(D, 4 * D), nn.GELU(), nn.Linear(4 * D, D))

    def forward(self, x):
        T = x.shape[1]
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class _Model(nn.Module):
    def __init__(self, num_layers, how):
        super().__init__()
        self.emb, self.pos = nn.Embedding(V, D), nn.Embedding(BS, D)
        if how == "shared":
            block = _Block()
            self.blocks = nn.Sequential(*[block] * num_layers)
        elif how == "ignored":
            self.blocks = nn.Sequential(*[_Block() for _ in range(3)])
        else:  # a plain list: not registered
            self.blocks = [_Block() for _ in range(num_layers)]
        self.ln, self.head = nn.LayerNorm(D), nn.Linear(D, V)

    def forward(self, idx):
        x = self.emb(idx) + self.pos(torch.arange(idx.shape[1]))
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


class _Handle:
    def __init__(self, num_layers, how, seed):
        torch.manual_seed(seed)
        self.module = _Model(num_layers, how).eval()
        self.n_params = sum(p.numel() for p in self.module.parameters())


@pytest.mark.parametrize("how,shared", [("shared", True), ("ignored", False), ("plain list", False)])
def test_blocks_that_share_one_set_of_weights_are_told_apart(how, shared):
    m, deeper = _Handle(C.MODEL[4], how, 7), _Handle(C.MODEL[4] + 2, how, 7)
    assert deeper.n_params <= m.n_params  # what test_model_parameters_registered fails on
    sub = _Sub()
    idx = torch.from_numpy(np.random.default_rng(0).integers(0, V, (2, BS)))
    assert C._blocks_share_weights(sub, m, deeper, C.MODEL, idx, 7) is shared
    assert len(sub.batches) == (1 if how != "plain list" else 0)  # both forwards in one round trip
    assert "nn.Sequential(*[block] * num_layers)" in C.SHARED_BLOCKS_HINT
