"""Find submissions whose code is identical once comments, whitespace and the starter are set aside.

What it is for: grades.csv's note "identical code to ..." (read from OUTDIR/.students.json,
written by `checker.records.lms.prepare`). `normalised_code(path)` reads a submission (a file or
a folder; its .py files and notebooks' code cells, in load order) without the shipped
starter: a starter notebook beside the student's file is left out (`checker.running.starter`), as
are notebook cells that are a starter's cells unchanged. Each piece is reduced to Python's
tokens without comments, blank lines and spacing (text that does not tokenize: its words);
`identical_groups(entries)` gives each submission the others with the same code. Code of
fewer than `MIN_TOKENS` tokens (an empty or starter-only submission) is never flagged. Files are
read as grading reads them (`checker.running.safe_read`): a link to a classmate's file is not their code.
A notebook is read by the loader's rules (`notebook_cells`): one that is valid JSON but no notebook
(`{"cells": 1.5}`, `"worksheets": 5`, a source that is a number) has no code here, as grading says.

What it is not: a similarity measure (the class report's `copydetect` ranking is): renamed
variables or reordered functions are not "identical".
"""

from __future__ import annotations

import hashlib
import io
import os
import tokenize

from checker.worker.sources import NotebookError, code_cells, notebook_json

__all__ = ["normalised_code", "identical_groups", "notebook_cells", "MIN_TOKENS"]

MIN_TOKENS = 20
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER}


def _read(path, root):
    """A unit's text by grading's rules (checker.running.safe_read), or None."""
    from checker.running.safe_read import Refused, read_bytes
    try:
        return read_bytes(path, root).decode("utf-8-sig", errors="replace")
    except Refused:
        return None


def notebook_cells(text):
    """The sources of a notebook's code cells, in order, or None when the text is no notebook.

    The rules are the loader's (`checker.worker.sources.code_cells`; this reads text that
    `checker.running.safe_read` gave and never raises): nbformat 4 (`cells`, `source`) and 3
    (`worksheets`, `input`), with or without a byte order mark. Valid JSON that is not a notebook (not an
    object, or with no list of cells: `{"cells": 1.5}`, `{"worksheets": 5}`) is None; a cell that is not an
    object is not a code cell; a source that is not text (a number, a list with non-strings) keeps its
    strings only. Every trusted-side reader of a submission's notebook reads it through this (identical-code
    detection here, the class report's `checker.records.classreport.sources`), and this parses it as the
    loader does (`checker.worker.sources.notebook_json`, within its bounds): a notebook too large or holding
    too many JSON values to be parsed cheaply is None too, as the loader reads no code in it.
    """
    if text is None:
        return None
    try:
        nb = notebook_json(text)
    except NotebookError:
        return None
    cells = code_cells(nb)
    return None if cells is None else [src for _, src, _ in cells]


def _cells(path, root):
    """A notebook unit's code cells, [] when it is no notebook (it is graded as such; here it has no code)."""
    return notebook_cells(_read(path, root)) or []


def _tokens(text):
    try:
        toks = [t.string if t.type not in (tokenize.INDENT, tokenize.DEDENT) else ("\x01" if t.type == tokenize.INDENT
                                                                                else "\x02")
                for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in _SKIP]
    except (tokenize.TokenError, SyntaxError, ValueError):
        toks = text.split()
    return toks


def _units(path, root):
    """The units grading reads (checker.running.safe_read's rules: no link out, no FIFO or device), the starter left out."""
    from checker.running.safe_read import readable
    from checker.worker.sources import list_units
    from checker.running.starter import starter_units
    units = [u for u in list_units(path) if readable(u, root)]
    starters = set(starter_units(units)) if len(units) > 1 else set()
    return [u for u in units if u not in starters]


def normalised_code(path):
    """The submission's tokens (comments, blank lines, spacing and the starter's code left out), as one string."""
    from checker.running.starter import starter_cells
    shipped = starter_cells()
    root = os.fspath(path) if os.path.isdir(path) else None
    pieces = []
    for unit in _units(path, root):
        if unit.endswith(".ipynb"):
            for cell in _cells(unit, root):
                if "\n".join(line.rstrip() for line in cell.strip().splitlines()) not in shipped:
                    pieces.extend(_tokens(cell))
        else:
            text = _read(unit, root)
            if text is not None:
                pieces.extend(_tokens(text))
    return pieces


def identical_groups(entries, assignment=None):
    """{id: [the other ids with the same code]} over entries [(id, path)], for code of MIN_TOKENS tokens or more."""
    by_hash = {}
    for sid, path in entries:
        try:
            toks = normalised_code(path)
        except (OSError, RecursionError):
            continue
        if len(toks) < MIN_TOKENS:
            continue
        digest = hashlib.sha256("\0".join(toks).encode("utf-8", "surrogatepass")).hexdigest()
        by_hash.setdefault(digest, []).append(sid)
    out = {}
    for sids in by_hash.values():
        if len(sids) > 1:
            for sid in sids:
                out[sid] = sorted(s for s in sids if s != sid)
    return out
