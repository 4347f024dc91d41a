"""A submission's source as the loader reads it: .py text, notebook cells, IPython lines, top-level chunks.

What it is for: `read_source` (a .py file in the encoding it declares),
`list_units` (the files of a submission), `_cells` (a notebook's code cells
with their execution counts, from nbformat 3 or 4, with a readable error for
what is not a notebook: a zip, a PDF, a notebook that is not JSON),
`notebook_json` (a notebook's JSON parsed within bounds: every reader of a
submission's notebook, the loader's and the trusted side's, parses it through
this, so none of them pays for a file built to be costly to parse),
`_strip_magics` (IPython's `%`/`!` lines, which do not run in the grader)
and `_chunks` (a file cut into top-level statements, each run on its own).
`py_pieces` and `cell_pieces` say which pieces of a file or cell the loader
runs, each as its own unit (statement by statement; a file with a syntax error
as the parts that parse): the loader runs exactly these, and the trusted side
reads exactly these (`checker.running.by_hand`, with the same decoding by
`read_source`), so both agree on what the student wrote.

What it is not: running anything (`checker.worker.loader`).
"""

import ast
import io
import json
import os
import re
import tokenize

from checker.worker.syntax import parse as _parse_unit, statements as _statements
from checker.walk import walk

__all__ = ["read_source", "read_source_bytes", "list_units", "py_pieces", "cell_pieces", "writefile_target", "code_cells", "NotebookError",
           "SUFFIXES", "notebook_json", "MAX_NOTEBOOK_BYTES", "MAX_NOTEBOOK_VALUES"]

MAGIC_RE = re.compile(r"^\s*[%!]")
HELP_RE = re.compile(r"^\s*\??[\w.]+\?\??\s*$")  # `np.mean?`, `??f`: IPython help
ASSIGNED_MAGIC_RE = re.compile(r"^\s*[\w.,\s]+=\s*[%!]")  # `files = !ls`, `t = %timeit -o f()`
TIME_RE = re.compile(r"^(\s*(?:[\w.,\s]+=\s*)?)%time\s+(.*)$")  # `%time f()`, `y = %time f()`: runs f()
RUN_BODY = ("time", "capture", "prun")  # cell magics whose body runs in the notebook's namespace
SUFFIXES = (".py", ".ipynb")
# A notebook parsed (`notebook_json`) is bounded twice. Its bytes: saved outputs (plots as base64 images) make an
# honest notebook tens of MB, so the cap is the copy's own bound for one file (checker.running.submission_files'
# MAX_COPY_FILE): every notebook a worker is given is read, by the loader and on the trusted side alike
# (checker.running.safe_read's cap for a notebook is this; a 60 MB notebook of plots lost its written answer
# to a 32 MiB cap, a Gradescope probe, h39). Its JSON values: parsing costs some 40 to 130 bytes of memory a value, whatever the file's size
# (60 MiB of `{},` cost the trusted side 1.4 GB), and every value but the first follows a `{`, `[` or `,` (a
# key and its value follow one), so a count of those bytes bounds the values from above before anything is
# parsed (a string's own commas count too: the bound only errs towards refusing). A homework notebook holds a
# few thousand (a line of source or of printed output is one); a million is a notebook of a million printed
# lines or plotted points, whose outputs are then what makes it large (the refusal says to clear them).
MAX_NOTEBOOK_BYTES = 64 << 20
MAX_NOTEBOOK_VALUES = 1_000_000


def read_source(path):
    """A .py file's text as Python reads it: the encoding its coding line declares (PEP 263), else UTF-8."""
    with open(path, "rb") as fh:
        return read_source_bytes(fh.read())


def read_source_bytes(raw):
    """Source bytes decoded as Python decodes them (`read_source`): a `# coding: utf-7` line is obeyed."""
    advice = "save the file as UTF-8, or declare its encoding in a first line such as `# -*- coding: cp1252 -*-`"
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        text = raw.decode(encoding)
    except SyntaxError as e:  # undeclared non-UTF-8 bytes in the first two lines, or an unknown codec
        raise UnicodeError(f"{e.msg}; {advice}") from None
    except UnicodeDecodeError as e:
        raise UnicodeError(f"byte {e.start} is not {e.encoding}; {advice}") from None
    return text[1:] if text.startswith("\ufeff") else text


def list_units(path):
    """The files of a submission in load order: .py files first (importable by notebooks), then notebooks."""
    if os.path.isfile(path):
        return [path]
    files = []
    for root, dirs, names in walk(path):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")) and d != "ipynb_checkpoints")
        for n in sorted(names):
            if n.endswith(SUFFIXES) and not n.startswith("."):
                files.append(os.path.join(root, n))
    return sorted(files, key=lambda f: (not f.endswith(".py"), f))


class NotebookError(ValueError):
    """A .ipynb file that cannot be read as a notebook; the text says why and what to do."""


_RESAVE = "open it in Jupyter (or Colab) and save it again, or download it again from where you wrote it"

_MAGIC = [(b"PK\x03\x04", "a zip archive (unzip it first)"), (b"PK\x05\x06", "an empty zip archive"),
          (b"%PDF", "a PDF document"), (b"\x1f\x8b", "a gzip archive (unpack it first)"),
          (b"Rar!", "a RAR archive (unpack it first)"), (b"7z\xbc\xaf", "a 7-Zip archive (unpack it first)")]


def _archive_or_document(path):
    """What a file is when its first bytes say it is an archive or a document, else None."""
    try:
        with open(path, "rb") as f:
            head = f.read(1024)
    except OSError:
        return None
    for magic, kind in _MAGIC:
        if head.startswith(magic):
            return kind
    if head.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")):
        return "a web page (an HTML export)"
    return None


def _cells(nb_path):
    """[(code cell number, source, execution count)] of a notebook's code cells (1 = the first code cell).

    Reads nbformat 4 (`cells`, `source`, `execution_count`) and nbformat 3
    (`worksheets`, `input`, `prompt_number`), with or without a UTF-8 byte
    order mark. A file that is not a notebook, or one larger than a notebook
    is read (`notebook_json`), raises NotebookError with words a student can act on.
    """
    with open(nb_path, "rb") as f:
        if os.fstat(f.fileno()).st_size > MAX_NOTEBOOK_BYTES:  # not even read: the file is what costs
            raise NotebookError(_too_large())
        raw = f.read(MAX_NOTEBOOK_BYTES + 1)
    out = code_cells(notebook_json(raw))
    if out is None:
        raise NotebookError(f"it has no list of cells; {_RESAVE}")
    return out


_CLEAR = "clear its outputs (Jupyter: Kernel > Restart & Clear Output; Colab: Edit > Clear all outputs) and save it again"


def _too_large():
    return f"it is larger than a notebook the grader reads ({MAX_NOTEBOOK_BYTES >> 20} MiB); {_CLEAR}"


def notebook_json(raw):
    """The JSON object of a notebook's bytes (or text), or NotebookError saying why it is none or is not read.

    Bounded before anything is parsed (MAX_NOTEBOOK_BYTES, MAX_NOTEBOOK_VALUES): each count is one pass over
    the bytes in C, far cheaper than the parse it spares. A UTF-8 byte order mark is allowed, as Jupyter does."""
    if len(raw) > MAX_NOTEBOOK_BYTES:
        raise NotebookError(_too_large())
    values = (raw.count(b"{") + raw.count(b"[") + raw.count(b",") if isinstance(raw, (bytes, bytearray))
              else raw.count("{") + raw.count("[") + raw.count(","))
    if values > MAX_NOTEBOOK_VALUES:
        raise NotebookError(f"its JSON holds more values than a notebook the grader reads (about {values:,}; at "
                            f"most {MAX_NOTEBOOK_VALUES:,}); {_CLEAR}")
    if isinstance(raw, (bytes, bytearray)):
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError as e:
            raise NotebookError(f"byte {e.start} is not UTF-8, as a notebook must be; {_RESAVE}") from None
    else:
        text = raw[1:] if raw.startswith("\ufeff") else raw
    if not text.strip():
        raise NotebookError(f"the file is empty; {_RESAVE}")
    try:
        nb = json.loads(text)
    except RecursionError:
        raise NotebookError(f"its JSON is nested too deeply to be a notebook; {_RESAVE}") from None
    except ValueError as e:
        hint = (" (it looks like Python code: name it .py)" if text.lstrip()[:1] not in "{[" else "")
        raise NotebookError(f"it is not valid notebook JSON{hint}: {getattr(e, 'msg', e)} at line "
                            f"{getattr(e, 'lineno', '?')}, column {getattr(e, 'colno', '?')}; {_RESAVE}") from None
    if not isinstance(nb, dict):
        raise NotebookError(f"its JSON is a {type(nb).__name__}, not a notebook; {_RESAVE}")
    return nb


def code_cells(nb):
    """[(code cell number, source, execution count)] of a notebook's parsed JSON object (nbformat 4 or 3), or
    None when it has no list of cells. A cell that is no object is no code cell; a source that is not text
    keeps its strings only; a count that is no int is None. Pure: the loader's rule, and the trusted side's
    (checker.records.identical.notebook_cells) for the same files."""
    cells = nb.get("cells")
    if cells is None and isinstance(nb.get("worksheets"), list):  # nbformat 3
        cells = [c for ws in nb["worksheets"] if isinstance(ws, dict)
                 for c in (ws.get("cells") if isinstance(ws.get("cells"), list) else [])]
    if not isinstance(cells, list):
        return None
    out = []
    for cell in cells:
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        src = cell.get("source", cell.get("input", ""))
        count = cell.get("execution_count", cell.get("prompt_number"))
        if isinstance(src, list):
            src = "".join(x for x in src if isinstance(x, str))
        # numbered among the code cells only (a markdown cell is no cell a student counts)
        out.append((len(out) + 1, src if isinstance(src, str) else "", count if type(count) is int else None))
    return out


def _strip_magics(src):
    """Blank out IPython-only lines, keeping line numbers; return (code, skipped lines).

    A `%%time`/`%%capture`/`%%prun` cell keeps its body (its first line becomes blank); any
    other cell magic skips the whole cell. Only a line that starts a statement can be a magic
    (as in IPython): `!= 0` or `% n` continuing a bracketed expression is Python. `%time STMT`
    and `x = %time EXPR` run STMT and EXPR as IPython does; other magics and `x = !cmd` are skipped.
    """
    lines = src.split("\n")
    skipped = []
    first = lines[0].strip() if lines else ""
    if first.startswith("%%"):
        magic = first[2:].split()[0] if first[2:].split() else ""
        if magic not in RUN_BODY:
            return "", [first]
        lines[0] = ""
    scan = _LogicalLines()
    for i, line in enumerate(lines):
        if not scan.at_start():
            scan.feed(line)
            continue
        timed = TIME_RE.match(line)
        if timed:  # `%time f(x)` or `y = %time f(x)`: the statement runs (and is timed) in IPython
            lines[i] = timed.group(1) + timed.group(2)
        elif MAGIC_RE.match(line) or ASSIGNED_MAGIC_RE.match(line) or HELP_RE.match(line):
            skipped.append(line.strip())
            indent = line[: len(line) - len(line.lstrip())]
            lines[i] = indent + "pass"
            continue  # a magic's text is not Python: its quotes and brackets open nothing
        scan.feed(lines[i])
    return "\n".join(lines), skipped


class _LogicalLines:
    """Tells whether the next physical line starts a Python statement: not inside brackets, a string
    that spans lines, or after a backslash continuation. Enough of Python's tokenizer for that."""

    def __init__(self):
        self.depth, self.quote, self.cont = 0, None, False

    def at_start(self):
        return self.depth == 0 and self.quote is None and not self.cont

    def feed(self, line):
        j, n = 0, len(line)
        while j < n:
            c = line[j]
            if self.quote:
                if c == "\\":
                    j += 2
                    continue
                if line.startswith(self.quote, j):
                    j += len(self.quote)
                    self.quote = None
                    continue
                j += 1
                continue
            if c == "#":
                break
            if c in "'\"":
                self.quote = c * 3 if line.startswith(c * 3, j) else c
                j += len(self.quote)
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            j += 1
        ends_in_backslash = line.endswith("\\")
        if self.quote in ("'", '"') and not ends_in_backslash:
            self.quote = None  # an unterminated one-line string is a syntax error the parser will report
        self.cont = ends_in_backslash and self.quote is None


_TOP_START = re.compile(r"[A-Za-z_@]")  # a top-level statement starts at column 0 with a name or decorator

_NOT_A_START = re.compile(r"(else|elif|except|finally|case)\b")


def _chunks(src):
    """Split a file with a syntax error into pieces that parse, losing as little as possible.

    Candidate cuts are the lines that start a top-level statement (column 0, a name or a decorator, not
    `else:`/`except:`); from each cut the smallest run of following cuts that parses is a piece (so a
    multi-line string or call that crosses a cut stays whole). A piece that never parses is lost up to
    the next cut only. Returns (first line, source, parses) in file order."""
    lines = src.splitlines(keepends=True)
    cuts = [0] + [i for i, line in enumerate(lines) if i and _TOP_START.match(line)
                  and not _NOT_A_START.match(line) and not lines[i - 1].startswith("@")]
    cuts = sorted(set(cuts)) + [len(lines)]
    out, k = [], 0
    while k < len(cuts) - 1:
        a = cuts[k]
        for m in range(k + 1, min(len(cuts), k + 60)):
            piece = "".join(lines[a:cuts[m]])
            try:
                ast.parse(piece)
            except (SyntaxError, RecursionError, MemoryError):  # a statement too deeply nested to parse
                continue
            out.append((a + 1, piece, True))
            k = m
            break
        else:
            out.append((a + 1, "".join(lines[a:cuts[k + 1]]), False))
            k += 1
    return out


class Pieces:
    """What the loader runs of one .py file: `pieces` [(first line, source)], each run as its own unit;
    `error` the SyntaxError of the whole file (None when it parses); `skipped` the IPython lines blanked
    when that made it parse (a notebook saved as .py keeps its `!pip` lines); `lost` [(first line,
    source)] of the parts of a broken file that never parse (the rest are `pieces`)."""

    def __init__(self, pieces, error=None, skipped=(), lost=()):
        self.pieces, self.error, self.skipped, self.lost = pieces, error, list(skipped), list(lost)


def py_pieces(src, filename="<unknown>"):
    """The units the loader runs of a .py file's text (decoded by `read_source`): its top-level statements;
    a file that does not parse without its IPython lines, else as the parts of it that parse (`_chunks`)."""
    try:
        return Pieces(_statements(src, _parse_unit(src, filename)))
    except SyntaxError as e:
        error = e
    stripped, skipped = _strip_magics(src)
    if skipped:
        try:
            tree = ast.parse(stripped, filename)
        except (SyntaxError, RecursionError, MemoryError):
            tree = None
        if tree is not None:
            return Pieces(_statements(stripped, tree), error, skipped)
        src = stripped
    good, lost = [], []
    for line0, chunk, parses in _chunks(src):
        (good if parses else lost).append((line0, chunk))
    return Pieces(good, error, (), lost)


def cell_pieces(src):
    """The units the loader runs of a notebook cell: (code with IPython lines blanked, skipped lines,
    [(first line, source)] of its statements, or [] when the cell does not parse: it runs nothing)."""
    code, skipped = _strip_magics(src)
    if not code.strip():
        return code, skipped, []
    try:
        tree = ast.parse(code)
    except (SyntaxError, RecursionError, MemoryError):  # the loader reports the error and runs nothing of it
        return code, skipped, []
    return code, skipped, _statements(code, tree)


def writefile_target(src):
    """(file name, body, append) of a `%%writefile [-a] name` cell, which the loader writes; else None."""
    first, _, body = src.partition("\n")
    parts = first.split()
    if not parts or parts[0] != "%%writefile":
        return None
    names = [p for p in parts[1:] if not p.startswith("-")]
    return (names[0] if names else None), body, any(p in ("-a", "--append") for p in parts[1:])
