"""Find submissions whose code is identical once comments, whitespace and the starter are set aside.

What it is for: grades.csv's note "identical code to ..." (read from OUTDIR/.students.json,
written by `checker.records.lms.prepare`). `normalised_code(path)` reads a submission (a file or
a folder; its .py files and notebooks' code cells, in load order) without the shipped
starter: a starter notebook beside the student's file is left out (`checker.running.starter`), as
are notebook cells that are a starter's cells unchanged. Each piece is reduced to Python's
tokens without comments, blank lines and spacing (text that does not tokenize: its words);
`identical_groups(entries)` gives each submission the others with the same code. Code of
fewer than `MIN_TOKENS` tokens (an empty or starter-only submission) is never flagged. The tokens are
hashed as they are read (`code_digest`: memory does not grow with them), and a submission is read only up
to MAX_CODE_BYTES of code and MAX_READ_BYTES of files (as the by-hand scan parses at most
`checker.running.scan_read.MAX_SCAN_BYTES`): one with more is compared with no one, and costs the trusted
side no more than that. Files are
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
import re
import tokenize

from checker.worker.sources import NotebookError, code_cells, notebook_json

__all__ = ["normalised_code", "code_digest", "identical_groups", "notebook_cells", "MIN_TOKENS", "MAX_CODE_BYTES",
           "MAX_READ_BYTES", "TooMuchCode"]

MIN_TOKENS = 20
# of a submission's code tokenised (its .py files' bytes, its notebooks' code cells' characters), as the by-hand
# scan parses at most checker.running.scan_read.MAX_SCAN_BYTES: a homework is some 10-50 kB of code, and
# tokenising costs the trusted side about 0.4 s a megabyte
MAX_CODE_BYTES = 2_000_000
# of a submission's files read (a notebook's outputs and images count here, not above)
MAX_READ_BYTES = 64 << 20
_WORD = re.compile(r"\S+")
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER}


def _read(path, root, limit=None):
    """A unit's text by grading's rules (checker.running.safe_read), or None."""
    from checker.running.safe_read import Refused, read_bytes
    try:
        return read_bytes(path, root, limit=limit).decode("utf-8-sig", errors="replace")
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


def _cells(text):
    """A notebook unit's code cells, [] when it is no notebook (it is graded as such; here it has no code)."""
    return notebook_cells(text) or []


class TooMuchCode(Exception):
    """A submission holds more than this module reads (MAX_CODE_BYTES of code, MAX_READ_BYTES of files)."""


def _token_strings(text):
    """Python's tokens of `text` as strings, one at a time (INDENT and DEDENT as \x01 and \x02)."""
    for t in tokenize.generate_tokens(io.StringIO(text).readline):
        if t.type in _SKIP:
            continue
        yield "\x01" if t.type == tokenize.INDENT else "\x02" if t.type == tokenize.DEDENT else t.string


class _Tokens:
    """Where a submission's tokens go, one piece (a file, a cell) at a time: `add` decides what a piece is (its
    tokens, else its words when it does not tokenize), `_keep` what is done with each token."""

    def __init__(self):
        self.count = 0

    def add(self, text):
        mark = self._mark()
        try:
            for tok in _token_strings(text):
                self._keep(tok)
        except (tokenize.TokenError, SyntaxError, ValueError):
            self._back_to(mark)
            for m in _WORD.finditer(text):  # str.split()'s words, one at a time
                self._keep(m.group())


class _Digest(_Tokens):
    """sha256 of the tokens joined by NUL, computed as they come: memory does not grow with the tokens."""

    def __init__(self):
        super().__init__()
        self.sha = hashlib.sha256()

    def _keep(self, tok):
        if self.count:
            self.sha.update(b"\0")
        self.sha.update(tok.encode("utf-8", "surrogatepass"))
        self.count += 1

    def _mark(self):
        return self.sha.copy(), self.count

    def _back_to(self, mark):
        self.sha, self.count = mark[0].copy(), mark[1]


class _List(_Tokens):
    """The tokens themselves (normalised_code: tests, a person looking)."""

    def __init__(self):
        super().__init__()
        self.tokens = []

    def _keep(self, tok):
        self.tokens.append(tok)
        self.count += 1

    def _mark(self):
        return self.count

    def _back_to(self, mark):
        del self.tokens[mark:]
        self.count = mark


def _units(path, root):
    """The units grading reads (checker.running.safe_read's rules: no link out, no FIFO or device), the starter left out."""
    from checker.running.safe_read import readable
    from checker.worker.sources import list_units
    from checker.running.starter import starter_units
    units = [u for u in list_units(path) if readable(u, root)]
    starters = set(starter_units(units)) if len(units) > 1 else set()
    return [u for u in units if u not in starters]


def _size(unit):
    try:
        return os.stat(unit).st_size
    except OSError:
        return 0


def _walk(path, sink):
    """Feed `sink` the submission's code, piece by piece; TooMuchCode past MAX_CODE_BYTES of code (a .py file's
    bytes, a code cell's characters) or MAX_READ_BYTES of files (a notebook's outputs count here)."""
    from checker.running.safe_read import MAX_FILE_BYTES, MAX_NOTEBOOK_BYTES
    from checker.running.starter import starter_cells
    shipped = starter_cells()
    root = os.fspath(path) if os.path.isdir(path) else None
    code_left, read_left = MAX_CODE_BYTES, MAX_READ_BYTES

    def take(n):
        nonlocal code_left
        if n > code_left:
            raise TooMuchCode(path)
        code_left -= n

    for unit in _units(path, root):
        notebook = unit.endswith(".ipynb")
        size, limit = _size(unit), MAX_NOTEBOOK_BYTES if notebook else MAX_FILE_BYTES
        if size > limit:
            continue  # a file larger than safe_read reads has no code here (read_bytes would refuse it)
        if size > (read_left if notebook else min(read_left, code_left)):
            raise TooMuchCode(path)
        text = _read(unit, root, limit=min(limit, read_left))
        if text is None:
            continue
        read_left -= size
        if notebook:
            for cell in _cells(text):
                if "\n".join(line.rstrip() for line in cell.strip().splitlines()) not in shipped:
                    take(len(cell))
                    sink.add(cell)
        else:
            take(len(text))
            sink.add(text)


def normalised_code(path):
    """The submission's tokens (comments, blank lines, spacing and the starter's code left out), as a list;
    None when it holds more code than this module reads (MAX_CODE_BYTES, MAX_READ_BYTES)."""
    sink = _List()
    try:
        _walk(path, sink)
    except TooMuchCode:
        return None
    return sink.tokens


def code_digest(path):
    """(sha256 hex digest of the tokens joined by NUL, how many tokens), hashed as they are read; None when the
    submission holds more code than this module reads."""
    sink = _Digest()
    try:
        _walk(path, sink)
    except TooMuchCode:
        return None
    return sink.sha.hexdigest(), sink.count


def identical_groups(entries, assignment=None):
    """{id: [the other ids with the same code]} over entries [(id, path)], for code of MIN_TOKENS tokens or more;
    a submission with more code than this module reads (MAX_CODE_BYTES) is compared with no one."""
    by_hash = {}
    for sid, path in entries:
        try:
            found = code_digest(path)
        except (OSError, RecursionError):
            continue
        if found is None or found[1] < MIN_TOKENS:
            continue
        by_hash.setdefault(found[0], []).append(sid)
    out = {}
    for sids in by_hash.values():
        if len(sids) > 1:
            for sid in sids:
                out[sid] = sorted(s for s in sids if s != sid)
    return out
