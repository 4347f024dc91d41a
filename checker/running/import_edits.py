"""What in a submission can change where Python finds the modules its code imports (trusted side).

What it is for: the by-hand scan (`checker.running.by_hand`) reads a graded function's imports as the
installed modules they name. That holds only while nothing in the submission changes where an import looks:
`sys.path`, `sys.meta_path`, `sys.modules` and the other import hooks of sys used otherwise than read (a
look-up, `in`, `.get`, a copy, print: Colab's `"google.colab" in sys.modules` cost a correct notebook its
by-hand points, a student probe, h45), importlib and its kin, `exec`,
`eval`, `compile`, the `__import__` builtin rebound (`builtins.__import__ = ...`, `__builtins__[...]`) or
called with a name the source does not spell. `import_system_edit(trees)` gives the first such thing in the
submission's syntax trees (what the scan's message names), or None. A call that spells its module,
`__import__("logging")`, imports as `import logging` does and changes nothing (a Gradescope probe, h39:
an unused debug helper of that kind cost a correct submission every by-hand test).

What it is not: the scan itself (`checker.running.by_hand`), or a wall: a worker's folders on sys.path are
read-only to its code whatever this finds. It never imports or runs student code.
"""

import ast

from checker.running.scan_nodes import nodes

__all__ = ["IMPORT_SYSTEM_ATTRS", "IMPORT_SYSTEM_MODULES", "IMPORT_SYSTEM_NAMES", "import_system_edit"]

# what changes where an import finds its module: sys's attributes, and modules and calls that import by
# string or run text the source does not show
IMPORT_SYSTEM_ATTRS = {"path", "meta_path", "path_hooks", "path_importer_cache", "modules"}
IMPORT_SYSTEM_MODULES = {"importlib", "imp", "site", "pkgutil", "runpy", "zipimport"}
IMPORT_SYSTEM_NAMES = {"__import__", "exec", "eval", "compile"}


def import_system_edit(trees):
    """The first thing in the submission that can change where an import finds its module, or None."""
    sys_names = set()
    for tree in trees:
        for node in nodes(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    top = a.name.split(".")[0]
                    if top == "sys":
                        sys_names.add(a.asname or "sys")
                    if top in IMPORT_SYSTEM_MODULES:
                        return f"import {a.name}"
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                top = node.module.split(".")[0]
                if top in IMPORT_SYSTEM_MODULES or (top == "sys" and {a.name for a in node.names}
                                                    & (IMPORT_SYSTEM_ATTRS | {"*"})):
                    return f"from {node.module} import ..."
    plain = set()  # `__import__("logging")`: an import by a name the source shows, through the usual lookup
    parents = {}  # per tree, {id(node): its parent}: made only where a sys.<attr> is met
    for tree in trees:
        for node in nodes(tree):  # breadth first: a call is met before the name it calls
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
                name = node.args[0].value if node.args and isinstance(node.args[0], ast.Constant) else None
                if (isinstance(name, str) and name.split(".")[0] not in IMPORT_SYSTEM_MODULES | {"sys", "builtins"}
                        and len(node.args) <= 4 and not node.keywords):
                    plain.add(id(node.func))  # (not sys: `__import__("sys").path` is sys.path; no level)
            if isinstance(node, ast.Name) and node.id in IMPORT_SYSTEM_NAMES and id(node) not in plain:
                return node.id
            if isinstance(node, ast.Name) and node.id == "__builtins__":  # __builtins__["__import__"] = ...
                return node.id
            if isinstance(node, ast.Attribute) and node.attr == "__import__":  # builtins.__import__ = ...
                return f"{node.value.id if isinstance(node.value, ast.Name) else '(...)'}.__import__"
            if (isinstance(node, ast.Attribute) and node.attr in IMPORT_SYSTEM_ATTRS
                    and isinstance(node.value, ast.Name) and node.value.id in sys_names):
                if not _only_read(node, tree, parents):
                    return f"{node.value.id}.{node.attr}"
    return None


# what only reads sys.path or sys.modules (Colab's `"google.colab" in sys.modules`): a look-up, a membership test,
# a copy, printing it; anything else (an assignment, a method that changes it, an alias, an argument to any
# other function) may change where imports look, and counts
_READING_METHODS = {"get", "keys", "values", "items", "copy", "index", "count", "__contains__"}
_READING_CALLS = {"print", "len", "list", "tuple", "set", "sorted", "repr", "str", "any", "all", "enumerate", "bool"}


def _only_read(node, tree, parents):
    """Does the syntax tree only read `node` (a `sys.<attr>`) where it stands? `parents` caches the trees' maps."""
    if id(tree) not in parents:
        parents[id(tree)] = {id(c): p for p in nodes(tree) for c in ast.iter_child_nodes(p)}
    up = parents[id(tree)].get(id(node))
    if isinstance(up, ast.Compare):
        return node is not up.left and all(isinstance(op, (ast.In, ast.NotIn)) for op in up.ops)
    if isinstance(up, ast.Subscript):
        return up.value is node and isinstance(up.ctx, ast.Load)
    if isinstance(up, ast.Attribute):
        call = parents[id(tree)].get(id(up))
        return up.attr in _READING_METHODS and isinstance(call, ast.Call) and call.func is up
    if isinstance(up, ast.Call):
        return node in up.args and isinstance(up.func, ast.Name) and up.func.id in _READING_CALLS
    if isinstance(up, (ast.For, ast.comprehension)):
        return up.iter is node
    return False
