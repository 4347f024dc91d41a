"""What a name of the submission stands for, read from its syntax trees, for the "by hand" scan (trusted side).

What it is for: `checker.running.by_hand` follows a graded function to everything it reaches by name, and
needs to know where each name comes from:
- `bindings(trees)`: {name: the top-level statements that bind it (in the order the loader runs them, each
  block read where it stands: defs, imports, assignments and the objects they write into, `:=`, match
  captures), and the functions that declare it global}; under "*", the statements that may bind any name
  unseen (`globals()[...] = ...`, `setattr`, `exec`); `last_def_wins` keeps only the def where a file's
  last binding of a name is a top-level def that runs whatever happened before;
- `import_origin` and `dotted`: a name as its import spells it (`F.softmax` -> torch.nn.functional.softmax);
- inside one function: `local_imports` (its own imports), `bound_inside` (the names it binds itself), and
  for a class, `own_member_uses` (`self.name` that is the class's own member, not a library function).
Every pass is iterative (no recursion on the tree's depth).

What it is not: the judgement of what a function calls (`checker.running.by_hand`), nor reading the files
(`checker.running.scan_read`); it never imports or runs student code.
"""

import ast
import itertools

from checker.running.scan_defs import defs_that_may_fail
from checker.running.scan_nodes import children, nodes

__all__ = ["bindings", "last_def_wins", "import_origin", "dotted", "local_imports", "bound_inside", "own_member_uses"]


def _stored_into(target, names):
    """Add to `names` the name whose object an assignment writes into (`np.sm = f`, `OPS['w'] = f`,
    `f.__code__ = g.__code__`: what is later called through that name is this statement's value)."""
    for t in (target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]):
        while isinstance(t, (ast.Attribute, ast.Subscript, ast.Starred)):
            t = t.value
        if isinstance(t, ast.Name) and t is not target:
            names.add(t.id)


def _bound(target, names):
    """Add to `names` the plain names an assignment target binds (`a, (b, *c) = ...`), read without recursion."""
    stack = [target]
    while stack:
        t = stack.pop()
        if isinstance(t, ast.Name):
            names.add(t.id)
        elif isinstance(t, (ast.Tuple, ast.List)):
            stack.extend(reversed(t.elts))
        elif isinstance(t, ast.Starred):
            stack.append(t.value)


_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_NAMESPACE_CALLS = {"globals", "vars", "locals"}
_REBINDING_CALLS = {"setattr", "exec", "eval", "__import__"}


def _header_names(s, names):
    """Add to `names` what the parts of top-level statement `s` outside its own blocks bind besides its targets:
    `:=` anywhere in them (`[(f := g)]`, a condition's `if (f := g):`), and a match's capture patterns (`case f:`
    binds f to the subject). Nested functions, classes and lambdas are their own scopes."""
    stack = [v for field, v in ast.iter_fields(s) if field not in ("body", "orelse", "finalbody", "handlers")]
    while stack:
        node = stack.pop()
        if isinstance(node, list):
            stack.extend(node)
            continue
        if not isinstance(node, ast.AST) or isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.NamedExpr):
            _bound(node.target, names)
        elif isinstance(node, (ast.MatchAs, ast.MatchStar)) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        if isinstance(node, ast.match_case):
            stack.append(node.pattern)  # its body is read as top-level statements of its own
            continue
        stack.extend(ast.iter_child_nodes(node))


def _rebinds_by_name(s):
    """Whether top-level statement `s` (outside its blocks) may bind any name in a way its text does not
    show: `globals()[...] = ...`, `vars().update(...)`, `setattr(...)`, `exec(...)`, `sys.modules[...].x = ...`."""
    parts = [v for field, v in ast.iter_fields(s) if field not in ("body", "orelse", "finalbody", "handlers")]
    nodes = [n for part in parts for p in (part if isinstance(part, list) else [part]) if isinstance(p, ast.AST)
             for n in ast.walk(p)]
    # every way below starts from a call of one of those names or from a namespace (`__dict__`, `modules`): a
    # statement with neither (almost all of them) is answered without the second look
    if not any((isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                and (n.func.id in _REBINDING_CALLS or n.func.id in _NAMESPACE_CALLS))
               or (isinstance(n, ast.Attribute) and n.attr in ("__dict__", "modules")) for n in nodes):
        return False
    # which nodes hold globals(), vars(), locals(), x.__dict__ or sys.modules: children before parents (ast.walk
    # gives parents first), so each node is looked at once (a walk per `.update` of a chain was quadratic)
    holds = {}
    for n in reversed(nodes):
        holds[id(n)] = ((isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in _NAMESPACE_CALLS)
                        or (isinstance(n, ast.Attribute) and n.attr in ("__dict__", "modules"))
                        or any(holds.get(id(c), False) for c in ast.iter_child_nodes(n)))
    for node in nodes:
        if isinstance(node, (ast.Subscript, ast.Attribute)) and isinstance(node.ctx, ast.Store) \
                and holds.get(id(node.value)):
            return True
        if isinstance(node, ast.Call):
            f = node.func
            if isinstance(f, ast.Name) and f.id in _REBINDING_CALLS:
                return True
            if isinstance(f, ast.Attribute) and f.attr in ("update", "__setitem__", "setdefault", "__setattr__") \
                    and holds.get(id(f.value)):
                return True
    return False


def bindings(trees):
    """{name: [statements that bind it at the top level]}, and the functions anywhere that declare it global;
    under "*" (no name), the top-level statements that may bind any name unseen (`_rebinds_by_name`)."""
    out = {}

    def add(name, node):
        out.setdefault(name, []).append(node)

    def top(stmts):
        # the statements in the order the loader runs them, each block read where it stands, without recursion
        # (one iterator per open block: the nesting the parser allows costs no Python frames)
        blocks = [iter(stmts)]
        while blocks:
            s = next(blocks[-1], None)
            if s is None:
                blocks.pop()
                continue
            names = set()
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(s.name)
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                for a in s.names:
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    _bound(t, names)
                    _stored_into(t, names)
            elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
                _bound(s.target, names)
                _stored_into(s.target, names)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                _bound(s.target, names)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                for item in s.items:
                    if item.optional_vars is not None:
                        _bound(item.optional_vars, names)
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                _header_names(s, names)
                if _rebinds_by_name(s):
                    add("*", s)
            for n in names:
                add(n, s)
            # definitions inside top-level if/try/with/for/match blocks are top-level too
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                inner = [getattr(s, field, []) or [] for field in ("body", "orelse", "finalbody")]
                inner += [h.body for h in getattr(s, "handlers", []) or []]
                inner += [case.body for case in getattr(s, "cases", []) or []]
                blocks.append(itertools.chain.from_iterable(inner))
        return out

    for tree in trees:
        top(tree.body)
        if not any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in nodes(tree)):
            continue  # (most files: no pass below)
        # each `global n` binds n in every function around it: one pass with the functions open at each node
        # (a walk of each function's own subtree read a deeply nested file once per level)
        stack = [(tree, ())]
        while stack:
            node, around = stack.pop()
            if isinstance(node, (ast.Global, ast.Nonlocal)):
                for n in node.names:
                    for f in around:
                        add(n, f)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                around = around + (node,)
            stack.extend((child, around) for child in children(node))
    return out


def last_def_wins(binds, trees, files, own=(), trusted_imports=True):
    """`binds` where a name's last binding, in the order the loader runs one file, is a def or class of that
    file at its top level, run whatever happened before (not in a block), and every other binding of it is a
    top-level statement of the same file before it: the name is that def when the student's functions are
    called (`from scipy.special import softmax  # to compare` and then a hand-written `def softmax`)."""
    where = {id(s): ((i, j), files[i]) for i, tree in enumerate(trees) for j, s in enumerate(tree.body)}
    fails = defs_that_may_fail(binds, trees, own, trusted_imports, files)
    out = dict(binds)
    for n, stmts in binds.items():
        if len(stmts) < 2 or any(id(s) not in where for s in stmts):
            continue
        if any(isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name != n for s in stmts):
            continue  # a function that binds it by `global n` binds it when called: maybe after the def
        last = max(stmts, key=lambda s: where[id(s)][0])
        if (isinstance(last, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and last.name == n
                and len({where[id(s)][1] for s in stmts}) == 1 and where[id(last)][1] is not None
                and id(last) not in fails):
            out[n] = [last]
    return out


def import_origin(stmt, name):
    """The dotted origin of `name` bound by an import statement (`F` -> torch.nn.functional), or None."""
    if isinstance(stmt, ast.Import):
        for a in stmt.names:
            if (a.asname or a.name.split(".")[0]) == name:
                return a.name if a.asname else name
    if isinstance(stmt, ast.ImportFrom):
        for a in stmt.names:
            if (a.asname or a.name) == name:
                return f"{stmt.module or ''}.{a.name}".lstrip(".")
    return None


def dotted(node, binds):
    """`F.softmax` as its import spells it (torch.nn.functional.softmax), else as written."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        origin = next((o for s in binds.get(node.id, []) for o in [import_origin(s, node.id)] if o), None)
        parts.append(origin or node.id)
        return ".".join(reversed(parts))
    return "(...)." + ".".join(reversed(parts))


def local_imports(stmt):
    """{name: the module it was imported as} for the imports inside a function (`import torch as T` -> T:
    torch, `from torch import func` -> func: torch.func); {} for any other statement."""
    out = {}
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return out
    for node in ast.walk(stmt):
        if isinstance(node, ast.Import):
            for a in node.names:
                out[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            for a in node.names:
                out[a.asname or a.name] = f"{node.module or ''}.{a.name}".lstrip(".")
    return out


def bound_inside(stmt):
    """Names a function binds inside itself (arguments, assignments, nested defs, imports): a forbidden
    bare name among them is the student's own, or an import that is reported as such."""
    out = set()
    if not isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return out
    for node in ast.walk(stmt):
        if isinstance(node, ast.arg):
            out.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node is not stmt:
            out.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            out.update(a.asname or a.name.split(".")[0] for a in node.names)
    return out


def own_member_uses(cls):
    """The ids of `self.name` / `cls.name` nodes in class `cls`'s own methods where `name` is a method or an
    attribute the class body itself defines: the student's own code (read with the class), not a library
    function of that name. Only in a method's own body (not a nested function, whose `self` may be anything),
    only where its first parameter is never rebound, never in a staticmethod (its first parameter is any value:
    `x.softmax()` of a tensor)."""
    members = set()
    for s in cls.body:
        if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            members.add(s.name)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target]):
                _bound(t, members)
    out = set()
    for f in cls.body:
        if not isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = f.args.posonlyargs + f.args.args
        if not params or any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in f.decorator_list):
            continue
        first, found, rebound = params[0].arg, [], False
        stack = list(f.body)
        while stack:
            node = stack.pop()
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue  # its own scope
            if isinstance(node, ast.Name) and node.id == first and not isinstance(node.ctx, ast.Load):
                rebound = True
            elif isinstance(node, (ast.Global, ast.Nonlocal)) and first in node.names:
                rebound = True
            elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name == first:
                rebound = True
            elif isinstance(node, ast.MatchMapping) and node.rest == first:
                rebound = True
            elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == first
                  and node.attr in members):
                found.append(id(node))
            stack.extend(ast.iter_child_nodes(node))
        if not rebound:
            out.update(found)
    return out
