"""Code the "by hand" scan did not see (issue 31, item 8): the scan judges what the worker runs and imports.

`checker.running.by_hand` reads a submission's source on the trusted side to decide whether a function was
written by hand. Each submission here hides a library softmax where the old scan did not look, while
the worker really runs it:
  * a `# coding: utf-7` line: Python decodes `+AAo-` as a new line, so a "comment" is an import (the scan
    read UTF-8 and saw a comment);
  * a package in a `__hidden/` folder, and a module inside a zip archive put on `sys.path` (the scan skipped
    `__*` folders and never opened archives);
  * a file ending in a syntax error, whose import spans lines starting at column 0 (the scan's own
    fallback split dropped it; the loader's split runs it);
  * a notebook's `%%writefile` cell (the loader writes the module), a module written by the code at load
    time, and a compiled `.pyc` with no source (nothing to read: unclear);
  * `helper.w(s)` after `import helper` (the attribute was never followed into the student's file);
  * scipy's softmax rebuilt from bytes or text: `pickle.loads`, `pydoc.locate`, an object array loaded with
    `np.load(..., allow_pickle=True)` (unclear: the source does not show what they give).
Each calls the library from a helper thread (which the worker's own trace does not follow), is scanned
directly, and graded end to end in real workers: the by-hand test fails (it passed before), with the
value test passing (the attack really runs). Honest classmates (a helper module, a package, a notebook that
imports Colab's drive at the top) stay clean.
"""
import io
import pickle
import py_compile
import zipfile

import numpy as np
import pytest
import scipy.special

from checker.running.by_hand import library_use
from checker.running.runner import Grader
from sandbox_helpers import GOOD, write

SOFTMAX = {"softmax", "log_softmax", "Softmax", "LogSoftmax"}
# GOOD without its own get_attention_weights (each attack brings one)
BASE = GOOD.replace('''def get_attention_weights(scores):
    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', '''def get_attention_weights(scores):
    # from a helper thread, which the worker's own trace does not follow: only the source scan can tell
    out = []
    t = threading.Thread(target=lambda: out.append(_w(np.asarray(scores, dtype=float), axis=-1)))
    t.start()
    t.join()
    return out[0]
''').replace("import math\n", "import math\nimport threading\n")
assert BASE != GOOD


def _zip(members):
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as z:
        for name, text in members.items():
            z.writestr(name, text)
    return out.getvalue()


def _notebook(*cells):
    import json
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "source": c, "metadata": {}, "outputs": [], "execution_count": None} for c in cells]})


SCIPY = "from scipy.special import softmax as _w\n"

# name -> {file: text or bytes}; the submission is the folder holding them
ATTACKS = {
    "utf7_comment": {"hw.py": b"# -*- coding: utf-7 -*-\n"
                     + b"# (a note)+AAo-from scipy.special import softmax as _w\n" + BASE.encode("utf-7")},
    "hidden_folder": {"hw.py": "from __hidden.impl import _w\n" + BASE, "__hidden/impl.py": SCIPY},
    "zip_on_path": {"hw.py": "import sys\nsys.path.insert(0, 'data.bin')\nfrom zhelper import _w\n" + BASE,
                    "data.bin": _zip({"zhelper.py": SCIPY})},
    "ends_in_syntax_error": {"hw.py": BASE + "from scipy.special import (\nsoftmax as _w)\n\ndef broken(:\n    pass\n"},
    "writefile_cell": {"hw.ipynb": _notebook("%%writefile helper2.py\n" + SCIPY, "from helper2 import _w\n" + BASE)},
    "written_at_load": {"hw.py": f"open('w8.py', 'w').write({SCIPY!r})\nfrom w8 import _w\n" + BASE},
    "compiled_only": {"hw.py": "from helperc import _w\n" + BASE, "helperc.pyc": None},
    "module_attribute": {"hw.py": "import helper\n" + BASE.replace("out.append(_w(", "out.append(helper._w("),
                         "helper.py": SCIPY},
}
ATTACKS.update({  # a function rebuilt from bytes or text the source does not show
    "pickled_function": {"hw.py": f"import pickle\n_w = pickle.loads({pickle.dumps(scipy.special.softmax)!r})\n" + BASE},
    "located_by_name": {"hw.py": "import pydoc\n_w = pydoc.locate('scipy.special.softmax')\n" + BASE},
    "object_array_file": {"hw.py": "import numpy\n_w = numpy.load('w.npy', allow_pickle=True)[()]\n" + BASE, "w.npy": "npy"},
})
# the name's last binding decides only where it is a plain top-level def of one file, after the others
OWN_SOFTMAX = "def softmax(s):\n    e = np.exp(s - s.max(-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)\n"
CALLS_SOFTMAX = GOOD.replace('''    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', "    return softmax(np.asarray(scores))\n")
assert CALLS_SOFTMAX != GOOD
ATTACKS.update({
    "scipy_after_own_def": {"hw.py": CALLS_SOFTMAX + "\n" + OWN_SOFTMAX + "\nfrom scipy.special import softmax\n"},
    "own_def_in_a_block": {"hw.py": "from scipy.special import softmax\n" + CALLS_SOFTMAX
                           + "\nif False:\n" + "".join("    " + line + "\n" for line in OWN_SOFTMAX.splitlines())},
    "scipy_in_a_later_file": {"a.py": CALLS_SOFTMAX + "\n" + OWN_SOFTMAX, "b.py": "from scipy.special import softmax\n"},
})
# the name bound again where no plain statement shows it (an attacker's probe): the hand-written def is never
# the one called, `_lib` (scipy's softmax from a helper thread) is
LIB = ("def _lib(scores):\n    out = []\n    t = threading.Thread(target=lambda: out.append(_w(np.asarray(scores, "
       "dtype=float), axis=-1)))\n    t.start()\n    t.join()\n    return out[0]\n")
ATTACKS.update({
    "walrus_rebinding": {"hw.py": SCIPY + GOOD.replace("import math\n", "import math\nimport threading\n") + LIB
                         + "[(get_attention_weights := _lib)]\n"},
    "globals_rebinding": {"hw.py": SCIPY + GOOD.replace("import math\n", "import math\nimport threading\n") + LIB
                          + "globals()['get_attention_' + 'weights'] = _lib\n"},
    "match_capture": {"hw.py": SCIPY + GOOD.replace("import math\n", "import math\nimport threading\n") + LIB
                      + "match _lib:\n    case get_attention_weights:\n        pass\n"},
})
# a name's object written into, and read through (an attacker's second probe): `np.sm = _lib`, `OPS['w'] = _lib`,
# a class attribute, the hand-written def's code swapped for the library one's, a function that binds the name
# by `global` and is called after the def, a helper module's `__getattr__`
WITH_LIB = SCIPY + GOOD.replace("import math\n", "import math\nimport threading\n") + LIB
CALLS_THROUGH = GOOD.replace("import math\n", "import math\nimport threading\n").replace(
    "    scores = np.asarray(scores)\n    e = np.exp(", "    return {via}(scores)\n    e = np.exp(", 1)
assert CALLS_THROUGH != GOOD
ATTACKS.update({
    "attribute_store": {"hw.py": SCIPY + CALLS_THROUGH.format(via="np.sm") + LIB + "np.sm = _lib\n"},
    "dict_store": {"hw.py": SCIPY + "OPS = {}\n" + CALLS_THROUGH.format(via="OPS['w']") + LIB + "OPS['w'] = _lib\n"},
    "class_attribute": {"hw.py": SCIPY + "class Ops:\n    pass\n" + CALLS_THROUGH.format(via="Ops.w") + LIB
                        + "Ops.w = staticmethod(_lib)\n"},
    "code_swapped": {"hw.py": WITH_LIB + "get_attention_weights.__code__ = _lib.__code__\n"},
    "global_then_def": {"hw.py": SCIPY + "import threading\n" + LIB.replace("def _lib(", "def _setup_lib(") +
                        "def _setup():\n    global get_attention_weights\n    get_attention_weights = _setup_lib\n"
                        + GOOD + "_setup()\n"},
    "module_getattr": {"hw.py": "import helpers\n" + CALLS_THROUGH.format(via="helpers.weights"),
                       "helpers.py": SCIPY + "import threading\nimport numpy as np\n" + LIB
                       + "def __getattr__(name):\n    return _lib\n"},
})
# what the scan must say: a library softmax named ("used"), or code it cannot read ("unclear")
# a module written while the code runs lands in its cwd, a scratch folder not on sys.path: never imported
# (tests/test_hostile_identity.py), so the attack does not run at all; the scan still says unclear
CLOSED_AT_THE_WALL = {"written_at_load"}
UNCLEAR = {"written_at_load": "w8", "compiled_only": "helperc", "pickled_function": "pickle",
           "located_by_name": "pydoc", "object_array_file": "allow_pickle", "globals_rebinding": "globals()",
           "code_swapped": "__code__"}


def _build(tmp_path, files):
    root = tmp_path / "sub"
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if text == "npy":  # an object array holding scipy's softmax
            np.save(path, np.array(scipy.special.softmax, dtype=object), allow_pickle=True)
        elif text is None:  # a compiled module with no source beside it
            src = tmp_path / (path.stem + ".py")
            src.write_text(SCIPY)
            py_compile.compile(str(src), cfile=str(path), doraise=True)
        elif isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
    return str(root)


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_scan_sees_what_the_worker_runs(tmp_path, attack):
    report = library_use(_build(tmp_path, ATTACKS[attack]), "get_attention_weights", SOFTMAX)
    assert not report.clean, f"{attack}: the scan found nothing"
    if attack in UNCLEAR:
        assert any(UNCLEAR[attack] in u for u in report.unclear), report.unclear
    else:
        assert "scipy.special.softmax" in report.used, (report.used, report.unclear)


HONEST = {
    "one_file": {"hw.py": GOOD},
    "helper_module": {"hw.py": "import helper\n" + BASE.replace("out.append(_w(", "out.append(helper._w("),
                      "helper.py": "import numpy as np\n\ndef _w(s, axis=-1):\n    e = np.exp(s - s.max(axis, keepdims=True))\n"
                                   "    return e / e.sum(axis, keepdims=True)\n"},
    "package": {"hw.py": "from mypkg.ops import _w\n" + BASE, "mypkg/__init__.py": "",
                "mypkg/ops.py": "import numpy as np\n\ndef _w(s, axis=-1):\n    e = np.exp(s)\n    return e / e.sum(axis, keepdims=True)\n"},
    "colab_notebook": {"hw.ipynb": _notebook("from google.colab import drive\ndrive.mount('/content/drive')\n%matplotlib inline",
                                             GOOD)},
    "utf8_coding_line": {"hw.py": "# -*- coding: utf-8 -*-\n# un café\n" + GOOD},
    # scipy's softmax imported to compare against, then the student's own under its name: theirs is called
    "scipy_then_own_def": {"hw.py": "from scipy.special import softmax  # to compare against\n" + CALLS_SOFTMAX
                           + "\n" + OWN_SOFTMAX},
    "scipy_then_own_def_in_a_later_cell": {"hw.ipynb": _notebook("import numpy as np\nfrom scipy.special import softmax",
                                                                 OWN_SOFTMAX, CALLS_SOFTMAX)},
    # the softmax of a class of the student's (a static method), written by hand
    "own_class_method": {"hw.py": GOOD.replace("def get_attention_weights(scores):", "def _unused(scores):")
                         + "\n\nclass Ops:\n    @staticmethod\n" + "".join("    " + line + "\n" for line in OWN_SOFTMAX.splitlines())
                         + "\n\ndef get_attention_weights(scores):\n    return Ops.softmax(np.asarray(scores))\n"},
}

# a helper of the student's that imports by a name it spells out (a Gradescope probe, h39: every by-hand test
# failed, "your code changes where Python finds modules (__import__)")
HONEST["dunder_import_by_name"] = {"hw.py": GOOD + '\n\ndef _debug(*a):\n    __import__("logging").getLogger(__name__).debug(a)\n'}
# Colab's own test of where the notebook runs, and other reads of sys.path / sys.modules (a Jupyter/CI probe, h45:
# each cost a correct submission every by-hand test, "your code changes where Python finds modules (sys.modules)")
HONEST["colab_idiom_reads_sys_modules"] = {"hw.py": 'import sys\nIN_COLAB = "google.colab" in sys.modules\n'
                                           'print(sys.path, len(sys.modules), sys.modules.get("torch"))\n' + GOOD}
# what does change where an import finds its module, or may: sys.path through __import__("sys"), the builtin
# rebound, __import__ by a name the source does not spell
EDITS = {
    "sys_by_dunder_import": '__import__("sys").path.insert(0, ".")\n',
    "builtins_rebound": "import builtins\n_real = builtins.__import__\nbuiltins.__import__ = lambda *a, **k: _real(*a, **k)\n",
    "builtins_dict": '__builtins__["__import__"] = __import__\n',
    "by_a_name_built": 'MOD = "log" + "ging"\n_log = __import__(MOD)\n',
    "importlib_by_dunder_import": '_il = __import__("importlib")\n',
    "sys_path_by_an_alias": 'import sys\n_p = sys.path\n_p.insert(0, ".")\n',
    "sys_modules_item_set": 'import sys\nsys.modules["colorsys"] = sys.modules["numpy"]\n',
}


@pytest.mark.parametrize("case", list(EDITS))
def test_what_may_change_where_imports_look_is_unclear(tmp_path, case):
    report = library_use(_build(tmp_path, {"hw.py": EDITS[case] + GOOD}), "get_attention_weights", SOFTMAX)
    assert any("changes where Python finds modules" in u for u in report.unclear), (case, report.unclear)


@pytest.mark.parametrize("case", list(HONEST))
def test_honest_code_stays_clean(tmp_path, case):
    report = library_use(_build(tmp_path, HONEST[case]), "get_attention_weights", SOFTMAX)
    assert report.clean, (case, report.used, report.unclear, report.missing)


def test_a_single_file_submission_is_read_alone(tmp_path):
    """A .py handed in alone is copied alone: an import of a module beside it on the grader's disk is code
    the worker cannot import, and says so rather than reading that file."""
    path = write(tmp_path, "hw.py", "from helper import _w\n" + BASE)
    write(tmp_path, "helper.py", "import numpy as np\n_w = np.exp\n")
    report = library_use(path, "get_attention_weights", SOFTMAX)
    assert any("helper" in u for u in report.unclear), report.unclear


# ------------------------------------------------------------------ graded end to end, in real workers

@pytest.fixture(scope="module")
def scan_grader():
    with Grader(mode="public", pytest_args=["-k", "test_attention_weights_by_hand or test_attention_weights_handout"]) as g:
        yield g


@pytest.mark.slow
@pytest.mark.parametrize("attack", list(ATTACKS))
def test_the_hidden_softmax_runs_and_loses_the_by_hand_points(scan_grader, tmp_path, attack):
    card = scan_grader.grade(_build(tmp_path, ATTACKS[attack]), "attention")
    tests = {t["name"]: t for q in card["questions"] for t in q["tests"]}
    if attack not in CLOSED_AT_THE_WALL:
        assert tests["test_attention_weights_handout"]["outcome"] == "passed", tests  # the library softmax ran
    by_hand = tests["test_attention_weights_by_hand"]
    if attack in CLOSED_AT_THE_WALL:  # its module was not imported: `_w` is undefined, and no points
        assert by_hand["outcome"] in ("failed", "error") and by_hand["points"] == 0, by_hand
        return
    assert by_hand["outcome"] == "failed" and by_hand["points"] == 0, by_hand
    assert "scipy" in by_hand["message"] or UNCLEAR.get(attack, "?") in by_hand["message"], by_hand["message"]


@pytest.mark.slow
def test_honest_classmates_keep_the_by_hand_points(scan_grader, tmp_path):
    for case in ("helper_module", "colab_notebook"):
        card = scan_grader.grade(_build(tmp_path / case, HONEST[case]), "attention")
        tests = {t["name"]: t for q in card["questions"] for t in q["tests"]}
        assert tests["test_attention_weights_by_hand"]["outcome"] == "passed", (case, tests)


# torch's other names for the same work (an attacker's probe: right values, the worker's trace forged or not
# followed): each is named by the assignment's own list of what the handout rules out
OTHER_NAMES = {
    "softmin": ("attention", "get_attention_weights", "import torch\n\ndef _w(s, axis=-1):\n"
                "    return torch.softmin(-torch.as_tensor(s), dim=axis).numpy()\n" + BASE),
    "aten_softmax": ("attention", "get_attention_weights", "import torch\n\ndef _w(s, axis=-1):\n"
                     "    return torch.ops.aten._softmax(torch.as_tensor(s), axis, False).numpy()\n" + BASE),
    "sdpa_math": ("charlm", "masked_attention", "import torch\n\ndef masked_attention(Q, K, V):\n"
                  "    return torch._scaled_dot_product_attention_math(Q, K, V, None, 0.0, True)[0]\n"),
    "native_layer_norm": ("charlm", "layer_norm", "import torch\n\ndef layer_norm(x, eps=1e-5):\n"
                          "    return torch.native_layer_norm(x, x.shape[-1:], None, None, eps)[0]\n"),
    "group_norm": ("charlm", "layer_norm", "import torch.nn.functional as F\n\ndef layer_norm(x, eps=1e-5):\n"
                   "    return F.group_norm(x.reshape(-1, 1, x.shape[-1]), 1, eps=eps).reshape(x.shape)\n"),
    # torch.distributions computes the softmax of logits too
    "logits_to_probs": ("attention", "get_attention_weights", "import torch\n"
                        "from torch.distributions.utils import logits_to_probs\n\ndef _w(s, axis=-1):\n"
                        "    return logits_to_probs(torch.as_tensor(s)).numpy()\n" + BASE),
    # softmax under other names, or made where the source does not show it (an attacker's second probe)
    "softmax2d": ("attention", "get_attention_weights", "import torch\n\ndef _w(s, axis=-1):\n"
                  "    t = torch.as_tensor(s)[None, :, None, None]\n"
                  "    return torch.nn.Softmax2d()(t)[0, :, 0, 0].numpy()\n" + BASE),
    "gumbel": ("attention", "get_attention_weights", "import torch.nn.functional as F\nimport torch\n\n"
               "def _w(s, axis=-1):\n    return F.gumbel_softmax(torch.as_tensor(s) * 1e12, tau=1e12).numpy()\n" + BASE),
    "grad_of_logsumexp": ("attention", "get_attention_weights", "\ndef _w(s, axis=-1):\n    import torch\n"
                          "    return torch.func.grad(lambda z: torch.logsumexp(z, -1).sum())(torch.as_tensor(s)).numpy()\n"
                          + BASE),
    "compiled_from_text": ("attention", "get_attention_weights", "\ndef _w(s, axis=-1):\n    import torch as T\n"
                           "    cu = T.jit.CompilationUnit('def f(x):\\n    return x.soft' 'max(-1)\\n')\n"
                           "    return cu.f(T.as_tensor(s)).numpy()\n" + BASE),
    "aten_by_getattr": ("attention", "get_attention_weights", "import torch\n\ndef _w(s, axis=-1):\n"
                        "    return torch.ops.aten.__getattr__('_soft' + 'max')(torch.as_tensor(s), -1, False).numpy()\n"
                        + BASE),
    "lazy_batch_norm": ("charlm", "layer_norm", "import torch\n\ndef layer_norm(x, eps=1e-5):\n"
                        "    return torch.nn.LazyBatchNorm1d(eps=eps, affine=False)(x.reshape(-1, x.shape[-1]).T.contiguous()"
                        ".T).reshape(x.shape)\n"),
    "flex_attention": ("charlm", "masked_attention", "from torch.nn.attention.flex_attention import flex_attention\n\n"
                       "def masked_attention(Q, K, V):\n    return flex_attention(Q, K, V)\n"),
    "categorical_probs": ("attention", "get_attention_weights", "import torch\n"
                          "from torch.distributions import Categorical\n\ndef _w(s, axis=-1):\n"
                          "    return Categorical(logits=torch.as_tensor(s)).probs.numpy()\n" + BASE),
}


@pytest.mark.parametrize("case", list(OTHER_NAMES))
def test_torchs_other_names_for_the_same_work_are_named(tmp_path, case):
    from assignments.attention._by_hand import SOFTMAX_NAMES
    from assignments.charlm._by_hand import NOT_BY_HAND_NAMES
    aid, name, source = OTHER_NAMES[case]
    forbidden = SOFTMAX_NAMES if aid == "attention" else NOT_BY_HAND_NAMES[name]
    report = library_use(_build(tmp_path, {"hw.py": source}), name, forbidden)
    if case in ("grad_of_logsumexp", "compiled_from_text", "aten_by_getattr"):  # made where no name shows it
        assert report.unclear and not report.used, (case, report.used, report.unclear)
    else:
        assert report.used, (case, report.used, report.unclear)


OWN_HELPER = "import numpy as np\n\n" + OWN_SOFTMAX


def test_a_helper_module_of_ones_own_may_name_its_function_softmax(tmp_path):
    """`import utils` and `utils.softmax(s)`, a file of the submission with a hand-written `def softmax`: the
    student's own code, read as such (it was taken for a library softmax); the same call of a helper file
    that only imports scipy's softmax is still named."""
    hw = "import utils\n" + CALLS_SOFTMAX.replace("return softmax(", "return utils.softmax(")
    assert hw != "import utils\n" + CALLS_SOFTMAX
    honest = library_use(_build(tmp_path / "a", {"hw.py": hw, "utils.py": OWN_HELPER}), "get_attention_weights",
                         SOFTMAX)
    assert honest.clean, (honest.used, honest.unclear, honest.missing)
    forwarded = library_use(_build(tmp_path / "b", {"hw.py": hw, "utils.py": "from scipy.special import softmax\n"}),
                            "get_attention_weights", SOFTMAX)
    assert "scipy.special.softmax" in forwarded.used, (forwarded.used, forwarded.unclear)


def test_the_scan_reads_each_statement_once_whatever_number_of_names_lead_to_it(tmp_path):
    """An attacker's probe: `a0, ..., a14999 = ...` read again for each name it binds, and 5,000 bindings of one
    name queued again at each of 5,000 uses, took the trusted side minutes to hours (a batch stalled on one
    file). Each statement is read once, and a name's bindings queued once: both files are read in seconds (the
    old scan: the second alone 38 s here) and the honest function found clean."""
    import time
    names = ", ".join(f"a{i}" for i in range(15000))
    wide = GOOD.replace("    scores = np.asarray(scores)\n", "    _ = a0\n    scores = np.asarray(scores)\n", 1) \
        + f"\n{names} = [len(str(i)) for i in range(15000)]\n"
    many = GOOD.replace("    scores = np.asarray(scores)\n", "    _ = helper()\n    scores = np.asarray(scores)\n", 1) \
        + "".join(f"a = len('{i}')\n" for i in range(5000)) \
        + "def helper():\n" + "".join("    x = a\n" for _ in range(5000)) + "    return x\n"
    # the attacker's second probe: 30,000 names of one import read, each, through the whole import (O(n^2):
    # 20,000 took 100 s); method chains whose every `.update` was checked by a walk of the chain below it
    imports = GOOD.replace("    scores = np.asarray(scores)\n", "    if False:\n        _ = w0 + w29999\n"
                           "    scores = np.asarray(scores)\n", 1) \
        + "try:\n    from os import (" + ", ".join(f"w{i}" for i in range(30000)) + ")\nexcept ImportError:\n    pass\n"
    chain = GOOD + "".join("cfg = {}\ncfg" + ".update()" * 400 + "\n" for _ in range(20))
    for case, text in (("wide", wide), ("many", many), ("imports", imports), ("chain", chain)):
        started = time.monotonic()
        report = library_use(_build(tmp_path / case, {"hw.py": text}), "get_attention_weights", SOFTMAX)
        assert time.monotonic() - started < 20, case
        assert report.clean, (case, report.used, report.unclear)


# library softmaxes under names of their own (an attacker's third probe: `SoftmaxTransform()(x)` kept the by-hand
# points): each case really computes the softmax (run below, in this process, where its library is installed), and
# the scan names it through the assignment's own list
LIBRARY_SOFTMAXES = {
    "softmax_transform": "from torch.distributions.transforms import SoftmaxTransform\n"
                         "return SoftmaxTransform()(t).numpy()",
    "softmax_transform_dotted": "import torch.distributions as D\nreturn D.transforms.SoftmaxTransform()(t).numpy()",
    "transform_to_simplex": "from torch.distributions import constraints, transform_to\n"
                            "return transform_to(constraints.simplex)(t).numpy()",
    "straight_through": "from torch.distributions import OneHotCategoricalStraightThrough as OH\n"
                        "return OH(logits=t).probs.numpy()",
    "cross_entropy": "import torch.nn.functional as F\nn = t.shape[-1]\n"
                     "return torch.exp(-F.cross_entropy(t.expand(n, n), torch.arange(n), reduction='none')).numpy()",
    "cross_entropy_loss": "n = t.shape[-1]\nloss = torch.nn.CrossEntropyLoss(reduction='none')\n"
                          "return torch.exp(-loss(t.expand(n, n), torch.arange(n))).numpy()",
    "linear_cross_entropy": "import torch.nn.functional as F\nn = t.shape[-1]\n"
                            "nll = F.linear_cross_entropy(t.expand(n, n), torch.eye(n, dtype=t.dtype), torch.arange(n), "
                            "reduction='none')\nreturn torch.exp(-nll).numpy()",
    "adaptive_log_softmax": "n = t.shape[-1]\n"
                            "m = torch.nn.AdaptiveLogSoftmaxWithLoss(n, n + 1, [n], div_value=1.0, head_bias=True).double()\n"
                            "with torch.no_grad():\n    m.head.weight.zero_()\n    m.head.weight[:n] = torch.eye(n)\n"
                            "    m.head.bias.zero_()\n    m.head.bias[n] = -1e9\n"
                            "return m.log_prob(t.reshape(1, n)).exp()[0, :n].detach().numpy()",
    # named before, kept named: other libraries' and torch's other spellings of the same call
    "scipy_special": "import scipy.special\nreturn scipy.special.softmax(np.asarray(s, dtype=float), axis=axis)",
    "scipy_log_softmax": "from scipy.special import log_softmax\nreturn np.exp(log_softmax(np.asarray(s, dtype=float)))",
    "torch_special": "return torch.special.log_softmax(t, -1).exp().numpy()",
    "tensor_method": "return t.softmax(-1).numpy()",
    "softmin": "import torch.nn.functional as F\nreturn F.softmin(-t, -1).numpy()",
    "jax": "import jax.nn\nreturn np.asarray(jax.nn.softmax(np.asarray(s, dtype=float)))",
}


def _library_w(body):
    return ("import numpy as np\nimport torch\n\n\ndef _w(s, axis=-1):\n    t = torch.as_tensor(np.asarray(s, dtype=float))\n"
            + "".join("    " + line + "\n" for line in body.splitlines()))


@pytest.mark.parametrize("case", list(LIBRARY_SOFTMAXES))
def test_each_library_softmax_named_is_a_softmax(case):
    """Only what really computes a softmax is named (torch.distributions' StickBreakingTransform, say, is not)."""
    scope = {}
    exec(compile(_library_w(LIBRARY_SOFTMAXES[case]), f"<{case}>", "exec"), scope)
    s = np.array([0.3, -1.2, 2.5, 0.0])
    try:
        got = scope["_w"](s)
    except (ImportError, AttributeError) as e:  # a library (jax) or function (linear_cross_entropy) not here
        pytest.skip(f"{case}: {e}")
    assert np.allclose(got, scipy.special.softmax(s), atol=1e-9), (case, got)


@pytest.mark.parametrize("case", list(LIBRARY_SOFTMAXES))
def test_a_library_softmax_under_a_name_of_its_own_is_named(tmp_path, case):
    from assignments.attention._by_hand import SOFTMAX_NAMES
    source = _library_w(LIBRARY_SOFTMAXES[case]) + BASE
    report = library_use(_build(tmp_path, {"hw.py": source}), "get_attention_weights", SOFTMAX_NAMES)
    assert report.used, (case, report.used, report.unclear)


def test_the_attackers_softmax_transform_loses_the_by_hand_points(tmp_path):
    """The attacker's own file: GOOD's get_attention_weights replaced by `SoftmaxTransform()(...)` imported inside it."""
    from assignments.attention._by_hand import SOFTMAX_NAMES
    hw = GOOD.replace('''    scores = np.asarray(scores)
    e = np.exp(scores - scores.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)
''', '''    from torch.distributions.transforms import SoftmaxTransform
    import torch
    return SoftmaxTransform()(torch.as_tensor(np.asarray(scores, dtype=float))).numpy()
''')
    assert hw != GOOD
    report = library_use(_build(tmp_path, {"hw.py": hw}), "get_attention_weights", SOFTMAX_NAMES)
    assert "torch.distributions.transforms.SoftmaxTransform" in report.used, (report.used, report.unclear)
    honest = library_use(_build(tmp_path / "honest", {"hw.py": GOOD}), "get_attention_weights", SOFTMAX_NAMES)
    assert honest.clean, (honest.used, honest.unclear)


# ------------------------------------------------------------------ code built to make a reading of it recurse

def test_an_expression_built_too_deep_to_write_back_is_unclear_not_an_error(tmp_path):
    """An attacker's probe: `np.load(..., allow_pickle=1+1+...+1)`, 700 terms, in code that never runs; the scan's
    ast.unparse of the keyword's value raised RecursionError and the by-hand tests became grader errors. The
    value is quoted only where it is shallow enough to write back; the call is unclear either way."""
    deep = "+".join(["1"] * 700)
    hw = GOOD.replace("    scores = np.asarray(scores)\n",
                      f"    if False:\n        np.load('x.npy', allow_pickle={deep})\n    scores = np.asarray(scores)\n", 1)
    assert hw != GOOD
    report = library_use(_build(tmp_path / "deep", {"hw.py": hw}), "get_attention_weights", SOFTMAX)
    assert report.unclear and not report.clean, (report.used, report.unclear)
    assert "allow_pickle=(...)" in report.unclear, report.unclear
    shallow = GOOD.replace("    scores = np.asarray(scores)\n",
                           "    if False:\n        np.load('x.npy', allow_pickle=1 + 1)\n    scores = np.asarray(scores)\n", 1)
    report = library_use(_build(tmp_path / "shallow", {"hw.py": shallow}), "get_attention_weights", SOFTMAX)
    assert "allow_pickle=1 + 1" in report.unclear, report.unclear


def test_a_reading_that_still_recurses_too_deep_is_unclear_not_an_error(tmp_path, monkeypatch):
    """Whatever reading of the trees may yet recurse too deep (the parser accepts code that no recursive reading
    of it may take whole), the scan says unclear, as past MAX_WALKED, and never raises: a grader's error there
    turned the student's by-hand tests into errors. (A reading made to recurse stands in for one not yet found.)"""
    from checker.running import by_hand

    def recursing(trees):
        raise RecursionError("maximum recursion depth exceeded")
    monkeypatch.setattr(by_hand, "import_system_edit", recursing)
    report = by_hand.library_use(_build(tmp_path, {"hw.py": GOOD}), "get_attention_weights", SOFTMAX)
    assert report.unclear == [by_hand.STOPPED] and not report.clean, (report.used, report.unclear)


# a name the student binds by assignment to their own object (a student probe: a hand-written softmax or layer
# norm as a callable object lost the by-hand points, "get_attention_weights calls softmax"); bound to the
# library's function by any assignment, it is still the library's
OWN_OBJECT = ("import numpy as np\n\nclass StableSoftmax:\n    def __call__(self, x, axis=-1):\n"
              "        e = np.exp(x - x.max(axis, keepdims=True))\n        return e / e.sum(axis, keepdims=True)\n\n"
              "softmax = StableSoftmax()\n\ndef get_attention_weights(scores):\n    return softmax(np.asarray(scores))\n")
BOUND_TO_LIBRARY = {
    "attribute": "import scipy.special\nsoftmax = scipy.special.softmax\n",
    "alias": "from scipy.special import softmax as sm\nsoftmax = sm\n",
    "star_import": "from scipy.special import *\nsoftmax = softmax\n",
    "class_attribute": "import scipy.special\nclass W:\n    __call__ = staticmethod(scipy.special.softmax)\nsoftmax = W()\n",
    "annotated": "import scipy.special\nsoftmax: object = scipy.special.softmax\n",
}


def test_a_name_bound_to_the_students_own_object_is_their_code(tmp_path):
    report = library_use(_build(tmp_path, {"hw.py": OWN_OBJECT}), "get_attention_weights", SOFTMAX)
    assert report.clean, (report.used, report.unclear)


@pytest.mark.parametrize("how", list(BOUND_TO_LIBRARY))
def test_a_name_assigned_the_library_function_is_the_librarys(tmp_path, how):
    code = ("import numpy as np\n" + BOUND_TO_LIBRARY[how]
            + "\ndef get_attention_weights(scores):\n    return softmax(np.asarray(scores), axis=-1)\n")
    report = library_use(_build(tmp_path, {"hw.py": code}), "get_attention_weights", SOFTMAX)
    assert not report.clean and any("softmax" in u for u in report.used + report.unclear), (report.used, report.unclear)


# a method of the student's class reached through self / cls (a student probe: a classmethod calling cls.softmax,
# its own hand-written staticmethod, lost the by-hand points); where `self` may be any value, it is not trusted
CLASS_HEAD = ("import numpy as np\nimport torch\n\nclass Attention:\n    @staticmethod\n    def softmax(x, axis=-1):\n"
              "        e = np.exp(x - x.max(axis, keepdims=True))\n        return e / e.sum(axis, keepdims=True)\n\n")
OWN_METHOD = {
    "classmethod": "    @classmethod\n    def weights(cls, scores):\n        return cls.softmax(np.asarray(scores))\n",
    "method": "    def weights(self, scores):\n        return self.softmax(np.asarray(scores))\n",
}
NOT_OWN_METHOD = {
    "staticmethod_param": "    @staticmethod\n    def weights(self):\n        return self.softmax(-1)\n",
    "rebound": "    def weights(self, scores):\n        self = torch.as_tensor(scores)\n        return self.softmax(-1)\n",
    "nested": "    def weights(self, scores):\n        g = lambda self: self.softmax(-1)\n        return g(torch.as_tensor(scores))\n",
    "except_as": ("    def weights(self, scores):\n        try:\n            raise ValueError(torch.as_tensor(scores))\n"
                  "        except ValueError as self:\n            return self.args[0].softmax(-1)\n"),
}
_USE = ("\nA = Attention()\n\ndef get_attention_weights(scores):\n    return A.weights(scores)\n")


@pytest.mark.parametrize("how", list(OWN_METHOD))
def test_self_or_cls_reaching_the_classs_own_method_is_their_code(tmp_path, how):
    code = CLASS_HEAD + OWN_METHOD[how] + _USE.replace("A = Attention()", "A = Attention()" if how == "method" else "A = Attention")
    report = library_use(_build(tmp_path, {"hw.py": code}), "get_attention_weights", SOFTMAX)
    assert report.clean, (report.used, report.unclear)


@pytest.mark.parametrize("how", list(NOT_OWN_METHOD))
def test_self_that_may_be_any_value_is_not_trusted(tmp_path, how):
    code = CLASS_HEAD + NOT_OWN_METHOD[how] + _USE
    report = library_use(_build(tmp_path, {"hw.py": code}), "get_attention_weights", SOFTMAX)
    assert not report.clean, how
