"""OUTDIR's own files: recognising them, and keeping the gradebook and its companions current.

What it is for:
- `is_own_output(outdir, path)`: whether an entry of the folder being graded
  is something hwcheck wrote into OUTDIR (OUTDIR itself, its `gradescope/`
  folder, a scorecard, a raw report, grades.csv, answers.csv, manual.csv,
  the lock), or a folder hwcheck wrote earlier (an older OUTDIR, recognised
  by its lock; a `gradescope/` folder of results.json files), so that `-o` equal to (or inside) the submissions folder never
  grades hwcheck's own outputs as a student.
- `Gradebook`: the batch's view of OUTDIR's scorecards, read once and then
  one at a time as each lands (`update(sid)`), so that `write()` can rewrite
  grades.csv (and answers.csv) atomically after every scorecard: a batch
  killed with SIGKILL leaves a gradebook as current as its scorecards.
  `write(final=True)` also rewrites each submission's Gradescope
  results.json with the grades of manual.csv merged in. The TA's manual.csv
  (`checker.manual`) is created / appended to by `ensure_manual(ids)` and
  merged into every row; its problems are kept in `problems`. Who each
  submission is (grades.csv's `student`, `student_id`), the identical-code
  groups and the roster's verdicts come from OUTDIR/.students.json
  (`checker.lms.prepare`), read once per Gradebook.
- `load_note(card)`: the grades.csv note of a submission whose load skipped
  something (a sys.exit, a training loop, a statement that does not parse,
  a statement stopped by the time limit).

What it is not: grading, or the batch's processes (`checker.batch`).
"""

from __future__ import annotations

import hashlib
import json
import os

from .atomic import read_json, write_json_atomic, write_text_atomic
from .gradebook import write_answers, write_gradebook
from .gradescope import make_results
from .manual import MANUAL_CSV, apply_manual, describe, ensure_rows, manual_path, read_manual, typed_into_gradebook

__all__ = ["OWN_FILES", "is_own_output", "load_note", "Gradebook"]

WRITTEN = ".grades.csv.sha256"  # the sha256 of the grades.csv hwcheck wrote last: a different one was edited
OWN_FILES = ("grades.csv", "answers.csv", MANUAL_CSV, ".hwcheck.lock", WRITTEN, ".students.json", "canvas.csv",
             "moodle.csv")
STALE_NOTE = "not in the folder graded last: an older scorecard"


def _inside(path, root):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _is_scorecard(path):
    if not path.endswith(".json") or not os.path.isfile(path):
        return False
    if path.endswith(".raw.json"):
        return True
    try:
        with open(path, encoding="utf-8") as f:
            card = json.load(f)
    except (OSError, ValueError):
        return False
    return isinstance(card, dict) and "schema_version" in card and isinstance(card.get("submission"), dict)


def _looks_like_output(path):
    """A folder hwcheck wrote: an older OUTDIR (its lock or gradebook beside scorecards), or a gradescope/
    folder (every entry a folder holding only results.json)."""
    try:
        names = os.listdir(path)
    except OSError:
        return False
    if ".hwcheck.lock" in names or WRITTEN in names:
        return True
    if os.path.basename(os.path.normpath(path)) == "gradescope" and names:
        try:
            return all(os.listdir(os.path.join(path, n)) == ["results.json"] for n in names)
        except OSError:
            return False
    return False


def is_own_output(outdir, path):
    """True when `path` is OUTDIR, lies inside OUTDIR's gradescope/ folder, is a file hwcheck writes there,
    or is a folder hwcheck wrote (an older OUTDIR, a gradescope/ folder of results.json files)."""
    out = os.path.realpath(outdir)
    real = os.path.realpath(path)
    if real == out or _inside(real, os.path.join(out, "gradescope")):
        return True
    if os.path.isdir(real):
        return _looks_like_output(real)
    if os.path.dirname(real) != out:
        return False
    name = os.path.basename(real)
    return name in OWN_FILES or _is_scorecard(real)


def load_note(card):
    """'load skipped: ...' for a scorecard whose load left something out, else ''."""
    skipped = (card.get("load") or {}).get("skipped") or []
    if not skipped:
        return ""
    shown = "; ".join(str(s) for s in skipped[:3])
    more = f"; and {len(skipped) - 3} more" if len(skipped) > 3 else ""
    return f"load skipped {len(skipped)}: {shown}{more}"


def _people_notes(sid, person, same):
    """grades.csv's notes from students.json: late (Canvas), identical code, no match in the roster."""
    out = []
    if person.get("late"):
        out.append("late (the LMS marked it LATE)")
    if same:
        out.append(f"identical code to {', '.join(map(str, same))} (comments, whitespace and the starter aside)")
    if person.get("roster") == "unmatched":
        out.append("matches no student of the roster")
    return out


class Gradebook:
    """grades.csv, answers.csv and the merge of manual.csv, kept current as scorecards land."""

    def __init__(self, outdir, spec, cards, ids):
        """cards: OUTDIR's scorecards of this assignment; ids: the submissions of this batch."""
        self.outdir, self.spec = outdir, spec
        self.cards = {str(c["submission"].get("id")): c for c in cards}
        self.ids = set(ids)
        self.problems = []
        self.gradebook = self.answers = None
        self.manual = manual_path(outdir)
        self.added = 0
        from .lms import read_students
        known = read_students(outdir)
        self.people = known.get("students") if isinstance(known.get("students"), dict) else {}
        self.identical = known.get("identical") if isinstance(known.get("identical"), dict) else {}

    @property
    def stale(self):
        return sorted(sid for sid in self.cards if sid not in self.ids)

    def _typed(self):
        """Grades typed into grades.csv by hand since hwcheck wrote it (they would be overwritten)."""
        try:
            with open(os.path.join(self.outdir, "grades.csv"), "rb") as f:
                raw = f.read()
        except OSError:
            return []
        try:
            with open(os.path.join(self.outdir, WRITTEN), encoding="ascii") as f:
                written = f.read().strip()
        except OSError:
            written = None  # by an older hwcheck, which wrote a pending cell empty too
        if hashlib.sha256(raw).hexdigest() == written:
            return []
        entries, _ = read_manual(self.manual, self.spec)
        rows = typed_into_gradebook(raw.decode("utf-8-sig", "replace"), self.spec, entries)
        for sid, qid, points, _ in rows:
            self.problems.append(f"grades.csv: {sid} {qid} = {points} was typed into grades.csv, which hwcheck "
                                 f"rewrites: moved to {MANUAL_CSV}, where grades are kept")
        return rows

    def ensure_manual(self):
        """Create manual.csv or append the rows of new submissions; a file that cannot be written is a problem."""
        try:
            self.added = ensure_rows(self.manual, self.ids | set(self.cards), self.spec, self._typed())
        except OSError as e:
            self.problems.append(f"{MANUAL_CSV} could not be written ({e.strerror or e}): grades typed there "
                                 f"are still read")

    def update(self, sid, path):
        """Read the scorecard that just landed (a missing or broken one is left as it was)."""
        card = read_json(path)
        if isinstance(card, dict) and isinstance(card.get("submission"), dict):
            self.cards[sid] = card

    def merged(self):
        """(cards with manual.csv merged, notes {id: text}); manual.csv's problems go to `problems`."""
        entries, problems = read_manual(self.manual, self.spec, set(self.cards))
        self.problems = [p for p in self.problems if not p.startswith(MANUAL_CSV + " line")] + problems
        cards, notes = [], {}
        for sid, card in sorted(self.cards.items()):
            merged = apply_manual(card, entries.get(sid))
            note = [STALE_NOTE] if sid not in self.ids else []
            note += [t for t in (load_note(card), describe(merged)) if t]
            note += _people_notes(sid, self.people.get(sid) or {}, self.identical.get(sid))
            if note:
                notes[sid] = "; ".join(note)
            cards.append(merged)
        return cards, notes

    def write(self, final=False):
        cards, notes = self.merged()
        self.gradebook = write_gradebook(os.path.join(self.outdir, "grades.csv"), cards, self.spec, notes,
                                         self.people)
        with open(self.gradebook, "rb") as f:
            write_text_atomic(os.path.join(self.outdir, WRITTEN), hashlib.sha256(f.read()).hexdigest() + "\n",
                              encoding="ascii")
        self.answers = write_answers(os.path.join(self.outdir, "answers.csv"), cards, self.spec)
        if final:
            for card in cards:
                self._write_results(card)
        return self.gradebook

    def _write_results(self, card):
        """results.json from the merged card (a crashed card keeps its failure file)."""
        sid = str(card["submission"].get("id"))
        if (card.get("grader") or {}).get("internal_error") or sid not in self.ids:
            return
        results = make_results(card)
        said = describe(card)
        if said:
            results["output"] += f"\nGraded by a person: {said}"
        path = os.path.join(self.outdir, "gradescope", sid, "results.json")
        if read_json(path) != results:
            write_json_atomic(path, results)
