"""The submission's own instances and plain look-ups, for the "by hand" scan (trusted side, `checker.running.by_hand`).

What it is for: `attn = Attention()` and then `attn.softmax(x)` calls the class's own method, read as the
student's code, where the name is only ever bound to an instance of a plain class of the submission's and
never escapes (`own_instances`). `plain_lookups` rewrites `getattr(obj, "name")` (a constant, not an opaque
attribute) as `obj.name`, and `setattr(cfg, k, v)` on such an instance (minGPT's config object) as a write into
cfg, so the scan reads them as the plain attribute access they are.

What it is not: the scan itself; where the submission may bind names unseen (a star import, `globals()`,
`exec`, its own `getattr`) it finds no instance and rewrites nothing. It never imports or runs student code.
Every pass is iterative.
"""

import ast

from checker.running.scan_nodes import nodes, once

__all__ = ["own_instances", "plain_lookups"]

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
