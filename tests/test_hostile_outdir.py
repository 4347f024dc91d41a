"""OUT equal to the download folder (the README allows it): students' files there are never taken for hwcheck's.

Real batches through `python -m checker.cli grade DL -a attention -o DL --public`, with a correct
submission (john, 90 of the automatic points) and a wrong one (bob, 0) beside the files a student could
upload into the same folder: a folder named `john.json` (where john's scorecard goes), a folder
`grades.csv`, a `notes.json` shaped like a scorecard giving john 3, a hidden `.students.json` naming the
student's own roster, and a forged "current" scorecard `bob.json` (a genuine scorecard of a correct file,
relabelled as bob's with bob's file hash) before the first `--resume`. hwcheck trusts only what it recorded
writing (`checker.records.owned`): every student keeps their own grade and row, the batch is not stopped, and
no student's file is lost. Then the TA's grades in manual.csv (and one typed into grades.csv) survive a
rerun, canvas.csv is built from hwcheck's own scorecards, and `hwcheck merge` writes nothing outside `-o`.
"""

import csv
import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys

import pytest

from sandbox_helpers import GOOD, WRONG

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.slow


def _hwcheck(env, *args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env=env)


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")  # this test's own key (checker.records.owned), not the machine's
    return {**os.environ, "PYTHONPATH": ROOT, "HWCHECK_STATE_DIR": str(state)}


@pytest.fixture(scope="module")
def genuine(tmp_path_factory, env):
    """A genuine scorecard of a correct file (90 points), to forge from."""
    base = tmp_path_factory.mktemp("genuine")
    (base / "dl").mkdir()
    (base / "dl" / "john.py").write_text(GOOD)
    r = _hwcheck(env, "grade", str(base / "dl"), "-a", "attention", "-o", str(base / "out"), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    with open(base / "out" / "john.json", encoding="utf-8") as f:
        card = json.load(f)
    assert card["score"] == 90
    return card


def _sha(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _forge(card, sid, **changes):
    forged = json.loads(json.dumps(card))
    forged["submission"]["id"] = sid
    forged.update(changes)
    return json.dumps(forged, indent=2)


def _rows(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _gradebook(dl):
    """grades.csv, or hwcheck's gradebook beside a student's thing of that name."""
    found = [p for p in [os.path.join(dl, "grades.csv"), *glob.glob(os.path.join(dl, "grades.hwcheck-*.csv"))]
             if os.path.isfile(p)]
    assert len(found) == 1, found
    return found[0]


def _set_aside_bytes(dl):
    out = []
    for path in glob.glob(os.path.join(dl, ".hwcheck-*", "set-aside", "*")):
        with open(path, "rb") as f:
            out.append(f.read())
    return out


@pytest.fixture(scope="module")
def hostile(tmp_path_factory, env, genuine):
    dl = tmp_path_factory.mktemp("download")
    (dl / "john.py").write_text(GOOD)
    (dl / "bob.py").write_text(WRONG)
    (dl / "john.json").mkdir()                       # where john's scorecard goes
    (dl / "john.json" / "readme.txt").write_text("mine\n")
    (dl / "grades.csv").mkdir()                      # where the gradebook goes
    (dl / "grades.csv" / "x.txt").write_text("mine\n")
    (dl / "notes.json").write_text(_forge(genuine, "john", score=3))  # shaped like a scorecard
    (dl / "roster.csv").write_text("name,student_id,email\nMallory Forged,john,m@evil.example\n")
    (dl / ".students.json").write_text(json.dumps({
        "platform": None, "assignment": "attention", "students": {"john": {"student": "Mallory Forged"}},
        "identical": {}, "roster_file": str(dl / "roster.csv"), "roster": None}))
    forged_bob = _forge(genuine, "bob")
    forged_bob = json.loads(forged_bob)
    forged_bob["submission"]["sha256"] = _sha(dl / "bob.py")  # "current" for bob's file
    forged_bob = json.dumps(forged_bob, indent=2)
    (dl / "bob.json").write_text(forged_bob)
    before = {"notes.json": (dl / "notes.json").read_bytes(), "roster.csv": (dl / "roster.csv").read_bytes()}
    first = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public", "--resume")
    return dl, first, before, forged_bob


def test_a_students_files_neither_block_nor_replace_hwchecks_outputs(hostile):
    dl, first, before, forged_bob = hostile
    assert first.returncode == 0, first.stdout + first.stderr  # a folder grades.csv does not stop the batch
    book = _rows(_gradebook(dl))
    assert book["john"]["total"] == "90"           # not notes.json's 3, and a row though john.json is a folder
    assert book["bob"]["total"] == "0"             # graded: the forged "current" 90 was not trusted
    assert "john.json" in book and "grades.csv" in book  # those folders are submissions like any other
    assert "Mallory" not in open(_gradebook(dl), encoding="utf-8-sig").read()  # the student's roster: not applied
    assert "(up to date, not regraded)" not in first.stderr
    # nothing of the students' is lost: left where it was, or set aside in hwcheck's state folder (and told)
    assert (dl / "john.json" / "readme.txt").read_text() == "mine\n"
    assert (dl / "grades.csv" / "x.txt").read_text() == "mine\n"
    assert (dl / "notes.json").read_bytes() == before["notes.json"]
    assert forged_bob.encode() in _set_aside_bytes(dl)
    told = first.stdout + first.stderr
    assert "bob.json" in told and "not written by hwcheck" in told and "grades.hwcheck-" in told
    # john's scorecard is beside his folder john.json, and says 90
    cards = glob.glob(os.path.join(dl, "john.hwcheck-*.json"))
    assert len(cards) == 1 and json.load(open(cards[0], encoding="utf-8"))["score"] == 90


def test_a_rerun_trusts_what_hwcheck_wrote_and_the_tas_grades_survive(hostile, env):
    dl, first, _, _ = hostile
    assert first.returncode == 0, first.stdout + first.stderr
    manual = dl / "manual.csv"
    typed = manual.read_bytes().decode("utf-8-sig").rstrip("\r\n") + "\r\njohn,Q3-text,7,well argued\r\n"
    manual.write_bytes(b"\xef\xbb\xbf" + typed.encode())
    again = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public", "--resume")
    assert again.returncode == 0, again.stdout + again.stderr
    resumed = [ln for ln in again.stderr.splitlines() if "(up to date, not regraded)" in ln]
    assert len(resumed) == 4, again.stderr  # john, bob, the folders john.json and grades.csv: hwcheck's own cards
    book = _rows(_gradebook(dl))
    assert book["john"]["total"] == "97" and book["john"]["Q3-text"] == "7"
    assert book["bob"]["total"] == "0"
    assert manual.read_bytes().decode("utf-8-sig").startswith(typed)  # the TA's rows, byte for byte


def test_grades_typed_into_grades_csv_move_to_manual_csv(tmp_path, env):
    """(In an OUT of its own: where OUT holds the students' files, a changed grades.csv may be a student's upload,
    and no grade in it is applied: the test below.)"""
    dl, out = tmp_path / "dl", tmp_path / "out"
    dl.mkdir()
    (dl / "john.py").write_text(GOOD)
    assert _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(out), "--public").returncode == 0
    path = out / "grades.csv"
    rows = list(csv.reader(open(path, newline="", encoding="utf-8-sig")))
    col = rows[0].index("Q3-text")
    rows[1][col] = "6"
    with open(path, "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(out), "--public", "--resume")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _rows(path)["john"]["total"] == "96"
    assert "john,Q3-text,6,typed into grades.csv" in (out / "manual.csv").read_text(encoding="utf-8-sig")


def test_a_forged_gradebook_is_no_source_of_typed_grades(tmp_path, env, genuine):
    """A student's grades.csv with a grade 'typed' for themselves is not the TA's: it is set aside, not read."""
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "bob.py").write_text(WRONG)
    (dl / "grades.csv").write_text("id,student,student_id,total,Q1,Q2,Q3,Q3-text,max_total,status,mode,note\r\n"
                                   "bob,,,0,0,0,0,10,100,graded,public,\r\n")
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _rows(dl / "grades.csv")["bob"]["total"] == "0"
    assert "typed into grades.csv" not in (dl / "manual.csv").read_text(encoding="utf-8-sig")


def test_canvas_csv_comes_from_hwchecks_own_scorecards(tmp_path, env, genuine):
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "smithjohn_1001_2001_attention.py").write_text(GOOD)
    (dl / "jonesbob_1002_2002_attention.py").write_text(WRONG)
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    sid = next(s for s in _rows(_gradebook(dl)) if "john" in s)
    (dl / "zz-notes.json").write_text(_forge(genuine, sid, score=3))  # read after john's by an old hwcheck
    r = _hwcheck(env, "export", str(dl))
    assert r.returncode == 0, r.stdout + r.stderr
    rows = list(csv.reader(open(dl / "canvas.csv", newline="", encoding="utf-8")))
    john = next(row for row in rows if row[1] == "1001")
    assert john[-1] == "90"


def test_merge_never_writes_outside_its_folder(tmp_path, env, genuine):
    src = tmp_path / "shard"
    (tmp_path / "dl").mkdir()
    (tmp_path / "dl" / "john.py").write_text(GOOD)
    assert _hwcheck(env, "grade", str(tmp_path / "dl"), "-a", "attention", "-o", str(src),
                    "--public").returncode == 0
    (src / "escape.json").write_text(_forge(genuine, "../merge_escape"))
    dest = tmp_path / "merged"
    r = _hwcheck(env, "merge", str(src), "-o", str(dest))
    assert r.returncode in (0, 1), r.stdout + r.stderr
    assert not (tmp_path / "merge_escape.json").exists()
    assert not glob.glob(str(tmp_path / "merge_escape*"))
    assert (dest / "john.json").is_file()
    assert _rows(dest / "grades.csv").keys() == {"john"}


def test_an_output_folder_moved_to_another_key_is_trusted_with_nothing(tmp_path, env):
    """Records are signed with the account's key: copied elsewhere (or forged), they prove nothing; hwcheck
    grades again and loses nothing."""
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "john.py").write_text(GOOD)
    assert _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public").returncode == 0
    other = {**env, "HWCHECK_STATE_DIR": str(tmp_path / "other-state")}
    before = (dl / "grades.csv").read_bytes()
    # --resume (and --only) would rebuild grades.csv from the scorecards it can trust, none: refused, and why
    r = _hwcheck(other, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public", "--resume")
    assert r.returncode == 2 and "HWCHECK_KEY" in r.stdout + r.stderr, r.stdout + r.stderr
    assert (dl / "grades.csv").read_bytes() == before
    # a plain grade trusts nothing of it and grades again, losing nothing
    r = _hwcheck(other, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "(up to date, not regraded)" not in r.stderr
    assert _rows(dl / "grades.csv")["john"]["total"] == "90"
    shutil.rmtree(tmp_path / "other-state")


def test_a_students_look_alike_json_file_is_no_older_scorecard(tmp_path, env, genuine):
    """A file `JOHN.json` uploaded beside john.py is not a scorecard hwcheck wrote: john is graded (the check
    for ids that are one name with an older scorecard's reads only hwcheck's own scorecards)."""
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "john.py").write_text(GOOD)
    (dl / "JOHN.json").write_text(_forge(genuine, "JOHN"))
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert _rows(dl / "grades.csv")["john"]["total"] == "90"


def test_the_class_report_keeps_a_students_report_html(tmp_path, env):
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "john.py").write_text(GOOD)
    (dl / "report.html").write_text("<p>my own report</p>\n")
    assert _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public").returncode == 0
    r = _hwcheck(env, "report", str(dl))
    assert r.returncode == 0, r.stdout + r.stderr
    assert b"<p>my own report</p>\n" in _set_aside_bytes(dl) + [(dl / "report.html").read_bytes()]
    assert "john" in (dl / "report.html").read_text(encoding="utf-8")


def test_a_students_lms_link_leads_no_staging_out_of_the_folder(tmp_path, env):
    """A Canvas student's files are staged in OUT/.lms/<id>/, rewritten each run: a `.lms` link uploaded into
    the download folder must not make hwcheck empty (rmtree) and refill a folder elsewhere."""
    dl, elsewhere = tmp_path / "dl", tmp_path / "elsewhere"
    dl.mkdir()
    (elsewhere / "smithjohn_1001").mkdir(parents=True)
    (elsewhere / "smithjohn_1001" / "precious.txt").write_text("the TA's\n")
    os.symlink(elsewhere, dl / ".lms")
    (dl / "smithjohn_1001_2001_attention.py").write_text(GOOD)
    (dl / "smithjohn_1001_2002_helper.py").write_text("X = 1\n")  # two files: staged together
    (dl / "jonesbob_1002_2003_attention.py").write_text(WRONG)
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert (elsewhere / "smithjohn_1001" / "precious.txt").read_text() == "the TA's\n"
    assert os.listdir(elsewhere / "smithjohn_1001") == ["precious.txt"]
    assert _rows(dl / "grades.csv")["smithjohn_1001"]["total"] == "90"


def test_a_manual_csv_hwcheck_did_not_make_among_the_students_files_grades_no_one(tmp_path, env):
    """OUT is the download folder (-o DIR): a manual.csv there that hwcheck did not make may be a student's upload
    (an adjustment of +50 gave bob 116.25/100). It is moved to the set-aside folder, named to the TA, and none of
    its rows is applied; hwcheck's own manual.csv then takes its place, and the next run says nothing more.
    (Where OUT holds no submission, such a file is the TA's: applied, and named: test below.)"""
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "john.py").write_text(GOOD)
    (dl / "manual.csv").write_text("id,question,points,comment\r\njohn,Q3-text,10,\r\njohn,adjustment,50,bonus\r\n")
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "manual.csv was in" in r.stdout + r.stderr and "its grades are not applied" in r.stdout + r.stderr
    assert "bonus" not in (dl / "manual.csv").read_text()
    row = _rows(dl / "grades.csv")["john"]
    assert row["total"] == "90" and row["Q3-text"] == "", row
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public", "--resume")
    assert r.returncode == 0 and "manual.csv was in" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_a_manual_csv_hwcheck_did_not_make_beside_no_submission_is_the_tas(tmp_path, env):
    """A manual.csv in an OUT that holds no submission (the TA wrote it first, or an older hwcheck) is applied,
    and the TA is told where it came from."""
    dl, out = tmp_path / "dl", tmp_path / "out"
    dl.mkdir()
    out.mkdir()
    (dl / "john.py").write_text(GOOD)
    (out / "manual.csv").write_text("id,question,points,comment\r\njohn,Q3-text,10,\r\n")
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(out), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "manual.csv was in" in r.stdout + r.stderr and "applied as yours" in r.stdout + r.stderr
    assert _rows(out / "grades.csv")["john"]["total"] == "100"


def test_a_students_grades_csv_copied_into_the_download_folder_changes_no_grade(tmp_path, env):
    """OUT is the download folder (-o DIR) and a later download is copied into it: a student's file named
    grades.csv replaces hwcheck's, and was read as grades the TA typed there (a probe: it rewrote the TA's
    manual grades, alice's 9 to 0 and mallory's 2 to 10, and added 30s and a +400 adjustment). Where OUT holds
    the students' files, a changed grades.csv is set aside and said, and no grade in it is applied."""
    dl = tmp_path / "dl"
    dl.mkdir()
    (dl / "alice.py").write_text(GOOD)
    (dl / "mallory.py").write_text(WRONG)
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public")
    assert r.returncode in (0, 1), r.stdout + r.stderr
    manual = "id,question,points,comment\nalice,Q3-text,9,great\nmallory,Q3-text,2,weak\n"
    (dl / "manual.csv").write_text(manual)
    (dl / "grades.csv").write_text("id,student,student_id,total,Q1,Q2,Q3,Q3-text,max_total,status,mode,note\n"
                                   "alice,,,99,30,30,30,0,100,graded,public,\n"
                                   "mallory,,,500,30,30,30,10,100,graded,public,\n")
    r = _hwcheck(env, "grade", str(dl), "-a", "attention", "-o", str(dl), "--public", "--resume")
    out = r.stdout + r.stderr
    assert "no grade in it is applied" in out, out
    assert (dl / "manual.csv").read_text() == manual
    rows = _rows(dl / "grades.csv")
    assert rows["alice"]["Q3-text"] == "9" and rows["mallory"]["Q3-text"] == "2", rows
    assert float(rows["mallory"]["total"]) <= 100, rows
