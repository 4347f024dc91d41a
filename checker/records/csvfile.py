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

from checker.render.escape import for_csv_cell

__all__ = ["FORMULA_START", "cell", "csv_text", "ta_row_text"]

FORMULA_START = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20", "\t", "\r", "\n")


def cell(value):
    """The cell hwcheck writes for `value`: numbers as they are, text escaped and defused (see the module)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        value = str(value)
    else:
        return value
    text = for_csv_cell(value)
    if not isinstance(text, str):
        text = str(text)
    if text.startswith("'"):
        return text  # already shown as text
    if value[:1] in ("\t", "\r", "\n") or text[:1] in FORMULA_START or text.lstrip()[:1] in FORMULA_START:
        return "'" + text
    return text


def csv_text(rows, delimiter=","):
    """The CSV text of `rows` (lists of cells), every cell through `cell`."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter)  # excel dialect: CRLF rows, minimal quoting
    for row in rows:
        writer.writerow([cell(v) for v in row])
    return buffer.getvalue()


def ta_row_text(cells, delimiter, lineterminator):
    """One row of a file the TA wrote (manual.csv), written back with one cell changed by hwcheck (a number):
    the TA's own cells as they are, quoted as the csv module quotes, never defused (their text is theirs, and
    a comment "-2 late" must stay as typed)."""
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator=lineterminator).writerow(cells)
    return buffer.getvalue()
