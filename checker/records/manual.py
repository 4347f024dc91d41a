"""Grades a person gives: OUTDIR/manual.csv, read, checked, kept and merged into the scorecards' totals.

What it is for: the TA's own file of points and comments, which hwcheck
creates once and afterwards only appends to (never rewrites a row the TA
may have edited). Columns: `id, question, points, comment` (a header naming
them in another order, with other columns beside them, is read by the names,
and rows are appended in its order). The rule for
`question`:

- a question graded by a person (`Q3-text`): `points` (0..its points) fill
  that question; an empty `points` keeps it pending;
- an automatic question (`Q1`): `points` (0..its points) replace the
  automatic score of that question (a regrade, an appeal);
- `adjustment`: `points` (any sign: `-5` for a late penalty) are added to
  the total; several adjustment rows of one id add up; the comment says why. One row adds or takes off
  at most ADJUSTMENT_TIMES (10) times the assignment's total (`adjustment_limit`): `1e308` is reported.

One row per (id, question) except adjustments; a later duplicate is
reported and ignored. A row's id matches a graded id exactly (its canonical
form, `checker.records.ids`: spaces and invisible characters at its ends, and the
`'` hwcheck writes before a cell, do not count) or else no one: a row for
`JDOE` is never `jdoe`'s grade, and is reported. Rows that cannot be used (an id not graded, an unknown
question, points that are not a number or out of range) are reported, each
with its line number, and ignored; nothing here raises for the file's
content. Excel's ways of saving are read: a UTF-8 byte order mark, `;` as the
separator (then `7,5` is read as 7.5), CRLF rows.

`ensure_rows(path, ids, spec)` creates the file or appends the missing rows
(one per submission and manual question, points empty) atomically, keeping
the file's bytes, separator and line ends. `read_manual(path, spec, ids)`
returns (entries, problems). `apply_manual(card, entries)` returns a copy
of a scorecard with those points merged (questions' scores, `pending`,
`score`, and `manual_grades`, the rows applied, for the notes and exports).
`pending_line(cards, spec)`: the TA's line naming the merged scorecards whose
questions graded by a person are still pending (said by the batch's summary
and by `hwcheck export`: their totals lack those points).
`typed_into_gradebook(...)`: the grades typed into grades.csv since hwcheck wrote it, as rows to append
here (a question's cell; a `total` changed, as the `adjustment` of the difference), never a cell holding
a value hwcheck itself wrote in that row before (a spreadsheet open across a regrade saves its old cells
back); `moved_line(row)` says each. A row whose id lost characters to a spreadsheet's encoding (`? ??_205`
for `李 小龙_205`, Windows-1252) is reported with that likely cause.

What it is not: a writer of scorecards (they stay the automatic grading,
so `--resume` can trust them) or of the gradebook (`checker.records.gradebook`).
"""

from __future__ import annotations

import copy
import csv
import io
import math
import os

from checker.records.atomic import write_text_atomic
from checker.records.csvfile import cell, csv_text

__all__ = ["MANUAL_CSV", "HEADER", "ADJUSTMENT", "manual_path", "ensure_rows", "read_manual", "apply_manual",
           "decode_csv", "csv_delimiter", "missing_columns", "adjustment_limit", "describe", "typed_into_gradebook",
           "moved_line",
           "pending_questions", "pending_line"]

MANUAL_CSV = "manual.csv"
HEADER = ["id", "question", "points", "comment"]
ADJUSTMENT = "adjustment"


def manual_path(outdir):
    """OUTDIR/manual.csv, the TA's file (a regular file there is the TA's); where a folder or link of someone
    else's holds that name, the name beside it that hwcheck created instead (`checker.records.owned.place_kept`)."""
    from checker.records import owned
    return owned.place_kept(outdir, MANUAL_CSV) or os.path.join(outdir, MANUAL_CSV)


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


def missing_columns(text):
    """The columns of HEADER that manual.csv's header leaves out (its rows have no such cell), [] when it names
    them all or has no header."""
    first = next(csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text)), [])
    order = _header_order(first)
    return [h for h, i in zip(HEADER, order) if i >= len(first)] if order is not None else []


def _rows(text):
    """[(line number, [cells])] of the data rows, their cells in HEADER's order (id, question, points, then the
    comment and whatever an unquoted separator split off it), and the delimiter."""
    delim = _delimiter(text)
    out, order = [], None
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delim)
    for row in reader:
        if reader.line_num == 1:
            order, width = _header_order(row), len(row)
            if order is not None:
                continue
        if not any(c.strip() for c in row):
            continue
        if order is not None and order != list(range(len(HEADER))):
            cells = row + [""] * (max(order) + 1 - len(row))
            # past the comment: what an unquoted separator split off it, when it is the header's last column
            rest = cells[order[3] + 1:] if order[3] >= width - 1 else []
            row = [cells[i] for i in order] + rest
        out.append((reader.line_num, row))
    return out, delim


def _file_order(text):
    """HEADER's columns as the file's first row orders them (to append rows as the TA laid the file out)."""
    first = next(csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text)), [])
    return _header_order(first) or list(range(len(HEADER)))


def _manual_ids(spec):
    return [str(q["id"]) for q in spec.get("questions") or [] if q.get("manual")]


def _clean_id(cell):
    cell = cell.strip()
    return cell[1:] if cell.startswith("'") else cell  # as grades.csv writes an id starting with '=' or '-'


def ensure_rows(path, ids, spec, extra=()):
    """Create manual.csv, or append the rows it lacks (id x manual question), atomically.

    Rows already there are kept byte for byte; `extra` rows ([id, question,
    points, comment]) are appended after them. Returns the number of rows added.
    """
    text, bom = _read_text(path)
    have = set()
    delim = ","
    if text is not None:
        rows, delim = _rows(text)
        have = {(_clean_id(r[0]), r[1].strip()) for _, r in rows if len(r) >= 2}
    # an id is there as written (checker.records.csvfile.cell: `'=x`, a control character escaped) or as typed
    missing = [(sid, qid) for sid in sorted(ids) for qid in _manual_ids(spec)
               if (sid, qid) not in have and (_clean_id(cell(sid)), qid) not in have]
    if text is not None and not missing and not extra:
        return 0
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
    # every cell through checker.records.csvfile.cell, as in every CSV file hwcheck writes
    write_text_atomic(path, text + csv_text(new, delimiter=delim), encoding="utf-8-sig" if bom else "utf-8")
    return len(missing) + len(extra)


def typed_into_gradebook(gradebook_text, spec, entries, written=None, earlier=None, said=None):
    """[[id, question, points, comment]] of grades typed by hand into grades.csv that manual.csv does not hold:
    to be appended there. A manual question's cell (hwcheck writes it empty while pending) is a grade; with
    `written`, the grades.csv hwcheck would write now (what the TA edited), an automatic question's cell whose
    number differs from it is an override (an appeal: `Q1` 22.78 made 30), and a `total` that differs from it
    is an `adjustment` row: the total typed minus what the row's own question cells and manual.csv's
    adjustments add up to (90 made 85, a late penalty: -5), so that the row comes to the total typed.

    `earlier`: {id: {column: [cells hwcheck wrote there before]}} (`checker.records.outputs.WrittenCells`). A
    cell equal to one of them is no grade typed: it is hwcheck's own value of an older grades.csv, saved back by
    a spreadsheet that had the file open across a regrade (a resubmission, a changed spec.toml); those cells
    are named in one line of `said`, not moved. Only a value hwcheck never wrote in that row's cell is typed.
    `said`: a list the TA's lines are appended to (those cells; a total typed that is no number, or beside a
    cell that is none, which cannot be moved).

    `gradebook_text` is read as a spreadsheet saved it (decoded by `decode_csv`): its separator found as
    manual.csv's is (`;` with decimal commas, `8,5` is 8.5, or a tab); a number is moved as the number it is."""
    qids = _manual_ids(spec)
    auto = [str(q["id"]) for q in spec.get("questions") or [] if not q.get("manual")]
    ours = {}
    if written is not None:
        ours = {_clean_id(r.get("id") or ""): r for r in csv.DictReader(io.StringIO(written, newline=""))}
    earlier = earlier or {}
    said = [] if said is None else said
    delim = _delimiter(gradebook_text)

    def number(cell, sep):
        try:
            return _number(cell, sep)
        except ValueError:
            return None

    def hwchecks(sid, column, cell):
        """Whether `cell` is a value hwcheck wrote in this row's column before (the same number, or text)."""
        x = number(cell, delim)
        for old in (earlier.get(sid) or {}).get(column) or []:
            y = number(old, ",")
            if (x is not None and y is not None and abs(x - y) <= 5e-5) or (x is None and old.strip() == cell):
                return True
        return False

    out, stale = [], []
    for row in csv.DictReader(io.StringIO(gradebook_text, newline=""), delimiter=delim):
        row = {(k or "").strip(): v for k, v in row.items() if isinstance(v, str)}
        sid = _clean_id(row.get("id") or "")
        graded = {r["question"] for r in entries.get(sid, []) if r["points"] is not None}
        mine = ours.get(sid)
        for qid in qids:
            cell = (row.get(qid) or "").strip()
            if not (sid and cell and qid not in graded):
                continue
            if mine is not None and (mine.get(qid) or "").strip() == cell:
                continue  # as hwcheck writes it now (a grade of manual.csv's row that was deleted since)
            if hwchecks(sid, qid, cell):
                stale.append(f"{sid} {qid} {cell}")
                continue
            x = number(cell, delim)
            out.append([sid, qid, cell if x is None else _num(x), "typed into grades.csv"])
        for qid in auto if mine is not None else ():
            cell = (row.get(qid) or "").strip()
            x, was = number(cell, delim), number((mine.get(qid) or "").strip(), ",")
            if x is not None and (was is None or abs(x - was) > 5e-5) and qid not in graded:
                if hwchecks(sid, qid, cell):
                    stale.append(f"{sid} {qid} {cell}")
                else:
                    out.append([sid, qid, _num(x), "typed into grades.csv"])
        if mine is not None and sid:
            moved = _typed_total(sid, row, mine, spec, delim, hwchecks, stale, said)
            if moved:
                out.append(moved)
    if stale:
        shown = "; ".join(stale[:5]) + (f"; and {len(stale) - 5} more" if len(stale) > 5 else "")
        said.append(f"grades.csv: {len(stale)} cell{'s' if len(stale) > 1 else ''} ({shown}) "
                    f"{'hold' if len(stale) > 1 else 'holds'} what hwcheck wrote there before a regrade, not what it "
                    f"writes now (the file was open in a spreadsheet across the regrade, which saved the old values "
                    f"back): not taken for grades typed, so the new grades stand; a grade you meant to give there "
                    f"goes in {MANUAL_CSV}")
    return out


def _typed_total(sid, row, mine, spec, delim, hwchecks, stale, said):
    """The `adjustment` row [id, "adjustment", points, comment] of a total typed into grades.csv's row (see
    `typed_into_gradebook`), None when the total is hwcheck's (now or earlier); a total that cannot be moved is
    said in `said`."""
    cell = (row.get("total") or "").strip()
    now = (mine.get("total") or "").strip()
    try:
        x = _number(cell, delim) if cell else None
    except ValueError:
        x = None
    try:
        was = _number(now, ",") if now else None
    except ValueError:
        was = None
    if not cell or cell == now or (x is not None and was is not None and abs(x - was) <= 5e-5):
        return None
    if hwchecks(sid, "total", cell):
        stale.append(f"{sid} total {cell}")
        return None
    # what the row's own cells add up to: hwcheck's total now, moved by each cell of the row that differs from
    # what hwcheck writes now (a grade typed beside the total, or a spreadsheet's older cell)
    base, odd = was, []
    for q in spec.get("questions") or []:
        qid = str(q["id"])
        qcell, qnow = (row.get(qid) or "").strip(), (mine.get(qid) or "").strip()
        try:
            base = None if base is None else base + (_number(qcell, delim) if qcell else 0.0) - \
                (_number(qnow, ",") if qnow else 0.0)
        except ValueError:
            odd.append(f"{qid} {qcell!r}")
    if x is None or odd or base is None:
        why = ("it is no number" if x is None or base is None else
               f"the row's {', '.join(odd)} {'is' if len(odd) == 1 else 'are'} no number, so the difference cannot "
               f"be told")
        said.append(f"grades.csv: the total {cell!r} typed for {sid} is not kept ({why}; hwcheck rewrites "
                    f"grades.csv, whose total it adds up): write the points to add or take off as a row "
                    f"`{sid},{ADJUSTMENT},-5,why` in {MANUAL_CSV}")
        return None
    points = _num(x - base)
    if abs(points) <= 5e-5:
        return None  # the total of the row's own cells (updated by hand beside a grade typed in that row)
    return [sid, ADJUSTMENT, points, f"{_TOTAL_TYPED}{_num(x)}, where the row added up to {_num(base)}"]


_TOTAL_TYPED = "total typed into grades.csv: "


def moved_line(row, known=True):
    """The TA's line for a row of `typed_into_gradebook` appended to manual.csv; known: its id is a graded one."""
    sid, qid, points, comment = row
    if not known:
        return (f"grades.csv: {sid} {qid} = {points} was typed into grades.csv in a row whose id is no graded "
                f"submission's: moved to {MANUAL_CSV}, where you can correct its id (its line is said below)")
    if qid == ADJUSTMENT and str(comment).startswith(_TOTAL_TYPED):
        typed, _, base = str(comment)[len(_TOTAL_TYPED):].partition(", where the row added up to ")
        return (f"grades.csv: {sid}'s total was changed to {typed} in grades.csv, which hwcheck rewrites (its "
                f"questions and adjustments add up to {base}): moved to {MANUAL_CSV} as an adjustment of "
                f"{points:+g}, where grades are kept")
    return (f"grades.csv: {sid} {qid} = {points} was typed into grades.csv, which hwcheck rewrites: moved to "
            f"{MANUAL_CSV}, where grades are kept")


def _match_id(typed, ids, keys):
    """(id, None) for a row whose id is a graded id in its canonical form (`checker.records.ids`: NFC, no spaces,
    quotes or invisible characters at its ends); else (None, why). Exact or else nothing: a row that matches
    an id only in another letter case or Unicode form (`JDOE` beside `jdoe`) gives no one its grade."""
    from checker.records.ids import canonical, key
    from checker.render.escape import for_csv_cell
    if canonical(typed) in ids:
        return canonical(typed), None
    if not keys:
        for sid in ids:
            keys.setdefault(key(sid), []).append(sid)
            # as every CSV file hwcheck writes shows it (grades.csv, this file's own rows): an invisible or control
            # character of the file name as its escape (`zw\u200bspace`), a formula's start defused
            written = for_csv_cell(sid)
            if written != sid:
                keys.setdefault(("written", written), []).append(sid)
                keys.setdefault(("written", written[1:] if written.startswith("'") else "'" + written), []).append(sid)
    shown = keys.get(("written", typed.strip()), [])
    if len(shown) == 1:
        return shown[0], None
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
    return None, f"no submission {typed!r} was graded into this folder"


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


def _number(cell, delim):
    # `'-5`: a negative number as every CSV file hwcheck writes a cell starting with '-' (csvfile.cell)
    s = _clean_id(cell).replace("\u2212", "-")
    if delim != "," and s.count(",") == 1 and "." not in s:  # a decimal comma, where `,` separates no cells
        s = s.replace(",", ".")
    x = float(s)
    if not math.isfinite(x):
        raise ValueError(s)
    return x


def read_manual(path, spec, ids=None):
    """(entries, problems) of manual.csv: entries {id: [row dict]}, problems [text] naming the line.

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
    entries, problems, seen = {}, [], set()
    name = os.path.basename(path)
    lacking = [h for h in missing_columns(text) if h != "comment"]
    if lacking:
        problems.append(f"{name} line 1: the header names no {' or '.join(map(repr, lacking))} column, so no row "
                        f"has one: name the columns {', '.join(HEADER)} (in any order) in its first row")
    limit = adjustment_limit(spec)
    keys = {}  # an id's `checker.records.ids.key` -> ids, filled when a row names no id exactly
    for line, row in rows:
        row = row + [""] * (4 - len(row))
        sid, qid, points = _clean_id(row[0]), row[1].strip(), row[2]
        comment = delim.join(row[3:]).strip()  # an unquoted separator in a comment keeps the comment whole
        where = f"{name} line {line}"
        if not sid:
            problems.append(f"{where}: no id: ignored")
            continue
        if ids is not None and sid not in ids:
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
            problems.append(f"{where}: question {qid!r} is neither a question of {spec.get('id')} "
                            f"({', '.join(questions)}) nor {ADJUSTMENT!r}: ignored")
            continue
        value = None
        if points.strip():
            try:
                value = _number(points, delim)
            except ValueError:
                problems.append(f"{where}: points {points.strip()!r} is not a number: ignored")
                continue
            if top is not None and not 0 <= value <= top:
                problems.append(f"{where}: {qid} is worth 0 to {top:g} points, not {_shown(value)}: ignored")
                continue
            if top is None and not -limit <= value <= limit:
                problems.append(f"{where}: an adjustment is at most {limit:g} points either way ({ADJUSTMENT_TIMES} "
                                f"times the assignment's total), not {_shown(value)}: ignored; write the points "
                                f"to add or take off, such as -5")
                continue
        else:  # a placeholder: a manual question still pending (a later row of it with points counts)
            if kind != "manual" and comment:
                problems.append(f"{where}: a {kind} row without points: ignored")
            continue
        if kind != "adjustment":
            if (sid, qid) in seen:
                problems.append(f"{where}: a second row for {sid} {qid}: ignored (the first one counts)")
                continue
            seen.add((sid, qid))
        entries.setdefault(sid, []).append({"question": qid, "points": value, "comment": comment,
                                            "line": line, "kind": kind})
    return entries, problems


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
            if row["comment"]:
                q["manual_comment"] = row["comment"]
    total = sum(float(q.get("score") or 0) for q in card.get("questions") or []
                if not q.get("manual") or not q.get("pending", True))
    card["score"] = _num(total + adjust)
    card["manual_grades"] = applied
    return card


def describe(card):
    """A short text of the manual rows applied to a merged card (for grades.csv's note and results.json)."""
    parts = []
    for row in card.get("manual_grades") or []:
        pts = f"{row['points']:+g}" if row["kind"] == "adjustment" else f"{row['points']:g}"
        what = {"manual": f"{row['question']} {pts}",
                "override": f"{row['question']} regraded {row.get('was')}->{pts}",
                "adjustment": f"adjustment {pts}"}[row["kind"]]
        parts.append(what + (f" ({row['comment']})" if row["comment"] else ""))
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
