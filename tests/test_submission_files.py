"""What the trusted side copies of a folder submission, and what it says it left out (checker.running.submission_files).

h25: a folder of 30 nested folders with 253-character names (a path of 7,600 bytes, past Linux's PATH_MAX of
4,096) made `copy_submission` raise ENAMETOOLONG, which became "crashed (internal error)": hwcheck's own failure,
graded again on every --resume. What is too long is now left out and said in the student's words, as files too
big or too many are, and the rest is graded.
"""
import json
import os
import pathlib
import shutil
import tempfile

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.running.submission_files import MAX_COPY_PATH, TOO_LONG, copy_submission, sha256_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")


def _nest(top, levels=30, width=253, file_name="deep.py"):
    """`levels` folders of `width`-character names under `top`, made through folder descriptors (their path is past
    PATH_MAX), with `file_name` in the deepest; returns the names."""
    names = [f"d{i:02d}".ljust(width, "x") for i in range(levels)]
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for name in names:
            os.mkdir(name, dir_fd=fd)
            new = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = new
        out = os.open(file_name, os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
        os.write(out, b"x = 1\n")
        os.close(out)
    finally:
        os.close(fd)
    return names


def test_a_path_past_path_max_is_left_out_with_why_and_the_rest_copied(tmp_path):
    sub = tmp_path / "zed"
    sub.mkdir()
    shutil.copyfile(CORRECT, sub / "hw.py")
    _nest(str(sub))
    # the copy's path longer than the submission's (a worker's dir in a longer TMPDIR): its folders reached
    # PATH_MAX first, and os.makedirs raised OSError: [Errno 36] File name too long
    dest = tmp_path / ("w" * 250) / ("v" * 250) / "submission"  # longer by more than one of its folders
    left = copy_submission(str(sub), str(dest))
    assert (dest / "hw.py").read_bytes() == (sub / "hw.py").read_bytes()
    assert [why for _, why in left] == [TOO_LONG], left
    name = left[0][0]
    assert name.startswith("d00") and len(name) < 200, name  # a path the student can read, not 2,000 x's
    for folder, _, files in os.walk(dest):
        assert len(os.fsencode(os.path.relpath(folder, dest))) <= MAX_COPY_PATH
        assert "deep.py" not in files


def test_a_file_whose_own_path_is_past_path_max_is_hashed_and_left_out(tmp_path):
    """A folder whose path fits PATH_MAX holding a file whose path does not: `sha256_of` (the scorecard's hash)
    raised ENAMETOOLONG on it too."""
    sub = tmp_path / "zed"
    sub.mkdir()
    shutil.copyfile(CORRECT, sub / "hw.py")
    room = 4096 - len(os.fsencode(str(sub))) - 200  # the folders' path: under PATH_MAX, the file's 200 past it
    levels = room // 254
    _nest(str(sub), levels=levels, width=253, file_name="f" * 250 + ".py")
    assert len(sha256_of(str(sub))) == 64
    left = copy_submission(str(sub), str(tmp_path / "copy"))
    assert left and {why for _, why in left} == {TOO_LONG}, left
    assert (tmp_path / "copy" / "hw.py").is_file()


@pytest.fixture
def short_tmp():
    """A folder of a short path (/tmp/hXXXX): the submission's own path shorter than the worker's copy of it, as
    in h25's repro, so that the copy, not the walk of the submission, meets PATH_MAX first."""
    path = tempfile.mkdtemp(prefix="h", dir="/tmp" if os.path.isdir("/tmp") else None)
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def test_a_folder_submission_too_deep_to_copy_is_graded_saying_what_was_left_out(short_tmp, tmp_path):
    """The batch: the student's code beside the nest is graded (it was "crashed (internal error)"), and the
    scorecard says what was left out and why."""
    subs = short_tmp / "subs"
    (subs / "zed").mkdir(parents=True)
    shutil.copyfile(CORRECT, subs / "zed" / "hw.py")
    _nest(str(subs / "zed"))
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out), "--public",
                                  "--timeout", "5"])
    assert r.exit_code in (0, 1), r.output
    card = json.loads((out / "zed.json").read_text(encoding="utf-8"))
    assert card["status"] == "graded" and not card["grader"].get("internal_error"), card["load"]
    assert card["score"] > 0, card["load"]
    said = [m if isinstance(m, str) else m.get("text", "") for m in card["load"]["messages"]]
    assert any("was not given to your code: a path in your folder is too long" in m for m in said), said


def test_the_hash_covers_every_folder_the_worker_gets_hidden_ones_too(tmp_path):
    """--resume keeps a scorecard whose submission hash is unchanged: a file the worker can read (the copy holds
    it) must change the hash, or a resubmission whose code lies under `.impl/` keeps its old grade."""
    from checker.running.submission_files import COPY_SKIPS
    sub = tmp_path / "alice"
    (sub / ".impl").mkdir(parents=True)
    (sub / "attention.py").write_text("exec(open('.impl/impl.py').read())\n")
    (sub / ".impl" / "impl.py").write_text("def get_scores(matrix, vector):\n    return None\n")
    before = sha256_of(str(sub))
    copy = tmp_path / "copy"
    copy_submission(str(sub), str(copy))
    assert (copy / ".impl" / "impl.py").exists()  # the worker reads it
    (sub / ".impl" / "impl.py").write_text("def get_scores(matrix, vector):\n    return matrix @ vector\n")
    assert sha256_of(str(sub)) != before
    changed = sha256_of(str(sub))
    for skipped in COPY_SKIPS:  # what is not copied does not count
        (sub / skipped).mkdir()
        (sub / skipped / "x").write_text("anything")
        assert sha256_of(str(sub)) == changed
        copy2 = tmp_path / f"copy-{skipped}"
        copy_submission(str(sub), str(copy2))
        assert not (copy2 / skipped).exists()
