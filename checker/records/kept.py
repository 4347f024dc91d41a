"""What OUT keeps of the grades hwcheck merged and wrote there, beside grades.csv, for the Gradebook.

What it is for:
- `Overrides`: which submission each override of manual.csv was given for. A row for an automatic
  question (`leebruce_1009,Q1,25,appeal`) replaces its automatic score, and kept doing so, unsaid, after
  the student resubmitted and `--resume` regraded the new code (an appeal given when Q1 scored 0 lowered
  the new code's 30 to 25). The sha256 of the submission each override row was first merged with is
  kept as hwcheck's own file `.overrides.json` in OUT (`checker.records.owned`: a student's file of that
  name decides nothing); a row is its id, question, points and comment, so a row the TA edits afterwards
  is a new grade, for the submission of that time. A row whose submission changed since is named in
  grades.csv's note and the batch's summary, and still applied (the TA's grade decides; the TA checks
  it). When a batch replaces a scorecard (`replaced`), a row typed before the first merge after it is
  recorded against the submission it replaced.
- `Scales`: the points each question was worth when a grade of manual.csv for it was first merged (kept as
  hwcheck's own file `.manual-scales.json`): after spec.toml changes a question's points and the batch
  regrades, a grade typed on the old scale (an appeal's Q1 28 of 30, now of 40) is named per student and
  question in grades.csv's note and the summary, for the TA to check; nothing is changed (one above the new
  points is ignored, and said so).
- `Answers`: the written answer each grade of manual.csv for a question graded by a person (attention's
  Q3-text) was first merged with (its sha256, kept as hwcheck's own file `.manual-answers.json`): after the
  student resubmits with another answer (or one where there was none) and a batch regrades, the grade typed
  for the old answer still counts, and is named per student and question in grades.csv's note and the
  summary of every run (grade, export) until the TA edits the row (a new grade, for the answer of its time).
  Kept in OUT, not in memory: a batch killed once the new scorecard landed, or an export after it, still
  names it. When a batch replaces a scorecard, a row not recorded yet is recorded against the answer it
  replaced (the one the TA read).
- `WrittenCells`: every value hwcheck wrote in grades.csv's total, question and note cells, per id (kept
  as hwcheck's own file `.grades-written.json` in OUT, written before grades.csv is): a grades.csv a
  spreadsheet held open across a regrade (a resubmission, a changed spec.toml) is saved back with the old
  cells, which are hwcheck's values, not grades typed, and so are neither moved to manual.csv nor pinned
  there as overrides; they are named in one line.

What it is not: the gradebook itself (checker.records.outputs.Gradebook reads and updates these), or the TA's
manual.csv (checker.records.manual): these are hwcheck's own files (checker.records.owned), and a student's file
of one of their names decides nothing.
"""

from __future__ import annotations

import hashlib
import json

from checker.records import owned
from checker.records.manual import MANUAL_CSV

__all__ = ["OVERRIDES_JSON", "SCALES_JSON", "ANSWERS_JSON", "CELLS_JSON", "Overrides", "Scales", "Answers",
           "WrittenCells", "stale_text", "answer_text", "written_answers"]


# overrides given for an earlier submission (see the module's docstring)

OVERRIDES_JSON = ".overrides.json"


def _sha(card):
    sha = (card.get("submission") or {}).get("sha256") if isinstance(card, dict) else None
    return sha if isinstance(sha, str) else None


def _key(sid, row):
    return json.dumps([sid, row.get("question"), row.get("points"), row.get("comment") or ""], ensure_ascii=True)


class _Given:
    """{a manual.csv row's `_key`: a value} kept as one of hwcheck's own files in OUT (`given` in its JSON), the
    values `_value` takes from what was read; `save()` writes it when it changed."""

    NAME = KIND = ""

    def __init__(self, outdir):
        self.outdir = outdir
        data = owned.read_json(outdir, self.NAME, self.KIND)
        given = data.get("given") if isinstance(data, dict) else None
        self.given = {k: self._value(v) for k, v in given.items() if self._value(v) is not None} \
            if isinstance(given, dict) else {}
        self.dirty = False

    @staticmethod
    def _value(v):
        return v

    def save(self):
        """Write the record when it changed (a failure leaves it to the next run, which records again)."""
        if not self.dirty:
            return
        try:
            owned.write_json(self.outdir, self.NAME, {"given": self.given}, kind=self.KIND)
            self.dirty = False
        except OSError:
            pass


class Overrides(_Given):
    """The record of OUT's override rows and the submissions they were given for."""

    NAME, KIND = OVERRIDES_JSON, "overrides"

    def __init__(self, outdir):
        super().__init__(outdir)
        self.before = {}  # {id: the sha256 of the submission a batch's new scorecard replaced}

    @staticmethod
    def _value(v):
        return v if isinstance(v, str) else None

    def replaced(self, sid, old_card, new_card):
        """A batch replaced `sid`'s scorecard: remember the submission it graded before, when it changed."""
        old, new = _sha(old_card), _sha(new_card)
        if old and new and old != new:
            self.before.setdefault(sid, old)

    def stale(self, sid, card, rows):
        """The override rows of `sid` (manual.csv's rows of kind "override") given for another submission than
        the one `card` graded; a row seen for the first time is recorded here."""
        now = _sha(card)
        out = []
        for row in rows:
            if row.get("kind") != "override" or row.get("points") is None or now is None:
                continue
            key = _key(sid, row)
            if key not in self.given:
                self.given[key] = self.before.get(sid, now)
                self.dirty = True
            if self.given[key] != now:
                out.append(row)
        return out


def stale_text(row, automatic):
    """grades.csv's note (and the summary's line) of an override given for an earlier submission."""
    was = f"{automatic:g}" if isinstance(automatic, (int, float)) else str(automatic)
    return (f"{row['question']} {row['points']:g} from manual.csv line {row.get('line')} was given for an earlier "
            f"submission, and the new one scores {was} there automatically: check that grade (once checked, edit "
            f"the row's comment to keep it, or delete the row to keep the automatic score)")


# the points a question was worth when each grade of manual.csv for it was given (see the module's docstring)

SCALES_JSON = ".manual-scales.json"


def _maxima(card):
    return {str(q.get("id")): q.get("max_score") for q in (card or {}).get("questions") or [] if isinstance(q, dict)}


class Scales(_Given):
    """The record of the points each question was worth (its scorecard's max_score) when a grade of manual.csv
    for it was first merged, by the row's id, question, points and comment (`_key`): after spec.toml changes a
    question's points and the batch regrades, a grade typed on the old scale is named, per student and question,
    with both (it stays as typed; one above the new points is ignored, `read_manual` says so). A row the TA edits
    afterwards is a new grade, on the scale of its time. hwcheck's own file `.manual-scales.json` in OUT."""

    NAME, KIND = SCALES_JSON, "manual-scales"

    @staticmethod
    def _value(v):
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def seen(self, sid, card, rows):
        """Record the points of `card`'s questions for the graded rows of `sid` not recorded yet."""
        tops = _maxima(card)
        for row in rows:
            top = tops.get(row.get("question"))
            if row.get("kind") == "adjustment" or row.get("points") is None or not isinstance(top, (int, float)):
                continue
            key = _key(sid, row)
            if key not in self.given:
                self.given[key] = float(top)
                self.dirty = True

    def typed_at(self, sid, qid, points, comment):
        """The points `qid` was worth when the row (sid, qid, points, comment) was first merged, None if unknown."""
        return self.given.get(_key(sid, {"question": qid, "points": points, "comment": comment}))

    def changed_text(self, sid, card, row):
        """grades.csv's note (and the summary's line) of a grade typed when its question was worth other points
        than `card` gives it now, '' when the same (or not known)."""
        was, now = self.typed_at(sid, row.get("question"), row.get("points"), row.get("comment") or ""), \
            _maxima(card).get(row.get("question"))
        if row.get("kind") == "adjustment" or was is None or not isinstance(now, (int, float)) or \
                abs(was - float(now)) <= 5e-5:
            return ""
        return (f"{row['question']} {row['points']:g} ({MANUAL_CSV} line {row.get('line')}) was typed when "
                f"{row['question']} was worth {was:g} points; it is worth {float(now):g} now (spec.toml changed) "
                f"and the grade stays {row['points']:g} of {float(now):g}: check it (nothing was changed; once "
                f"checked, edit the row's points or comment)")


# the written answer each grade of a question graded by a person was given for (see the module's docstring)

ANSWERS_JSON = ".manual-answers.json"


def written_answers(card):
    """{question: the sha256 of the written answer `card` found, of '' where none} of its questions graded by a
    person; {} for a card hwcheck could not grade (it found no answer to tell from the next one)."""
    if not isinstance(card, dict) or (card.get("grader") or {}).get("internal_error"):
        return {}
    return {str(q.get("id")): hashlib.sha256(str(q.get("answer") or "").encode("utf-8", "surrogatepass")).hexdigest()
            for q in card.get("questions") or [] if isinstance(q, dict) and q.get("manual")}


class Answers(_Given):
    """The record of the written answer each grade of manual.csv for a question graded by a person was first
    merged with, by the row's id, question, points and comment (`_key`): a grade whose answer is no longer the
    one the scorecard holds (a resubmission; no answer then and one now counts) is named on every merge, until
    the TA edits the row. hwcheck's own file `.manual-answers.json` in OUT."""

    NAME, KIND = ANSWERS_JSON, "manual-answers"

    @staticmethod
    def _value(v):
        return v if isinstance(v, str) else None

    @staticmethod
    def _graded(rows, shas):
        return [r for r in rows if r.get("kind") == "manual" and r.get("points") is not None
                and r.get("question") in shas]

    def seen(self, sid, card, rows):
        """Record the answers of `card` for the graded rows of `sid` not recorded yet."""
        shas = written_answers(card)
        for row in self._graded(rows, shas):
            key = _key(sid, row)
            if key not in self.given:
                self.given[key] = shas[row["question"]]
                self.dirty = True

    def changed(self, sid, card, rows):
        """The graded rows of `sid` given for another written answer than the one `card` holds."""
        shas = written_answers(card)
        return [row for row in self._graded(rows, shas)
                if self.given.get(_key(sid, row)) not in (None, shas[row["question"]])]


def answer_text(row):
    """grades.csv's note (and the summary's line) of a grade given for a written answer that changed since."""
    return (f"the written answer to {row['question']} changed since it was graded by hand ({row['points']:g} "
            f"points in {MANUAL_CSV} line {row.get('line')}): check that grade (it still counts; once checked, "
            f"edit the row's points or comment)")


# every value hwcheck wrote in grades.csv's cells (see the module's docstring)

CELLS_JSON = ".grades-written.json"
KEPT_PER_CELL = 20  # the latest distinct values of one cell kept (a regrade adds one)


def _graded(card):
    """What tells one grading of a submission from another (a regrade): its sha256, seed, duration and score."""
    sub, grader = (card or {}).get("submission") or {}, (card or {}).get("grader") or {}
    return f"{sub.get('sha256')}|{grader.get('seed')}|{card.get('duration_s')}|{card.get('score')}"


class WrittenCells:
    """The values hwcheck wrote in grades.csv's `total`, question and `note` cells, per id and column, over every
    grades.csv it wrote in OUT: a spreadsheet that had grades.csv open across a regrade saves the old values
    back, and those are hwcheck's, not grades typed (`checker.records.manual.typed_into_gradebook`)."""

    def __init__(self, outdir):
        self.outdir = outdir
        data = owned.read_json(outdir, CELLS_JSON, "grades-written")
        cells = data.get("cells") if isinstance(data, dict) else None
        self.earlier = {}  # {id: {column: [cells written, oldest first]}}
        for sid, columns in (cells.items() if isinstance(cells, dict) else ()):
            if isinstance(columns, dict):
                self.earlier[sid] = {c: [v for v in vs if isinstance(v, str)][-KEPT_PER_CELL:]
                                     for c, vs in columns.items() if isinstance(vs, list)}
        last = data.get("last") if isinstance(data, dict) else None
        self.last = {sid: {c: v for c, v in cols.items() if isinstance(v, str)}
                     for sid, cols in (last.items() if isinstance(last, dict) else ()) if isinstance(cols, dict)}
        graded = data.get("graded") if isinstance(data, dict) else None
        self.graded = {k: [d for d in v if isinstance(d, str)][-KEPT_PER_CELL:] for k, v in graded.items()
                       if isinstance(v, list)} if isinstance(graded, dict) else {}  # {id: [gradings, oldest first]}
        self.dirty = False

    def since(self, cards):
        """({id: {column: cell}} of the grades.csv hwcheck wrote last, for the ids whose scorecard (of `cards`,
        {id: card}) is the one it was written from; the ids graded otherwise before, whose older cells may be from
        before a regrade)."""
        same = {sid for sid, card in cards.items() if (self.graded.get(sid) or [None])[-1] == _graded(card)}
        return ({sid: cols for sid, cols in self.last.items() if sid in same},
                {sid for sid, card in cards.items() if any(d != _graded(card) for d in self.graded.get(sid, []))})

    def add(self, text, spec, cards=None):
        """Remember the cells of the grades.csv text about to be written (and the scorecards, {id: card}, it is
        written from)."""
        import csv
        import io
        columns = ["total", *[str(q["id"]) for q in spec.get("questions") or []], "note"]
        last = {}
        for row in csv.DictReader(io.StringIO(text, newline="")):
            sid = (row.get("id") or "").strip()
            if sid.startswith("'"):
                sid = sid[1:]  # as grades.csv writes an id starting with '=' or '-' (read back without it)
            last[sid] = {c: row[c] for c in columns if isinstance(row.get(c), str)}
            kept = self.earlier.setdefault(sid, {})
            for column in columns:
                value = row.get(column)
                if not isinstance(value, str) or not value.strip():
                    continue
                values = kept.setdefault(column, [])
                if values and values[-1] == value:
                    continue
                if value in values:
                    values.remove(value)
                values.append(value)
                del values[:-KEPT_PER_CELL]
                self.dirty = True
        if last != self.last:
            self.last, self.dirty = last, True
        for sid, card in (cards or {}).items():
            seen = self.graded.setdefault(sid, [])
            if not seen or seen[-1] != _graded(card):
                seen.append(_graded(card))
                del seen[:-KEPT_PER_CELL]
                self.dirty = True

    def save(self):
        """Write the record when it changed (a failure leaves it to the next write, which records again)."""
        if not self.dirty:
            return
        try:
            owned.write_json(self.outdir, CELLS_JSON, {"cells": self.earlier, "last": self.last,
                                                       "graded": self.graded}, kind="grades-written")
            self.dirty = False
        except OSError:
            pass
