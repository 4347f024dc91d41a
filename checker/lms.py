"""Recognise the folders LMSs export, and group one student's files into one submission.

What it is for: `hwcheck grade` on a folder downloaded from an LMS. `recognise(folder)`
tells the layout and who handed in what; `prepare(folder, outdir, notes)` turns it into
the batch's entries [(id, path)] and writes OUTDIR/.students.json (who each id is, the
identical-code groups of `checker.identical`, the roster's matches of `checker.roster`),
which grades.csv and the LMS exports (`checker.exports`) read.

The layouts (each fact and where it comes from):
- Canvas, "Download Submissions": the names as Canvas's own code writes them (canvas-lms
  lib/content_zipper.rb, `get_filename` and `add_upload_submission`): one file per uploaded
  file, `<name>_[LATE_]<user id>_<attachment id>_<original name>`, where <name> is the
  student's sortable name ("Last, First") lower-cased with every character that is not a
  letter, digit or `_` removed (Unicode letters kept: `müllerjürgen`); `LATE` marks a late
  submission; with anonymous grading the name is left out and the id is `anon_<anonymous id>`
  (`[LATE_]anon_x7Kq2_<attachment id>_<name>`); a file uploaded again under the same name
  gets `-N` before its extension (`attention-1.py`); text entries and URLs come as
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
  folder's name.
- GitHub Classroom (the Classroom Assistant clones one repository per student, named
  `<assignment prefix>-<github username>`): every entry a folder, all sharing a prefix that
  ends in `-`. id: the folder's name; student and student id: the username.

Several files of one student are copied (under their own names, `-N` taken off where no
other file has that name) into OUTDIR/.lms/<id>/, graded as one folder submission; a student
with one file is graded from that file. Names are NFC-normalised (macOS writes NFD), so
`Müller` in a file name matches `Müller` in a roster.

What it is not: the grading (`checker.batch`) or the CSVs the LMSs import (`checker.exports`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata

from .atomic import write_json_atomic
from .errors import HwcheckError

__all__ = ["Student", "Layout", "recognise", "prepare", "after_batch", "read_students", "students_path", "nfc",
           "STUDENTS_JSON", "STAGE"]

STUDENTS_JSON = ".students.json"  # hidden: a student `students.py` has OUT/students.json
STAGE = ".lms"
CODE = (".py", ".ipynb")

# the shortest name that works: Canvas takes `_<digits>_` out of names, so the first `_<digits>_<digits>_` ends it
_CANVAS = re.compile(r"^(?P<name>[\w\u0300-\u036f]*?)_(?P<late>LATE_)?(?P<uid>\d+)_(?P<fileid>\d+)_(?P<file>.+)$")
_CANVAS_ANON = re.compile(r"^(?P<late>LATE_)?(?P<uid>anon_[A-Za-z0-9]+)_(?P<fileid>\d+)_(?P<file>.+)$")
_MOODLE_FILE = re.compile(r"^(?P<name>.+?)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$")
_MOODLE_DIR = re.compile(r"^(?P<name>.+?)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")
_RESUBMITTED = re.compile(r"^(?P<stem>.+)-\d+(?P<ext>\.[^.]+)$")


def nfc(text):
    return unicodedata.normalize("NFC", str(text))


class Student:
    """One student's submission as the LMS names it: files (or one folder) and who it is."""

    def __init__(self, sid, student="", student_id="", email="", **lms):
        self.sid, self.student, self.student_id, self.email = nfc(sid), nfc(student), nfc(student_id), nfc(email)
        self.lms = {k: v for k, v in lms.items() if v not in (None, "", False)}
        self.files = []     # paths (several: staged into one folder)
        self.folder = None  # a folder the LMS made for this student

    def identity(self):
        return {"student": self.student, "student_id": self.student_id, "email": self.email, **self.lms}


class Layout:
    """platform (canvas, moodle, gradescope, classroom or None) and its students, by id."""

    def __init__(self, platform, students=(), ignored=()):
        self.platform = platform
        self.students = {s.sid: s for s in students}
        self.ignored = list(ignored)  # [(name, why)] of entries of the layout that hold no code


def _entries(folder):
    return [n for n in sorted(os.listdir(folder)) if not n.startswith(".") and n not in ("__pycache__", "__MACOSX")]


def _canvas(folder, names):
    files = [n for n in names if os.path.isfile(os.path.join(folder, n))]
    code = [n for n in files if n.endswith(CODE)]
    if not code or any(os.path.isdir(os.path.join(folder, n)) for n in names):
        return None
    matches = {n: _CANVAS_ANON.match(nfc(n)) or _CANVAS.match(nfc(n)) for n in files}
    if not all(matches[n] for n in code):
        return None
    students = {}
    for n in files:
        m = matches[n]
        if not m:
            continue
        anonymous = m["uid"].startswith("anon_")
        name = "" if anonymous else m["name"]
        sid = m["uid"] if anonymous else f"{name}_{m['uid']}"
        s = students.get(sid)
        if s is None:
            s = students[sid] = Student(sid, name, m["uid"], platform="canvas",
                                        canvas_user_id=None if anonymous else m["uid"], anonymous=anonymous)
        s.lms["late"] = s.lms.get("late") or bool(m["late"])
        s.files.append((os.path.join(folder, n), m["file"]))
    return Layout("canvas", students.values())


def _moodle(folder, names):
    students, seen = {}, 0
    for n in names:
        path = os.path.join(folder, n)
        m = (_MOODLE_DIR if os.path.isdir(path) else _MOODLE_FILE).match(nfc(n))
        if m is None:
            if os.path.isdir(path) or n.endswith(CODE):
                return None
            continue
        seen += 1
        sid = f"{m['name']}_{m['pid']}"
        s = students.setdefault(sid, Student(sid, m["name"], m["pid"], platform="moodle", moodle_participant=m["pid"]))
        if m["plugin"] != "file":
            continue  # online text: not code
        if os.path.isdir(path):
            s.folder = path
        else:
            s.files.append((path, m["file"]))
    return Layout("moodle", students.values()) if seen else None


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


def _gradescope(folder, names):
    meta = os.path.join(folder, "submission_metadata.yml")
    if not os.path.isfile(meta):
        return None
    try:
        who = read_gradescope_metadata(meta)
    except (OSError, UnicodeDecodeError) as e:
        raise HwcheckError(f"{meta} could not be read: {e}") from None
    students = []
    for n in names:
        path = os.path.join(folder, n)
        if not os.path.isdir(path):
            continue
        people = [p for p in who.get(n, who.get(nfc(n), [])) if isinstance(p, dict)]
        s = Student(n, "; ".join(p.get("name", "") for p in people), "; ".join(p.get("sid", "") for p in people),
                    "; ".join(p.get("email", "") for p in people), platform="gradescope")
        s.folder = path
        students.append(s)
    return Layout("gradescope", students)


def _classroom(folder, names):
    if len(names) < 2 or not all(os.path.isdir(os.path.join(folder, n)) for n in names):
        return None
    prefix = os.path.commonprefix(names)
    prefix = prefix[:prefix.rfind("-") + 1]
    if not prefix or any(len(n) == len(prefix) for n in names):
        return None
    students = []
    for n in names:
        user = n[len(prefix):]
        s = Student(n, user, user, platform="classroom", github_username=user)
        s.folder = os.path.join(folder, n)
        students.append(s)
    return Layout("classroom", students)


def recognise(folder, outdir=None):
    """The `Layout` of `folder`: the first of Gradescope, Moodle, Canvas, GitHub Classroom it is, else platform None.

    outdir: hwcheck's output folder, whose files (when it lies inside `folder`) are no entry of the layout."""
    from .outputs import is_own_output
    if not os.path.isdir(folder):
        raise HwcheckError(f"{folder} is not a folder")
    names = [n for n in _entries(folder) if not (outdir and is_own_output(outdir, os.path.join(folder, n)))]
    for kind in (_gradescope, _moodle, _canvas, _classroom):
        layout = kind(folder, names)
        if layout is not None:
            return layout
    return Layout(None)


def _own_names(files):
    """{path: name in the staged folder}: the LMS's prefix taken off, Canvas's `-N` too where that frees no clash."""
    out, taken = {}, {name for _, name in files}
    for path, name in sorted(files, key=lambda pf: pf[1]):
        m = _RESUBMITTED.match(name)
        plain = f"{m['stem']}{m['ext']}" if m else name
        if plain != name and plain not in taken:
            taken.add(plain)
            name = plain
        out[path] = name
    return out


def _stage(outdir, student):
    """OUTDIR/.lms/<id>/ holding the student's files under their own names (rewritten each run: same bytes, same hash)."""
    dest = os.path.join(outdir, STAGE, student.sid)
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    os.makedirs(dest)
    for path, name in _own_names(student.files).items():
        shutil.copyfile(path, os.path.join(dest, name.replace(os.sep, "_")))
    return dest


def students_path(outdir):
    return os.path.join(outdir, STUDENTS_JSON)


def read_students(outdir):
    """OUTDIR/.students.json as written by `prepare` ({} when there is none or it is broken)."""
    try:
        with open(students_path(outdir), encoding="utf-8") as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def prepare(folder, outdir, notes=None, roster=None, assignment=None):
    """The batch's entries [(id, path)] of `folder`, whatever layout it has; writes OUTDIR/.students.json.

    A folder of no known layout gives `checker.batch.list_entries`'s entries. `roster`: a
    roster CSV (`checker.roster`); when None, the roster of the last run (kept in
    students.json) is used again if it is still there. Sentences for the TA go to `notes`.
    """
    from .batch import list_entries
    from .identical import identical_groups
    from .roster import match_roster, read_roster
    layout = recognise(folder, outdir)
    if layout.platform is None:
        entries = list_entries(folder, notes)
        people = {sid: {} for sid, _ in entries}
    else:
        entries, people = [], {}
        for sid, s in sorted(layout.students.items()):
            code = [p for p, name in s.files if name.endswith(CODE)]
            if s.folder is not None:
                path = s.folder
            elif not code:
                if notes is not None:
                    shown = ", ".join(os.path.basename(p) for p, _ in s.files) or "nothing"
                    notes.append(f"{sid} handed in no .py or .ipynb file ({shown}): not graded")
                continue
            elif len(s.files) == 1:
                path = s.files[0][0]
            else:
                path = _stage(outdir, s)
            entries.append((sid, path))
            people[sid] = s.identity()
        if notes is not None:
            notes.append(f"{folder} is a {layout.platform} export: {len(entries)} students' submissions")
    old = read_students(outdir)
    if roster is None and isinstance(old.get("roster_file"), str) and os.path.isfile(old["roster_file"]):
        roster = old["roster_file"]
    report = None
    if roster is not None:
        rows = read_roster(roster)
        people, report = match_roster(people, rows)
    data = {"platform": layout.platform, "assignment": assignment, "students": people,
            "identical": identical_groups(entries, assignment),
            "roster_file": os.path.abspath(roster) if roster else None, "roster": report}
    os.makedirs(outdir, exist_ok=True)
    write_json_atomic(students_path(outdir), data)
    return entries


def after_batch(outdir, assignment=None, canvas_title=None, roster=True):
    """The TA's lines after a batch: the roster's verdicts (when roster), and the LMS exports written.

    assignment None: the one `prepare` recorded in students.json.
    """
    from .exports import write_exports
    from .roster import roster_lines
    known = read_students(outdir)
    assignment = assignment or known.get("assignment")
    people = known.get("students") if isinstance(known.get("students"), dict) else {}
    lines = roster_lines(known.get("roster"), people) if roster else []
    if not assignment or not people:
        return lines
    for path, n, left in write_exports(outdir, assignment, canvas_title):
        lines.append(f"wrote {path} ({n} students" + (f"; {left} submissions have no id of that LMS" if left else "")
                     + ")")
    return lines
