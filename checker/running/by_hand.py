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
function that declares the name `global` (it could rebind it). It reports
  * `used`: library functions the handout forbids that this code names (`F.softmax`, `x.softmax(...)`,
    `from scipy.special import softmax`, `nn.LayerNorm`), named as the code's imports spell them; and
  * `missing`: the function has no `def` (or other binding) in the source at all;
  * `unclear`: constructs that hide from such a reading what is called (getattr, eval, exec, globals(),
    importlib, `__dict__`) or that read the grader's own state (sys._getframe, inspect, gc, frame
    attributes), and imports of code there is no source to read: a module that is neither a file of the
    submission nor installed (one the code writes while it runs), a compiled `.pyc` or extension module;
    and, where anything in the submission (reached from the function or not) changes where Python finds
    modules (`sys.path`, `sys.meta_path`, `sys.modules`..., importlib, `__import__`, exec), every import
    the function reaches of a module that is not a file of the submission: the worker's folders on
    `sys.path` are read-only to the code and its cwd is not on it, so a module the code writes while it
    runs (a `colorsys.py` beside it) is imported only through such a change.
Points are earned only when both are empty. The rule is conservative on purpose: honest hand-written
code does not need dynamic look-ups in a softmax, and a submission that uses them gets a sentence saying
why the grader could not check it. The values are still judged as usual by the test.

What it is not: a sandbox or a proof about what runs (a module the student imports from site-packages is
not read; numpy itself is allowed). It never imports or runs student code.
"""

import ast
import functools
import importlib.machinery
import importlib.util
import bisect
import os
import re
import struct
import sys
import zipfile
import zlib

from checker.running.submission_files import file_source
from checker.worker.sources import _cells, cell_pieces, py_pieces, read_source, read_source_bytes, writefile_target

__all__ = ["library_use", "SourceReport"]

# calls that look names up at run time: what they reach cannot be read from the source
OPAQUE_NAMES = {"getattr": "getattr", "eval": "eval", "exec": "exec", "compile": "compile",
                "__import__": "__import__", "globals": "globals()", "vars": "vars()", "locals": "locals()",
                "setattr": "setattr", "delattr": "delattr", "__builtins__": "__builtins__"}
# modules that read or rewrite the running program (frames, the object graph) or import by string, or
# that rebuild objects (a function: `pickle.loads` of scipy's softmax) from bytes or text the source
# does not show
OPAQUE_MODULES = {"gc", "inspect", "importlib", "ctypes", "operator", "types", "runpy", "builtins",
                  "pickle", "_pickle", "marshal", "shelve", "copyreg", "dill", "cloudpickle", "joblib",
                  "jsonpickle", "yaml", "pydoc", "pkgutil", "imp", "zipimport", "code", "codeop"}
# keyword arguments that let a library loader do the same (np.load(..., allow_pickle=True),
# torch.load(..., weights_only=False)): the value that reads nothing but plain data
UNPICKLING_KEYWORDS = {"allow_pickle": False, "weights_only": True}
# attributes that do the same from an object in hand
OPAQUE_ATTRS = {"_getframe", "f_back", "f_locals", "f_globals", "f_code", "tb_frame", "gi_frame",
                "__dict__", "__getattribute__", "__globals__", "__code__", "__builtins__", "__closure__",
                "get_objects", "get_referrers", "import_module", "modules", "settrace", "setprofile",
                "attrgetter", "methodcaller", "__subclasses__", "__reduce__", "resolve_name", "locate",
                "load_module", "exec_module", "load_source", "unsafe_load", "find_class"}


class SourceReport:
    """What `library_use` found: `used` [dotted names], `unclear` [reasons], `missing` (no def found), `unread`
    [what of the submission was not read, where no def was found: it may be there]; `clean` when all are empty."""

    def __init__(self, used, unclear, missing=False, unread=()):
        self.used, self.unclear, self.missing, self.unread = used, unclear, missing, list(unread)

    @property
    def clean(self):
        return not self.used and not self.unclear and not self.missing and not self.unread


MAX_FILES = 2000          # files of a submission read (a submission is a handful)
MAX_BYTES = 8_000_000     # of one source file (a homework notebook holds some 50 kB of code; pasted data more)
# of all the source one scan parses (files, notebook cells, archive members; a file's pasted data is not parsed,
# `_without_numeric_data`), once per grade (the by-hand tests share it): parsing dense code costs the trusted side
# about a second and 200 MB a megabyte
MAX_SCAN_BYTES = 2_000_000
MAX_ZIP_MEMBERS = 2000    # members of one archive
MAX_ZIP_BYTES = 16_000_000       # inflated from the .py members of one archive, all together
MAX_SCAN_ZIP_BYTES = 32_000_000  # inflated from all the archives of one submission


class _Code:
    """What the worker can run of a submission, read as the worker reads it: `trees` (each piece the loader
    runs, or a module the code can import, parsed), `own` (the module and package names those files
    provide), `unread` (names the code could import from the submission whose source the grader does not
    read: compiled modules, extension modules), and `notes` (why some of it could not be read)."""

    def __init__(self):
        self.trees, self.own, self.unread, self.notes = [], set(), set(), []
        self.files = []  # the file each of `trees` came from, in the order the loader runs them within it
        self._file = None
        self.inflate_left = MAX_SCAN_ZIP_BYTES  # bytes the scan may still inflate from archives
        self.source_left = MAX_SCAN_BYTES  # characters of source the scan may still parse

    def take(self, relpath, text, module=True):
        """Whether the scan may still parse `text` (of `relpath`); if not, say so: its names are code the grader
        cannot read, and no by-hand point is earned where the scan cannot tell."""
        if len(text) > self.source_left:
            self.notes.append(f"{relpath} was not read: the submission holds more code than the grader reads "
                              f"({MAX_SCAN_BYTES / 1e6:g} MB)")
            if module:
                self.add_unread(relpath)
            return False
        self.source_left -= len(text)
        return True

    def add_pieces(self, pieces):
        for _line0, code in pieces:
            try:
                self.trees.append(_stub_data(ast.parse(code)))
                self.files.append(self._file)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue  # the loader cannot run it either (it reports it)

    def add_module(self, relpath, text):
        """A .py file the worker can import (or runs): its module name and packages, and its statements (one
        tree where the file parses, as the loader's pieces are then its statements; else those pieces)."""
        lean = _without_numeric_data(text)
        if not self.take(relpath, lean):
            return
        parts = relpath.replace(os.sep, "/").split("/")
        self.own.update(p for p in parts[:-1] if p.isidentifier())
        self.own.add(parts[-1][:-3])
        self._file = relpath
        try:
            tree = ast.parse(lean)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # as the loader runs it: the parts that parse (the file as written, whatever was blanked)
            if lean is text or self.take(relpath, text):
                self.add_pieces(py_pieces(text).pieces)
            return
        for i, stmt in enumerate(tree.body):
            tree.body[i] = _stub_data(ast.Module(body=[stmt], type_ignores=[])).body[0]
        self.trees.append(tree)
        self.files.append(relpath)

    def add_unread(self, relpath):
        """A file the worker can import but whose source is not there to read (.pyc, .so)."""
        parts = relpath.replace(os.sep, "/").split("/")
        self.unread.update(p for p in parts[:-1] if p.isidentifier())
        self.unread.add(parts[-1].split(".")[0])


_DATA = (ast.Constant, ast.List, ast.Tuple, ast.Set, ast.Dict, ast.UnaryOp, ast.USub, ast.UAdd, ast.Load,
         ast.keyword)


def _stub_data(tree):
    """`tree`, a piece that only binds names to literal data (`W = [[0.1, ...], ...]`, a weight table pasted
    into the file) with that data replaced by None: it calls nothing and names nothing, so the scan loses
    nothing, and the trusted side does not keep a node for every number."""
    if (len(tree.body) == 1 and isinstance(tree.body[0], (ast.Assign, ast.AnnAssign))
            and tree.body[0].value is not None
            and all(isinstance(n, _DATA) for n in ast.walk(tree.body[0].value))):
        tree.body[0].value = ast.Constant(None)
    return tree


_NUMBER = re.compile(r"(?<![\w.])[-+]?(?:\d[\d_]*\.?[\d_]*|\.\d[\d_]*)(?:[eE][-+]?\d[\d_]*)?[jJ]?(?![\w.])")
_DATA_START = re.compile(r"[A-Za-z_]\w*[ \t]*=[ \t]*(?!=)")
_DATA_CHARS = set(" \t\r\n,:[](){}")


_STRING = re.compile(r"""(?<![\w"'])(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')""")  # one line, no prefix


def _numeric_only(s):
    """Whether `s` holds only numbers, plain one-line strings (no f-string), brackets, commas, colons and blanks
    (no name, comment or operator but a sign)."""
    if "'" in s or '"' in s:
        s = _STRING.sub(" ", s)
    return set(_NUMBER.sub("", s)) <= _DATA_CHARS


def _without_numeric_data(text):
    """`text` with each top-level statement `NAME = <numbers, strings and brackets only>` (a table of weights or data pasted
    into the file, over one line or many) blanked, its lines kept as empty lines. Such a statement calls and names
    nothing, so the scan loses nothing by not parsing it, and parsing pure numbers costs the trusted side most (a
    node per number: 2.4 MB of `x = 1` lines took 8 s and 1 GB). Anything else on its lines keeps it as it is."""
    if "=" not in text:
        return text
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        m = _DATA_START.match(lines[i])
        if not m or not _numeric_only(lines[i][m.end():]):
            out.append(lines[i])
            i += 1
            continue
        depth, j, ok = 0, i, True
        while True:
            part = lines[j][m.end():] if j == i else lines[j]
            if j > i and not _numeric_only(part):
                ok = False
                break
            bare = _STRING.sub(" ", part) if ("'" in part or '"' in part) else part  # a "(" in a string is none
            depth += sum(bare.count(c) for c in "([{") - sum(bare.count(c) for c in ")]}")
            if depth < 0:
                ok = False
                break
            if depth == 0:
                break
            j += 1
            if j == len(lines):
                ok = False
                break
        if ok:
            out.extend([""] * (j - i + 1))
            i = j + 1
        else:
            out.append(lines[i])
            i += 1
    return "\n".join(out)


_COMPILED = tuple(s for s in importlib.machinery.all_suffixes() if s != ".py")  # .pyc, .cpython-311-...so, .so


_SCANS = {}  # the last scans: {(path, secrets, what each file is now): _Code}; a submission's by-hand tests share one


def _read_code(path, secrets=()):
    """The submission's code as the worker runs and imports it (see _Code): every .py file under the
    folder (`__hidden/` too: the worker can import it), decoded as Python decodes it (a `coding:` line);
    notebook cells and the files their `%%writefile` cells write; the .py members of every zip archive
    (whatever its name: `sys.path` takes any), each cut into the pieces the loader runs. Read once while
    the files stay as they are (their sizes, times and inodes): the by-hand tests of one grade ask in turn."""
    real = path if os.path.isdir(path) else file_source(path, secrets)
    if real is None:
        return _Code()
    notes = []
    if os.path.isdir(real):
        files = []
        for root, dirs, names in os.walk(real):
            dirs[:] = sorted(d for d in dirs if d not in (".git", "__pycache__"))  # the worker's copy has neither
            files += [os.path.join(root, n) for n in sorted(names)]
            if len(files) > MAX_FILES:
                notes.append(f"more than {MAX_FILES} files in the submission")
                break
        base = real
    else:
        files, base = [real], os.path.dirname(real)
    key = (path, real, tuple(secrets), tuple(_stamp(f) for f in files[:MAX_FILES]))
    if key not in _SCANS:
        code = _Code()
        code.notes += notes
        _scan(files, base, code)
        _SCANS.clear()  # one submission's scan at a time: a batch holds no more than the one it grades
        _SCANS[key] = code
    return _SCANS[key]


def _stamp(f):
    try:
        st = os.lstat(f)
    except OSError:
        return (f, None)
    return (f, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode)


def _scan(files, base, code):
    for f in files[:MAX_FILES]:
        rel = os.path.relpath(f, base)
        try:
            if os.path.islink(f):  # the worker's copy holds a link's file only where it stays in the folder
                target = os.path.realpath(f)
                if not target.startswith(os.path.realpath(base) + os.sep) or not os.path.isfile(target):
                    continue
            elif not os.path.isfile(f):
                continue
            if f.endswith(".py"):
                if os.path.getsize(f) > MAX_BYTES:
                    code.notes.append(f"{rel} is larger than the grader reads")
                    code.add_unread(rel)
                    continue
                code.add_module(rel, read_source(f))
            elif f.endswith(".ipynb"):
                _read_notebook(f, code)
            elif f.endswith(_COMPILED):
                code.add_unread(rel)
            if zipfile.is_zipfile(f):
                _read_zip(f, rel, code)
        except (OSError, ValueError, UnicodeError, zipfile.BadZipFile, RuntimeError) as e:
            code.notes.append(f"{rel} could not be read ({type(e).__name__})")


def _read_notebook(f, code):
    code._file = f
    for _number, src, _count in _cells(f):
        target = writefile_target(src)
        if target is not None:  # the loader writes this file: code can import it
            name, body, _append = target
            name = os.path.normpath(name) if name else name
            if name and (os.path.isabs(name) or name.startswith("..")):
                name = os.path.basename(name)
            if name and name.endswith(".py"):
                code.add_module(name, body)
                code._file = f
            elif name and name.endswith(_COMPILED):
                code.add_unread(name)
            continue
        if code.take(os.path.basename(f), src, module=False):
            code.add_pieces(cell_pieces(src)[2])


def _read_zip(f, rel, code):
    """The .py members of the archive `f` as the worker's import (zipimport) reads them, bounded: one bad
    or hostile archive (a zip bomb, a corrupt or encrypted member, entries sharing their data) costs only
    itself, with a note, and what was not read is code the grader cannot read (`add_unread`)."""
    try:
        with open(f, "rb") as fp, zipfile.ZipFile(fp) as z:
            members = z.infolist()
            if len(members) > MAX_ZIP_MEMBERS:
                code.notes.append(f"{rel} holds more files than the grader reads")
            _read_members(fp, members[:MAX_ZIP_MEMBERS], rel, code)
    except Exception as e:  # noqa: BLE001 - whatever the archive does, it costs only itself
        code.notes.append(f"{rel} could not be read ({type(e).__name__})")


def _read_members(fp, members, rel, code):
    left = MAX_ZIP_BYTES  # of this archive
    starts, ends = [], []  # the data spans read so far, sorted (they never overlap)
    done = {}  # (start, end) -> "read", "unread" or "undecoded": an entry naming data already read reuses it
    for m in members:
        if m.is_dir():
            continue
        if m.filename.endswith(".pyc"):
            code.add_unread(m.filename)
            continue
        if not m.filename.endswith(".py"):
            continue
        try:
            span = _data_span(fp, m)
        except Exception as e:  # noqa: BLE001
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            code.add_unread(m.filename)
            continue
        if span in done:  # more entries for one member's data: read once, each name is still a module
            if done[span] == "read":
                parts = m.filename.replace(os.sep, "/").split("/")
                code.own.update(p for p in parts[:-1] if p.isidentifier())
                code.own.add(parts[-1][:-3])
            elif done[span] == "unread":
                code.add_unread(m.filename)
            continue
        i = bisect.bisect_left(starts, span[0])
        if (i > 0 and ends[i - 1] > span[0]) or (i < len(starts) and starts[i] < span[1]):
            code.notes.append(f"{rel}: {m.filename} overlaps another member's data (not read)")
            code.add_unread(m.filename)
            continue
        starts.insert(i, span[0])
        ends.insert(i, span[1])
        done[span] = "unread"
        limit = max(0, min(MAX_BYTES, left, code.inflate_left))
        try:
            raw = _inflate(fp, m, span, limit)
        except Exception as e:  # noqa: BLE001 - a corrupt member (zlib.error, EOFError...) costs only itself
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            code.add_unread(m.filename)
            continue
        left -= len(raw)
        code.inflate_left -= len(raw)
        if len(raw) > limit:
            code.notes.append(f"{rel}: {m.filename} is larger than the grader reads" if limit == MAX_BYTES else
                              f"{rel}: {m.filename} was not read (the archives inflate to more than the grader reads)")
            code.add_unread(m.filename)
            continue
        try:
            text = read_source_bytes(raw)
        except Exception as e:  # noqa: BLE001 - as a .py file of the folder that does not decode: a note
            done[span] = "undecoded"
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")
            continue
        done[span] = "read"
        try:
            code.add_module(m.filename, text)
        except Exception as e:  # noqa: BLE001
            code.notes.append(f"{rel}: {m.filename} could not be read ({type(e).__name__})")


def _data_span(fp, m):
    """(start, end) of member m's data in the archive, found as zipimport finds it: after the local header
    at the central directory's offset, `compress_size` bytes long (all of them in the file)."""
    fp.seek(m.header_offset)
    head = fp.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise zipfile.BadZipFile("bad local file header")
    name_size, extra_size = struct.unpack("<HH", head[26:30])
    start = m.header_offset + 30 + name_size + extra_size
    if start + m.compress_size > os.fstat(fp.fileno()).st_size:  # zipimport reads all of it, or fails
        raise EOFError("a member's data runs past the end of the archive")
    return start, start + m.compress_size


def _inflate(fp, m, span, limit):
    """At most limit + 1 bytes of member m's source as zipimport reads it: stored data as is, anything else
    inflated with zlib (zipimport inflates whatever the method field says), to the end of the deflate
    stream, whatever size the archive declares (zipimport checks neither the size nor the CRC). The bytes
    inflated are bounded by `limit`, never by a size the archive states."""
    start, end = span
    fp.seek(start)
    if m.compress_type == zipfile.ZIP_STORED:
        raw = fp.read(min(end - start, limit + 1))
        if len(raw) < min(end - start, limit + 1):
            raise EOFError("the archive ends inside a member")
        return raw
    d = zlib.decompressobj(-15)
    out, n, pos = [], 0, start
    while n <= limit and not d.eof:
        data = d.unconsumed_tail
        if not data:
            if pos >= end:
                raise zlib.error("incomplete or truncated stream")
            data = fp.read(min(end - pos, 1 << 16))
            if not data:
                raise EOFError("the archive ends inside a member")
            pos += len(data)
        piece = d.decompress(data, limit + 1 - n)  # max_length > 0: never more than the bound
        out.append(piece)
        n += len(piece)
    return b"".join(out)


@functools.lru_cache(maxsize=4096)
def _installed(name):
    """Whether `name` is a module installed where the grader runs (the standard library, site-packages)."""
    if name in sys.stdlib_module_names or name in sys.builtin_module_names:
        return True
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError, AttributeError):
        return False


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


def _last_def_wins(binds, trees, files):
    """`binds` where a name's last binding, in the order the loader runs one file, is a def or class of that
    file at its top level, run whatever happened before (not in a block), and every other binding of it is a
    top-level statement of the same file before it: the name is that def when the student's functions are
    called (`from scipy.special import softmax  # to compare` and then a hand-written `def softmax`)."""
    where = {id(s): ((i, j), files[i]) for i, tree in enumerate(trees) for j, s in enumerate(tree.body)}
    out = dict(binds)
    for n, stmts in binds.items():
        if len(stmts) < 2 or any(id(s) not in where for s in stmts):
            continue
        last = max(stmts, key=lambda s: where[id(s)][0])
        if (isinstance(last, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and last.name == n
                and len({where[id(s)][1] for s in stmts}) == 1 and where[id(last)][1] is not None):
            out[n] = [last]
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


# what changes where an import finds its module: sys's attributes, and modules and calls that import by
# string or run text the source does not show
IMPORT_SYSTEM_ATTRS = {"path", "meta_path", "path_hooks", "path_importer_cache", "modules"}
IMPORT_SYSTEM_MODULES = {"importlib", "imp", "site", "pkgutil", "runpy", "zipimport"}
IMPORT_SYSTEM_NAMES = {"__import__", "exec", "eval", "compile"}


def _import_system_edit(trees):
    """The first thing in the submission that can change where an import finds its module, or None."""
    sys_names = set()
    for tree in trees:
        for node in ast.walk(tree):
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
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in IMPORT_SYSTEM_NAMES:
                return node.id
            if (isinstance(node, ast.Attribute) and node.attr in IMPORT_SYSTEM_ATTRS
                    and isinstance(node.value, ast.Name) and node.value.id in sys_names):
                return f"{node.value.id}.{node.attr}"
    return None


def library_use(path, name, forbidden, secrets=()):
    """A SourceReport for the function `name` of the submission at `path`; `forbidden`: the bare names of
    library functions and classes the handout rules out there (softmax, scaled_dot_product_attention...)."""
    code = _read_code(path, secrets)
    trees, own_modules = code.trees, code.own
    binds = _last_def_wins(_bindings(trees), trees, code.files)
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
    edit = _import_system_edit(trees)
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
                root = node.value
                while isinstance(root, ast.Attribute):
                    root = root.value
                if (isinstance(node.value, ast.Name) and node.value.id in student_defs
                        and all(isinstance(s, ast.ClassDef) for s in binds.get(node.value.id, []))):
                    # `Ops.softmax(x)`, a method of a class of the student's: their own code, read as such
                    work.extend((s, node.value.id) for s in binds[node.value.id])
                    continue
                own_module = (isinstance(node.value, ast.Name) and binds.get(node.value.id)
                              and all(own_import(s) for s in binds[node.value.id]))
                if node.attr in forbidden and not (own_module and node.attr in binds):
                    # (`utils.softmax(x)` after `import utils`, a file of the submission that binds `softmax`:
                    # what that binding is, is read below by name, a library's import of it included)
                    say(used, _dotted(node, binds))
                if node.attr in OPAQUE_ATTRS:
                    say(unclear, _dotted(node, binds))
                if isinstance(root, ast.Name) and any(own_import(s) for s in binds.get(root.id, [])):
                    # `helper.f(x)` after `import helper` (a file of the submission): read its `f`
                    work.extend((s, node.attr) for s in binds.get(node.attr, []))
            elif isinstance(node, ast.keyword) and node.arg in UNPICKLING_KEYWORDS:
                safe = UNPICKLING_KEYWORDS[node.arg]
                if not (isinstance(node.value, ast.Constant) and node.value.value is safe):
                    say(unclear, f"{node.arg}={ast.unparse(node.value)[:40]}")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                module = (node.module or "") if isinstance(node, ast.ImportFrom) else ""
                if isinstance(node, ast.ImportFrom) and (node.level or module.split(".")[0] in own_modules):
                    continue  # the student's own module: what it binds is followed by name
                for a in node.names:
                    full = f"{module}.{a.name}".lstrip(".") if module else a.name
                    top = full.split(".")[0]
                    if set(full.split(".")) & set(forbidden):
                        say(used, full)
                    if top in own_modules:
                        continue  # a file of the submission (it comes first on sys.path): read, followed by name
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
