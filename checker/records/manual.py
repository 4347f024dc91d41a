"""Grades a person gives: OUTDIR/manual.csv, read, checked, kept and merged into the scorecards' totals.

What it is for: the TA's own file of points and comments, which hwcheck
creates once and afterwards appends to; it rewrites a row's points only for
a grade the TA changed in grades.csv (`replace_points`, the file as it was
kept first), never its comment or another row, and fills a row it wrote empty
(id and question, nothing typed in it), or replaces a row's points that are no grade (`12` for a 10-point
question; its comment kept), with the grade typed into grades.csv for that student and question (`ensure_rows`), rather
than append a second row. Columns: `id, question, points, comment` (a header naming
them in another order, with other columns beside them, is read by the names,
and rows are appended in its order); a column of the TA's own beside them (a `private_note`) is never read, so
never shown to a student, and keeps its cells through every rewrite (`checker.records.manual_read` reads the
file). The rule for
`question`:

- a question graded by a person (`Q3-text`): `points` (0..its points) fill
  that question; an empty `points` keeps it pending;
- an automatic question (`Q1`): `points` (0..its points) replace the
  automatic score of that question (a regrade, an appeal);
- `adjustment`: `points` (any sign: `-5` for a late penalty) are added to
  the total; several adjustment rows of one id add up; the comment says why. One row adds or takes off
  at most ADJUSTMENT_TIMES (10) times the assignment's total (`adjustment_limit`): `1e308` is reported.

One row per (id, question) except adjustments: two rows or more that grade one id's question are all
reported and ignored (`_refuse_repeated`: one may be another student's, saved under this id by a spreadsheet). A row's id matches a graded id exactly (its canonical
form, `checker.records.ids`: spaces and invisible characters at its ends, and the
`'` hwcheck writes before a cell, do not count; or the id as hwcheck's CSV files write it) or else no one: a
row for `JDOE` is never `jdoe`'s grade, and is reported. Nor is a row anyone's whose id is also what a
spreadsheet's lossy save makes of another graded id: Windows-1252 writes `???` for `李小龙`, Excel writes
`12345` for `0012345`, a spreadsheet reading ids as numbers writes `100000` for `1e5`, `1.5` for `1.50`
(`checker.records.ids.spreadsheet_forms`); beside such an id, a student's own `???.py` or `12345.py` would otherwise get its grade,
so the row is reported with the ids it may be, exact match or not. Rows that cannot be used (an id not
graded, an unknown question, points that are not a number or out of range) are reported, each
with its line number, and ignored; nothing here raises for the file's
content. Excel's ways of saving are read: a UTF-8 byte order mark, `;` as the
separator (then `7,5` is read as 7.5, and numbers are written so), CRLF rows.

`ensure_rows(path, ids, spec)` creates the file or appends the missing rows
(one per submission and manual question, points empty) atomically, keeping
the file's bytes, separator and line ends. `read_manual(path, spec, ids)`
returns (entries, problems). `apply_manual(card, entries)` returns a copy
of a scorecard with those points merged (questions' scores, `pending`,
`score`, and `manual_grades`, the rows applied, for the notes and exports).
`student_comment(comment)`: a comment as a student may read it (results.json, the report's feedback pages):
hwcheck's own bookkeeping for a grade typed into grades.csv and moved here ("typed into grades.csv") left out.
`pending_line(cards, spec)`: the TA's line naming the merged scorecards whose
questions graded by a person are still pending (said by the batch's summary
and by `hwcheck export`: their totals lack those points).
`replace_points(path, changes)` rewrites the points of rows already there (a grade changed by typing it into
grades.csv, `checker.records.typed`, which finds the grades typed there), every other byte kept. A row whose
id lost characters to a spreadsheet's encoding (`? ??_205` for `李 小龙_205`, Windows-1252) is reported with
that likely cause.

What it is not: a writer of scorecards (they stay the automatic grading,
so `--resume` can trust them) or of the gradebook (`checker.records.gradebook`).
"""

from __future__ import annotations

import copy
import csv
import io
import math
import os
import re

from checker.records.atomic import write_text_atomic
from checker.records.csvfile import cell, ta_row_text
from checker.records.ids import spreadsheet_forms
from checker.records.manual_read import (HEADER, _clean_id, _delimiter, _file_order, _header_order, _number,
                                         _read_text, _rows, csv_delimiter, decimal_comma, decode_csv, missing_columns)

__all__ = ["MANUAL_CSV", "HEADER", "ADJUSTMENT", "manual_path", "ensure_rows", "read_manual", "apply_manual",
           "decode_csv", "csv_delimiter", "missing_columns", "adjustment_limit", "describe", "replace_points",
           "pending_questions", "pending_line", "TYPED", "TOTAL_TYPED", "student_comment"]

MANUAL_CSV = "manual.csv"
TYPED = "typed into grades.csv"  # the comment of a grade moved from grades.csv with no note typed beside it
TOTAL_TYPED = "total typed into grades.csv: "  # ... of a total changed there: `TOTAL_TYPED 85, where the row ...`
_BOOKKEEPING = re.compile(re.escape(TOTAL_TYPED) + r"[-+0-9.eE]+, where the row added up to [-+0-9.eE]+")
ADJUSTMENT = "adjustment"


def manual_path(outdir):
    """OUTDIR/manual.csv, the TA's file (a regular file there is the TA's); where a folder or link of someone
    else's holds that name, the name beside it that hwcheck created instead (`checker.records.owned.place_kept`)."""
    from checker.records import owned
    return owned.place_kept(outdir, MANUAL_CSV) or os.path.join(outdir, MANUAL_CSV)


def _manual_ids(spec):
    return [str(q["id"]) for q in spec.get("questions") or [] if q.get("manual")]


def ensure_rows(path, ids, spec, extra=(), fill=None):
    """Create manual.csv, or append the rows it lacks (id x manual question), atomically.

    Rows already there are kept byte for byte, but that an `extra` row ([id, question, points, comment]: a grade
    typed into grades.csv) takes the place of the first row of its id and question that holds points
    `read_manual` ignores (no number, out of the question's range: its points replaced, its comment kept, or
    the one typed where it has none) where no row of them holds a grade, else fills the first that holds nothing
    else (no points, no comment: the row hwcheck wrote empty); the other `extra` rows are appended after them,
    numbers as the file writes them (`decimal_comma`). The TA's other columns keep their cells. `fill(id)`:
    whether a row of that id may take a row's place (None: every id; a row whose id may be another's,
    `_match_id`, is appended, to be named). Returns the number of rows added, filled or replaced.
    """
    text, bom = _read_text(path)
    have, empty, bad, graded = set(), {}, {}, set()
    delim = ","
    tops = {str(q["id"]): float(q.get("points") or 0) for q in spec.get("questions") or []}
    if text is not None:
        rows, delim = _rows(text)
        have = {(_clean_id(r[0]), r[1].strip()) for _, r in rows if len(r) >= 2}
        for line, r in rows:  # the first row of each that the TA wrote nothing in, or wrote points read_manual ignores
            key, said = (_clean_id(r[0]), r[1].strip()), delim.join(r[3:]).strip()
            if len(r) < 3 or not r[2].strip():
                if len(r) >= 2 and not said:
                    empty.setdefault(key, line)
            elif key[1] in tops:
                try:
                    ok = 0 <= _number(r[2], delim) <= tops[key[1]]
                except ValueError:
                    ok = False
                if ok:
                    graded.add(key)
                else:
                    bad.setdefault(key, (line, said))
    # an id is there as written (checker.records.csvfile.cell: `'=x`, a control character escaped) or as typed
    missing = [(sid, qid) for sid in sorted(ids) for qid in _manual_ids(spec)
               if (sid, qid) not in have and (_clean_id(cell(sid, delim)), qid) not in have]
    # a grade typed into grades.csv takes the place of its student and question's row that holds no grade (points
    # that are none, or the empty row), rather than a second row beside it (which would overrule it or be
    # overruled, or leave the bad points reported on every run)
    fills, rest = {}, []
    for row in extra:
        sid, qid, *more = row
        points, comment = (more + [""])[0], (more + ["", ""])[1]
        keys = [(sid, qid), (_clean_id(cell(sid, delim)), qid)]
        was = next((bad.pop(k) for k in keys if k in bad and k not in graded), None)
        line = was[0] if was else next((empty.pop(k) for k in keys if k in empty), None)
        if line is None or qid == ADJUSTMENT or (fill is not None and not fill(sid)):
            rest.append(row)
        else:
            fills[line] = {2: points} if was and was[1] else {2: points, 3: comment}
    if fills:
        text, _ = _rewrite_cells(text, fills)
    extra = rest
    if text is not None and not missing and not extra:
        if fills:
            write_text_atomic(path, text, encoding="utf-8-sig" if bom else "utf-8")
        return len(fills)
    new = []
    if text is None or not text.strip():
        new.append(HEADER)
        text, bom = "", True
    rows = [[sid, qid, *(rest or ["", ""])] for sid, qid, *rest in [*missing, *extra]]
    order = _file_order(text) if text.strip() else list(range(len(HEADER)))
    if order != list(range(len(HEADER))):  # in the TA's order of columns
        width, named = max(order) + 1, len(next(csv.reader(io.StringIO(text, newline=""), delimiter=delim)))
        for row in rows:
            laid = [""] * width
            for value, i in zip(row, order):
                laid[i] = value
            if order[3] == width - 1 and order[3] >= named and not laid[-1]:
                laid.pop()  # no cell for the comment column the TA deleted (a comment to keep gets one)
            new.append(laid)
    else:
        new += rows
    if text and not text.endswith(("\n", "\r")):
        text += "\r\n"
    # every cell through checker.records.csvfile.cell, as in every CSV file hwcheck writes, but numbers, which are
    # written as the file writes them (`7,5` in a file of decimal commas)
    comma = decimal_comma(text) if text.strip() else delim != ","
    text += "".join(ta_row_text([_written(v, comma) if _is_number(v) else cell(v, delim) for v in row], delim, "\r\n")
                    for row in new)
    write_text_atomic(path, text, encoding="utf-8-sig" if bom else "utf-8")
    return len(missing) + len(extra) + len(fills)


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _written(value, comma):
    """A number as manual.csv writes it: `7,5` where the file's numbers take a decimal comma (`decimal_comma`)."""
    value = str(_num(value))
    return value.replace(".", ",") if comma else value


def replace_points(path, changes):
    """Rewrite the points of rows already in manual.csv, atomically: changes {line: points} (a row by the line
    `read_manual` gives it, the number as it is to be read back). That row's other cells (the TA's comment)
    and every other row are kept byte for byte; the points are written as the file writes numbers (`7,5`
    where `;` separates). Returns the lines rewritten (a line that is no row of the file is left)."""
    text, bom = _read_text(path)
    if text is None or not changes:
        return []
    text, done = _rewrite_cells(text, {line: {2: points} for line, points in changes.items()})
    if done:
        write_text_atomic(path, text, encoding="utf-8-sig" if bom else "utf-8")
    return done


def _rewrite_cells(text, changes):
    """(text with the cells of some rows rewritten, the lines rewritten): changes {line: {i: value}}, i a column of
    HEADER's (2 the points, written as the file writes numbers; 3 the comment), the row by the line `read_manual`
    gives it. Its other cells and every other row are kept byte for byte."""
    delim, comma = _delimiter(text), decimal_comma(text)
    physical = text.splitlines(keepends=True)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    order = None
    done, start = [], 0
    for row in reader:
        end = reader.line_num  # the record's physical lines are start+1..end (a quoted cell may hold a newline)
        first, start = start, end
        if end == 1:
            order = _header_order(row)
            if order is not None:
                continue
        if end not in changes:
            continue
        cols = order or list(range(len(HEADER)))
        cells = row + [""] * (max(cols[i] for i in changes[end]) + 1 - len(row))
        for i, value in changes[end].items():
            cells[cols[i]] = _written(value, comma) if i == 2 and _is_number(value) else str(value)
        ending = physical[end - 1][len(physical[end - 1].rstrip("\r\n")):]
        physical[first:end] = [ta_row_text(cells, delim, ending)] + [""] * (end - first - 1)
        done.append(end)
    return "".join(physical), done


def _match_id(typed, ids, keys):
    """(id, None) for a row whose id names one graded id and can be no other's; else (None, why).

    A row names a graded id by the id in its canonical form (`checker.records.ids`: NFC, no spaces, quotes or
    invisible characters at its ends) or as hwcheck writes it in its CSV files (`checker.records.csvfile.cell`:
    an invisible or control character as its escape, a formula's start defused). Exact or else nothing: a row
    that matches an id only in another letter case or Unicode form (`JDOE` beside `jdoe`) gives no one its
    grade. Nor does a row whose id is also what a spreadsheet's lossy save makes of another graded id
    (`_lossy_fits`: Windows-1252's `?` for `李小龙`, Excel's `12345` for `0012345`): the grade typed in a
    row of one may have been saved under the other's id, so the row is no one's, even where its id is one
    of them exactly (else a student who hands in `???.py` or `12345.py` would get that grade), and the line
    names the ids it may be."""
    from checker.records.ids import canonical, key
    if not keys:
        _fill_keys(keys, ids)
    exact = canonical(typed)
    named = sorted(({exact} if exact in ids else set()) | set(keys.get(("written", typed.strip()), [])))
    lossy = {sid: how for sid, how in _lossy_fits(typed, ids, keys).items() if sid not in named}
    if len(named) == 1 and not lossy:
        return named[0], None
    if named:
        return None, _ambiguous(typed, exact, named, lossy)
    alike = sorted(keys.get(key(typed), []))
    if alike:
        return None, (f"{typed!r} is not the id {alike[0]!r} as written (letter case, Unicode form or an invisible "
                      f"character differ), so it is no one's grade; write the id as grades.csv shows it")
    lost = _lost_to_encoding(typed, ids)
    if lost is not None:
        like = f" (it may be {lost[0]!r})" if len(lost) == 1 else f" ({len(lost)} ids fit it)" if lost else ""
        return None, (f"no submission {typed!r} was graded into this folder: its '?' stand where the id had "
                      f"characters{like}, as a file saved in an encoding that cannot hold them writes them "
                      f"(Excel's \"CSV (Comma delimited)\" keeps only Western European letters), so it is no "
                      f"one's grade; write the id as grades.csv shows it, and save the file as \"CSV UTF-8\"")
    if lossy:  # only ids read as numbers can be left here (zeros dropped, or another form): a `?` was answered above
        how = ("with the leading zeros dropped, as a spreadsheet that takes an id of digits for a number saves it"
               if set(lossy.values()) == {"zeros"} else _AS_NUMBER)
        return None, (f"no submission {typed!r} was graded into this folder: it may be "
                      f"{_listed(sorted(lossy), ' or ')} {how}, so it is no one's grade; write the id as grades.csv "
                      f"shows it, with the id column formatted as Text")
    return None, f"no submission {typed!r} was graded into this folder"


def _fill_keys(keys, ids):
    """What `_match_id` looks ids up by: an id's `checker.records.ids.key`; ("written", the id as hwcheck's CSV
    files write it, with and without the `'` they put before a formula's start); ("zeros", an id of digits that
    starts with 0, as a number: `0012345` as `12345`); ("number", any other text a spreadsheet may save an id as,
    having read it as a number: `1e5` as `100000`, `1.50` as `1.5`: `checker.records.ids.spreadsheet_forms`)."""
    from checker.records.ids import key
    for sid in ids:
        keys.setdefault(key(sid), []).append(sid)
        # as every CSV file hwcheck writes shows it (grades.csv, this file's own rows): an invisible or control
        # character of the file name as its escape (`zw\u200bspace`), a formula's start defused
        for written in dict.fromkeys((cell(sid), cell(sid, ";"))):  # in a `,` file, and in a `;` one
            if written != sid:
                keys.setdefault(("written", written), []).append(sid)
                keys.setdefault(("written", written[1:] if written.startswith("'") else "'" + written),
                                []).append(sid)
        # as a spreadsheet that read it as a number saves it (`0012345` as `12345`, `1e5` as `100000`)
        for form in spreadsheet_forms(sid):
            zeros = sid.isascii() and sid.isdigit() and form == (sid.lstrip("0") or "0")
            keys.setdefault(("zeros" if zeros else "number", form), []).append(sid)
    keys.setdefault(("filled",), [])  # an empty class fills them once too


def _lossy_fits(typed, ids, keys):
    """{graded id: how}: the ids (`typed` itself among them, when it is one) that a spreadsheet's lossy save of
    the file writes as `typed`, how being "encoding" (Windows-1252, Excel's "CSV (Comma delimited)", writes `?`
    for each character it cannot hold: `_lost_to_encoding`), "zeros" (Excel reads an id of digits as a number
    and writes it without its leading zeros: `0012345` as `12345`) or "number" (any other id a spreadsheet reads
    as a number and writes otherwise: `1e5` as `100000`, `1.50` as `1.5`, `123456789012` as `1.23457E+11`)."""
    typed = typed.strip()
    fits = dict.fromkeys(_lost_to_encoding(typed, ids) or (), "encoding")
    fits.update(dict.fromkeys(keys.get(("number", typed), ()), "number"))
    fits.update(dict.fromkeys(keys.get(("zeros", typed), ()), "zeros"))
    return {sid: how for sid, how in fits.items() if sid != typed}


def _listed(sids, last=" and "):
    shown = [repr(s) for s in sids[:5]] + ([f"{len(sids) - 5} more"] if len(sids) > 5 else [])
    return shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + last + shown[-1]


def _ambiguous(typed, exact, named, lossy):
    """Why a row whose id names more than one graded id (`_match_id`; lossy: {id: how} of `_lossy_fits`, the
    ids named left out) is no one's grade."""
    how = []
    if exact in named:
        how.append(f"it is the id {exact!r}")
    others = [sid for sid in named if sid != exact]
    if others:
        how.append(f"it is how hwcheck's CSV files write {_listed(others)}")
    lost = sorted(sid for sid, why in lossy.items() if why == "encoding")
    if lost:
        how.append(f"it is what a file saved in Windows-1252 (Excel's \"CSV (Comma delimited)\", which writes '?' "
                   f"for each character it cannot hold) makes of {_listed(lost)}")
    zeros = sorted(sid for sid, why in lossy.items() if why == "zeros")
    if zeros:
        how.append(f"it is {_listed(zeros)} with the leading zeros dropped, as a spreadsheet that takes an id of "
                   f"digits for a number saves it")
    numbers = sorted(sid for sid, why in lossy.items() if why == "number")
    if numbers:
        how.append(f"it may be {_listed(numbers)} {_AS_NUMBER}")
    every = sorted(set(named) | set(lossy))
    itself = (f" (a grade for {exact!r} itself cannot be told apart from theirs here: name that submission's file "
              f"otherwise and grade it again)" if exact in named and lossy else "")
    return (f"{typed!r} may be the id of any of {len(every)} submissions ({_listed(every, ' or ')}): "
            f"{'; '.join(how)}; so it is no one's grade: write the id as grades.csv shows it, in a file saved as "
            f"\"CSV UTF-8\" with the id column formatted as Text{itself}")


_AS_NUMBER = ("as a spreadsheet that read the id as a number saves it (`1e5` as `100000` or `1.00E+05`, `1.50` as "
              "`1.5`, a long number as `1.23457E+11`)")


def _lost_to_encoding(typed, ids):
    """For an id with `?` in it: the graded ids it could be, read back from a file saved in Windows-1252 (Excel's
    "CSV (Comma delimited)"), which writes `?` for each character it cannot hold (`李 小龙_205` becomes
    `? ??_205`): the same length, the same characters elsewhere. None when the id has no `?` or no graded id has
    such characters (then the `?` was typed)."""
    if "?" not in typed:
        return None
    typed = typed.strip()

    def lossy(ch):
        try:
            ch.encode("cp1252")
            return False
        except UnicodeEncodeError:
            return True
    fits = sorted(sid for sid in ids if len(sid) == len(typed)
                  and all(a == b or (a == "?" and lossy(b)) for a, b in zip(typed, sid)))
    if fits:
        return fits
    return [] if any(lossy(ch) for sid in ids for ch in sid) else None


def read_manual(path, spec, ids=None, scale=None, ignored=None):
    """(entries, problems) of manual.csv: entries {id: [row dict]}, problems [text] naming the line.

    `ignored` (a dict, filled when given): {id: [short text]} of the rows of that submission ignored, and why
    (grades.csv's note says them: the spreadsheet alone tells why a grade typed is not in its cell).

    `scale(id, question, points, comment)`: the points the question was worth when that row was typed (None when
    not known, `checker.records.kept.Scales`): a grade above the question's points now, typed when it was
    worth more, is said so (ignored all the same: the TA gives it on the new scale).

    A row dict: {question, points (float or None), comment, line, kind}, kind
    "manual" (a question graded by a person), "override" (an automatic
    question) or "adjustment". `ids`: the submissions graded (others are
    reported); None accepts any id.
    """
    text, _ = _read_text(path)
    if text is None:
        return {}, []
    rows, delim = _rows(text)
    questions = {str(q["id"]): q for q in spec.get("questions") or []}
    entries, problems, seen = {}, [], {}
    name = os.path.basename(path)
    lacking = [h for h in missing_columns(text) if h != "comment"]
    if lacking:
        problems.append(f"{name} line 1: the header names no {' or '.join(map(repr, lacking))} column, so no row "
                        f"has one: name the columns {', '.join(HEADER)} (in any order) in its first row")
    limit = adjustment_limit(spec)
    keys = {}  # what `_match_id` looks ids up by, filled at the first row
    ids = set(ids) if ids is not None else None
    ignored = {} if ignored is None else ignored

    def drop(sid, long, short):  # a row of `sid` ignored: said to the TA in full, in its note in short
        problems.append(long)
        ignored.setdefault(sid, []).append(f"{name} line {line}: {short}: ignored")

    for line, row in rows:
        row = row + [""] * (4 - len(row))
        sid, qid, points = _clean_id(row[0]), row[1].strip(), row[2]
        comment = delim.join(row[3:]).strip()  # an unquoted separator in a comment keeps the comment whole
        where = f"{name} line {line}"
        if not sid:
            problems.append(f"{where}: no id: ignored")
            continue
        if ids is not None:  # every row, an exact one too: it may also be another id a lossy save wrote so
            sid, why = _match_id(sid, ids, keys)
            if sid is None:
                problems.append(f"{where}: {why}: ignored")
                continue
        if qid == ADJUSTMENT or qid.lower() == ADJUSTMENT:
            kind, top = "adjustment", None
        elif qid in questions:
            kind = "manual" if questions[qid].get("manual") else "override"
            top = float(questions[qid].get("points") or 0)
        else:
            drop(sid, f"{where}: question {qid!r} is neither a question of {spec.get('id')} "
                      f"({', '.join(questions)}) nor {ADJUSTMENT!r}: ignored", f"no question {qid!r}")
            continue
        value = None
        if points.strip():
            try:
                value = _number(points, delim)
            except ValueError:
                drop(sid, f"{where}: points {points.strip()!r} is not a number: ignored",
                     f"{qid} points {points.strip()!r} not a number")
                continue
            if top is not None and not 0 <= value <= top:
                was = scale(sid, qid, value, comment) if scale is not None else None
                if isinstance(was, (int, float)) and was != top and 0 <= value <= was:
                    drop(sid, f"{where}: {sid} {qid} {_shown(value)} was typed when {qid} was worth {was:g} "
                              f"points; it is worth 0 to {top:g} now (spec.toml changed), which "
                              f"{_shown(value)} is above: ignored, {sid} has no grade of yours for {qid} "
                              f"now; write it there on the new scale",
                         f"{qid} {_shown(value)} was typed when {qid} was worth {was:g}, above the {top:g} it is "
                         f"worth now (spec.toml changed)")
                else:
                    drop(sid, f"{where}: {qid} is worth 0 to {top:g} points, not {_shown(value)}: ignored",
                         f"{qid} {_shown(value)} is not within the 0 to {top:g} points {qid} is worth")
                continue
            if top is None and not -limit <= value <= limit:
                drop(sid, f"{where}: an adjustment is at most {limit:g} points either way ({ADJUSTMENT_TIMES} "
                          f"times the assignment's total), not {_shown(value)}: ignored; write the points "
                          f"to add or take off, such as -5", f"adjustment {_shown(value)} beyond {limit:g} points")
                continue
        else:  # a placeholder: a manual question still pending (a later row of it with points counts)
            if kind != "manual" and comment:
                drop(sid, f"{where}: a {kind} row without points: ignored", f"a {qid} row without points")
            continue
        if kind != "adjustment":
            seen.setdefault((sid, qid), []).append(line)
        entries.setdefault(sid, []).append({"question": qid, "points": value, "comment": comment,
                                            "line": line, "kind": kind})
    _refuse_repeated(entries, seen, name, problems, ignored)
    return entries, problems


def _refuse_repeated(entries, seen, name, problems, ignored):
    """Two rows or more that grade one id's question (`seen`: {(id, question): [lines]}) are no one's grade,
    each of them: a spreadsheet that read another id as this one (an id it took for a number or a date, as
    `1e5` saved as `100000`) saved that student's row under this id, and which row is whose cannot be told.
    Named with their lines and points; the rows with no points (those hwcheck writes, to be filled) are none."""
    for (sid, qid), lines in sorted(seen.items()):
        if len(lines) < 2:
            continue
        rows = [r for r in entries.get(sid, []) if r["question"] == qid and r["line"] in lines]
        entries[sid] = [r for r in entries[sid] if r not in rows]
        if not entries[sid]:
            del entries[sid]
        given = ", ".join(f"line {r['line']}: {_shown(r['points'])}" for r in rows)
        at = ", ".join(map(str, lines[:-1])) + f" and {lines[-1]}"
        problems.append(f"{name} lines {at}: {len(lines)} rows "
                        f"grade {sid} {qid} ({given}), so none of them counts: one may be another student's row "
                        f"saved under this id by a spreadsheet that read that id as a number or a date (`1e5` "
                        f"saved as `100000`); keep the one row of {sid}'s {qid}, with the id column formatted as "
                        f"Text: ignored")
        ignored.setdefault(sid, []).append(f"{name} lines {', '.join(map(str, lines))}: {len(lines)} rows of "
                                           f"{qid}: ignored")


ADJUSTMENT_TIMES = 10  # one adjustment row adds or takes off at most this many times the assignment's total


def adjustment_limit(spec):
    """The most points one `adjustment` row may add or take off: ADJUSTMENT_TIMES the assignment's total (its
    questions' points; a penalty that takes a total far below 0 is the TA's to give), so a typo such as `1e308`
    is reported, not added (a total of 309 digits no LMS imports, or an overflow)."""
    total = sum(float(q.get("points") or 0) for q in spec.get("questions") or [])
    return ADJUSTMENT_TIMES * (total if math.isfinite(total) and total > 0 else 100.0)


def _shown(value):
    """A number for a message: `1e+308` rather than its 309 digits."""
    return f"{value:g}"


def _num(x):
    x = round(float(x), 4)
    return int(x) if math.isfinite(x) and x == int(x) else x


def apply_manual(card, rows):
    """A copy of `card` with the manual rows merged; `card` itself is not changed.

    score: the automatic questions (overrides included) + the manual
    questions graded + the adjustments. The rows used are kept in
    `manual_grades`, each with the automatic points it replaced (`was`).
    """
    if not rows:
        return card
    card = copy.deepcopy(card)
    by_id = {str(q.get("id")): q for q in card.get("questions") or []}
    applied, adjust = [], 0.0
    for row in rows:
        q = by_id.get(row["question"])
        if row["kind"] == "adjustment":
            adjust += row["points"]
            applied.append(dict(row))
        elif q is not None and row["points"] is not None:
            applied.append({**row, "was": q.get("score")})
            q["score"] = _num(row["points"])
            if row["kind"] == "manual":
                q["pending"] = False
            if student_comment(row["comment"]):  # what the student's feedback shows: the TA's words only
                q["manual_comment"] = row["comment"]
    total = sum(float(q.get("score") or 0) for q in card.get("questions") or []
                if not q.get("manual") or not q.get("pending", True))
    card["score"] = _num(total + adjust)
    card["manual_grades"] = applied
    return card


def student_comment(comment):
    """A manual.csv comment as a student may read it: '' for hwcheck's own bookkeeping, the comment a grade typed
    into grades.csv got when it was moved here (`TYPED`, or a total's `TOTAL_TYPED 85, where the row added up to
    90`), which says where the TA typed it, not why; the TA's own words (any other text, or those words edited)
    as they are. manual.csv keeps it, and grades.csv's note and the TA's lines say it (h102)."""
    text = str(comment or "").strip()
    return "" if text == TYPED or _BOOKKEEPING.fullmatch(text) else str(comment or "")


def describe(card, for_student=False):
    """A short text of the manual rows applied to a merged card: for grades.csv's note, and, for_student, for
    results.json (hwcheck's bookkeeping comments left out: `student_comment`)."""
    parts = []
    for row in card.get("manual_grades") or []:
        pts = f"{row['points']:+g}" if row["kind"] == "adjustment" else f"{row['points']:g}"
        what = {"manual": f"{row['question']} {pts}",
                "override": f"{row['question']} regraded {row.get('was')}->{pts}",
                "adjustment": f"adjustment {pts}"}[row["kind"]]
        comment = student_comment(row["comment"]) if for_student else row["comment"]
        parts.append(what + (f" ({comment})" if comment else ""))
    return "; ".join(parts)


def pending_questions(card):
    """The ids of a merged card's questions graded by a person that are not graded yet ([] for a card hwcheck
    could not grade: it has nothing to grade by hand)."""
    if (card.get("grader") or {}).get("internal_error"):
        return []
    return [str(q.get("id")) for q in card.get("questions") or [] if q.get("manual") and q.get("pending", True)]


def pending_line(cards, spec, shown=20):
    """'manual grades pending: 17 of 21 submissions ...: alice, bob, ...' for the merged `cards`, or ''."""
    waiting = sorted((str((c.get("submission") or {}).get("id", "")), pending_questions(c)) for c in cards)
    waiting = [(sid, qs) for sid, qs in waiting if qs]
    if not waiting:
        return ""
    asked = {q for _, qs in waiting for q in qs}
    questions = [q for q in spec.get("questions") or [] if str(q.get("id")) in asked]
    points = sum(float(q.get("points") or 0) for q in questions)
    names = ", ".join(sid for sid, _ in waiting[:shown])
    if len(waiting) > shown:
        names += f" and {len(waiting) - shown} more (grades.csv's empty {questions[0]['id']} cells)"
    return (f"manual grades pending: {len(waiting)} of {len(cards)} submissions have "
            f"{', '.join(str(q['id']) for q in questions)} to be graded by hand, so their totals lack up to {points:g} "
            f"points: {names}; grade them in {MANUAL_CSV}")
