"""One walk of each of a submission's syntax trees, shared by the by-hand scan's readings of one first read.

The scan (`by_hand`, `scan_writes`, `import_edits`) asks several questions of every node of a submission's
trees: which nodes bind which name, which write into what, which edit the import system, which replace what a
function runs. Each reading used to walk every tree again (`ast.walk` is most of the scan's time). Inside
`shared_walks()`, `nodes(tree)` walks a tree once and hands the same list, in `ast.walk`'s order (breadth
first, a parent before its children), to every reading after it, and `children(node)` each node's children
from that walk to the readings that keep their own context on the way down; `once(key, trees, make)` keeps one answer a reading
of the whole submission gives (`_binding_sites`); `forget()` drops both after the trees are rewritten
(`scan_instances.plain_lookups`).

Not a cache across submissions (what it holds lives as long as the `with` block, on the thread that opened it),
and not for subtrees (a statement's own walk is short and read once). Outside the block `nodes` is `ast.walk`.
"""

import ast
import contextlib
import threading

__all__ = ["children", "forget", "nodes", "once", "shared_walks"]

_local = threading.local()


@contextlib.contextmanager
def shared_walks():
    """Share walks and answers inside the block (a block inside another shares the outer one's)."""
    outer = getattr(_local, "walks", None)
    if outer is None:
        _local.walks = {}
    try:
        yield
    finally:
        if outer is None:
            _local.walks = None


def nodes(tree):
    """Every node of `tree`, in `ast.walk`'s order: one walk per tree inside `shared_walks()`."""
    walks = getattr(_local, "walks", None)
    if walks is None:
        return ast.walk(tree)
    hit = walks.get(("nodes", id(tree)))
    if hit is None or hit[0] is not tree:  # (the tree is kept with its list: its id is not reused meanwhile)
        kids = walks.setdefault("kids", {})
        out, i = [tree], 0
        while i < len(out):  # ast.walk's order, each node's children kept on the way
            node = out[i]
            kids[id(node)] = c = list(ast.iter_child_nodes(node))
            out.extend(c)
            i += 1
        hit = walks[("nodes", id(tree))] = (tree, out)
    return hit[1]


def children(node):
    """`ast.iter_child_nodes(node)` as a list: kept from the tree's one walk inside `shared_walks()`."""
    walks = getattr(_local, "walks", None)
    kept = walks.get("kids", {}).get(id(node)) if walks else None
    return kept if kept is not None else list(ast.iter_child_nodes(node))


def once(key, trees, make):
    """`make()`, computed once per `key` and set of `trees` inside `shared_walks()`, else each time."""
    walks = getattr(_local, "walks", None)
    if walks is None:
        return make()
    k = (key,) + tuple(id(t) for t in trees)
    hit = walks.get(k)
    if hit is None or any(a is not b for a, b in zip(hit[0], trees)):
        hit = walks[k] = (list(trees), make())
    return hit[1]


def forget():
    """Drop what the block holds (the trees were rewritten: their walks and answers may differ)."""
    walks = getattr(_local, "walks", None)
    if walks:
        walks.clear()
