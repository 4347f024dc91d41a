"""LMS exports (Canvas, Moodle, Gradescope, GitHub Classroom): recognised, grouped per student, graded through
the real `hwcheck grade` command; grades.csv's student columns, the roster's report, canvas.csv and moodle.csv,
and the identical-code notes."""

import csv
import datetime
import os
import shutil
import subprocess
import sys
import unicodedata

import pytest

from checker.records import lms
from checker.records.identical import identical_groups
from checker.spec import example_dirs, load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
# attention's points and its written-answer question, from its spec: adding a question changes nothing here
_QUESTIONS = load_spec("attention")["questions"]
AUTO = f"{sum(q['points'] for q in _QUESTIONS if not q.get('manual')):g}"
TOTAL = f"{sum(q['points'] for q in _QUESTIONS):g}"
MANUAL = next(q["id"] for q in _QUESTIONS if q.get("manual"))
FOLDER = sorted(os.listdir(os.path.join(SUB, "correct_folder")))  # a correct submission in several files
NFD = lambda s: unicodedata.normalize("NFD", s)  # noqa: E731  (macOS writes file names so)
NFC = lambda s: unicodedata.normalize("NFC", s)  # noqa: E731


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def _csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


def _book(out):
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _reworded(src):
    """correct.py with other comments and spacing: the same code."""
    return "# my own work, honest\n" + src.replace("\n\n", "\n\n\n").replace(" = ", "  =  ")


def _points(total):
    """grades.csv's total as an LMS export writes it (2 decimals at most)."""
    return f"{round(float(total), 2):g}"


def _copy(src, dest):
    shutil.copyfile(os.path.join(SUB, src), dest)


# ---------------------------------------------------------------------------
# Canvas
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def canvas(tmp_path_factory):
    base = tmp_path_factory.mktemp("canvas")
    folder, out = base / "submissions", str(base / "graded")
    folder.mkdir()
    _copy("correct.py", folder / NFD("müllerjürgen_LATE_101_9001_attention.py"))
    with open(os.path.join(SUB, "correct.py"), encoding="utf-8") as f:
        (folder / "smithbob_103_9003_attention.py").write_text(_reworded(f.read()), encoding="utf-8")
    # three files of one student, the notebook uploaded twice (Canvas's "-1"): one submission, graded whole
    for name in FOLDER:
        stem, ext = os.path.splitext(name)
        _copy(f"correct_folder/{name}", folder / f"doejane_102_9002_{stem}{'-1' if ext == '.ipynb' else ''}{ext}")
    _copy("no_scaling.py", folder / "leeann_104_9004_attention.py")
    roster = base / "roster.csv"
    roster.write_text("name,student_id,email\nJürgen Müller,s1,jm@uni.example\nJane Doe,s2,jd@uni.example\n"
                      "Ann Lee,s4,al@uni.example\nAlice Absent,s3,aa@uni.example\n", encoding="utf-8")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public", "--roster", str(roster))
    assert run.returncode == 0, run.stdout + run.stderr
    return out, run


def test_canvas_files_of_one_student_are_one_submission(canvas):
    out, _ = canvas
    book = _book(out)
    assert sorted(book) == ["doejane_102", "leeann_104", NFC("müllerjürgen_101"), "smithbob_103"]
    attempts = os.listdir(os.path.join(out, lms.STAGE, "doejane_102"))  # a folder per attempt staged (h104)
    assert len(attempts) == 1, attempts
    staged = os.path.join(out, lms.STAGE, "doejane_102", attempts[0])
    assert sorted(os.listdir(staged)) == FOLDER  # own names, "-1" taken off
    # the notebook imports its two .py files: graded together it gets the full automatic score
    assert book["doejane_102"]["total"] == book[NFC("müllerjürgen_101")]["total"] == AUTO


def test_canvas_student_columns_match_the_roster_across_unicode_forms(canvas):
    out, _ = canvas
    book = _book(out)
    mueller = book[NFC("müllerjürgen_101")]
    assert (mueller["student"], mueller["student_id"]) == ("Jürgen Müller", "s1")  # NFD file name, NFC roster
    assert mueller["student"] == NFC(mueller["student"])
    assert (book["leeann_104"]["student"], book["leeann_104"]["student_id"]) == ("Ann Lee", "s4")
    assert (book["smithbob_103"]["student"], book["smithbob_103"]["student_id"]) == ("smithbob", "103")
    assert "late" in mueller["note"]


def test_canvas_roster_report(canvas):
    _, run = canvas
    assert "roster: 3 of 4 students have a submission" in run.stdout
    assert "roster: no submission from Alice Absent (s3, aa@uni.example)" in run.stdout
    assert "roster: submission smithbob_103 (smithbob) matches no student of the roster" in run.stdout
    assert "matches no student of the roster" in _book(canvas[0])["smithbob_103"]["note"]


def test_identical_code_is_flagged_in_the_notes(canvas):
    book = _book(canvas[0])
    assert f"identical code to {NFC('müllerjürgen_101')}" in book["smithbob_103"]["note"]
    assert "identical code to smithbob_103" in book[NFC("müllerjürgen_101")]["note"]
    assert "identical" not in book["leeann_104"]["note"] and "identical" not in book["doejane_102"]["note"]


def test_canvas_csv_is_canvas_import_format(canvas):
    out, _ = canvas
    rows = _csv(os.path.join(out, "canvas.csv"))
    assert rows[0] == ["Student", "ID", "SIS User ID", "SIS Login ID", "Section", "attention"]
    assert rows[1] == ["Points Possible", "", "", "", "", TOTAL]
    lost = _points(_book(out)["leeann_104"]["total"])  # no_scaling.py's score, as grades.csv has it
    assert 0 < float(lost) < float(AUTO)
    assert rows[2:] == [["Jane Doe", "102", "", "", "", AUTO], ["Ann Lee", "104", "", "", "", lost],
                        ["Jürgen Müller", "101", "", "", "", AUTO], ["smithbob", "103", "", "", "", AUTO]]
    again = _hwcheck("export", out, "--canvas", "Homework 1 (4567)")
    assert again.returncode == 0, again.stderr
    assert _csv(os.path.join(out, "canvas.csv"))[0][-1] == "Homework 1 (4567)"



def test_a_submission_hwcheck_could_not_grade_is_left_out_of_canvas_csv_and_said_so(canvas, tmp_path):
    """A TA's probe (h38): a grading process killed during a regrade left one student's scorecard "crashed";
    canvas.csv rightly left her out (a blank cell erases Canvas's grade) but said "1 submissions have no id of
    that LMS" of a student who has one. The line names her, why, and the --resume that grades her again."""
    from checker.records.grading import crash
    out = str(tmp_path / "graded")
    shutil.copytree(canvas[0], out)
    card = _hwcheck_card(out, "leeann_104")
    crash("leeann_104", card["submission"]["path"],
          {"assignment": "attention", "mode": "public", "seed": card["grader"]["seed"], "outdir": out},
          "the grading process died (SIGKILL)", grader_failure=True)
    run = _hwcheck("export", out)
    wrote = next(line for line in run.stdout.splitlines() if "canvas.csv" in line and "wrote" in line)
    assert "no id of that LMS" not in wrote and "3 students" in wrote, run.stdout
    assert "1 left out because hwcheck could not grade it (leeann_104" in wrote, run.stdout
    assert "--resume" in wrote, run.stdout
    assert [r[1] for r in _csv(os.path.join(out, "canvas.csv"))[2:]] == ["102", "101", "103"]


def test_export_of_a_canvas_folder_names_the_manual_grades_pending(canvas, tmp_path):
    """canvas.csv's totals lack the points of questions graded by hand: export names who still waits for them
    (each student of the LMS graded by hwcheck), and counts one fewer once a TA's grade is in manual.csv."""
    out = str(tmp_path / "graded")
    shutil.copytree(canvas[0], out)
    said = " ".join(_hwcheck("export", out).stdout.split())
    assert "manual grades pending: 4 of 4 submissions have Q3-text" in said, said
    assert f"then run `hwcheck export {out}` again" in said, said
    with open(os.path.join(out, "manual.csv"), "a", encoding="utf-8") as f:
        f.write("smithbob_103,Q3-text,8,clear\n")
    said = " ".join(_hwcheck("export", out).stdout.split())
    assert "manual grades pending: 3 of 4 submissions have Q3-text" in said and "smithbob_103" not in said.split(
        "manual grades pending")[1].split(";")[0], said


def _hwcheck_card(out, sid):
    from checker.records.outfolder import read_scorecard
    return read_scorecard(out, sid)


# ---------------------------------------------------------------------------
# Moodle
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def moodle(tmp_path_factory):
    base = tmp_path_factory.mktemp("moodle")
    folder, out = base / "submissions", str(base / "graded")
    folder.mkdir()
    _copy("correct.py", folder / NFD("Jürgen Müller_201_assignsubmission_file_attention.py"))
    shutil.copytree(os.path.join(SUB, "correct_folder"), folder / "Jane Doe_202_assignsubmission_file_")
    (folder / "Jane Doe_202_assignsubmission_onlinetext_").mkdir()
    (folder / "Jane Doe_202_assignsubmission_onlinetext_" / "onlinetext.html").write_text("<p>done</p>")
    _copy("no_scaling.py", folder / "Bob Smith_203_assignsubmission_file_attention.py")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public")
    assert run.returncode == 0, run.stdout + run.stderr
    return out, run


def test_moodle_files_and_folders_are_one_submission_each(moodle):
    out, _ = moodle
    book = _book(out)
    assert sorted(book) == ["Bob Smith_203", "Jane Doe_202", NFC("Jürgen Müller_201")]
    assert book["Jane Doe_202"]["total"] == AUTO
    assert (book[NFC("Jürgen Müller_201")]["student"], book[NFC("Jürgen Müller_201")]["student_id"]) == \
        (NFC("Jürgen Müller"), "201")


def test_moodle_worksheet_has_moodle_columns_and_manual_grades(moodle):
    out, _ = moodle
    rows = _csv(os.path.join(out, "moodle.csv"))
    # Moodle's importer finds `Identifier`, `Grade` and `Last modified (grade)` by name; no `Feedback comments`
    # column, which would replace the comments typed in Moodle (blank ones too)
    assert rows[0] == ["Identifier", "Full name", "Email address", "Status", "Grade", "Maximum Grade",
                       "Grade can be changed", "Last modified (submission)", "Last modified (grade)"]
    # the export's time: a grade changed in Moodle afterwards is newer and kept; one changed before is replaced
    stamps = {r[8] for r in rows[1:]}
    assert len(stamps) == 1
    when = datetime.datetime.fromisoformat(stamps.pop())
    assert when.utcoffset() == datetime.timedelta(0)
    assert abs((datetime.datetime.now(datetime.timezone.utc) - when).total_seconds()) < 3600
    lost = _points(_book(out)["Bob Smith_203"]["total"])  # no_scaling.py's score, as grades.csv has it
    assert 0 < float(lost) < float(AUTO)
    assert [r[:8] for r in rows[1:]] == [["Participant 203", "Bob Smith", "", "", lost, TOTAL, "Yes", ""],
                                         ["Participant 202", "Jane Doe", "", "", AUTO, TOTAL, "Yes", ""],
                                         ["Participant 201", NFC("Jürgen Müller"), "", "", AUTO, TOTAL, "Yes", ""]]
    with open(os.path.join(out, "manual.csv"), "a", encoding="utf-8", newline="") as f:
        f.write("Jane Doe_202,adjustment,-5,late\r\n")
    lines = [line for line in open(os.path.join(out, "manual.csv"), encoding="utf-8-sig")]
    with open(os.path.join(out, "manual.csv"), "w", encoding="utf-8-sig", newline="") as f:
        f.write("".join(line.replace(f"Jane Doe_202,{MANUAL},,", f"Jane Doe_202,{MANUAL},8,") for line in lines))
    again = _hwcheck("export", out)
    assert again.returncode == 0, again.stderr
    jane = [r for r in _csv(os.path.join(out, "moodle.csv")) if r[0] == "Participant 202"]
    assert jane[0][4] == f"{float(AUTO) + 8 - 5:g}"  # automatic + 8 by hand - 5


def test_moodle_grades_its_import_would_skip_are_named(moodle, tmp_path):
    """Moodle's worksheet import skips a grade above the maximum or below 0, telling only how many: a bonus that
    takes a total past 100, a penalty below 0. export writes the grades as they are and names those students."""
    out = str(tmp_path / "graded")
    shutil.copytree(moodle[0], out)
    with open(os.path.join(out, "manual.csv"), "a", encoding="utf-8", newline="") as f:
        f.write(f"{NFC('Jürgen Müller_201')},adjustment,15,bonus\r\nBob Smith_203,adjustment,-200,copied\r\n")
    r = _hwcheck("export", out)
    assert r.returncode == 0, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert "skips a grade above the assignment's maximum" in said, said
    assert f"{NFC('Jürgen Müller_201')} ({float(AUTO) + 15:g})" in said and "Bob Smith_203 (" in said, said
    assert "Jane Doe_202" not in said.split("skips a grade")[1].split("\n")[0], said


# ---------------------------------------------------------------------------
# Gradescope and GitHub Classroom
# ---------------------------------------------------------------------------

METADATA = """submission_111:
  :submitters:
  - :name: "J\\u00fcrgen M\\u00fcller"
    :sid: 's1'
    :email: jm@uni.example
  :created_at: 2026-11-01 10:00:00.000000000 -07:00
  :score: 90.0
  :history:
  - :created_at: 2026-10-31 09:00:00.000000000 -07:00
    :score: 40.0
submission_222:
  :submitters:
  - :name: O'Brien, Pat
    :sid: '0042'
    :email: pat@uni.example
"""


@pytest.fixture(scope="module")
def gradescope(tmp_path_factory):
    base = tmp_path_factory.mktemp("gradescope")
    folder, out = base / "export", str(base / "graded")
    folder.mkdir()
    (folder / "submission_metadata.yml").write_text(METADATA, encoding="utf-8")
    (folder / "submission_111").mkdir()
    _copy("correct.py", folder / "submission_111" / "attention.py")
    (folder / "submission_222").mkdir()
    _copy("correct_notebook.ipynb", folder / "submission_222" / "attention.ipynb")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public")
    assert run.returncode == 0, run.stdout + run.stderr
    return out


def test_gradescope_export_names_its_submitters(gradescope):
    book = _book(gradescope)
    assert sorted(book) == ["submission_111", "submission_222"]
    assert (book["submission_111"]["student"], book["submission_111"]["student_id"]) == ("Jürgen Müller", "s1")
    assert (book["submission_222"]["student"], book["submission_222"]["student_id"]) == ("O'Brien, Pat", "0042")
    assert not os.path.exists(os.path.join(gradescope, "canvas.csv"))


def test_classroom_repositories_are_students_and_the_starter_is_not_their_code(tmp_path):
    folder = tmp_path / "hw1-submissions"
    for user in ("alice", "bob"):
        repo = folder / f"hw1-{user}"
        repo.mkdir(parents=True)
        (repo / ".git").mkdir()
        shutil.copyfile(os.path.join(ROOT, "assignments", "attention", "starter.ipynb"), repo / "starter.ipynb")
    _copy("correct.py", folder / "hw1-alice" / "attention.py")
    _copy("no_scaling.py", folder / "hw1-bob" / "attention.py")
    layout = lms.recognise(str(folder))
    assert layout.platform == "classroom"
    assert {s.sid: (s.student, s.student_id) for s in layout.students.values()} == \
        {"hw1-alice": ("alice", "alice"), "hw1-bob": ("bob", "bob")}
    entries = lms.prepare(str(folder), str(tmp_path / "out"), [], assignment="attention")
    assert entries == [("hw1-alice", str(folder / "hw1-alice")), ("hw1-bob", str(folder / "hw1-bob"))]
    # the same starter in both repositories makes nothing identical; the same code beside it does
    assert identical_groups(entries) == {}
    _copy("correct.py", folder / "hw1-bob" / "attention.py")
    assert identical_groups(entries) == {"hw1-alice": ["hw1-bob"], "hw1-bob": ["hw1-alice"]}


def test_classroom_usernames_that_share_a_start_keep_it_in_gh_classrooms_folder(tmp_path):
    """`gh classroom clone student-repos` clones into `<slug>-submissions`: usernames ucb-alice and ucb-bob were
    read as alice and bob (the repos' longest shared prefix, hw1-ucb-, taken for the assignment's)."""
    for folder, want in ((tmp_path / "hw1-submissions", {"ucb-alice", "ucb-bob"}),
                         (tmp_path / "downloaded", {"alice", "bob"})):  # no slug to go by: the shared prefix
        for user in ("ucb-alice", "ucb-bob"):
            (folder / f"hw1-{user}").mkdir(parents=True)
            _copy("correct.py", folder / f"hw1-{user}" / "attention.py")
        layout = lms.recognise(str(folder))
        assert layout.platform == "classroom"
        assert {s.student_id for s in layout.students.values()} == want, folder


def test_canvas_names_as_canvas_writes_them(tmp_path):
    """canvas-lms content_zipper.rb: `[name, "LATE", user id]` (name absent, id `anon_<id>` under anonymous
    grading) + `_<attachment id>_<file>`; a name keeps any word character; text entries are `_text.html`."""
    for name in ("o_brienpat_55_701_attention.py",           # an underscore left in the sortable name
                 "_56_702_attention.py",                      # a user with no sortable name
                 "anon_x7Kq2_703_attention.py", "LATE_anon_Zz9_704_attention.py",
                 "leeann_LATE_57_705_q1.py", "leeann_LATE_57_706_q2_v2.py",
                 "leeann_57_text.html", "smithbob_58_link.html"):
        _copy("correct.py", tmp_path / name)
    layout = lms.recognise(str(tmp_path))
    assert layout.platform == "canvas"
    got = {s.sid: (s.student, s.student_id, s.lms.get("canvas_user_id"), bool(s.lms.get("late")),
                   sorted(f for _, f in s.files)) for s in layout.students.values()}
    assert got == {
        "o_brienpat_55": ("o_brienpat", "55", "55", False, ["attention.py"]),
        "_56": ("", "56", "56", False, ["attention.py"]),
        "anon_x7Kq2": ("", "anon_x7Kq2", None, False, ["attention.py"]),
        "anon_Zz9": ("", "anon_Zz9", None, True, ["attention.py"]),
        "leeann_57": ("leeann", "57", "57", True, ["q1.py", "q2_v2.py"]),
        "smithbob_58": ("smithbob", "58", "58", False, []),  # a web link only: theirs, handed in, never graded
    }
    assert {s.sid: [n for n, _ in s.aside] for s in layout.students.values() if s.aside} == {
        "leeann_57": ["leeann_57_text.html"], "smithbob_58": ["smithbob_58_link.html"]}


def test_canvas_and_moodle_rows_never_blank_a_grade_the_lms_holds():
    from checker.records.exports import canvas_text, moodle_text
    cards = [{"submission": {"id": "a_1"}, "score": 90, "max_score": 100},
             {"submission": {"id": "b_2"}, "score": 0, "max_score": 100, "grader": {"internal_error": True}},
             {"submission": {"id": "anon_x"}, "score": 50, "max_score": 100}]
    people = {"a_1": {"student": "A", "canvas_user_id": "1", "moodle_participant": "11"},
              "b_2": {"student": "B", "canvas_user_id": "2", "moodle_participant": "12"},
              "anon_x": {"student": ""}}
    rows = list(csv.reader(canvas_text(cards, people, "HW (9)", 100).splitlines()))
    assert rows[2:] == [["A", "1", "", "", "", "90"]]  # not graded: left out (a blank cell erases Canvas's grade)
    rows = list(csv.reader(moodle_text(cards, people, "2026-11-24T10:00:00+00:00").splitlines()))
    assert [(r[0], r[4]) for r in rows[1:]] == [("Participant 11", "90"), ("Participant 12", "")]  # Moodle skips ""


def test_a_plain_folder_is_no_lms_layout(tmp_path):
    _copy("correct.py", tmp_path / "alice.py")
    _copy("no_scaling.py", tmp_path / "bob.py")
    assert lms.recognise(str(tmp_path)).platform is None


def test_a_roster_saved_with_semicolons_and_canvas_rows_under_its_header_are_read(tmp_path):
    """A roster saved by a spreadsheet whose locale separates with `;` was refused as having no name column; a
    Canvas gradebook export's "Manual Posting" row and its test student ("Student, Test") were counted as
    students with no submission."""
    from checker.records.roster import read_roster
    semi = tmp_path / "semi.csv"
    semi.write_bytes("\ufeffname;student_id;email\r\nJane Doe;12345;jd@uni.example\r\n".encode("utf-8"))
    assert read_roster(str(semi)) == [{"name": "Jane Doe", "student_id": "12345", "email": "jd@uni.example"}]
    canvas = tmp_path / "canvas.csv"
    canvas.write_text("Student,ID,SIS User ID,SIS Login ID,Section,Homework 1 (4567)\n"
                      "    Manual Posting,,,,,Manual Posting\n    Points Possible,,,,,100\n"
                      '"Doe, Jane",102,S102,jdoe,Sec A,\n"Student, Test",999,,,Sec A,\n', encoding="utf-8")
    assert [r["name"] for r in read_roster(str(canvas))] == ["Doe, Jane"]


def test_of_a_file_uploaded_twice_to_canvas_the_later_is_graded(tmp_path):
    """Canvas names a file uploaded again under the same name `attention-1.py`: with both in the download, the
    older `attention.py` loaded last (it sorts after) and its functions were graded (82.78 for a fixed file).
    The later upload is graded; the earlier is listed as left out, with why."""
    folder = tmp_path / "download"
    folder.mkdir()
    _copy("feature_axis.py", folder / "smithjohn_1002_5002_attention.py")  # the first upload, wrong
    _copy("correct.py", folder / "smithjohn_1002_5003_attention-1.py")     # the re-upload, fixed
    out = str(tmp_path / "out")
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _book(out)["smithjohn_1002"]["total"] == AUTO
    assert "attention.py (Canvas attachment 5002) is an earlier upload than attention-1.py" in r.stdout + r.stderr, \
        r.stdout + r.stderr


def test_of_two_canvas_attachments_of_one_name_the_later_is_graded_and_a_tie_is_flagged(tmp_path):
    """h11 (2): two "Download Submissions" zips unzipped into one folder give a student `attention.py` twice,
    attachments 5001 (the older attempt) and 6001: the older was graded (its name sorts first) and the message
    called the later one the earlier. Canvas numbers attachments in the order they are uploaded: the higher id is
    graded, and the message says so. Where the order cannot be told (one attachment id twice, the files
    different), the student is graded on neither: named, with what to do, and `grade` exits 1."""
    folder = tmp_path / "download"
    folder.mkdir()
    _copy("no_scaling.py", folder / "smithjohn_1001_5001_attention.py")  # the old attempt
    _copy("correct.py", folder / "smithjohn_1001_6001_attention.py")     # the new one
    _copy("correct.py", folder / "doejane_1005_5006_attention.py")
    _copy("no_scaling.py", folder / "leeann_1007_7001_attention.py")    # one attachment id twice, bytes differ
    _copy("correct.py", folder / "leeann_LATE_1007_7001_attention.py")
    out = str(tmp_path / "out")
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public")
    said = r.stdout + r.stderr
    assert r.returncode == 1, said
    book = _book(out)
    assert book["smithjohn_1001"]["total"] == AUTO, said
    assert ("'smithjohn_1001_5001_attention.py': attention.py (Canvas attachment 5001) is an earlier upload than "
            "attention.py (attachment 6001") in said, said
    assert "leeann_1007" not in book and "doejane_1005" in book
    assert ("leeann_1007_7001_attention.py and leeann_LATE_1007_7001_attention.py are different files under one "
            "name, and which is the later cannot be told") in said, said


def test_an_anonymous_canvas_download_says_why_there_is_no_canvas_csv(tmp_path):
    """The TA's probe: `export` on an anonymous Canvas assignment said the folder "holds no Canvas or Moodle
    students". It says why no canvas.csv is written (no Canvas user ids; Canvas's import does not set an
    anonymous assignment's grades) and where the grades are."""
    subs = tmp_path / "canvas"
    subs.mkdir()
    _copy("correct.py", subs / "anon_x7Kq2_703_attention.py")
    _copy("no_scaling.py", subs / "LATE_anon_Zz9_704_attention.py")
    out = tmp_path / "graded"
    r = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    r = _hwcheck("export", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    said = r.stdout + r.stderr
    assert not (out / "canvas.csv").exists()
    assert "anonymous Canvas assignment" in said and "holds no Canvas or Moodle students" not in said, said
    assert str(out / "grades.csv") in said


def test_canvas_names_with_combining_marks_are_read_as_canvas_writes_them(tmp_path):
    """A sortable name in Devanagari, Thai, Arabic or Hebrew keeps its combining marks (vowel signs, points), which
    Python's `\\w` does not match: one such student made a whole class folder unreadable as Canvas's, and a name
    holding fields of its own (`x_1001_5_y` + a Thai mark) could be read only one way, as user 1001's, so the
    victim was left ungraded (an attacker's probe). Every reading of a name with marks is weighed now."""
    names = {"doejohn_1001_500_attention.py": "correct.py",
             "smithann_1003_510_attention.py": "context_average.py",
             "\u0936\u0930\u094d\u092e\u093e\u092a\u094d\u0930\u093f\u092f\u093e_1004_520_attention.py": "correct.py",
             "\u0633\u064e\u0644\u0645\u0649_1005_530_attention.py": "correct.py",
             "\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd_1006_540_attention.py": "correct.py",
             "x_1001_5_y\u0e34_2002_555_attention.py": "no_scaling.py"}
    for name, example in names.items():
        _copy(example, tmp_path / name)
    layout = lms.recognise(str(tmp_path))
    assert layout.platform == "canvas"
    got = {s.sid: s.lms.get("canvas_user_id") for s in layout.students.values()}
    assert got["doejohn_1001"] == "1001" and got["smithann_1003"] == "1003"
    for sid, uid in [("\u0936\u0930\u094d\u092e\u093e\u092a\u094d\u0930\u093f\u092f\u093e_1004", "1004"),
                     ("\u0633\u064e\u0644\u0645\u0649_1005", "1005"),
                     ("\u05e9\u05b8\u05c1\u05dc\u05d5\u05b9\u05dd_1006", "1006")]:
        assert got.get(unicodedata.normalize("NFC", sid)) == uid, got
    # the student whose name holds fields is never read as user 1001
    assert [uid for sid, uid in got.items() if uid == "1001"] == ["1001"], got
