"""The instructor's gradebook: one CSV row per scorecard.

What it is for: `csv_header(spec)` and `csv_row(scorecard)` give the columns
`id, student, student_id, total, <one per question id, spec order>, max_total,
status, mode, note` (student, student_id: who handed the submission in, as the
LMS export or the roster says (`checker.records.lms`, `checker.records.roster`), NFC-normalised;
empty when nothing says; mode: the tests run, "hidden" or "public"; note: what
the batch says of the row, such as a submission no longer in the folder graded);
`write_gradebook(path, scorecards, spec, notes, people)` writes them (stdlib `csv`,
UTF-8 with a byte order mark so that Excel reads students' accented names
right, CRLF rows as spreadsheets expect) atomically, rows sorted by
submission id. Python reads it with `encoding="utf-8-sig"`.
A manual question that is still pending has an empty cell (to fill in by
hand); `total` is the automatic score. Every cell goes through
`checker.records.csvfile` (submission ids come from students' file names, answers
from their notebooks): one that a spreadsheet would read as a formula is
prefixed with `'`, and control characters (ESC, BEL, bidi overrides) are
shown as escapes.
`answers_text` / `write_answers` give the TA the written answers to the
questions graded by a person in one CSV (`id`, one column per such question;
empty where none was found), to grade beside the gradebook.
What it is not: a reader of the CSV or a merger of hand-entered grades.
"""

from __future__ import annotations

import unicodedata

from checker.records.atomic import write_text_atomic
from checker.records.csvfile import cell, csv_text

__all__ = ["csv_header", "csv_row", "write_gradebook", "gradebook_text", "answers_text", "write_answers"]


def _points(x):
    if x is None or x == "":
        return ""
    x = round(float(x), 4)
    return int(x) if x == int(x) else x


def csv_header(spec):
    """Column names: id, student, student_id, total, each question id in spec order, max_total, status, mode, note."""
    return ["id", "student", "student_id", "total", *[str(q["id"]) for q in spec.get("questions") or []],
            "max_total", "status", "mode", "note"]


def csv_row(scorecard, spec=None, note="", person=None):
    """The row of one scorecard (numbers as int/float, pending manual cells empty).

    Question columns follow `spec`'s order when given (a question the
    scorecard lacks gets an empty cell), else the scorecard's own order.
    person: {student, student_id} of the submission (None: empty cells).
    """
    by_id = {}
    for q in scorecard.get("questions") or []:
        by_id[str(q["id"])] = "" if q.get("manual") and q.get("pending", True) \
            else _points(q.get("score"))
    order = csv_header(spec)[4:-4] if spec is not None else list(by_id)
    submission = scorecard.get("submission") or {}
    person = person or {}
    return [cell(v) for v in [  # as written (checker.records.csvfile.cell), so a caller sees the cells of the file
        str(submission.get("id", "")),
        unicodedata.normalize("NFC", str(person.get("student") or "")),
        unicodedata.normalize("NFC", str(person.get("student_id") or "")),
        _points(scorecard.get("score")),
        *[by_id.get(qid, "") for qid in order],
        _points(scorecard.get("max_score")),
        str(scorecard.get("status", "")),
        str((scorecard.get("grader") or {}).get("mode", "")),
        str(note or ""),
    ]]


def _sid(sc):
    return str((sc.get("submission") or {}).get("id", ""))


def gradebook_text(scorecards, spec, notes=None, people=None):
    """The CSV text of the gradebook (header, then rows sorted by submission id); notes: {id: text};
    people: {id: {student, student_id}}."""
    notes, people = notes or {}, people or {}
    ordered = sorted(scorecards, key=_sid)
    rows = [csv_row(sc, spec, notes.get(_sid(sc), ""), people.get(_sid(sc))) for sc in ordered]
    return csv_text([csv_header(spec), *rows])  # every cell through checker.records.csvfile.cell


def write_gradebook(path, scorecards, spec, notes=None, people=None):
    """Write the gradebook CSV at `path` atomically (UTF-8 with a BOM); returns the path."""
    return write_text_atomic(path, gradebook_text(scorecards, spec, notes, people), encoding="utf-8-sig")


def _manual_ids(spec):
    return [str(q["id"]) for q in spec.get("questions") or [] if q.get("manual")]


def answers_text(scorecards, spec):
    """The CSV text of the written answers: id, then one column per manual question (spec order)."""
    qids = _manual_ids(spec)
    rows = [["id", *qids]]
    for sc in sorted(scorecards, key=lambda sc: str((sc.get("submission") or {}).get("id", ""))):
        found = {str(q.get("id")): q.get("answer") or "" for q in sc.get("questions") or [] if q.get("manual")}
        rows.append([str((sc.get("submission") or {}).get("id", "")), *[str(found.get(qid, "")) for qid in qids]])
    return csv_text(rows)


def write_answers(path, scorecards, spec):
    """Write the answers CSV at `path` atomically when the spec has manual questions; returns the path or None."""
    if not _manual_ids(spec):
        return None
    return write_text_atomic(path, answers_text(scorecards, spec), encoding="utf-8-sig")
