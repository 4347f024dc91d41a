"""Grades a TA typed into grades.csv survive a full disk, and a full or read-only OUT is said in words.

A TA's probe (h27, D1): `hwcheck export OUT` on a full disk moved the edited grades.csv aside (into the state
folder's set-aside/) before anything was written, the failed write of manual.csv was only queued as a line the
disk-full stop never printed, the copy of manual.csv kept in earlier/ was 0 bytes, and after space was freed
the next export exited 0 with the typed grades gone from grades.csv, manual.csv and canvas.csv. Now grades.csv
stays in place until what it holds is in manual.csv, the stop names what was not moved and where it is kept,
and the next run moves it. (D6) `grade --resume` on a full disk said only "[Errno 28] No space left on
device", and `export` on a read-only OUT "Read-only file system: .../lock".

Each test mounts a small tmpfs (or a read-only bind) and fills it for real; it is skipped where mounting is
refused (not root).
"""

import csv
import os
import shutil
import subprocess

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.records import owned, owned_records
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
MANUAL_Q = next(str(q["id"]) for q in load_spec("attention")["questions"] if q.get("manual"))


def _mount(where, *options):
    where.mkdir(exist_ok=True)
    try:
        r = subprocess.run(["mount", *options, str(where)], capture_output=True, text=True)
    except OSError as e:
        pytest.skip(f"mount could not run: {e}")
    if r.returncode != 0:
        pytest.skip(f"mount refused ({r.stderr.strip()}): these tests need root")


def _umount(where):
    subprocess.run(["umount", "-l", str(where)], check=False, capture_output=True)


@pytest.fixture
def small(tmp_path):
    """A 4 MB tmpfs, unmounted afterwards."""
    where = tmp_path / "small"
    _mount(where, "-t", "tmpfs", "-o", "size=4m", "tmpfs")
    yield where
    _umount(where)


def _fill(folder):
    """Fill the file system of `folder` to the last byte (a file `filler` there); returns its path."""
    free = os.statvfs(folder)
    path = folder / "filler"
    with open(path, "wb") as f:
        try:
            f.write(b"\0" * (free.f_bavail * free.f_frsize))
            f.flush()
        except OSError:
            pass
    return path


def _run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def _book(out):
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _type(out, changes):
    """grades.csv as a spreadsheet saves it after the TA typed `changes` {(id, column): value} into it."""
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    for row in rows[1:]:
        for (sid, column), value in changes.items():
            if row[0] == sid:
                row[head.index(column)] = value
    with open(out / "grades.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    """alice and bob graded (public tests), bob's written answer graded 9 in manual.csv."""
    tmp = tmp_path_factory.mktemp("fulldisk")
    folder = tmp / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    shutil.copyfile(os.path.join(EXAMPLES, "no_scaling.py"), folder / "bob.py")
    out = tmp / "out"
    r = _run("grade", folder, "-a", "attention", "-o", out, "--public", "--seed", 3, "--timeout", "5")
    assert r.exit_code == 0, r.output
    text = (out / "manual.csv").read_text(encoding="utf-8-sig").replace(f"bob,{MANUAL_Q},,", f"bob,{MANUAL_Q},9,good")
    (out / "manual.csv").write_text(text, encoding="utf-8-sig")
    assert _run("export", out).exit_code == 0
    return folder, out


def test_grades_typed_into_grades_csv_survive_an_export_on_a_full_disk(graded, small):
    _, out0 = graded
    out = small / "out"
    shutil.copytree(out0, out)
    _type(out, {("alice", MANUAL_Q): "7", ("bob", MANUAL_Q): "5"})  # a new grade, and one manual.csv held (9)
    typed, manual = (out / "grades.csv").read_bytes(), (out / "manual.csv").read_bytes()
    filler = _fill(small)
    r = _run("export", out)
    assert r.exit_code != 0, r.output
    said = " ".join(r.output.split())
    # the stop names what was not moved and where it is kept (grades.csv, as typed), no bare errno
    assert "could not be moved into" in said and f"alice {MANUAL_Q} 7" in said and f"bob {MANUAL_Q} 5" in said, said
    assert f"kept as you typed them in {out / 'grades.csv'}" in said and "Errno" not in said, said
    assert (out / "grades.csv").read_bytes() == typed  # still in place, as the TA typed it
    assert (out / "manual.csv").read_bytes() == manual
    state = owned_records.state_dir(str(out))
    assert owned.set_aside(str(out)) == []  # nothing moved away
    for folder in ("earlier", "set-aside"):  # no empty copy left anywhere
        where = os.path.join(state, folder)
        for name in os.listdir(where) if os.path.isdir(where) else []:
            assert os.path.getsize(os.path.join(where, name)) > 0, (folder, name)
    os.unlink(filler)
    r = _run("export", out)  # space freed: the next export finds the typed grades and moves them
    assert r.exit_code == 0, r.output
    book = _book(out)
    assert book["alice"][MANUAL_Q] == "7" and book["bob"][MANUAL_Q] == "5", book
    rows = (out / "manual.csv").read_text(encoding="utf-8-sig")
    assert f"alice,{MANUAL_Q},7," in rows and f"bob,{MANUAL_Q},5,good" in rows, rows


def test_a_file_not_hwchecks_stays_in_place_when_writing_over_it_fails(graded, small):
    """owned.write_text moved the file at the name (a TA's edited grades.csv) into set-aside/ before the new one
    was written: on a full disk the name was left empty. Now nothing moves until the new file is whole."""
    _, out0 = graded
    out = small / "out"
    shutil.copytree(out0, out)
    _type(out, {("alice", MANUAL_Q): "7"})
    typed = (out / "grades.csv").read_bytes()
    filler = _fill(small)
    with pytest.raises(OSError):
        owned.write_text(str(out), "grades.csv", "id,total\r\n" + "x" * 100_000, kind="gradebook")
    assert (out / "grades.csv").read_bytes() == typed
    assert owned.set_aside(str(out)) == []
    os.unlink(filler)
    owned.write_text(str(out), "grades.csv", "id,total\r\nalice,1\r\n", kind="gradebook")
    assert (out / "grades.csv").read_bytes() == b"id,total\r\nalice,1\r\n"
    kept = owned.set_aside(str(out))  # the TA's file, kept whole, once the new one was in its place
    assert len(kept) == 1
    with open(os.path.join(owned_records.state_dir(str(out)), "set-aside", kept[0]), "rb") as f:
        assert f.read() == typed


def test_a_copy_kept_on_a_full_disk_is_whole_or_not_there(small):
    (small / "out").mkdir()
    manual = small / "out" / "manual.csv"
    manual.write_text("id,question,points,comment\r\n" + "alice,Q3-text,7,\r\n" * 2000)
    os.makedirs(os.path.join(owned_records.state_dir(str(small / "out")), "earlier"))
    filler = _fill(small)
    with pytest.raises(OSError):
        owned.keep_copy(str(small / "out"), str(manual))
    assert os.listdir(os.path.join(owned_records.state_dir(str(small / "out")), "earlier")) == []
    os.unlink(filler)
    copy = owned.keep_copy(str(small / "out"), str(manual))
    assert open(copy, "rb").read() == manual.read_bytes()


def test_grade_resume_on_a_full_disk_says_so_with_the_resume_command(graded, small):
    folder, out0 = graded
    out = small / "out"
    shutil.copytree(out0, out)
    _fill(small)
    r = _run("grade", folder, "-a", "attention", "-o", out, "--resume", "--public", "--seed", 3)
    assert r.exit_code == 2, r.output
    said = " ".join(r.output.split())
    assert "Errno" not in said and "is full" in said and "keeps the 2 scorecards" in said, said
    assert f"hwcheck grade {folder} -a attention -o {out} -j 1 --resume --public --seed 3" in said, said


def test_export_into_a_read_only_folder_says_so(graded, tmp_path):
    _, out0 = graded
    out = tmp_path / "ro"
    shutil.copytree(out0, out)
    _mount(out, "--bind", str(out))
    try:
        r = subprocess.run(["mount", "-o", "remount,ro,bind", str(out)], capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"a read-only bind mount is refused ({r.stderr.strip()})")
        r = _run("export", out)
        assert r.exit_code == 2, r.output
        said = " ".join(r.output.split())
        assert f"{out} is on a read-only file system" in said and "hwcheck export" in said, said
        assert "Read-only file system:" not in said and "Errno" not in said, said
    finally:
        _umount(out)


def test_a_scorecard_the_full_disk_refused_leaves_no_results_json_of_its_grading(graded, small):
    """A TA's probe (h38): a grade stopped by a full disk left gradescope/<id>/results.json of a grading whose
    scorecard could not be written (the scorecard is written last: it marks the submission done). The
    results.json goes with it; `grade --resume` grades the submission again and writes both."""
    from checker.records.outfolder import read_scorecard, results_name, write_submission
    out = small / "out"
    out.mkdir()
    card = read_scorecard(str(graded[1]), "bob")
    results = os.path.join(str(graded[1]), *results_name("bob").split("/"))
    room = os.path.getsize(results) + 24 * 1024  # results.json and its record fit; the scorecard does not
    assert os.path.getsize(os.path.join(str(graded[1]), "bob.json")) > room - os.path.getsize(results)
    os.makedirs(os.path.join(out, "gradescope", "bob"))
    free = os.statvfs(small)
    with open(small / "filler", "wb") as f:
        f.write(b"\0" * (free.f_bavail * free.f_frsize - room))
    with pytest.raises(OSError):
        write_submission(str(out), "bob", card, keep_raw=False)
    assert not os.path.exists(os.path.join(out, *results_name("bob").split("/")))
    assert read_scorecard(str(out), "bob") is None
