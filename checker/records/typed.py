"""Grades typed into grades.csv by hand: found, and moved into manual.csv (`checker.records.manual`).

What it is for: `hwcheck grade --resume` and `hwcheck export` rewrite grades.csv, so a grade a TA typed there
would be lost. `typed_into_gradebook(...)` finds them: a question's cell that manual.csv does not hold yet
(a row to append there), a `total` changed (the `adjustment` of the difference), and a cell changed where
manual.csv already holds a grade for it (a manual question's grade given again, an override of an appeal
changed: the TA's latest word, which replaces the points of that row, its comment kept). Never a cell holding
a value hwcheck itself wrote in that row before (a spreadsheet open across a regrade saves its old cells
back; `checker.records.kept.WrittenCells` keeps them). `moved_line(row)` and `changed_line(change)` say
each, naming the student, the question and the values.

What it is not: the reader or writer of manual.csv (`checker.records.manual`) or of grades.csv
(`checker.records.outputs`).
"""

from __future__ import annotations

import csv
import io

from checker.records.manual import (ADJUSTMENT, MANUAL_CSV, TOTAL_TYPED, TYPED, _clean_id, _delimiter, _fill_keys,
                                    _lossy_fits, _manual_ids, _num, _number)
from checker.records.manual_read import repeated_ids

__all__ = ["typed_into_gradebook", "moved_line", "changed_line"]

# TYPED: the comment of a grade moved from grades.csv with no note typed beside it; a total's, TOTAL_TYPED ...:
# hwcheck's bookkeeping, which the TA sees and a student does not (`checker.records.manual.student_comment`)


def typed_into_gradebook(gradebook_text, spec, entries, written=None, earlier=None, said=None, changed=None,
                         carried=None, last=None, regraded=None):
    """[[id, question, points, comment]] of grades typed by hand into grades.csv that manual.csv does not hold:
    to be appended there. A manual question's cell (hwcheck writes it empty while pending) is a grade; with
    `written`, the grades.csv hwcheck would write now (what the TA edited), an automatic question's cell whose
    number differs from it is an override (an appeal: `Q1` 22.78 made 30), and a `total` that differs from it
    is an `adjustment` row: the total typed minus what the row's own question cells and manual.csv's
    adjustments add up to (90 made 85, a late penalty: -5), so that the row comes to the total typed.

    `earlier`: {id: {column: [cells hwcheck wrote there before]}} (`checker.records.kept.WrittenCells`). A
    cell equal to one of them is no grade typed: it is hwcheck's own value of an older grades.csv, saved back by
    a spreadsheet that had the file open across a regrade (a resubmission, a changed spec.toml); those cells
    are named in one line of `said`, not moved. Only a value hwcheck never wrote in that row's cell is typed.
    `said`: a list the TA's lines are appended to (those cells; a total typed that is no number, or beside a
    cell that is none, which cannot be moved).

    `changed`: a list that gets {id, question, old, new, line, comment} for each cell whose question manual.csv
    already grades (`entries`: `read_manual`'s, a manual question graded, or an automatic one overridden) where
    grades.csv holds another number than that grade, which hwcheck wrote there (with `written`): the TA's latest
    word, for `checker.records.manual.replace_points` to put in that row (line). A number out of the question's
    range, or a cell that is no number, is said and not taken. Without `changed`, such cells are left as before.

    `last`: {id: {column: cell}} of the grades.csv hwcheck wrote last, for the ids whose scorecard is the same
    since: a cell as it was written there is no grade typed and is not said (what hwcheck writes now differs
    because manual.csv changed since, not because of a regrade). `regraded`: the ids whose scorecard changed
    since hwcheck last wrote grades.csv; only for those is an earlier cell said to be from before a regrade.

    `carried`: a set that gets the ids whose note cell, typed beside a grade moved, is that grade's comment in
    manual.csv (a note typed into the cell, or added after hwcheck's own note there: `_note_typed`); the rows
    moved of an id carry it as their comment, else "typed into grades.csv".

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

    last, regraded = last or {}, set(regraded or ())
    quiet, old_sids = set(), set()

    def hwchecks(sid, column, cell):
        """Whether `cell` is a value hwcheck wrote in this row's column before (the same number, or text)."""
        x = number(cell, delim)
        mine = (last.get(sid) or {}).get(column)
        if mine is not None:  # as hwcheck wrote it last, from the same scorecard: nothing typed, nothing to say
            y = number(mine, ",")
            if (x is not None and y is not None and abs(x - y) <= 5e-5) or (x is None and mine.strip() == cell):
                quiet.add((sid, column))
                return True
        for old in (earlier.get(sid) or {}).get(column) or []:
            y = number(old, ",")
            if (x is not None and y is not None and abs(x - y) <= 5e-5) or (x is None and old.strip() == cell):
                return True
        return False

    tops = {str(q["id"]): float(q.get("points") or 0) for q in spec.get("questions") or []}
    out, stale = [], []
    carried = set() if carried is None else carried
    # hwcheck writes one row per submission: an id held by two rows is one a spreadsheet saved another row under
    # (`1e5` read as the number 100000 beside 100000's own row), so neither row's cells are anyone's grade
    # Where the id is a lossy form of another graded id (`李小龙` saved as `???`, `0012345` as `12345`, `1e5` as
    # `100000`), what is typed there goes to manual.csv as before, where such a row is no one's grade and names
    # the ids it may be; any other repeated id's rows are not read, and a line names them with what was typed.
    keys = {}
    _fill_keys(keys, [sid for sid in ours if sid])
    twice = {sid: lines for sid, lines in repeated_ids(gradebook_text).items()
             if not (ours and _lossy_fits(sid, list(ours), keys))}
    left = {}
    for row in csv.DictReader(io.StringIO(gradebook_text, newline=""), delimiter=delim):
        row = {(k or "").strip(): v for k, v in row.items() if isinstance(v, str)}
        sid = _clean_id(row.get("id") or "")
        if sid in twice:
            left.setdefault(sid, []).extend(f"{qid} {(row.get(qid) or '').strip()}" for qid in qids
                                            if (row.get(qid) or "").strip())
            continue
        first = len(out)
        given = {r["question"]: r for r in entries.get(sid, []) if r["points"] is not None and r["kind"] != ADJUSTMENT}
        graded = set(given)
        mine = ours.get(sid)
        for qid in sorted(graded) if changed is not None and mine is not None and sid else ():
            cell = (row.get(qid) or "").strip()
            now = (mine.get(qid) or "").strip()
            x, was = number(cell, delim), number(now, ",")
            if not cell or cell == now or (x is not None and was is not None and abs(x - was) <= 5e-5):
                continue  # as hwcheck writes it now, or emptied (a grade is taken back in manual.csv, not here)
            if hwchecks(sid, qid, cell):
                _stale(stale, quiet, old_sids, sid, qid, cell)
                continue
            r = given[qid]
            where = f"{MANUAL_CSV} line {r.get('line')}"
            if x is None or not 0 <= x <= tops.get(qid, 0.0):
                why = "it is no number" if x is None else f"{qid} is worth 0 to {_num(tops.get(qid, 0.0))} points"
                said.append(f"grades.csv: {sid} {qid} was changed from {_num(r['points'])} to {cell!r} in grades.csv, "
                            f"which is not kept ({why}): {where} still gives {_num(r['points'])}; write the grade "
                            f"there")
                continue
            changed.append({"id": sid, "question": qid, "old": _num(r["points"]), "new": _num(x),
                            "line": r.get("line"), "comment": r.get("comment") or ""})
        for qid in qids:
            cell = (row.get(qid) or "").strip()
            if not (sid and cell and qid not in graded):
                continue
            if mine is not None and (mine.get(qid) or "").strip() == cell:
                continue  # as hwcheck writes it now (a grade of manual.csv's row that was deleted since)
            if hwchecks(sid, qid, cell):
                _stale(stale, quiet, old_sids, sid, qid, cell)
                continue
            x = number(cell, delim)
            out.append([sid, qid, cell if x is None else _num(x), TYPED])
        for qid in auto if mine is not None else ():
            cell = (row.get(qid) or "").strip()
            x, was = number(cell, delim), number((mine.get(qid) or "").strip(), ",")
            if x is not None and (was is None or abs(x - was) > 5e-5) and qid not in graded:
                if hwchecks(sid, qid, cell):
                    _stale(stale, quiet, old_sids, sid, qid, cell)
                else:
                    out.append([sid, qid, _num(x), TYPED])
        note = _note_typed(sid, row, mine, earlier, ours) if len(out) > first else ""
        if note:  # the TA's words beside the grades typed: their comment in manual.csv, not lost
            for moved in out[first:]:
                moved[3] = note
            carried.add(sid)
        if mine is not None and sid:
            moved = _typed_total(sid, row, mine, spec, delim, hwchecks,
                                 lambda *cell: _stale(stale, quiet, old_sids, *cell), said)
            if moved:
                out.append(moved)
    for sid, lines in sorted(twice.items()):
        typed = f" (typed there: {', '.join(left[sid])})" if left.get(sid) else ""
        said.append(f"grades.csv: {sid} is the id of {len(lines)} rows (lines {', '.join(map(str, lines))}), where "
                    f"hwcheck wrote one: a spreadsheet saved another row under it (an id it read as a number or a "
                    f"date), so nothing typed in those rows is taken{typed}; correct the id in the wrong row, or "
                    f"write the grades in {MANUAL_CSV}")
    if stale:
        shown = "; ".join(stale[:5]) + (f"; and {len(stale) - 5} more" if len(stale) > 5 else "")
        why = ("before a regrade, not what it writes now (the file was open in a spreadsheet across the regrade, "
               "which saved the old values back)" if old_sids & regraded else
               "in an earlier grades.csv, not what it writes now (the file was open in a spreadsheet while hwcheck "
               "wrote it again, which saved the old values back)")
        said.append(f"grades.csv: {len(stale)} cell{'s' if len(stale) > 1 else ''} ({shown}) "
                    f"{'hold' if len(stale) > 1 else 'holds'} what hwcheck wrote there {why}: not taken for grades "
                    f"typed, so the new grades stand; a grade you meant to give there goes in {MANUAL_CSV}")
    return out


def _stale(stale, quiet, old_sids, sid, column, cell):
    """Keep a cell holding what hwcheck wrote in an earlier grades.csv for the TA's line (not one as it wrote it
    last, `quiet`); returns True (the cell is hwcheck's either way)."""
    if (sid, column) not in quiet:
        stale.append(f"{sid} {column} {cell}")
        old_sids.add(sid)
    return True


def _note_typed(sid, row, mine, earlier, rows):
    """What the TA typed into a row's note cell of grades.csv ('' when nothing): the cell, less hwcheck's own
    note there (now, or one it wrote in that row before) where the TA typed after it. A note hwcheck writes in
    any row (`rows`, {id: row} of the grades.csv it writes now), or wrote in any before, is none of the TA's
    (a row whose id a spreadsheet's save changed carries another row's note)."""
    note = (row.get("note") or "").strip()

    def plain(notes):
        notes = [n[1:] if n.startswith("'") else n for n in (n.strip() for n in notes) if n]
        # as a save in Windows-1252 (Excel's "CSV (Comma delimited)") writes it: `?` for what it cannot hold
        return notes + [n.encode("cp1252", "replace").decode("cp1252") for n in notes]
    ours = plain([(mine or {}).get("note") or ""] + list((earlier.get(sid) or {}).get("note") or []))
    anyone = set(plain([r.get("note") or "" for r in rows.values()] +
                       [n for cols in earlier.values() for n in cols.get("note") or []]))
    if not note or note in ours or note in anyone:
        return ""
    for n in sorted(ours, key=len, reverse=True):
        if note.startswith(n):
            return note[len(n):].strip(" ;,\t")
    return note


def _typed_total(sid, row, mine, spec, delim, hwchecks, stale, said):
    """The `adjustment` row [id, "adjustment", points, comment] of a total typed into grades.csv's row (see
    `typed_into_gradebook`), None when the total is hwcheck's (now or earlier: `stale(id, column, cell)` is told);
    a total that cannot be moved is said in `said`."""
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
        stale(sid, "total", cell)
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


_TOTAL_TYPED = TOTAL_TYPED


def changed_line(change, copy=None):
    """The TA's line for a grade changed in grades.csv where manual.csv already held one (`typed_into_gradebook`'s
    `changed`), after its row was rewritten; copy: where manual.csv as it was is kept."""
    kept = f"; its comment {change['comment']!r} is kept" if change.get("comment") else ""
    was = f" ({MANUAL_CSV} as it was is kept at {copy})" if copy else ""
    return (f"grades.csv: {change['id']} {change['question']} was changed from {change['old']} to {change['new']} "
            f"in grades.csv, which hwcheck rewrites: {MANUAL_CSV} line {change['line']} now gives "
            f"{change['new']} (it gave {change['old']}){kept}{was}")


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
    noted = f", with the note typed beside it ({comment!r}) as its comment" if comment != TYPED else ""
    return (f"grades.csv: {sid} {qid} = {points} was typed into grades.csv, which hwcheck rewrites: moved to "
            f"{MANUAL_CSV}{noted}, where grades are kept")


