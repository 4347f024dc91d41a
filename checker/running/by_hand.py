"""Decide on the trusted side, from the submission's source, whether a function was written by hand.

What it is for: the handouts ask for some functions "by hand" (a softmax with np.exp, attention without
F.scaled_dot_product_attention, a layer norm without F.layer_norm). Whether a library did the work used
to be decided by a trace taken in the worker (Probes.torch_calls), that is, inside the student's own
process, where the code under test can read its caller's frames, find the probe through `gc` and replace
it, or call the library from a helper thread the trace does not follow: three submissions did that and
kept the points. A trace from the worker is the student's own report about itself; it may still cost
points (a student gains nothing by forging a report against themselves) but never earns them.

`library_use` reads the submission's files (the trusted side's copy, which the worker cannot touch) as
the worker runs them: decoded as Python decodes them (a `coding:` line, `checker.worker.sources.
read_source`), cut into the very pieces the loader runs (`py_pieces`, `cell_pieces`: a file ending in a
syntax error is read as the parts the loader runs), and every file the worker can import: each .py file
of the folder (`__hidden/` ones too), the files a notebook's `%%writefile` cells write, the .py members
of any zip archive (`sys.path` takes one whatever its name). It walks, with `ast`, the source of the
function and of everything it reaches by name: the student's other functions and classes (`helper.f`
after `import helper` too), top-level assignments, imports, default values and decorators, and any
function that declares the name `global` (it could rebind it), and every write into an object such a
name may hold, wherever it stands (`numpy.x = f` after `import numpy as np`, `table[k] = f` after `table =
OPS`: `checker.running.scan_writes`). It reports
  * `used`: library functions the handout forbids that this code names (`F.softmax`, `x.softmax(...)`,
    `from scipy.special import softmax`, `nn.LayerNorm`), named as the code's imports spell them; a
    `NameFamily` as `forbidden` rules out a kind of op whatever torch calls it (`torch.ops.aten.special_softmax`,
    `_native_batch_norm_legit_functional`), and the worker's trace is judged by the same family (`calls_in`); and
  * `missing`: the function has no `def` (or other binding) in the source at all;
  * `unclear`: constructs that hide from such a reading what is called (getattr, eval, exec, globals(),
    importlib, `__dict__`), a write anywhere that replaces what a function runs (`f.__code__ = ...`),
    or that read the grader's own state (sys._getframe, inspect, gc, frame
    attributes), and imports of code there is no source to read: a module that is neither a file of the
    submission nor installed (one the code writes while it runs), a compiled `.pyc` or extension module;
    and, where anything in the submission (reached from the function or not) changes where Python finds
    modules (`sys.path`, `sys.meta_path`, `sys.modules`..., importlib, `__import__` other than a call naming
    its module, `__import__("logging")`, which imports as `import logging` does; `builtins.__import__`,
    `__builtins__`, exec), every import
    the function reaches of a module that is not a file of the submission: the worker's folders on
    `sys.path` are read-only to the code and its cwd is not on it, so a module the code writes while it
    runs (a `colorsys.py` beside it) is imported only through such a change.
Points are earned only when both are empty. Every pass over the trees is iterative or bounded before it
recurses (`MAX_WALKED`, `MAX_SCAN_S`, `_shown`); code that still stops a reading is unclear (`STOPPED`),
never a grader's error. The rule is conservative on purpose: honest hand-written
code does not need dynamic look-ups in a softmax, and a submission that uses them gets a sentence saying
why the grader could not check it. The values are still judged as usual by the test.

What it is not: a sandbox or a proof about what runs (a module the student imports from site-packages is
not read; numpy itself is allowed), nor the reader of the files and archives (`checker.running.scan_read`,
with its bounds), nor the reading of what each name stands for (`checker.running.scan_binds`: bindings,
imports). It never imports or runs student code.
"""

import ast
import functools
import importlib.util
import re
import sys
import time

from checker.running.import_edits import import_system_edit
from checker.running.scan_binds import (bindings, bound_inside, dotted, import_origin, last_def_wins,
                                        local_imports, own_member_uses)
from checker.running.scan_nodes import forget, shared_walks
from checker.running.scan_instances import own_instances, plain_lookups
from checker.running.scan_writes import REPLACING_ATTRS, code_replacement, file_writes

# what the scan reads (and its bounds) lives in checker.running.scan_read; the names are kept here for callers
from checker.running.scan_read import (MAX_BYTES, MAX_FILES, MAX_SCAN_BYTES, MAX_SCAN_ZIP_BYTES,  # noqa: F401
                                       MAX_ZIP_BYTES, MAX_ZIP_MEMBERS, _read_code, _without_numeric_data)

__all__ = ["library_use", "SourceReport", "NameFamily", "op_words", "calls_in", "NORM_VALUES"]


def op_words(name):
    """The forms a family is matched against, one per part of `name` cut at "." and ":" (a namespace, an
    overload, a library tag: `_softmax.default`, `scipy:softmax`, `torch.ops.aten.special_softmax`): each part
    lower-cased with its words run together, whatever the case or underscores that split them
    (`_native_batch_norm_legit_functional` -> "nativebatchnormlegitfunctional", `LayerNorm` -> "layernorm")."""
    return ["".join(part.lower().split("_")) for part in re.split(r"[.:]", name) if part]


class NameFamily(frozenset):
    """Library functions a handout rules out, known by name (the set's members: `in` as a plain set) and by what
    they are: any name one of whose `op_words` holds one of `holds` ("softmax" in `special_log_softmax`,
    `_softmax.default`, `Softmax2d`, `scipy:softmax`) or matches `pattern`, unless that word is one of `spared`
    (the value norms a hand-written layer norm may use: `torch.linalg.vector_norm`). One family serves the
    source scan (identifiers, import paths) and the worker's trace (torch's `__name__` of each call, "lib:name").

    What it is not: a reading of what a name is bound to (the scan decides which names are the student's own);
    equality, hashing and set operations see the named members only."""

    def __new__(cls, names=(), holds=(), pattern=None, spared=()):
        self = super().__new__(cls, names)
        self.holds = tuple(h.replace("_", "").lower() for h in holds)
        self.pattern = re.compile(pattern) if pattern else None
        self.spared = frozenset("".join(s.lower().split("_")) for s in spared)
        return self

    def __contains__(self, name):
        if not isinstance(name, str):
            return False
        if frozenset.__contains__(self, name):
            return True
        return any(self.kind(w) for w in op_words(name))

    def kind(self, word):
        """Whether one word (an `op_words` form) names a member of the family by what it is."""
        if word in self.spared:
            return False
        return any(h in word for h in self.holds) or bool(self.pattern and self.pattern.search(word))

    def __reduce__(self):
        return (NameFamily, (set(self), self.holds, self.pattern.pattern if self.pattern else None, self.spared))


def named(forbidden, name):
    """Whether `name` is one of `forbidden`'s listed names (a NameFamily's members; any name of a plain set):
    a name that belongs to a family only by what it holds counts where it is a library's, not the student's."""
    return frozenset.__contains__(forbidden, name) if isinstance(forbidden, frozenset) else name in forbidden


# norms that are values, not normalisations: what a hand-written layer norm may compute its spread with
NORM_VALUES = ("norm", "vector_norm", "matrix_norm", "linalg_norm", "linalg_vector_norm", "linalg_matrix_norm",
               "frobenius_norm", "nuclear_norm", "native_norm", "norm_except_dim", "foreach_norm")


def calls_in(calls, known, family):
    """The calls of a worker's trace (`calls`: torch's names, "lib:name" for other libraries) that belong to
    `family`, as a message names them: those `known` ({trace name: shown}) first, in its order, then the others
    ("torch's special_softmax", "scipy's zscore"), each once."""
    keys = set()
    for c in calls:
        if isinstance(c, str):  # "torch:softmax" (a Python function of torch's) is torch's softmax
            keys.add(c.partition(":")[2] if c.startswith("torch:") else c)
    out = [shown for fn, shown in known.items() if fn in keys]
    for c in sorted(keys):
        if c not in known and c in family:
            lib, _, fn = c.rpartition(":")
            out.append(f"{lib or 'torch'}'s {fn}")
    return list(dict.fromkeys(out))

# calls that look names up at run time: what they reach cannot be read from the source
OPAQUE_NAMES = {"getattr": "getattr", "eval": "eval", "exec": "exec", "compile": "compile",
                "__import__": "__import__", "globals": "globals()", "vars": "vars()", "locals": "locals()",
                "setattr": "setattr", "delattr": "delattr", "__builtins__": "__builtins__",
                "get_type_hints": "typing.get_type_hints", "ForwardRef": "typing.ForwardRef"}  # (strings evaluated)
# modules that read or rewrite the running program (frames, the object graph) or import or run a string, or
# that rebuild objects (a function: `pickle.loads` of scipy's softmax) from bytes or text the source
# does not show
OPAQUE_MODULES = {"gc", "inspect", "importlib", "ctypes", "operator", "types", "runpy", "builtins",
                  "pickle", "_pickle", "marshal", "shelve", "copyreg", "dill", "cloudpickle", "joblib",
                  "jsonpickle", "yaml", "pydoc", "pkgutil", "imp", "zipimport", "code", "codeop", "cProfile",
                  "profile", "pdb", "bdb", "trace", "doctest"}
# keyword arguments that let a library loader do the same (np.load(..., allow_pickle=True),
# torch.load(..., weights_only=False)): the value that reads nothing but plain data
UNPICKLING_KEYWORDS = {"allow_pickle": False, "weights_only": True}
# attributes that do the same from an object in hand
OPAQUE_ATTRS = {"_getframe", "f_back", "f_locals", "f_globals", "f_code", "tb_frame", "gi_frame",
                "__dict__", "__getattribute__", "__globals__", "__code__", "__builtins__", "__closure__",
                "get_objects", "get_referrers", "import_module", "modules", "settrace", "setprofile",
                "attrgetter", "methodcaller", "__subclasses__", "__reduce__", "resolve_name", "locate",
                "load_module", "exec_module", "load_source", "unsafe_load", "find_class", "__getattr__",
                "__defaults__", "__kwdefaults__", "__wrapped__", "get_type_hints", "ForwardRef", "_eval_type",
                "get_field"}  # (the last four evaluate a string: typing's annotations, string.Formatter's fields)
# parts of torch that build or find a function from text, names or derivatives the source does not show
# (torch.func.grad(torch.logsumexp) is softmax; torch.jit.CompilationUnit(source); torch.overrides' tables)
OPAQUE_PREFIXES = ("torch.func", "torch.jit", "torch.overrides", "torch.fx", "torch.autograd", "torch._C",
                   "torch.compile", "torch._dynamo", "torch.library", "torch._ops", "torch.export", "functorch",
                   "logging.config")  # (logging's configurators import a dotted name from a string)
# seconds one scan may take: it is linear in the code (well under a second for MAX_SCAN_BYTES), so this bound
# is met only by code made to slow it; past it the rest is "unclear", never "by hand"
MAX_SCAN_S = 20.0
# the syntax-tree nodes one scan reads at most: each statement is read once, so the MAX_SCAN_BYTES of code it
# parses hold far fewer (about one node per 5 bytes); past it the rest is "unclear", never "by hand"
MAX_WALKED = 2_000_000
# how deep an expression may be built (and how many nodes it may hold) for a message to quote its source: ast.unparse
# recurses, a few frames per level, and a 700-term sum (`allow_pickle=1+1+...`) raised RecursionError there
MAX_SHOWN_DEPTH = 40
MAX_SHOWN_NODES = 2_000
# what the scan says of code it stops reading (MAX_WALKED, MAX_SCAN_S, or built too deeply for any reading of
# it that recurses): unclear, never "by hand"
STOPPED = "code the grader stopped reading (too large or too deeply built to read whole)"


class SourceReport:
    """What `library_use` found: `used` [dotted names], `unclear` [reasons], `missing` (no def found), `unread`
    [what of the submission was not read, where no def was found: it may be there]; `clean` when all are empty."""

    def __init__(self, used, unclear, missing=False, unread=()):
        self.used, self.unclear, self.missing, self.unread = used, unclear, missing, list(unread)

    @property
    def clean(self):
        return not self.used and not self.unclear and not self.missing and not self.unread


@functools.lru_cache(maxsize=4096)
def _installed(name):
    """Whether `name` is a module installed where the grader runs (the standard library, site-packages)."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


def _shown(node, limit=40):
    """The start (`limit` characters) of an expression's source for a message, or "(...)" where it is built too
    deeply or holds too much to write back: its depth and size are counted first, without recursion, and
    only then is ast.unparse (which recurses) asked."""
    stack, count = [(node, 1)], 0
    while stack:
        n, depth = stack.pop()
        count += 1
        if depth > MAX_SHOWN_DEPTH or count > MAX_SHOWN_NODES:
            return "(...)"
        stack.extend((c, depth + 1) for c in ast.iter_child_nodes(n))
    try:
        return ast.unparse(node)[:limit]
    except (RecursionError, ValueError, TypeError, AttributeError):
        return "(...)"


def library_use(path, name, forbidden, secrets=(), strings=()):
    """A SourceReport for the function `name` of the submission at `path`; `forbidden`: the bare names of
    library functions and classes the handout rules out there (softmax, scaled_dot_product_attention...).

    Every reading of the student's syntax trees here is iterative or bounded first (`_shown`); should any
    still recurse too deep on code built for it (the parser accepts what no reading of it may), the code is
    unclear (`STOPPED`), as code past MAX_WALKED is, never a grader's error and never "by hand".
    `strings`: string constants (lower case, before any ":") the code reached must not hold either ("meta" in
    `device="meta"`, `x.device.type == "meta"`); found, they are in `used`, quoted."""
    try:
        return _library_use(path, name, forbidden, secrets, frozenset(strings))
    except RecursionError:
        return SourceReport([], [STOPPED])


def _library_use(path, name, forbidden, secrets=(), strings=frozenset()):
    code = _read_code(path, secrets)
    trees, own_modules = code.trees, code.own
    if code.binds is None:  # the same for each by-hand test of one grade (the scan is read once, _read_code)
        with shared_walks():  # each tree walked once for the readings below (scan_nodes)
            # each write into an object filed under every name that may hold it (scan_writes), then the last def
            filed = file_writes(bindings(trees), trees)
            if plain_lookups(trees, filed, OPAQUE_ATTRS | REPLACING_ATTRS):  # calls rewritten: bound again
                forget()
                filed = file_writes(bindings(trees), trees)
            code.edit = import_system_edit(trees)
            code.binds = last_def_wins(filed, trees, code.files, code.own, not code.edit)
            code.replaced, code.instances = code_replacement(trees), own_instances(filed, trees)
    binds = code.binds
    if name not in binds:
        if code.notes:  # its def may be in what the grader did not read
            return SourceReport([], [], unread=code.notes[:3])
        return SourceReport([], [], missing=True)

    def own(s):  # a def or class of the student's, or an import of one from the submission's own files
        return (isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                or (isinstance(s, ast.ImportFrom) and (s.level or (s.module or "").split(".")[0] in own_modules)))

    def own_import(s):  # an import that binds a module of the submission's own files (`import helper`)
        if isinstance(s, ast.Import):
            return any(a.name.split(".")[0] in own_modules for a in s.names)
        return isinstance(s, ast.ImportFrom) and bool(s.level or (s.module or "").split(".")[0] in own_modules)

    student_defs = {n for n, stmts in binds.items() if stmts and all(own(s) for s in stmts)}
    # names the student's own code binds by assignment (`softmax = StableSoftmax()`, `layer_norm = LayerNormFn()`)
    # besides defs: what such a name is, is read where it is bound (followed by name), so naming it is no use of
    # the library function of that name; with a star import anywhere it may still be the library's
    assigned = set() if binds.get("*") else {
        n for n, stmts in binds.items() if stmts and all(own(s) or isinstance(s, (ast.Assign, ast.AnnAssign))
                                                         for s in stmts)}
    edit = code.edit
    used, unclear, seen, followed, said = [], [], set(), set(), set()
    # its bindings, and any top-level statement that may bind it unseen (read: what it calls is unclear)
    work = [(s, name) for s in binds[name] + binds.get("*", [])]
    walked = 0  # nodes read: linear in the code (each statement once), bounded all the same (MAX_WALKED)
    deadline = time.monotonic() + MAX_SCAN_S
    aliases, chains, origins = {}, {}, {}  # per import statement, attribute chain and name: worked out once

    def say(lst, text):
        if (id(lst), text) not in said:
            said.add((id(lst), text))
            lst.append(text)

    def bound_by(imp, via):  # what of import statement `imp` binds `via` (an index made once per statement)
        if id(imp) not in aliases:
            index = {}
            for a in imp.names:
                for k in {a.asname or a.name.split(".")[0], a.asname, a.name} - {None}:
                    index.setdefault(k, []).append(a)
            aliases[id(imp)] = index
        return aliases[id(imp)].get(via, [])

    def root_and_first(node):  # an attribute chain's root and the attribute right after it, each chain once
        path, n = [], node
        while isinstance(n, ast.Attribute) and id(n) not in chains:
            path.append(n)
            n = n.value
        root, first = chains[id(n)] if isinstance(n, ast.Attribute) else (n, None)
        for p in reversed(path):
            first = p.attr if first is None else first
            chains[id(p)] = (root, first)
        return chains[id(node)]

    def origin(name):  # the module a name was imported as (`F` -> torch.nn.functional), else None
        if name not in origins:
            origins[name] = next((o for s in binds.get(name, []) for o in [import_origin(s, name)] if o), None)
        return origins[name]

    def imported_as_family(real):  # an alias (`attention_softmax`) counts by what it names, not by its own words
        return bool(real) and isinstance(real, str) and real.split(".")[-1] in forbidden

    def opaque_part(dotted):
        return any(dotted == p or dotted.startswith(p + ".") for p in OPAQUE_PREFIXES)

    def follow(key, stmts, via):  # a name's bindings, queued once whatever number of places name it
        if key not in followed:
            followed.add(key)
            work.extend((s, via) for s in stmts)

    if code.replaced:  # anywhere in the submission: what any of its functions runs may not be its source
        say(unclear, f"{code.replaced} (it replaces what a function runs)")
    while work:
        stmt, via = work.pop()
        # an import binds only the name that led to it (read once per name); any other statement is the same
        # whatever name led to it: read once (`a0, ..., a14999 = ...` was read again for each of its names)
        key = (id(stmt), via) if isinstance(stmt, (ast.Import, ast.ImportFrom)) else id(stmt)
        if key in seen:
            continue
        seen.add(key)
        if walked > MAX_WALKED or time.monotonic() > deadline:
            say(unclear, STOPPED)
            break
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):  # only what it binds to the name that led here
            stmt = type(stmt)(names=bound_by(stmt, via),
                              **({"module": stmt.module, "level": stmt.level} if isinstance(stmt, ast.ImportFrom) else {}))
        local = bound_inside(stmt)
        imported_here = local_imports(stmt)  # `import torch` inside the function: its names' modules
        own_attrs = own_member_uses(stmt) if isinstance(stmt, ast.ClassDef) else ()
        for node in ast.walk(stmt):
            walked += 1
            if not walked & 4095 and time.monotonic() > deadline:
                break
            if isinstance(node, ast.Name):
                if node.id in forbidden and node.id not in student_defs and node.id not in local \
                        and (named(forbidden, node.id) or imported_as_family(origin(node.id) or imported_here.get(node.id))) \
                        and node.id not in assigned and not isinstance(node.ctx, ast.Store) \
                        and not (binds.get(node.id) and all(own_import(s) for s in binds[node.id])):
                    # (a module of the submission's own, `import attention_utils`: read by what it binds)
                    say(used, origin(node.id) or node.id)
                if node.id in OPAQUE_NAMES and node.id not in student_defs:
                    say(unclear, OPAQUE_NAMES[node.id])
                follow(("name", node.id), binds.get(node.id, []), node.id)
            elif isinstance(node, ast.Attribute):
                root, first = root_and_first(node)
                module = (imported_here.get(root.id) or origin(root.id)) if isinstance(root, ast.Name) else None
                if module and opaque_part(f"{module}.{first}"):
                    say(unclear, f"{module}.{first}")
                inst = isinstance(node.value, ast.Name) and code.instances.get(node.value.id)  # attn = Attention()
                if inst and node.attr in {f.name for f in inst.body if isinstance(f, ast.FunctionDef)}:
                    follow(("name", inst.name), binds.get(inst.name, []), inst.name)  # attn.softmax: its own method
                    continue
                if (isinstance(node.value, ast.Name) and node.value.id in student_defs
                        and all(isinstance(s, ast.ClassDef) for s in binds.get(node.value.id, []))):
                    # `Ops.softmax(x)`, a method of a class of the student's: their own code, read as such
                    follow(("name", node.value.id), binds[node.value.id], node.value.id)
                    continue
                own_module = (isinstance(node.value, ast.Name) and binds.get(node.value.id)
                              and all(own_import(s) for s in binds[node.value.id]))
                if node.attr in forbidden and not (own_module and node.attr in binds) and id(node) not in own_attrs \
                        and (named(forbidden, node.attr) or module):
                    # (a family's word in an attribute counts where the attribute is a library module's,
                    # `torch.ops.aten.special_softmax`, not the student's own object's: `cfg.normalized_axis`)
                    # (`utils.softmax(x)` after `import utils`, a file of the submission that binds `softmax`:
                    # what that binding is, is read below by name, a library's import of it included)
                    say(used, dotted(node, binds))
                if node.attr in OPAQUE_ATTRS:
                    say(unclear, dotted(node, binds))
                if isinstance(root, ast.Name) and any(own_import(s) for s in binds.get(root.id, [])):
                    # `helper.f(x)` after `import helper` (a file of the submission): read its `f`, and a
                    # module-level `__getattr__`, which answers for any name the module does not bind
                    follow(("name", node.attr), binds.get(node.attr, []), node.attr)
                    follow(("name", "__getattr__"), binds.get("__getattr__", []), "__getattr__")
            elif isinstance(node, ast.Constant) and type(node.value) is str and strings \
                    and node.value.strip().lower().split(":")[0] in strings:
                say(used, repr(node.value[:40]))
            elif isinstance(node, ast.keyword) and node.arg in UNPICKLING_KEYWORDS:
                safe = UNPICKLING_KEYWORDS[node.arg]
                if not (isinstance(node.value, ast.Constant) and node.value.value is safe):
                    say(unclear, f"{node.arg}={_shown(node.value)}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                if isinstance(node, ast.ImportFrom) and (node.level or module.split(".")[0] in own_modules):
                    continue  # the student's own module: what it binds is followed by name
                for a in node.names:
                    full = f"{module}.{a.name}".lstrip(".") if module else a.name
                    top = full.split(".")[0]
                    if opaque_part(full):
                        say(unclear, f"import {full}")
                    if top in own_modules:
                        continue  # a file of the submission (it comes first on sys.path): read, followed by name
                    parts = full.split(".")  # a listed name anywhere in the path; a family's word in the name imported
                    if any(named(forbidden, part) for part in parts) or parts[-1] in forbidden:
                        say(used, full)
                    if top in OPAQUE_MODULES:
                        say(unclear, f"import {full}")
                    elif top in code.unread:
                        say(unclear, f"import {top} (a compiled file of your submission, with no source to read)")
                    elif not _installed(top):
                        say(unclear, f"import {top} (neither a file of your submission nor an installed package)")
                    elif edit:
                        say(unclear, f"import {top} (your code changes where Python finds modules ({edit}), so "
                                     f"this may not be the installed {top})")
    if unclear:  # what the grader could not read may be why
        unclear += [n for n in code.notes[:3] if n not in unclear]
    return SourceReport(used, unclear)
