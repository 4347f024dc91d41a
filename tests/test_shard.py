"""`hwcheck grade --shard I/N` and `hwcheck merge`: slices of a folder merged equal one unsharded run.

Four example submissions of submissions/attention are graded unsharded and as
shards 1/2 and 2/2 (public tests, one seed, -j 1); `merge` of the two shard
folders gives the unsharded grades.csv and scorecards. Merging folders graded
with another seed, assignment or hwcheck version, or overlapping shards, is
refused with a sentence naming the folders; a missing shard is said, exit 1.
"""
import csv
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.records import batch, outfolder, owned
from checker.cli import main
from checker.records.shard import parse_shard, shard_entries

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")
PICKED = ["correct.py", "correct_folder", "syntax_error.py", "softmax_wrong_axis.py"]
SEED = "777"


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    d = tmp_path_factory.mktemp("class")
    for name in PICKED:
        src = os.path.join(EXAMPLES, name)
        (shutil.copytree if os.path.isdir(src) else shutil.copy)(src, d / name)
    return d


def _grade(subs, out, *extra, code=0):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public",
                                  "--seed", SEED, *extra])
    assert r.exit_code == code, r.output
    return r


@pytest.fixture(scope="module")
def graded(subs, tmp_path_factory):
    d = tmp_path_factory.mktemp("graded")
    _grade(subs, d / "whole")
    _grade(subs, d / "s1", "--shard", "1/2")
    _grade(subs, d / "s2", "--shard", "2/2")
    return d


def _rows(out):
    with open(os.path.join(out, "grades.csv"), encoding="utf-8-sig") as f:
        return list(csv.DictReader(f))


def _merge(*args):
    return CliRunner().invoke(main, ["merge", *map(str, args)])


def test_slices_are_deterministic_disjoint_and_balanced():
    entries = [(f"s{i:02d}", f"/x/s{i:02d}.py") for i in range(11)]
    slices = [shard_entries(list(reversed(entries)), i, 3) for i in (1, 2, 3)]
    assert sorted(e for s in slices for e in s) == entries
    assert sorted(len(s) for s in slices) == [3, 4, 4]
    assert slices == [shard_entries(entries, i, 3) for i in (1, 2, 3)]
    assert parse_shard("2/4") == (2, 4)
    for bad in ("0/2", "3/2", "1", "a/b"):
        with pytest.raises(ValueError):
            parse_shard(bad)


@pytest.mark.slow
def test_merged_shards_equal_one_unsharded_run(graded, tmp_path):
    s1, s2 = (set(c["submission"]["id"] for c in batch.collect_scorecards(str(graded / s), "attention"))
              for s in ("s1", "s2"))
    assert s1 and s2 and not s1 & s2
    r = _merge(graded / "s1", graded / "s2", "-o", tmp_path / "merged")
    assert r.exit_code == 0, r.output
    assert _rows(tmp_path / "merged") == _rows(graded / "whole")
    whole = {c["submission"]["id"]: c for c in batch.collect_scorecards(str(graded / "whole"), "attention")}
    merged = {c["submission"]["id"]: c for c in batch.collect_scorecards(str(tmp_path / "merged"), "attention")}
    assert {s: c["score"] for s, c in merged.items()} == {s: c["score"] for s, c in whole.items()}
    for sid in whole:
        assert os.path.isfile(batch.results_path(str(tmp_path / "merged"), sid))
    assert os.path.isfile(tmp_path / "merged" / "manual.csv")


@pytest.mark.slow
def test_a_missing_shard_is_said(graded, tmp_path):
    r = _merge(graded / "s1", "-o", tmp_path / "m")
    assert r.exit_code == 1 and "shards 2/2 are missing" in r.output


def _altered(src, dest, change):
    shutil.copytree(src, dest)
    for c in batch.collect_scorecards(str(dest), "attention"):
        change(c)  # as hwcheck itself would have written it (a scorecard edited by hand is not trusted)
        sid = c["submission"]["id"]
        owned.write_json(str(dest), outfolder.scorecard_name(sid), c, kind="scorecard", sid=sid)
    return dest


@pytest.mark.slow
@pytest.mark.parametrize("what,change", [
    ("seed", lambda c: c["grader"].update(seed=1)),
    ("hwcheck version", lambda c: c["grader"].update(version="0.0.9")),
    ("mode", lambda c: c["grader"].update(mode="hidden")),
])
def test_merge_refuses_folders_graded_otherwise(graded, tmp_path, what, change):
    other = _altered(graded / "s2", tmp_path / "other", change)
    r = _merge(graded / "s1", other, "-o", tmp_path / "m")
    assert r.exit_code == 2 and f"graded with {what}" in r.output, r.output
    assert not os.path.exists(tmp_path / "m" / "grades.csv")


@pytest.mark.slow
def test_merge_refuses_shards_graded_with_other_grading_tests_naming_their_resume(graded, tmp_path):
    """h75 D1: shards graded before spec.toml changed (a question's points): the merged gradebook would judge
    manual.csv by the new spec and the scorecards by the old. Refused, nothing written, each shard's `--resume`
    named (its shard.json's)."""
    old = lambda c: c["grader"].update(spec_sha256="0" * 64)  # noqa: E731 - graded with other tests
    s1, s2 = _altered(graded / "s1", tmp_path / "s1", old), _altered(graded / "s2", tmp_path / "s2", old)
    r = _merge(s1, s2, "-o", tmp_path / "m")
    assert r.exit_code == 2, r.output
    line = r.output.strip()
    assert len(line.splitlines()) == 1 and "graded with other grading tests than attention's now" in line, line
    for shard in (s1, s2):
        again = owned.read_json(str(shard), "shard.json", "shard")["resume"]
        assert "--resume" in again and "--shard" in again and again in line, line
    assert not os.path.exists(tmp_path / "m")


@pytest.mark.slow
def test_merge_refuses_mixed_assignments_and_overlaps(graded, tmp_path):
    other = _altered(graded / "s2", tmp_path / "other", lambda c: c.update(assignment="vit"))
    r = _merge(graded / "s1", other, "-o", tmp_path / "m")
    assert r.exit_code == 2 and "merge one assignment at a time" in r.output, r.output
    r = _merge(graded / "s1", graded / "whole", "-o", tmp_path / "m2")
    assert r.exit_code == 2 and "graded in both" in r.output, r.output


def test_hidden_shards_need_a_seed(subs, tmp_path):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(tmp_path / "o"),
                                  "--shard", "1/2"])
    assert r.exit_code == 2 and "--shard needs --seed" in r.output


def test_a_shards_folder_is_graded_as_that_shard_only(subs, graded, tmp_path):
    """A TA's probe (h44): `--only alice` into shard 1/3's folder regraded alice, of slice 3/3, there, and the
    merge then refused "graded in both: do the shards overlap?". A shard's folder takes its own slice only: the
    whole class, another slice or an --only there is refused before anything is written."""
    from checker.records.shard import shard_entries
    out = tmp_path / "s1"
    shutil.copytree(graded / "s1", out)
    before = {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "lock"}
    ids = sorted(os.path.splitext(n)[0] for n in PICKED)
    other = next(sid for sid in ids if sid not in [s for s, _ in shard_entries([(i, None) for i in ids], 1, 2)])
    for extra in (["--only", other], [], ["--shard", "2/2"]):
        r = _grade(subs, out, *extra, code=2)
        assert "holds shard 1/2 of a class" in r.output and "nothing was written" in r.output, r.output
    assert {p.name: p.read_bytes() for p in out.rglob("*") if p.is_file() and p.name != "lock"} == before
    _grade(subs, out, "--shard", "1/2", "--resume")  # its own slice, as before


def test_a_malformed_scheduler_address_is_a_usage_error(subs, tmp_path):
    """A TA's probe (h44): `--scheduler 127.0.0.1:44423x` was "internal error (ValueError: invalid literal for
    int() ...)" from Dask's parsing."""
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(tmp_path / "o"),
                                  "--scheduler", "127.0.0.1:44423x"])
    assert r.exit_code == 2 and "--scheduler takes a Dask scheduler's address" in r.output, r.output
    assert "internal error" not in r.output and not (tmp_path / "o").exists()


@pytest.mark.slow
def test_merge_keeps_who_each_student_is_and_the_grades_typed_into_the_shards(tmp_path):
    """Each shard's students.json (a roster's names, the identical-code groups) and the grades a TA typed into
    a shard's manual.csv reach the merged folder: grades.csv there names the students and flags the copies,
    and the typed points count in the totals (they were all lost before)."""
    subs = tmp_path / "class"
    subs.mkdir()
    for sid in ("alice", "bob", "carol"):
        shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / f"{sid}.py")  # three identical files
    roster = tmp_path / "roster.csv"
    roster.write_text("name,student_id\nAlice Liddell,alice\nBob Dylan,bob\nCarol King,carol\n", encoding="utf-8")
    for i in (1, 2):
        _grade(subs, tmp_path / f"s{i}", "--shard", f"{i}/2", "--roster", str(roster))
    where = {c["submission"]["id"]: s for s in ("s1", "s2")
             for c in batch.collect_scorecards(str(tmp_path / s), "attention")}
    with open(tmp_path / where["alice"] / "manual.csv", "a", encoding="utf-8") as f:
        f.write("alice,Q3-text,7,clear\r\nalice,adjustment,-2,late\r\n")
    r = _merge(tmp_path / "s1", tmp_path / "s2", "-o", tmp_path / "merged")
    assert r.exit_code == 0, r.output
    assert "before hwcheck made one there" not in r.output + r.stderr, r.output  # the merge's own manual.csv
    rows = {row["id"]: row for row in _rows(tmp_path / "merged")}
    assert rows["alice"]["student"] == "Alice Liddell" and rows["carol"]["student"] == "Carol King", rows
    assert all("identical" in row["note"] for row in rows.values()), rows
    assert float(rows["alice"]["total"]) == pytest.approx(90 + 7 - 2), rows["alice"]
    manual = (tmp_path / "merged" / "manual.csv").read_text(encoding="utf-8-sig")
    # a number, as the TA typed it: a penalty written as text ('-2, csvfile.cell's guard for text) opens in Excel
    # as text, not a number (the TA's probe)
    assert "alice,Q3-text,7,clear" in manual and "alice,adjustment,-2,late" in manual, manual
    r = _merge(tmp_path / "s1", tmp_path / "s2", "-o", tmp_path / "merged")  # again: nothing typed twice
    assert r.exit_code == 0, r.output
    assert (tmp_path / "merged" / "manual.csv").read_text(encoding="utf-8-sig").count("alice,Q3-text,7") == 1


def test_merged_canvas_shards_keep_the_column_title_and_write_canvas_csv(tmp_path):
    """A Canvas download graded in two shards with `--canvas "Homework 1 (4567)"`: the merged folder had no
    canvas.csv, and `export` then titled the column with the assignment's id, a new column in Canvas."""
    subs = tmp_path / "download"
    subs.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "doejane_102_9002_attention.py")
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "smithbob_103_9003_attention.py")
    title = "Homework 1 (4567)"
    for i in (1, 2):
        _grade(subs, tmp_path / f"s{i}", "--shard", f"{i}/2", "--canvas", title)
    r = _merge(tmp_path / "s1", tmp_path / "s2", "-o", tmp_path / "merged")
    assert r.exit_code == 0, r.output
    with open(tmp_path / "merged" / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0][-1] == title and {r[1] for r in rows[2:]} == {"102", "103"}, rows


@pytest.mark.slow
def test_merge_refuses_shards_graded_with_another_timeout_or_device_and_resume_regrades_them(subs, graded,
                                                                                             tmp_path):
    """h78 D1: a shard graded with another --timeout (or --device) was merged silently, and a slow student lost
    most of the grade (6 in the merge, 85.34 graded alone). Each scorecard's grader block records them; merge
    refuses, naming the setting and each side's value; `--resume` with the other setting regrades those
    scorecards, saying so, and the merge then goes through."""
    for extra, said, other in ((["--timeout", "7"], "--timeout 7", "no --timeout"),
                               (["--device", "cpu"], "--device cpu", "--device all")):
        out = tmp_path / said.replace(" ", "").replace("-", "")
        _grade(subs, out, "--shard", "2/2", *extra)
        r = _merge(graded / "s1", out, "-o", tmp_path / "m")
        assert r.exit_code == 2, r.output
        cards = batch.collect_scorecards(str(out), "attention")
        assert cards and all("timeout" in c["grader"] and "devices" in c["grader"] for c in cards), cards[0]["grader"]
        assert said in r.output and other in r.output and "--resume" in r.output, r.output
        assert not os.path.exists(tmp_path / "m" / "grades.csv")
        r = _grade(subs, out, "--shard", "2/2", "--resume")  # as shard 1/2 was graded: regraded, said
        assert f"graded with {said}" in r.output and "grades them again" in r.output, r.output
        assert "up to date, not regraded" not in r.output, r.output
        r = _merge(graded / "s1", out, "-o", tmp_path / f"m{said.replace(' ', '').replace('-', '')}")
        assert r.exit_code == 0, r.output


@pytest.mark.slow
def test_scorecards_of_an_older_hwcheck_without_the_settings_still_merge_and_resume(subs, graded, tmp_path):
    """h78 D1: a scorecard without `timeout` or `devices` in its grader block (an older hwcheck's) is read as
    graded with unknown settings: never refused for them, never a crash, not regraded for them."""
    def old(c):
        c["grader"].pop("timeout", None)
        c["grader"].pop("devices", None)
    s2 = _altered(graded / "s2", tmp_path / "s2", old)
    r = _merge(graded / "s1", s2, "-o", tmp_path / "m")
    assert r.exit_code == 0, r.output
    r = _grade(subs, s2, "--shard", "2/2", "--resume", "--timeout", "9")
    assert "up to date, not regraded" in r.output and "graded with" not in r.output, r.output


@pytest.mark.slow
def test_merge_names_crashed_scorecards_with_their_resume_and_exits_1(graded, tmp_path):
    """h78 D2: a crashed scorecard (hwcheck's own failure: a Dask worker that died twice) in a shard was merged as
    a 0 with exit 0. The merge names it, its shard and the shard's `--resume`, writes the merged folder (as for an
    incomplete shard) and exits 1; `export` of that folder warns, naming it."""
    victim = []

    def crashed(c):
        if not victim:
            victim.append(c["submission"]["id"])
            c.update(status="crashed", score=0)
            c["grader"]["internal_error"] = "the Dask worker grading it died, and again on its retry"
    s2 = _altered(graded / "s2", tmp_path / "s2", crashed)
    r = _merge(graded / "s1", s2, "-o", tmp_path / "m")
    assert r.exit_code == 1, r.output
    again = owned.read_json(str(s2), "shard.json", "shard")["resume"]
    line = next(x for x in r.output.splitlines() if "crashed" in x)
    assert victim[0] in line and "shard 2/2" in line and again in line, line
    assert os.path.isfile(tmp_path / "m" / "grades.csv")
    r = CliRunner().invoke(main, ["export", str(tmp_path / "m")])
    assert "crashed" in r.output and victim[0] in r.output and "--resume" in r.output, r.output


def _set_typed(folder, sid, points):
    """The Q3-text grade of `sid` in `folder`'s manual.csv, as a TA types it (one row, its points changed)."""
    path = folder / "manual.csv"
    lines = path.read_text(encoding="utf-8-sig").splitlines()
    lines = [x for x in lines if not x.startswith(f"{sid},Q3-text,")] + [f"{sid},Q3-text,{points},read"]
    path.write_text("\r\n".join(lines) + "\r\n", encoding="utf-8")


def _typed(folder, sid):
    rows = [x for x in (folder / "manual.csv").read_text(encoding="utf-8-sig").splitlines()
            if x.startswith(f"{sid},Q3-text,") and x.split(",")[2]]
    assert len(rows) == 1, rows
    return rows[0].split(",")[2]


@pytest.mark.slow
def test_a_grade_corrected_in_a_shards_manual_csv_reaches_the_merged_folder_on_a_re_merge(graded, tmp_path):
    """h78 D3: a grade corrected in a shard's manual.csv after a merge was silently ignored by the next merge. The
    shard's changed grade is the TA's latest word where the merged folder's row is still what the last merge
    brought (taken, and said with both values); where the TA changed that row in the merged folder too, it is
    kept and the conflict said with both values; nothing a TA typed is overwritten silently."""
    s1, s2 = (shutil.copytree(graded / s, tmp_path / s) for s in ("s1", "s2"))
    sid = batch.collect_scorecards(str(s1), "attention")[0]["submission"]["id"]
    merged = tmp_path / "m"
    _set_typed(s1, sid, 7)
    assert _merge(s1, s2, "-o", merged).exit_code == 0
    assert _typed(merged, sid) == "7"
    _set_typed(s1, sid, 9)  # corrected in the shard
    r = _merge(s1, s2, "-o", merged)
    assert r.exit_code == 0, r.output
    assert _typed(merged, sid) == "9", r.output
    line = next(x for x in r.output.splitlines() if f"{sid} Q3-text" in x)
    assert "7" in line and "9" in line, line
    _set_typed(merged, sid, 5)  # the TA's own edit in the merged folder ...
    _set_typed(s1, sid, 8)  # ... and another in the shard: a conflict
    r = _merge(s1, s2, "-o", merged)
    assert r.exit_code == 0, r.output
    assert _typed(merged, sid) == "5", r.output
    line = next(x for x in r.output.splitlines() if "conflict" in x)
    assert sid in line and "5" in line and "8" in line, line
    _set_typed(s1, sid, 9)  # the shard back to what the merge brought: the TA's edit in the merged folder stands
    r = _merge(s1, s2, "-o", merged)
    assert _typed(merged, sid) == "5" and "conflict" not in r.output, r.output
