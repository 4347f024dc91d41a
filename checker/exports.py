"""The gradebook in the forms LMSs import: a Canvas gradebook CSV and a Moodle grading worksheet.

What it is for: OUTDIR/canvas.csv and OUTDIR/moodle.csv, written by `hwcheck grade` when the
folder graded is a Canvas or Moodle export (or a roster exported from one gave the LMS's ids),
and again by `hwcheck export OUTDIR` after the TA's manual grades (manual.csv is merged: the
totals are grades.csv's). The formats:
- Canvas ("How do I import grades in the Gradebook?", Canvas Instructor Guide): the columns
  `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per assignment titled
  `Name (assignment_id)` as Canvas's own gradebook export titles it; a second row
  `Points Possible` gives the assignment's points. Canvas matches students by `ID` (the
  Canvas user id, which the "Download Submissions" file names carry); a column whose title
  names no assignment of the course is offered as a new assignment. The title is the TA's
  `--canvas TITLE` (copy it from Canvas's export), else the assignment's id (`attention`).
- Moodle ("Offline grading worksheet", Moodle docs, Assignment settings / Using
  Assignment): the columns `Identifier, Full name, Email address, Status, Grade,
  Maximum Grade, Grade can be changed, Last modified (submission), Last modified (grade),
  Feedback comments`; Moodle matches rows by `Identifier`, `Participant <participant id>`
  (the id the "Download all submissions" names carry). The dates are left empty (hwcheck
  does not know them), so Moodle's "update records modified more recently" check does not
  stop the upload.
A submission hwcheck could not grade (an internal error) gets an empty grade, never 0.

What it is not: grades.csv (`checker.gradebook`) or the reading of the LMS's folders (`checker.lms`).
"""

from __future__ import annotations

import csv
import io
import os

from .atomic import write_text_atomic
from .escape import for_csv_cell

__all__ = ["CANVAS_COLUMNS", "MOODLE_COLUMNS", "canvas_text", "moodle_text", "write_exports"]

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)", "Feedback comments"]


def _points(x):
    if x is None or x == "":
        return ""
    x = round(float(x), 2)
    return str(int(x)) if x == int(x) else f"{x:g}"


def _grade(card):
    if (card.get("grader") or {}).get("internal_error"):
        return ""
    return _points(card.get("score"))


def _text(rows):
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    return buffer.getvalue()


def _sid(card):
    return str((card.get("submission") or {}).get("id", ""))


def canvas_text(cards, people, title, points_possible):
    """Canvas's gradebook CSV: one row per submission whose student has a Canvas user id."""
    rows = [CANVAS_COLUMNS + [title], ["Points Possible", "", "", "", "", _points(points_possible)]]
    for card in sorted(cards, key=_sid):
        person = people.get(_sid(card)) or {}
        if not person.get("canvas_user_id"):
            continue
        rows.append([for_csv_cell(person.get("student", "")), str(person["canvas_user_id"]),
                     for_csv_cell(person.get("sis_user_id", "")), for_csv_cell(person.get("sis_login_id", "")),
                     for_csv_cell(person.get("section", "")), _grade(card)])
    return _text(rows)


def moodle_text(cards, people):
    """Moodle's grading worksheet: one row per submission whose student has a Moodle participant id."""
    rows = [MOODLE_COLUMNS]
    for card in sorted(cards, key=_sid):
        person = people.get(_sid(card)) or {}
        if not person.get("moodle_participant"):
            continue
        rows.append([f"Participant {person['moodle_participant']}", for_csv_cell(person.get("student", "")),
                     for_csv_cell(person.get("email", "")), "", _grade(card), _points(card.get("max_score")),
                     "Yes", "", "", ""])
    return _text(rows)


def write_exports(outdir, assignment, canvas_title=None):
    """Write OUTDIR/canvas.csv and/or OUTDIR/moodle.csv for the students who have those LMSs' ids.

    Returns [(path, rows written, submissions left out)]; nothing when no student has such an id.
    """
    from .batch import collect_scorecards
    from .lms import read_students
    from .outputs import Gradebook
    from .spec import load_spec
    spec = load_spec(assignment)
    known = read_students(outdir)
    people = known.get("students") if isinstance(known.get("students"), dict) else {}
    book = Gradebook(outdir, spec, collect_scorecards(outdir, assignment), list(people))
    cards, _ = book.merged()
    cards = [c for c in cards if _sid(c) in people]
    written = []
    maximum = next((c.get("max_score") for c in cards if c.get("max_score") is not None), None)
    for key, name in (("canvas_user_id", "canvas.csv"), ("moodle_participant", "moodle.csv")):
        having = [c for c in cards if (people.get(_sid(c)) or {}).get(key)]
        if not having:
            continue
        text = (canvas_text(cards, people, canvas_title or assignment, maximum)
                if name == "canvas.csv" else moodle_text(cards, people))
        path = os.path.join(outdir, name)
        write_text_atomic(path, text, encoding="utf-8")
        written.append((path, len(having), len(cards) - len(having)))
    return written
