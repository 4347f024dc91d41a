"""Recognise the folders LMSs export, and group one student's files into one submission.

What it is for: `hwcheck grade` on a folder downloaded from an LMS. `recognise(folder)`
tells the layout and who handed in what; `prepare(folder, outdir, notes)` turns it into
the batch's entries [(id, path)] and writes OUTDIR/.students.json (`listing` then `record`, for a command that
may still refuse between them; who each id is, the
identical-code groups of `checker.records.identical`, the roster's matches of `checker.records.roster`),
which grades.csv and the LMS exports (`checker.records.exports`) read; who each student OUTDIR holds a scorecard
of is kept across downloads (`checker.records.lms_attempts.keep_earlier_students`).

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
  `<name>_<user id>_text.html` / `_link.html` (`[LATE_]anon_<id>_text.html` anonymously): not code, so the
  student's `aside`, listed once as theirs (`checker.records.lms_students`), never graded. id: `<name>_<user id>`
  or `anon_<id>` (stable when the student resubmits: the attachment ids and file names
  change, the user id does not).
- Moodle, "Download all submissions" (Moodle docs, Assignment settings / grading; folder
  names as found in course scripts): files `Full Name_participantid_assignsubmission_file_name`
  or, with "Download submissions in folders", one folder per student
  `Full Name_participantid_assignsubmission_file_` holding the files under their own names
  (and `..._assignsubmission_onlinetext_` for online text: the student's `aside`, as Canvas's text entries). id:
  `Full Name_participantid`.
- Gradescope, "Export Submissions" (read, as GitHub Classroom is, in `checker.records.lms_folders`):
  `submission_metadata.yml` maps each `submission_<id>` folder to its `:submitters:` (`:name:`,
  `:sid:`, `:email:`; several for a group). id: the folder's name. Recognised only by its whole
  structure: the metadata file and nothing but the `submission_<id>` folders it names (one
  uploaded `submission_metadata.yml` among students' files makes no export). A resubmission has a new id: it
  is named with the older id of its submitter (`checker.records.lms_attempts.same_gradescope_student`).
- GitHub Classroom (the Classroom Assistant clones one repository per student, named
  `<assignment prefix>-<github username>`): every entry a folder, all sharing a prefix that
  ends in `-` (the assignment's slug where the folder is `gh classroom clone`'s
  `<slug>-submissions`; else, with a roster of GitHub usernames, the roster's username that is the whole tail
  after a prefix all share, a repository two of them fit being refused and named; else the longest shared
  prefix, so usernames that share a start lose it). id: the folder's name; student and student id: the
  username, which the student chose: a roster matches it only in a column of GitHub usernames
  (`checker.records.roster`), never by a name.

A download is recognised by the names the LMS wrote, not spoilt by entries it did not write (a student's archive
unpacked where it lay, a TA's notes, a reference solution): of the entries a plain folder would grade (.py and
.ipynb files, folders), all, or at least two and more than half, must be named as the LMS names them (`dominates`;
a plain class folder, `alice.py` and `bob.py` beside one crafted `x_1_2_y.py`, stays a plain folder). The others
are listed as not graded, each with why, and the TA's line says how many; a folder named as the LMS names a file
(`doejohn_1001_5001_hw1/`, from `doejohn_1001_5001_hw1.zip`) is that student's submission
(`checker.records.lms_students`). A folder that falls short while some of its entries are so named is graded
as a plain folder, and the TA's line says so.

Names a student chooses: Canvas's sortable name and Moodle's full name, and the name of every
file handed in, are the student's, and both may hold what looks like the fixed fields
(`Doe, John_.1001_.9_.zz` makes Canvas write `doejohn_1001_9_zz_<own id>_...`). So a file name
is read at every `_` where the fixed fields could begin (`_parses`); the student's own reading
always exists, so a file read one way is what the LMS wrote, and a file read several ways
keeps only the readings that fit the files read one way (one user, one name) and, when a
roster exported from that LMS is given, the roster (user id and name). A file still read as
more than one student's is merged into no one's submission and listed, with the students it
could be (`_settle`), and `hwcheck grade` exits 1 (students.json's `ungraded`). A Moodle folder's
name is read every way Moodle's names allow (`_moodle_readings`): from its end, as the folder Moodle
makes per student (`<full name>_<id>_assignsubmission_file_`), and from its start, as a file Moodle
named (an archive unpacked where it lay, its folder keeping the archive's name): a student's archive
`hw_555_assignsubmission_file_.zip` makes Moodle write `Mallory Evil_777_assignsubmission_file_hw_555_
assignsubmission_file_.zip`, which, unpacked, ends as participant 555's folder would; it is settled as
a file name is, never taken from one end only.

Several files of one student (`checker.records.lms_students`) are copied (under their own names,
`-N` taken off where no other file has that name; an own name that cannot be a file, such as `..`,
left out with a message) into OUTDIR/.lms/<id>/<attempt>/, graded as one folder submission; a student with one file is
graded from that file. Ids are canonical (`checker.records.ids`); names are NFC-normalised (macOS
writes NFD), so `Müller` in a file name matches `Müller` in a roster. Every entry of the
folder not graded (and why) is kept in students.json's `not_graded`, and `checker.records.batch.after_batch`
lists it in the batch's summary.

What it is not: the grading (`checker.records.batch`) or the CSVs the LMSs import (`checker.records.exports`).
"""

from __future__ import annotations

import os
import re
import unicodedata

from checker.errors import HwcheckError
from checker.records.ids import canonical, key
from checker.records.lms_attempts import canvas_name
from checker.records.lms_students import HANDED, STAGE

__all__ = ["Student", "Layout", "recognise", "dominates", "prepare", "listing", "record", "read_students", "students_path", "nfc",
           "STUDENTS_JSON", "STAGE"]

STUDENTS_JSON = ".students.json"  # hidden: a student `students.py` has OUT/students.json
CODE = (".py", ".ipynb")

# Canvas: `<name>_[LATE_]<user id>_<attachment id>_<file>`; the name and the file are the student's, so a name is
# read at every `_` that could end it (`_parses`), and `_settle` decides which reading holds
_CANVAS_FIELDS = re.compile(r"_(?P<late>LATE_)?(?P<uid>\d+)_(?P<fileid>\d+)_(?P<file>.+)$")
_CANVAS_ANON = re.compile(r"^(?P<late>LATE_)?(?P<uid>anon_[A-Za-z0-9]+)_(?P<fileid>\d+)_(?P<file>.+)$")
_CANVAS_TEXT = re.compile(r"^(?P<name>.*?)_(?P<late>LATE_)?(?P<uid>\d+)_(text|link)\.html$")
_CANVAS_ANON_TEXT = re.compile(r"^(?P<late>LATE_)?(?P<uid>anon_[A-Za-z0-9]+)_(text|link)\.html$")
_MOODLE_FIELDS = re.compile(r"_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_(?P<file>.+)$")
_MOODLE_DIR = re.compile(r"^(?P<name>.+)_(?P<pid>\d+)_assignsubmission_(?P<plugin>[a-z]+)_?$")  # read from the end


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
        self.folders = []   # the folders of this student: one the LMS made, or an archive of theirs unpacked
        self.aside = []     # [(entry name, why)] of theirs never graded: a text entry, a web link, Moodle's onlinetext

    def identity(self):
        return {"student": self.student, "student_id": self.student_id, "email": self.email, **self.lms}


class Layout:
    """platform (canvas, moodle, gradescope, classroom or None) and its students, by id; for Canvas and Moodle,
    `vote`: (entries named, entries counted) as `dominates` weighed them; for None, `near`: (platform, named,
    counted) of the LMS that named some of its entries, too few to take it for its download (else None)."""

    def __init__(self, platform, students=(), ignored=(), vote=None, near=None, refused=()):
        self.platform, self.vote, self.near = platform, vote, near
        self.students, ignored = {}, list(ignored)
        refused = set(refused)  # entries of a student's, graded as no one's (whose they are cannot be told)
        groups = {}
        for s in students:
            groups.setdefault(key(s.sid), []).append(s)
        for group in groups.values():
            if len(group) == 1:
                self.students[group[0].sid] = group[0]
                continue
            # ids that are one name to a person and a case-insensitive disk: none is graded, never first-come
            ids = " and ".join(repr(s.sid) for s in group)
            shown = [os.path.basename(p) for s in group
                     for p in ([p for p, _ in s.files] + s.folders + [n for n, _ in s.aside] or [s.sid])]
            ignored += [(n, f"the ids {ids} would be one (they differ only by letter case, Unicode form or invisible "
                            f"characters): none of them is graded") for n in shown]
            refused.update(shown)
        self.ignored = sorted(ignored)  # [(name, why)] of the entries of the layout not graded
        # of those, the ones a student handed in and no one is graded on (`hwcheck grade` exits 1: the TA decides)
        self.refused = sorted(refused)


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
    # a text entry or web link (`<name>_<user id>_text.html`): the student's, never graded; an upload's own name
    # may end so too (`x_1011_text.html`), so it is one reading among the others
    out = [m for m in [_canvas_text(name)] if m]
    out += [{**m.groupdict(), "name": ""} for m in [_CANVAS_ANON.match(name)] if m]
    # a name is Canvas's sortable name, lower-cased, word characters only: never `..._LATE` (that is the flag)
    out += _parses(name, _CANVAS_FIELDS, lambda n: canvas_name(n) and not re.search(r"(^|_)LATE$", n))
    return out


def _moodle_parses(name):
    return _parses(nfc(name), _MOODLE_FIELDS, bool)


def _moodle_readings(name, kind):
    """Every reading of a Moodle entry's name: as a file Moodle named (`<full name>_<id>_assignsubmission_<plugin>_
    <file>`, read at every `_`: a file, or an archive of the student's unpacked into a folder of its name) and, for
    a folder, also as the folder Moodle makes ("Download submissions in folders": `<full name>_<id>_assignsubmission_
    <plugin>_`, read from the end). The full name and the file name are the student's, so a folder can be both:
    `Mallory Evil_777_assignsubmission_file_hw_555_assignsubmission_file_` is Mallory's archive
    `hw_555_assignsubmission_file_.zip` unpacked, and reads from its end as participant 555's folder; `_settle`
    decides, as for Canvas's names, and a name still read as two students' is no one's."""
    name = nfc(name)
    out = [{**p, "uid": p["pid"]} for p in _moodle_parses(name)]
    m = _MOODLE_DIR.match(name) if kind == "dir" else None
    if m and not any(p["uid"] == m["pid"] and p["name"] == m["name"] for p in out):
        out.append({"name": m["name"], "pid": m["pid"], "uid": m["pid"], "plugin": m["plugin"], "file": None})
    return out


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
    """The reading of Canvas's file of a text entry or web link (`<name>_[LATE_]<user id>_text.html`, `_link.html`;
    `[LATE_]anon_<id>_text.html` under anonymous grading), or None: a reading with no file and no attachment id."""
    m = _CANVAS_TEXT.match(name) or _CANVAS_ANON_TEXT.match(name)
    if not m or not canvas_name(m.groupdict().get("name") or ""):
        return None
    return {"name": m.groupdict().get("name") or "", "uid": m["uid"], "late": m["late"], "fileid": None, "file": None}


_KINDS_SHOWN = {"canvas": "Canvas", "moodle": "Moodle"}
_PATTERN = {"canvas": "`<name>_<user id>_<attachment id>_<file>`",
            "moodle": "`<full name>_<participant id>_assignsubmission_file_<file>`"}


def _kinds(folder, names):
    """{name: "file", "dir", "link" (a link to a folder: never followed) or "odd" (neither: a broken link)}."""
    out = {}
    for n in names:
        path = os.path.join(folder, n)
        out[n] = ("link" if os.path.islink(path) else "dir") if os.path.isdir(path) else \
            "file" if os.path.isfile(path) else "odd"
    return out


def _vote(kinds, parsed):
    """(named, counted): of the entries a plain folder would grade (.py and .ipynb files, folders), how many are
    named as the LMS names a student's (`parsed`: {name: readings}, empty for none)."""
    counted = [n for n, k in kinds.items() if k == "dir" or (k == "file" and n.endswith(CODE))]
    return sum(1 for n in counted if parsed.get(n)), len(counted)


def dominates(named, counted):
    """Whether a folder whose `counted` gradable entries hold `named` the LMS named is that LMS's download.

    Every one of them (as the LMS writes a download), or, beside entries it did not name (a student's archive
    unpacked under another name, a TA's notes or reference solution), at least two and more than half: one stray
    entry does not turn a class's download into one student per file, and a plain class folder (`alice.py`,
    `bob.py`) is taken for a download only where most of its entries carry the LMS's fixed fields."""
    return named >= 1 and (named == counted or (named >= 2 and 2 * named > counted))


def _strays(platform, kinds, parsed):
    """[(name, why)] of the entries of an LMS's download it did not name, none of them graded (see `dominates`)."""
    shown, out = _KINDS_SHOWN[platform], []
    for n, k in sorted(kinds.items()):
        if parsed.get(n):
            continue
        if k == "link":
            from checker.records.entries import LINKED_FOLDER
            out.append((n, LINKED_FOLDER))
        elif k == "odd":
            out.append((n, "not a regular file (a broken link?)"))
        elif k == "dir":
            out.append((n, f"a folder not named as {shown} names a student's ({_PATTERN[platform]}): not graded as "
                           f"anyone's; a student's archive unpacked is graded as theirs when its folder keeps the "
                           f"archive's name (`doejohn_1001_5001_hw1.zip` into `doejohn_1001_5001_hw1/`)"))
        elif n.endswith(CODE):
            out.append((n, f"not named as {shown} names a student's file ({_PATTERN[platform]}), so whose it is "
                           f"cannot be told: not graded (a student's? grade it on its own; a file of the TA's? keep "
                           f"it out of the download)"))
        else:
            out.append((n, f"not named as {shown} names a student's file"))
    return out


def _canvas(folder, names, rows=None):
    kinds = _kinds(folder, names)
    parsed = {n: _canvas_parses(n) for n, k in kinds.items() if k in ("file", "dir")}
    vote = _vote(kinds, parsed)
    if not dominates(*vote):
        return None
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
        path = os.path.join(folder, n)
        if m["file"] is None:  # its text entry or web link: theirs, listed with the student's entries not graded
            s.aside.append((n, "a text entry or web link handed in on Canvas, not code"))
            continue
        s.lms["late"] = s.lms.get("late") or bool(m["late"])
        if kinds[n] == "dir":  # an archive the student handed in, unpacked where it lay
            s.folders.append(path)
            continue
        s.files.append((path, m["file"]))
        if m["late"]:
            s.late.add(path)
        s.uploads[path] = int(m["fileid"])
    return Layout("canvas", students.values(), _strays("canvas", kinds, parsed) + flagged, vote,
                  refused=[n for n, _ in flagged])


def _moodle(folder, names, rows=None):
    kinds = _kinds(folder, names)
    # a file; a folder Moodle made ("Download submissions in folders"), or an archive handed in and unpacked where
    # it lay: every reading of each name (`_moodle_readings`), settled below as Canvas's are
    parsed = {n: _moodle_readings(n, k) for n, k in kinds.items() if k in ("file", "dir")}
    vote = _vote(kinds, parsed)
    if not dominates(*vote):
        return None
    ignored = _strays("moodle", kinds, parsed)
    students = {}
    chosen, flagged = _settle("moodle", {n: ps for n, ps in parsed.items() if ps},
                              _roster_names(rows, "moodle_participant"))
    for n, m in chosen.items():
        path = os.path.join(folder, n)
        sid = f"{m['name']}_{m['uid']}"
        s = students.setdefault(sid, Student(sid, m["name"], m["uid"], platform="moodle",
                                             moodle_participant=m["uid"]))
        if m["plugin"] != "file":  # the student's, listed with their entries not graded (`lms_students`)
            s.aside.append((n, f"Moodle's {m['plugin']} of {sid}, not a file handed in: not code"))
        elif kinds[n] == "dir":
            s.folders.append(path)
        else:
            s.files.append((path, m["file"]))
    return Layout("moodle", students.values(), ignored + flagged, vote, refused=[n for n, _ in flagged])


def _from_folders(platform, found, refused=()):
    """The `Layout` of the rows `checker.records.lms_folders` gives: one folder per student; refused: [(name, why)]
    of the folders it read as no one's."""
    students = []
    for sid, path, student, student_id, email, extra in found:
        s = Student(sid, student, student_id, email, platform=platform, **extra)
        s.folders.append(path)
        students.append(s)
    return Layout(platform, students, ignored=refused, refused=[n for n, _ in refused])


def recognise(folder, outdir=None, roster_rows=None):
    """The `Layout` of `folder`: Gradescope's export, else Moodle's or Canvas's download (of the two, the one that
    names more of its entries), else GitHub Classroom's repositories, else platform None.

    Canvas and Moodle: a download is recognised when the entries they named dominate (`dominates`); the others
    are the layout's `ignored`, never graded. A folder neither recognises that holds entries one of them named
    gives `Layout(None)` its `near` (platform, named, counted), for the TA's line.
    outdir: hwcheck's output folder, whose files (when it lies inside `folder`) are no entry of the layout.
    roster_rows: a roster's rows (`checker.records.roster.read_roster`); one exported from Canvas or Moodle settles
    a file name that reads as more than one student's."""
    from checker.records.lms_folders import classroom, gradescope
    from checker.records.owned_listing import is_ours
    if not os.path.isdir(folder):
        raise HwcheckError(f"{folder} is not a folder")
    names = [n for n in _entries(folder) if not (outdir and is_ours(outdir, os.path.join(folder, n)))]
    found = gradescope(folder, names)
    if found is not None:
        return _from_folders("gradescope", found)
    layouts = [x for x in (_moodle(folder, names, roster_rows), _canvas(folder, names, roster_rows)) if x]
    if layouts:
        return max(layouts, key=lambda x: x.vote[0])  # the first of the most named: Moodle's before Canvas's
    refused = []  # repositories more than one roster username fits: no one's, named
    found = classroom(folder, names, roster_rows, refused)
    if found is not None:
        return _from_folders("classroom", found, refused)
    kinds = _kinds(folder, names)
    near = [(platform, *_vote(kinds, {n: reads(n) for n, k in kinds.items() if k in ("file", "dir")}))
            for platform, reads in (("moodle", lambda n: _moodle_readings(n, "dir")), ("canvas", _canvas_parses))]
    near = max(near, key=lambda x: x[1])
    return Layout(None, near=near if near[1] else None)


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
    """The batch's entries [(id, path)] of `folder`, whatever layout it has; writes OUTDIR/.students.json
    (`listing`, then `record`)."""
    entries, data = listing(folder, outdir, notes, roster=roster, assignment=assignment)
    record(outdir, data)
    return entries


def record(outdir, data):
    """Writes OUTDIR/.students.json: `data`, the record of the class `listing` gave."""
    os.makedirs(outdir, exist_ok=True)
    from checker.records.owned import write_json
    write_json(outdir, STUDENTS_JSON, data, kind="students")  # hwcheck's own, beside a student's file of that name


def listing(folder, outdir, notes=None, roster=None, assignment=None, regrading=None, only=None):
    """(entries [(id, path)], the record of the class for OUTDIR/.students.json) of `folder`, whatever layout it
    has, with nothing written to students.json yet (`record` writes it): `hwcheck grade` refuses what it refuses
    (no submissions, an --only id no submission has) before OUT's record of the class changes. A student's
    several files are staged into OUTDIR/.lms/ (`checker.records.lms_students.stage`).

    A folder of no known layout gives `checker.records.entries.scan_entries`'s entries. `roster`: a
    roster CSV (`checker.records.roster`); when None, the roster of the last run (kept in
    students.json) is used again if it is still there. Sentences for the TA go to `notes`.
    Every entry of `folder` not graded (and every file left out of a submission) is kept in
    students.json's `not_graded` as [name, why], for the batch's summary (`checker.records.batch.after_batch`).
    regrading: a `--resume`'s scorecards to regrade from their own files (`lms_attempts.older_than_graded`);
    only: `--only`'s ids, whose students alone the record takes from this folder (`lms_attempts.kept_for_only`).
    """
    from checker.records.entries import scan_entries, skipped_entries
    from checker.records.identical import identical_groups
    from checker.records.lms_students import lms_entries
    from checker.records.owned_listing import is_ours
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
        entries, refused, said = scan_entries(folder, skip=lambda path: is_ours(outdir, path), held=_held(outdir))
        notes.extend(([_layout_line(folder, layout, entries)] if layout.near else []) + said)
        not_graded += refused + skipped
        ungraded = sorted({n for n, _ in refused})
        people = {sid: {} for sid, _ in entries}
    else:
        undecided = []
        entries, people = lms_entries(layout, outdir, not_graded, undecided, handed, assignment)
        # `hwcheck grade` exits 1: the TA must pick the file, or tell whose a file read as two students' is
        ungraded = sorted(set(undecided) | set(layout.refused))
        not_graded += [(n, why) for n, why in skipped if n.startswith(".")]
        notes.append(_layout_line(folder, layout, entries))
    if layout.platform in ("canvas", "moodle"):  # a name changed in the LMS: the id its user id was graded under
        from checker.records.lms_attempts import same_lms_user
        entries, people = same_lms_user(layout.platform, outdir, entries, people, old, notes)
    if layout.platform == "gradescope":  # a resubmission's new submission id: named with the old one
        from checker.records.lms_attempts import same_gradescope_student
        same_gradescope_student(outdir, entries, people, old, notes)
    if layout.platform == "canvas":
        from checker.records.lms_attempts import older_than_graded
        entries = older_than_graded(outdir, entries, people, old, notes, regrading, only)  # an older attempt: kept
    before = {n for n, _ in not_graded}
    entries, people = _apart_from_older(outdir, entries, people, not_graded, handed)
    ungraded = sorted(set(ungraded) | {n for n, _ in not_graded} - before)  # refused: one name with an older id
    if not entries:  # nothing to grade: the command stops before its summary, so the reasons go with the notes
        notes.extend(f"not graded: {name}: {why}" for name, why in sorted(not_graded))
    from checker.records.lms_attempts import keep_earlier_students, kept_for_only
    people = keep_earlier_students(outdir, people, old, assignment)  # a later download: the others' identity kept
    people = kept_for_only(outdir, people, old, only)  # --only: the others' record as it was
    report = None
    if rows is not None:
        people, report = match_roster(people, rows, handed_in=handed)
    data = {"platform": layout.platform, "assignment": assignment, "students": people,
            "identical": identical_groups(entries, assignment),
            "roster_file": os.path.abspath(roster) if roster else None, "roster": report,
            "not_graded": [list(item) for item in sorted(set(not_graded))], "ungraded": ungraded,
            # OUT is the folder graded or holds it (its files are the students'): a grades.csv or manual.csv
            # there may be a student's upload (checker.records.batch.holds_submissions)
            "holds_submissions": _holds(outdir, folder)}
    return entries, data


def _held(outdir):
    """held(id): the path of the submission OUTDIR's scorecard of `id` graded (hwcheck's own scorecard), or None;
    what keeps a plain folder's ids stable (`checker.records.entries.scan_entries`)."""
    from checker.records.outfolder import read_scorecard, scorecard_ids
    ids = set(scorecard_ids(outdir)) if os.path.isdir(outdir) else set()

    def held(sid):
        card = read_scorecard(outdir, sid) if sid in ids else None
        sub = card.get("submission") if isinstance(card, dict) else None
        path = sub.get("path") if isinstance(sub, dict) else None
        return path if isinstance(path, str) and path else None
    return held


def _layout_line(folder, layout, entries):
    """The TA's line on the layout `folder` was taken for, and on the entries that did not fit it."""
    if layout.platform is None:
        platform, named, counted = layout.near
        return (f"{folder} is graded as a plain folder, one submission per .py, .ipynb file or folder: only {named} "
                f"of its {counted} are named as {_KINDS_SHOWN[platform]} names a student's file, too few to take it "
                f"for a {_KINDS_SHOWN[platform]} download (that takes all of them, or at least two and more than "
                f"half); if it is one, take out what is not the download's and grade again")
    line = f"{folder} is a {layout.platform} export: {len(entries)} students' submissions"
    if layout.vote and layout.vote[1] > layout.vote[0]:
        n = layout.vote[1] - layout.vote[0]
        line += (f"; {n} of its .py, .ipynb files and folders {'is' if n == 1 else 'are'} not named as "
                 f"{_KINDS_SHOWN[layout.platform]} names a student's, and not graded (the summary's \"not graded\" "
                 f"lines name {'it' if n == 1 else 'them'})")
    return line


def _holds(outdir, folder):
    """Is the folder graded OUTDIR, or inside it (its students' files in OUTDIR's tree)? An OUTDIR inside the
    folder graded (`-o DIR/out`) holds none of them: hwcheck's own output folder, never graded."""
    real, out = os.path.realpath(folder), os.path.realpath(outdir)
    return out == real or real.startswith(out.rstrip(os.sep) + os.sep)


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
                handed[sid] = {**who, HANDED: [os.path.basename(path)]}
        else:
            kept.append((sid, path))
    return kept, people
