"""Which of a Canvas student's files are one attempt, and which id a Canvas or Moodle student keeps across downloads.

What it is for: `checker.records.lms.prepare` on a Canvas "Download Submissions" folder (and, for the id kept
across downloads, on Moodle's "Download all submissions").

- `latest_attempt(files, uploads, late)`: one download holds each student's latest submission, whose files
  all carry its `LATE_` mark or none (canvas-lms lib/content_zipper.rb `get_filename`: name, `LATE` when
  the submission is late, user id; then each file's attachment id). Files of one student with and without
  the mark are two attempts (two downloads unzipped into one folder): merged, the older one's functions
  could override the newer's. The attempt whose attachment ids are all above the other's (Canvas numbers
  attachments as they are uploaded) is graded, the other set aside and said; attempts whose ids interleave
  cannot be ordered, and neither is graded. (Canvas's names carry no submission id or attempt number.)
- `own_names(files, uploads)`: the names the files of one student are graded under, and of the files of one
  own name (a file uploaded again, Canvas's `-N`; two downloads unzipped into one folder) the latest only.
- `newest_definitions(names, uploads, graded)`: of a student's files of different names that define one
  graded function (two attempts of one mark, or a notebook and the `.py` exported from it), the one uploaded
  last (the highest attachment id) is graded and the older set aside, said: loading both lets the file
  loaded last decide, whichever it is. Files that define different functions (one submission in parts) are
  graded together, as before; the shipped starter, which grading leaves out, never counts.

- `same_lms_user(platform, outdir, entries, people, old, notes)` (`same_canvas_user` for Canvas): Canvas's id is
  `<sortable name>_<user id>` and Moodle's `<full name>_<participant id>`; the name is the student's (a name
  changed in the LMS between two downloads changes it), the user or participant id is the LMS's own and stays.
  A student whose user id OUTDIR graded before under another name is graded under that id again, said in one
  line, so their scorecard, the grades of manual.csv and their row of grades.csv stay one (the name in
  grades.csv's `student` column is the new one). Of several older ids of one user, none is taken (said).

- `older_than_graded(outdir, entries, people, old, notes, regrading, only)`: a student whose files graded now carry
  lower attachment ids than those OUTDIR graded before (an older download graded over a later one's output
  folder; the ids graded before: students.json's `canvas_attachments`, else the file name the old scorecard
  graded). The later attempt's grade is never replaced unless the TA names the student (`--only ID` on the older
  folder: graded, and a warning says it is the older attempt, h104): otherwise the student keeps their record
  (attempt, late flag, identity) and is graded from the later attempt's own file where it is still there as
  graded (a `--resume` after the tests changed regrades it from there, `regrading`,
  `checker.records.regrade_from.stale_own_files`; else that scorecard is current and kept), or is left out of
  the batch, the scorecard kept as it is, where that file is gone; a line says which, and the `--only` that
  grades the older attempt (h102, h104).
- `own_file(card, outdir)`: the file a scorecard was graded from, where it is still there as graded (a copy
  staged into an OUT's .lms/ read in OUTDIR's own: an OUT moved keeps its staged copies, h104); also importable
  from `checker.records.regrade_from`.
- `kept_for_only(outdir, people, old, only)`: an `--only` appeal takes from the folder the record of the students
  it names only; every other student OUTDIR holds a scorecard of keeps theirs (h104).

- `keep_earlier_students(outdir, people, old, assignment)`: who each student graded into OUTDIR before is, kept
  for the ids a later download (the late submissions only, graded with --resume) does not list: students.json
  is merged across downloads, the newer download's data winning for an id it lists (h86: a late-only download
  left every other student without a name and out of canvas.csv).
- `same_gradescope_student(outdir, entries, people, old, notes)`: a Gradescope resubmission comes as a new
  `submission_<id>`; a submission graded now whose submitter (student id, else email) OUTDIR graded before under
  another id is named with it, and the older id's manual.csv rows (stranded there) are shown with what to do.
  Not linked: both ids keep their scorecards and rows.

What it is not: the reading of Canvas's and Moodle's file names (`checker.records.lms`).
"""

from __future__ import annotations

import hashlib
import os
import re

from checker.records.ids import key

__all__ = ["STAGE", "own_file", "same_canvas_user", "same_lms_user", "older_than_graded", "kept_for_only",
           "latest_attempt", "own_names", "newest_definitions", "graded_names", "keep_earlier_students",
           "same_gradescope_student"]

STAGE = ".lms"  # OUTDIR's folder of students' files staged (`checker.records.lms_students.stage`)

_RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.[^.]+)$")  # Canvas's `-N`: a file uploaded again

_CANVAS_ID = re.compile(r"^(?P<name>.*)_(?P<uid>\d+)$")


def canvas_name(text):
    """Whether `text` can be a name as Canvas writes it into a download's file name: word characters in any
    script, with their combining marks (Devanagari's vowel signs, Thai's, Arabic's, Hebrew's points: not in
    Python's `\\w`) and connector punctuation. Refusing a mark made an honest student's file unreadable, and a
    sortable name with fields of its own inside could then be read only one way, as someone else's."""
    import unicodedata
    return all(ch == "_" or ch.isalnum() or unicodedata.category(ch)[0] == "M" or unicodedata.category(ch) == "Pc"
               for ch in text)


_MOODLE_ID = re.compile(r"^(?P<name>.+)_(?P<uid>\d+)$")  # `Full Name_participantid`: the id is Moodle's, at the end

# per LMS: (its user id's field in a student's identity, the id's shape, whether a name fits that shape, the TA's word)
_USERS = {"canvas": ("canvas_user_id", _CANVAS_ID, canvas_name, "Canvas user", "Canvas"),
          "moodle": ("moodle_participant", _MOODLE_ID, bool, "Moodle participant", "Moodle")}


def _uid_of(sid, person, platform="canvas"):
    """The LMS's user id of an earlier id: from the students.json of its run, else from the id's own shape."""
    field, shape, fits, _, _ = _USERS[platform]
    uid = (person or {}).get(field) if isinstance(person, dict) else None
    if uid:
        return str(uid)
    m = shape.match(sid)  # only where the last run's students.json does not know the id
    return m["uid"] if m and fits(m["name"]) and person is None else None


def same_canvas_user(outdir, entries, people, old, notes):
    """`same_lms_user` for Canvas (its user id)."""
    return same_lms_user("canvas", outdir, entries, people, old, notes)


def same_lms_user(platform, outdir, entries, people, old, notes):
    """(entries, people) with each student whose LMS user id (Canvas's user id, Moodle's participant id) OUTDIR
    holds an older scorecard of, under another id, graded under that older id (see the module docstring);
    `old`: the students.json of the last run."""
    from checker.records.outfolder import scorecard_ids
    field, _, _, who, lms = _USERS[platform]
    before = set(scorecard_ids(outdir))
    known = old.get("students") if isinstance(old.get("students"), dict) else {}
    ids = {sid for sid, _ in entries}
    by_uid = {}
    for o in sorted(before - ids):
        uid = _uid_of(o, known.get(o), platform)
        if uid:
            by_uid.setdefault(uid, []).append(o)
    renamed = {}
    for sid, _ in entries:
        person = people.get(sid) or {}
        uid = str(person.get(field) or "")
        if not uid or sid in before or not by_uid.get(uid):
            continue
        olds = by_uid[uid]
        if len(olds) > 1:
            notes.append(f"{who} {uid} ({sid}) was graded into {outdir} before as {' and '.join(olds)}: graded "
                         f"as {sid}, a row of its own in grades.csv; the grades manual.csv gives those ids stay "
                         f"with them: move them to {sid} there if they are this student's")
            continue
        renamed[sid] = olds[0]
        notes.append(f"{who} {uid} was graded into {outdir} before as {olds[0]}; {lms}'s file names now "
                     f"call them {person.get('student') or sid!r} ({sid}: a name changed in {lms}): graded as "
                     f"{olds[0]} again, so their scorecard, the grades of manual.csv and their row of grades.csv "
                     f"stay one")
    if not renamed:
        return entries, people
    entries = [(renamed.get(sid, sid), path) for sid, path in entries]
    people = {renamed.get(sid, sid): {**person, **({f"{platform}_id_in_files": sid} if sid in renamed else {})}
              for sid, person in people.items()}
    return entries, people


_CANVAS_FILE = re.compile(r"^.+?_(?:LATE_)?\d+_(?P<fileid>\d+)_.+$")


def _graded_before(outdir, sid, person):
    """(the Canvas attachment ids OUTDIR graded `sid` on before, the sha256 graded), from the old students.json's
    identity, else the name of the one file the old scorecard graded; ([], sha) when neither says, ([], None)
    when OUTDIR holds no scorecard of `sid` (nothing to replace)."""
    from checker.records.outfolder import read_scorecard
    card = read_scorecard(outdir, sid)
    if not isinstance(card, dict):
        return [], None
    sub = card.get("submission")
    sha = sub.get("sha256") if isinstance(sub, dict) else None
    ids = (person or {}).get("canvas_attachments") if isinstance(person, dict) else None
    if isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
        return ids, sha
    m = _CANVAS_FILE.match(os.path.basename(str((sub or {}).get("path") or "")))
    return ([int(m["fileid"])] if m else []), sha


def older_than_graded(outdir, entries, people, old, notes, regrading=None, only=None):
    """Each Canvas student whose files graded now are all older uploads (lower attachment ids) than those OUTDIR
    graded before, where what is graded now differs: see the module docstring. Returns the entries: the later
    attempt's file where it is still there as graded (`regrading(sid)` for a scorecard graded with other tests),
    or none (the scorecard kept as it is), with `people[sid]` as OUTDIR knew them before; the older attempt only
    where `only` (the ids of `--only`) names the student, said."""
    from checker.records.outfolder import read_scorecard
    from checker.running.submission_files import sha256_of
    known = old.get("students") if isinstance(old.get("students"), dict) else {}
    kept = []
    for sid, path in entries:
        kept.append((sid, path))
        now = (people.get(sid) or {}).get("canvas_attachments")
        if not now:
            continue
        before, sha = _graded_before(outdir, sid, known.get(sid))
        if not before or max(now) >= max(before):
            continue
        try:
            if sha is not None and sha256_of(path) == sha:
                continue  # the same bytes: nothing is replaced
        except OSError:
            pass
        shown = {k: (f"attachment{'s' if len(v) > 1 else ''} " + ", ".join(map(str, v)))
                 for k, v in (("now", now), ("before", before))}
        if only is not None and sid in only:  # asked for by name: the older attempt, said
            notes.append(f"warning: {sid}: --only grades the older attempt this folder holds (Canvas {shown['now']}), "
                         f"not the later one graded into {outdir} before ({shown['before']}; Canvas numbers "
                         f"attachments as they are uploaded): its scorecard replaces the later attempt's, as asked; "
                         f"grade the later download with --only {sid} to grade the later attempt again")
            continue
        if isinstance(known.get(sid), dict):
            people[sid] = dict(known[sid])  # who they are, their attempt and late flag: as graded before
        if only is not None:
            continue  # not asked for: kept as it is, its record too
        own = regrading(sid) if regrading is not None else None
        if own is not None:  # a regrade for other tests: the later attempt, from the file it was graded from
            kept[-1] = (sid, own)
            notes.append(f"{sid}: this folder holds an older attempt (Canvas {shown['now']}) than the one graded "
                         f"into {outdir} before ({shown['before']}): its scorecard was graded with other tests, so "
                         f"--resume regrades the later attempt, from the file it was graded from ({own})")
            continue
        own = own_file(read_scorecard(outdir, sid), outdir)
        if own is not None:
            kept[-1] = (sid, own)
        else:
            kept.pop()  # the later attempt's file is gone: its scorecard is kept as it is
        notes.append(f"{sid}: this folder holds an older attempt (Canvas {shown['now']}) than the one graded into "
                     f"{outdir} before ({shown['before']}; Canvas numbers attachments as they are uploaded): the later "
                     f"attempt's grade is kept" + (f" (graded from {own})" if own else ", as it is (its file is no "
                     f"longer there as graded)") + f"; to grade the older attempt instead, grade this folder with "
                     f"--only {sid}")
    return kept


def own_file(card, outdir=None):
    """The path of the file or folder `card` was graded from, where it is still there with the sha256 graded; a
    copy hwcheck staged into an OUT's .lms/ is read in OUTDIR's own .lms/ (an OUT moved or renamed keeps it)."""
    from checker.running.submission_files import sha256_of
    sub = (card or {}).get("submission") if isinstance(card, dict) else None
    path, sha = (sub.get("path"), sub.get("sha256")) if isinstance(sub, dict) else (None, None)
    if not isinstance(path, str) or not path or not isinstance(sha, str):
        return None
    path = _in_stage(outdir, path) or path
    if not os.path.exists(path):
        return None
    try:
        return path if sha256_of(path) == sha else None
    except OSError:
        return None


def _in_stage(outdir, path):
    """Where a path staged into some OUT's .lms/ lies in OUTDIR's own .lms/, if OUTDIR is given; else None."""
    mark = os.sep + STAGE + os.sep
    if outdir is None or mark not in path:
        return None
    tail = path.rsplit(mark, 1)[1]
    if not tail or tail.startswith(os.sep) or ".." in tail.split(os.sep):
        return None
    return os.path.join(os.path.abspath(outdir), STAGE, tail)


def kept_for_only(outdir, people, old, only):
    """people with each student `--only` does not name, whom OUTDIR holds a scorecard of, as OUTDIR knew them
    before (the last run's students.json): an appeal of one student leaves every other's record (attempt, late
    flag, identity) as it was, whatever this folder holds of them."""
    from checker.records.outfolder import scorecard_ids
    known = old.get("students") if isinstance(old.get("students"), dict) else {}
    if only is None or not known:
        return people
    held = set(scorecard_ids(outdir)) if os.path.isdir(outdir) else set()
    return {sid: (dict(known[sid]) if sid not in only and sid in held and isinstance(known.get(sid), dict) else who)
            for sid, who in people.items()}


def latest_attempt(files, uploads, late):
    """(files of the latest attempt, [(path, why)] set aside, why none is graded or None): see the module
    docstring. files: [(path, own name)]; uploads: {path: attachment id}; late: the paths marked `LATE_`."""
    marked = [f for f in files if f[0] in late]
    plain = [f for f in files if f[0] not in late]
    if not marked or not plain or not all(isinstance(uploads.get(p), int) for p, _ in files):
        return files, [], None
    ids = {"LATE": {uploads[p] for p, _ in marked}, "on time": {uploads[p] for p, _ in plain}}
    shared = ids["LATE"] & ids["on time"]  # one attachment in both (the same file handed in again): no order
    if not ids["LATE"] - shared or not ids["on time"] - shared:
        return files, [], None  # nothing tells the attempts apart: the files of one own name are judged as such
    shown = {k: ", ".join(map(str, sorted(v))) for k, v in ids.items()}
    if min(ids["LATE"] - shared) > max(ids["on time"] - shared):
        newer, older, kind, other = marked, plain, "LATE", "on time"
    elif min(ids["on time"] - shared) > max(ids["LATE"] - shared):
        newer, older, kind, other = plain, marked, "on time", "LATE"
    else:
        return [], [], (f"its files are of two attempts (two downloads unzipped into one folder?): the LATE one "
                        f"(Canvas attachments {shown['LATE']}) and the one on time (attachments {shown['on time']}), "
                        f"whose attachment ids interleave, so which is the later cannot be told: neither is graded "
                        f"rather than a mix of both; keep only the files of the submission to grade and grade again")
    newest = ", ".join(sorted(os.path.basename(p) for p, _ in newer))
    why = (f"a file of an earlier attempt ({other}, Canvas attachment{'s' if len(ids[other]) > 1 else ''} "
           f"{shown[other]}) than the {kind} one of {newest} (attachment{'s' if len(ids[kind]) > 1 else ''} "
           f"{shown[kind]}; Canvas numbers attachments as they are uploaded): set aside, the latest attempt is graded "
           f"(two downloads unzipped into one folder)")
    return newer, [(p, why) for p, _ in older], None


_DEF = re.compile(r"^(?:async[ \t]+def|def|class)[ \t]+([A-Za-z_]\w*)", re.M)


def _defined(path):
    """The names a student's `.py` file or notebook defines at its top level (`def`, `class`), read as text (no
    student code runs); empty when it cannot be read."""
    from checker.records.identical import notebook_cells
    from checker.running.safe_read import Refused, read_bytes
    try:
        text = read_bytes(path).decode("utf-8-sig", errors="replace")
    except (Refused, OSError):
        return set()
    pieces = (notebook_cells(text) or []) if path.endswith(".ipynb") else [text]
    return {m[1] for piece in pieces for m in _DEF.finditer(piece)}


def graded_names(assignment):
    """The names the assignment's questions grade (None when it is not known: every name defined counts)."""
    if not assignment:
        return None
    try:
        from checker.spec import load_spec
        spec = load_spec(assignment)
    except Exception:  # noqa: BLE001 - an unknown assignment is refused by the batch itself
        return None
    return {str(n) for q in spec.get("questions") or [] for n in q.get("names") or []}


def newest_definitions(names, uploads, graded=None):
    """({path: own name} kept, [(path, why)] set aside): see the module docstring. names: `own_names`'s
    {path: own name}; uploads: {path: Canvas attachment id}; graded: the names that count (None: all)."""
    from checker.running.starter import is_starter
    code = [p for p, n in names.items() if n.endswith((".py", ".ipynb")) and isinstance(uploads.get(p), int)]
    if len(code) < 2:
        return names, []
    defined = {}
    for p in code:
        try:
            if is_starter(p):
                continue  # grading leaves the shipped starter out
        except OSError:
            continue
        found = _defined(p)
        defined[p] = found if graded is None else found & graded
    kept, aside, have = dict(names), [], {}
    for p in sorted(defined, key=lambda q: uploads[q], reverse=True):  # the latest upload first
        clash = sorted(defined[p] & set(have))
        if not clash:
            have.update({n: p for n in defined[p]})
            continue
        newer = have[clash[0]]
        shown = ", ".join(clash[:4]) + (f" and {len(clash) - 4} more" if len(clash) > 4 else "")
        aside.append((p, f"{names[p]} (Canvas attachment {uploads[p]}) defines {shown} as {names[newer]} "
                         f"(attachment {uploads[newer]}), uploaded later, does: the later file is graded and "
                         f"this one set aside (two attempts, or two versions of one file; graded together, the "
                         f"file loaded last would decide)"))
        kept.pop(p)
    return kept, aside


def own_names(files, uploads=None):
    """({path: name in the staged folder}, [(path, why)] of the files left out, why none is graded or None).

    The LMS's prefix is taken off, Canvas's `-N` too where that frees no clash. A file whose own name
    cannot be a file in a folder (`..`, `.`, empty, a separator) is left out; two whose own names would be
    one file on a case-insensitive disk keep the names the LMS gave them. Of the files of one own name (a
    file uploaded again; two downloads unzipped into one folder) only the latest is kept: the one of the
    highest Canvas attachment id (`uploads`, {path: id}; Canvas numbers attachments as they are uploaded),
    else of the highest `-N`. Where that cannot tell them apart and their bytes differ, no file is picked:
    the third value says why, and the student is not graded."""
    out, odd, taken = {}, [], set()
    uploads = uploads or {}
    usable = []
    for path, name in sorted(files, key=lambda pf: (pf[1], pf[0])):
        if name in ("", ".", "..") or "/" in name or "\\" in name or "\0" in name:
            odd.append((path, f"its own file name {name!r} cannot be a file in the student's folder: left out of "
                              f"the submission, the rest of it is graded"))
        else:
            usable.append((path, name))
    # a file uploaded again under the same name (Canvas's `-N`, N counting up): only the latest is the student's
    # submission; loading both ran the older one last (`attention.py` sorts after `attention-1.py`), so its
    # functions were graded
    def upload(name):  # (the name's key without Canvas's `-N`, N; 0 for the first upload)
        m = _RESUBMITTED.match(name)
        return (key(f"{m['stem']}{m['ext']}"), int(name[len(m['stem']) + 1:-len(m['ext'])])) if m else (key(name), 0)
    groups = {}  # plain name's key -> [(path, name, N)] of its uploads
    for path, name in usable:
        plain, n = upload(name)
        groups.setdefault(plain, []).append((path, name, n))
    keep, undecided = set(), []
    for group in groups.values():
        if len(group) == 1:
            keep.add(group[0][0])
            continue
        by_id = all(isinstance(uploads.get(path), int) for path, _, _ in group)
        order = (lambda f: uploads[f[0]]) if by_id else (lambda f: f[2])
        top = max(order(f) for f in group)
        latest = [f for f in group if order(f) == top]
        if len(latest) > 1 and len({_file_sha(path) for path, _, _ in latest}) > 1:
            shown = " and ".join(os.path.basename(path) for path, _, _ in latest)
            undecided.append(f"{shown} are different files under one name, and which is the later cannot be told "
                             f"({'the same Canvas attachment id' if by_id else 'the same upload number'})")
            continue
        path0, name0, _ = latest[0]
        keep.add(path0)
        for f in group:
            path, name, _ = f
            if path == path0:
                continue
            if order(f) == top:
                why = f"{os.path.basename(path)} is the same file as {os.path.basename(path0)}: one of them is graded"
            elif by_id:
                why = (f"{name} (Canvas attachment {uploads[path]}) is an earlier upload than {name0} (attachment "
                       f"{uploads[path0]}; Canvas numbers attachments in the order they are uploaded): the later one "
                       f"is graded")
            else:
                why = (f"{name} is an earlier upload of {name0} (Canvas numbers a file uploaded again under the same "
                       f"name): the later one is graded")
            odd.append((path, why))
    if undecided:
        return {}, odd, ("; ".join(undecided) + ": none is graded rather than either; keep only the file to grade "
                         "in the folder (the one of the latest submission) and grade again")
    usable = [(path, name) for path, name in usable if path in keep]
    wanted = {key(name) for _, name in usable}
    for path, name in usable:
        m = _RESUBMITTED.match(name)
        plain = f"{m['stem']}{m['ext']}" if m else name
        if plain != name and key(plain) not in wanted and key(plain) not in taken:
            name = plain
        if key(name) in taken:
            name = os.path.basename(path)
        taken.add(key(name))
        out[path] = name
    return out, odd, None


def _file_sha(path):
    """The sha256 of a file's bytes (two files of one name and attachment id: the same file twice, or not)."""
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return path  # unreadable: told apart from every other file


def keep_earlier_students(outdir, people, old, assignment):
    """people with who each student graded into OUTDIR before is (the last run's students.json) added for every
    id OUTDIR still holds a scorecard of and this download does not list (a late-only download graded into the
    class's folder with --resume): who a student is is merged across downloads, the newer download's data
    winning for an id it lists. An earlier record of another assignment is not taken."""
    from checker.records.outfolder import scorecard_ids
    known = old.get("students") if isinstance(old.get("students"), dict) else {}
    if not known or (old.get("assignment") and assignment and old.get("assignment") != assignment):
        return people
    held = set(scorecard_ids(outdir)) if os.path.isdir(outdir) else set()
    earlier = {sid: dict(person) for sid, person in known.items()
               if sid not in people and sid in held and isinstance(person, dict)}
    return {**earlier, **people} if earlier else people


def _stranded_rows(outdir, sid):
    """manual.csv's rows of `sid` that give a grade: ['Q3-text 8 (good answer)', ...] (read as text: a file the
    TA saved in a spreadsheet may have any of its quirks; `checker.records.manual_read` judges it later)."""
    import csv
    from checker.records.manual import manual_path
    try:
        with open(manual_path(outdir), encoding="utf-8-sig", newline="") as f:
            rows = list(csv.reader(f))
    except (OSError, UnicodeDecodeError, csv.Error):
        return []
    return [f"{r[1]} {r[2]}" + (f" ({r[3]!r})" if len(r) > 3 and r[3].strip() else "")
            for r in rows[1:] if len(r) >= 3 and r[0].strip() == sid and r[2].strip()]


def same_gradescope_student(outdir, entries, people, old, notes):
    """Name each Gradescope submission graded now whose submitters (student id, else email) OUTDIR graded before
    under another submission id (a resubmission: Gradescope gives it a new `submission_<id>`): the two ids are one
    student's, both keep a scorecard and a row of grades.csv, and the grades manual.csv gives the old id (a
    question graded by hand, an adjustment) stay with it: said in `notes`, with the rows, so the TA moves them and
    uploads one of the two. Returns {new id: [older ids]}."""
    from checker.records.outfolder import scorecard_ids
    known = old.get("students") if isinstance(old.get("students"), dict) else {}
    ids = {sid for sid, _ in entries}
    held = set(scorecard_ids(outdir)) if os.path.isdir(outdir) else set()

    def marks(person):
        if not isinstance(person, dict):
            return set()
        sids = {s.strip() for s in str(person.get("student_id") or "").split(";") if s.strip()}
        return {("sid", s) for s in sids} or {("email", e.strip().lower()) for e in
                                              str(person.get("email") or "").split(";") if e.strip()}
    linked = {}
    for sid, _ in sorted(entries):
        mine = marks(people.get(sid))
        olds = sorted(o for o in held - ids if o in known and mine & marks(known[o]))
        if not olds:
            continue
        linked[sid] = olds
        who = (people.get(sid) or {}).get("student") or sid
        for o in olds:
            rows = _stranded_rows(outdir, o)
            typed = (f"; manual.csv gives {o}: {', '.join(rows)}, which stay with {o} (stranded): copy those you "
                     f"still mean into {sid}'s rows and empty {o}'s" if rows else "")
            notes.append(f"warning: {sid} and {o} are one student's ({who}: the same Gradescope submitter, a "
                         f"resubmission under a new submission id): {sid} is graded now and {o}'s scorecard from "
                         f"before stays in {outdir}, so grades.csv lists {who} twice{typed}; upload {sid}'s grade")
    return linked
