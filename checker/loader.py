"""Load a student's submission into one namespace, inside the worker only.

What it is for: running a `.py` file, a `.ipynb` notebook or a folder of
them the way a student expects (notebook cells in order; a `.py` file one
top-level statement at a time), surviving what students write: syntax
errors, failing cells, IPython magics and shell lines, `sys.exit`, cells
that hang. Every problem becomes a message with the student's file, cell
and line; whatever did get defined stays usable.

What it is not: trusted. It runs in the worker, next to student code, and
never in the grading process. It judges nothing.
"""

import ast
import json
import linecache
import os
import re
import signal
import sys
import traceback

__all__ = ["Loader", "UnitTimeout", "student_where", "format_student_tb", "list_units"]

MAGIC_RE = re.compile(r"^\s*[%!]")
SUFFIXES = (".py", ".ipynb")


class UnitTimeout(BaseException):
    """Raised by the alarm when one cell or statement runs past its limit."""


class _IPythonStub:
    """Stands in for get_ipython(): every attribute is a no-op callable."""

    def __getattr__(self, name):
        return lambda *a, **k: None


def _display(*objs, **kwargs):
    return None


def list_units(path):
    """The files of a submission in load order: .py files first (importable by notebooks), then notebooks."""
    if os.path.isfile(path):
        return [path]
    files = []
    for root, dirs, names in os.walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d != "ipynb_checkpoints")
        for n in sorted(names):
            if n.endswith(SUFFIXES) and not n.startswith("."):
                files.append(os.path.join(root, n))
    return sorted(files, key=lambda f: (not f.endswith(".py"), f))


def _cells(nb_path):
    with open(nb_path, encoding="utf-8") as f:
        nb = json.load(f)
    cells = nb.get("cells")
    if cells is None and "worksheets" in nb:  # nbformat 3
        cells = [c for ws in nb["worksheets"] for c in ws.get("cells", [])]
    out = []
    for i, cell in enumerate(cells or []):
        if cell.get("cell_type") != "code":
            continue
        src = cell.get("source", "")
        out.append((i + 1, "".join(src) if isinstance(src, list) else str(src)))
    return out


def _strip_magics(src):
    """Blank out IPython-only lines, keeping line numbers; return (code, skipped lines)."""
    lines = src.split("\n")
    if lines and lines[0].lstrip().startswith("%%"):
        return "", [lines[0].strip()]
    skipped = []
    for i, line in enumerate(lines):
        if MAGIC_RE.match(line) or re.match(r"^\s*\w+\s*=\s*!", line):
            skipped.append(line.strip())
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + "pass"
    return "\n".join(lines), skipped


def _chunks(src):
    """Split source at top-level def/class/decorator lines, for files with a syntax error."""
    lines = src.splitlines(keepends=True)
    starts = [0]
    for i, line in enumerate(lines):
        if i and re.match(r"(def |class |async def |@)", line) and not re.match(r"@", lines[i - 1]):
            starts.append(i)
    starts.append(len(lines))
    return [(a + 1, "".join(lines[a:b])) for a, b in zip(starts, starts[1:]) if a < b]


class Loader:
    """Runs a submission's units into `self.ns`, recording messages and origins."""

    def __init__(self, display_root, unit_s=30.0, on_unit=None, skip=()):
        self.ns = {"__name__": "submission", "__builtins__": __builtins__,
                   "display": _display, "get_ipython": lambda: _IPythonStub()}
        self.messages = []
        self.origins = {}
        self.unit_s = unit_s
        self.on_unit = on_unit or (lambda unit: None)
        self.skip = {tuple(s) for s in skip}
        self.display_root = display_root
        self.files = {}  # compiled filename -> (display file, cell or None)

    # -- public
    def load(self, path):
        base = path if os.path.isdir(path) else os.path.dirname(path)
        if base not in sys.path:
            sys.path.insert(0, base)
        for f in list_units(path):
            shown = os.path.relpath(f, base) if os.path.isdir(path) else os.path.basename(f)
            try:
                if f.endswith(".ipynb"):
                    self._load_notebook(f, shown)
                else:
                    self._load_py(f, shown)
            except (OSError, ValueError, UnicodeDecodeError) as e:
                self._msg("unreadable", shown, None, None, f"could not read {shown}: {e}")
        return self

    # -- helpers
    def _msg(self, kind, file, cell, line, text):
        self.messages.append({"kind": kind, "file": file, "cell": cell, "line": line, "text": text})

    def _run_unit(self, code_src, filename, shown, cell, line0):
        key = (shown, cell if cell is not None else line0)
        if key in self.skip:
            where = f"cell {cell}" if cell is not None else f"line {line0}"
            self._msg("skipped", shown, cell, line0,
                      f"{shown} {where} was skipped: it crashed or hung the worker on an earlier try")
            return
        try:
            tree = ast.parse(code_src, filename)
        except SyntaxError as e:
            line = (e.lineno or 1) + line0 - 1
            self._msg("syntax_error", shown, cell, line,
                      f"SyntaxError in {_loc(shown, cell, line)}: {e.msg}"
                      + (f"\n    {e.text.strip()}" if e.text else ""))
            return
        if line0 > 1:
            ast.increment_lineno(tree, line0 - 1)
        self.files[filename] = (shown, cell)
        linecache.cache[filename] = (len(code_src), None, ("\n" * (line0 - 1) + code_src).splitlines(True), filename)
        self.on_unit({"file": shown, "cell": cell, "line": line0})
        try:
            code = compile(tree, filename, "exec")
            _alarm(self.unit_s)
            try:
                exec(code, self.ns)
            finally:
                _alarm(0)
        except UnitTimeout:
            self._msg("timeout", shown, cell, line0,
                      f"{_loc(shown, cell, line0)} ran longer than {self.unit_s:g} s and was stopped")
        except SystemExit as e:
            self._msg("exit", shown, cell, _where_line(e, self.files) or line0,
                      f"{_loc(shown, cell, _where_line(e, self.files) or line0)} called sys.exit({e.code!r}); "
                      "the grader ignored it and went on")
        except BaseException as e:  # noqa: BLE001 - student code may raise anything
            w = student_where(e, self.files)
            line = w["line"] if w else line0
            self._msg("error", shown, cell, line,
                      f"{_loc(shown, cell, line)} raised {_exc_text(e)}")
        for name in _assigned(tree):
            if name in self.ns and not name.startswith("_"):
                self.origins[name] = _loc(shown, cell, None)

    def _load_notebook(self, f, shown):
        for cell_no, src in _cells(f):
            code, skipped = _strip_magics(src)
            for s in skipped:
                self._msg("magic", shown, cell_no, None,
                          f"{shown} cell {cell_no}: skipped IPython line `{s[:80]}` (magics and shell commands do not run in the grader)")
            if code.strip():
                self._run_unit(code, f"<{shown} cell {cell_no}>", shown, cell_no, 1)

    def _load_py(self, f, shown):
        with open(f, encoding="utf-8-sig") as fh:
            src = fh.read()
        try:
            tree = ast.parse(src, f)
        except SyntaxError as e:
            self._msg("syntax_error", shown, None, e.lineno,
                      f"SyntaxError in {shown}, line {e.lineno}: {e.msg}"
                      + (f"\n    {e.text.strip()}" if e.text else "")
                      + "\n  The grader loads the parts of the file that do parse.")
            for line0, chunk in _chunks(src):
                try:
                    ast.parse(chunk)
                except SyntaxError:
                    continue
                self._run_unit(chunk, f, shown, None, line0)
            return
        # one top-level statement at a time: a failing statement loses only itself
        lines = src.splitlines(keepends=True)
        for node in tree.body:
            start = (node.decorator_list[0].lineno if getattr(node, "decorator_list", None) else node.lineno)
            end = node.end_lineno
            chunk = "".join(lines[start - 1:end])
            self._run_unit(chunk, f, shown, None, start)


def _assigned(tree):
    """Top-level names a unit binds (defs, classes, assignments, imports)."""
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        else:
            names.update(n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store))
    return names


def _loc(shown, cell, line):
    s = shown + (f", cell {cell}" if cell is not None else "")
    return s + (f", line {line}" if line else "")


def _alarm(seconds):
    if not hasattr(signal, "setitimer"):
        return
    if seconds:
        def _raise(signum, frame):
            raise UnitTimeout()
        signal.signal(signal.SIGALRM, _raise)
    signal.setitimer(signal.ITIMER_REAL, seconds or 0)


def _exc_text(e):
    try:
        text = str(e)
    except BaseException:  # noqa: BLE001
        text = "<unprintable>"
    name = type(e).__name__
    return f"{name}: {text[:1000]}" if text else name


def _where_line(e, files):
    w = student_where(e, files)
    return w["line"] if w else None


def student_where(exc, files):
    """The innermost traceback frame that is the student's code: {file, cell, line, code}."""
    tb = exc.__traceback__
    found = None
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if fn in files:
            shown, cell = files[fn]
            line = tb.tb_lineno
            code = (linecache.getline(fn, line) or "").strip()
            found = {"file": shown, "cell": cell, "line": line, "code": code}
        tb = tb.tb_next
    return found


def format_student_tb(exc, files, limit=8):
    """A traceback with only the student's frames, innermost last."""
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename in files:
            shown, cell = files[fs.filename]
            out.append(f"  {_loc(shown, cell, fs.lineno)}, in {fs.name}\n    {(fs.line or '').strip()}")
    out = out[-limit:]
    return "\n".join(out + [f"{_exc_text(exc)}"])
