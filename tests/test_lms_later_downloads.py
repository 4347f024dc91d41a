"""Downloads graded one after another into one output folder, and GitHub Classroom's usernames read by a roster
(h86's probe).

- A late-only Canvas download graded into the class's folder with --resume keeps who every other student is:
  grades.csv keeps their names and ids, canvas.csv their rows (`lms_attempts.keep_earlier_students`).
- A Gradescope resubmission (a new `submission_<id>` of the same submitter) is named with the older id, and the
  older id's manual.csv grades are shown as stranded there (`lms_attempts.same_gradescope_student`).
- GitHub Classroom repositories `hw1-ucb-alice`: with a roster, the username is the roster's that is the whole
  tail after a shared prefix; where two fit (`ucb-alice`, `alice`), the repository is refused and named
  (`lms_folders.classroom`).
"""
import csv
import os
import shutil
import subprocess
import sys

from checker.records import lms
from checker.records.roster import read_roster

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _copy(name, to):
    os.makedirs(os.path.dirname(to), exist_ok=True)
    shutil.copy(os.path.join(EXAMPLES, name), to)


def test_a_late_only_download_keeps_who_everyone_else_is(tmp_path):
    _copy("correct.py", tmp_path / "subs" / "smithalice_1001_50001_hw1.py")
    _copy("no_scaling.py", tmp_path / "subs" / "jonesbob_1002_50002_hw1.py")
    _copy("correct.py", tmp_path / "late" / "latedan_LATE_1004_50020_hw1.py")
    out = tmp_path / "out"
    r = _hwcheck("grade", tmp_path / "subs", "-a", "attention", "-o", out, "--public", "--canvas", "Homework 1 (4567)")
    assert r.returncode == 0, r.stderr
    r = _hwcheck("grade", tmp_path / "late", "-a", "attention", "-o", out, "--public", "--resume")
    assert r.returncode == 0, r.stderr
    r = _hwcheck("export", out)
    assert r.returncode == 0, r.stderr
    who = {row["id"]: (row["student"], row["student_id"]) for row in _rows(out / "grades.csv")}
    assert who == {"smithalice_1001": ("smithalice", "1001"), "jonesbob_1002": ("jonesbob", "1002"),
                   "latedan_1004": ("latedan", "1004")}
    with open(out / "canvas.csv", encoding="utf-8-sig") as f:
        ids = sorted(row[1] for row in csv.reader(f) if row and row[0] not in ("Student", "Points Possible"))
    assert ids == ["1001", "1002", "1004"]


def test_a_gradescope_resubmission_is_named_with_the_old_id_and_its_stranded_grades(tmp_path):
    def export(d, alice):
        for sub, name in ((alice, "no_scaling.py" if alice == "submission_111" else "correct.py"),
                          ("submission_112", "correct.py")):
            _copy(name, d / sub / "attention.py")
        (d / "submission_metadata.yml").write_text(
            f"{alice}:\n  :submitters:\n  - :name: Alice Smith\n    :sid: '2001'\n    :email: alice@u.edu\n"
            f"submission_112:\n  :submitters:\n  - :name: Bob Jones\n    :sid: '2002'\n    :email: bob@u.edu\n")
    export(tmp_path / "d1", "submission_111")
    export(tmp_path / "d2", "submission_150")
    out = tmp_path / "out"
    r = _hwcheck("grade", tmp_path / "d1", "-a", "attention", "-o", out, "--public")
    assert r.returncode == 0, r.stderr
    with open(out / "manual.csv", "a", encoding="utf-8", newline="") as f:
        f.write("submission_111,adjustment,-5,late 2 days\r\n")
    r = _hwcheck("grade", tmp_path / "d2", "-a", "attention", "-o", out, "--public", "--resume")
    said = " ".join(r.stderr.split())
    assert "submission_150 and submission_111 are one student's" in said, r.stderr
    assert "adjustment -5 ('late 2 days')" in said and "stranded" in said


def _repos(tmp_path, *names):
    for n in names:
        os.makedirs(tmp_path / "hw1" / n)
        shutil.copy(os.path.join(EXAMPLES, "correct.py"), tmp_path / "hw1" / n / "attention.py")
    return str(tmp_path / "hw1")


def _roster(tmp_path, *users):
    path = tmp_path / "roster.csv"
    path.write_text("name,student_id,github_username\n" + "".join(f"N {u},{i},{u}\n" for i, u in enumerate(users)))
    return read_roster(str(path))


def test_classroom_usernames_are_the_roster_username_that_is_the_whole_tail(tmp_path):
    folder = _repos(tmp_path, "hw1-ucb-alice", "hw1-ucb-bob")
    layout = lms.recognise(folder, roster_rows=_roster(tmp_path, "ucb-alice", "ucb-bob", "carol"))
    assert layout.platform == "classroom"
    assert {s.sid: s.lms["github_username"] for s in layout.students.values()} == {
        "hw1-ucb-alice": "ucb-alice", "hw1-ucb-bob": "ucb-bob"}


def test_classroom_repositories_two_roster_usernames_fit_are_refused_and_named(tmp_path):
    folder = _repos(tmp_path, "hw1-ucb-alice", "hw1-ucb-bob", "hw1-ucb-carol")
    layout = lms.recognise(folder, roster_rows=_roster(tmp_path, "ucb-alice", "alice", "ucb-bob", "bob", "ucb-carol"))
    assert layout.platform == "classroom"
    assert {s.sid: s.lms["github_username"] for s in layout.students.values()} == {"hw1-ucb-carol": "ucb-carol"}
    assert layout.refused == ["hw1-ucb-alice", "hw1-ucb-bob"]
    why = dict(layout.ignored)["hw1-ucb-alice"]
    assert "alice and ucb-alice" in why and "hw1-submissions" in why
