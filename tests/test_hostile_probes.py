"""Hostile modules against what a worker's probes report of them (an attacker's probe: item F6).

`checker.worker.probes` builds a student's nn.Module and reports its parameter count, its parameters' names,
shapes and devices, and which of them a backward pass reached; the trusted side gives points on these
(`test_mhsa_parameter_count` earns on the count). They were read through methods the student's class may
override: a `parameters()` that yields 1,000 made-up values besides the registered ones passed the count
test with the per-head layers kept in a plain list (not registered, so never trained). Now they are read
from nn.Module's own registries (`probes.registered`), as torch itself registered them.

Each class here is written to a file and loaded as a submission's namespace (in this process: the probes
are plain functions of that namespace), then its report is compared with its honest twin's (the same class
without the trick); the attacker's own file is graded end to end by a real worker.
"""
import runpy
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from checker.worker.probes import Probes, count_parameters, registered  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
D, H = 12, 3

# the reproducer's module: one Q, K and V layer per head in a plain list (not registered), and an output
# projection: torch registers 12*12 + 12 = 156 values, far from the 4 * D * D = 576 the test asks for
HONEST = textwrap.dedent('''
    import torch
    import torch.nn as nn


    class Fake(nn.Parameter):
        pass


    class MultiHeadSelfAttention(nn.Module):
        def __init__(self, hidden_dim, num_heads):
            super().__init__()
            self.num_heads = num_heads
            self.d_head = hidden_dim // num_heads
            self.q_mappings = [nn.Linear(hidden_dim, self.d_head) for _ in range(num_heads)]
            self.k_mappings = [nn.Linear(hidden_dim, self.d_head) for _ in range(num_heads)]
            self.v_mappings = [nn.Linear(hidden_dim, self.d_head) for _ in range(num_heads)]
            self.out_proj = nn.Linear(hidden_dim, hidden_dim)
            self.unused = nn.Linear(hidden_dim, 1)
            self.setup()

        def setup(self):
            pass

        def forward(self, X):
            results = []
            for h in range(self.num_heads):
                q, k, v = self.q_mappings[h](X), self.k_mappings[h](X), self.v_mappings[h](X)
                attention = torch.softmax(q @ k.transpose(1, 2) / self.d_head ** 0.5, dim=-1)
                results.append(attention @ v)
            return self.out_proj(torch.cat(results, dim=-1))
''')
HONEST_COUNT = D * D + D + D + 1  # out_proj and the unused layer

TRICKS = {
    # the attacker's own: parameters() yields made-up values besides the registered ones
    "parameters": '''
        def parameters(self, recurse=True):
            yield from super().parameters(recurse)
            yield nn.Parameter(torch.zeros(1000))
    ''',
    # torch's parameters() asks named_parameters(), which asks named_modules(): each may be overridden
    "named_parameters": '''
        def named_parameters(self, prefix="", recurse=True, remove_duplicate=True):
            yield from super().named_parameters(prefix, recurse, remove_duplicate)
            yield "extra", nn.Parameter(torch.zeros(1000))
    ''',
    "named_modules": '''
        def named_modules(self, memo=None, prefix="", remove_duplicate=True):
            yield from super().named_modules(memo, prefix, remove_duplicate)
            yield "extra", nn.Linear(40, 25)
    ''',
    "modules_and_children": '''
        def modules(self):
            yield from super().modules()
            yield nn.Linear(40, 25)

        def children(self):
            yield from super().children()
            yield nn.Linear(40, 25)
    ''',
    # the registry itself, read through attribute access the class controls
    "getattribute": '''
        def __getattribute__(self, name):
            if name == "_parameters":
                return {**object.__getattribute__(self, "_parameters"), "extra": nn.Parameter(torch.zeros(1000))}
            return super().__getattribute__(name)
    ''',
    # a registry that is a dict subclass answering more than it holds
    "registry_subclass": '''
        def setup(self):
            class Padded(dict):
                def items(self):
                    return [*super().items(), ("extra", nn.Parameter(torch.zeros(1000)))]

                def values(self):
                    return [v for _k, v in self.items()]
            object.__setattr__(self.out_proj, "_parameters", Padded(self.out_proj._parameters))
    ''',
    # a registered parameter whose own methods lie about its size
    "parameter_subclass": '''
        def setup(self):
            class Big(Fake):
                def numel(self):
                    return 1000

                @property
                def shape(self):
                    return torch.Size([1000])

                @classmethod
                def __torch_function__(cls, func, types, args=(), kwargs=None):
                    if getattr(func, "__name__", "") == "numel":
                        return 1000
                    return torch._C._disabled_torch_function_impl(func, types, args, kwargs or {})
            self.unused.bias = Big(torch.zeros(1))
    ''',
    # a module's state_dict, len and the like are not asked at all; a `__len__` must change nothing either
    "len_and_state_dict": '''
        def __len__(self):
            return 1000

        def state_dict(self, *args, **kwargs):
            return {"extra": torch.zeros(1000)}
    ''',
}


def _load(tmp_path, name, body=""):
    text = HONEST.replace("    def setup(self):\n        pass\n", "") if "def setup" in body else HONEST
    assert "def setup" not in body or text != HONEST
    path = tmp_path / f"{name}.py"
    path.write_text(text + textwrap.indent(textwrap.dedent(body), "    "))
    return Probes(runpy.run_path(str(path)))


def _built(probes):
    return probes.new("MultiHeadSelfAttention", [D, H], {}, 0, "cpu", "float32")


def test_the_honest_twin_counts_what_torch_registers(tmp_path):
    probes = _load(tmp_path, "honest")
    info = _built(probes)
    m = probes.modules[info["handle"]]
    assert info["n_params"] == HONEST_COUNT == sum(p.numel() for p in m.parameters())
    assert [p["name"] for p in info["params"]] == [n for n, _ in m.named_parameters()]
    assert [(p["shape"], p["dtype"], p["device"]) for p in info["params"]] == [
        (list(p.shape), "float32", "cpu") for _, p in m.named_parameters()]


@pytest.mark.parametrize("trick", list(TRICKS))
def test_a_class_that_answers_for_its_parameters_is_counted_as_torch_registered_them(tmp_path, trick):
    probes = _load(tmp_path, trick, TRICKS[trick])
    info = _built(probes)
    assert info["n_params"] == HONEST_COUNT, (trick, info["n_params"])
    assert info["n_params"] < 4 * D * D  # the parameter-count test's bound: not earned
    assert [p["name"] for p in info["params"]] == ["out_proj.weight", "out_proj.bias", "unused.weight",
                                                   "unused.bias"], info["params"]
    assert {tuple(p["shape"]) for p in info["params"]} <= {(D, D), (D,), (1, D), (1,)}, info["params"]
    meta = probes.meta_forward("MultiHeadSelfAttention", [D, H], {}, [2, 5, D], "float32", None)
    assert meta["n_params"] == HONEST_COUNT, meta


def test_registered_lists_as_torch_does(tmp_path):
    """Shared modules and tied parameters once, in named_modules' order, buffers too, None entries left out."""
    import torch.nn as nn

    class Tied(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = nn.Linear(3, 4)
            self.w = nn.Parameter(torch.ones(3))
            self.seq = nn.Sequential(nn.Linear(4, 4), self.a, nn.LayerNorm(4))
            self.b = self.a
            self.head = nn.Linear(4, 3, bias=False)
            self.head.weight = self.seq[0].weight
            self.register_buffer("mask", torch.zeros(2))
            self.register_buffer("nothing", None)
            self.empty = None
            self.seq.add_module("bn", nn.BatchNorm1d(4))
    m = Tied()
    assert [n for n, _ in registered(m)] == [n for n, _ in m.named_parameters()]
    assert all(p is q for (_, p), (_, q) in zip(registered(m), m.named_parameters()))
    assert [n for n, _ in registered(m, "_buffers")] == [n for n, _ in m.named_buffers()]
    assert count_parameters(m) == sum(p.numel() for p in m.parameters())


def test_a_deep_chain_of_modules_is_walked_without_recursion():
    import torch.nn as nn
    m = top = nn.Module()
    for _ in range(3000):
        child = nn.Module()
        m.add_module("c", child)
        m = child
    m.w = nn.Parameter(torch.zeros(7))
    assert count_parameters(top) == 7


def test_gradients_are_cleared_and_read_whatever_zero_grad_does(tmp_path):
    """A class whose zero_grad keeps the gradients it gave every parameter at build time: its unused layer
    looked reached by backward (has_grad) and `every parameter in the graph` passed."""
    trick = '''
        def setup(self):
            for p in self.parameters():
                p.grad = torch.ones_like(p)

        def zero_grad(self, set_to_none=True):
            pass
    '''
    probes = _load(tmp_path, "stale_grads", trick)
    info = _built(probes)
    x = torch.randn(2, 5, D)
    grads = probes.grads(info["handle"], x, torch.ones(2, 5, D), 0)
    reached = {p["name"]: p["has_grad"] for p in grads["params"]}
    assert reached == {"out_proj.weight": True, "out_proj.bias": True, "unused.weight": False,
                       "unused.bias": False}, reached


def test_devices_are_read_from_the_registered_tensors(tmp_path):
    """A class whose `to` keeps it where it is and whose named_parameters/named_buffers answer tensors on the
    device asked for: the report said the module had moved."""
    trick = '''
        def setup(self):
            self.register_buffer("table", torch.zeros(3))

        def to(self, *args, **kwargs):
            return self

        def named_parameters(self, *args, **kwargs):
            for n, p in super().named_parameters(*args, **kwargs):
                yield n, p.to("meta")

        def named_buffers(self, *args, **kwargs):
            for n, b in super().named_buffers(*args, **kwargs):
                yield n, b.to("meta")
    '''
    probes = _load(tmp_path, "stays", trick)
    info = _built(probes)
    moved = probes.to(info["handle"], "meta")
    assert {p["device"] for p in moved["params"]} == {"cpu"}, moved
    assert [(b["name"], b["device"]) for b in moved["buffers"]] == [("table", "cpu")], moved


def test_parameters_are_got_and_set_in_the_registered_tensors(tmp_path):
    trick = '''
        def named_parameters(self, *args, **kwargs):
            for n, p in super().named_parameters(*args, **kwargs):
                yield n, nn.Parameter(torch.full_like(p, 7.0))
    '''
    probes = _load(tmp_path, "copies", trick)
    info = _built(probes)
    m = probes.modules[info["handle"]]
    got = probes.get_params(info["handle"], ["out_proj.bias"])
    assert torch.equal(got["out_proj.bias"], m.out_proj.bias.detach())
    probes.set_params(info["handle"], {"out_proj.bias": torch.arange(D, dtype=torch.float32)})
    assert torch.equal(m.out_proj.bias.detach(), torch.arange(D, dtype=torch.float32))


# ------------------------------------------------------------------ the attacker's file, graded end to end

@pytest.mark.slow
def test_the_forged_count_earns_nothing_and_the_honest_count_is_kept(tmp_path):
    from checker.running.runner import Grader
    correct = ROOT / "assignments" / "vit" / "examples" / "correct.py"
    with Grader(mode="public", devices=("cpu",), pytest_args=["-k", "test_mhsa_parameter_count"]) as g:
        path = tmp_path / "list_heads_fake_count.py"  # the attacker's file: HONEST with its parameters()
        path.write_text(HONEST + textwrap.indent(textwrap.dedent(TRICKS["parameters"]), "    "))
        forged = g.grade(str(path), "vit")
        honest = g.grade(str(correct), "vit")
    for card, outcome in ((forged, "failed"), (honest, "passed")):
        tests = [t for q in card["questions"] for t in q["tests"] if t["name"].startswith("test_mhsa_parameter_count")]
        assert tests and all(t["outcome"] == outcome for t in tests), [(t["name"], t["outcome"]) for t in tests]
    assert f"has {HONEST_COUNT} registered parameter values" in " ".join(
        t.get("message", "") for q in forged["questions"] for t in q["tests"]), forged


# ------------------------------------------------------------------ dtypes read from the bytes, not the claim

LYING_LOGITS = '''

class _Logits(torch.Tensor):
    __module__ = "torch.logits"  # the wire encodes it as a plain tensor: its real float32 bytes
    @property
    def dtype(self):  # what the worker's forward probe would report as the logits' dtype
        return torch.float64


_forward = CharTransformer.forward
def _lying_forward(self, *args, **kwargs):
    out = _forward(self, *args, **kwargs)
    return out.float().as_subclass(_Logits)  # float32 logits whatever the parameters' dtype, said to be float64
CharTransformer.forward = _lying_forward
'''


def test_output_dtypes_are_the_bytes_dtypes():
    import numpy as np
    from checker.running.modules import output_dtypes
    f32, f64 = np.zeros(2, np.float32), np.zeros(2)
    outputs = [f64, (f32, f64), {"loss": f64, "logits": f32}, f32, "text"]
    wire = ["float64", "float32", "float64", "float64", "float32", "bfloat16"]
    assert output_dtypes(outputs, wire) == ["float64", "float32", "float32", "bfloat16", "str"]
    # names that do not line up with the arrays (a forged reply): the arrays' own dtypes
    assert output_dtypes(outputs, wire[:2]) == ["float64", "float32", "float32", "float32", "str"]


@pytest.mark.slow
def test_a_tensor_that_claims_another_dtype_is_judged_by_its_bytes(tmp_path):
    from checker.running.runner import Grader
    reference = (ROOT / "assignments" / "charlm" / "reference.py").read_text()
    path = tmp_path / "logits_claim_float64.py"
    path.write_text(reference + LYING_LOGITS)
    with Grader(mode="hidden", devices=("cpu",), pytest_args=["-k", "test_model_float64"]) as g:
        lying, honest = g.grade(str(path), "charlm"), g.grade(str(ROOT / "assignments" / "charlm" / "reference.py"), "charlm")
    for card, outcome in ((lying, "failed"), (honest, "passed")):
        tests = [t for q in card["questions"] for t in q["tests"] if t["name"].startswith("test_model_float64")]
        assert tests and all(t["outcome"] == outcome for t in tests), [(t["name"], t["outcome"]) for t in tests]
    assert "came back as float32" in " ".join(t.get("message", "") for q in lying["questions"] for t in q["tests"])
