"""One submission per student of an LMS's download: the entries the batch grades, and what is set aside.

What it is for: `checker.records.lms.prepare`, once `checker.records.lms.recognise` has told the layout and
who handed in what. `lms_entries(layout, outdir, not_graded, ...)` gives [(id, path)], one per student:

- a student's folder (the one the LMS made, or an archive of theirs unpacked where it lay, its folder keeping
  the archive's name) is graded as it is; files handed in beside it are listed, never merged into it (the
  archive it was unpacked from said to be that); a student with several folders is graded on none (`_folder_of`);
- of a student's files, the attempt and the files of one own name graded (`checker.records.lms_attempts`);
  one file is graded as it is, several are copied under their own names into OUTDIR/.lms/<id>/<attempt>/
  (`stage`: a folder per attempt, so an older attempt staged never overwrites a later one's copy) and graded
  as one folder; a student with no .py or .ipynb file is listed.
- what is never graded (`Student.aside`: Canvas's text entry or web link, Moodle's onlinetext) is listed once, as
  it was handed in; a student with nothing else has no entry. The Canvas attachment ids of the files
  graded are kept in the student's identity (`canvas_attachments`, students.json), so a later run can tell an
  older download from a newer one (`checker.records.lms_attempts.older_than_graded`).

Everything not graded goes to `not_graded` as (name, why), for the batch's summary; a student none of whose
entries is graded goes to `handed` with those names (`HANDED`), so the roster (`checker.records.roster`) names
what they handed in, from the same attribution, never "no submission".

What it is not: the reading of the LMSs' names (`checker.records.lms`).
"""

from __future__ import annotations

import os
import shutil
import unicodedata

from checker.records.lms_attempts import STAGE

__all__ = ["STAGE", "HANDED", "lms_entries", "stage"]

HANDED = "not_graded"  # the field of an identity in `handed`: the names of the student's entries not graded
CODE = (".py", ".ipynb")
_ARCHIVES = (".zip", ".tar", ".tar.gz", ".tgz", ".rar", ".7z")


def _nfc(text):
    return unicodedata.normalize("NFC", str(text))


def stage(outdir, student, names):
    """OUTDIR/.lms/<id>/<attempt>/ holding the student's files under their own names, <attempt> named by the bytes
    and names staged: each attempt has a folder of its own, so staging one (an older download listed again, for an
    appeal of another student) never overwrites the copy another attempt's scorecard was graded from (h104);
    rewritten when staged again (the same bytes, the same hash)."""
    from checker.records.owned import ensure_folder
    from checker.records.owned_records import join_inside
    # hwcheck's own folder (a student's `.lms`, a link out of OUTDIR, is left alone: checker.records.owned), the id a plain name
    mine = join_inside(ensure_folder(outdir, STAGE, stage=True), student.sid)
    if os.path.islink(mine) or (os.path.lexists(mine) and not os.path.isdir(mine)):
        os.unlink(mine)
    dest = join_inside(mine, _attempt(names))
    if os.path.isdir(dest) and not os.path.islink(dest):
        shutil.rmtree(dest)
    elif os.path.lexists(dest):
        os.unlink(dest)
    os.makedirs(dest)
    for path, name in names.items():
        shutil.copyfile(path, os.path.join(dest, name))
    return dest


def _attempt(names):
    """The name of an attempt's staged folder: a hash of its files' own names and bytes."""
    import hashlib
    h = hashlib.sha256()
    for path, name in sorted(names.items(), key=lambda pn: pn[1]):
        h.update(name.encode("utf-8", "surrogatepass") + b"\0")
        with open(path, "rb") as f:
            h.update(hashlib.sha256(f.read()).digest())
    return h.hexdigest()[:16]


def lms_entries(layout, outdir, not_graded, refused=None, handed=None, assignment=None):
    """([(id, path)], {id: identity}) of an LMS layout's students; what is not graded goes to `not_graded`, and the
    files of a student left ungraded for want of a file to pick (`lms_attempts.own_names`) to `refused` too; `handed` gets
    {id: identity} of each student who handed something in that is not graded (no code, no file to pick)."""
    from checker.records.lms_attempts import graded_names
    entries, people = [], {}
    handed = {} if handed is None else handed
    graded = graded_names(assignment)
    for sid, s in sorted(layout.students.items()):  # `Layout` left out ids that are one name
        start = len(not_graded)
        _student(sid, s, outdir, graded, entries, people, not_graded, refused)
        if sid not in people:  # handed something in, none of it graded: the roster names what, never "no submission"
            mine = [n for n, _ in not_graded[start:]]
            handed[sid] = {**s.identity(), HANDED: sorted(set(mine), key=mine.index)}
    return entries, people


def _student(sid, s, outdir, graded, entries, people, not_graded, refused):
    """Student `s`'s entry, appended to `entries` (and their identity to `people`), or none; every entry of theirs
    not graded goes to `not_graded`, first the ones never graded (`Student.aside`: a text entry, Moodle's
    onlinetext)."""
    from checker.records.lms_attempts import latest_attempt, newest_definitions, own_names
    not_graded += s.aside
    if not s.files and not s.folders:  # only what is never graded: listed once, as it is
        return
    if s.folders:  # the LMS's folder of the student, or an archive of theirs unpacked where it lay
        path = _folder_of(sid, s, not_graded, refused)
        if path is not None:
            entries.append((sid, path))
            people[sid] = s.identity()
        return
    shown = [os.path.basename(p) for p, _ in s.files] or [sid]
    # Canvas: the files of one attempt only (`checker.records.lms_attempts`); then of one own name, the latest
    files, odd, undecided = latest_attempt(s.files, s.uploads, s.late)
    if not undecided:
        names, more, undecided = own_names(files, s.uploads)
        odd += more
    not_graded += [(os.path.basename(p), why) for p, why in odd]
    if undecided:  # the student is flagged, never graded on a file picked at random
        not_graded += [(n, f"{sid}: {undecided}") for n in shown if n not in {os.path.basename(p) for p, _ in odd}]
        if refused is not None:
            refused += shown
        return
    names, aside = newest_definitions(names, s.uploads, graded)  # files that would override each other
    not_graded += [(os.path.basename(p), why) for p, why in aside]
    ids = sorted({s.uploads[p] for p in names if isinstance(s.uploads.get(p), int)})
    if ids:  # Canvas's attachment ids of the files graded: a later download older than these is said
        s.lms["canvas_attachments"] = ids  # (`checker.records.lms_attempts.older_than_graded`)
    if s.late:
        s.lms["late"] = any(p in s.late for p in names)  # the attempt graded was late, or was not
        if not s.lms["late"]:
            s.lms.pop("late")
    code = [p for p, name in names.items() if name.endswith(CODE)]
    if not code:
        not_graded += [(n, f"{sid} handed in no .py or .ipynb file: not graded")
                       for n in shown if n not in {os.path.basename(p) for p, _ in odd}]
        return
    elif len(names) == 1:
        path = code[0]
    else:
        try:
            path = stage(outdir, s, names)
        except (OSError, ValueError) as e:  # ValueError: an id that is no plain name (join_inside)
            why = getattr(e, "strerror", None) or e
            not_graded += [(n, f"{sid}'s files could not be put into one folder ({why}): "
                               f"not graded") for n in shown]
            return
    entries.append((sid, path))
    people[sid] = s.identity()


def _folder_of(sid, s, not_graded, refused=None):
    """The folder student `s` is graded from, or None (not graded, said): their one folder. Files handed in beside
    it are listed, never merged into it (the archive it was unpacked from, or a file to copy in); of several
    folders none is picked."""
    shown = [os.path.basename(p) for p in s.folders] + [os.path.basename(p) for p, _ in s.files]
    if len(s.folders) > 1:
        why = (f"{sid}: the folders {' and '.join(repr(os.path.basename(p)) for p in s.folders)} are all this "
               f"student's (archives unpacked, or the folders of two downloads), and which is the submission cannot "
               f"be told: not graded; put the files of the one to grade into one folder and grade again")
        not_graded += [(n, why) for n in shown]
        if refused is not None:
            refused += shown
        return None
    base = os.path.basename(s.folders[0])
    for p, _ in s.files:
        n = os.path.basename(p)
        archive = next((n[:-len(x)] for x in _ARCHIVES if n.lower().endswith(x)), None)
        if archive is not None and _nfc(archive) == _nfc(base):
            why = f"the archive {sid} handed in, unpacked into the folder '{base}', which is graded"
        else:
            why = (f"{sid} is graded from the folder '{base}', and this file handed in beside it is not merged into "
                   f"it: not graded; copy it into that folder and grade again to grade it too")
        not_graded.append((n, why))
    return s.folders[0]
