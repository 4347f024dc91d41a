"""Top-level defs that may fail to bind their name, for the "by hand" scan (trusted side, `checker.running.by_hand`).

What it is for: `from scipy.special import softmax` and then a hand-written `def softmax` leaves the def bound,
unless running the def raises: then the name keeps what it held before, the library's function. `def_may_fail`
says whether a top-level def or class may raise (a decorator, a default value or an annotation that is not
known to be bound); a decorator of SAFE_DECORATORS (`functools.wraps(f)`, `lru_cache`, `torch.no_grad()`) and an
annotation or default naming what a module already loaded in the trusted process holds (`np.ndarray`, read from
its namespace: nothing imported) cannot fail. `defs_that_may_fail` asks it of every top-level def, in the order
the loader runs them.

What it is not: a proof that a def runs; it is conservative (what it cannot tell may fail). It never imports
or runs student code.
"""

import ast
import builtins
import sys
import types

from checker.running.scan_nodes import nodes
from checker.running.scan_writes import _chain, _import_key

__all__ = ["BUILTINS", "SAFE_DECORATORS", "SAFE_DECORATOR_CALLS", "def_may_fail", "defs_that_may_fail"]

# decorators that return a wrapper of the function they are given and cannot fail on one (`functools.wraps(f)`
# with f bound, `functools.lru_cache(maxsize=128)`, `torch.no_grad()`), by the dotted path they are imported as
SAFE_DECORATORS = {"functools.lru_cache", "functools.cache", "staticmethod", "classmethod", "property"}
SAFE_DECORATOR_CALLS = {"functools.wraps": "name", "functools.lru_cache": "constant", "torch.no_grad": "none",
                        "torch.inference_mode": "none", "torch.enable_grad": "none"}


def _resolved(name, path, modules):
    """The object `name.path` names in the trusted process where `name` is bound only by imports of a module
    already loaded here (numpy.ndarray), read from the modules' own namespaces (nothing imported, no module
    `__getattr__` run); None where it does not resolve so."""
    dotted = modules.get(name)
    if not dotted or dotted.startswith("."):
        return None
    parts = dotted.split(".") + list(path)
    obj = sys.modules.get(parts[0])
    for p in parts[1:]:
        if not isinstance(obj, types.ModuleType):
            return None
        obj = vars(obj).get(p)
    return obj


def _safe_decorator(d, known, modules):
    """Whether decorator `d` is one of SAFE_DECORATORS (or a call of SAFE_DECORATOR_CALLS with the arguments it
    takes), named through a builtin the submission never rebinds or an import of the module that defines it."""
    call = d if isinstance(d, ast.Call) else None
    c = _chain(call.func if call else d)
    if not c or (call and any(isinstance(a, ast.Starred) for a in call.args)):
        return False
    root, path = c
    if not path and root in known and root in BUILTINS and root in SAFE_DECORATORS and not call:
        return True
    if root not in modules or _resolved(root, path, modules) is None:
        return False
    dotted = ".".join([modules[root]] + path)
    if not call:
        return dotted in SAFE_DECORATORS
    kind = SAFE_DECORATOR_CALLS.get(dotted)
    args = list(call.args) + [k.value for k in call.keywords]
    if any(k.arg is None for k in call.keywords):
        return False
    if kind == "none":
        return not args
    if kind == "name":
        return len(args) == 1 and not call.keywords and isinstance(args[0], ast.Name) and args[0].id in known
    if kind == "constant":
        return len(args) <= 1 and all(isinstance(a, ast.Constant) for a in args)
    return False


def def_may_fail(stmt, known, future_annotations=False, modules=None):
    """Whether running top-level def or class `stmt` may raise, leaving its name bound to what it held before: it
    has a decorator (other than SAFE_DECORATORS) or a base class, or a default value or annotation that is anything
    but a constant (a tuple of them, `-1`), a name in `known` (bound before it by statements that cannot fail, or a
    builtin the submission never rebinds), or an attribute chain from a name in `modules` ({name: the module it
    is bound to, only by imports before the def}) that resolves in the trusted process's loaded modules
    (`np.ndarray`; `np.no_such_thing` may fail). Annotations are not run under `from __future__ import annotations`."""
    modules = modules or {}
    if any(not _safe_decorator(d, known, modules) for d in stmt.decorator_list):
        return True
    if isinstance(stmt, ast.ClassDef):
        return bool(stmt.bases or stmt.keywords)
    args = stmt.args
    stack = list(args.defaults) + [d for d in args.kw_defaults if d is not None]
    if not future_annotations:
        stack += [a.annotation for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]
                  if a is not None and a.annotation is not None]
        stack += [stmt.returns] if stmt.returns is not None else []
    while stack:
        e = stack.pop()
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.UAdd)):
            e = e.operand
        if isinstance(e, (ast.Tuple, ast.List)):
            stack.extend(e.elts)
        elif isinstance(e, ast.Name) and _resolved(e.id, [], modules) is not None:
            continue  # `np` itself, imported in an earlier cell
        elif isinstance(e, ast.Attribute) and (c := _chain(e)) and c[0] in modules \
                and "" not in c[1] and _resolved(c[0], c[1], modules) is not None \
                and not any(isinstance(x, ast.Subscript) for x in ast.walk(e)):
            continue  # `np.ndarray`, `torch.Tensor`: found in a module already loaded
        elif not (isinstance(e, ast.Constant) or (isinstance(e, ast.Name) and e.id in known)):
            return True
    return False


BUILTINS = frozenset(dir(builtins))


def defs_that_may_fail(binds, trees, own=(), trusted_imports=True, files=None):
    """The ids of the top-level defs and classes whose running may raise and leave their name bound to what it
    held before (`def_may_fail`: a decorator, a default that is not a constant or a name known to be bound).
    A name bound by a top-level import before the def is known (the import failing stops the file); its
    attributes are read in the trusted process's loaded modules only where `trusted_imports` (the submission
    leaves where Python finds modules alone) and the module is no file of the submission (`own`). `files`: the
    file each tree came from (a notebook's cells, one tree each, share one)."""
    fails = set()
    deleted = {n.id for tree in trees for n in nodes(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Del)}
    files = list(files) if files is not None else list(range(len(trees)))
    for i, tree in enumerate(trees):
        known = set(BUILTINS) - set(binds) - deleted  # builtins the submission never rebinds
        if not i or files[i] != files[i - 1]:  # a notebook's cells run in order: their imports count after them
            modules = {}  # {name: module} bound by imports before the def, and by nothing else anywhere
        future = any(isinstance(s, ast.ImportFrom) and s.module == "__future__"
                     and any(a.name == "annotations" for a in s.names) for s in tree.body)
        for s in tree.body:
            if isinstance(s, (ast.Import, ast.ImportFrom)) and not any(a.name == "*" for a in s.names):
                for a in s.names:
                    n = a.asname or (a.name.split(".")[0] if isinstance(s, ast.Import) else a.name)
                    if n in deleted:
                        continue
                    known.add(n)
                    key = _import_key(s, n, [a])
                    if (trusted_imports and key and key.split(".")[0] not in own and key.split(".")[0] != "__main__"
                            and all(isinstance(b, (ast.Import, ast.ImportFrom))
                                    and _import_key(b, n, b.names) == key for b in binds.get(n, []))):
                        modules[n] = key
                    else:
                        modules.pop(n, None)
            elif isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if def_may_fail(s, known, future, modules):
                    fails.add(id(s))
                else:
                    known.add(s.name)
            elif isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant) \
                    and all(isinstance(t, ast.Name) for t in s.targets):
                known.update(t.id for t in s.targets)
    return fails
