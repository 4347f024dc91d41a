"""Which students' totals a batch moved, said in its summary and kept in OUT/grades-moved.csv.

What it is for: after a regrade (a weight or the points of a question changed in spec.toml, a test fixed, a
resubmission, a new seed), the grades already uploaded to the LMS may be wrong; the TA needs to know whose total
went up or down (h102). `totals_written(book)` takes, before the batch, the `total` cells of the grades.csv
hwcheck wrote last (`checker.records.kept.WrittenCells`: with manual.csv merged, as the TA exported them);
`moved(before, book)` compares them with those of the grades.csv the batch wrote last; `moved_lines(moved)` is
the summary's line (a short list, capped with a count) and `keep(outdir, moved)` appends the whole list to
OUT/grades-moved.csv (`when, id, student, was, now`: hwcheck's own file, UTF-8 with a byte order mark, for Excel),
so the list outlives the terminal.

What it is not: the gradebook (`checker.records.outputs`), a diff of questions or notes, or a judge of which
change is right: a total typed into grades.csv and moved into manual.csv moves a total too, and is listed.
"""

from __future__ import annotations

import datetime

from checker.records import owned
from checker.records.csvfile import csv_text

__all__ = ["totals_written", "moved", "moved_lines", "keep", "MOVED_CSV", "SHOWN"]

MOVED_CSV = "grades-moved.csv"
SHOWN = 8  # students named in the summary's line, then a count
HEADER = ["when", "id", "student", "was", "now"]


def _number(text):
    try:
        return float(str(text).strip().replace(",", "."))
    except (TypeError, ValueError):
        return None


def totals_written(book):
    """{id: total cell} of the grades.csv hwcheck wrote last into the Gradebook `book`'s OUT ({} when none)."""
    return {sid: cols.get("total") for sid, cols in book.cells.last.items() if isinstance(cols.get("total"), str)}


def moved(before, book):
    """[(id, student, was, now)] of the ids whose total in the grades.csv `book` wrote last differs from `before`
    (`totals_written` taken before the batch), by id; an id graded for the first time is none."""
    after = totals_written(book)
    people = getattr(book, "people", None) or {}
    out = []
    for sid in sorted(set(before) & set(after)):
        was, now = _number(before[sid]), _number(after[sid])
        if was is None and now is None or was is not None and now is not None and abs(was - now) < 1e-9:
            continue
        person = people.get(sid) if isinstance(people.get(sid), dict) else {}
        out.append((sid, str(person.get("student") or ""), before[sid], after[sid]))
    return out


def moved_lines(changes, where=None):
    """The summary's line naming whose total moved, `was -> now` (at most SHOWN, then a count); [] for none."""
    if not changes:
        return []
    shown = ", ".join(f"{sid} {was or '-'} -> {now or '-'}" for sid, _, was, now in changes[:SHOWN])
    more = f" and {len(changes) - SHOWN} more" if len(changes) > SHOWN else ""
    down = sum(1 for _, _, was, now in changes if (_number(now) or 0) < (_number(was) or 0))
    kept = f" (all listed in {where})" if where else ""
    return [f"  totals moved since grades.csv was written last: {len(changes)} student"
            f"{'s' if len(changes) != 1 else ''} ({down} down, {len(changes) - down} up): {shown}{more}{kept}; "
            f"upload the grades again where the LMS holds the old ones"]


def keep(outdir, changes):
    """Append `changes` to OUT/grades-moved.csv (written whole, atomically); its path, or None when nothing moved
    or it cannot be written (the summary's line still says them)."""
    if not changes:
        return None
    earlier = owned.read_bytes(outdir, MOVED_CSV, "moved")
    text = earlier.decode("utf-8-sig", "replace") if earlier is not None else ""
    when = datetime.datetime.now().astimezone().isoformat(timespec="seconds")
    rows = [] if text.strip() else [HEADER]
    rows += [[when, sid, student, _cell(was), _cell(now)] for sid, student, was, now in changes]
    try:
        return owned.write_text(outdir, MOVED_CSV, text + csv_text(rows), kind="moved", encoding="utf-8-sig")
    except OSError:
        return None


def _cell(text):
    number = _number(text)
    return (int(number) if number == int(number) else number) if number is not None else (text or "")
