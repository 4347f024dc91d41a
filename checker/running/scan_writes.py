"""Writes into objects, for the "by hand" scan (trusted side, `checker.running.by_hand`).

What it is for: the scan follows a graded function to what it names. What a name holds also changes by writes
into the object it holds, wherever they stand: `numpy.nan_to_num = lib_softmax` changes what `np.nan_to_num`
calls (`import numpy as np` names the same module), `table["w"] = lib_softmax` changes `OPS["w"]` after
`table = OPS`, `_t.nn.functional.softsign = F.layer_norm` changes `F.softsign`, and a function called at the
top level may do the same from its body. `file_writes` files each such write (the top-level statement, or the
top-level def or class it stands in) under every name that may hold the object written into: names bound to
one module by any import or alias (`m = np`), plain aliases of a container (`table = OPS`, `t = OPS["sub"]`),
each read as the dotted path of what it holds. `code_replacement` finds writes that replace what a function
runs (`f.__code__ = g.__code__`, `setattr(f, "__defaults__", ...)`): what such a function runs cannot be
read from its source. Bindings that may fail are `scan_defs`'s; instances and plain look-ups
`scan_instances`'s.

What it is not: the scan itself, or a proof of what runs; it is conservative (a write it cannot place is filed
under more names, never fewer). It never imports or runs student code. Every pass is iterative.
"""

import ast

from checker.running.scan_nodes import children, nodes

__all__ = ["MUTATORS", "REPLACING_ATTRS", "code_replacement", "file_writes"]

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
