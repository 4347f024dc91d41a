"""`checker.running.scan_nodes`: one walk per syntax tree, shared by the by-hand scan's readings.

The walk gives what `ast.walk` gives, in its order; the scan reads every example submission and reference, and
code that makes it rewrite its trees (`getattr`, `setattr` on an instance), bind names from functions
(`global`) or bind names unseen (a star import), the same with the walks shared as with none.
"""
import ast
import contextlib
import pathlib

import pytest

from checker.running import by_hand, scan_nodes, scan_read

ROOT = pathlib.Path(__file__).resolve().parent.parent
FORBIDDEN = {"softmax", "log_softmax", "scaled_dot_product_attention", "layer_norm", "LayerNorm",
             "MultiheadAttention", "logsumexp"}

REWRITTEN = '''
import numpy as np
import scipy.special as sp

class Cfg:
    scale = 1.0

cfg = Cfg()
setattr(cfg, "scale", 2.0)
pick = getattr(sp, "softmax")

def get_attention_weights(scores):
    return pick(np.asarray(scores))
'''
GLOBAL = '''
import numpy as np
from scipy.special import softmax as lib

def setup():
    global get_attention_weights
    get_attention_weights = lib

def get_attention_weights(scores):
    e = np.exp(scores - scores.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)

setup()
'''
STAR = '''
from scipy.special import *

def get_attention_weights(scores):
    return softmax(scores, axis=-1)
'''
HONEST = '''
import numpy as np

def get_attention_weights(scores):
    def inner(x):
        nonlocal scores
        scores = x - x.max(-1, keepdims=True)
        return np.exp(scores)
    e = inner(np.asarray(scores, dtype=float))
    return e / e.sum(-1, keepdims=True)
'''


def _sources():
    files = sorted(ROOT.glob("assignments/*/examples/*.py")) + sorted(ROOT.glob("reference/*.py"))
    assert len(files) > 100  # every example submission of the three assignments
    return files


def _names(path):
    try:
        tree = ast.parse(path.read_bytes())  # (a `coding:` line is read as Python reads it)
    except SyntaxError:  # an example that does not parse: its by-hand report says so, shared or not
        return []
    return sorted({s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.ClassDef))})


def _report(path, name, shared):
    """The report for `name` and what the first read filed (each name's bindings, the import-system edit,
    the code replacement, the instances): what sharing the walks may change."""
    scan_read._SCANS.clear()  # a first read each time (a grade's later by-hand tests reuse it)
    with pytest.MonkeyPatch.context() as m:
        if not shared:
            m.setattr(by_hand, "shared_walks", contextlib.nullcontext)
        r = by_hand.library_use(path, name, FORBIDDEN, strings={"meta"})
    (code,) = scan_read._SCANS.values()
    filed = {n: [(type(s).__name__, s.lineno, s.col_offset) for s in stmts] for n, stmts in (code.binds or {}).items()}
    instances = {n: c.name for n, c in (code.instances or {}).items()}
    return r.used, r.unclear, r.missing, filed, code.edit, code.replaced, instances


def test_the_walk_is_ast_walk_and_its_children():
    tree = ast.parse((ROOT / "reference" / "vit.py").read_text())
    with scan_nodes.shared_walks():
        got = scan_nodes.nodes(tree)
        assert got is scan_nodes.nodes(tree)  # one walk
        assert [type(n) for n in got] == [type(n) for n in ast.walk(tree)]
        assert all(scan_nodes.children(n) == list(ast.iter_child_nodes(n)) for n in got)
    assert not isinstance(scan_nodes.nodes(tree), list)  # outside the block: ast.walk itself, nothing kept


def test_once_is_once_per_block_and_forget_drops_it():
    tree, calls = ast.parse("x = 1"), []

    def make():
        calls.append(1)
        return len(calls)

    with scan_nodes.shared_walks():
        assert scan_nodes.once("k", [tree], make) == 1
        assert scan_nodes.once("k", [tree], make) == 1
        first = scan_nodes.nodes(tree)
        scan_nodes.forget()
        assert scan_nodes.once("k", [tree], make) == 2
        assert scan_nodes.nodes(tree) is not first
    assert scan_nodes.once("k", [tree], make) == 3  # no block: each time


@pytest.mark.parametrize("path", _sources(), ids=lambda p: f"{p.parent.parent.name}/{p.name}")
def test_shared_walks_read_every_example_as_before(path):
    name = (_names(path) or ["softmax"])[0]
    assert _report(path, name, True) == _report(path, name, False)


@pytest.mark.parametrize("source, used", [(REWRITTEN, True), (GLOBAL, True), (STAR, True), (HONEST, False)],
                         ids=["rewritten", "global", "star", "honest"])
def test_shared_walks_read_rewrites_globals_and_stars_as_before(tmp_path, source, used):
    path = tmp_path / "sub.py"
    path.write_text(source)
    shared = _report(path, "get_attention_weights", True)
    assert shared == _report(path, "get_attention_weights", False)
    assert bool(shared[0] or shared[1]) is used, shared  # the library softmax is found (or unclear) where used
