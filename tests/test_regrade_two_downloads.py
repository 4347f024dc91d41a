"""An output folder fed by two Canvas downloads, regraded after the grading tests changed (h102).

Download 1 is graded, then a second download holding the late submissions only is graded into the same OUT with
--resume (docs/tas.md). A grading test's weight then changes (in a course's frozen copy of `attention`). Before,
`export` refused and named `grade <download 1> --resume`; running it regraded Dupont, whose later attempt came
from download 2, on his older attempt in download 1 (90 became 56.25), left Amy's card (download 2 only) on the
old tests, and `export` refused for ever with the same command. Now the refusal names a command that regrades
every scorecard from the file it was graded from, keeping each student's latest attempt, and running it clears
the refusal; so does the first download's --resume.
"""
import csv
import os
import shlex
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "assignments", "attention", "examples")


def _run(args, env):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=600)


def _canvas(out):
    with open(out / "canvas.csv", newline="", encoding="utf-8-sig") as f:
        return {row["ID"]: row for row in csv.DictReader(f) if row["ID"]}


@pytest.fixture
def two_downloads(tmp_path):
    """(env, download 1, download 2, OUT, the course's copy of attention): both downloads graded into OUT."""
    course = tmp_path / "course"
    folder = course / "attn2dl"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), folder, ignore=shutil.ignore_patterns("__pycache__"))
    spec = (folder / "spec.toml").read_text(encoding="utf-8")
    assert spec.count('id = "attention"') == 1, "the spec changed: update this"
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', 'id = "attn2dl"'), encoding="utf-8")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(course), PYTHONPATH=ROOT)
    dl1, dl2 = tmp_path / "dl1", tmp_path / "dl2"
    for where, name, src in ((dl1, "chenwei_1010_50010_hw1.py", "correct.py"),
                             (dl1, "dupontjeanluc_1008_50008_hw1.py", "no_scaling.py"),  # on time: weak
                             (dl2, "dupontjeanluc_LATE_1008_50300_hw1.py", "correct.py"),  # late: fixed
                             (dl2, "absentamy_LATE_1016_50301_hw1.py", "correct.py")):  # late only
        where.mkdir(exist_ok=True)
        shutil.copyfile(os.path.join(EXAMPLES, src), where / name)
    out = tmp_path / "out"
    r = _run(["grade", dl1, "-a", "attn2dl", "-o", out, "--public", "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    r = _run(["grade", dl2, "-a", "attn2dl", "-o", out, "--resume", "--public", "--timeout", "5"], env)
    assert r.returncode == 0, r.stdout + r.stderr
    before = _canvas(out)
    assert before["1008"]["attn2dl"] == before["1010"]["attn2dl"] == before["1016"]["attn2dl"], before
    tests = folder / "test_attention_q1.py"
    text = tests.read_text(encoding="utf-8")
    assert "@pytest.mark.weight(3)" in text, "the grading tests changed: update this"
    tests.write_text(text.replace("@pytest.mark.weight(3)", "@pytest.mark.weight(1)", 1), encoding="utf-8")
    return env, dl1, dl2, out


def _all_current(out, env):
    r = _run(["export", out], env)
    assert r.returncode == 0, r.stdout + r.stderr
    now = _canvas(out)
    # Dupont keeps his later (correct) attempt: the same total as Chen's correct file; Amy is regraded too
    assert now["1008"]["attn2dl"] == now["1010"]["attn2dl"] == now["1016"]["attn2dl"], now
    return now


def test_the_refusals_command_regrades_every_scorecard_from_its_own_file(two_downloads):
    env, dl1, dl2, out = two_downloads
    r = _run(["export", out], env)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 2, said
    command = said.split("regrade them first with the batch's seed: ", 1)[1].split("; then run", 1)[0]
    words = shlex.split(command)
    assert words[:3] == ["hwcheck", "grade", str(dl2)], command  # the latest download graded
    r = _run(words[1:], env)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 0, said
    assert "older attempt now" not in said, said
    assert "chenwei_1010) was graded with other grading tests" in said, said  # download 1's, from its own file
    _all_current(out, env)
    r = _run(["report", out, "--top", "0"], env)  # report no longer refuses either
    assert "were graded with other grading tests" not in r.stdout + r.stderr, r.stdout + r.stderr


def test_the_first_downloads_resume_keeps_the_later_attempt(two_downloads):
    env, dl1, dl2, out = two_downloads
    r = _run(["grade", dl1, "-a", "attn2dl", "-o", out, "--resume", "--public", "--timeout", "5"], env)
    said = " ".join((r.stdout + r.stderr).split())
    assert r.returncode == 0, said
    assert "is graded on the older attempt now" not in said, said
    assert "so --resume regrades the later attempt, from the file it was graded from" in said, said
    assert "(absentamy_1016) was graded with other grading tests" in said, said
    _all_current(out, env)
