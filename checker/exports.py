"""The gradebook in the forms LMSs import: a Canvas gradebook CSV and a Moodle grading worksheet.

What it is for: OUTDIR/canvas.csv and OUTDIR/moodle.csv, written by `hwcheck grade` when the
folder graded is a Canvas or Moodle export (or a roster exported from one gave the LMS's ids),
and again by `hwcheck export OUTDIR` after the TA's manual grades (manual.csv is merged: the
totals are grades.csv's). The formats:
- Canvas: the columns `Student, ID, SIS User ID, SIS Login ID, Section`, then one column per
  assignment titled `Name (assignment_id)` as Canvas's own gradebook export titles it, and a
  second row `Points Possible`. As Canvas's importer reads them (canvas-lms
  app/models/gradebook_importer.rb): the header must start `Student`, `ID` and its student
  columns end at `Section` (`SIS User ID` then `SIS Login ID` between them); a student is found
  by `ID` (the Canvas user id, which the "Download Submissions" names carry), else by the SIS
  ids, else by name; an assignment by the id in `Title (id)`, else by its title, else it is
  offered as a new assignment; a row whose first cell holds `Points Possible` gives points.
  A blank cell replaces a grade already in Canvas with none, so a submission hwcheck could not
  grade (an internal error) is left out of canvas.csv, never written blank. The title is the
  TA's `--canvas TITLE` (copy it from Canvas's export), else the assignment's id (`attention`).
  Anonymous submissions (`anon_...`) carry no user id: Canvas does not import grades of an
  anonymous assignment before they are posted, so they are only in grades.csv.
- Moodle, the assignment's "Upload grading worksheet" (mod/assign/feedback/offline,
  importgradeslib.php and locallib.php): the importer finds its columns by their names in the
  site's language (English here): `Identifier` (`Participant <participant id>`, the id the
  "Download all submissions" names carry), `Grade` and `Last modified (grade)`; the other
  columns of the worksheet it downloads (`Full name`, `Email address`, `Status`, `Maximum
  Grade`, `Grade can be changed`, `Last modified (submission)`) are for the reader. It skips a
  row whose grade is empty, above the assignment's maximum grade, unchanged, or older than
  the grade Moodle holds (`Last modified (grade)` more than a minute before the grade's own
  time, unless the TA ticks "Allow updating records that have been modified more recently in
  Moodle than in the spreadsheet"): hwcheck writes the time of the export there (ISO 8601,
  UTC), so a grade a TA changes in Moodle after the export is kept. A `Feedback comments`
  column, when present, replaces every student's comment (a blank one too), so hwcheck writes
  none: comments typed in Moodle stay.
In moodle.csv a submission hwcheck could not grade (an internal error) gets an empty grade, never 0.

What it is not: grades.csv (`checker.gradebook`) or the reading of the LMS's folders (`checker.lms`).
"""

from __future__ import annotations

import datetime

from . import owned
from .csvfile import csv_text

__all__ = ["CANVAS_COLUMNS", "MOODLE_COLUMNS", "canvas_text", "moodle_text", "write_exports"]

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)"]


def _points(x):
    """A grade as a number (a negative one stays a number: checker.csvfile neutralises text, not numbers)."""
    if x is None or x == "":
        return ""
    x = round(float(x), 2)
    return int(x) if x == int(x) else x


def _grade(card):
    if (card.get("grader") or {}).get("internal_error"):
        return ""
    return _points(card.get("score"))


def _text(rows):
    return csv_text(rows)  # every cell through checker.csvfile.cell


def _sid(card):
    return str((card.get("submission") or {}).get("id", ""))


def _in_canvas(card, person):
    """A row of canvas.csv: a Canvas user id (not anonymous), and graded (a blank cell erases Canvas's grade)."""
    return bool(person.get("canvas_user_id")) and _grade(card) != ""


def canvas_text(cards, people, title, points_possible):
    """Canvas's gradebook CSV: one row per submission whose student has a Canvas user id."""
    rows = [CANVAS_COLUMNS + [title], ["Points Possible", "", "", "", "", _points(points_possible)]]
    for card in sorted(cards, key=_sid):
        person = people.get(_sid(card)) or {}
        if not _in_canvas(card, person):
            continue
        rows.append([person.get("student", ""), str(person["canvas_user_id"]), person.get("sis_user_id", ""),
                     person.get("sis_login_id", ""), person.get("section", ""), _grade(card)])
    return _text(rows)


def moodle_text(cards, people, modified):
    """Moodle's grading worksheet: one row per submission whose student has a Moodle participant id.

    `modified` is the text of `Last modified (grade)` (the time of the export).
    """
    rows = [MOODLE_COLUMNS]
    for card in sorted(cards, key=_sid):
        person = people.get(_sid(card)) or {}
        if not person.get("moodle_participant"):
            continue
        rows.append([f"Participant {person['moodle_participant']}", person.get("student", ""),
                     person.get("email", ""), "", _grade(card), _points(card.get("max_score")),
                     "Yes", "", modified])
    return _text(rows)


def write_exports(outdir, assignment, canvas_title=None, now=None):
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
    now = now or datetime.datetime.now(datetime.timezone.utc)
    modified = now.astimezone(datetime.timezone.utc).isoformat(timespec="seconds")
    maximum = next((c.get("max_score") for c in cards if c.get("max_score") is not None), None)
    for key, name in (("canvas_user_id", "canvas.csv"), ("moodle_participant", "moodle.csv")):
        wanted = _in_canvas if name == "canvas.csv" else (lambda c, person: bool(person.get(key)))
        having = [c for c in cards if wanted(c, people.get(_sid(c)) or {})]
        if not having:
            continue
        text = (canvas_text(cards, people, canvas_title or assignment, maximum)
                if name == "canvas.csv" else moodle_text(cards, people, modified))
        path = owned.write_text(outdir, name, text, kind="export")  # beside a student's file of that name
        written.append((path, len(having), len(cards) - len(having)))
    return written
