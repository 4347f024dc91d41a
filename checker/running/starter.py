"""Recognise the shipped starter notebook (assignments/<id>/starter.ipynb) by its content, whatever its name.

What it is for: a GitHub Classroom repository holds the starter notebook the
course shipped beside the student's own file. Graded with it, the starter's
`raise NotImplementedError` stubs replaced the student's code (0/100).
`is_starter(path)` is True for a notebook whose code cells, normalised
(each stripped, empty ones dropped; outputs, execution counts and markdown
ignored), are those of a shipped starter; `starter_units(paths)` picks them
among the files of a folder submission.

What it is not: a judge of partly edited starters (a notebook the student
wrote in is the student's) or of `.py` files.
"""

import functools
import os

__all__ = ["is_starter", "starter_units", "starter_cells", "LEFT_OUT"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # checker/running/..
LEFT_OUT = "it is the shipped starter notebook, unchanged (not graded: your own file beside it is)"


def _code_cells(path):
    from checker.worker.sources import NotebookError, notebook_json  # bounded before it is parsed
    try:
        with open(path, "rb") as f:
            nb = notebook_json(f.read(5 << 20))  # a student's file: at most what is_starter looks at
    except (OSError, NotebookError):
        return None
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        return None
    out = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source")
        src = "".join(x for x in src if isinstance(x, str)) if isinstance(src, list) else str(src or "")
        src = "\n".join(line.rstrip() for line in src.strip().splitlines())
        if src:
            out.append(src)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def _starters():
    base = os.path.join(ROOT, "assignments")
    found = set()
    try:
        names = sorted(os.listdir(base))
    except OSError:
        return frozenset()
    for name in names:
        cells = _code_cells(os.path.join(base, name, "starter.ipynb"))
        if cells:
            found.add(cells)
    return frozenset(found)


def is_starter(path):
    """True when `path` is a notebook whose normalised code cells are a shipped starter's."""
    if not str(path).endswith(".ipynb") or os.path.getsize(path) > 5 << 20:
        return False
    cells = _code_cells(path)
    return bool(cells) and cells in _starters()


def starter_units(paths):
    """The starters among `paths` (the .py/.ipynb files of one folder submission)."""
    return [p for p in paths if is_starter(p)]


def starter_cells():
    """Every shipped starter's normalised code cells (a set of strings), for code that is no student's own."""
    return {cell for cells in _starters() for cell in cells}
