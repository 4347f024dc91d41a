"""What a graded function runs, changed from outside its source (a tester's probes, h61): the by-hand scan
(`checker.running.by_hand`, with `checker.running.scan_writes`) reads these submissions as the worker runs them.

  * D1: a write into an object the function reaches, filed only under the target's first name: the module
    under another import (`import numpy; numpy.nan_to_num = softmax`, then `np.nan_to_num(x)`), `m = np`,
    a container through an alias (`table = OPS; table["w"] = softmax`), a write from a function called at the
    top level, a dotted chain into torch (`_t.nn.functional.softsign = F.layer_norm`); and a write that
    replaces what a function runs (`f.__code__ = g.__code__` in a helper module): unclear.
  * D2: `get_attention_weights = softmax` and then a hand-written def whose binding fails (a decorator or a
    default value that raises): the library function stays bound, so every binding counts.
  * D3: attention's lists: a library attention is a library softmax (F.scaled_dot_product_attention(q, k, I)),
    flex_attention and nn.Transformer* are library attention; charlm's list is the same set.
Honest code (writes into numpy's or torch's settings, a library function bound first and a plain def after)
stays clean.
"""
import pytest

from checker.running.by_hand import library_use
from sandbox_helpers import GOOD

OWN = '''def get_attention_weights(scores):
    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
'''
assert OWN in GOOD


def _calling(call, prelude):
    """GOOD whose get_attention_weights returns `call(scores)`, with `prelude` before it."""
    return GOOD.replace(OWN, prelude + f'''

def get_attention_weights(scores):
    return {call}(np.asarray(scores, dtype=float))
''')


def _write(tmp_path, files):
    root = tmp_path / "sub"
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return str(root)


def _softmax_names():
    from assignments.attention._by_hand import SOFTMAX_NAMES
    return SOFTMAX_NAMES


WRITES = {
    # the proofs' own shapes: a module under another import name, a plain alias of a module and of a container
    "module under another import": _calling("np.nan_to_num", "import numpy\nfrom scipy.special import softmax\n"
                                                             "numpy.nan_to_num = softmax\n"),
    "module alias": _calling("np.nan_to_num", "m = np\nfrom scipy.special import softmax\nm.nan_to_num = softmax\n"),
    "container alias": _calling('OPS["w"]', "from scipy.special import softmax\nOPS = {}\ntable = OPS\n"
                                            'table["w"] = softmax\n'),
    "container alias of a part": _calling('OPS["a"]["w"]', 'from scipy.special import softmax\nOPS = {"a": {}}\n'
                                                          't = OPS["a"]\nt["w"] = softmax\n'),
    "a mutating method": _calling('OPS["w"]', "from scipy.special import softmax\nOPS = {}\nOPS.update(w=softmax)\n"),
    # a write in a function the graded one never reaches, run at the top level
    "written from a function called at the top level": _calling(
        'OPS["w"]', 'OPS = {}\n\n\ndef _setup():\n    from scipy.special import softmax\n    t = OPS\n'
                    '    t["w"] = softmax\n\n\n_setup()\n'),
    "a module written from a function": _calling(
        "np.nan_to_num", "import numpy as _n\n\n\ndef _setup():\n    from scipy.special import softmax\n"
                         "    _n.nan_to_num = softmax\n\n\n_setup()\n"),
    "written in a block": _calling('OPS["w"]', "OPS = {}\nif True:\n    from scipy.special import softmax\n"
                                               '    alias = OPS\n    alias["w"] = softmax\n'),
}


@pytest.mark.parametrize("case", sorted(WRITES))
def test_a_write_into_what_the_function_reaches_is_read_under_every_name_for_it(tmp_path, case):
    report = library_use(_write(tmp_path, {"hw.py": WRITES[case]}), "get_attention_weights", _softmax_names())
    assert "scipy.special.softmax" in report.used, (case, report.used, report.unclear)


def test_a_write_into_torch_through_another_alias_and_a_dotted_chain_is_read(tmp_path):
    from assignments.charlm._by_hand import NOT_BY_HAND_NAMES
    hw = ("import torch\nimport torch.nn.functional as F\nimport torch as _t\n\n"
          "_t.nn.functional.softsign = F.layer_norm\n\n\n"
          "def layer_norm(x, eps=1e-5):\n    return F.softsign(x, eps)\n")
    report = library_use(_write(tmp_path, {"hw.py": hw}), "layer_norm", NOT_BY_HAND_NAMES["layer_norm"])
    assert any("layer_norm" in u for u in report.used), (report.used, report.unclear)


HELPER = '''def _impl(scores):
    from scipy.special import softmax
    return softmax(scores, axis=-1)


def tune(f):
    {write}
'''


@pytest.mark.parametrize("write", ["f.__code__ = _impl.__code__", 'setattr(f, "__code__", _impl.__code__)',
                                   "f.__defaults__ = (_impl,)", "setattr(f, name, _impl.__code__)"])
def test_a_write_that_replaces_what_a_function_runs_is_unclear(tmp_path, write):
    """The scan reads the stub; what runs is another function's code, set from a helper module's function."""
    helper = HELPER.format(write=write).replace("def tune(f):", "def tune(f, name='__code__'):")
    hw = GOOD + "\nimport helper\nhelper.tune(get_attention_weights)\n"
    report = library_use(_write(tmp_path, {"hw.py": hw, "helper.py": helper}), "get_attention_weights",
                         _softmax_names())
    assert any("replaces what a function runs" in u for u in report.unclear), (write, report.used, report.unclear)


CONFIG = '''
class CfgNode:
    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)

    def merge_from_dict(self, d):
        for k, v in d.items():
            keys = k.split(".")
            obj = self
            for key in keys[:-1]:
                obj = getattr(obj, key)
            setattr(obj, keys[-1], v)


def apply_overrides(cfg, **kw):
    for k, v in kw.items():
        setattr(cfg, k, v)


cfg = CfgNode(n_head=4)
apply_overrides(cfg, n_head=2)
'''


def test_a_config_objects_setattr_is_no_code_replacement(tmp_path):
    # minGPT's CfgNode: setattr with a name from a dict, on an object that is no function of the submission
    report = library_use(_write(tmp_path, {"hw.py": GOOD + CONFIG}), "get_attention_weights", _softmax_names())
    assert not any("replaces what a function runs" in u for u in report.unclear), (report.used, report.unclear)


LIBRARY_FIRST = "from scipy.special import softmax\nget_attention_weights = softmax\n\n\n"
FAILING = {"a decorator that raises": ("@int\n", "scores"),
           "a default that raises": ("", "scores, _quiet=sys.exit(0)"),
           "an annotation that raises": ("", "scores: 1 / 0")}


@pytest.mark.parametrize("case", sorted(FAILING))
def test_a_def_whose_binding_may_fail_leaves_the_earlier_binding_counted(tmp_path, case):
    decorator, params = FAILING[case]
    hw = GOOD.replace(OWN, "import sys\n" + LIBRARY_FIRST + decorator + OWN.replace("(scores)", f"({params})", 1))
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert "scipy.special.softmax" in report.used, (case, report.used, report.unclear)


@pytest.mark.parametrize("params", ["scores", "scores, axis=-1, eps=(1e-9, None)", "scores, *, kind=int"])
def test_a_library_function_bound_first_and_a_plain_def_after_stays_clean(tmp_path, params):
    hw = GOOD.replace(OWN, LIBRARY_FIRST + OWN.replace("(scores)", f"({params})", 1))
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert report.clean, (params, report.used, report.unclear, report.missing)


def test_honest_writes_into_libraries_and_containers_stay_clean(tmp_path):
    hw = ("import numpy\nnumpy.set_printoptions(precision=3)\nnumpy.random.seed(0)\nnp_cfg = {}\n"
          "np_cfg['eps'] = 1e-9\nimport torch\ntorch.backends.cudnn.deterministic = True\n"
          "from scipy.special import softmax as reference\nprint(reference([1.0, 2.0]))\n") + GOOD
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert report.clean, (report.used, report.unclear)


def test_a_library_attention_is_a_library_softmax(tmp_path):
    hw = _calling("_by_attention", "import torch\nfrom torch.nn.functional import scaled_dot_product_attention\n\n\n"
                  "def _by_attention(s):\n    s = torch.as_tensor(s)\n    T = s.shape[-1]\n"
                  "    return scaled_dot_product_attention(torch.ones(1, 1, dtype=s.dtype), s[:, None],"
                  " torch.eye(T, dtype=s.dtype))[0].numpy()\n")
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert any("scaled_dot_product_attention" in u for u in report.used), (report.used, report.unclear)


@pytest.mark.parametrize("what", ["from torch.nn.attention.flex_attention import flex_attention as attend",
                                  "from torch.nn import Transformer as attend",
                                  "from torch.nn import TransformerEncoder as attend",
                                  "from torch.nn import TransformerDecoder as attend"])
def test_flex_attention_and_the_transformer_modules_are_library_attention(tmp_path, what):
    from assignments.attention._by_hand import ATTENTION_NAMES
    hw = GOOD.replace("def self_attention(X, W_Q, W_K, W_V):\n",
                      f"def self_attention(X, W_Q, W_K, W_V):\n    {what}\n", 1)
    assert hw != GOOD
    report = library_use(_write(tmp_path, {"hw.py": hw}), "self_attention", ATTENTION_NAMES)
    assert report.used, (what, report.used, report.unclear)


def test_the_assignments_name_the_same_library_attention():
    from assignments.attention._by_hand import ATTENTION_CALLS, ATTENTION_NAMES, SOFTMAX_CALLS, SOFTMAX_NAMES
    from assignments.charlm._by_hand import NOT_BY_HAND_NAMES
    assert ATTENTION_NAMES == NOT_BY_HAND_NAMES["masked_attention"]
    assert ATTENTION_NAMES <= SOFTMAX_NAMES and set(ATTENTION_CALLS) <= set(SOFTMAX_CALLS)


# honest code the scan flagged (a tester's probes, h71): each the tester's own submission's last part, put where
# GOOD's hand-written get_attention_weights stands
HONEST = {
    # a scipy first draft, then a by-hand def whose annotations name numpy's array type
    "typehints_draft": '''from scipy.special import softmax  # first draft, kept to compare

def get_attention_weights(scores):
    return softmax(scores, axis=-1)

def get_attention_weights(scores: np.ndarray) -> np.ndarray:
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
''',
    "typehints_helper_named_softmax": '''from scipy.special import softmax  # only to check mine in the cell below

def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)

def get_attention_weights(scores):
    return softmax(np.asarray(scores, dtype=float))
''',
    # getattr with a constant name is plain attribute access
    "getattr_default": '''class Settings:
    pass
SETTINGS = Settings()

def get_attention_weights(scores):
    t = getattr(SETTINGS, "temperature", 1.0)
    s = np.asarray(scores, dtype=float) / t
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
''',
    # a config object's setattr at the top level writes into that object only
    "config_setattr_noescape": '''class Config:
    stable = True
cfg = Config()
for k, v in {"stable": True}.items():
    setattr(cfg, k, v)

def get_attention_weights(scores):
    s = np.asarray(scores, dtype=float)
    if cfg.stable:
        s = s - np.max(s, axis=-1, keepdims=True)
    e = np.exp(s)
    return e / np.sum(e, axis=-1, keepdims=True)
''',
    # a decorator that wraps the def and cannot fail on it
    "lru_draft_redef": '''import functools

def get_attention_weights(scores):
    from scipy.special import softmax
    return softmax(scores)

@functools.wraps(get_attention_weights)
def get_attention_weights(scores):
    s = np.asarray(scores, dtype=float)
    e = np.exp(s - np.max(s, axis=-1, keepdims=True))
    return e / np.sum(e, axis=-1, keepdims=True)
''',
    # a method of the submission's own class, called on its instance
    "instance_method": '''class Attention:
    def __init__(self, temperature=1.0):
        self.temperature = temperature
    def softmax(self, x):
        x = np.asarray(x, dtype=float) / self.temperature
        e = np.exp(x - np.max(x, axis=-1, keepdims=True))
        return e / np.sum(e, axis=-1, keepdims=True)

attn = Attention()

def get_attention_weights(scores):
    return attn.softmax(scores)
''',
}


@pytest.mark.parametrize("case", sorted(HONEST))
def test_honest_drafts_annotations_config_objects_and_own_instances_stay_clean(tmp_path, case):
    hw = GOOD.replace(OWN, HONEST[case])
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert report.clean, (case, report.used, report.unclear, report.missing)


def test_a_notebooks_typed_redefinition_after_a_scipy_draft_stays_clean(tmp_path):
    import json
    head, _, rest = GOOD.partition(OWN)
    cells = [head + rest, "from scipy.special import softmax\n\ndef get_attention_weights(scores):\n"
                          "    return softmax(scores, axis=-1)\n",
             "# by hand now\n" + HONEST["typehints_draft"].split("\n\n", 2)[2],
             "print(get_attention_weights(np.array([1.0, 2.0])))\n"]
    nb = {"cells": [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
                     "source": c} for c in cells], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    root = tmp_path / "sub"
    root.mkdir()
    (root / "hw.ipynb").write_text(json.dumps(nb))
    report = library_use(str(root), "get_attention_weights", _softmax_names())
    assert report.clean, (report.used, report.unclear, report.missing)


# the same shapes made to fail or to hide: the earlier library binding still counts, the lookup stays unclear
STILL_CAUGHT = {
    "an annotation no loaded module has": ("used", LIBRARY_FIRST
                                           + OWN.replace("(scores)", "(scores: np.no_such_thing)")),
    "a module deleted before the def": ("used", LIBRARY_FIRST + "del np\n"
                                        + OWN.replace("(scores)", "(scores: np.ndarray)")),
    "a decorator off the list": ("used", LIBRARY_FIRST + "import functools\n@functools.partial(print)\n" + OWN),
    "wraps of an unbound name": ("used", LIBRARY_FIRST + "import functools\n@functools.wraps(nothing)\n" + OWN),
    "lru_cache of a computed size": ("used", LIBRARY_FIRST + "import functools\n@functools.lru_cache(1 / 0)\n" + OWN),
    "getattr with a computed name": ("unclear", OWN.replace("    scores = np.asarray(scores)\n",
                                                           "    scores = getattr(np, 'as' + 'array')(scores)\n")),
    "getattr of an opaque attribute": ("unclear", OWN.replace("    scores = np.asarray(scores)\n",
                                                              "    g = getattr(np.asarray, '__globals__')\n"
                                                              "    scores = np.asarray(scores)\n")),
    "getattr of a library softmax": ("used", "from scipy import special\n" + OWN.replace(
        "    scores = np.asarray(scores)\n", "    return getattr(special, 'softmax')(scores)\n")),
    "setattr on a module alias": ("used", "import numpy as _n\nfrom scipy.special import softmax\n"
                                          "m = _n\nfor k in ['nan_to_num']:\n    setattr(m, k, softmax)\n"
                                  + OWN.replace("    scores = np.asarray(scores)\n",
                                                "    return np.nan_to_num(scores)\n")),
    "setattr on an instance of a class with __new__": ("unclear", "class C:\n    def __new__(cls):\n        return np\n"
                                                       "from scipy.special import softmax\ncfg = C()\n"
                                                       "for k in ['nan_to_num']:\n    setattr(cfg, k, softmax)\n"
                                                       + OWN.replace("    scores = np.asarray(scores)\n",
                                                                     "    return np.nan_to_num(scores)\n")),
    "an instance's method set at the top level": ("used", "from scipy.special import softmax\nclass A:\n"
                                                          "    def f(self, x):\n        return x\na = A()\n"
                                                          "a.f = softmax\n" + OWN.replace(
                                                              "    scores = np.asarray(scores)\n",
                                                              "    return a.f(scores)\n")),
}


@pytest.mark.parametrize("case", sorted(STILL_CAUGHT))
def test_failing_decorators_annotations_and_hidden_lookups_are_still_caught(tmp_path, case):
    kind, code = STILL_CAUGHT[case]
    hw = GOOD.replace(OWN, code)
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert getattr(report, kind), (case, report.used, report.unclear)


# the standard library's other ways to run or import a string (a tester's probes, h71): unclear
STRING_TO_CODE = {
    "cProfile": '''import cProfile
def get_attention_weights(scores):
    g = {"x": np.asarray(scores, dtype=float), "out": []}
    cProfile.Profile().runctx("import scipy.special as s; out.append(s.softmax(x, axis=-1))", g, g)
    return g["out"][0]
''',
    "logging.config": '''import logging.config
_norm = logging.config.BaseConfigurator({}).resolve("scipy.special.soft" "max")
def get_attention_weights(scores):
    return _norm(np.asarray(scores, dtype=float), axis=-1)
''',
    "typing.get_type_hints": '''import typing
import scipy.special
def _holder(f: "scipy.special.softmax"): pass
def get_attention_weights(scores):
    return typing.get_type_hints(_holder)["f"](np.asarray(scores, dtype=float), axis=-1)
''',
    "get_type_hints imported by name": '''from typing import get_type_hints
import scipy.special
def _holder(f: "scipy.special.softmax"): pass
def get_attention_weights(scores):
    return get_type_hints(_holder)["f"](np.asarray(scores, dtype=float), axis=-1)
''',
    "string.Formatter": '''import string
import scipy.special
def get_attention_weights(scores):
    f = string.Formatter().get_field("0.special.softmax", (scipy,), {})[0]
    return f(np.asarray(scores, dtype=float), axis=-1)
''',
}
STRING_TO_CODE.update({m: STRING_TO_CODE["cProfile"].replace("cProfile.Profile().runctx", f"{m}.runctx")
                                                      .replace("import cProfile", f"import {m}")
                       for m in ("profile", "pdb", "trace", "doctest", "bdb")})


@pytest.mark.parametrize("case", sorted(STRING_TO_CODE))
def test_stdlib_ways_to_run_a_string_are_unclear(tmp_path, case):
    hw = GOOD.replace(OWN, STRING_TO_CODE[case])
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert report.unclear or report.used, (case, report.used, report.unclear)
    assert not report.clean


_CLS = "class A:\n    def softmax(self, x):\n        return x\n"
INSTANCE_WRITES = {
    "handed to a function that writes into it": _CLS + "from scipy.special import softmax as sp\na = A()\n"
                                                       "def tweak(o):\n    o.softmax = sp\ntweak(a)\n",
    "written through an alias": _CLS + "from scipy.special import softmax as sp\na = A()\nb = a\nb.softmax = sp\n",
    "written at the top level": _CLS + "from scipy.special import softmax as sp\na = A()\na.softmax = sp\n",
    "setattr with a computed name": _CLS + "from scipy.special import softmax as sp\na = A()\n"
                                           "for k in ['softmax']:\n    setattr(a, k, sp)\n",
    "written from a function called at the top level": _CLS + "a = A()\ndef setup():\n"
                                                              "    from scipy.special import softmax as sp\n"
                                                              "    a.softmax = sp\nsetup()\n",
    "set in __init__": "from scipy.special import softmax as sp\nclass A:\n    def __init__(self):\n"
                       "        self.softmax = sp\n    def softmax(self, x):\n        return x\na = A()\n",
}


@pytest.mark.parametrize("case", sorted(INSTANCE_WRITES))
def test_an_own_instances_method_replaced_by_a_library_function_is_still_caught(tmp_path, case):
    hw = GOOD.replace(OWN, INSTANCE_WRITES[case] + "def get_attention_weights(scores):\n    return a.softmax(scores)\n")
    report = library_use(_write(tmp_path, {"hw.py": hw}), "get_attention_weights", _softmax_names())
    assert report.used or report.unclear, (case, report.used, report.unclear)
