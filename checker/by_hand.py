"""Decide on the trusted side, from the submission's source, whether a function was written by hand.

What it is for: the handouts ask for some functions "by hand" (a softmax with np.exp, attention without
F.scaled_dot_product_attention, a layer norm without F.layer_norm). Whether a library did the work used
to be decided by a trace taken in the worker (Probes.torch_calls), that is, inside the student's own
process, where the code under test can read its caller's frames, find the probe through `gc` and replace
it, or call the library from a helper thread the trace does not follow: three submissions did that and
kept the points. A trace from the worker is the student's own report about itself; it may still cost
points (a student gains nothing by forging a report against themselves) but never earns them.

`library_use` reads the submission's files (the trusted side's copy, which the worker cannot touch) and
walks, with `ast`, the source of the function and of everything it reaches by name: the student's other
functions and classes, top-level assignments, imports, default values and decorators, and any function
that declares the name `global` (it could rebind it). It reports
  * `used`: library functions the handout forbids that this code names (`F.softmax`, `x.softmax(...)`,
    `from scipy.special import softmax`, `nn.LayerNorm`), named as the code's imports spell them; and
  * `missing`: the function has no `def` (or other binding) in the source at all;
  * `unclear`: constructs that hide from such a reading what is called (getattr, eval, exec, globals(),
    importlib, `__dict__`) or that read the grader's own state (sys._getframe, inspect, gc, frame
    attributes).
Points are earned only when both are empty. The rule is conservative on purpose: honest hand-written
code does not need dynamic look-ups in a softmax, and a submission that uses them gets a sentence saying
why the grader could not check it. The values are still judged as usual by the test.

What it is not: a sandbox or a proof about what runs (a module the student imports from site-packages is
not read; numpy itself is allowed). It never imports or runs student code.
"""

import ast
import os

from checker.submission_files import file_source
from checker.worker.sources import _cells, _strip_magics, list_units

__all__ = ["library_use", "SourceReport"]

# calls that look names up at run time: what they reach cannot be read from the source
OPAQUE_NAMES = {"getattr": "getattr", "eval": "eval", "exec": "exec", "compile": "compile",
                "__import__": "__import__", "globals": "globals()", "vars": "vars()", "locals": "locals()",
                "setattr": "setattr", "delattr": "delattr", "__builtins__": "__builtins__"}
# modules that read or rewrite the running program (frames, the object graph) or import by string
OPAQUE_MODULES = {"gc", "inspect", "importlib", "ctypes", "operator", "types", "runpy", "builtins"}
# attributes that do the same from an object in hand
OPAQUE_ATTRS = {"_getframe", "f_back", "f_locals", "f_globals", "f_code", "tb_frame", "gi_frame",
                "__dict__", "__getattribute__", "__globals__", "__code__", "__builtins__", "__closure__",
                "get_objects", "get_referrers", "import_module", "modules", "settrace", "setprofile",
                "attrgetter", "methodcaller", "__subclasses__", "__reduce__"}


class SourceReport:
    """What `library_use` found: `used` [dotted names], `unclear` [reasons]; `clean` when both are empty."""

    def __init__(self, used, unclear, missing=False):
        self.used, self.unclear, self.missing = used, unclear, missing

    @property
    def clean(self):
        return not self.used and not self.unclear and not self.missing


def _sources(path, secrets=()):
    """[(label, code)] of the submission in load order (.py files, then notebook cells, magics blanked)."""
    real = path if os.path.isdir(path) else file_source(path, secrets)
    if real is None:
        return []
    from checker.safe_read import readable
    root = real if os.path.isdir(real) else os.path.dirname(real)
    out = []
    for unit in list_units(real):
        if not readable(unit, root):  # grading's rules (checker.safe_read): no link out, no FIFO or device
            continue
        out.append(("@module", os.path.splitext(os.path.basename(unit))[0]))
        try:
            if unit.endswith(".ipynb"):
                for number, src, _count in _cells(unit):
                    out.append((f"{os.path.basename(unit)} cell {number}", _strip_magics(src)[0]))
            else:
                with open(unit, "rb") as f:
                    out.append((os.path.basename(unit), f.read(4_000_000).decode("utf-8-sig", errors="replace")))
        except (OSError, ValueError):
            continue
    return out


def _bound(target, names):
    """Add to `names` the plain names an assignment target binds."""
    if isinstance(target, ast.Name):
        names.add(target.id)
    elif isinstance(target, (ast.Tuple, ast.List)):
        for t in target.elts:
            _bound(t, names)
    elif isinstance(target, ast.Starred):
        _bound(target.value, names)


def _bindings(trees):
    """{name: [statements that bind it at the top level]}, and the functions anywhere that declare it global."""
    out = {}

    def add(name, node):
        out.setdefault(name, []).append(node)

    def top(stmts):
        for s in stmts:
            names = set()
            if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                names.add(s.name)
            elif isinstance(s, (ast.Import, ast.ImportFrom)):
                for a in s.names:
                    names.add(a.asname or a.name.split(".")[0])
            elif isinstance(s, ast.Assign):
                for t in s.targets:
                    _bound(t, names)
            elif isinstance(s, (ast.AugAssign, ast.AnnAssign)):
                _bound(s.target, names)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                _bound(s.target, names)
            elif isinstance(s, (ast.With, ast.AsyncWith)):
                for item in s.items:
                    if item.optional_vars is not None:
                        _bound(item.optional_vars, names)
            for n in names:
                add(n, s)
            # definitions inside top-level if/try/with/for blocks are top-level too
            if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                for field in ("body", "orelse", "finalbody"):
                    top(getattr(s, field, []) or [])
                for h in getattr(s, "handlers", []) or []:
                    top(h.body)
        return out

    for tree in trees:
        top(tree.body)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for inner in ast.walk(node):
                    if isinstance(inner, (ast.Global, ast.Nonlocal)):
                        for n in inner.names:
                            add(n, node)
    return out


def _import_origin(stmt, name):
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


def _dotted(node, binds):
    """`F.softmax` as its import spells it (torch.nn.functional.softmax), else as written."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        origin = next((o for s in binds.get(node.id, []) for o in [_import_origin(s, node.id)] if o), None)
        parts.append(origin or node.id)
        return ".".join(reversed(parts))
    return "(...)." + ".".join(reversed(parts))


_CONTINUES = ("else", "elif", "except", "finally", "case", ")", "]", "}", "#")


def _parse_leniently(code):
    """[trees] of the code; where it does not parse, of each top-level statement that does (the loader,
    too, runs the statements of a file with a syntax error elsewhere)."""
    try:
        return [ast.parse(code)]
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    blocks, current = [], []
    for line in code.split("\n"):
        starts = line[:1] not in ("", " ", "\t") and not line.lstrip().startswith(_CONTINUES)
        if starts and current and not current[-1].lstrip().startswith("@"):
            blocks.append(current)
            current = []
        current.append(line)
    blocks.append(current)
    out = []
    for block in blocks:
        try:
            out.append(ast.parse("\n".join(block)))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return out


def _locals(stmt):
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


def library_use(path, name, forbidden, secrets=()):
    """A SourceReport for the function `name` of the submission at `path`; `forbidden`: the bare names of
    library functions and classes the handout rules out there (softmax, scaled_dot_product_attention...)."""
    trees, own_modules = [], set()
    for label, code in _sources(path, secrets):
        if label == "@module":
            own_modules.add(code)
            continue
        trees += _parse_leniently(code)
    binds = _bindings(trees)
    if name not in binds:
        return SourceReport([], [], missing=True)

    def own(s):  # a def or class of the student's, or an import of one from the submission's own files
        return (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                or (isinstance(s, ast.ImportFrom) and (s.level or (s.module or "").split(".")[0] in own_modules)))

    student_defs = {n for n, stmts in binds.items() if stmts and all(own(s) for s in stmts)}
    used, unclear, seen = [], [], set()
    work = [(s, name) for s in binds[name]]

    def say(lst, text):
        if text not in lst:
            lst.append(text)

    while work:
        stmt, via = work.pop()
        if (id(stmt), via) in seen:
            continue
        seen.add((id(stmt), via))
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):  # only what it binds to the name that led here
            stmt = type(stmt)(names=[a for a in stmt.names if (a.asname or a.name.split(".")[0]) == via
                                     or a.asname == via or a.name == via],
                              **({"module": stmt.module, "level": stmt.level} if isinstance(stmt, ast.ImportFrom) else {}))
        local = _locals(stmt)
        for node in ast.walk(stmt):
            if isinstance(node, ast.Name):
                if node.id in forbidden and node.id not in student_defs and node.id not in local:
                    say(used, next((o for s in binds.get(node.id, []) for o in [_import_origin(s, node.id)] if o),
                                   node.id))
                if node.id in OPAQUE_NAMES and node.id not in student_defs:
                    say(unclear, OPAQUE_NAMES[node.id])
                work.extend((s, node.id) for s in binds.get(node.id, []))
            elif isinstance(node, ast.Attribute):
                if node.attr in forbidden:
                    say(used, _dotted(node, binds))
                if node.attr in OPAQUE_ATTRS:
                    say(unclear, _dotted(node, binds))
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                if isinstance(node, ast.ImportFrom) and (node.level or module.split(".")[0] in own_modules):
                    continue  # the student's own module: what it binds is followed by name
                for a in node.names:
                    full = f"{module}.{a.name}".lstrip(".") if module else a.name
                    if set(full.split(".")) & set(forbidden):
                        say(used, full)
                    if full.split(".")[0] in OPAQUE_MODULES:
                        say(unclear, f"import {full}")
    return SourceReport(used, unclear)
