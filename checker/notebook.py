"""Self-check from inside a notebook: `import checker; checker.check()` (or `%load_ext checker`, `%hwcheck`).

What it is for: the student's one line in Jupyter, JupyterLab, VS Code or
Colab. `check(question=None)` takes the code the student has run in this
kernel, or the saved notebook when the kernel knows its file and nothing run
since differs from it, and checks it exactly as `hwcheck check` checks a
saved file: the code is written as a notebook (nbformat 4, each cell with
its `execution_count`, so messages name `In [n]`) into a private temp dir,
and a separate Python process (`checker.notebook._main`) grades it
with `checker.runner.Grader` in public mode. So the student's code runs in
a worker as always, never in the student's kernel, and the kernel gets no
pytest, no hypothesis and no grading state; the assignment is inferred as
`check` infers it. The result is a `NotebookCheck`: HTML in front ends that
show it (`checker.notebook_html`), the text `hwcheck check` prints elsewhere.

The code taken from the kernel's history is the raw input of every cell run
so far, in the order run (IPython's `In`), without the statements that use
`checker` itself (`import checker`, `checker.check()`, and a later bare
display of a name they bound) and without `%hwcheck`/`%load_ext checker`;
other magics are left for the loader, which skips them as it does in a file.
Inside a hwcheck worker (a saved notebook that calls `checker.check()`
graded by `hwcheck check`) `check()` does nothing and returns None.

What it is not: a grader of its own (`checker.runner` is) or a CLI.
"""

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

from checker.errors import HwcheckError

__all__ = ["check", "NotebookCheck", "load_ipython_extension", "history_notebook", "without_checker",
           "saved_notebook_path", "select_question"]

_OUR_MAGIC = re.compile(r"^\s*%+(hwcheck\b|load_ext\s+checker\b|reload_ext\s+checker\b)")
_MAGIC = re.compile(r"^\s*[%!]")
_WORKER_MODULES = ("checker.worker.serve", "checker.worker.zygote")


def _uses_checker(node, bound):
    """Whether a top-level statement imports or calls checker (or only shows a name such a statement bound)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in sub.names] if isinstance(sub, ast.Import) else [sub.module or ""]
            if any(n == "checker" or n.startswith("checker.") for n in names):
                return True
        if isinstance(sub, ast.Name) and sub.id == "checker":
            return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Name) and node.value.id in bound:
        return True
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call) and \
            isinstance(node.value.func, ast.Name) and node.value.func.id in bound:  # from checker import check
        return True
    return False


def _bound_names(node):
    out = set()
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        out.update((a.asname or a.name).split(".")[0] for a in node.names)
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
            out.add(sub.id)
    return out


def without_checker(source, bound=None):
    """`source` with the lines of hwcheck's own statements blanked (line numbers kept).

    bound: a set of names that such statements bound in earlier cells (updated in place), so that a
    later cell holding only `r` (the result shown again) is left out too.
    """
    bound = set() if bound is None else bound
    lines = source.split("\n")
    for i, line in enumerate(lines):
        if _OUR_MAGIC.match(line):
            lines[i] = ""
    plain = [("" if _MAGIC.match(line) else line) for line in lines]  # the loader's business, not parsed here
    try:
        tree = ast.parse("\n".join(plain))
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "\n".join(lines)
    for node in tree.body:
        if _uses_checker(node, bound):
            bound.update(_bound_names(node))
            for n in range(node.lineno - 1, node.end_lineno):
                lines[n] = ""
    return "\n".join(lines)


def _history(ip):
    """[(execution count, raw source)] of the cells run in this kernel, oldest first (this cell included)."""
    raw = getattr(getattr(ip, "history_manager", None), "input_hist_raw", None)
    if not raw:
        raw = ip.user_ns.get("In") or ip.user_ns.get("_ih") or [""]
    return [(n, src) for n, src in enumerate(raw) if n and isinstance(src, str)]


def history_notebook(cells):
    """An nbformat 4 notebook (a dict) of [(execution count, source)], hwcheck's own lines left out."""
    bound, out = set(), []
    for count, src in cells:
        code = without_checker(src, bound)
        if not code.strip():
            continue
        out.append({"cell_type": "code", "execution_count": count, "metadata": {}, "outputs": [],
                    "source": code})
    return {"nbformat": 4, "nbformat_minor": 5, "metadata": {"language_info": {"name": "python"}},
            "cells": out}


def saved_notebook_path(ip):
    """The notebook file this kernel runs, where the front end says (Jupyter Server's JPY_SESSION_NAME,
    VS Code's __vsc_ipynb_file__), or None (Colab, a console, an old server)."""
    for path in (ip.user_ns.get("__vsc_ipynb_file__"), os.environ.get("JPY_SESSION_NAME")):
        if not (isinstance(path, str) and path.endswith(".ipynb")):
            continue
        # Jupyter Server gives the path from its root (older) or in full; the kernel runs in the notebook's folder
        for candidate in (path, os.path.join(os.getcwd(), os.path.basename(path))):
            if os.path.isfile(candidate):
                return os.path.abspath(candidate)
    return None


def _code_cells(nb):
    cells = nb.get("cells") if isinstance(nb, dict) else None
    out = []
    for cell in cells if isinstance(cells, list) else []:
        if isinstance(cell, dict) and cell.get("cell_type") == "code":
            src = cell.get("source", "")
            src = "".join(src) if isinstance(src, list) else str(src)
            out.append((cell.get("execution_count"), src))
    return out


def _saved_matches(path, cells):
    """Whether the saved notebook holds what was run: each of its run cells is the input run with that
    count, and the last cell run (hwcheck's own left out) is saved."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            saved = _code_cells(json.load(f))
    except (OSError, ValueError):
        return False
    ran = {n: src for n, src in cells}
    for count, src in saved:
        if type(count) is int and ran.get(count, "").rstrip() != src.rstrip():
            return False
    bound, last = set(), None
    for count, src in cells:
        if without_checker(src, bound).strip():
            last = count
    return last is None or last in {c for c, _ in saved}


def select_question(view, question):
    """The view reduced to one question (its points become the total), or HwcheckError naming the ids."""
    ids = [q.get("id") for q in view.get("questions") or []]
    wanted = [q for q in view.get("questions") or [] if str(q.get("id")).lower() == str(question).lower()]
    if not wanted:
        raise HwcheckError(f"{view.get('assignment')} has no question {question!r}; its questions are "
                           + ", ".join(map(str, ids)))
    view = dict(view, questions=wanted)
    view["score"], view["max_score"] = wanted[0].get("score"), wanted[0].get("max_score")
    return view


class NotebookCheck:
    """What `check()` returns: shown as HTML in a notebook, as `hwcheck check`'s text elsewhere."""

    def __init__(self, view, source):
        from checker.report import format_scorecard
        self.view, self.source = view, source
        self.score, self.max_score = view.get("score"), view.get("max_score")
        self.text = f"{source}\n{format_scorecard(view, color=False)}"

    def _repr_html_(self):
        from checker.notebook_html import scorecard_html
        return scorecard_html(self.view, source=self.source)

    def __repr__(self):
        return self.text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)


def _grade_in_subprocess(path, assignment, timeout):
    """The student view of `path` graded by `_main` in a Python process apart from the kernel."""
    cmd = [sys.executable, "-c", "import sys; from checker.notebook import _main; _main(sys.argv[1:])",
           path, assignment or "", str(timeout or "")]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=os.path.dirname(path), check=False)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise HwcheckError(f"the check did not finish (exit {p.returncode}): {(p.stderr or p.stdout)[-1500:]}") \
            from None
    if "error" in out:
        raise HwcheckError(out["error"])
    view = out["view"]
    view.setdefault("submission", {})["path"] = os.path.basename(path)  # the temp dir is gone when shown
    return view


def check(question=None, *, assignment=None, timeout=None):
    """Check this notebook's code on the public tests; `question` ("Q1") keeps one question.

    Returns a NotebookCheck (HTML in the notebook, text elsewhere); None inside a hwcheck worker.
    """
    if any(m in sys.modules for m in _WORKER_MODULES):
        return None  # a saved notebook that calls check() is being graded: nothing to do there
    try:
        from IPython import get_ipython
        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is None:
        raise HwcheckError("checker.check() checks the code run in a notebook kernel (Jupyter, VS Code, Colab); "
                           "from a terminal run: hwcheck check YOUR_FILE")
    cells = _history(ip)
    saved = saved_notebook_path(ip)
    tmp = tempfile.mkdtemp(prefix="hwcheck-nb-")
    try:
        os.chmod(tmp, 0o700)
        if saved and _saved_matches(saved, cells):
            name = os.path.basename(saved)
            shutil.copyfile(saved, os.path.join(tmp, name))
            source = f"checked: the saved notebook {saved}"
        else:
            nb = history_notebook(cells)
            if not nb["cells"]:
                raise HwcheckError("nothing to check yet: run the cells of your homework first, then check")
            name = os.path.basename(saved) if saved else "notebook.ipynb"
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                json.dump(nb, f)
            source = (f"checked: the code run in this kernel ({len(nb['cells'])} cells, In [n] as numbered "
                      f"in the notebook)" + (" (the saved notebook differs: save it before you hand it in)"
                                             if saved else ""))
        view = _grade_in_subprocess(os.path.join(tmp, name), assignment, timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if question is not None:
        view = select_question(view, question)
    return NotebookCheck(view, source)


def _hwcheck_magic(line):
    """%hwcheck [QUESTION] [-a ASSIGNMENT]: check this notebook (all questions, or one)."""
    words, assignment, question = line.split(), None, None
    while words:
        w = words.pop(0)
        if w in ("-a", "--assignment") and words:
            assignment = words.pop(0)
        else:
            question = w
    try:
        return check(question, assignment=assignment)
    except HwcheckError as e:
        print(f"hwcheck: {e}", file=sys.stderr)
        return None


def load_ipython_extension(ip):
    """`%load_ext checker` registers the `%hwcheck` line magic."""
    ip.register_magic_function(_hwcheck_magic, magic_kind="line", magic_name="hwcheck")


def _main(argv):
    """argv = PATH [ASSIGNMENT] [TIMEOUT]: grade PATH and print {"view": ...} or {"error": ...} as the last line."""
    path, assignment = argv[0], (argv[1] if len(argv) > 1 and argv[1] else None)
    timeout = float(argv[2]) if len(argv) > 2 and argv[2] else None
    try:
        from checker.runner import Grader
        from checker.scorecard import student_view
        with Grader(mode="public", timeout=timeout) as grader:
            out = {"view": student_view(grader.grade(path, assignment))}
    except HwcheckError as e:
        out = {"error": " ".join(str(e).split())}
    sys.stdout.write("\n" + json.dumps(out) + "\n")
