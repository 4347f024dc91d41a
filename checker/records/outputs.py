"""OUTDIR's own files: recognising them, and keeping the gradebook and its companions current.

What it is for:
- `is_own_output(outdir, path)`: whether an entry of the folder being graded
  is hwcheck's own (`checker.records.owned_listing.is_ours`: OUTDIR, its state folder, a file
  or folder hwcheck recorded writing there, an older output folder), so that
  `-o` equal to (or inside) the submissions folder never grades hwcheck's own
  outputs as a student, nor takes a student's file for hwcheck's.
- `Gradebook`: the batch's view of OUTDIR's scorecards, read once and then
  one at a time as each lands (`update(sid)`), so that `write()` can rewrite
  grades.csv (and answers.csv) atomically after every scorecard (as
  hwcheck's own files, `checker.records.owned`: only scorecards hwcheck wrote are
  read, and a student's `grades.csv` is set aside or left beside it): a batch
  killed with SIGKILL leaves a gradebook as current as its scorecards.
  Each `write()` also rewrites the Gradescope results.json of the
  submissions whose scorecard landed since the last one (or whose grades
  typed into grades.csv it moved), with the grades of manual.csv merged in,
  so a killed batch leaves them as current as grades.csv;
  `write(final=True)` rewrites every submission's (manual.csv may have
  changed meanwhile). The TA's manual.csv
  (`checker.records.manual`) is created / appended to by `ensure_manual(ids)` and
  merged into every row (grades typed into grades.csv that cannot be put into
  manual.csv, a full disk, stop the command with `TypedNotMoved` before
  grades.csv is rewritten: it keeps them for the next run); its problems are
  kept in `problems` (a merge's lines, the overrides of automatic questions
  given for an earlier submission of a student, `Overrides` below, are said
  again by each merge, as of its scorecards). Who each
  submission is (grades.csv's `student`, `student_id`), the identical-code
  groups and the roster's verdicts come from OUTDIR/.students.json
  (`checker.records.lms.prepare`), read once per Gradebook. Grades typed into
  grades.csv are found by its record: the file hwcheck wrote there, changed
  since; at a run's start (`ensure_manual`) and at every `write()` of a batch
  after it (the TA saved grades.csv while the batch ran), each time before
  grades.csv is rewritten. Files of OUTDIR that were not hwcheck's and sat where it writes
  (moved into its state folder's set-aside/) are named in `problems`.
- `Overrides`, `Scales`, `Answers`, `WrittenCells` (checker.records.kept): what OUT keeps of the grades it merged
  and wrote, read and updated by the Gradebook.
- `unread_note(card)`: the grades.csv note of a test failed closed on an unread attention layout.
- `load_note(card)`: the grades.csv note of a submission whose load skipped
  something (a statement that raised, a sys.exit, a training loop, a statement that does not parse,
  a statement stopped by the time limit).

What it is not: grading, or the batch's processes (`checker.records.batch`).
"""

from __future__ import annotations

import os
import re

from checker.errors import HwcheckError
from checker.records import owned, owned_listing, owned_records
from checker.records.gradebook import answers_text, gradebook_text
from checker.records.kept import (Answers, Overrides, Scales, WrittenCells, _maxima, answer_text, stale_text,
                                  written_answers)
from checker.render.gradescope import make_results
from checker.records.manual import (MANUAL_CSV, _match_id, apply_manual, csv_delimiter, decode_csv, describe,
                                    ensure_rows, manual_path, read_manual, replace_points)
from checker.records.typed import changed_line, moved_line, typed_into_gradebook

__all__ = ["OWN_FILES", "is_own_output", "load_note", "Gradebook", "TypedNotMoved"]

OWN_FILES = ("grades.csv", "answers.csv", MANUAL_CSV, ".students.json", "canvas.csv", "moodle.csv")
STALE_NOTE = "not in the folder graded last: an older scorecard"


class TypedNotMoved(HwcheckError):
    """Grades typed into grades.csv could not be put into manual.csv (a full disk, a read-only folder): the
    command stops before grades.csv is rewritten, naming them and where they are kept."""


def is_own_output(outdir, path):
    """True when `path` is hwcheck's own in OUTDIR (`checker.records.owned_listing.is_ours`), never a student's file."""
    return owned_listing.is_ours(outdir, path)


def load_note(card):
    """'load skipped: ...' for a scorecard whose load left something out, else ''."""
    skipped = (card.get("load") or {}).get("skipped") or []
    if not skipped:
        return ""
    shown = "; ".join(str(s) for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"load skipped {len(skipped)}: {shown}{more}"


SAME_SHOWN = 5  # ids of identical code named in one note, then a count of the rest


def unread_note(card):
    """'TA check: ...' for a scorecard where a test failed closed because the grader could not read the layout of
    an attention's projections (checker.judging.packed_layouts: the scale was not checked; a correct module of an
    unusual layout loses that test's points until a TA looks), else ''."""
    from checker.judging.packed_layouts import UNREAD_MARK
    hits = [f"{q.get('id')}: {t.get('name')}" for q in card.get("questions") or [] for t in q.get("tests") or []
            if isinstance(t, dict) and t.get("outcome") == "failed" and str(t.get("message") or "").startswith(UNREAD_MARK)]
    return (f"TA check: the attention's layout was not read, its scale not checked ({'; '.join(hits[:3])}): "
            "check it by hand, and give the points back in manual.csv where it is right") if hits else ""


def _people_notes(sid, person, same):
    """grades.csv's notes from students.json: late (Canvas), identical code, no match in the roster (a group's
    member the roster lacks; a name several students of the roster share)."""
    out = []
    if person.get("late"):
        out.append("late (the LMS marked it LATE)")
    if same:  # at most SAME_SHOWN ids: a class that all handed in one file gets n notes of a few ids, not n^2
        same = [str(s) for s in same]
        more = f" and {len(same) - SAME_SHOWN} more" if len(same) > SAME_SHOWN else ""
        out.append(f"identical code to {', '.join(same[:SAME_SHOWN])}{more} (comments, whitespace and the starter "
                   "aside)")
    if person.get("roster") == "unmatched":
        out.append("matches no student of the roster")
    elif person.get("roster") == "shared":
        out.append("the roster has several students of this name: match it by hand")
    lone = person.get("roster_members_unmatched")
    if isinstance(lone, list) and lone:
        out.append(f"{'; '.join(map(str, lone))} {'matches' if len(lone) == 1 else 'match'} no student of the roster")
    return out


class Gradebook:
    """grades.csv, answers.csv and the merge of manual.csv, kept current as scorecards land."""

    def __init__(self, outdir, spec, cards, ids, holds_submissions=False, unreadable=()):
        """cards: OUTDIR's scorecards of this assignment; ids: the submissions of this batch; holds_submissions:
        OUTDIR is (or holds) the folder of the students' files, so a file there may have come with them;
        unreadable: ids whose scorecard is there but cannot be read (`hwcheck export` names them): graded
        submissions all the same, so manual.csv's rows for them are no stranger's."""
        self.outdir, self.spec = outdir, spec
        self.unreadable = set(unreadable)
        self.holds_submissions = holds_submissions
        self.cards = {str(c["submission"].get("id")): c for c in cards}
        self.ids = set(ids)
        self.problems = []
        self.gradebook = self.answers = None
        self.manual = manual_path(outdir)
        self.added = 0
        self.set_aside = set(owned.set_aside(outdir))
        self.edited = set()  # hwcheck's files found edited since it wrote them (grades.csv typed into)
        self.overrides = Overrides(outdir)  # which submission each override of manual.csv was given for
        self.scales = Scales(outdir)  # the points each question was worth when a grade of manual.csv was given
        self.answered = Answers(outdir)  # the written answer each grade of manual.csv for one was given for
        self.cells = WrittenCells(outdir)  # every value hwcheck wrote in grades.csv's cells, per id and column
        self.moved = self.told = 0  # grades typed into grades.csv moved to manual.csv; other lines about it
        self.copy = (0, 0, 0)  # (moved, rewritten, told) of the edited grades.csv found last, for its set-aside line
        self.examined = None  # the sha256 of the edited grades.csv found last (`_typed`): not looked at again
        self.untold = False  # an edited grades.csv was found: its set-aside line is said once it is rewritten
        self.landed = set()  # ids whose results.json the next write rewrites (their scorecard landed since)
        self.changes = []  # grades changed in grades.csv where manual.csv held one (`_typed`), for its rows
        self.rewritten = 0  # how many of them
        self.merge_lines = set()  # the lines `merged` said last (said again by each merge, as of its scorecards)
        try:  # made here, before processes write results.json side by side (one of them must not take the
            owned.ensure_folder(outdir, "gradescope")  # other's half-made folder for a student's)
        except OSError:
            pass
        self._seen(self.cards)  # grades typed before a regrade: at the points and for the answers of then
        from checker.records.lms import read_students
        known = read_students(outdir)
        self.people = known.get("students") if isinstance(known.get("students"), dict) else {}
        self.identical = known.get("identical") if isinstance(known.get("identical"), dict) else {}

    def _seen(self, cards):
        """Record the points each question was worth in `cards` ({id: card}), and the written answers there, for
        the grades of manual.csv given for them and not recorded yet (`Scales`, `Answers`), and save the records
        now: a batch killed once a regrade's scorecard landed, before its first write, leaves them as of the
        scorecards they were given for."""
        if not cards:
            return
        try:
            entries, _ = read_manual(self.manual, self.spec, set(self.cards) | self.unreadable)
        except OSError:
            return
        for sid, card in cards.items():
            self.scales.seen(sid, card, entries.get(sid, []))
            self.answered.seen(sid, card, entries.get(sid, []))
        self.scales.save()
        self.answered.save()

    @property
    def stale(self):
        return sorted(sid for sid in self.cards if sid not in self.ids)

    def _typed(self):
        """Grades typed into grades.csv by hand since hwcheck wrote it (they would be overwritten)."""
        raw = owned.changed_bytes(self.outdir, "grades.csv")  # the file hwcheck wrote, changed since; else None
        if raw is None or owned_records.sha256_bytes(raw) == self.examined:  # none, or the one this run moved already
            return []
        self.examined, self.untold = owned_records.sha256_bytes(raw), True
        if self.holds_submissions:  # a student's upload named grades.csv, copied in with a later download, must
            # never grade anyone (nor change a grade the TA gave in manual.csv): set aside, said, not read
            line = (f"grades.csv in {self.outdir}, which holds the students' files, changed since hwcheck wrote it: a "
                    f"student's file of that name could have replaced it, so no grade in it is applied; type grades "
                    f"into {MANUAL_CSV}, or grade into an output folder of its own (-o) to type them into grades.csv")
            if line not in self.problems:
                self.problems.append(line)
            return []
        self.edited.add("grades.csv")
        entries, _ = read_manual(self.manual, self.spec)
        cards, notes = self.merged()  # the grades.csv hwcheck wrote last (what the TA edited), as it would now
        written = gradebook_text(cards, self.spec, notes, self.people)
        text = decode_csv(raw)  # as a spreadsheet saved it: UTF-8 or Windows-1252, `,` `;` or a tab
        said, self.changes, carried = [], [], set()
        last, regraded = self.cells.since(self.cards)
        rows = typed_into_gradebook(text, self.spec, entries, written, earlier=self.cells.earlier, said=said,
                                    changed=self.changes, carried=carried, last=last, regraded=regraded)
        # a total typed is moved as an adjustment; a row whose id is no one's (an id a spreadsheet's encoding could
        # not hold) is moved too, for the TA to correct there, and said so; a grade changed where manual.csv held
        # one is said once its row is rewritten (`_change_rows`)
        self.problems += [moved_line(row, row[0] in self.cards or row[0] in self.unreadable) for row in rows]
        said += _typed_elsewhere(text, written, self.cells.earlier, carried)
        self.problems += said
        self.copy = (len(rows), len(self.changes), len(said))
        self.moved, self.told, self.rewritten = self.moved + len(rows), self.told + len(said), \
            self.rewritten + len(self.changes)
        self.landed |= {row[0] for row in rows} | {c["id"] for c in self.changes}  # their results.json too
        return rows

    def _change_rows(self):
        """Put the grades changed in grades.csv (`_typed`) into their rows of manual.csv, a copy of the file as it
        was kept first (the TA's earlier values are never lost), and say each."""
        if not self.changes:
            return
        copy = owned.keep_copy(self.outdir, self.manual)
        done = set(replace_points(self.manual, {c["line"]: c["new"] for c in self.changes}))
        for c in self.changes:
            if c["line"] in done:
                self.problems.append(changed_line(c, copy))
            else:  # the row moved since it was read (edited meanwhile): the grade typed is said, not lost
                self.problems.append(f"grades.csv: {c['id']} {c['question']} was changed from {c['old']} to "
                                     f"{c['new']} in grades.csv, but {MANUAL_CSV} line {c['line']} is no longer "
                                     f"that row: not applied; write {c['new']} in {MANUAL_CSV}")
        self.changes = []

    def ensure_manual(self, grading=None):
        """Create manual.csv or append the rows of new submissions (those with a scorecard, and `grading`: the
        ids about to be graded, default all the folder's); a file that cannot be written is a problem, but grades
        typed into grades.csv that cannot be put into manual.csv stop the command (`TypedNotMoved`), before
        grades.csv is rewritten: it keeps them, for the next run to move."""
        typed = []
        try:
            typed = self._typed()
            if not owned.has_record(self.outdir, MANUAL_CSV) and os.path.isfile(self.manual):
                if self.holds_submissions:  # a student's upload named manual.csv must never grade anyone
                    moved = owned.set_aside_file(self.outdir, MANUAL_CSV)
                    self.problems.append(f"{MANUAL_CSV} was in {self.outdir}, which holds the students' files, "
                                         f"before hwcheck made one there: it may have come with them, so its "
                                         f"grades are not applied; it was moved to {moved} (if it is yours, copy "
                                         f"its rows into the new {MANUAL_CSV})")
                else:
                    self.problems.append(f"{MANUAL_CSV} was in {self.outdir} before hwcheck made one there: its "
                                         f"grades are applied as yours (an older hwcheck's, or one you wrote); if it "
                                         f"came with the students' files, move it away and grade again")
            self.manual = owned.place_kept(self.outdir, MANUAL_CSV, record=True) or self.manual
            self._change_rows()
            ids = self.ids if grading is None else set(grading)
            known, keys = set(self.cards) | self.unreadable | ids, {}
            self.added += ensure_rows(self.manual, ids | set(self.cards), self.spec, typed,  # an id no one's: appended
                                      fill=lambda sid: _match_id(sid, known, keys)[0] == sid) - len(typed)
        except OSError as e:
            if typed or self.changes:
                raise TypedNotMoved(self._not_moved(typed, e)) from e
            line = f"{MANUAL_CSV} could not be written ({e.strerror or e}): grades typed there are still read"
            if line not in self.problems:
                self.problems.append(line)

    def _take_typed(self, final):
        """Before grades.csv is rewritten: grades typed into it since hwcheck wrote it while a batch ran (the TA
        saved it meanwhile) are moved into manual.csv and said, as a run's start moves them (`ensure_manual`);
        a save found already is not looked at again. True when grades.csv may be rewritten; where they cannot
        be moved (a full disk), False in a batch (grades.csv keeps them; the next write tries again, the
        batch goes on) and `TypedNotMoved` from the final write, as at a run's start."""
        raw = owned.changed_bytes(self.outdir, "grades.csv")
        if raw is None or owned_records.sha256_bytes(raw) == self.examined:
            return True
        kept = (list(self.problems), self.moved, self.told, self.rewritten, self.added, self.copy)
        try:
            self.ensure_manual(grading=())  # the rows of the batch's submissions are there since its start
        except TypedNotMoved:
            if final:
                raise
            self.problems, self.moved, self.told, self.rewritten, self.added, self.copy = kept
            self.changes, self.examined, self.untold = [], None, False  # nothing of it said: tried again
            return False
        return True

    def _not_moved(self, rows, error):
        """The words of `TypedNotMoved`: the grades typed into grades.csv that are not in manual.csv, why, and
        where they are kept (grades.csv itself, not rewritten)."""
        grades = owned.path_of(self.outdir, "grades.csv")
        what = [f"{sid} {qid} {points}" for sid, qid, points, _ in rows]
        what += [f"{c['id']} {c['question']} {c['new']} ({MANUAL_CSV} line {c['line']} gives {c['old']})"
                 for c in self.changes]
        shown = "; ".join(what[:10]) + (f"; and {len(what) - 10} more" if len(what) > 10 else "")
        why = (error.strerror or str(error)) + (f", writing {error.filename}" if error.filename else "")
        return (f"the grades typed into {grades} could not be moved into {self.manual} ({why}): not moved: {shown}. "
                f"They are kept as you typed them in {grades}, which was not rewritten; free some space (or make "
                f"{self.outdir} writable), then run this command again, or `hwcheck export {self.outdir}`: it finds "
                f"them there and moves them")

    def update(self, sid, path=None):
        """Read the scorecard of `sid` that just landed, as hwcheck wrote it (a missing or broken one, or one
        hwcheck did not write, is left as it was); `path` is not read (kept for callers)."""
        from checker.records.outfolder import read_scorecard
        card = read_scorecard(self.outdir, sid)
        if card is not None:
            old = self.cards.get(sid)
            self.overrides.replaced(sid, old, card)  # an override of the old code: told, below
            # a regrade by a changed spec.toml, or of a new written answer: the grades given before and not
            # recorded yet are recorded at the points, and for the answer, of then
            if old is not None and (_maxima(old) != _maxima(card) or written_answers(old) != written_answers(card)):
                self._seen({sid: old})
            self.cards[sid] = card
            self.landed.add(sid)

    def merged(self):
        """(cards with manual.csv merged, notes {id: text}); manual.csv's problems go to `problems`."""
        ignored = {}  # {id: why a row of theirs was ignored}: in their note, as in the TA's lines
        entries, problems = read_manual(self.manual, self.spec, set(self.cards) | self.unreadable,
                                        scale=self.scales.typed_at, ignored=ignored)
        # the lines of each merge are said as of the scorecards now (an override's line computed before a regrade
        # that graded the submission it was given for again would be stale)
        self.problems = [p for p in self.problems if not p.startswith(MANUAL_CSV + " line")
                         and p not in self.merge_lines] + problems
        self.merge_lines = set()
        cards, notes = [], {}
        for sid, card in sorted(self.cards.items()):
            merged = apply_manual(card, entries.get(sid))
            note = [STALE_NOTE] if sid not in self.ids else []
            # a grade given for another written answer than this scorecard's (a resubmission): said until edited
            self.answered.seen(sid, card, entries.get(sid, []))
            for row in self.answered.changed(sid, card, entries.get(sid, [])):
                text = answer_text(row)
                note.append(text)
                self._say(f"{MANUAL_CSV}: {sid}: {text}")
            was = {r["line"]: r.get("was") for r in merged.get("manual_grades") or [] if r["kind"] == "override"}
            for row in self.overrides.stale(sid, card, entries.get(sid, [])):
                text = stale_text(row, was.get(row["line"]))
                note.append(text)
                self._say(f"{MANUAL_CSV}: {sid}: {text}")
            self.scales.seen(sid, card, entries.get(sid, []))
            for row in entries.get(sid, []):
                text = self.scales.changed_text(sid, card, row)
                if text:
                    note.append(text)
                    self._say(f"{MANUAL_CSV}: {sid}: {text}")
            note += [t for t in (load_note(card), unread_note(card), describe(merged)) if t] + ignored.get(sid, [])
            note += _people_notes(sid, self.people.get(sid) or {}, self.identical.get(sid))
            if note:
                notes[sid] = "; ".join(note)
            cards.append(merged)
        return cards, notes

    def _say(self, line):
        """A line of this merge for the TA (once; dropped by the next merge, which says it again if it holds)."""
        if line not in self.problems:
            self.problems.append(line)
            self.merge_lines.add(line)

    def write(self, final=False):
        """Rewrite grades.csv (answers.csv) and the results.json of the submissions landed since the last write
        (final: of every one), with manual.csv merged; grades typed into grades.csv meanwhile are moved to
        manual.csv first (`_take_typed`: where they cannot be, a batch's write leaves grades.csv as it is)."""
        if not self._take_typed(final):
            return self.gradebook
        cards, notes = self.merged()
        self.overrides.save()
        self.scales.save()
        self.answered.save()
        text = gradebook_text(cards, self.spec, notes, self.people)
        self.cells.add(text, self.spec, self.cards)  # kept before the file is: every value of grades.csv is one hwcheck wrote
        self.cells.save()
        self.gradebook = owned.write_text(self.outdir, "grades.csv", text, kind="gradebook", encoding="utf-8-sig")
        self.answers = None
        if any(q.get("manual") for q in self.spec.get("questions") or []):
            self.answers = owned.write_text(self.outdir, "answers.csv", answers_text(cards, self.spec),
                                            kind="answers", encoding="utf-8-sig")
        for card in cards:  # as current as grades.csv (a batch killed now keeps them so), not all 500 each time
            sid = str(card["submission"].get("id"))
            if final or sid in self.landed:
                self._write_results(card)
                self.landed.discard(sid)
        if self.untold or final:  # the edited grades.csv just set aside, said with what was taken from it
            self._tell_set_aside()
            self.untold = False
        return self.gradebook

    def _tell_set_aside(self):
        """A problem line for each file of OUTDIR that sat where hwcheck writes and was not hwcheck's."""
        for name in owned.set_aside(self.outdir):
            if name not in self.set_aside:
                self.set_aside.add(name)
                # the file's own name: set-aside/ adds .2, .3 ... to a name already there (grades.csv.2)
                shown = re.sub(r"(\.(?:csv|json))\.[2-9]\d*$", r"\1", name.replace("%", "/"))
                if shown in self.edited:
                    moved, rewritten, told = self.copy  # of the copy found last: the one set aside now
                    if moved or rewritten:
                        what = f"the grades typed there are in {MANUAL_CSV} (said above)"
                    elif told:
                        what = f"nothing there was moved to {MANUAL_CSV} (what it held is said above)"
                    else:
                        what = (f"no cell of it differs from what hwcheck wrote there (a spreadsheet's save), so "
                                f"nothing was moved to {MANUAL_CSV}")
                    self.problems.append(f"{shown} in {self.outdir} was edited since hwcheck wrote it: {what}, and "
                                         f"hwcheck wrote it anew; the edited copy was moved to "
                                         f"{os.path.join(owned_records.state_dir(self.outdir), 'set-aside', name)}")
                    continue
                self.problems.append(f"{shown} in {self.outdir} was not written by hwcheck (a student's file, or "
                                     f"an older hwcheck's, or edited since) and sat where hwcheck writes its own: "
                                     f"moved to {os.path.join(owned_records.state_dir(self.outdir), 'set-aside', name)}")
        for name, path in owned.alternates(self.outdir):
            if name not in self.set_aside:
                self.set_aside.add(name)
                self.problems.append(f"{name} in {self.outdir} is a folder or link that is not hwcheck's: hwcheck's "
                                     f"{name} is {path}")

    def _write_results(self, card):
        """results.json from the merged card (a crashed card keeps its failure file)."""
        from checker.records.outfolder import read_results, write_results
        sid = str(card["submission"].get("id"))
        if (card.get("grader") or {}).get("internal_error") or sid not in self.ids:
            return
        results = make_results(card)
        said = describe(card, for_student=True)  # hwcheck's bookkeeping comments left out (manual.student_comment)
        if said:
            results["output"] += f"\nGraded by a person: {said}"
        if read_results(self.outdir, sid) != results:
            write_results(self.outdir, sid, results)


def _typed_elsewhere(typed, written, earlier=None, carried=()):
    """The TA's lines about what was typed into grades.csv that no grade holds: a note changed (not one hwcheck
    wrote in that row before, `earlier` as `WrittenCells.earlier`; not one of the ids `carried`, whose note went
    to manual.csv as the comment of a grade typed beside it), a column added (grades.csv is set aside, not
    lost: `Gradebook._tell_set_aside` says where). A total typed is moved as an adjustment
    (`checker.records.manual.typed_into_gradebook`), or said there."""
    import csv
    import io
    mine = list(csv.reader(io.StringIO(written, newline="")))
    theirs = list(csv.reader(io.StringIO(typed, newline=""), delimiter=csv_delimiter(typed)))
    if not mine or not theirs:
        return []
    out = []
    added = [c for c in theirs[0] if c and c not in mine[0]]
    if added:
        out.append(f"grades.csv: the column{'s' if len(added) > 1 else ''} {', '.join(repr(c) for c in added[:5])} "
                   f"typed there {'are' if len(added) > 1 else 'is'} not kept in the new grades.csv (hwcheck rewrites "
                   f"it): put comments in {MANUAL_CSV}'s comment column")
    if "note" in theirs[0] and "note" in mine[0] and "id" in theirs[0] and "id" in mine[0]:
        ours = {r[mine[0].index("id")]: r[mine[0].index("note")] for r in mine[1:] if len(r) == len(mine[0])}
        changed = []
        for r in theirs[1:]:
            if len(r) != len(theirs[0]):
                continue
            sid, note = r[theirs[0].index("id")], r[theirs[0].index("note")]
            if (sid[1:] if sid.startswith("'") else sid).strip() in carried:
                continue  # the comment of the grade typed beside it, in manual.csv
            before = ((earlier or {}).get(sid[1:] if sid.startswith("'") else sid) or {}).get("note") or []
            if sid in ours and note.strip() and note != ours[sid] and note.strip() not in [n.strip() for n in before]:
                changed.append(f"{sid}'s {note[:60]!r}")
        if changed:
            more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
            out.append(f"grades.csv: the note{'s' if len(changed) > 1 else ''} typed there ({'; '.join(changed[:5])}"
                       f"{more}) {'are' if len(changed) > 1 else 'is'} not kept in the new grades.csv: put comments "
                       f"in {MANUAL_CSV}'s comment column")
    return out
