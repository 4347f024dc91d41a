"""`hwcheck merge` again into a merged folder keeps a scorecard regraded there since (an appeal, h86).

Two submissions graded as shards 1/2 and 2/2 and merged; alice's fixed file is
regraded with --only in the merged folder; merging the shards again keeps that
scorecard (and names it), while a scorecard the merge wrote itself is still
replaced by its shard's newer one.
"""
import csv
import os
import shutil

from click.testing import CliRunner

from checker.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


def _grade(subs, out, *extra):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public",
                                  "--seed", "777", *extra])
    assert r.exit_code == 0, r.output


def _totals(out):
    with open(os.path.join(out, "grades.csv"), encoding="utf-8-sig") as f:
        return {r["id"]: r["total"] for r in csv.DictReader(f)}


def test_a_re_merge_keeps_an_appeal_regraded_in_the_merged_folder_and_names_it(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copy(os.path.join(EXAMPLES, "no_scaling.py"), subs / "alice.py")
    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "bob.py")
    for i in (1, 2):
        _grade(subs, tmp_path / f"s{i}", "--shard", f"{i}/2")
    merged = tmp_path / "merged"
    r = CliRunner().invoke(main, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(merged)])
    assert r.exit_code == 0, r.output
    before = _totals(merged)
    assert float(before["alice"]) < float(before["bob"])

    shutil.copy(os.path.join(EXAMPLES, "correct.py"), subs / "alice.py")  # the appeal, accepted
    _grade(subs, merged, "--only", "alice")
    appealed = _totals(merged)
    assert appealed["alice"] == appealed["bob"]

    # bob's shard is regraded since (say, with a fixed file): the merge's own scorecard of bob is replaced
    shutil.copy(os.path.join(EXAMPLES, "no_scaling.py"), subs / "bob.py")
    shard_of_bob = next(s for s in ("s1", "s2") if (tmp_path / s / "bob.json").exists())
    _grade(subs, tmp_path / shard_of_bob, "--shard", "1/2" if shard_of_bob == "s1" else "2/2", "--only", "bob")

    r = CliRunner().invoke(main, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(merged)])
    assert r.exit_code == 0, r.output
    after = _totals(merged)
    assert after["alice"] == appealed["alice"], r.output  # the appeal stands
    assert after["bob"] == before["alice"]  # the shard's newer grade of bob is taken
    said = " ".join(r.output.split())
    assert "alice" in said and "kept" in said and "regraded" in said

    r = CliRunner().invoke(main, ["merge", str(tmp_path / "s1"), str(tmp_path / "s2"), "-o", str(merged)])
    assert r.exit_code == 0, r.output  # and a third merge still keeps it
    assert _totals(merged)["alice"] == appealed["alice"]
