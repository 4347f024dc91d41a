"""Where a folder submission's own imports look: the folders to put on `sys.path` before loading it.

What it is for: a folder submission whose files import each other (`from q1 import ...`) works
when run from the folder that holds those files. An archive or a Gradescope folder upload often
puts that folder one level (or more) down: `submission/hw/q1.py`. `import_roots(path)` returns
the submission's folder first, then every folder inside it that holds a module (a `NAME.py` or a
package `NAME/__init__.py`) which some file of the submission imports by that top-level name and
which no earlier root provides: the folders the student's own imports need, wherever the archive
put them. A single wrapping folder is one case of this; so are several.

What it is not: a way to reach anything outside the submission (only folders under `path` are
returned, links are not followed), nor a judge of what the files do: a name that is imported but
defined nowhere stays the student's import error. Pure: reads files, runs nothing.
"""

import ast
import os
import re

from checker.walk import walk
from checker.worker.sources import MAGIC_RE, NotebookError, SUFFIXES, _cells, read_source

__all__ = ["import_roots", "imported_names"]

_MAX_FILES = 2000  # a folder with more is not walked further for imports (a submission is a handful)
_IMPORT_LINE = re.compile(r"^\s*(?:import|from)\s+([A-Za-z_]\w*)")
_SKIP_DIRS = ("__MACOSX", "ipynb_checkpoints", ".ipynb_checkpoints")


def import_roots(path):
    """The folders whose modules a submission at `path` imports, its own folder first (see module doc)."""
    if not os.path.isdir(path):
        return [os.path.dirname(path)]
    files, dirs_with = _walk(path)
    wanted = set()
    for f in files:
        wanted |= _imported_names(f)
    roots = [path]
    provided = set(_modules_in(path))
    for folder in sorted(dirs_with, key=lambda d: (d.count(os.sep), d)):
        if folder == path:
            continue
        here = set(_modules_in(folder))
        needed = (here & wanted) - provided
        if needed:
            roots.append(folder)
            provided |= here
    return roots


def imported_names(path):
    """The top-level module names that the files of the folder submission `path` import (absolute imports)."""
    names = set()
    for f in _walk(path)[0]:
        names |= _imported_names(f)
    return names


def _walk(path):
    """The .py/.ipynb files under `path` (links not followed) and the folders holding them."""
    files, folders = [], set()
    for root, dirs, names in walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and d not in _SKIP_DIRS
                         and not os.path.islink(os.path.join(root, d)))
        for n in sorted(names):
            p = os.path.join(root, n)
            if n.endswith(SUFFIXES) and not n.startswith(".") and not os.path.islink(p):
                files.append(p)
                folders.add(root)
            elif n == "__init__.py":
                folders.add(os.path.dirname(root))
        if len(files) >= _MAX_FILES:
            break
    # a package's parent holds the package: `pkg/__init__.py` makes `pkg` importable from its parent
    for root in list(folders):
        if os.path.isfile(os.path.join(root, "__init__.py")):
            folders.add(os.path.dirname(root))
    return files, folders


def _modules_in(folder):
    """Top-level module names importable from `folder`: NAME.py files and NAME/__init__.py packages."""
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    out = []
    for n in entries:
        p = os.path.join(folder, n)
        if n.endswith(".py") and n[:-3].isidentifier() and os.path.isfile(p) and not os.path.islink(p):
            out.append(n[:-3])
        elif n.isidentifier() and os.path.isfile(os.path.join(p, "__init__.py")) and not os.path.islink(p):
            out.append(n)
    return out


def _imported_names(f):
    """The top-level module names a file imports (absolute imports only), as far as it parses."""
    try:
        if f.endswith(".ipynb"):
            sources = [src for _, src, _ in _cells(f)]
        else:
            sources = [read_source(f)]
    except (OSError, UnicodeError, NotebookError, ValueError):
        return set()
    names = set()
    for src in sources:
        text = "\n".join("" if MAGIC_RE.match(line) else line for line in src.splitlines())
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            # the loader runs a file statement by statement, so the imports before (and after) a syntax
            # error still run: read the import lines one by one
            names |= {m.group(1) for m in map(_IMPORT_LINE.match, text.splitlines()) if m}
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names.update(a.name.split(".")[0] for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names
