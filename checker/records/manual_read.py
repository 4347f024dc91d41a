"""Reading manual.csv's text as a spreadsheet saved it: its bytes, separator, header, rows and numbers.

What it is for: the one reading of the TA's file (`checker.records.manual`) and of files saved the same way
(grades.csv typed into, a roster): `decode_csv` (UTF-8 with or without a byte order mark, Windows-1252,
UTF-16), `csv_delimiter` (`,`, `;` with decimal commas, a tab), the header read by its names in any order
(`missing_columns`), `_rows` (each data row as id, question, points and the comment), `_number` (a cell's
number, `7,5` where `;` separates), `decimal_comma` (how numbers written into the file are to look) and
`repeated_ids` (the ids more than one row of a saved grades.csv holds: a spreadsheet saved one as another's).

A header's columns beyond id, question, points and comment are the TA's own (a `private_note`): never read,
so never shown to a student, and kept as they are by every rewrite of a row (`checker.records.manual`); an
unnamed column (Excel's `;` at the end of every line) adds nothing. A comment that an unquoted separator split
is joined back only where the comment is the header's last named column and the row has more cells than the
header has columns (or, with no header, every cell past the points).

What it is not: the rules of the rows (an id graded, a question known, points in range: `read_manual`) or
a writer of the file (`checker.records.manual`).
"""

from __future__ import annotations

import csv
import io
import math

__all__ = ["HEADER", "decode_csv", "csv_delimiter", "missing_columns", "decimal_comma", "repeated_ids"]

HEADER = ["id", "question", "points", "comment"]


def decode_csv(raw):
    """The text of a CSV file's bytes as a spreadsheet saved them: UTF-8 (a byte order mark dropped), else
    Windows-1252 (Excel's "CSV (Comma delimited)" on Windows), which decodes any bytes; UTF-16 where it starts
    with UTF-16's byte order mark (Excel's "Unicode Text", tab-separated)."""
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff"):
        try:
            return raw.decode("utf-16")
        except UnicodeDecodeError:
            pass
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        return raw.decode("cp1252", "replace")


def _read_text(path):
    """The file's text (BOM dropped) and whether it had one; (None, False) when there is none."""
    try:
        with open(path, "rb") as f:
            raw = f.read()
    except FileNotFoundError:
        return None, False
    return decode_csv(raw), raw.startswith(b"\xef\xbb\xbf")


def csv_delimiter(text):
    """The separator a spreadsheet saved the file with, from its first row: `;` (Excel where the decimal
    separator is a comma, then `7,5` is 7.5), a tab (Excel's "Unicode Text"), else `,`."""
    first = text.split("\n", 1)[0]
    counts = {d: first.count(d) for d in (";", "\t")}
    best = max(counts, key=counts.get)
    return best if counts[best] > first.count(",") else ","


_delimiter = csv_delimiter


def _header_order(row):
    """Where each of HEADER's columns is in a first row that names them (a TA who moved or deleted columns in a
    spreadsheet: `id,points,question`), read by their names in any order; a column it lacks is placed past the
    row's end (empty in every row). None when the row is no header: it names neither `id` and `question` nor
    three of HEADER's names."""
    names = [c.strip().lower() for c in row]
    if not ({"id", "question"} <= set(names) or len(set(HEADER) & set(names)) >= 3):
        return None
    order, past = [], len(names)
    for h in HEADER:
        if h in names:
            order.append(names.index(h))
        else:
            order.append(past)
            past += 1
    return order


def _first_row(text):
    return next(csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text)), [])


def missing_columns(text):
    """The columns of HEADER that manual.csv's header leaves out (its rows have no such cell), [] when it names
    them all or has no header."""
    first = _first_row(text)
    order = _header_order(first)
    return [h for h, i in zip(HEADER, order) if i >= len(first)] if order is not None else []


def _rows(text):
    """[(line number, [cells])] of the data rows, their cells in HEADER's order (id, question, points, then the
    comment, in pieces where an unquoted separator split it: see the module), and the delimiter. The cells of
    the TA's other columns are not among them."""
    delim = _delimiter(text)
    out, order, width, last = [], None, 0, -1
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    for row in reader:
        if reader.line_num == 1:
            order = _header_order(row)
            if order is not None:
                width, last = len(row), max(i for i, name in enumerate(row) if name.strip())
                continue
        if not any(c.strip() for c in row):
            continue
        if order is None:  # no header: every cell past the points is the comment's (but for empty ones at the end)
            rest = row[3:]
            while len(rest) > 1 and not rest[-1].strip():
                rest.pop()
            row = row[:3] + rest
        else:
            c = order[3]
            cells = row + [""] * (max(order) + 1 - len(row))
            if c >= width:  # the comment column deleted: the cells past the header (a comment hwcheck appended)
                rest = row[c:]
            elif c == last and len(row) > width:  # the last named column, split by an unquoted separator
                rest = row[c:c + 1 + len(row) - width]
            else:
                rest = [cells[c]]
            row = [cells[i] for i in order[:3]] + rest
        out.append((reader.line_num, row))
    return out, delim


def _file_order(text):
    """HEADER's columns as the file's first row orders them (to append rows as the TA laid the file out)."""
    return _header_order(_first_row(text)) or list(range(len(HEADER)))


def _clean_id(cell):
    cell = cell.strip()
    return cell[1:] if cell.startswith("'") else cell  # as grades.csv writes an id starting with '=' or '-'


def _number(cell, delim):
    # `'-5`: a negative number as every CSV file hwcheck writes a cell starting with '-' (csvfile.cell)
    s = _clean_id(cell).replace("\u2212", "-")
    if delim != "," and s.count(",") == 1 and "." not in s:  # a decimal comma, where `,` separates no cells
        s = s.replace(",", ".")
    x = float(s)
    if not math.isfinite(x):
        raise ValueError(s)
    return x


def decimal_comma(text):
    """Whether a number hwcheck writes into the file takes a decimal comma (`7,5`), as the file's own do: where
    `;` or a tab separates its cells (Excel where the decimal separator is a comma), unless its points are
    written with a decimal point and none with a comma."""
    rows, delim = _rows(text)
    if delim == ",":
        return False
    points = [r[2] for _, r in rows if len(r) > 2]
    return any("," in p for p in points) or not any("." in p for p in points)


def repeated_ids(text):
    """{id: [line numbers]} of the ids that more than one data row of a CSV file with an `id` column holds (a
    grades.csv as a spreadsheet saved it; `,`, `;` or a tab), ids read as `_clean_id` reads them. hwcheck writes
    one row per submission: a second is one a spreadsheet saved under another id (`1e5` read as the number
    100000, a date), so no cell of any of those rows is a grade of that id's. {} where no header names `id`."""
    text = text[1:] if text.startswith("\ufeff") else text  # a byte order mark decoded as text
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    header = [c.strip().lower() for c in next(reader, [])]
    if "id" not in header:
        return {}
    at, lines = header.index("id"), {}
    for row in reader:
        sid = _clean_id(row[at]) if len(row) > at else ""
        if sid:
            lines.setdefault(sid, []).append(reader.line_num)
    return {sid: found for sid, found in lines.items() if len(found) > 1}
