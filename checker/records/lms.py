"""Recognise the folders LMSs export, and group one student's files into one submission.

What it is for: `hwcheck grade` on a folder downloaded from an LMS. `recognise(folder)`
tells the layout and who handed in what; `prepare(folder, outdir, notes)` turns it into
the batch's entries [(id, path)] and writes OUTDIR/.students.json (who each id is, the
identical-code groups of `checker.records.identical`, the roster's matches of `checker.records.roster`),
which grades.csv and the LMS exports (`checker.records.exports`) read.

The layouts (each fact and where it comes from):
- Canvas, "Download Submissions": the names as Canvas's own code writes them (canvas-lms
  lib/content_zipper.rb, `get_filename` and `add_upload_submission`): one file per uploaded
  file, `<name>_[LATE_]<user id>_<attachment id>_<original name>`, where <name> is the
  student's sortable name ("Last, First") lower-cased with every character that is not a
  letter, digit or `_` removed (Unicode letters kept: `müllerjürgen`); `LATE` marks a late
  submission; with anonymous grading the name is left out and the id is `anon_<anonymous id>`
  (`[LATE_]anon_x7Kq2_<attachment id>_<name>`); a file uploaded again under the same name
  gets `-N` before its extension (`attention-1.py`); of the files of one own name (a file uploaded
  again; two downloads unzipped into one folder) the one of the highest attachment id is graded
  (content_zipper.rb writes `file.id`, the id of the Attachment row Canvas made when the file was
  uploaded: ids count up, so the higher is the later upload; a student whose files of one name
  cannot be ordered so, and differ, is graded on neither and named); text entries and URLs come as
  `<name>_<user id>_text.html` / `_link.html` (not code: left aside). id: `<name>_<user id>`
  or `anon_<id>` (stable when the student resubmits: the attachment ids and file names
  change, the user id does not).
- Moodle, "Download all submissions" (Moodle docs, Assignment settings / grading; folder
  names as found in course scripts): files `Full Name_participantid_assignsubmission_file_name`
  or, with "Download submissions in folders", one folder per student
  `Full Name_participantid_assignsubmission_file_` holding the files under their own names
  (and `..._assignsubmission_onlinetext_` for online text, not graded). id:
  `Full Name_participantid`.
- Gradescope, "Export Submissions": `submission_metadata.yml` maps each `submission_<id>`
  folder to its `:submitters:` (`:name:`, `:sid:`, `:email:`; several for a group). id: the
  folder's name. Recognised only by its whole structure: the metadata file and nothing but
  the `submission_<id>` folders it names (one uploaded `submission_metadata.yml` among
  students' files makes no export).
- GitHub Classroom (the Classroom Assistant clones one repository per student, named
  `<assignment prefix>-<github username>`): every entry a folder, all sharing a prefix that
  ends in `-` (the assignment's slug where the folder is `gh classroom clone`'s
  `<slug>-submissions`; else the longest shared prefix, so usernames that share a start lose it
  unless a roster tells them). id: the folder's name; student and student id: the username.

Names a student chooses: Canvas's sortable name and Moodle's full name, and the name of every
file handed in, are the student's, and both may hold what looks like the fixed fields
(`Doe, John_.1001_.9_.zz` makes Canvas write `doejohn_1001_9_zz_<own id>_...`). So a file name
is read at every `_` where the fixed fields could begin (`_parses`); the student's own reading
always exists, so a file read one way is what the LMS wrote, and a file read several ways
keeps only the readings that fit the files read one way (one user, one name) and, when a
roster exported from that LMS is given, the roster (user id and name). A file still read as
more than one student's is merged into no one's submission and listed, with the students it
could be (`_settle`). A Moodle folder's name is read from its end, where its fields are fixed.

Several files of one student are copied (under their own names, `-N` taken off where no
other file has that name; an own name that cannot be a file, such as `..`, left out with a
message) into OUTDIR/.lms/<id>/, graded as one folder submission; a student with one file is
graded from that file. Ids are canonical (`checker.records.ids`); names are NFC-normalised (macOS
writes NFD), so `Müller` in a file name matches `Müller` in a roster. Every entry of the
folder not graded (and why) is kept in students.json's `not_graded`, and `checker.records.batch.after_batch`
lists it in the batch's summary.

What it is not: the grading (`checker.records.batch`) or the CSVs the LMSs import (`checker.records.exports`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata

from checker.errors import HwcheckError
from checker.records.ids import canonical, key
from checker.records.lms_attempts import canvas_name

__all__ = ["Student", "Layout", "recognise", "prepare", "read_students", "students_path", "nfc",
           "STUDENTS_JSON", "STAGE"]

STUDENTS_JSON = ".students.json"  # hidden: a student `students.py` has OUT/students.json
STAGE = ".lms"
CODE = (".py", ".ipynb")

# Canvas: `<name>_[LATE_]<user id>_<attachment id>_<file>`; the name and the file are the student's, so a name is
# read at every `_` that could end it (`_parses`), and `_settle` decides which reading holds
_CANVAS_FIELDS = re.compile(r"_(?P<late>LATE_)?(?P<uid>\d+)_(?P<fileid>\d+)_(?P<file>.+)$")
_CANVAS_ANON = re.compile(r"^(?P<late>LATE_)?(?P<uid>anon_[A-Za-z0-9]+)_(?P<fileid>\d+)_(?P<file>.+)$")
_CANVAS_TEXT = re.compile(r"^(?P<name>.*?)_(LATE_)?(\d+|anon_[A-Za-z0-9]+)_(text|link)\.html$")
_MOODLE_FIELDS = re.compile(r"_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$")
_MOODLE_DIR = re.compile(r"^(?P<name>.+)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")  # read from the end
_GRADESCOPE_DIR = re.compile(r"^submission_\d+$")
GRADESCOPE_METADATA = "submission_metadata.yml"


def nfc(text):
    return unicodedata.normalize("NFC", str(text))


class Student:
    """One student's submission as the LMS names it: files (or one folder) and who it is."""

    def __init__(self, sid, student="", student_id="", email="", **lms):
        self.sid, self.student, self.student_id, self.email = canonical(sid), nfc(student), nfc(student_id), nfc(email)
        self.lms = {k: v for k, v in lms.items() if v not in (None, "", False)}
        self.files = []     # [(path, the file's own name)] (several: staged into one folder)
        self.uploads = {}   # {path: Canvas's attachment id of the file} (ids count up as files are uploaded)
        self.late = set()   # the paths Canvas marked LATE_ (one download's files of a student: all or none)
        self.folder = None  # a folder the LMS made for this student

    def identity(self):
        return {"student": self.student, "student_id": self.student_id, "email": self.email, **self.lms}


class Layout:
    """platform (canvas, moodle, gradescope, classroom or None) and its students, by id."""

    def __init__(self, platform, students=(), ignored=()):
        self.platform = platform
        self.students, ignored = {}, list(ignored)
        groups = {}
        for s in students:
            groups.setdefault(key(s.sid), []).append(s)
        for group in groups.values():
            if len(group) == 1:
                self.students[group[0].sid] = group[0]
                continue
            # ids that are one name to a person and a case-insensitive disk: none is graded, never first-come
            ids = " and ".join(repr(s.sid) for s in group)
            ignored += [(os.path.basename(p), f"the ids {ids} would be one (they differ only by letter case, "
                                              f"Unicode form or invisible characters): none of them is graded")
                        for s in group for p in ([p for p, _ in s.files] or [s.folder or s.sid])]
        self.ignored = sorted(ignored)  # [(name, why)] of the entries of the layout not graded


def _entries(folder):
    return [n for n in sorted(os.listdir(folder)) if not n.startswith(".") and n not in ("__pycache__", "__MACOSX")]


def _parses(name, fields, fits_name):
    """Every reading of a file name `<name>_<fixed fields>_<file>`: one per `_` where the fields can begin."""
    out = []
    for i, ch in enumerate(name):
        m = fields.match(name, i) if ch == "_" else None
        if m and fits_name(name[:i]):
            out.append({"name": name[:i], **m.groupdict()})
    return out


def _canvas_parses(name):
    name = nfc(name)
    out = [{**m.groupdict(), "name": ""} for m in [_CANVAS_ANON.match(name)] if m]
    # a name is Canvas's sortable name, lower-cased, word characters only: never `..._LATE` (that is the flag)
    out += _parses(name, _CANVAS_FIELDS, lambda n: canvas_name(n) and not re.search(r"(^|_)LATE$", n))
    return out


def _moodle_parses(name):
    return _parses(nfc(name), _MOODLE_FIELDS, bool)


def _who(platform, p):
    return f"{'Canvas user' if platform == 'canvas' else 'Moodle participant'} {p['uid']} named {p['name']!r}"


def _settle(platform, parsed, known):
    """({file: its one reading}, [(file, why)]) of files each read one or more ways.

    A file read one way is what the LMS wrote (the student's own reading always exists: a name or a file
    name shaped like fixed fields only adds readings). Of a file read several ways, a reading is ruled out
    when files read one way give its user another name, or when `known` ({user id: names that fit}, from a
    roster exported from that LMS) lacks its user; the one reading left must fit the roster's name for its
    user too (a name changed on the LMS after the roster was exported rules nothing out). A file left with
    more than one reading, or none, is not merged into anyone's submission: it is listed. So are the files
    of a user whose files give the user two names."""
    names = {}
    for ps in parsed.values():
        if len(ps) == 1:
            names.setdefault(ps[0]["uid"], set()).add(ps[0]["name"])

    def possible(p):
        if p["uid"] in names and names[p["uid"]] != {p["name"]}:
            return False
        return known is None or p["uid"] in known

    chosen, flagged = {}, []
    for n, ps in sorted(parsed.items()):
        ok = ps if len(ps) == 1 else [p for p in ps if possible(p)]
        if len(ok) == 1 and len(ps) > 1 and known is not None and not _fits_roster(ok[0]["name"], known[ok[0]["uid"]]):
            ok = []  # the one reading left is not the roster's name of its user either
        if len(ok) == 1 and len(names.get(ok[0]["uid"], ())) <= 1:
            chosen[n] = ok[0]
        elif len(ok) == 1:
            flagged.append((n, f"the files of {platform}'s user {ok[0]['uid']} give them different names "
                               f"({', '.join(sorted(map(repr, names[ok[0]['uid']])))}): not graded; check which "
                               f"files are the student's"))
        else:
            flagged.append((n, f"its name reads as the file of more than one student "
                               f"({'; '.join(_who(platform, p) for p in ps)}): merged into no one's "
                               f"submission, not graded" + ("" if known else "; a roster exported from "
                                                            f"{platform.capitalize()} (--roster) may settle it")))
    return chosen, flagged


def _fits_roster(name, keys):
    from checker.records.roster import name_keys
    return not keys or bool(name_keys(name) & keys) or (not name and "" in keys)


def _roster_names(rows, field):
    """{LMS user id: the names the roster gives it, as keys} from a roster with that LMS's ids, else None."""
    from checker.records.roster import name_keys
    if not rows or not any(r.get(field) for r in rows):
        return None
    out = {}
    for r in rows:
        if r.get(field):
            out.setdefault(str(r[field]), set()).update(name_keys(r.get("name", "")) | {_canvas_form(r)})
    return out


def _canvas_form(row):
    """A roster name as Canvas writes it into file names: word characters and their marks, lower case."""
    return "".join(ch for ch in nfc(row.get("name", "")) if canvas_name(ch)).lower()


def _canvas_text(name):
    m = _CANVAS_TEXT.match(name)
    return bool(m) and canvas_name(m["name"])


def _canvas(folder, names, rows=None):
    files = [n for n in names if os.path.isfile(os.path.join(folder, n))]
    code = [n for n in files if n.endswith(CODE)]
    if not code or len(files) < len(names):
        return None
    parsed = {n: _canvas_parses(n) for n in files}
    if not all(parsed[n] for n in code):
        return None
    ignored = [(n, "a text entry or web link handed in on Canvas, not code" if _canvas_text(nfc(n))
                else "not named as Canvas names a student's file") for n in files if not parsed[n]]
    chosen, flagged = _settle("canvas", {n: ps for n, ps in parsed.items() if ps},
                              _roster_names(rows, "canvas_user_id"))
    students = {}
    for n, m in chosen.items():
        anonymous = m["uid"].startswith("anon_") and not m["name"]
        name = m["name"]
        sid = m["uid"] if anonymous else f"{name}_{m['uid']}"
        s = students.get(sid)
        if s is None:
            s = students[sid] = Student(sid, name, m["uid"], platform="canvas",
                                        canvas_user_id=None if anonymous else m["uid"], anonymous=anonymous)
        s.lms["late"] = s.lms.get("late") or bool(m["late"])
        s.files.append((os.path.join(folder, n), m["file"]))
        if m["late"]:
            s.late.add(os.path.join(folder, n))
        s.uploads[os.path.join(folder, n)] = int(m["fileid"])
    return Layout("canvas", students.values(), ignored + flagged)


def _moodle(folder, names, rows=None):
    students, ignored, parsed = {}, [], {}
    for n in names:
        path = os.path.join(folder, n)
        if os.path.isdir(path):
            m = _MOODLE_DIR.match(nfc(n))
            if m is None:
                return None
            parsed[n] = [{"name": m["name"], "uid": m["pid"], "plugin": m["plugin"], "file": None}]
            continue
        ps = [{**p, "uid": p["pid"]} for p in _moodle_parses(n)]
        if not ps:
            if n.endswith(CODE):
                return None
            ignored.append((n, "not named as Moodle names a student's file"))
            continue
        parsed[n] = ps
    if not parsed:
        return None
    chosen, flagged = _settle("moodle", parsed, _roster_names(rows, "moodle_participant"))
    for n, m in chosen.items():
        path = os.path.join(folder, n)
        sid = f"{m['name']}_{m['uid']}"
        s = students.setdefault(sid, Student(sid, m["name"], m["uid"], platform="moodle",
                                             moodle_participant=m["uid"]))
        if m["plugin"] != "file":
            ignored.append((n, f"Moodle's {m['plugin']} of {sid}, not a file handed in: not code"))
        elif os.path.isdir(path):
            s.folder = path
        else:
            s.files.append((path, m["file"]))
    return Layout("moodle", students.values(), ignored + flagged)


def _unquote(value):
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == "'":
        return value[1:-1].replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        try:
            return json.loads(value)
        except ValueError:
            return value[1:-1]
    return value


def read_gradescope_metadata(path):
    """{submission folder: [{name, sid, email}]} from Gradescope's submission_metadata.yml.

    Only what hwcheck needs is read, line by line (the file is Ruby's YAML, with `:key:`
    symbols; a general YAML loader is not needed and would meet Ruby's own tags).
    """
    out, current, person, inside = {}, None, None, False
    with open(path, encoding="utf-8-sig") as f:
        for line in f:
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            indent = len(line) - len(line.lstrip(" "))
            text = line.strip()
            if indent == 0:
                current = _unquote(text[:-1]) if text.endswith(":") else None
                if current is not None:
                    out[current] = []
                person, inside = None, False
                continue
            if current is None:
                continue
            if indent <= 2 and text.startswith(":"):  # a key of the submission: :submitters:, :created_at:, ...
                person, inside = None, text.split(":")[1] == "submitters"
                continue
            if not inside:
                continue
            if text.startswith("- "):
                text, person = text[2:].strip(), {}
                out[current].append(person)
            m = re.match(r"^:(name|sid|email):\s*(.*)$", text)
            if m and person is not None:
                person[m[1]] = _unquote(m[2])
    return out


def _gradescope(folder, names, rows=None):
    """Gradescope's export, by its whole structure: its metadata file and nothing but the `submission_<id>`
    folders it names (a lone `submission_metadata.yml` among students' files makes no export)."""
    meta = os.path.join(folder, GRADESCOPE_METADATA)
    if not os.path.isfile(meta):
        return None
    others = [n for n in names if n != GRADESCOPE_METADATA]
    if not others or not all(_GRADESCOPE_DIR.match(n) and os.path.isdir(os.path.join(folder, n)) for n in others):
        return None
    try:
        who = read_gradescope_metadata(meta)
    except (OSError, UnicodeDecodeError) as e:
        raise HwcheckError(f"{meta} could not be read: {e}") from None
    if not all(n in who for n in others):
        return None
    students = []
    for n in others:
        people = [p for p in who[n] if isinstance(p, dict)]
        s = Student(n, "; ".join(p.get("name", "") for p in people), "; ".join(p.get("sid", "") for p in people),
                    "; ".join(p.get("email", "") for p in people), platform="gradescope")
        s.folder = os.path.join(folder, n)
        students.append(s)
    return Layout("gradescope", students)


def _classroom(folder, names, rows=None):
    if len(names) < 2 or not all(os.path.isdir(os.path.join(folder, n)) for n in names):
        return None
    prefix = os.path.commonprefix(names)
    prefix = prefix[:prefix.rfind("-") + 1]
    if not prefix or any(len(n) == len(prefix) for n in names):
        return None
    # `gh classroom clone student-repos` clones into `<assignment slug>-submissions`: the slug is the repos'
    # prefix, so usernames that share a start (ucb-alice, ucb-bob) keep it
    base = os.path.basename(os.path.normpath(folder))
    slug = base[:-len("-submissions")] + "-" if base.endswith("-submissions") else ""
    if slug and len(slug) < len(prefix) and prefix.startswith(slug):
        prefix = slug
    students = []
    for n in names:
        user = n[len(prefix):]
        s = Student(n, user, user, platform="classroom", github_username=user)
        s.folder = os.path.join(folder, n)
        students.append(s)
    return Layout("classroom", students)


def recognise(folder, outdir=None, roster_rows=None):
    """The `Layout` of `folder`: the first of Gradescope, Moodle, Canvas, GitHub Classroom it is, else platform None.

    outdir: hwcheck's output folder, whose files (when it lies inside `folder`) are no entry of the layout.
    roster_rows: a roster's rows (`checker.records.roster.read_roster`); one exported from Canvas or Moodle settles
    a file name that reads as more than one student's."""
    from checker.records.owned import is_ours
    if not os.path.isdir(folder):
        raise HwcheckError(f"{folder} is not a folder")
    names = [n for n in _entries(folder) if not (outdir and is_ours(outdir, os.path.join(folder, n)))]
    for kind in (_gradescope, _moodle, _canvas, _classroom):
        layout = kind(folder, names, roster_rows)
        if layout is not None:
            return layout
    return Layout(None)


def _stage(outdir, student, names):
    """OUTDIR/.lms/<id>/ holding the student's files under their own names (rewritten each run: same bytes, same hash)."""
    from checker.records.owned import ensure_folder, join_inside
    # hwcheck's own folder (a student's `.lms`, a link out of OUTDIR, is left alone: checker.records.owned), the id a plain name
    dest = join_inside(ensure_folder(outdir, STAGE, stage=True), student.sid)
    if os.path.isdir(dest) and not os.path.islink(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    for path, name in names.items():
        shutil.copyfile(path, os.path.join(dest, name))
    return dest


def students_path(outdir):
    from checker.records.owned import path_of
    return path_of(outdir, STUDENTS_JSON)


def read_students(outdir):
    """OUTDIR/.students.json as `prepare` wrote it ({} when there is none, it is broken, or hwcheck did not write
    it: a student's `.students.json` in a download folder is not read, `checker.records.owned`)."""
    from checker.records.owned import read_json
    data = read_json(outdir, STUDENTS_JSON, "students")
    return data if isinstance(data, dict) else {}


def prepare(folder, outdir, notes=None, roster=None, assignment=None):
    """The batch's entries [(id, path)] of `folder`, whatever layout it has; writes OUTDIR/.students.json.

    A folder of no known layout gives `checker.records.entries.scan_entries`'s entries. `roster`: a
    roster CSV (`checker.records.roster`); when None, the roster of the last run (kept in
    students.json) is used again if it is still there. Sentences for the TA go to `notes`.
    Every entry of `folder` not graded (and every file left out of a submission) is kept in
    students.json's `not_graded` as [name, why], for the batch's summary (`checker.records.batch.after_batch`).
    """
    from checker.records.entries import scan_entries, skipped_entries
    from checker.records.identical import identical_groups
    from checker.records.owned import is_ours
    from checker.records.roster import match_roster, read_roster
    notes = [] if notes is None else notes
    old = read_students(outdir)
    if roster is None and isinstance(old.get("roster_file"), str) and os.path.isfile(old["roster_file"]):
        roster = old["roster_file"]
    rows = read_roster(roster) if roster is not None else None
    layout = recognise(folder, outdir, rows)
    not_graded = list(layout.ignored)
    skipped = [(n, why) for n, why in skipped_entries(folder) if not is_ours(outdir, os.path.join(folder, n))]
    ungraded = []  # submissions of the folder refused (look-alike names, no id left): `hwcheck grade` exits 1
    handed = {}  # {id: identity} of the students who handed something in that is not graded (the roster says so)
    if layout.platform is None:
        entries, refused, said = scan_entries(folder, skip=lambda path: is_ours(outdir, path))
        notes.extend(said)
        not_graded += refused + skipped
        ungraded = sorted({n for n, _ in refused})
        people = {sid: {} for sid, _ in entries}
    else:
        undecided = []
        entries, people = _lms_entries(layout, outdir, not_graded, undecided, handed, assignment)
        ungraded = sorted(set(undecided))  # `hwcheck grade` exits 1: the TA must pick the file
        not_graded += [(n, why) for n, why in skipped if n.startswith(".")]
        notes.append(f"{folder} is a {layout.platform} export: {len(entries)} students' submissions")
    if layout.platform == "canvas":
        from checker.records.lms_attempts import same_canvas_user
        entries, people = same_canvas_user(outdir, entries, people, old, notes)
    entries, people = _apart_from_older(outdir, entries, people, not_graded, handed)
    if not entries:  # nothing to grade: the command stops before its summary, so the reasons go with the notes
        notes.extend(f"not graded: {name}: {why}" for name, why in sorted(not_graded))
    report = None
    if rows is not None:
        people, report = match_roster(people, rows, handed_in=handed)
    data = {"platform": layout.platform, "assignment": assignment, "students": people,
            "identical": identical_groups(entries, assignment),
            "roster_file": os.path.abspath(roster) if roster else None, "roster": report,
            "not_graded": [list(item) for item in sorted(set(not_graded))], "ungraded": ungraded,
            # OUT is the folder graded or inside it (its files are the students'): a grades.csv or manual.csv
            # there may be a student's upload (checker.records.batch.holds_submissions)
            "holds_submissions": _inside(outdir, folder)}
    os.makedirs(outdir, exist_ok=True)
    from checker.records.owned import write_json
    write_json(outdir, STUDENTS_JSON, data, kind="students")  # hwcheck's own, beside a student's file of that name
    return entries


def _inside(outdir, folder):
    """Is OUTDIR the folder graded, or inside it?"""
    real, out = os.path.realpath(folder), os.path.realpath(outdir)
    return out == real or out.startswith(real.rstrip(os.sep) + os.sep)


def _apart_from_older(outdir, entries, people, not_graded, handed=None):
    """The entries whose output files are no older scorecard's of another id that is one name with theirs
    (OUTDIR/jdoe.json beside a new `JDOE`: one file on a case-insensitive disk, one name to a TA); the others
    are refused into `not_graded`."""
    from checker.records.outfolder import scorecard_ids
    older = set(scorecard_ids(outdir))  # hwcheck's own scorecards: a student's JOHN.json is none (checker.records.owned)
    by_key = {}
    for sid in older:
        by_key.setdefault(key(sid), []).append(sid)
    kept = []
    for sid, path in entries:
        alike = sorted(o for o in by_key.get(key(sid), []) if o != sid)
        if alike and sid not in older:
            not_graded.append((os.path.basename(path), f"its id {sid!r} is one name with {alike[0]!r}, whose "
                                                       f"scorecard {alike[0]}.json the output folder holds: not "
                                                       f"graded, so neither takes the other's files and grades; "
                                                       f"name it as before, or move the older scorecard away"))
            who = people.pop(sid, None)
            if handed is not None and who is not None:
                handed[sid] = who
        else:
            kept.append((sid, path))
    return kept, people


def _lms_entries(layout, outdir, not_graded, refused=None, handed=None, assignment=None):
    """([(id, path)], {id: identity}) of an LMS layout's students; what is not graded goes to `not_graded`, and the
    files of a student left ungraded for want of a file to pick (`lms_attempts.own_names`) to `refused` too; `handed` gets
    {id: identity} of each student who handed something in that is not graded (no code, no file to pick)."""
    from checker.records.lms_attempts import graded_names, latest_attempt, newest_definitions, own_names
    entries, people = [], {}
    handed = {} if handed is None else handed
    graded = graded_names(assignment)
    for sid, s in sorted(layout.students.items()):  # `Layout` left out ids that are one name
        handed[sid] = s.identity()  # until the student's submission is among the entries
        shown = [os.path.basename(p) for p, _ in s.files] or [os.path.basename(s.folder or sid)]
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
            continue
        names, aside = newest_definitions(names, s.uploads, graded)  # files that would override each other
        not_graded += [(os.path.basename(p), why) for p, why in aside]
        if s.late:
            s.lms["late"] = any(p in s.late for p in names)  # the attempt graded was late, or was not
            if not s.lms["late"]:
                s.lms.pop("late")
        code = [p for p, name in names.items() if name.endswith(CODE)]
        if s.folder is not None:
            path = s.folder
        elif not code:
            not_graded += [(n, f"{sid} handed in no .py or .ipynb file: not graded")
                           for n in shown if n not in {os.path.basename(p) for p, _ in odd}]
            continue
        elif len(names) == 1:
            path = code[0]
        else:
            try:
                path = _stage(outdir, s, names)
            except (OSError, ValueError) as e:  # ValueError: an id that is no plain name (join_inside)
                why = getattr(e, "strerror", None) or e
                not_graded += [(n, f"{sid}'s files could not be put into one folder ({why}): "
                                   f"not graded") for n in shown]
                continue
        entries.append((sid, path))
        handed.pop(sid, None)
        people[sid] = s.identity()
    return entries, people
