"""checker.records.owned (what hwcheck wrote into OUT, signed) and the temporary files of checker.records.atomic.

Unit tests: paths built from ids stay inside their folder (links too); a record proves a file only with
the bytes hwcheck wrote and the key it was signed with; a student's file at one of hwcheck's names is set
aside (a regular file) or left where it is with hwcheck's file beside it (a folder, a link), never read as
hwcheck's; every temporary name `checker.records.atomic` gives is one `remove_stale_temps` removes (issue 30: the
temporary of `.grades.csv.sha256` was left behind by a kill, which failed the kill-and-resume test).
"""

import json
import os

import pytest

from checker.records import atomic, outfolder, owned, owned_listing, owned_records


@pytest.fixture(autouse=True)
def _own_key(tmp_path, monkeypatch):
    monkeypatch.setenv("HWCHECK_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("HWCHECK_KEY", raising=False)
    monkeypatch.setattr(owned_records, "_key_cache", {})


@pytest.mark.parametrize("sid", ["../merge_escape", "..", ".", "", "a/b", "/etc/passwd", "x\0y"])
def test_an_id_that_is_no_plain_name_builds_no_path(tmp_path, sid):
    with pytest.raises(ValueError):
        owned_records.join_inside(str(tmp_path), sid)
    with pytest.raises(ValueError):
        outfolder.scorecard_path(str(tmp_path), sid)
    with pytest.raises(ValueError):
        outfolder.write_submission(str(tmp_path), sid, {"submission": {"id": sid}}, keep_raw=False)
    assert not os.path.exists(tmp_path.parent / "merge_escape.json")


def test_a_link_out_of_the_folder_is_refused(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "out").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "out" / "gradescope")
    with pytest.raises(ValueError):
        owned_records.join_inside(str(tmp_path / "out"), "gradescope", "results.json")
    out = str(tmp_path / "out")
    outfolder.write_results(out, "alice", {"score": 1})  # beside the link, never through it
    assert os.listdir(tmp_path / "elsewhere") == []
    assert outfolder.read_results(out, "alice") == {"score": 1}


def test_a_file_is_hwchecks_only_with_the_bytes_it_wrote(tmp_path):
    out = str(tmp_path)
    path = owned.write_json(out, "alice.json", {"a": 1}, kind="scorecard", sid="alice")
    assert owned.read_json(out, "alice.json") == {"a": 1}
    assert owned_listing.is_ours(out, path)
    with open(path, "w") as f:
        f.write('{"a": 2}')
    assert owned.read_json(out, "alice.json") is None
    assert not owned_listing.is_ours(out, path)


def test_a_record_signed_with_another_key_proves_nothing(tmp_path, monkeypatch):
    out = str(tmp_path / "out")
    owned.write_json(out, "alice.json", {"a": 1}, kind="scorecard", sid="alice")
    monkeypatch.setattr(owned_records, "_key_cache", {})
    monkeypatch.setenv("HWCHECK_STATE_DIR", str(tmp_path / "another"))
    assert owned.read_json(out, "alice.json") is None
    assert outfolder.read_scorecard(out, "alice") is None


def test_a_forged_record_proves_nothing(tmp_path):
    out = str(tmp_path)
    owned.write_json(out, "bob.json", {"b": 1}, kind="scorecard", sid="bob")
    records = os.path.join(owned_records.state_dir(out), "records")
    (name,) = os.listdir(records)
    rec = json.load(open(os.path.join(records, name)))
    with open(os.path.join(out, "bob.json"), "w") as f:
        f.write('{"b": 100}')
    rec["sha256"] = owned_records.sha256_bytes(b'{"b": 100}')
    with open(os.path.join(records, name), "w") as f:
        json.dump(rec, f)
    assert owned.read_json(out, "bob.json") is None


def test_a_students_file_at_an_output_name_is_set_aside_and_kept(tmp_path):
    out = str(tmp_path)
    (tmp_path / "grades.csv").write_text("my own data\n")
    path = owned.write_text(out, "grades.csv", "id\r\n", kind="gradebook")
    assert path == os.path.join(out, "grades.csv")
    assert owned.read_bytes(out, "grades.csv") == b"id\r\n"
    (kept,) = owned.set_aside(out)
    with open(os.path.join(owned_records.state_dir(out), "set-aside", kept)) as f:
        assert f.read() == "my own data\n"


@pytest.mark.parametrize("make", ["folder", "link"])
def test_a_folder_or_link_at_an_output_name_is_left_and_hwchecks_file_goes_beside_it(tmp_path, make):
    out = str(tmp_path / "out")
    os.makedirs(out)
    target = tmp_path / "target.json"
    target.write_text("outside\n")
    if make == "folder":
        os.mkdir(os.path.join(out, "alice.json"))
    else:
        os.symlink(target, os.path.join(out, "alice.json"))
    card = {"submission": {"id": "alice"}, "score": 1}
    outfolder.write_submission(out, "alice", card, keep_raw=False)
    assert outfolder.read_scorecard(out, "alice") == card
    assert target.read_text() == "outside\n"
    assert os.path.lexists(os.path.join(out, "alice.json"))
    (where,) = [p for n, p in owned.alternates(out) if n == "alice.json"]
    assert os.path.basename(where).startswith("alice.hwcheck-") and where.endswith(".json")
    assert outfolder.scorecard_path(out, "alice") == where


def test_an_unrecorded_scorecard_shaped_file_is_no_scorecard(tmp_path):
    out = str(tmp_path)
    card = {"schema_version": 1, "assignment": "attention", "submission": {"id": "john"}, "questions": []}
    (tmp_path / "notes.json").write_text(json.dumps(card))
    (tmp_path / "john.json").write_text(json.dumps(card))
    assert list(outfolder.scorecards_in(out)) == []
    assert outfolder.read_scorecard(out, "john") is None


def test_remove_deletes_only_hwchecks_own_file(tmp_path):
    out = str(tmp_path)
    (tmp_path / "bob.raw.json").write_text("a student's\n")
    outfolder.write_submission(out, "bob", {"submission": {"id": "bob"}}, keep_raw=False)
    assert (tmp_path / "bob.raw.json").read_text() == "a student's\n"


# ---------------------------------------------------------------------------
# issue 30: every temporary name checker.records.atomic makes is recognised as one
# ---------------------------------------------------------------------------

def _temp_names_of(monkeypatch, write):
    """The temporary names checker.records.atomic really uses during `write()` (captured at os.replace)."""
    seen = []
    real = os.replace

    def spy(src, dst, *a, **k):
        seen.append((os.path.basename(src), os.path.basename(dst)))
        return real(src, dst, *a, **k)

    monkeypatch.setattr(atomic.os, "replace", spy)
    write()
    monkeypatch.setattr(atomic.os, "replace", real)
    return seen


def test_every_temporary_name_of_every_file_written_is_recognised(tmp_path, monkeypatch):
    from checker.records.outputs import Gradebook
    from checker.spec import load_spec
    out = str(tmp_path / "out")
    spec = load_spec("attention")
    card = {"schema_version": 1, "assignment": "attention", "submission": {"id": "alice"}, "questions": [],
            "score": 0, "max_score": 100, "status": "graded", "grader": {"mode": "public"}}
    long_id = "x" * 150

    def write():
        outfolder.write_submission(out, "alice", card, keep_raw=True, raw={"r": 1})
        outfolder.write_submission(out, long_id, {**card, "submission": {"id": long_id}}, keep_raw=False)
        book = Gradebook(out, spec, [card], ["alice"])
        book.ensure_manual()
        book.write(final=True)
        atomic.write_text_atomic(os.path.join(out, ".grades.csv.sha256"), "0" * 64 + "\n")  # issue 30's file
        owned.write_text(out, "canvas.csv", "x\r\n", kind="export")

    seen = _temp_names_of(monkeypatch, write)
    targets = {dst for _, dst in seen}
    assert {"alice.json", "alice.raw.json", "results.json", "grades.csv", "answers.csv", "manual.csv",
            ".grades.csv.sha256", "canvas.csv", f"{long_id}.json"} <= targets
    for temp, dst in seen:
        assert atomic.is_temp_name(temp), (temp, dst)
        prefix, suffix = atomic.temp_affixes(dst)
        assert temp.startswith(prefix) and temp.endswith(suffix)
    assert not atomic.is_temp_name("grades.csv") and not atomic.is_temp_name("alice.json")


def test_remove_stale_temps_removes_what_a_kill_leaves_of_any_write(tmp_path):
    out = str(tmp_path)
    outfolder.write_submission(out, "alice", {"submission": {"id": "alice"}}, keep_raw=False)
    left = []
    for folder, name in [(out, ".grades.csv.sha256"), (out, "grades.csv"), (out, "alice.json"),
                         (os.path.join(out, "gradescope", "alice"), "results.json"),
                         (os.path.join(owned_records.state_dir(out), "records"), "0123abcd.json")]:
        prefix, suffix = atomic.temp_affixes(os.path.join(folder, name))
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, prefix + "k1ll3d_x" + suffix)
        open(path, "w").close()
        left.append(path)
    outfolder.remove_stale_temps(out)
    assert [p for p in left if os.path.exists(p)] == []
