"""An older Canvas download graded over a later one's output folder is said, and an override's line is current.

A TA's probe (h27, D5): grading an older download with --resume into the output folder of a later one
replaced a student's newer attempt (attachment 50020, LATE) with the older one (50002) without a word; and the
summary's line about an override "given for an earlier submission, and the new one scores 30 there
automatically" was computed before the regrade: the regrade graded the very submission the override was given
for again, so no such line holds. Now (h104) --resume keeps the later attempt's grade and says so; `--only ID`
grades the older attempt, as asked, with a warning that it replaces the later one, and the override's line is
said as of the scorecards after the batch.
"""

import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")


def _grade(folder, out):
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--resume", "--public",
                                  "--seed", "3", "--timeout", "5"])
    assert r.exit_code == 0, r.output
    return " ".join(r.output.split())  # stdout and stderr, as a terminal shows them


@pytest.fixture
def downloads(tmp_path):
    old, new = tmp_path / "old", tmp_path / "new"
    for folder, name, src in ((old, "smithanna_1002_50002_hw1.py", "no_scaling.py"),
                              (new, "smithanna_LATE_1002_50020_hw1.py", "correct.py")):
        folder.mkdir()
        shutil.copyfile(os.path.join(EXAMPLES, src), folder / name)
        shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / f"doejohn_1001_5000{len(name) % 7}_hw1.py")
    return old, new


def test_an_older_download_over_a_later_one_is_warned_of_and_the_override_line_is_current(downloads, tmp_path):
    old, new = downloads
    out = tmp_path / "out"
    said = _grade(old, out)
    assert "older uploads" not in said
    manual = out / "manual.csv"
    manual.write_text(manual.read_text(encoding="utf-8-sig") + "smithanna_1002,Q1,28,appeal accepted\r\n",
                      encoding="utf-8-sig")
    assert CliRunner().invoke(main, ["export", str(out)]).exit_code == 0  # the override, for the old attempt
    said = _grade(new, out)  # the later attempt: the override was given for the earlier one, said
    assert "older uploads" not in said, said
    assert "Q1 28 from manual.csv line" in said and "was given for an earlier submission" in said, said
    said = _grade(old, out)  # the older download again, over the later one's folder: the later attempt kept (h104)
    assert ("smithanna_1002: this folder holds an older attempt (Canvas attachment 50002) than the one graded "
            "into") in said and "(attachment 50020;" in said and "the later attempt's grade is kept" in said, said
    assert "older uploads" not in said and "--only smithanna_1002" in said, said
    # asked for by name (--only): the older attempt replaces the later one, said
    r = CliRunner().invoke(main, ["grade", str(old), "-a", "attention", "-o", str(out), "--only", "smithanna_1002",
                                  "--public", "--seed", "3", "--timeout", "5"])
    said = " ".join(r.output.split())
    assert r.exit_code == 0, said
    assert ("warning: smithanna_1002: --only grades the older attempt this folder holds (Canvas attachment 50002)"
            in said) and "(attachment 50020;" in said, said
    assert "doejohn_1001" not in said.split("warning:")[1].split("hwcheck:")[0], said  # only the one replaced
    # the regrade graded the submission the override was given for: no line says it was given for another
    assert "was given for an earlier submission" not in said, said
    said = _grade(old, out)  # nothing replaced this time: nothing said
    assert "older attempt" not in said and "older uploads" not in said, said
