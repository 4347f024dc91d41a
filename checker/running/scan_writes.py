"""Writes into objects, and bindings that may fail, for the "by hand" scan (trusted side, `checker.running.by_hand`).

What it is for: the scan follows a graded function to what it names. What a name holds also changes by writes
into the object it holds, wherever they stand: `numpy.nan_to_num = lib_softmax` changes what `np.nan_to_num`
calls (`import numpy as np` names the same module), `table["w"] = lib_softmax` changes `OPS["w"]` after
`table = OPS`, `_t.nn.functional.softsign = F.layer_norm` changes `F.softsign`, and a function called at the
top level may do the same from its body. `file_writes` files each such write (the top-level statement, or the
top-level def or class it stands in) under every name that may hold the object written into: names bound to
one module by any import or alias (`m = np`), plain aliases of a container (`table = OPS`, `t = OPS["sub"]`),
each read as the dotted path of what it holds. `code_replacement` finds writes that replace what a function
runs (`f.__code__ = g.__code__`, `setattr(f, "__defaults__", ...)`): what such a function runs cannot be
read from its source. `def_may_fail` says whether a top-level def may fail to bind its name (a decorator, a
default value that raises), leaving bound whatever the name held before; a decorator of SAFE_DECORATORS
(`functools.wraps(f)`, `lru_cache`, `torch.no_grad()`) and an annotation or default naming what a module already
loaded in the trusted process holds (`np.ndarray`, read from its namespace: nothing imported) cannot fail.
`plain_lookups` rewrites `getattr(obj, "name")` (a constant, not an opaque attribute) as `obj.name`, and
`setattr(cfg, k, v)` on a name of `own_instances` (one only ever bound to `C()`, C a plain class of the
submission's) as a write into cfg; `own_instances` also lets `attn.softmax(x)` be read as C's own method.

What it is not: the scan itself, or a proof of what runs; it is conservative (a write it cannot place is filed
under more names, never fewer). It never imports or runs student code. Every pass is iterative.
"""

import ast
import builtins
import sys
import types

from checker.running.scan_nodes import children, nodes, once

__all__ = ["REPLACING_ATTRS", "code_replacement", "def_may_fail", "defs_that_may_fail", "file_writes",
           "own_instances", "plain_lookups"]

# attributes whose writing replaces what a function (or a callable object) runs, or where it looks names up
REPLACING_ATTRS = {"__code__", "__globals__", "__closure__", "__defaults__", "__kwdefaults__", "__wrapped__",
                   "__call__", "__class__", "__get__", "__builtins__"}
# methods that write into the container they are called on (`OPS.update(w=f)`, `fns.append(f)`)
MUTATORS = {"update", "setdefault", "__setitem__", "__setattr__", "append", "extend", "insert", "__iadd__",
            "__ior__"}
# how long a dotted path read through aliases may grow (`a = b.x; b = a.y` would grow without end)
MAX_PATH = 12
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)


def _chain(expr):
    """(root name, [attributes]) of `a.b[k].c` read as the object it lies in: a subscript ends the path (what it
    gives lies inside the object before it), so `a.b[k].c` is (a, [b]); None if it starts from no name."""
    path = []
    while True:
        if isinstance(expr, ast.Attribute):
            path.append(expr.attr)
            expr = expr.value
        elif isinstance(expr, ast.Subscript):
            path.clear()
            expr = expr.value
        elif isinstance(expr, ast.Starred):
            expr = expr.value
        elif isinstance(expr, ast.Name):
            return expr.id, list(reversed(path))
        else:
            return None


def _alias_parts(value):
    """The expressions an assignment's value may hand on as the same object: itself, each side of `a or b`,
    `x if c else y`, `(t := OPS)`; none for a call or anything that builds a new object."""
    out, stack = [], [value]
    while stack:
        v = stack.pop()
        if isinstance(v, ast.BoolOp):
            stack.extend(v.values)
        elif isinstance(v, ast.IfExp):
            stack.extend((v.body, v.orelse))
        elif isinstance(v, ast.NamedExpr):
            stack.append(v.value)
        elif isinstance(v, (ast.Name, ast.Attribute, ast.Subscript)):
            out.append(v)
    return out


def _import_key(stmt, name, names):
    """The dotted path of what import statement `stmt` binds to `name` through its aliases `names` (`import numpy
    as np`: numpy; `import torch.nn`: torch; `from torch.nn import functional as F`: torch.nn.functional)."""
    for a in names:
        if isinstance(stmt, ast.Import) and (a.asname or a.name.split(".")[0]) == name:
            return a.name if a.asname else name
        if isinstance(stmt, ast.ImportFrom) and (a.asname or a.name) == name:
            return "." * (stmt.level or 0) + ".".join(p for p in (stmt.module, a.name) if p)
    return None


def _keys(binds):
    """{name: the dotted paths of what it may hold}: a module's path for an import, what the aliased expression
    holds for `a = b`, `a = b.c`, `a = b[k]` (followed to a fixed point, bounded), and `=name` for anything
    else (its own object)."""
    keys, aliases, plain = {}, [], {}  # plain: per statement, the names it binds (each read once)
    for name, stmts in binds.items():
        if name == "*":
            continue
        own = keys.setdefault(name, set())
        for s in stmts:
            if isinstance(s, (ast.Import, ast.ImportFrom)):
                if id(s) not in plain:  # {name: dotted path} of the whole statement, made once
                    plain[id(s)] = {a.asname or (a.name.split(".")[0] if isinstance(s, ast.Import) else a.name):
                                    _import_key(s, a.asname or (a.name.split(".")[0] if isinstance(s, ast.Import)
                                                                else a.name), [a])
                                    for a in reversed(s.names)}
                own.add(plain[id(s)].get(name) or "=" + name)
            elif isinstance(s, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                if isinstance(s, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in s.targets):
                    aliases.extend((name, c) for c in map(_chain, _alias_parts(s.value)) if c)
                if id(s) not in plain:
                    plain[id(s)] = _plainly_bound(s)
                if name in plain[id(s)]:
                    own.add("=" + name)
                # else: a write into the object it holds (`np.x = f`), no binding of it
            else:
                own.add("=" + name)  # a def, a loop, `with`, `global`...
        if not own:
            own.add("=" + name)
    for _name, (root, _path) in aliases:  # a name bound only to pasted data (read as blank) is its own object
        keys.setdefault(root, {"=" + root})
    changed, rounds = True, 0
    while changed and rounds < MAX_PATH:
        changed, rounds = False, rounds + 1
        for name, (root, path) in aliases:
            for k in list(keys.get(root, ())):
                new = ".".join([k] + path)
                if new.count(".") <= MAX_PATH and new not in keys[name]:
                    keys[name].add(new)
                    changed = True
    return keys


def _plainly_bound(s):
    """The names assignment `s` binds itself (not those whose object it only writes into, `np.x = f`)."""
    out = set()
    stack = list(s.targets if isinstance(s, ast.Assign) else [s.target])
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            out.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(t.elts)
        elif isinstance(t, ast.Starred):
            stack.append(t.value)
    return out


def _written(node):
    """The expressions `node` writes into: an assignment's or `del`'s attribute and subscript targets (`x.a = v`
    writes into x, `x.a.b[k] = v` into x.a.b), and the container a mutating method is called on."""
    out = []
    if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, (ast.Store, ast.Del)):
        out.append(node)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
        out.append(node.func.value)
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
            and node.args and not isinstance(node.args[0], ast.Starred):
        out.append(node.args[0])  # `setattr(cfg, k, v)`: a write into cfg
    return out


def _write_path(target, keys):
    """The dotted paths a write into `target` changes (`x.a.b = v`: x.a.b; `x[k] = v` and `x.update(...)`: x),
    or [] when it starts from no name."""
    if isinstance(target, ast.Attribute):
        c = _chain(target.value)
        c = c and (c[0], c[1] + [target.attr])
    else:
        c = _chain(target)
    if not c:
        return []
    root, path = c
    return [".".join([k] + path) for k in keys.get(root) or {"=" + root}]


def _root(w):
    """The name a written expression starts from, or None."""
    c = _chain(w.value if isinstance(w, ast.Attribute) else w)
    return c[0] if c else None


def _scope_of(func):
    """(the names a function or lambda binds in its own body, its arguments too, less those it declares global;
    {local name: the expressions a plain `t = OPS` there gives it}), nested scopes left to themselves."""
    out, declared, alias = set(), set(), {}
    args = func.args
    for a in args.posonlyargs + args.args + args.kwonlyargs + [args.vararg, args.kwarg]:
        if a is not None:
            out.add(a.arg)
    stack = list(func.body) if isinstance(func.body, list) else [func.body]
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Global, ast.Nonlocal)):
            declared.update(n.names)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, (ast.Store, ast.Del)):
            out.add(n.id)
        elif isinstance(n, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in n.names)
        elif isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            alias.setdefault(n.targets[0].id, []).extend(_alias_parts(n.value))
        if isinstance(n, _DEFS):
            out.add(n.name)
            continue  # its own scope
        if isinstance(n, ast.Lambda):
            continue
        stack.extend(children(n))
    return out - declared, alias


def _writes_in(stmt):
    """The expressions, in outer-scope terms, that `stmt` writes into: at the top level (a class body too) each
    write; inside a def or lambda a write whose root is not local there, or, for a local plain alias (`t = OPS`
    then `t[k] = f`), the expressions it was given."""
    out = []
    stack = [(stmt, None, {})]  # node, the names local to the functions around it (None: none), their aliases
    while stack:
        node, local, alias = stack.pop()
        for w in _written(node):
            root = _root(w)
            if root is None:
                continue
            if local is None or root not in local:
                out.append(w)
            else:
                out.extend(e for e in alias.get(root, ()) if _root(e) not in local or _root(e) in alias)
        if isinstance(node, _FUNCS):
            inner, inner_alias = _scope_of(node)
            inner_alias = {**alias, **{k: [e for e in v if _root(e) is not None] for k, v in inner_alias.items()}}
            local_here = (local or set()) | inner
            for field, v in ast.iter_fields(node):
                for k in (v if isinstance(v, list) else [v]):
                    if isinstance(k, ast.AST):  # decorators and defaults run where the def stands
                        inside = field == "body"
                        stack.append((k, local_here if inside else local, inner_alias if inside else alias))
            continue
        stack.extend((k, local, alias) for k in children(node))
    return out


_BLOCKS = ("body", "orelse", "finalbody")


def _units(trees):
    """Each unit a write is filed as: a top-level simple statement (in a block or not), a top-level def or class
    (its body may run when called), and a block's own header (`for OPS["w"] in [f]:`) as the block statement, with
    the parts of it to read; in the order the loader runs them, without recursion."""
    for tree in trees:
        blocks = [iter(tree.body)]
        while blocks:
            s = next(blocks[-1], None)
            if s is None:
                blocks.pop()
                continue
            if isinstance(s, _DEFS):
                yield s, [s]
                continue
            inner = [getattr(s, f, None) or [] for f in _BLOCKS]
            inner += [h.body for h in getattr(s, "handlers", None) or []]
            inner += [c.body for c in getattr(s, "cases", None) or []]
            if any(inner):
                yield s, [v for f, v in ast.iter_fields(s) if f not in _BLOCKS + ("handlers", "cases")
                          for v in (v if isinstance(v, list) else [v]) if isinstance(v, ast.AST)]
                blocks.append(x for b in inner for x in b)
            else:
                yield s, [s]


def file_writes(binds, trees):
    """`binds` with each write into an object filed under every name that may hold it (or an object around it,
    or one inside what the write replaced): the top-level statement that writes, or the top-level def or class
    whose body does (it may run when called at the top level)."""
    keys = _keys(binds)
    holders, inside = {}, {}  # a dotted path -> the names holding it; -> the names holding it or a path within it
    for name, ks in keys.items():
        for k in ks:
            holders.setdefault(k, set()).add(name)
            parts = k.split(".")
            for i in range(1, len(parts) + 1):
                inside.setdefault(".".join(parts[:i]), set()).add(name)
    out = {n: list(stmts) for n, stmts in binds.items()}
    for unit, parts in _units(trees):
        names = set()
        for part in parts:
            for w in _writes_in(part):
                names.add(_root(w))  # the name it starts from (one bound only to pasted data, read as blank, too)
                for p in _write_path(w, keys):
                    steps = p.split(".")
                    for i in range(1, len(steps) + 1):
                        names.update(holders.get(".".join(steps[:i]), ()))
                    names.update(inside.get(p, ()))
        for n in names:
            if not any(x is unit for x in out.setdefault(n, [])):
                out[n].append(unit)
    return out


def _escaping_defs(trees):
    """Whether a function or class the submission defines is handed to a call by its name anywhere
    (`helper.tune(get_attention_weights)`): a `setattr` in the callee may then be writing into it."""
    defined = {s.name for tree in trees for s in nodes(tree)
               if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}
    for tree in trees:
        for node in nodes(tree):
            if isinstance(node, ast.Call):
                for a in list(node.args) + [k.value for k in node.keywords]:
                    a = a.value if isinstance(a, ast.Starred) else a
                    if isinstance(a, ast.Name) and a.id in defined:
                        return defined, True
    return defined, False


def code_replacement(trees):
    """The first write anywhere in the submission that replaces what a function runs (`f.__code__ = ...`,
    `setattr(f, "__defaults__", ...)`, or a `setattr` whose name the source does not spell on one of the
    submission's functions or classes by its name, or on anything but `self` where such a function or class is
    handed to a call: `helper.tune(get_attention_weights)`), shown as written, or None. A config object's
    `setattr(cfg, key, value)` (minGPT's CfgNode) with no function handed anywhere is not one."""
    defined, escaping = None, None
    for tree in trees:
        for node in nodes(tree):
            if isinstance(node, ast.Attribute) and node.attr in REPLACING_ATTRS and isinstance(node.ctx, ast.Store):
                base = node.value.id if isinstance(node.value, ast.Name) else "(...)"  # no unparse: it recurses
                return f"`{base}.{node.attr} = ...`"
            if isinstance(node, ast.Call) and len(node.args) >= 2:
                f = node.func
                if (isinstance(f, ast.Name) and f.id == "setattr") or (isinstance(f, ast.Attribute)
                                                                       and f.attr == "__setattr__"):
                    obj, what = node.args[0], node.args[1]
                    if isinstance(what, ast.Constant):
                        if what.value in REPLACING_ATTRS:
                            return f"`setattr(..., {what.value!r}, ...)`"
                    elif not (isinstance(obj, ast.Name) and obj.id == "self"):
                        if defined is None:
                            defined, escaping = _escaping_defs(trees)
                        if escaping or (isinstance(obj, ast.Name) and obj.id in defined):
                            return "`setattr` with a name the source does not spell"
    return None


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



_NAMESPACE_NAMES = {"globals", "vars", "locals", "exec", "eval", "__import__", "__builtins__"}


def _binding_sites(trees):
    """{name: the nodes anywhere in the submission that bind or delete it}, and whether a star import binds
    names unseen."""
    return once("binding_sites", trees, lambda: _walk_binding_sites(trees))


def _walk_binding_sites(trees):
    sites, star = {}, False
    for tree in trees:
        for n in nodes(tree):
            names = []
            if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
                names = [n.id]
            elif isinstance(n, ast.arg):
                names = [n.arg]
            elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names = [n.name]
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                star = star or any(a.name == "*" for a in n.names)
                names = [a.asname or a.name.split(".")[0] for a in n.names]
            elif isinstance(n, (ast.Global, ast.Nonlocal)):
                names = list(n.names)
            elif isinstance(n, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and n.name:
                names = [n.name]
            elif isinstance(n, ast.MatchMapping) and n.rest:
                names = [n.rest]
            for x in names:
                sites.setdefault(x, []).append(n)
    return sites, star


def _plain_class(stmts):
    """The class statement when `stmts` (a name's bindings) is one top-level class of the submission's with no
    base, metaclass, decorator or `__new__`, whose body only defines methods and plain class attributes: calling
    it makes an instance of it; else None."""
    if len(stmts) != 1 or not isinstance(stmts[0], ast.ClassDef):
        return None
    c = stmts[0]
    if c.bases or c.keywords or c.decorator_list:
        return None
    members = set()
    for s in c.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)):
            members.add(s.name)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)) and all(
                isinstance(t, ast.Name) for t in (s.targets if isinstance(s, ast.Assign) else [s.target])):
            members.update(t.id for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
            if any(isinstance(x, ast.Name) and x.id in _NAMESPACE_NAMES for x in ast.walk(s)):
                return None
        elif not isinstance(s, ast.Pass) and not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant)):
            return None
    return None if members & {"__new__", "__class__", "__init_subclass__"} else c


def own_instances(binds, trees):
    """{name: the class statement} for each name bound only by top-level `name = C(...)` where C is a plain class
    of the submission's (`_plain_class`), and bound nowhere else (no argument, loop, import, `global` or local of
    that name anywhere): the name holds an instance of C, its methods C's own. None where the submission may bind
    names unseen (a star import, `globals()`, `exec`, a `setattr` on anything but such a name)."""
    sites, star = _binding_sites(trees)
    if star:
        return {}
    top = {id(s) for tree in trees for s in tree.body}
    # where a name is only ever read as `name.attr` (or handed to getattr/setattr/hasattr): it never escapes
    # to code that may write into it under another name (`tweak(attn)`, `b = attn`)
    reads, kept = {}, set()
    for tree in trees:
        for n in nodes(tree):
            if isinstance(n, ast.Attribute):
                kept.add(id(n.value))
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.args \
                    and n.func.id in ("getattr", "setattr", "hasattr"):
                kept.add(id(n.args[0]))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load):
                reads.setdefault(n.id, []).append(n)
    out = {}
    for name, where in sites.items():
        if any(id(n) not in kept for n in reads.get(name, ())):
            continue
        cls = None
        for n in where:
            owner = next((s for s in binds.get(name, []) if isinstance(s, ast.Assign) and id(s) in top
                          and len(s.targets) == 1 and s.targets[0] is n), None)
            value = owner.value if owner is not None else None
            c = (_plain_class(binds.get(value.func.id, [])) if isinstance(value, ast.Call)
                 and isinstance(value.func, ast.Name) else None)
            if c is None or (cls is not None and c is not cls):
                cls = None
                break
            cls = c
        if cls is not None:
            out[name] = cls
    for s in binds.get("*", []):
        for n in ast.walk(s):
            if (isinstance(n, ast.Name) and n.id in _NAMESPACE_NAMES) or \
                    (isinstance(n, ast.Attribute) and n.attr in ("__dict__", "modules")):
                return {}
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "setattr" and not (
                    n.args and isinstance(n.args[0], ast.Name) and n.args[0].id in out):
                return {}
    return out


def plain_lookups(trees, binds, opaque):
    """Rewrites the submission's trees in place where a builtin call is plain attribute access: `getattr(obj,
    "name")` is `obj.name` (with a default, `obj.name if True else default`: what it may give), a name not in
    `opaque`; `setattr(cfg, k, v)` on a name of `own_instances` is `cfg.__setattr__(k, v)`, a write into that
    object only. Not where the submission binds `getattr` or `setattr` itself. Iterative. Returns how many calls
    it rewrote (0: the trees, and what was filed from them, are as they were)."""
    sites, star = _binding_sites(trees)
    if star:
        return 0
    if not any(isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in ("getattr", "setattr")
               for tree in trees for n in nodes(tree)):
        return 0  # (most submissions: nothing to rewrite)
    instances = {} if "setattr" in sites else own_instances(binds, trees)
    plain_get = "getattr" not in sites

    def rewrite(v):
        if not (isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and not v.keywords
                and not any(isinstance(a, ast.Starred) for a in v.args)):
            return v
        a = v.args
        if plain_get and v.func.id == "getattr" and len(a) in (2, 3) and isinstance(a[1], ast.Constant) \
                and isinstance(a[1].value, str) and a[1].value.isidentifier() and a[1].value not in opaque:
            attr = ast.copy_location(ast.Attribute(value=a[0], attr=a[1].value, ctx=ast.Load()), v)
            if len(a) == 2:
                return attr
            return ast.copy_location(ast.IfExp(test=ast.Constant(True), body=attr, orelse=a[2]), v)
        if v.func.id == "setattr" and len(a) == 3 and isinstance(a[0], ast.Name) and a[0].id in instances:
            f = ast.copy_location(ast.Attribute(value=a[0], attr="__setattr__", ctx=ast.Load()), v.func)
            return ast.copy_location(ast.Call(func=f, args=a[1:], keywords=[]), v)
        return v

    stack, rewritten = list(trees), 0
    while stack:
        node = stack.pop()
        for field, v in ast.iter_fields(node):
            if isinstance(v, list):
                for i, x in enumerate(v):
                    if isinstance(x, ast.AST):
                        v[i] = rewrite(x)
                        rewritten += v[i] is not x
                        stack.append(v[i])
            elif isinstance(v, ast.AST):
                new = rewrite(v)
                if new is not v:
                    setattr(node, field, new)
                    rewritten += 1
                stack.append(new)
    return rewritten
