"""Load a student's submission into one namespace, inside the worker only.

What it is for: running a `.py` file, a `.ipynb` notebook or a folder of
them the way a student expects (notebook cells in order; a `.py` file one
top-level statement at a time), surviving what students write: syntax
errors, failing cells, IPython magics and shell lines (`%%time` and
`%%capture` cells run their body, `%%writefile` writes its file (in the
cwd, which is not on `sys.path`; `import NAME` of a `NAME.py` so written
gets the text the cell wrote, served from memory by `checker.worker.jupyter.WrittenModules`, never
the file as the code may have changed it since), other
magics are skipped), `sys.exit`, cells that hang, training at the top level
(a loop that calls `.backward()`, or a call of a function that has one, is
not run: grading never uses a trained model). Every problem becomes a
message with the student's file, cell and line (and that line's code);
whatever did get defined stays usable, and `origins` says which file and
cell (or line) each name came from.

What it is not: trusted. It runs in the worker, next to student code, and
never in the grading process. It judges nothing. Reading the files is
`checker.worker.sources`; what a unit's syntax tree says (its statements,
the names it binds, whether it trains) is `checker.worker.syntax`; the
messages' places and tracebacks in the student's words are
`checker.worker.tracebacks`; a unit's time limit and the builtins put back
after it, `checker.worker.unit_guard`; Jupyter's `display`, `get_ipython`
and `%%writefile` modules, `checker.worker.jupyter`.
"""

import __future__
import ast
import linecache
import os
import re
import sys
import types

from checker.worker.jupyter import IPythonStub, WrittenModules, display
from checker.worker.packages import PackageModules, module_files
from checker.worker.roots import import_roots
from checker.worker.stubs import DISPLAY_ONLY, DisplayStubs, TextBars
from checker.worker.sources import (ASSIGNED_MAGIC_RE, NotebookError, _archive_or_document, _cells,  # noqa: F401
                                    _chunks, _strip_magics, list_units, py_pieces, read_source)
from checker.worker.syntax import (assigned as _assigned, nested_defs as _nested_defs, parse as _parse,
                                   statements as _statements, trainer_defs as _trainer_defs, training as _training)
from checker.worker.tracebacks import (CELL_LABELS, cell_label, code_line, exc_text, hint, loc, nth, stuck_in,
                                       student_frames, where_line)
from checker.worker.unit_guard import UnitTimeout, alarm, alarm_left, restore_builtins

__all__ = ["Loader"]


class Loader:
    """Runs a submission's units into `self.ns`, recording messages and origins."""

    def __init__(self, unit_s=30.0, on_unit=None, skip=()):
        # the namespace is a real module's, registered under the name the code runs as (below): a
        # `@dataclass` under `from __future__ import annotations`, pickle and typing look the module up
        self.module = types.ModuleType("submission")
        self.ns = self.module.__dict__
        self.ns.update({"__name__": "submission", "__builtins__": __builtins__,
                        "display": display, "get_ipython": lambda: IPythonStub()})
        self.messages = []
        self.origins = {}
        self.defs = {}  # name -> {file, cell, line} of the def/class statement that made it
        self._def_bodies = {}  # name -> (display file, ast dump) of the def/class that made it
        # name -> {file, cell, line, why} of a def/class statement that did not run: inside
        # `if __name__ == "__main__":` of a .py ("main_guard"), in a block whose code did not reach it
        # ("block"), or after the line where its unit stopped with an error ("stopped")
        self.unrun = {}
        self.unit_s = unit_s
        self.on_unit = on_unit or (lambda unit: None)
        self.skip = {tuple(s) for s in skip}
        # functions of the submission that train a model (a loop calling .backward()), and, as tuples that no name
        # equals, the call facts syntax.trainer_defs keeps for loops over a one-step helper (see there)
        self.trainers = set()
        self.untrained = set()  # names only the training code the loader skipped would have bound
        self.assigned_in = {}   # notebook -> {name: [(cell, execution count)]} of the cells binding it
        self.missing_modules = {}  # top-level module an import failed to find -> index of that message
        self._made_in = {}  # id -> (function or class, where) of those a module of the submission made
        self.counts = {}        # (notebook, cell) -> its execution count
        self.failed = {}        # name a failed statement would have bound -> index of that failure's message
        self.after = {}         # that index -> where later statements failed for want of such a name
        self.files = {}  # compiled filename -> (display file, cell or None)
        self.written = WrittenModules()  # the modules %%writefile cells wrote: importable as written
        self.future = {}  # display file -> compiler flags of its `from __future__` imports

    # -- public
    def load(self, path):
        stubs = DisplayStubs()
        sys.meta_path.append(stubs)
        sys.meta_path.insert(0, TextBars(stubs))
        sys.meta_path.insert(0, self.written)  # as Jupyter's '' would: before the installed modules
        try:
            self._load_all(path)
        finally:
            for i, where in self.after.items():
                same = self.messages[i]["file"]
                where = [loc(f, c, n) if f != same else loc(f, c, n)[len(f):].lstrip(", ") for f, c, n in where]
                shown = "; ".join(where[:8]) + (f" and {len(where) - 8} more" if len(where) > 8 else "")
                self.messages[i]["text"] += (f"\n  then {len(where)} later statement{'s' * (len(where) > 1)} "
                                             f"failed for want of what it would have defined: {shown}")
            for name in sorted(stubs.used):
                self._msg("stub", None, None, None,
                          f"`{name}` is not installed where the grader runs: its calls did nothing "
                          f"({DISPLAY_ONLY[name]}: not graded)")
        return self

    def _load_all(self, path):
        base = path if os.path.isdir(path) else os.path.dirname(path)
        # the submission's folder first, then the folders inside it whose modules its files import
        # (`hw/q1.py` imported as `q1` where an archive put the files one level down): checker.worker.roots
        roots = import_roots(path)
        for i, root in enumerate(roots):
            if root not in sys.path:
                sys.path.insert(i, root)
        units = list_units(path)
        # its files that are modules: imported by name, each with its own globals (checker.worker.packages)
        packages = PackageModules(lambda ns, f, shown: self._load_py(f, shown, ns))
        if os.path.isdir(path):
            for name, f in module_files(path, roots, units):
                packages.add(name, f, os.path.relpath(f, base))
        if packages.files:  # after the %%writefile modules: what a notebook wrote last is what it imports
            sys.meta_path.insert(sys.meta_path.index(self.written) + 1, packages)
        for f in units:
            shown = os.path.relpath(f, base) if os.path.isdir(path) else os.path.basename(f)
            try:
                kind = _archive_or_document(f)
                if kind:
                    raise NotebookError(f"it is {kind}, not Python code or a notebook; hand in the .py or "
                                        f".ipynb file itself")
                module = packages.name_of.get(f)
                if module and self._add_module(module, packages):
                    pass
                elif f.endswith(".ipynb"):
                    self._load_notebook(f, shown)
                else:
                    self._load_py(f, shown)
            except NotebookError as e:
                self._msg("unreadable", shown, None, None, f"could not read {shown}: {str(e)[:400]}")
            except Exception as e:  # noqa: BLE001 - a malformed file costs only itself
                self._msg("unreadable", shown, None, None,
                          f"could not read {shown}: {type(e).__name__}: {str(e)[:300]}")
        for name in self.origins:  # a function or class imported from a module of it: where that module made it
            made = self._made_in.get(id(self.ns.get(name)))
            if made is not None and made[0] is self.ns.get(name):
                self.origins[name] = made[1]
        return self

    # -- helpers
    def _add_module(self, name, packages):
        """Import module `name`, a file of the submission (checker.worker.packages), and add what it defines
        to the namespace. False where that name is already another module's (`numpy/__init__.py` in the
        folder, after the worker imported numpy): the file then runs into the namespace as any other."""
        import importlib
        module = importlib.import_module(name)
        if getattr(getattr(module, "__spec__", None), "loader", None) is not packages:
            return False
        for key, value in list(vars(module).items()):
            if not (key.startswith("__") and key.endswith("__")):
                self.ns[key] = value
        return True

    def _msg(self, kind, file, cell, line, text):
        self.messages.append({"kind": kind, "file": file, "cell": cell, "line": line, "text": text})

    def _run_unit(self, code_src, filename, shown, cell, line0, cache=True, ns=None):
        """Run one unit (a cell, a top-level statement) into `ns`: the submission's namespace, or the module
        of a package's file (checker.worker.packages) that another unit may be importing right now."""
        own = ns is None
        ns = self.ns if own else ns
        key = (shown, cell if cell is not None else line0)
        # it crashed or hung an earlier worker (the whole cell), or the cell limit stopped this very
        # statement on an earlier load (only the statement): the trusted side has said so
        if key in self.skip or (shown, cell, line0) in self.skip:
            return
        try:
            tree = _parse(code_src, filename)
        except SyntaxError as e:
            line = (e.lineno or 1) + line0 - 1
            self._msg("syntax_error", shown, cell, line,
                      f"SyntaxError in {loc(shown, cell, line)}: {e.msg}"
                      + (f"\n    {e.text.strip()}" if e.text else ""))
            return
        if line0 > 1:
            ast.increment_lineno(tree, line0 - 1)
        self.files[filename] = (shown, cell)
        training = _training(tree, self.trainers)
        self.trainers.update(_trainer_defs(tree))
        if training:
            self.untrained |= _assigned(tree)
            said = any(m["kind"] == "training" for m in self.messages)
            self._msg("training", shown, cell, line0,
                      f"{loc(shown, cell, line0)}: {training} was not run"
                      + (" either" if said else ": the grader tests your functions and classes on its own "
                         "inputs and never uses a trained model, so training and sampling would only cost time"))
            return
        if cache:
            linecache.cache[filename] = (len(code_src), None, ("\n" * (line0 - 1) + code_src).splitlines(True),
                                         filename)
        self.on_unit({"file": shown, "cell": cell, "line": line0,
                      **({"label": cell_label(shown, cell)} if cell is not None else {})})
        try:
            for node in tree.body:  # `from __future__ import ...` holds for the rest of the file, as in IPython
                if isinstance(node, ast.ImportFrom) and node.module == "__future__":
                    for alias in node.names:
                        feature = getattr(__future__, alias.name, None)
                        if feature is not None:
                            self.future[shown] = self.future.get(shown, 0) | feature.compiler_flag
            code = compile(tree, filename, "exec", flags=self.future.get(shown, 0), dont_inherit=True)
            # a unit met while another runs (a statement of a module of the submission that a statement imports)
            # has its own limit, and the importing statement gets back what it had left when it resumes: each
            # unit is stopped by its own limit alone, as the trusted side, told of each unit, expects
            left = alarm_left()
            alarm(self.unit_s)
            try:
                exec(code, ns)
            finally:
                alarm(left)
                restore_builtins()  # a unit that rebinds builtins.max/abs/... changes nothing of the grader's
            for name in _assigned(tree):  # defined after all: later uses are not for want of a failed one
                self.failed.pop(name, None)
                self.untrained.discard(name)
        except UnitTimeout as e:
            self.failed.update(dict.fromkeys(_assigned(tree), len(self.messages)))  # its knock-ons: told here
            self._msg("timeout", shown, cell, line0,
                      f"{loc(shown, cell, line0)} ran longer than {self.unit_s:g} s and was stopped"
                      + stuck_in(e, self.files))
        except SystemExit as e:
            self._msg("exit", shown, cell, where_line(e, self.files) or line0,
                      f"{loc(shown, cell, where_line(e, self.files) or line0)} called sys.exit({e.code!r}); "
                      "the grader ignored it and went on")
        except BaseException as e:  # noqa: BLE001 - student code may raise anything
            frames = student_frames(e, self.files)
            outer = next((f for f in frames if f["file"] == shown and f["cell"] == cell), None)
            inner = frames[-1] if frames else None
            line = outer["line"] if outer else line0
            if isinstance(e, NameError) and getattr(e, "name", None) in self.untrained:
                self.untrained |= _assigned(tree)  # (what this statement made is missing as well)
                self._msg("training", shown, cell, line,
                          f"{loc(shown, cell, line)} was not run either: it uses `{e.name}`, which only the "
                          "training code the grader skipped would have made (not graded)")
            elif (isinstance(e, ModuleNotFoundError) and isinstance(getattr(e, "name", None), str)
                  and self.missing_modules.get(e.name.split(".")[0]) is not None):
                # `import torchvision.transforms` after `import torchvision` failed: told there, once
                root = self.missing_modules[e.name.split(".")[0]]
                self.after.setdefault(root, []).append((shown, cell, line))
                self.failed.update(dict.fromkeys(_assigned(tree), root))
            elif isinstance(e, NameError) and getattr(e, "name", None) in self.failed:
                # a knock-on failure of an earlier one (a data file that is not there, say): told there, once
                root = self.failed[e.name]
                self.after.setdefault(root, []).append((shown, cell, line))
                self.failed.update(dict.fromkeys(_assigned(tree), root))
            else:
                if isinstance(e, ModuleNotFoundError) and isinstance(getattr(e, "name", None), str):
                    self.missing_modules[e.name.split(".")[0]] = len(self.messages)
                self.failed.update(dict.fromkeys(_assigned(tree), len(self.messages)))
                text = f"{loc(shown, cell, line)} raised {exc_text(e)}" + code_line(outer)
                if inner is not None and inner is not outer:
                    text += f"\n  in {loc(inner['file'], inner['cell'], inner['line'])}" + code_line(inner)
                self._msg("error", shown, cell, line, text + hint(e) + self._later_cell_note(e, shown, cell))
        for name in _assigned(tree):
            if name in ns and not name.startswith("_"):
                self.origins[name] = loc(shown, cell, None if cell is not None else line0)
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if node.name in ns:
                    if own:  # a module of a package keeps its own: nothing of another file is replaced
                        self._note_other_file(node, shown, cell)
                    else:  # made in a module of the submission: its origin wherever it is imported
                        self._made_in[id(ns[node.name])] = (ns[node.name], loc(shown, cell, line0))
                    self.defs[node.name] = {"file": shown, "cell": cell, "line": node.lineno,
                                            **({"label": cell_label(shown, cell)} if cell is not None else {})}
                else:
                    self.unrun[node.name] = {"file": shown, "cell": cell, "line": node.lineno, "why": "stopped"}
        for node, guarded in _nested_defs(tree.body):
            if node.name not in ns:
                why = "main_guard" if guarded and ns.get("__name__") != "__main__" else "block"
                self.unrun[node.name] = {"file": shown, "cell": cell, "line": node.lineno, "why": why}

    def _skipped_binds(self, line):
        """`t = %timeit -o f()` was skipped (the last message): a later NameError for `t` is told under it."""
        m = ASSIGNED_MAGIC_RE.match(line)
        if m:
            lhs = line.split("=", 1)[0]
            self.failed.update(dict.fromkeys(re.findall(r"[A-Za-z_]\w*", lhs), len(self.messages) - 1))

    def _note_other_file(self, node, shown, cell):
        """A def/class that another file of a folder defined differently (a scratch notebook beside the
        homework): the file that runs last wins, which the student may not expect; say which one is graded."""
        body = ast.dump(node, include_attributes=False)
        before = self._def_bodies.get(node.name)
        self._def_bodies[node.name] = (shown, body, loc(shown, cell, node.lineno))
        if before is None or before[0] == shown or before[1] == body:
            return
        self._msg("other_file", shown, cell, node.lineno,
                  f"`{node.name}` is defined in {before[2]} and, differently, in {loc(shown, cell, node.lineno)}. "
                  f"The files of a folder run in name order (.py files first), so the one in {shown} is graded. If that is not "
                  "the version you meant, delete or rename the other one (a scratch notebook, an old copy).")

    def _load_notebook(self, f, shown):
        self.ns["__name__"] = "__main__"  # as in Jupyter: `if __name__ == "__main__":` blocks run
        sys.modules["__main__"] = self.module  # (the worker's own __main__ is not needed after start-up)
        seen = {}  # name -> (cell, execution count) of the def/class that defined it last
        cells = _cells(f)
        assigned = self.assigned_in.setdefault(shown, {})  # name -> [(cell, execution count)] of top-level binds
        for cell_no, src, count in cells:
            self.counts[(shown, cell_no)] = count
            CELL_LABELS[(shown, cell_no)] = f"In [{count}]" if count is not None else f"the {nth(cell_no)} code cell"
            try:
                names = _assigned(ast.parse(_strip_magics(src)[0]))
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                continue
            for name in names:
                assigned.setdefault(name, []).append((cell_no, count))
        for cell_no, src, count in cells:
            if self._writefile(src, shown, cell_no):
                continue
            self._note_redefinitions(src, shown, cell_no, count, seen)
            code, skipped = _strip_magics(src)
            for s in skipped:
                self._msg("magic", shown, cell_no, None,
                          f"{loc(shown, cell_no, None)}: skipped IPython line `{s[:80]}` (magics and shell commands do not run in the grader)")
                self._skipped_binds(s)
            if not code.strip():
                continue
            name = f"<{shown} cell {cell_no}>"
            try:
                tree = ast.parse(code, name)
            except (SyntaxError, RecursionError, MemoryError):
                self._run_unit(code, name, shown, cell_no, 1)  # records the error with its line
                continue
            # one statement at a time, as for .py files: an `import matplotlib` that fails must not
            # take the `import torch.nn as nn` after it down with it
            linecache.cache[name] = (len(code), None, code.splitlines(True), name)
            for start, chunk in _statements(code, tree):
                self._run_unit(chunk, name, shown, cell_no, start, cache=False)

    def _later_cell_note(self, e, shown, cell):
        """A NameError for a name a LATER cell assigns, a cell that ran earlier in the student's notebook
        (its execution count is lower): the notebook only worked because of the order it was run in."""
        name = getattr(e, "name", None) if isinstance(e, NameError) else None
        if not name or cell is None:
            return ""
        later = [(c, n) for c, n in self.assigned_in.get(shown, {}).get(name, []) if c > cell]
        if not later:
            return ""
        c, n = later[0]
        mine = self.counts.get((shown, cell))
        ran = ("; in your notebook it ran before this one" if n is not None and mine is not None and n < mine
               else "")  # (both are named by their In [n] then)
        return (f"\n  `{name}` is assigned in {cell_label(shown, c)}, below this one{ran}. The grader runs the cells top to "
                f"bottom, as Restart & Run All does: move that assignment above its first use.")

    def _note_redefinitions(self, src, shown, cell_no, count, seen):
        """A function or class defined again in a later cell that the student ran *before* the earlier
        one (execution counts out of order): the grader keeps the later cell's, which may not be the
        version the student last tried."""
        try:
            tree = ast.parse(_strip_magics(src)[0])
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return
        for node in tree.body:
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                continue
            before = seen.get(node.name)
            seen[node.name] = (cell_no, count)
            if before is None or before[0] == cell_no or None in (before[1], count) or before[1] < count:
                continue
            self._msg("note", shown, cell_no, node.lineno,
                      f"`{node.name}` is defined in {cell_label(shown, before[0])} and again, lower in the notebook, "
                      f"in {cell_label(shown, cell_no)}. The grader runs the cells top to bottom, so the lower one "
                      f"is graded; but in your notebook {cell_label(shown, before[0])} ran last, so the version you "
                      "tried last may be the other one. Delete the one you do not want.")

    def _writefile(self, src, shown, cell_no):
        """`%%writefile [-a] name`: write the cell's body to that file, as Jupyter would."""
        first, _, body = src.partition("\n")
        parts = first.split()
        if not parts or parts[0] != "%%writefile":
            return False
        append = any(p in ("-a", "--append") for p in parts[1:])
        names = [p for p in parts[1:] if not p.startswith("-")]
        if (shown, cell_no) in self.skip or not names:
            return True
        try:
            text = body if body.endswith("\n") else body + "\n"
            with open(names[0], "a" if append else "w", encoding="utf-8") as out:
                out.write(text)
            self.written.wrote(names[0], text, append)
            self._msg("magic", shown, cell_no, None, f"{loc(shown, cell_no, None)}: %%writefile wrote {names[0]}")
        except OSError as e:
            self._msg("error", shown, cell_no, 1,
                      f"{loc(shown, cell_no, None)}: %%writefile could not write {names[0]}: {e.strerror or e}")
        return True

    def _load_py(self, f, shown, ns=None):
        """Run the .py file `f` one top-level statement at a time: into the submission's namespace, or into
        `ns`, a module of one of its packages, which the import system set up (checker.worker.packages)."""
        src = read_source(f)
        if ns is not None:  # a module of the submission sees what the files before it defined, as they ran into
            for key, value in list(self.ns.items()):  # the one namespace (its own statements replace them)
                if not (key.startswith("__") and key.endswith("__")):
                    ns.setdefault(key, value)
        if ns is None:
            self.ns["__file__"] = f  # as `python file.py` has it (the path of the grader's copy)
            # but imported, not run as a script: the demo code a student keeps under
            # `if __name__ == "__main__":` (training loops, plots) does not run
            self.ns["__name__"] = "submission"
            sys.modules["submission"] = self.module
        # the whole file, so tracebacks show the student's line wherever it is
        linecache.cache[f] = (len(src), None, src.splitlines(True), f)
        # the pieces the trusted side's source scan (checker.running.by_hand) reads too: one split for both
        p = py_pieces(src, f)
        for line in p.skipped:  # a notebook saved as .py (Colab's "Download .py") keeps its `!pip` and `%magic` lines
            self._msg("magic", shown, None, None,
                      f"{shown}: skipped IPython line `{line[:80]}` (magics and shell commands do "
                      "not run in the grader)")
            self._skipped_binds(line)
        if p.error is not None and not p.skipped:
            e = p.error
            lost = []
            for line0, chunk in p.lost:
                first = chunk.lstrip("\n").split("\n", 1)[0].strip()
                last = line0 + chunk.rstrip("\n").count("\n")
                lost.append(f"lines {line0}-{last} (`{first[:60]}`)")
            self._msg("syntax_error", shown, None, e.lineno,
                      f"SyntaxError in {shown}" + (f", line {e.lineno}" if e.lineno else "") + f": {e.msg}"
                      + (f"\n    {e.text.strip()}" if e.text else "")
                      + "\n  The grader loaded the parts of the file that parse; it left out "
                      + (", ".join(lost) if lost else "the broken part") + ".")
        # one top-level statement at a time: a failing statement loses only itself
        for start, chunk in p.pieces:
            self._run_unit(chunk, f, shown, None, start, cache=False, ns=ns)
