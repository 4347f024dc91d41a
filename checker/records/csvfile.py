"""The one rule for a cell of a CSV file hwcheck writes, and the one writer that applies it.

What it is for: every CSV file hwcheck writes (grades.csv, answers.csv,
manual.csv's rows, canvas.csv, moodle.csv) is text a spreadsheet opens, and
many of its cells come from students (ids are their file names, written
answers their text). `cell(value)` is the rule, after OWASP's "CSV
Injection": a text cell starting with `=` `+` `-` `@`, their full-width forms
`＝` `＋` `－` `＠`, a tab, CR or LF, or spaces and then one of those, gets a
`'` in front (a spreadsheet shows it as text, never a formula or a DDE
call); control, bidi and invisible characters are shown as escapes
(`checker.render.escape.for_csv_cell`). Numbers (int, float) are written as they
are, so a grade of -5 stays a number: a writer passes grades as numbers.

A cell is not always one cell to a spreadsheet: Excel in a locale whose list
separator is `;` (German, French) splits every line of a `,` file at each `;`,
and there a `"` opens a quoted field only at the start of such a piece, so
the csv module's quoting does not keep a cell whole unless it is the line's
first (`alice,"x;=cmd|' /C calc'!A0"` is the cells `alice,"x` and a formula),
and a newline inside a quoted cell ends the row. Quoting cannot be the
defence; every piece is defused instead: in a cell's text, a piece after a
`;`, a tab, LF or CR (SEPARATORS) that starts, after spaces and `"`, with a
formula character gets a `'` in front of it, as the cell's start does
(`carol;=cmd` is written `carol;'=cmd`; a piece already starting with `'` is
text and is left, so `cell(cell(x)) == cell(x)`). A file written with `;`
between its cells (manual.csv where the TA's is so) is the mirror case: Excel
in a `,` locale splits it at each `,`, so there a piece after a `,` is
defused too (`cell(x, delimiter=";")`). hwcheck reads back its own
ids as written: `checker.records.manual` matches a row's id to the graded id
whose written form it is (and names the row as no one's where two ids share
one).

`csv_text(rows, delimiter=",")` is the CSV text of rows (stdlib `csv`, excel
dialect: CRLF rows, minimal quoting) with every cell through `cell`; no
other module of hwcheck makes a `csv.writer` (tests/test_csv_cells.py
checks the source).

What it is not: a reader (`checker.records.manual` reads manual.csv), or the
choice of columns (each file's module).
"""

from __future__ import annotations

import csv
import io
import re

from checker.render.escape import for_csv_cell

__all__ = ["FORMULA_START", "SEPARATORS", "SEPARATORS_OF", "cell", "csv_text", "ta_row_text"]

FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\t", "\r", "\n")
SEPARATORS = (";", "\t", "\n", "\r")  # where a spreadsheet may start a new cell or row inside a cell's text
# ... in a file whose own delimiter is `;`: Excel in a `,` locale splits its lines at each `,`
SEPARATORS_OF = {",": SEPARATORS, ";": (",",) + SEPARATORS}


def _piece(separators):
    """A piece after one of `separators` that a spreadsheet would read as a formula: spaces or quotes, then a
    formula character."""
    return re.compile("(?<=[%s])(?=[\\s\"]*[%s])" % (re.escape("".join(separators)),
                                                     re.escape("".join(FORMULA_START[:8]))))


_PIECES = {d: _piece(seps) for d, seps in SEPARATORS_OF.items()}


def cell(value, delimiter=","):
    """The cell hwcheck writes for `value` into a file whose cells are separated by `delimiter` (`,` or `;`):
    numbers as they are, text escaped and defused (see the module)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = str(value)
    else:
        return value
    text = for_csv_cell(value)
    if not isinstance(text, str):
        text = str(text)
    if not text.startswith("'") and (  # a `'` first: already shown as text
            value[:1] in ("\t", "\r", "\n") or text[:1] in FORMULA_START or text.lstrip()[:1] in FORMULA_START):
        text = "'" + text
    # each piece a separator starts: `;` (`,` in a `;` file), a tab or a newline (see the module)
    return _PIECES.get(delimiter, _PIECES[","]).sub("'", text)


def csv_text(rows, delimiter=","):
    """The CSV text of `rows` (lists of cells), every cell through `cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)  # excel dialect: CRLF rows, minimal quoting
    for row in rows:
        writer.writerow([cell(v, delimiter) for v in row])
    return buffer.getvalue()


def ta_row_text(cells, delimiter, lineterminator):
    """One row of a file the TA wrote (manual.csv), written back with one cell changed by hwcheck (a number):
    the TA's own cells as they are, quoted as the csv module quotes, never defused (their text is theirs, and
    a comment "-2 late" must stay as typed)."""
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator=lineterminator).writerow(cells)
    return buffer.getvalue()
