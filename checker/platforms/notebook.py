"""Self-check from inside a notebook: `import checker; checker.check()` (or `%load_ext checker`, `%hwcheck`).

What it is for: the student's one line in Jupyter, JupyterLab, VS Code or
Colab. `check(question=None)` takes the code the student has run in this
kernel, or the saved notebook when the kernel knows its file and nothing run
since differs from it, and checks it exactly as `hwcheck check` checks a
saved file: the code is written as a notebook (nbformat 4, each cell with
its `execution_count`, so messages name `In [n]`) into a private temp dir,
and a separate Python process (`checker.platforms.notebook._serve`, started by the
kernel's first check and kept warm for the next ones) grades it with
`checker.running.runner.Grader` in public mode. So the student's code runs in
a worker as always, never in the student's kernel, and the kernel gets no
pytest, no hypothesis and no grading state; the assignment is inferred as
`check` infers it. The result is a `NotebookCheck`: HTML in front ends that
show it (`checker.platforms.notebook_html`), the text `hwcheck check` prints elsewhere.

The code taken from the kernel's history is the raw input of every cell run
so far, in the order run (IPython's `In`), without the statements that use
`checker` itself (`import checker`, `checker.check()`, and any later
statement that reads a global name they bound: `print(r.score)` after
`r = checker.check()`, the student's check session, not a function's own `r`)
and without `%hwcheck`/`%load_ext checker`;
other magics are left for the loader, which skips them as it does in a file.
The written answers are in markdown cells, which no history holds: they are
taken from the notebook the front end holds (Colab answers `get_ipynb`), else
the saved file; where neither exists the check says it could not read them.
Inside a hwcheck worker (a saved notebook that calls `checker.check()`
graded by `hwcheck check`) `check()` does nothing and returns None.

What it is not: a grader of its own (`checker.running.runner` is) or a CLI.
"""

import ast
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import symtable
import sys
import tempfile

from checker.errors import HwcheckError

__all__ = ["check", "NotebookCheck", "NotebookProblem", "live_notebook", "load_ipython_extension", "history_notebook", "without_checker",
           "saved_notebook_path", "select_question"]

_OUR_MAGIC = re.compile(r"^\s*%+(hwcheck\b|load_ext\s+checker\b|reload_ext\s+checker\b)")
_MAGIC = re.compile(r"^\s*[%!]")


def _global_names(node):
    """(names the top-level statement `node` reads from the notebook's globals, names it binds there, every
    name at its own top level), or None where Python's own scoping (symtable) cannot be had for it. A
    function's parameters and locals, a comprehension's variables and a class body's own names are not the
    notebook's: `def softmax(x): res = np.exp(x); return res / res.sum()` neither reads nor binds a global
    `res`; `def show(): print(res.total)` reads it; `global res` inside a function, or `(res := ...)` in a
    top-level comprehension, binds it."""
    try:
        top = symtable.symtable(ast.unparse(node), "<cell>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    reads = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    binds = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported()}
    inner = list(top.get_children())
    while inner:
        table = inner.pop()
        inner.extend(table.get_children())
        for s in table.get_symbols():
            if s.is_global() and s.is_referenced():
                reads.add(s.get_name())
            if s.is_declared_global() and s.is_assigned():
                binds.add(s.get_name())
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        binds.update((a.asname or a.name).split(".")[0] for a in node.names)
    return reads, binds, {s.get_name() for s in top.get_symbols()}


def _uses_checker(node, bound, scopes=None):
    """Whether a top-level statement imports or calls checker (or only shows a name such a statement bound).

    scopes: `_global_names(node)`; None where it could not be had (then any use of the names counts)."""
    for sub in ast.walk(node):
        if isinstance(sub, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in sub.names] if isinstance(sub, ast.Import) else [sub.module or ""]
            if any(n == "checker" or n.startswith("checker.") for n in names):
                return True
    if scopes is None:
        if any(isinstance(sub, ast.Name) and sub.id == "checker" for sub in ast.walk(node)):
            return True
        # a statement that reads what hwcheck's statements bound (`r = checker.check()`, then `print(r.score)`,
        # `r`, `check('Q1')` after `from checker import check`) is the student's check session, not the homework
        return any(isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load) and sub.id in bound
                   for sub in ast.walk(node))
    reads, _binds, top_level = scopes
    # the same, read as Python reads names: a function's own `res` (a parameter, a local, a comprehension's
    # variable) is not the `res = checker.check()` of the notebook, and the function is the homework's
    return "checker" in top_level or "checker" in reads or bool(reads & bound)


def _bound_names(node, scopes=None):
    """The names a top-level statement binds in the notebook's globals (not its functions' own locals)."""
    if scopes is not None:
        return set(scopes[1])
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
    cuts = []  # (statement, what stands in its place), decided in the order the statements ran
    for node in tree.body:
        if isinstance(node, ast.Import) and any(_is_checker(a.name) for a in node.names) \
                and not all(_is_checker(a.name) for a in node.names):
            # `import numpy as np, checker`: only checker's names are the check session's, the rest the homework's
            bound.update((a.asname or a.name).split(".")[0] for a in node.names if _is_checker(a.name))
            cuts.append((node, ast.unparse(ast.Import(names=[a for a in node.names if not _is_checker(a.name)]))))
        elif _uses_checker(node, bound, scopes := _global_names(node)):
            bound.update(_bound_names(node, scopes))
            cuts.append((node, ""))
        else:  # the student's own statement binds the name anew: later reads of it are the homework's
            bound.difference_update(_bound_names(node, scopes))
    for node, text in reversed(cuts):  # from the end: a statement cut out of its line leaves earlier columns as they were
        _replace(lines, node, text)
    # only the lines hwcheck's statements stood on: a `pass` of the student's own (`class E(Exception):` then
    # `    pass`) is the homework's, and blanking it left the function or class without a body
    cut_lines = {node.lineno - 1 for node, _text in cuts}
    return "\n".join("" if n in cut_lines and _ONLY_PASS.fullmatch(line) else line for n, line in enumerate(lines))


_ONLY_PASS = re.compile(r"\s*pass(\s*;\s*pass)*\s*;?\s*")  # what is left of a line of hwcheck's statements only


def _is_checker(name):
    return name == "checker" or name.startswith("checker.")


def _replace(lines, node, text):
    """Put `text` where the top-level statement `node` stands in `lines` (line numbers kept): the lines it fills
    alone are blanked; where it shares a line with the student's own statements (`x = 1; checker.check(); z =
    2`), only its own columns are replaced (by `pass` when `text` is empty), so theirs stay."""
    first, last = node.lineno - 1, node.end_lineno - 1
    before, after = lines[first][:node.col_offset], lines[last][node.end_col_offset:]
    shared = before.strip() or after.strip().lstrip(";").strip()
    if not shared:
        for n in range(first, last + 1):
            lines[n] = ""
        lines[first] = before + text if text else ""
        return
    lines[first] = before + (text or "pass") + after
    for n in range(first + 1, last + 1):
        lines[n] = ""


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
            src = "".join(x for x in src if isinstance(x, str)) if isinstance(src, list) else str(src)
            out.append((cell.get("execution_count"), src))
    return out


def _saved_matches(path, cells):
    """Whether the saved notebook holds what was run, as far as grading goes: each of its cells run in this
    kernel holds the code run with that count, the last cell run is saved, and a saved cell this kernel has
    not run (a count from an earlier run, below the cell that checks) holds nothing but hwcheck's own lines.

    The code compared is what is graded: hwcheck's own lines (`import checker`, `checker.check()`,
    `%hwcheck`, `%load_ext checker`, the student's check session) are left out of both sides, so the check
    cells saved after this one by the last "Run All" (`%hwcheck Q1` as In [12] while this kernel has reached
    In [10]) cannot make the file differ."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            saved = _code_cells(json.load(f))
    except (OSError, ValueError):
        return False
    bound, ran, last = set(), {}, None
    for count, src in cells:
        ran[count] = without_checker(src, bound).rstrip()
        if ran[count].strip():
            last = count
    bound = set()
    for count, src in saved:  # in the file's order, as the grader reads it
        code = without_checker(src, bound).rstrip()
        if type(count) is int and count in ran:
            if ran[count] != code:
                return False
        elif type(count) is int and code.strip():
            return False  # graded code saved as run with a count this kernel has not reached
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
        from checker.render.report import format_scorecard
        self.view, self.source = view, source
        self.score, self.max_score = view.get("score"), view.get("max_score")
        self.text = f"{source}\n{format_scorecard(view, color=False)}"

    def _repr_html_(self):
        from checker.platforms.notebook_html import scorecard_html
        return scorecard_html(self.view, source=self.source)

    def __repr__(self):
        return self.text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)


class NotebookProblem:
    """What `check()` returns when it cannot check: one line saying why and what to do (no traceback)."""

    score = max_score = view = None

    def __init__(self, message):
        self.message = " ".join(str(message).split())
        self.text = f"hwcheck: {self.message}"

    def _repr_html_(self):
        import html
        return f'<div style="color:#b00020">{html.escape(self.text)}</div>'

    def __repr__(self):
        return self.text

    def _repr_pretty_(self, p, cycle):
        p.text(self.text)


class _Server:
    """A Python process apart from the kernel that grades for it and stays warm between checks.

    The first check of a kernel starts it (`checker.platforms.notebook._serve`); it keeps a Grader, and so a zygote
    that has imported torch, alive, so a re-check costs the grading alone. It reads one JSON request a
    line on stdin and answers one JSON line tagged with REPLY; it ends when the kernel closes its stdin
    (the kernel ends, even by SIGKILL) and takes its zygote and workers with it."""

    REPLY = "hwcheck-notebook-reply:"
    proc = None

    @classmethod
    def ask(cls, path, assignment, timeout):
        for attempt in (1, 2):  # a server that died since the last check is started again once
            if cls.proc is None or cls.proc.poll() is not None:
                cls._start()
            try:
                cls.proc.stdin.write(json.dumps({"path": path, "assignment": assignment, "timeout": timeout}) + "\n")
                cls.proc.stdin.flush()
                while True:
                    line = cls.proc.stdout.readline()
                    if not line:
                        raise BrokenPipeError("the grading process ended")
                    if line.startswith(cls.REPLY):
                        return json.loads(line[len(cls.REPLY):])
            except (BrokenPipeError, OSError, ValueError) as e:
                err = e
                cls.close()
        raise HwcheckError(f"the check did not finish: {err}; {cls._stderr_tail()}")

    @classmethod
    def _start(cls):
        cls._dir = tempfile.mkdtemp(prefix="hwcheck-nbserver-")
        os.chmod(cls._dir, 0o700)
        cls._err = open(os.path.join(cls._dir, "stderr"), "w+", encoding="utf-8", errors="replace")
        cls.proc = subprocess.Popen(
            [sys.executable, "-c", "from checker.platforms.notebook import _serve; _serve()"], cwd=cls._dir,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=cls._err, text=True, encoding="utf-8",
            errors="replace", bufsize=1)
        if not getattr(cls, "_atexit", False):  # once per kernel, however often the process is started
            import atexit
            atexit.register(cls.close)
            cls._atexit = True

    @classmethod
    def _stderr_tail(cls):
        try:
            cls._err.seek(0)
            return cls._err.read()[-1500:]
        except (AttributeError, OSError, ValueError):
            return ""

    @classmethod
    def close(cls):
        proc, cls.proc = cls.proc, None
        if proc is not None:
            try:
                proc.stdin.close()
                proc.wait(timeout=10)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
        shutil.rmtree(getattr(cls, "_dir", "") or "/nonexistent", ignore_errors=True)


def _grade_in_subprocess(path, assignment, timeout):
    """The student view of `path` graded by the kernel's grading process (`_Server`), apart from the kernel."""
    out = _Server.ask(path, assignment, timeout)
    if "error" in out:
        raise HwcheckError(out["error"])
    view = out["view"]
    view.setdefault("submission", {})["path"] = os.path.basename(path)  # the temp dir is gone when shown
    return view


def live_notebook(ip):
    """The notebook as the front end holds it now (markdown included), where the kernel can ask for it:
    Colab answers `get_ipynb` with the notebook open in the browser. None elsewhere."""
    colab = sys.modules.get("google.colab._message")
    if colab is None and "google.colab" in sys.modules:
        try:
            from google.colab import _message as colab
        except ImportError:
            colab = None
    if colab is None:
        return None
    try:
        reply = colab.blocking_request("get_ipynb", request="", timeout_sec=10)
    except Exception:  # noqa: BLE001 - a front end that does not answer: the written answer is not read
        return None
    nb = reply.get("ipynb") if isinstance(reply, dict) else None
    return nb if isinstance(nb, dict) and isinstance(nb.get("cells"), list) else None


def _markdown_cells(nb):
    cells = nb.get("cells") if isinstance(nb, dict) else None
    return [dict(cell_type="markdown", metadata={}, source=c.get("source", ""))
            for c in (cells if isinstance(cells, list) else [])
            if isinstance(c, dict) and c.get("cell_type") == "markdown"]


def _saved_notebook(path):
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


WRITTEN_NOT_READ = ("Your written answer could not be read from this kernel: it runs the code, but the front end "
                    "does not give the kernel the notebook's text cells. `hwcheck check` on the saved notebook "
                    "reads it (save the notebook; in Colab: File > Download > .ipynb)")


def check(question=None, *, assignment=None, timeout=None):
    """Check this notebook's code on the public tests; `question` ("Q1") keeps one question.

    Returns a NotebookCheck (HTML in the notebook, text elsewhere), or a NotebookProblem saying in one
    line why it could not check; None inside a hwcheck worker.
    """
    if os.environ.get("HWCHECK_WORKER") == "1" or getattr(sys.modules.get("checker.worker.serve"), "SERVING", False):
        return None  # a saved notebook that calls check() is being graded: nothing to do there
    try:
        from IPython import get_ipython
        ip = get_ipython()
    except ImportError:
        ip = None
    if ip is None:
        raise HwcheckError("checker.check() checks the code run in a notebook kernel (Jupyter, VS Code, Colab); "
                           "from a terminal run: hwcheck check YOUR_FILE")
    try:
        return _check(ip, question, assignment, timeout)
    except HwcheckError as e:
        return NotebookProblem(e)


def _check(ip, question, assignment, timeout):
    cells = _history(ip)
    saved = saved_notebook_path(ip)
    tmp = tempfile.mkdtemp(prefix="hwcheck-nb-")
    text_read = True
    try:
        os.chmod(tmp, 0o700)
        if saved and _saved_matches(saved, cells):
            name = os.path.basename(saved)
            shutil.copyfile(saved, os.path.join(tmp, name))
            source = f"checked: the saved notebook {saved}"
        else:
            nb = history_notebook(cells)
            code_cells = len(nb["cells"])
            if not code_cells:
                raise HwcheckError("nothing to check yet: run the cells of your homework first, then check")
            # the written answers are in markdown cells, which the kernel's history lacks: from the notebook
            # the front end holds (Colab), else the saved file, else they cannot be read here
            live = live_notebook(ip)
            text_from = live if live is not None else (_saved_notebook(saved) if saved else None)
            nb["cells"] += _markdown_cells(text_from)
            text_read = text_from is not None
            name = os.path.basename(saved) if saved else "notebook.ipynb"
            with open(os.path.join(tmp, name), "w", encoding="utf-8") as f:
                json.dump(nb, f)
            source = (f"checked: the code run in this kernel ({code_cells} cell{'' if code_cells == 1 else 's'}, "
                      f"In [n] as numbered in the notebook)"
                      + (" and the text cells of the notebook open in Colab" if live is not None else "")
                      + (f" (the saved notebook {os.path.basename(saved)} holds other code than what ran here: a "
                         "cell run but not saved, cells run out of order, or a cell edited after it ran; grading runs "
                         "the saved file top to bottom, once, and may score otherwise: save, Restart & Run All, and "
                         f"check again, or run `hwcheck check {os.path.basename(saved)}` in a terminal)"
                         if saved else ""))
        view = _grade_in_subprocess(os.path.join(tmp, name), assignment, timeout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    _note_modules_beside(view, os.path.dirname(saved) if saved else os.getcwd(),
                         os.path.basename(saved) if saved else "YOUR_NOTEBOOK.ipynb")
    if not text_read:
        for q in view.get("questions") or []:
            if q.get("manual") and not q.get("answer"):
                q["answer_unreadable"] = WRITTEN_NOT_READ
    if question is not None:
        view = select_question(view, question)
    return NotebookCheck(view, source)


_NO_MODULE = re.compile(r"raised ModuleNotFoundError: No module named '([\w.]+)'")


def _note_modules_beside(view, folder, notebook):
    """A module the notebook imports that is a file next to it (`from attn_utils import softmax`, attn_utils.py
    in the notebook's folder) is missing where the notebook alone is graded: say so, rather than the
    loader's "hand it in with the rest", which the student has done. check() grades the notebook as
    `hwcheck check NOTEBOOK` does; a folder is graded, its .py files included, by `hwcheck check FOLDER`."""
    messages = (view.get("load") or {}).get("messages")
    if not isinstance(messages, list) or not folder:
        return
    for i, msg in enumerate(messages):
        m = _NO_MODULE.search(msg) if isinstance(msg, str) else None
        if not m:
            continue
        top = m.group(1).split(".")[0]
        if os.path.isfile(os.path.join(folder, top + ".py")):
            found = f"`{top}.py`"
        elif os.path.isfile(os.path.join(folder, top, "__init__.py")):
            found = f"the package `{top}/`"
        else:
            continue
        note = (f"\n  ({found} is next to your notebook, in {folder}, but checker.check() checks the notebook "
                f"alone, as `hwcheck check {notebook}` does: hand "
                f"in the folder, and check it with its modules from a terminal: hwcheck check {shlex.quote(folder)})")
        hint = re.compile(r"\n  \(`" + re.escape(top) + r"` is neither a file of your submission.*?data loading\)",
                          re.S)
        messages[i] = hint.sub(lambda _: note, msg, count=1) if hint.search(msg) else msg + note


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


def _serve():
    """The kernel's grading process (_Server): one Grader per time budget, kept warm; a request a line."""
    from checker.running.runner import Grader
    from checker.judging.scorecard import student_view
    graders = {}
    # Jupyter ends a kernel that is slow to stop with SIGTERM to its process group, this process included:
    # end as the end of the input does (its default action would skip the clean-up below)
    signal.signal(signal.SIGTERM, _ended)
    try:
        for line in sys.stdin:
            try:
                req = json.loads(line)
                timeout = float(req["timeout"]) if req.get("timeout") else None
                if timeout not in graders:
                    graders[timeout] = Grader(mode="public", timeout=timeout).__enter__()
                out = {"view": student_view(graders[timeout].grade(req["path"], req.get("assignment") or None))}
            except HwcheckError as e:
                out = {"error": " ".join(str(e).split())}
            except (ValueError, KeyError, TypeError) as e:
                out = {"error": f"a malformed request: {e}"}
            sys.stdout.write("\n" + _Server.REPLY + json.dumps(out) + "\n")
            sys.stdout.flush()
    except KeyboardInterrupt:  # SIGTERM (_ended), or ^C in a terminal
        pass
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        # first its folder, as a SIGKILL may follow a SIGTERM within seconds; then its graders (a zygote cut
        # short by that SIGKILL cleans up after itself)
        _remove_own_folder()
        for grader in graders.values():
            grader.close()


def _remove_own_folder():
    """The folder the kernel's _Server made for this process (a kernel killed by SIGKILL never removes it): this
    process's cwd, only if it is such a folder of the temp dir."""
    here = os.getcwd()
    if (os.path.basename(here).startswith("hwcheck-nbserver-")
            and os.path.dirname(here) == os.path.realpath(tempfile.gettempdir())):
        shutil.rmtree(here, ignore_errors=True)


def _ended(signum, frame):
    """SIGTERM: the folder goes at once, as Jupyter's SIGKILL may follow; then the process ends as the end of its
    input does. KeyboardInterrupt, not SystemExit: pytest turns a SystemExit raised in a grading test into that
    test's failure and goes on grading, while it lets KeyboardInterrupt through (and so does the Grader)."""
    _remove_own_folder()
    raise KeyboardInterrupt
