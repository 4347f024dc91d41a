"""The "by hand" tests know a library op by what it is, not by a list of its names.

What it is for: the deny-lists of the by-hand tests (attention's get_attention_weights: a numpy softmax by hand;
charlm's layer_norm and masked_attention) named torch's public functions and a few private ops. An attacker
reached the same work under names missing from them and kept the points:
  * `torch.ops.aten.special_softmax(x, -1)` and `np.exp(torch.ops.aten.special_log_softmax(x, -1))` as the
    softmax (attention: 90/100, like correct code; torch.softmax gets 88.52);
  * `torch.ops.aten._native_batch_norm_legit_functional` on x.reshape(1, -1, n) as the layer norm (charlm:
    100/100; torch.layer_norm loses 6.25).
Now each deny-list is a `checker.running.by_hand.NameFamily`: any name whose words hold "softmax" (resp. a
normalisation: "norm" but for random normals and the norms that are values), whatever its namespace, prefix
(special_, _native_), suffix (_functional, _legit) or overload (.default), in the source scan and in the worker's
trace alike; what hand-written code uses (np.exp, torch.mean, var, sqrt, rsqrt, torch.linalg.vector_norm,
x.norm(), torch.normal) stays allowed.

What it is not: the tests of the scan's reading of bindings and dynamic look-ups (test_hostile_scan*.py).
The end-to-end part grades real submissions in real workers, by-hand tests only (`-k by_hand`).
"""
import os
import textwrap

import pytest

from checker.running.by_hand import calls_in, library_use
from checker.running.runner import Grader
from sandbox_helpers import GOOD, write

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _attention_names():
    from assignments.attention._by_hand import SOFTMAX_CALLS, SOFTMAX_NAMES
    return SOFTMAX_CALLS, SOFTMAX_NAMES


def _charlm_names(name):
    from assignments.charlm._by_hand import NOT_BY_HAND, NOT_BY_HAND_NAMES
    return NOT_BY_HAND[name], NOT_BY_HAND_NAMES[name]


def _softmax(body):
    """GOOD with get_attention_weights(scores) replaced by `body` (its last def wins, as Python's does)."""
    return GOOD + "\n\nimport torch\n\n\ndef get_attention_weights(scores):\n" + textwrap.indent(
        textwrap.dedent(body), "    ")


def _charlm(body):
    """charlm's correct example with layer_norm(x, eps) replaced by `body`."""
    with open(os.path.join(ROOT, "assignments", "charlm", "examples", "correct.py")) as f:
        src = f.read()
    old = ("def layer_norm(x, eps=1e-5):\n    mu = x.mean(dim=-1, keepdim=True)\n"
           "    var = x.var(dim=-1, keepdim=True, unbiased=False)\n    return (x - mu) / torch.sqrt(var + eps)\n")
    assert old in src
    return src.replace(old, "def layer_norm(x, eps=1e-5):\n" + textwrap.indent(textwrap.dedent(body), "    "))


T = "t = torch.as_tensor(np.array(scores, dtype=float))\n"
# softmax under torch's other names: each must be read as a library softmax
SOFTMAX_OPS = {
    "special_softmax": T + "return torch.ops.aten.special_softmax(t, -1).numpy()\n",
    "special_log_softmax": T + "return np.exp(torch.ops.aten.special_log_softmax(t, -1).numpy())\n",
    "safe_softmax_default": T + "return torch.ops.aten._safe_softmax.default(t, -1).numpy()\n",
    "log_softmax_out": T + "return np.exp(torch.ops.aten._log_softmax.out(t, -1, False, out=torch.empty_like(t)).numpy())\n",
    "cross_entropy_loss_op": (T + "n = t.shape[-1]\nx = t.reshape(-1, n)\n"
                              "r = [torch.ops.aten.cross_entropy_loss(row.expand(n, n), torch.arange(n), None, 0)"
                              " for row in x]\nreturn np.exp(-torch.stack(r).numpy()).reshape(t.shape)\n"),
    "decomp_softmax": ("import torch._decomp.decompositions as D\n" + T
                       + "return D._softmax(t, -1, False).numpy()\n"),
    "scipy_log_softmax_alias": ("from scipy.special import log_softmax as ls\nreturn np.exp(ls(scores, axis=-1))\n"),
}
# layer norm under torch's other names (and scipy's zscore)
NORM_OPS = {
    "native_batch_norm_legit_functional": (
        "n = x.shape[-1]\nz = x.reshape(1, -1, n)\nR = z.shape[1]\n"
        "out = torch.ops.aten._native_batch_norm_legit_functional(z, None, None, torch.zeros(R, dtype=x.dtype), "
        "torch.ones(R, dtype=x.dtype), True, 0.0, eps)\nreturn out[0].reshape(x.shape)\n"),
    "batch_norm_with_update": (
        "n = x.shape[-1]\nz = x.reshape(1, -1, n)\nR = z.shape[1]\n"
        "out = torch.ops.aten._batch_norm_with_update(z, None, None, torch.zeros(R, dtype=x.dtype), "
        "torch.ones(R, dtype=x.dtype), 0.0, eps)\nreturn out[0].reshape(x.shape)\n"),
    "batch_norm_elemt": (
        "mu = x.mean(-1).reshape(-1)\ninv = torch.rsqrt(x.var(-1, unbiased=False) + eps).reshape(-1)\n"
        "z = x.reshape(1, -1, x.shape[-1])\n"
        "return torch.batch_norm_elemt(z, None, None, mu, inv, eps).reshape(x.shape)\n"),
    "refs_native_layer_norm": ("import torch._refs as R\n"
                               "return R.native_layer_norm(x, x.shape[-1:], None, None, eps)[0]\n"),
    "weight_norm_op": ("c = x - x.mean(-1, keepdim=True)\nn = x.shape[-1]\n"
                       "return torch._weight_norm(c, torch.full(c.shape[:-1] + (1,), n ** 0.5), c.dim() - 1)\n"),
    "scipy_zscore": "from scipy.stats import zscore\nreturn torch.as_tensor(zscore(x.numpy(), axis=-1))\n",
}
# hand-written layer norms: what they use is no library normalisation
HONEST_NORMS = {
    "mean_var_sqrt": "mu = x.mean(-1, keepdim=True)\nreturn (x - mu) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)\n",
    "var_mean_rsqrt": "var, mu = torch.var_mean(x, -1, keepdim=True, correction=0)\nreturn (x - mu) * torch.rsqrt(var + eps)\n",
    "vector_norm": ("c = x - x.mean(-1, keepdim=True)\nn = x.shape[-1]\n"
                    "return c / torch.sqrt(torch.linalg.vector_norm(c, dim=-1, keepdim=True) ** 2 / n + eps)\n"),
    "tensor_norm_method": ("c = x - x.mean(-1, keepdim=True)\n"
                           "return c / torch.sqrt(c.norm(dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps)\n"),
    # a family's word in the student's own names: an attribute of their own object, a global of theirs
    "own_config_attribute": ("class Cfg:\n    normalized_axis = -1\ncfg = Cfg()\nmu = x.mean(cfg.normalized_axis, "
                             "keepdim=True)\nreturn (x - mu) / torch.sqrt(x.var(cfg.normalized_axis, keepdim=True, "
                             "unbiased=False) + eps)\n"),
    "own_global_constant": ("return (x - x.mean(NORM_AXIS, keepdim=True)) / torch.sqrt(x.var(NORM_AXIS, keepdim=True, "
                            "unbiased=False) + eps)\n"),
    "x_normal_noise_free": ("noise = torch.normal(0.0, 0.0, size=x.shape)\nmu = x.mean(-1, keepdim=True)\n"
                            "return (x + noise - mu) / torch.sqrt(x.var(-1, keepdim=True, unbiased=False) + eps)\n"),
}


# hand-written code that names an allowed function under an alias holding a family's word, or imports a helper from
# a module whose path holds one (h103: each lost the by-hand points with the first version of the families)
ALIASED_HONEST = {
    "layer_norm": {
        "vector_norm_as_l2_norm": ("from torch.linalg import vector_norm as l2_norm",
                                   "c = x - x.mean(-1, keepdim=True)\n"
                                   "return c / torch.sqrt(l2_norm(c, dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps)\n"),
        "linalg_norm_as_lnorm": ("from torch.linalg import norm as lnorm",
                                 "c = x - x.mean(-1, keepdim=True)\n"
                                 "return c / torch.sqrt(lnorm(c, dim=-1, keepdim=True) ** 2 / x.shape[-1] + eps)\n"),
    },
    "masked_attention": {
        "softmax_as_attention_softmax": ("from torch.nn.functional import softmax as attention_softmax",
                                         "T = Q.size(-2)\nscores = Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1))\n"
                                         "scores = scores.masked_fill(causal_mask(T).to(Q.device), float('-inf'))\n"
                                         "return attention_softmax(scores, dim=-1) @ V\n"),
    },
}


def _charlm_with(name, header, body):
    """charlm's correct example with `header` among its imports and function `name` replaced by `body`."""
    with open(os.path.join(ROOT, "assignments", "charlm", "examples", "correct.py")) as f:
        src = f.read().replace("import torch\n", "import torch\n" + header + "\n", 1)
    start = src.index(f"def {name}(")
    end = src.index("\n\n\n", start)
    signature = src[start:src.index("\n", start) + 1]
    return src[:start] + signature + textwrap.indent(textwrap.dedent(body), "    ") + src[end:]


# ------------------------------------------------------------------ the source scan (trusted side)

@pytest.mark.parametrize("case", sorted(SOFTMAX_OPS))
def test_the_scan_reads_softmax_ops_by_what_they_are(tmp_path, case):
    _, names = _attention_names()
    report = library_use(write(tmp_path, "hw.py", _softmax(SOFTMAX_OPS[case])), "get_attention_weights", names)
    assert report.used, (case, report.used, report.unclear)


@pytest.mark.parametrize("case", sorted(NORM_OPS))
def test_the_scan_reads_normalisation_ops_by_what_they_are(tmp_path, case):
    _, names = _charlm_names("layer_norm")
    report = library_use(write(tmp_path, "hw.py", _charlm(NORM_OPS[case])), "layer_norm", names)
    assert report.used, (case, report.used, report.unclear)


@pytest.mark.parametrize("case", sorted(HONEST_NORMS))
def test_hand_written_layer_norms_stay_clean(tmp_path, case):
    _, names = _charlm_names("layer_norm")
    src = _charlm(HONEST_NORMS[case]) + "\n\nNORM_AXIS = -1  # a global of the student's (own_global_constant)\n"
    report = library_use(write(tmp_path, "hw.py", src), "layer_norm", names)
    assert report.clean, (case, report.used, report.unclear)


def test_hand_written_softmax_and_own_modules_named_like_the_family_stay_clean(tmp_path):
    """The student's own names may hold the family's words: a helper `stable_softmax`, a module of the
    submission's own `attention_utils` (imported whole), its function `row_softmax`."""
    _, names = _attention_names()
    hw = GOOD + textwrap.dedent('''

        import attention_utils


        def stable_softmax(s):
            e = np.exp(s - np.max(s, axis=-1, keepdims=True))
            return e / np.sum(e, axis=-1, keepdims=True)


        def get_attention_weights(scores):
            s = np.array(scores, dtype=float)
            return attention_utils.row_softmax(s) * 0 + stable_softmax(s)
    ''')
    helper = ("import numpy as np\n\n\ndef row_softmax(s):\n    e = np.exp(s - s.max(axis=-1, keepdims=True))\n"
              "    return e / e.sum(axis=-1, keepdims=True)\n")
    path = os.path.dirname(write(tmp_path, "hw.py", hw))
    write(tmp_path, "attention_utils.py", helper)
    report = library_use(path, "get_attention_weights", names)
    assert report.clean, (report.used, report.unclear)


# ------------------------------------------------------------------ the worker's trace (a hint that may fail a test)

def test_the_trace_names_ops_by_what_they_are():
    """`Probes.torch_calls` (the worker's trace), run here on the attacks; what it names is judged by the family."""
    import numpy as np
    import torch

    from checker.worker.probes import Probes

    def special(s):
        return torch.ops.aten.special_softmax(torch.as_tensor(s), -1).numpy()

    def log_special(s):
        return np.exp(torch.ops.aten.special_log_softmax(torch.as_tensor(s), -1).numpy())

    def refs(s):
        import torch._refs.special as S
        return S.softmax(torch.as_tensor(s), -1).numpy()

    def legit(x):
        z = x.reshape(1, -1, x.shape[-1])
        R = z.shape[1]
        return torch.ops.aten._native_batch_norm_legit_functional(z, None, None, torch.zeros(R), torch.ones(R),
                                                                  True, 0.0, 1e-5)[0].reshape(x.shape)

    def honest(x):
        c = x - x.mean(-1, keepdim=True)
        return c / torch.sqrt(torch.linalg.vector_norm(c, dim=-1, keepdim=True) ** 2 / x.shape[-1] + 1e-5)

    probes = Probes({"special": special, "log_special": log_special, "refs": refs, "legit": legit,
                     "honest": honest})
    known, names = _attention_names()
    s = np.random.default_rng(0).normal(size=(3, 5))
    assert calls_in(probes.torch_calls("special", [s], {})["calls"], known, names) == ["torch's special_softmax"]
    assert calls_in(probes.torch_calls("log_special", [s], {})["calls"], known,
                    names) == ["torch's special_log_softmax"]
    assert calls_in(probes.torch_calls("refs", [s], {})["calls"], known, names)  # torch._refs' Python softmax
    known, names = _charlm_names("layer_norm")
    x = torch.randn(2, 3, 8)
    assert calls_in(probes.torch_calls("legit", [x], {})["calls"], known,
                    names) == ["torch's _native_batch_norm_legit_functional"]
    assert calls_in(probes.torch_calls("honest", [x], {})["calls"], known, names) == []


def test_known_names_keep_their_words_and_come_first():
    known, names = _attention_names()
    assert calls_in(["exp", "special_softmax", "scipy:softmax", "torch:softmax", "softmax"], known,
                    names) == ["torch.softmax", "scipy.special.softmax", "torch's special_softmax"]


# ------------------------------------------------------------------ graded end to end

@pytest.fixture(scope="module")
def by_hand_grader():
    with Grader(mode="public", pytest_args=["-k", "by_hand"]) as g:
        yield g


def _by_hand_tests(card):
    return {t["name"].split("[")[0]: t for q in card["questions"] for t in q["tests"] if "by_hand" in t["name"]}


@pytest.mark.parametrize("case", ["special_softmax", "special_log_softmax"])
def test_softmax_op_loses_the_by_hand_points(by_hand_grader, tmp_path, case):
    card = by_hand_grader.grade(write(tmp_path, f"{case}.py", _softmax(SOFTMAX_OPS[case])), "attention")
    test = _by_hand_tests(card)["test_attention_weights_by_hand"]
    assert test["outcome"] == "failed", test
    assert f"{case}: its values are right" in test["message"], test["message"]


def test_hand_written_softmax_keeps_the_by_hand_points(by_hand_grader, tmp_path):
    card = by_hand_grader.grade(write(tmp_path, "good.py", GOOD), "attention")
    assert _by_hand_tests(card)["test_attention_weights_by_hand"]["outcome"] == "passed"


def test_batch_norm_op_loses_the_layer_norm_by_hand_points(by_hand_grader, tmp_path):
    card = by_hand_grader.grade(write(tmp_path, "legit.py", _charlm(NORM_OPS["native_batch_norm_legit_functional"])),
                                "charlm")
    tests = _by_hand_tests(card)
    assert tests["test_layer_norm_by_hand"]["outcome"] == "failed", tests["test_layer_norm_by_hand"]
    assert "_native_batch_norm_legit_functional" in tests["test_layer_norm_by_hand"]["message"]
    assert tests["test_masked_attention_by_hand"]["outcome"] == "passed"


@pytest.mark.parametrize("case", ["vector_norm", "x_normal_noise_free"])
def test_hand_written_layer_norm_keeps_the_by_hand_points(by_hand_grader, tmp_path, case):
    card = by_hand_grader.grade(write(tmp_path, f"{case}.py", _charlm(HONEST_NORMS[case])), "charlm")
    assert _by_hand_tests(card)["test_layer_norm_by_hand"]["outcome"] == "passed", _by_hand_tests(card)


@pytest.mark.parametrize("name,case", [(n, c) for n, cases in ALIASED_HONEST.items() for c in sorted(cases)])
def test_an_alias_counts_by_what_it_names(tmp_path, name, case):
    _, names = _charlm_names(name)
    header, body = ALIASED_HONEST[name][case]
    report = library_use(write(tmp_path, "hw.py", _charlm_with(name, header, body)), name, names)
    assert report.clean, (case, report.used, report.unclear)
    alias = header.split(" as ")[1]
    dishonest = header.replace("vector_norm", "layer_norm").replace("import norm", "import layer_norm").replace(
        "functional import softmax", "functional import scaled_dot_product_attention")  # a library op under the alias
    report = library_use(write(tmp_path, "hw2.py", _charlm_with(name, dishonest, body)), name, names)
    assert report.used, (case, alias, report.used)


def test_a_helper_imported_from_a_module_named_like_the_family_is_read_by_its_name(tmp_path):
    """`from torch.nn.modules.transformer import _generate_square_subsequent_mask`: the mask is a library's, the
    attention the student's; a family's word in the module's path is not the imported function's."""
    _, names = _charlm_names("masked_attention")
    body = ("T = Q.size(-2)\nmask = _generate_square_subsequent_mask(T, device=Q.device, dtype=Q.dtype)\n"
            "w = torch.exp(Q @ K.transpose(-2, -1) / math.sqrt(Q.size(-1)) + mask)\n"
            "return (w / w.sum(-1, keepdim=True)) @ V\n")
    src = _charlm_with("masked_attention", "from torch.nn.modules.transformer import _generate_square_subsequent_mask",
                       body)
    report = library_use(write(tmp_path, "hw.py", src), "masked_attention", names)
    assert report.clean, (report.used, report.unclear)
