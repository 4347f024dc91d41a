"""Hostile names: the way from a right grade to the right student's record (issue 26, items 1, 2 and 4).

Each test attacks as a student (or a stray upload) would, with names only: look-alike and colliding
submission ids, a Canvas sortable name built to look like another student's fixed fields, an attachment
named `..`, and a lone `submission_metadata.yml` that would make a plain folder pass for a Gradescope
export. The slow tests grade real folders through `python -m checker.cli grade`, with a TA's grades typed
into manual.csv and a roster, and find every grade on its own student after the attack and `--resume`.
"""

import csv
import json
import os
import shutil
import subprocess
import sys
import unicodedata

import pytest

from checker.records import batch, lms
from checker.render.escape import for_csv_cell, for_terminal
from checker.records.manual import read_manual
from checker.records.roster import match_roster, read_roster
from checker.spec import load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = os.path.join(ROOT, "submissions", "attention")
SPEC = load_spec("attention")

# one file beside `jdoe.py` whose name differs only by ...
LOOK_ALIKES = {
    "leading quote": "'jdoe.py",
    "leading space": " jdoe.py",
    "trailing space": "jdoe .py",
    "invisible mark": "jdoe\u200f.py",
    "letter case": "JDOE.py",
}


def _copy(src, dest):
    shutil.copyfile(os.path.join(SUB, src), dest)


def _not_graded(out):
    """{name: why} of what prepare recorded as not graded."""
    return {name: why for name, why in lms.read_students(str(out)).get("not_graded") or []}


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def _book(out):
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _csv(path):
    with open(path, newline="", encoding="utf-8-sig") as f:
        return list(csv.reader(f))


# ---------------------------------------------------------------------------
# item 1: look-alike and colliding ids
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("how", sorted(LOOK_ALIKES))
def test_a_look_alike_of_an_id_is_refused_with_both_files_named(tmp_path, how):
    folder = tmp_path / "class"
    folder.mkdir()
    _copy("correct.py", folder / "jdoe.py")
    _copy("no_scaling.py", folder / LOOK_ALIKES[how])
    _copy("correct.py", folder / "asmith.py")
    out = tmp_path / "out"
    entries = lms.prepare(str(folder), str(out), [])
    # never first-come: neither file gets the id, the honest classmate is untouched
    assert [sid for sid, _ in entries] == ["asmith"]
    refused = _not_graded(out)
    assert set(refused) == {"jdoe.py", LOOK_ALIKES[how]}
    for why in refused.values():
        assert "jdoe.py" in why and LOOK_ALIKES[how] in why


def test_unicode_normal_forms_of_one_name_collide(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    nfc, nfd = unicodedata.normalize("NFC", "josé.py"), unicodedata.normalize("NFD", "josé.py")
    _copy("correct.py", folder / nfc)
    _copy("no_scaling.py", folder / nfd)
    if len(os.listdir(folder)) < 2:
        pytest.skip("this file system normalises names itself")
    entries = lms.prepare(str(folder), str(tmp_path / "out"), [])
    assert entries == []
    refused = _not_graded(tmp_path / "out")
    assert len(refused) == 2
    # they look alike on screen: the reason shows the code points that differ, so the TA can tell which is which
    assert all("'jos\\xe9.py'" in why and "'jose\\u0301.py'" in why for why in refused.values()), refused


def test_a_fifo_named_like_a_submission_is_said_to_be_no_regular_file(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _copy("correct.py", folder / "amy.py")
    os.mkfifo(folder / "pipe.py")
    os.mkfifo(folder / "PIPE.PY")
    lms.prepare(str(folder), str(tmp_path / "out"), [])
    refused = _not_graded(tmp_path / "out")
    assert refused == {"pipe.py": "not a regular file (a broken link?)", "PIPE.PY": "not a regular file (a broken link?)"}


@pytest.mark.slow
def test_a_file_name_that_is_not_utf8_inside_a_folder_costs_nothing_more(tmp_path):
    """A folder submission holding `no\xfftes.py` (a name in Latin-1, from a Windows zip): hashing the folder
    for the scorecard stopped the batch with a UnicodeEncodeError before anyone after it was graded, and the
    class report could not be written once its SyntaxError named the file. Every student is graded, the name
    is shown escaped, and report and export are written."""
    folder = tmp_path / "class"
    (folder / "alice").mkdir(parents=True)
    _copy("correct.py", folder / "alice" / "main.py")
    with open(os.path.join(os.fsencode(folder / "alice"), b"no\xfftes.py"), "w") as f:
        f.write("def oops(:\n")
    _copy("correct.py", folder / "zoe.py")  # graded after alice
    out = tmp_path / "out"
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    book = _book(out)
    assert set(book) == {"alice", "zoe"}, book
    card = json.loads((out / "alice.json").read_text(encoding="utf-8"))
    assert any("no\udcfftes.py" in m for m in card["load"]["messages"]), card["load"]["messages"]
    r = _hwcheck("report", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    assert "no\\udcfftes.py" in (out / "report.html").read_text(encoding="utf-8")


@pytest.mark.slow
def test_an_id_with_an_invisible_character_takes_its_typed_grade_as_hwcheck_wrote_it(tmp_path):
    """A file name holding a zero-width space, a right-to-left mark or a carriage return: grades.csv and
    manual.csv show the id with the character escaped (`zw\\u200bspace`), and a grade typed on that row of
    manual.csv was refused as no one's ("no submission 'zw\\\\u200bspace'"), the total short of it;
    `--only` refused the id as the messages show it. Both take the id as hwcheck writes it."""
    folder = tmp_path / "class"
    folder.mkdir()
    names = ["zw\u200bspace", "rtl\u200fmark", "cr\rname"]
    for n in names:
        _copy("correct.py", folder / f"{n}.py")
    out = tmp_path / "out"
    assert _hwcheck("grade", str(folder), "-a", "attention", "-o", str(out), "--public").returncode == 0
    rows = _csv(out / "manual.csv")
    shown = {r[0] for r in rows[1:]}
    assert shown == {for_csv_cell(n) for n in names} and not shown & set(names), shown  # escaped, as written
    for r in rows[1:]:
        r[2] = "10"
    with open(out / "manual.csv", "w", newline="", encoding="utf-8-sig") as f:
        csv.writer(f).writerows(rows)
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", str(out), "--public", "--resume")
    assert r.returncode == 0 and "ignored" not in r.stdout + r.stderr, r.stdout + r.stderr
    book = _book(out)
    assert {sid: row["Q3-text"] for sid, row in book.items()} == {for_csv_cell(n): "10" for n in names}, book
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", str(out), "--public", "--only", for_csv_cell(names[0]))
    assert r.returncode == 0, r.stdout + r.stderr


def test_ids_are_canonical_and_distinct_on_a_case_insensitive_file_system(tmp_path):
    """Alone, a name with a stray edge gets the canonical id (NFC, no edge spaces, quotes or invisible marks),
    and no two ids of a batch differ only in case or normal form (their output files would be one file on
    macOS, Windows or FAT)."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name in (" alice .py", "bob\u200f.py", "'carol.py", unicodedata.normalize("NFD", "josé.py"), "dave.py",
                 "Eve.py", "eve.ipynb", "Frank.py", "frank"):
        if name == "frank":
            (folder / name).mkdir()
            _copy("correct.py", folder / name / "attention.py")
        else:
            _copy("correct.py", folder / name)
    entries = lms.prepare(str(folder), str(tmp_path / "out"), [])
    ids = [sid for sid, _ in entries]
    assert ids[:5] == ["alice", "bob", "carol", "dave", "josé"]
    assert all(sid == unicodedata.normalize("NFC", sid) for sid in ids)
    folded = [unicodedata.normalize("NFKC", sid).casefold() for sid in ids]
    assert len(set(folded)) == len(folded), ids
    # a name whose whole stem is blank has no id at all: listed, not graded under ''
    (folder / "\u200f.py").write_text("x = 1\n")
    entries = lms.prepare(str(folder), str(tmp_path / "out"), [])
    assert "" not in [sid for sid, _ in entries] and "\u200f.py" in _not_graded(tmp_path / "out")


def test_the_roster_gives_a_row_to_an_exact_match_or_else_to_no_one():
    rows = [{"name": "John Doe", "student_id": "jdoe", "email": "jd@uni.example"},
            {"name": "Ann Smith", "student_id": "asmith", "email": "as@uni.example"}]
    # `JDOE` sorts first: first-come gave it John's row (and his Canvas user id)
    people, report = match_roster({"JDOE": {}, "jdoe": {}, "asmith": {}}, rows)
    assert people["jdoe"]["roster"] == "matched" and people["jdoe"]["student_id"] == "jdoe"
    assert people["JDOE"]["roster"] != "matched" and "student_id" not in people["JDOE"]
    assert "JDOE" in report["unmatched"]
    # two loose matches of one row, neither exact: the row goes to no one and both are listed
    people, report = match_roster({"John_Doe": {}, "johndoe": {}, "asmith": {}}, rows)
    assert people["John_Doe"]["roster"] != "matched" and people["johndoe"]["roster"] != "matched"
    assert [r["name"] for r in report["missing"]] == ["John Doe"]
    assert {a["id"] for a in report["ambiguous"]} == {"John_Doe", "johndoe"}
    # one loose match alone still matches (a name, a login in another case)
    people, _ = match_roster({"John Doe": {}, "ASMITH": {}}, rows)
    assert people["John Doe"]["roster"] == people["ASMITH"]["roster"] == "matched"


def test_a_group_submission_gives_each_member_their_roster_row():
    """A Gradescope group submission (two `:submitters:`, their fields joined with "; "): with a roster, only the
    first member was matched and the other was listed as having no submission (and no grade). Each member
    claims their own row; a member the roster lacks leaves the others matched."""
    rows = [{"name": "Ann Lee", "student_id": "1002", "email": "al@uni.example"},
            {"name": "Group Mate", "student_id": "1003", "email": "gm@uni.example"},
            {"name": "Pat Roe", "student_id": "1004", "email": "pr@uni.example"}]
    group = {"student": "Ann Lee; Group Mate", "student_id": "1002; 1003", "email": "al@uni.example; gm@uni.example",
             "platform": "gradescope"}
    people, report = match_roster({"submission_222": group, "submission_333": {"student": "Pat Roe",
                                                                              "student_id": "1004"}}, rows)
    assert report["missing"] == [] and report["matched"] == 3, report
    assert people["submission_222"]["student_id"] == "1002; 1003"
    assert people["submission_222"]["student"] == "Ann Lee; Group Mate"
    people, report = match_roster({"submission_222": group}, rows[:1])  # the mate is not on this roster
    assert people["submission_222"]["roster"] == "matched" and report["missing"] == []


def test_manual_rows_match_an_id_exactly_or_are_listed(tmp_path):
    path = tmp_path / "manual.csv"
    path.write_text("id,question,points,comment\r\n"
                    "jdoe,Q3-text,7,\r\n"
                    "JDOE,Q3-text,2,\r\n"            # another student's case: not John's
                    "'asmith,Q3-text,4,\r\n"         # the quote hwcheck writes before a cell: Ann's
                    "jdoe\u200f,adjustment,-1,\r\n"  # the canonical form of the id: John's
                    "Asmith,adjustment,-3,\r\n",     # another case: no one's, listed
                    encoding="utf-8")
    entries, problems = read_manual(str(path), SPEC, {"jdoe", "asmith"})
    assert [(r["question"], r["points"]) for r in entries["jdoe"]] == [("Q3-text", 7.0), ("adjustment", -1.0)]
    assert [(r["question"], r["points"]) for r in entries["asmith"]] == [("Q3-text", 4.0)]
    assert any("line 3" in p and "'jdoe'" in p for p in problems), problems
    assert any("line 6" in p and "'asmith'" in p for p in problems), problems


# ---------------------------------------------------------------------------
# item 2: names a student chooses on the LMS
# ---------------------------------------------------------------------------

FORGED = "doejohn_1001_9_zz_2002_77_attention.py"  # sortable name `Doe, John_.1001_.9_.zz`, user 2002


def test_a_sortable_name_shaped_like_fixed_fields_is_flagged_not_merged(tmp_path):
    _copy("correct.py", tmp_path / "doejohn_1001_5_attention.py")
    _copy("no_scaling.py", tmp_path / FORGED)
    _copy("correct.py", tmp_path / "smithann_1002_6_attention.py")
    layout = lms.recognise(str(tmp_path))
    assert layout.platform == "canvas"
    assert [f for _, f in layout.students["doejohn_1001"].files] == ["attention.py"]
    assert sorted(layout.students) == ["doejohn_1001", "smithann_1002"]
    why = dict(layout.ignored)[FORGED]
    assert "1001" in why and "2002" in why


def test_a_name_changed_after_the_roster_was_exported_rules_nothing_out(tmp_path):
    """The forger was `Mallory, Eve` when the TA exported the gradebook, and took the forged name after: the
    roster still knows user 2002, so the file stays the file of two possible students, and John's own."""
    folder = tmp_path / "canvas"
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_5_attention.py")
    _copy("no_scaling.py", folder / FORGED)
    roster = tmp_path / "gradebook.csv"
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section\nPoints Possible,,,,\n"Doe, John",1001,,,\n'
                      '"Mallory, Eve",2002,,,\n', encoding="utf-8")
    layout = lms.recognise(str(folder), roster_rows=read_roster(str(roster)))
    assert [f for _, f in layout.students["doejohn_1001"].files] == ["attention.py"]
    assert FORGED in dict(layout.ignored)


def test_a_moodle_full_name_shaped_like_fixed_fields_is_flagged_not_merged(tmp_path):
    _copy("correct.py", tmp_path / "John Doe_1001_assignsubmission_file_attention.py")
    _copy("no_scaling.py", tmp_path / "John Doe_1001_assignsubmission_file_x_2002_assignsubmission_file_attention.py")
    layout = lms.recognise(str(tmp_path))
    assert layout.platform == "moodle"
    assert list(layout.students) == ["John Doe_1001"]
    assert [f for _, f in layout.students["John Doe_1001"].files] == ["attention.py"]
    why = dict(layout.ignored)["John Doe_1001_assignsubmission_file_x_2002_assignsubmission_file_attention.py"]
    assert "1001" in why and "2002" in why


def test_the_roster_settles_a_file_name_that_parses_two_ways(tmp_path):
    """An honest file name with `_<digits>_<digits>_` in it parses two ways too; a Canvas roster that knows
    only one of the two users settles it, and one that knows both leaves it flagged."""
    _copy("correct.py", tmp_path / "doejohn_1001_5_hw_3_4_attention.py")
    roster = tmp_path.parent / (tmp_path.name + "-roster.csv")
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section\nPoints Possible,,,,\n"Doe, John",1001,,,\n',
                      encoding="utf-8")
    layout = lms.recognise(str(tmp_path), roster_rows=read_roster(str(roster)))
    assert list(layout.students) == ["doejohn_1001"]
    assert [f for _, f in layout.students["doejohn_1001"].files] == ["hw_3_4_attention.py"]
    layout = lms.recognise(str(tmp_path))  # no roster: the file could be user 3's
    assert list(layout.students) == [] and "doejohn_1001_5_hw_3_4_attention.py" in dict(layout.ignored)


def test_an_attachment_named_dot_dot_costs_only_its_own_file(tmp_path):
    folder = tmp_path / "canvas"
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_5_attention.py")
    _copy("correct.py", folder / "smithann_1002_6_attention.py")
    (folder / "smithann_1002_7_..").write_text("x")
    (folder / "smithann_1002_8_.").write_text("x")
    out = tmp_path / "out"
    entries = dict(lms.prepare(str(folder), str(out), []))
    assert sorted(entries) == ["doejohn_1001", "smithann_1002"]
    assert os.path.isfile(entries["smithann_1002"]) or os.listdir(entries["smithann_1002"]) == ["attention.py"]
    refused = _not_graded(out)
    assert "smithann_1002_7_.." in refused and "smithann_1002_8_." in refused


# ---------------------------------------------------------------------------
# item 4: a plain folder taken for a platform's export
# ---------------------------------------------------------------------------

def test_one_metadata_file_does_not_make_a_folder_a_gradescope_export(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _copy("correct.py", folder / "alice.py")
    _copy("no_scaling.py", folder / "bob.py")
    (folder / "submission_metadata.yml").write_text("alice:\n  :submitters:\n  - :name: Mallory\n")
    assert lms.recognise(str(folder)).platform is None
    out = tmp_path / "out"
    assert [sid for sid, _ in lms.prepare(str(folder), str(out), [])] == ["alice", "bob"]
    assert "submission_metadata.yml" in _not_graded(out)


def test_a_gradescope_export_with_a_stranger_inside_is_no_gradescope_export(tmp_path):
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "submission_metadata.yml").write_text("submission_1:\n  :submitters:\n  - :name: Ann\n")
    (folder / "submission_1").mkdir()
    _copy("correct.py", folder / "submission_1" / "attention.py")
    assert lms.recognise(str(folder)).platform == "gradescope"
    _copy("no_scaling.py", folder / "mallory.py")   # graded silently as nothing before
    assert lms.recognise(str(folder)).platform is None


def test_the_batch_summary_names_every_entry_not_graded(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    _copy("correct.py", folder / "alice.py")
    _copy("correct.py", folder / "Alice.py")
    (folder / "submission_metadata.yml").write_text("x: 1\n")
    (folder / "late.zip").write_bytes(b"PK")
    out = tmp_path / "out"
    assert lms.prepare(str(folder), str(out), []) == []
    lines = [line for line in batch.after_batch(str(out)) if "not graded" in line]
    assert lines[0].strip() == "not graded: 4 entries of the folder graded (rename or unpack them and grade " \
                               "again, or grade them by hand):"
    for name in ("alice.py", "Alice.py", "submission_metadata.yml", "late.zip"):
        assert len([line for line in lines if f"'{name}':" in line]) == 1, (name, lines)


def test_every_entry_not_graded_is_listed_with_its_reason(tmp_path):
    folder = tmp_path / "canvas"
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_5_attention.py")
    (folder / "doejohn_1001_text.html").write_text("<p>hi</p>")
    (folder / "leeann_1003_6_notes.txt").write_text("notes")
    (folder / "README.md").write_text("from the TA")
    out = tmp_path / "out"
    assert [sid for sid, _ in lms.prepare(str(folder), str(out), [])] == ["doejohn_1001"]
    refused = _not_graded(out)
    assert set(refused) == {"doejohn_1001_text.html", "leeann_1003_6_notes.txt", "README.md"}
    assert all(refused.values())


# ---------------------------------------------------------------------------
# the whole way, through the command line: a TA's grades survive every attack
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_typed_grades_stay_on_their_students_through_the_plain_folder_attacks(tmp_path):
    folder, out = tmp_path / "class", str(tmp_path / "graded")
    folder.mkdir()
    _copy("correct.py", folder / "jdoe.py")          # full automatic marks
    _copy("no_scaling.py", folder / "asmith.py")     # a partial score
    roster = tmp_path / "roster.csv"
    roster.write_text("name,student_id,email\nJohn Doe,jdoe,jd@uni.example\nAnn Smith,asmith,as@uni.example\n",
                      encoding="utf-8")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public", "--roster", str(roster))
    assert run.returncode == 0, run.stdout + run.stderr
    auto = {sid: json.load(open(os.path.join(out, f"{sid}.json"), encoding="utf-8"))["score"] for sid in ('jdoe', 'asmith')}
    with open(os.path.join(out, "manual.csv"), "a", encoding="utf-8", newline="") as f:
        f.write("jdoe,Q3-text,7,clear\r\nasmith,Q3-text,4,\r\n")

    for name in LOOK_ALIKES.values():                # item 1: every look-alike of John at once
        _copy("no_scaling.py", folder / name)
    (folder / "submission_metadata.yml").write_text(  # item 4: a lone metadata file
        "jdoe:\n  :submitters:\n  - :name: Mallory\n    :sid: jdoe\n")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public", "--roster", str(roster),
                   "--resume")
    assert run.returncode == 1, run.stdout + run.stderr  # the look-alikes were refused: not every one was graded
    assert "Traceback" not in run.stdout + run.stderr
    book = _book(out)
    assert set(book) == {"jdoe", "asmith"}
    assert book["jdoe"]["Q3-text"] == "7" and float(book["jdoe"]["total"]) == pytest.approx(auto["jdoe"] + 7, abs=0.01)
    assert book["asmith"]["Q3-text"] == "4" and \
        float(book["asmith"]["total"]) == pytest.approx(auto["asmith"] + 4, abs=0.01)
    assert book["asmith"]["student_id"] == "asmith" and book["asmith"]["student"] == "Ann Smith"
    assert "roster: submission" not in run.stdout  # no look-alike took John's row
    for name in [*LOOK_ALIKES.values(), "jdoe.py", "submission_metadata.yml"]:
        shown = for_terminal(name, newlines=False)  # an invisible character is shown escaped
        assert any(f"'{shown}'" in line and "not graded" in line for line in run.stdout.splitlines()), \
            (name, run.stdout)
    # no scorecard of another student sits where one of these two would land on a case-insensitive disk
    cards = [n[:-5].casefold() for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")]
    assert sorted(cards) == ["asmith", "jdoe"]


@pytest.mark.slow
def test_typed_grades_stay_on_their_students_through_the_canvas_attacks(tmp_path):
    folder, out = tmp_path / "canvas", str(tmp_path / "graded")
    folder.mkdir()
    _copy("correct.py", folder / "doejohn_1001_5_attention.py")      # full automatic marks
    _copy("no_scaling.py", folder / "smithann_1002_6_attention.py")  # a partial score
    roster = tmp_path / "gradebook.csv"  # Canvas's gradebook export: the forger is a student of the course
    roster.write_text('Student,ID,SIS User ID,SIS Login ID,Section,attention\nPoints Possible,,,,,100\n'
                      '"Doe, John",1001,,,,\n"Smith, Ann",1002,,,,\n"Doe, John_.1001_.9_.zz",2002,,,,\n',
                      encoding="utf-8")
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public", "--roster", str(roster))
    assert run.returncode == 0, run.stdout + run.stderr
    auto = {sid: json.load(open(os.path.join(out, f"{sid}.json"), encoding="utf-8"))["score"] for sid in ('doejohn_1001', 'smithann_1002')}
    with open(os.path.join(out, "manual.csv"), "a", encoding="utf-8", newline="") as f:
        f.write("doejohn_1001,Q3-text,7,\r\nsmithann_1002,Q3-text,4,\r\n")

    _copy("no_scaling.py", folder / FORGED)                         # item 2: a name shaped like John's fields
    (folder / "smithann_1002_8_..").write_text("x")                 # item 2: an attachment named ..
    run = _hwcheck("grade", str(folder), "-a", "attention", "-o", out, "--public", "--roster", str(roster),
                   "--resume")
    # the forged file is a student's (John's or user 2002's) that no one is graded on: exit 1, for the TA to decide
    assert run.returncode == 1, run.stdout + run.stderr
    book = _book(out)
    assert set(book) == {"doejohn_1001", "smithann_1002"}
    assert float(book["doejohn_1001"]["total"]) == pytest.approx(auto["doejohn_1001"] + 7, abs=0.01)
    assert float(book["smithann_1002"]["total"]) == pytest.approx(auto["smithann_1002"] + 4, abs=0.01)
    rows = {r[1]: r[-1] for r in _csv(os.path.join(out, "canvas.csv"))[2:]}
    assert rows.keys() == {"1001", "1002"} and float(rows["1001"]) == pytest.approx(auto["doejohn_1001"] + 7)
    assert float(rows["1002"]) == pytest.approx(auto["smithann_1002"] + 4, abs=0.01)
    for name in (FORGED, "smithann_1002_8_.."):
        shown = for_terminal(name, newlines=False)  # an invisible character is shown escaped
        assert any(f"'{shown}'" in line and "not graded" in line for line in run.stdout.splitlines()), \
            (name, run.stdout)
    with open(os.path.join(out, "doejohn_1001.json"), encoding="utf-8") as f:
        assert json.load(f)["submission"]["path"].endswith("doejohn_1001_5_attention.py")


def test_a_new_id_one_name_with_an_older_scorecard_is_refused(tmp_path):
    """OUTDIR/jdoe.json from last week, and now `JDOE.py`: on a case-insensitive disk its scorecard would
    replace John's, and to the TA it is John's name."""
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    out.mkdir()
    from checker.records import owned  # last week's scorecard, as hwcheck wrote it (a file it did not write is no scorecard)
    owned.write_json(str(out), "jdoe.json", {"submission": {"id": "jdoe"}}, kind="scorecard", sid="jdoe")
    _copy("no_scaling.py", folder / "JDOE.py")
    _copy("correct.py", folder / "asmith.py")
    assert [sid for sid, _ in lms.prepare(str(folder), str(out), [])] == ["asmith"]
    assert "jdoe.json" in _not_graded(out)["JDOE.py"]
    assert "JDOE" not in lms.read_students(str(out))["students"]
    assert lms.read_students(str(out))["ungraded"] == ["JDOE.py"]  # a student's file no one is graded on: exit 1


def test_lms_ids_that_are_one_name_are_refused_too(tmp_path):
    """GitHub Classroom's folders are named by the student (the username): `hw1-alice` beside `hw1-Alice ` made
    one student of two, the last one read winning."""
    folder = tmp_path / "hw1"
    for name in ("hw1-alice", "hw1-Alice ", "hw1-bob"):
        (folder / name).mkdir(parents=True)
        _copy("correct.py", folder / name / "attention.py")
    layout = lms.recognise(str(folder))
    assert layout.platform == "classroom" and list(layout.students) == ["hw1-bob"]
    assert {"hw1-alice", "hw1-Alice "} <= set(dict(layout.ignored))


def test_a_file_name_with_a_line_break_gives_an_id_of_one_line_in_every_csv(tmp_path):
    """An attacker's probe (h42): `a<LF>b.py` was graded under the id "a\\nb" with a real line break, written raw
    inside a quoted cell of grades.csv, answers.csv and manual.csv: Excel in a `;` locale ends the row there,
    and the rest of the name (`bob;100;...`) shows as a row of its own. An id is one line: the control
    characters inside a name are written as their escapes, as the terminal shows them."""
    folder, out = tmp_path / "class", tmp_path / "out"
    folder.mkdir()
    _copy("correct.py", folder / "alice.py")
    _copy("correct.py", folder / "x\nbob;100;.py")
    _copy("correct.py", folder / "c\rd\te\x1bf.py")
    r = _hwcheck("grade", str(folder), "-a", "attention", "-o", str(out), "--public")
    assert r.returncode == 0, r.stdout + r.stderr
    assert set(_book(out)) == {"alice", "x\\nbob;100;", "c\\rd\\te\\x1bf"}, _book(out)
    for name in ("grades.csv", "manual.csv"):  # every line one row
        raw = (out / name).read_bytes().decode("utf-8-sig")
        assert "\n" not in raw.replace("\r\n", "") and "\r" not in raw.replace("\r\n", ""), (name, raw[:400])
    ids = [row[0] for row in _csv(out / "answers.csv")[1:]]  # (a written answer's own lines stay its own)
    assert sorted(ids) == sorted(_book(out)), ids
