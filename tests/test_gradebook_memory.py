"""What a TA's gradebook remembers and says between runs (issue 30, "TA's gradebook"): Canvas's column title kept
in OUT as hwcheck's own file (given with --canvas, or taken from a roster that is Canvas's gradebook export) across
`grade --only` and `export`; the manual grades still pending, said by `export` and the summary; the summary's
score statistics with manual.csv merged; `--only` telling only the regrade; a rerun into a graded OUT without
--resume saying that everyone is graded again, and with which seed.

Real batches through `python -m checker.cli grade`; points are read from the spec, never written in.
"""

import csv
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from checker.records.roster import canvas_column, canvas_columns
from checker.spec import example_dirs, load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUB = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
_QUESTIONS = load_spec("attention")["questions"]
AUTO = sum(q["points"] for q in _QUESTIONS if not q.get("manual"))
TOTAL = sum(q["points"] for q in _QUESTIONS)
MANUAL = next(q for q in _QUESTIONS if q.get("manual"))
TITLE = "Homework 1 (4567)"
ALICE, BOB = "smithalice_201", "jonesbob_202"  # Canvas's ids of the two students' submissions
STUDENT_COLUMNS = "Student,ID,SIS User ID,SIS Login ID,Section"


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *map(str, args)], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def _ok(run):
    assert run.returncode == 0, run.stdout + run.stderr
    return run


def _canvas_header(folder):
    with open(os.path.join(folder, "canvas.csv"), newline="", encoding="utf-8-sig") as f:
        return next(csv.reader(f))


def _canvas_roster(path, columns, points=None):
    """A Canvas gradebook export (Gradebook > Export) of the two students, with these assignment columns."""
    points = points or [f"{TOTAL:g}"] * len(columns)
    extra = ["Assignments Current Score", "Current Score", "Final Score"]
    path.write_text(",".join([STUDENT_COLUMNS, *(f'"{c}"' for c in columns), *extra]) + "\n"
                    + ",".join(["Points Possible", "", "", "", "", *points, *["(read only)"] * len(extra)]) + "\n"
                    + '"Smith, Alice",201,s201,asmith,Sec 1' + "," * (len(columns) + len(extra)) + "\n"
                    + '"Jones, Bob",202,s202,bjones,Sec 1' + "," * (len(columns) + len(extra)) + "\n"
                    + '"Student, Test",999,,,Sec 1' + "," * (len(columns) + len(extra)) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def canvas(tmp_path_factory):
    """A Canvas "Download Submissions" folder graded into itself (the README allows -o equal to it), in which a
    student planted `.exports.json` and `.canvas.json` naming another column."""
    base = tmp_path_factory.mktemp("gradebook_memory")
    folder = base / "download"
    folder.mkdir()
    shutil.copyfile(os.path.join(SUB, "correct.py"), folder / "smithalice_201_9001_attention.py")
    shutil.copyfile(os.path.join(SUB, "no_scaling.py"), folder / "jonesbob_202_9002_attention.py")
    planted = json.dumps({"canvas_title": "Evil (666)", "title": "Evil (666)", "source": "--canvas"})
    (folder / ".exports.json").write_text(planted, encoding="utf-8")
    (folder / ".canvas.json").write_text(planted, encoding="utf-8")
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public"))
    return folder, run


def _copy(canvas, tmp_path):
    folder = tmp_path / "download"
    shutil.copytree(canvas[0], folder, symlinks=True)
    return folder


def _scores(run):
    m = re.search(r"score: mean ([\d.]+), median ([\d.]+), min ([\d.]+), max ([\d.]+) \(of ([\d.]+)\)", run.stdout)
    assert m, run.stdout
    return [float(x) for x in m.groups()]


def _fill(folder, sid, points):
    """The TA grades `sid`'s written answer in manual.csv (as a spreadsheet saves it)."""
    path = folder / "manual.csv"
    text = path.read_text(encoding="utf-8-sig")
    assert f"{sid},{MANUAL['id']},," in text
    path.write_text(text.replace(f"{sid},{MANUAL['id']},,", f"{sid},{MANUAL['id']},{points:g},"),
                    encoding="utf-8-sig")


# ---------------------------------------------------------------------------
# 1. Canvas's column title
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_canvas_title_given_to_export_is_kept_across_only_and_export(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    assert _canvas_header(folder)[-1] == "attention"  # nothing known yet: the assignment's id (a planted file is not)
    said = _ok(_hwcheck("export", folder)).stdout
    assert "--canvas" in said  # the TA is told that Canvas would make a new column, and how to name it
    _ok(_hwcheck("export", folder, "--canvas", TITLE))
    assert _canvas_header(folder)[-1] == TITLE
    _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--only", BOB))
    assert _canvas_header(folder)[-1] == TITLE  # the regrade rewrote canvas.csv with the same column
    _ok(_hwcheck("export", folder))
    assert _canvas_header(folder)[-1] == TITLE
    _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--resume", "--canvas", "HW (1)"))
    assert _canvas_header(folder)[-1] == "HW (1)"  # grade takes --canvas too, and it is the one kept
    _ok(_hwcheck("export", folder))
    assert _canvas_header(folder)[-1] == "HW (1)"


@pytest.mark.slow
def test_the_canvas_title_comes_from_a_roster_that_is_canvas_gradebook_export(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    roster = _canvas_roster(tmp_path / "gradebook.csv", [TITLE])
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--resume", "--roster", roster))
    assert _canvas_header(folder)[-1] == TITLE
    assert TITLE in run.stdout  # said where the column comes from
    os.unlink(roster)  # kept in OUT, not read again from the roster
    _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--only", ALICE))
    assert _canvas_header(folder)[-1] == TITLE
    _ok(_hwcheck("export", folder))
    assert _canvas_header(folder)[-1] == TITLE


@pytest.mark.slow
def test_a_roster_with_several_assignment_columns_is_not_guessed_from(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    roster = _canvas_roster(tmp_path / "gradebook.csv", [TITLE, "Homework 2 (4568)"])
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--resume", "--roster", roster))
    assert _canvas_header(folder)[-1] == "attention"
    assert TITLE in run.stdout and "Homework 2 (4568)" in run.stdout and "--canvas" in run.stdout
    _ok(_hwcheck("export", folder, "--canvas", "Homework 2 (4568)"))
    assert _canvas_header(folder)[-1] == "Homework 2 (4568)"
    # the column named after the assignment is taken when exactly one is
    _canvas_roster(roster, [TITLE, "Attention (4569)"], points=[f"{TOTAL:g}", f"{TOTAL / 2:g}"])
    other = _copy(canvas, tmp_path / "again")
    run = _ok(_hwcheck("grade", other, "-a", "attention", "-o", other, "--public", "--resume", "--roster", roster))
    assert _canvas_header(other)[-1] == "Attention (4569)"
    assert f"{TOTAL / 2:g} points possible" in run.stdout  # Canvas's points are not hwcheck's total: said
    # and said again on each later run while they differ (the title itself was said once), not only when the
    # column is first taken: a question's points changed since, or Canvas's did (a TA probe's regrade)
    run = _ok(_hwcheck("grade", other, "-a", "attention", "-o", other, "--public", "--resume", "--roster", roster))
    assert f"{TOTAL / 2:g} points possible" in run.stdout, run.stdout
    _canvas_roster(roster, [TITLE, "Attention (4569)"], points=[f"{TOTAL:g}", f"{TOTAL:g}"])
    run = _ok(_hwcheck("grade", other, "-a", "attention", "-o", other, "--public", "--resume", "--roster", roster))
    assert "points possible" not in run.stdout, run.stdout


# ---------------------------------------------------------------------------
# 2. pending manual grades
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_export_says_which_manual_grades_are_pending(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    said = _ok(_hwcheck("export", folder)).stdout
    line = next(x for x in said.splitlines() if "pending" in x)
    assert "2 of 2" in line and ALICE in line and BOB in line and MANUAL["id"] in line
    _fill(folder, ALICE, MANUAL["points"])
    said = _ok(_hwcheck("export", folder)).stdout
    line = next(x for x in said.splitlines() if "pending" in x)
    assert "1 of 2" in line and BOB in line and ALICE not in line
    _fill(folder, BOB, 0)
    said = _ok(_hwcheck("export", folder)).stdout
    assert "pending" not in said


# ---------------------------------------------------------------------------
# 3. the summary, --only, and a rerun without --resume
# ---------------------------------------------------------------------------

@pytest.mark.slow
def test_the_summary_scores_have_manual_csv_merged(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    first = _scores(canvas[1])
    assert first[3] == AUTO and first[4] == TOTAL
    _fill(folder, ALICE, MANUAL["points"])
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--resume"))
    mean, median, low, high, top = _scores(run)
    assert high == TOTAL and low == first[2]  # alice has every point now; bob's written answer is still pending
    assert mean == pytest.approx((TOTAL + first[2]) / 2, abs=0.01)
    assert "1 of 2" in run.stdout and "pending" in run.stdout


@pytest.mark.slow
def test_only_tells_the_regrade_not_the_class(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--only", BOB))
    assert "grading 2 submissions" not in run.stderr and "regrading 1 of 2 submissions" in run.stderr
    assert ALICE not in run.stderr and "up to date" not in run.stderr  # no line for the submission not asked for
    assert re.search(rf"\[1/1\] {BOB}: ", run.stderr)
    assert "1 regraded" in run.stdout and "1 kept" in run.stdout
    assert _scores(run)[3] == AUTO  # the class's statistics still


@pytest.mark.slow
def test_a_rerun_without_resume_says_everyone_is_graded_again(canvas, tmp_path):
    folder = _copy(canvas, tmp_path)
    run = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public"))
    assert "already holds 2 scorecards" in run.stderr and "--resume" in run.stderr
    fresh = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", folder, "--public", "--resume"))
    assert "already holds" not in fresh.stderr


@pytest.mark.slow
def test_a_hidden_rerun_without_resume_names_the_seed_to_keep(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(SUB, "correct.py"), folder / "alice.py")
    out = tmp_path / "out"
    first = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", out, "--timeout", "5"))
    seed = int(re.search(r"seed (\d+)", first.stdout)[1])
    again = _ok(_hwcheck("grade", folder, "-a", "attention", "-o", out, "--timeout", "5"))
    assert "new seed" in again.stderr and f"--seed {seed}" in again.stderr and "--resume" in again.stderr


def test_the_canvas_column_rule_never_guesses(tmp_path):
    spec = load_spec("attention")
    roster = _canvas_roster(tmp_path / "gradebook.csv", [TITLE], points=["50"])
    assert canvas_columns(roster) == [(TITLE, "50")]  # the totals (`Current Score`, ...) carry no id: no column
    assert canvas_column(canvas_columns(roster), spec)[0] == TITLE
    several = canvas_columns(_canvas_roster(tmp_path / "two.csv", [TITLE, "Homework 2 (4568)"]))
    title, why = canvas_column(several, spec)
    assert title is None and TITLE in why and "Homework 2 (4568)" in why
    named = canvas_columns(_canvas_roster(tmp_path / "named.csv", [TITLE, f"{spec['title']} (7)"]))
    assert canvas_column(named, spec)[0] == f"{spec['title']} (7)"
    twice = canvas_columns(_canvas_roster(tmp_path / "twice.csv", ["attention (7)", "Attention (8)"]))
    assert canvas_column(twice, spec)[0] is None  # two named after it: no guess either
    (tmp_path / "plain.csv").write_text("name,student_id,email\nAnn Lee,s4,al@uni.example\n", encoding="utf-8")
    assert canvas_columns(tmp_path / "plain.csv") is None  # not Canvas's export: no title from it


def test_export_writes_grades_csv_and_results_json_with_the_grades_typed_since(canvas, tmp_path):
    """After grading by hand, `hwcheck export` brings grades.csv and the student's results.json up to the same
    totals as canvas.csv (they stayed at the automatic grading until the next `grade`)."""
    folder = _copy(canvas, tmp_path)
    _fill(folder, ALICE, MANUAL["points"])
    _ok(_hwcheck("export", folder))
    with open(folder / "grades.csv", encoding="utf-8-sig", newline="") as f:
        rows = {r["id"]: r for r in csv.DictReader(f)}
    assert float(rows[ALICE]["total"]) == pytest.approx(TOTAL), rows[ALICE]
    with open(folder / "gradescope" / ALICE / "results.json", encoding="utf-8") as f:
        assert json.load(f)["score"] == pytest.approx(TOTAL)
