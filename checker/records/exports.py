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
  grade (an internal error) is left out of canvas.csv, never written blank. The title
  (`column_title`): the TA's `--canvas TITLE` (`grade` or `export`; copy it from Canvas's
  export), else the one kept from an earlier run, else the column of a roster that is Canvas's
  gradebook export when exactly one fits (`checker.records.roster.canvas_column`), else the
  assignment's id (`attention`), which the import would add as a new assignment (said, with
  how to name the column). The title given or taken is kept in OUT as hwcheck's own file
  `.exports.json` (`checker.records.owned`: a student's file of that name decides nothing), so a later
  `grade --only` or `export` writes the same column; a later `--canvas` replaces it. `grade` keeps a
  `--canvas` title when its batch starts, before any submission is graded (`keep_canvas_title`), so an
  interrupted batch's `--resume` and a later `export` still use it.
  Anonymous submissions (`anon_...`) carry no user id: Canvas does not import grades of an
  anonymous assignment before they are posted, so they are only in grades.csv.
- Moodle, the assignment's "Upload grading worksheet" (mod/assign/feedback/offline,
  importgradeslib.php and locallib.php): the importer finds its columns by their names in the
  site's language (English here): `Identifier` (`Participant <participant id>`, the id the
  "Download all submissions" names carry), `Grade` and `Last modified (grade)`; the other
  columns of the worksheet it downloads (`Full name`, `Email address`, `Status`, `Maximum
  Grade`, `Grade can be changed`, `Last modified (submission)`) are for the reader. It skips a
  row whose grade is empty, below 0 or above the assignment's maximum grade (said to the TA, by student:
  hwcheck writes the grade as it is), unchanged, or older than
  the grade Moodle holds (`Last modified (grade)` more than a minute before the grade's own
  time, unless the TA ticks "Allow updating records that have been modified more recently in
  Moodle than in the spreadsheet"): hwcheck writes the time of the export there (ISO 8601,
  UTC), so a grade a TA changes in Moodle after the export is kept. A `Feedback comments`
  column, when present, replaces every student's comment (a blank one too), so hwcheck writes
  none: comments typed in Moodle stay.
In moodle.csv a submission hwcheck could not grade (an internal error) gets an empty grade, never 0.
`export_lines` writes them and returns the TA's lines: the files written, the column's title and
where it came from, and the submissions whose manual grades are still pending (their totals in the
exports lack those points, `checker.records.manual.pending_line`). Where no LMS file is written (a folder of
no LMS, a plain roster, an anonymous Canvas assignment), `hwcheck export` says them with `pending_export_line`,
over grades.csv's submissions; `canvas_unused_line` warns when a `--canvas` title cannot be used, no student
having a Canvas user id.

What it is not: grades.csv (`checker.records.gradebook`) or the reading of the LMS's folders (`checker.records.lms`).
"""

from __future__ import annotations

import datetime
import os

from checker.records import owned
from checker.records.csvfile import csv_text

__all__ = ["CANVAS_COLUMNS", "MOODLE_COLUMNS", "EXPORTS_JSON", "canvas_text", "moodle_text", "column_title",
           "keep_canvas_title", "write_exports", "export_lines", "canvas_students", "canvas_unused_line",
           "pending_export_line"]

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
EXPORTS_JSON = ".exports.json"  # hwcheck's own record of the Canvas column's title (checker.records.owned)
MOODLE_COLUMNS = ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                  "Grade can be changed", "Last modified (submission)", "Last modified (grade)"]


def _points(x):
    """A grade as a number (a negative one stays a number: checker.records.csvfile neutralises text, not numbers)."""
    if x is None or x == "":
        return ""
    x = round(float(x), 2)
    return int(x) if x == int(x) else x


def _grade(card):
    if (card.get("grader") or {}).get("internal_error"):
        return ""
    return _points(card.get("score"))


def _text(rows):
    return csv_text(rows)  # every cell through checker.records.csvfile.cell


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


def _moodle_out_of_range(cards, maximum):
    """The TA's line about grades Moodle's worksheet import skips, telling only how many it skipped: above the
    assignment's maximum grade (a bonus typed into manual.csv) or below 0 (a penalty): those students keep
    the grade Moodle holds. hwcheck writes the grade as it is; the TA decides."""
    out = [(_sid(c), g) for c in cards for g in [_grade(c)]
           if g != "" and (g < 0 or (maximum is not None and g > _points(maximum)))]
    if not out:
        return []
    shown = ", ".join(f"{sid} ({g})" for sid, g in out[:10]) + (f" and {len(out) - 10} more" if len(out) > 10 else "")
    return [f"warning: Moodle's worksheet import skips a grade above the assignment's maximum ({_points(maximum)}) "
            f"or below 0, saying only how many it skipped: {shown} would keep the grade Moodle holds. Enter those "
            f"in Moodle by hand, or raise the assignment's maximum grade there first"]


def _kept_title(outdir):
    """(title, source) kept in OUT by an earlier run, or (None, None); only hwcheck's own file is read."""
    data = owned.read_json(outdir, EXPORTS_JSON, "exports")
    if isinstance(data, dict) and isinstance(data.get("canvas_title"), str) and data["canvas_title"].strip():
        return data["canvas_title"], str(data.get("source") or "")
    return None, None


def _keep_title(outdir, title, source):
    try:
        owned.write_json(outdir, EXPORTS_JSON, {"canvas_title": title, "source": source}, kind="exports")
    except OSError:
        pass  # canvas.csv is still written with it; the next run is told again


def keep_canvas_title(outdir, title):
    """Keep the TA's `--canvas TITLE` in OUT now (`grade`, as its batch starts): written whole before any
    submission is graded, so a batch stopped (Ctrl-C, a kill, a full disk) keeps it for its `--resume`, `--only`
    and `export`. An OSError (a full disk) is raised: the batch has not started."""
    if title and (title, "--canvas") != _kept_title(outdir):
        owned.write_json(outdir, EXPORTS_JSON, {"canvas_title": title, "source": "--canvas"}, kind="exports")


def _points_differ(title, columns, spec):
    """'; note: ...' when the roster's Points Possible of that column is not the assignment's total, else ''."""
    total = sum(float(q.get("points") or 0) for q in spec.get("questions") or [])
    possible = next((p for c, p in columns if c == title), "")
    try:
        if float(possible) == total:
            return ""
    except ValueError:
        return ""  # none given
    return (f"; note: Canvas gives it {possible} points possible and hwcheck grades out of {total:g}, so set the "
            f"assignment's points in Canvas to {total:g} before the import")


def _points_line(title, columns, spec):
    """[the TA's line] when the roster's Points Possible of the kept column is not the assignment's total."""
    note = _points_differ(title, columns or [], spec)
    return [f'canvas.csv\'s column is "{title}"{note}'] if note else []


def column_title(outdir, spec, given=None, roster_file=None):
    """(the title of canvas.csv's column, [lines for the TA]), kept in OUT for later runs (module docstring).

    given: the TA's --canvas. roster_file: the roster of this `grade` run (None for `export`: the title taken
    from it then is kept)."""
    kept, source = _kept_title(outdir)
    columns = None
    if roster_file:
        from checker.records.roster import canvas_columns
        columns = canvas_columns(roster_file)
    found, why = (None, None)
    if columns is not None:
        from checker.records.roster import canvas_column
        found, why = canvas_column(columns, spec)
    how = (f'give `hwcheck export {outdir} --canvas "Name (id)"` with the column of {spec["id"]} as Canvas\'s '
           f'gradebook export titles it (kept for later runs)')
    if given:
        if (given, "--canvas") != (kept, source):
            _keep_title(outdir, given, "--canvas")
        return given, [f'canvas.csv\'s column is "{given}" (--canvas), kept in {outdir} for later runs']
    if kept and source == "--canvas":
        if found and found != kept:
            return kept, [f'canvas.csv\'s column stays "{kept}", given with --canvas; the roster, Canvas\'s '
                          f'gradebook export, has "{found}" ({why}): give --canvas "{found}" to use it']
        return kept, _points_line(kept, columns, spec)
    if found:
        if (found, "roster") == (kept, source):
            # the title was said when it was taken; the points are said again each time they differ (a
            # question's points changed since, or Canvas's)
            return found, _points_line(found, columns, spec)
        _keep_title(outdir, found, "roster")
        return found, [f'canvas.csv\'s column is "{found}": the roster is Canvas\'s gradebook export and this is '
                       f'{why} (kept for later runs; --canvas chooses another){_points_differ(found, columns, spec)}']
    if kept:
        return kept, []
    if columns is not None:
        return spec["id"], [f'canvas.csv\'s column is "{spec["id"]}": the roster is Canvas\'s gradebook export, but '
                            f'{why}; Canvas\'s import would add "{spec["id"]}" as a new assignment: {how}']
    return spec["id"], [f'canvas.csv\'s column is "{spec["id"]}", which Canvas\'s import adds as a new assignment; to '
                        f'update your assignment instead, {how}']


def write_exports(outdir, assignment, canvas_title=None, now=None, roster_file=None, notes=None, pending=True):
    """Write OUTDIR/canvas.csv and/or OUTDIR/moodle.csv for the students who have those LMSs' ids.

    Returns [(path, rows written, submissions left out for want of an id of that LMS, [ids left out because
    hwcheck could not grade them: a blank cell would erase the LMS's grade])]; nothing when no student has such
    an id. `notes`
    (a list) gets the TA's lines about canvas.csv's title and (pending) the manual grades still pending.
    """
    from checker.records.lms import read_students
    from checker.records.outfolder import collect_scorecards
    from checker.records.outputs import Gradebook
    from checker.spec import load_spec
    notes = [] if notes is None else notes
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
        if name == "canvas.csv":
            title, said = column_title(outdir, spec, canvas_title, roster_file)
            notes.extend(said)
            text = canvas_text(cards, people, title, maximum)
        else:
            text = moodle_text(cards, people, modified)
            notes.extend(_moodle_out_of_range(having, maximum))
        path = owned.write_text(outdir, name, text, kind="export")  # beside a student's file of that name
        # left out: no id of that LMS, or (canvas.csv) an id but no grade, hwcheck having failed to grade it
        failed = sorted(_sid(c) for c in cards if c not in having and (people.get(_sid(c)) or {}).get(key))
        written.append((path, len(having), len(cards) - len(having) - len(failed), failed))
    anonymous = sorted(sid for sid, person in people.items() if isinstance(person, dict) and person.get("anonymous"))
    if anonymous and not any(os.path.basename(path) == "canvas.csv" for path, _, _ in written):
        notes.append(f"no canvas.csv for {len(anonymous)} students of an anonymous Canvas assignment (files named "
                     f"anon_<id>, such as {anonymous[0]}): the download gives no Canvas user ids, and Canvas's "
                     f"gradebook import does not set an anonymous assignment's grades; their grades are in "
                     f"{os.path.join(outdir, 'grades.csv')} by anonymous id, to enter in SpeedGrader")
    if written and pending:
        line = _pending_note(cards, spec, outdir)  # of the LMS students graded
        if line:
            notes.append(line)
    return written


def _pending_note(cards, spec, outdir):
    """The line naming which of `cards` (merged, manual.csv's grades in) with a grade still lack a manual grade,
    with `hwcheck export` to run again, or ''."""
    from checker.records.manual import pending_line
    line = pending_line([c for c in cards if _grade(c) != ""], spec)
    return f"{line}; then run `hwcheck export {outdir}` again" if line else ""


def canvas_students(outdir):
    """How many students of OUT have a Canvas user id (students.json: a Canvas download graded, or a roster that is
    Canvas's gradebook export): canvas.csv is written for them only."""
    from checker.records.lms import read_students
    people = read_students(outdir).get("students")
    return sum(1 for p in (people or {}).values() if isinstance(p, dict) and p.get("canvas_user_id")) \
        if isinstance(people, dict) else 0


def canvas_unused_line(outdir, canvas_title):
    """The TA's warning when `--canvas TITLE` was given but OUT holds no Canvas students, so no canvas.csv is
    written with it (h91: `export --canvas` on a plain folder said nothing of it and exited 0), or ''. The title is
    kept (as `grade --canvas` keeps it) for a later `grade --roster` with Canvas's gradebook export."""
    if not canvas_title or canvas_students(outdir):
        return ""
    try:
        keep_canvas_title(outdir, canvas_title)
        kept = f"; the title is kept in {outdir} for a later `grade ... -o {outdir} --roster <Canvas's gradebook export>`"
    except OSError:
        kept = ""
    return (f'warning: --canvas "{canvas_title}" was not used: no canvas.csv was written, as {outdir} holds no student '
            f"with a Canvas user id; canvas.csv is written only for a graded Canvas \"Download Submissions\" folder, "
            f"or with a roster that is Canvas's gradebook export (`grade --roster`), which give those ids{kept}")


def pending_export_line(outdir, assignment):
    """The TA's line naming the submissions of OUT whose manual grades are still pending (manual.csv merged), with
    `hwcheck export` to run again, or '': said by `export` on a folder with no LMS export too (h91), where
    `write_exports` says it only with the LMS files it writes."""
    from checker.records.outfolder import collect_scorecards
    from checker.records.outputs import Gradebook
    from checker.spec import load_spec
    spec = load_spec(assignment)
    cards = list(collect_scorecards(outdir, assignment))
    if not cards:
        return ""
    merged, _ = Gradebook(outdir, spec, cards, [_sid(c) for c in cards]).merged()
    return _pending_note(merged, spec, outdir)


def export_lines(outdir, assignment, canvas_title=None, roster_file=None, pending=True):
    """Write the exports (`write_exports`) and return the TA's lines: each file written, then the notes
    (pending False: the manual grades pending are left to the batch's summary, which says them)."""
    notes = []
    lines = []
    for path, n, left, failed in write_exports(outdir, assignment, canvas_title, roster_file=roster_file,
                                               notes=notes, pending=pending):
        said = [f"{left} submissions have no id of that LMS"] if left else []
        if failed:
            shown = ", ".join(failed[:5]) + (f" and {len(failed) - 5} more" if len(failed) > 5 else "")
            said.append(f"{len(failed)} left out because hwcheck could not grade {'it' if len(failed) == 1 else 'them'} "
                        f"({shown}: a blank cell would erase the grade the LMS holds; `hwcheck grade --resume` "
                        f"grades {'it' if len(failed) == 1 else 'them'} again)")
        lines.append(f"wrote {path} ({n} students" + "".join(f"; {w}" for w in said) + ")")
    return lines + notes
