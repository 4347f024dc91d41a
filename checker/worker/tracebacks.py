"""Where a student's code failed or was stopped, in the student's words: file, cell (as shown) and line.

What it is for: the loader's messages and the worker's answers name the student's own places:
`loc(shown, cell, line)` ("hw.ipynb, In [7], line 3"; `CELL_LABELS` holds how each notebook shows its code
cells, an execution count or "the 4th code cell"), `student_where` and `format_student_tb` (the traceback
frames that are the student's code, nothing of the grader's), `stuck_in` (where a unit stopped by its time
limit was running), `exc_text` and `hint` (an exception's text, bounded, and a sentence for the ones that
mean "this does not work in the grader"). It runs in the worker, beside student code.

What it is not: running anything or deciding what a failure costs (`checker.worker.loader` runs the units;
the trusted side judges), nor reading the files (`checker.worker.sources`).
"""

import linecache
import traceback

__all__ = ["CELL_LABELS", "nth", "cell_label", "loc", "hint", "exc_text", "where_line", "student_frames", "stuck_in",
           "code_line", "student_where", "format_student_tb"]


# (notebook, code cell number) -> how the student's notebook shows that cell: "In [7]" (its execution count)
# or "the 4th code cell" (never run). One worker loads one submission, so one table serves the process.
CELL_LABELS = {}


def nth(n):
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def cell_label(shown, cell):
    return CELL_LABELS.get((shown, cell)) or f"cell {cell}"


def loc(shown, cell, line):
    s = shown + (f", {cell_label(shown, cell)}" if cell is not None else "")
    return s + (f", line {line}" if line else "")


def hint(e):
    """A short explanation of exceptions that mean "this does not work in the grader"."""
    if isinstance(e, (FileNotFoundError, PermissionError)):
        return ("\n  (the grader runs your code in a private folder that holds only your submission: "
                "data files and downloads your notebook used are not there)")
    if isinstance(e, MemoryError):
        return "\n  (it ran out of the memory the grader allows)"
    if isinstance(e, ModuleNotFoundError):
        name = getattr(e, "name", None)
        what = f"`{name.split('.')[0]}` is" if isinstance(name, str) else "that module is"
        return (f"\n  ({what} neither a file of your submission nor a package installed where the grader runs. A "
                "file of yours: hand it in with the rest (in the same folder). A package: the grader cannot "
                "install packages (`!pip install` lines are skipped), so the graded functions and classes must "
                "not need it: import it only in the cells that use it, such as plots or data loading)")
    if isinstance(e, EOFError):
        return "\n  (input() waits for someone to type: nobody does in the grader, so it gets end-of-file)"
    return ""


def exc_text(e):
    try:
        text = str(e)
    except BaseException:  # noqa: BLE001
        text = "<unprintable>"
    name = type(e).__name__
    return f"{name}: {text[:1000]}" if text else name


def where_line(e, files):
    w = student_where(e, files)
    return w["line"] if w else None


def student_frames(exc, files):
    """The traceback frames that are the student's code, outermost first: [{file, cell, line, code}]."""
    out = []
    tb = exc.__traceback__
    while tb is not None:
        fn = tb.tb_frame.f_code.co_filename
        if fn in files:
            shown, cell = files[fn]
            line = tb.tb_lineno
            code = (linecache.getline(fn, line) or "").strip()
            out.append({"file": shown, "cell": cell, "line": line, "code": code,
                        **({"label": cell_label(shown, cell)} if cell is not None else {})})
        tb = tb.tb_next
    return out


def stuck_in(exc, files):
    """Where a unit stopped by its time limit was running, when that is inside a function of the student's
    (the statement alone, `main()` or `model = train(...)`, does not say which loop never ends):
    ", inside `f` (file, line N)" and that line, or ""."""
    inner, tb = None, exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename in files:
            inner = tb
        tb = tb.tb_next
    if inner is None or inner.tb_frame.f_code.co_name in ("<module>", "<lambda>") \
            or inner.tb_frame.f_code.co_name.startswith("<"):
        return ""
    fn = inner.tb_frame.f_code.co_filename
    shown, cell = files[fn]
    code = (linecache.getline(fn, inner.tb_lineno) or "").strip()
    return (f", inside `{inner.tb_frame.f_code.co_name}` ({loc(shown, cell, inner.tb_lineno)})"
            + (f"\n    {code[:200]}" if code else ""))


def code_line(frame):
    return f"\n    {frame['code'][:200]}" if frame and frame.get("code") else ""


def student_where(exc, files):
    """The innermost traceback frame that is the student's code: {file, cell, line, code}."""
    frames = student_frames(exc, files)
    return frames[-1] if frames else None


def format_student_tb(exc, files, limit=8):
    """A traceback with only the student's frames, innermost last."""
    out = []
    for fs in traceback.extract_tb(exc.__traceback__):
        if fs.filename in files:
            shown, cell = files[fs.filename]
            out.append(f"  {loc(shown, cell, fs.lineno)}, in {fs.name}\n    {(fs.line or '').strip()}")
    out = out[-limit:]
    return "\n".join(out + [f"{exc_text(exc)}"])
