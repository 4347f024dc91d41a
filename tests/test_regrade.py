"""One student regraded (--only), -o inside the submissions folder, the gradebook kept current, notes of skipped loads
(a statement that raised, exited or did not parse).

Real example submissions graded through the command line (`hwcheck grade`).
"""
import csv
import json
import os
import shutil

import pytest
from click.testing import CliRunner

from checker.cli import main, resume_command

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = os.path.join(ROOT, "submissions", "attention")


def _class(tmp_path):
    d = tmp_path / "class"
    d.mkdir()
    for sid, example in (("alice", "correct.py"), ("bob", "no_scaling.py"), ("erin", "main_guard.py")):
        shutil.copyfile(os.path.join(EXAMPLES, example), d / f"{sid}.py")
    (d / "sam.py").write_text(open(os.path.join(EXAMPLES, "correct.py")).read()
                              + "\nweights = open('weights.txt').read()\nimport sys\nsys.exit(0)\n\ndef oops(:\n    pass\n")
    return d


def _grade(folder, out, *extra, code=0):
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5",
                                  *extra])
    assert r.exit_code == code, r.output
    return r


def _gradebook(out):
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        return {row["id"]: row for row in csv.DictReader(f)}


def _card(out, sid):
    with open(os.path.join(out, f"{sid}.json"), encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("regrade")
    folder = _class(tmp)
    out = tmp / "out"
    r = _grade(folder, out)
    return folder, out, r


def test_the_summary_prints_the_batch_seed(graded):
    _, out, r = graded
    seed = _card(out, "alice")["grader"]["seed"]
    assert f"seed {seed} " in r.output


def test_only_regrades_the_named_submission_with_the_batchs_seed(graded, tmp_path):
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    seed = _card(out, "alice")["grader"]["seed"]
    before = {sid: os.path.getmtime(out / f"{sid}.json") for sid in ("alice", "bob", "erin", "sam")}
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "bob.py")  # a fixed test, an appeal: bob again
    try:
        r = _grade(folder, out, "--only", "bob")
    finally:
        shutil.copyfile(os.path.join(EXAMPLES, "no_scaling.py"), folder / "bob.py")
    assert _card(out, "bob")["grader"]["seed"] == seed
    assert os.path.getmtime(out / "bob.json") != before["bob"]
    for sid in ("alice", "erin", "sam"):
        assert os.path.getmtime(out / f"{sid}.json") == before[sid], f"{sid} was regraded"
    book = _gradebook(out)
    assert sorted(book) == ["alice", "bob", "erin", "sam"]
    assert book["bob"]["total"] == book["alice"]["total"]
    assert f"seed {seed} " in r.output
    r = _grade(folder, out, "--only", "nobody", code=2)
    assert "no submission 'nobody'" in r.output
    # a late student's file is in the folder, not yet graded: --only bob adds no manual.csv row for them (it
    # did, then called its own row one of no submission graded into this folder)
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "zoe.py")
    try:
        r = _grade(folder, out, "--only", "bob")
    finally:
        os.remove(folder / "zoe.py")
    with open(out / "manual.csv", encoding="utf-8-sig") as f:
        assert "zoe" not in f.read()
    assert "no submission 'zoe'" not in r.output, r.output


def test_an_outdir_equal_to_the_submissions_folder_never_grades_its_own_files(tmp_path):
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copyfile(os.path.join(EXAMPLES, "correct.py"), folder / "alice.py")
    _grade(folder, folder)
    r = _grade(folder, folder)  # the second run sees gradescope/, grades.csv, manual.csv, alice.json
    assert sorted(_gradebook(folder)) == ["alice"]
    assert not os.path.exists(folder / "gradescope.json")
    assert "grading 1 submissions" in r.output
    assert not [ln for ln in r.output.splitlines() if ln.startswith("[") and "gradescope" in ln]
    assert "not graded" not in r.output and "grades.csv (not a" not in r.output
    inside = folder / "graded"  # -o inside the folder, too
    _grade(folder, inside)
    r = _grade(folder, inside)
    assert sorted(_gradebook(inside)) == ["alice"]


def test_a_load_that_skipped_something_is_noted_in_grades_csv(graded):
    _, out, _ = graded
    book = _gradebook(out)
    assert "load skipped 3" in book["sam"]["note"]
    assert "sys.exit" in book["sam"]["note"] and "SyntaxError" in book["sam"]["note"]
    # a statement that raised is said too (a data file the grader's private folder does not hold)
    assert "raised FileNotFoundError" in book["sam"]["note"] and "weights.txt" in book["sam"]["note"]
    assert book["alice"]["note"] == "" and book["bob"]["note"] == ""


def test_the_gradebook_follows_each_scorecard(graded, tmp_path, monkeypatch):
    """A batch stopped after its first scorecard (a kill, Ctrl-C) leaves grades.csv with that row."""
    import checker.records.batch as batch
    folder, _, _ = graded
    out = tmp_path / "out"
    real = batch.grade_one
    calls = []

    def stop_after_one(*args, **kwargs):
        if calls:
            raise KeyboardInterrupt
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(batch, "grade_one", stop_after_one)
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5"])
    assert r.exit_code == 130, r.output
    assert list(_gradebook(out)) == ["alice"]
    assert "interrupted: 1 of 4 submissions are graded and kept" in r.output
    assert f"hwcheck grade {folder} -a attention -o {out} -j 1 --resume --timeout 5" in r.output


def test_a_stop_counts_the_scorecards_that_landed_before_the_batch_heard_of_them(graded, tmp_path, monkeypatch):
    """h11 (5): SIGTERM to a `--cluster local:2` batch said "2 of 10 submissions are graded and kept" while 3
    scorecards were in OUT and grades.csv (a scorecard written, its report not yet made, when the signal came).
    What is said is what OUT keeps: a scorecard that landed is counted, told and in grades.csv, and --resume
    finds as many up to date."""
    import checker.records.batch as batch
    folder, _, _ = graded
    out = tmp_path / "out"
    real = batch.grade_one
    landed = []

    def stopped_once_the_second_landed(*args, **kwargs):
        result = real(*args, **kwargs)  # its scorecard is written
        landed.append(result["id"])
        if len(landed) == 2:
            raise KeyboardInterrupt  # the signal comes before the batch hears of it
        return result

    monkeypatch.setattr(batch, "grade_one", stopped_once_the_second_landed)
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(out), "--timeout", "5"])
    assert r.exit_code == 130, r.output
    assert "interrupted: 2 of 4 submissions are graded and kept" in r.output, r.output
    assert f"[2/4] {landed[1]}" in r.output, r.output  # its progress line too
    assert sorted(_gradebook(out)) == sorted(landed)
    monkeypatch.setattr(batch, "grade_one", real)
    r = _grade(folder, out, "--resume")
    assert "2 up to date" in r.output, r.output


def test_only_an_id_of_no_submission_is_refused_before_a_regrade_is_announced(graded, tmp_path):
    """h11 (cosmetic): `--only nobody` printed "regrading 1 of 6 submissions" before its error."""
    folder, out0, _ = graded
    out = tmp_path / "out"
    shutil.copytree(out0, out)
    r = _grade(folder, out, "--only", "nobody", code=2)
    assert "--only: no submission 'nobody' in the folder graded" in r.output, r.output
    assert "regrading" not in r.output, r.output


def test_the_resume_command_quotes_what_a_shell_would_split():
    assert resume_command("my class", "vit", "out dir", 2, None, True, 7, False, ("cpu",)) == \
        "hwcheck grade 'my class' -a vit -o 'out dir' -j 2 --resume --public --seed 7 --device cpu"


def _stateful_softmax(tmp_path):
    """correct.py whose softmax is wrong on every third call: Q1 loses points, and whether the later
    questions' carried credit holds depends on the order the fresh worker is asked in."""
    src = open(os.path.join(EXAMPLES, "correct.py"), encoding="utf-8").read()
    src = src.replace("def get_attention_weights(scores):\n",
                      "_calls = [0]\n\n\ndef get_attention_weights(scores):\n"
                      "    _calls[0] += 1\n"
                      "    if _calls[0] % 3 == 0:\n"
                      "        return np.full(np.shape(scores), 1.0 / np.shape(scores)[-1])\n", 1)
    path = tmp_path / "stateful.py"
    path.write_text(src, encoding="utf-8")
    return str(path)


def test_a_stateful_function_is_told_so_and_regraded_alike_with_the_same_seed(tmp_path):
    from checker.running.runner import Grader

    def outcomes(seed):
        with Grader(mode="hidden", seed=seed, devices=("cpu",)) as g:
            card = g.grade(_stateful_softmax(tmp_path), "attention")
        return [(t["name"], t["outcome"], t["message"]) for q in card["questions"] for t in q["tests"]]

    first = outcomes(7)
    assert any(o == "failed" for _, o, _ in first)
    # told as what it is (Hypothesis found an input that failed once and passed when asked again)
    assert any(o == "failed" and "different answers to the same inputs" in m for _, o, m in first)
    assert outcomes(7) == first


def _course_copy(tmp_path, monkeypatch):
    """A course's own copy of attention, `hw1`, found through HWCHECK_ASSIGNMENTS (its spec.toml to edit)."""
    course = tmp_path / "course"
    shutil.copytree(os.path.join(ROOT, "assignments", "attention"), course / "hw1",
                    ignore=shutil.ignore_patterns("examples", "__pycache__"))
    spec = course / "hw1" / "spec.toml"
    spec.write_text(spec.read_text().replace('id = "attention"', 'id = "hw1"', 1))
    monkeypatch.setenv("HWCHECK_ASSIGNMENTS", str(course))
    return spec


def _grade_hw1(folder, out, *extra):
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "hw1", "-o", str(out), "--timeout", "5", *extra])
    assert r.exit_code == 0, r.output
    return r


def test_resume_after_the_spec_changed_keeps_the_batchs_seed_and_only_says_the_spec_differs(tmp_path, monkeypatch):
    """r4: after spec.toml changed (a question's points edited), --resume regraded everyone with a NEW random
    seed and said nothing; --only then graded one student out of the new points and the rest out of the old,
    unsaid. --resume keeps the seed of the scorecards it replaces and says why it regrades; --only warns and
    names the command that regrades everyone."""
    spec = _course_copy(tmp_path, monkeypatch)
    folder = tmp_path / "class"
    folder.mkdir()
    for sid, example in (("alice", "correct.py"), ("bob", "no_scaling.py")):
        shutil.copyfile(os.path.join(EXAMPLES, example), folder / f"{sid}.py")
    out = tmp_path / "out"
    _grade_hw1(folder, out)
    seed = _card(out, "alice")["grader"]["seed"]
    spec.write_text(spec.read_text().replace("points = 30", "points = 25", 1))  # Q1: 30 -> 25

    r = _grade_hw1(folder, out, "--resume")
    assert [_card(out, sid)["grader"]["seed"] for sid in ("alice", "bob")] == [seed, seed], r.output
    assert _card(out, "alice")["max_score"] == 95
    assert "grading tests changed" in r.output and f"the batch's seed {seed}" in r.output, r.output

    spec.write_text(spec.read_text().replace("points = 25", "points = 30", 1))  # and back: --only one student
    r = _grade_hw1(folder, out, "--only", "bob")
    assert _card(out, "bob")["grader"]["seed"] == seed
    warning = next(line for line in r.output.splitlines() if "grading tests changed (" in line)
    assert "graded with the old ones (out of 95 points)" in warning and "--resume" in warning, warning
    assert "out of 95 for 1, 100 for 1" in r.output or "out of 100 for 1, 95 for 1" in r.output, r.output
