"""`hwcheck grade` over a folder of mixed submissions: files, formats, -j 2, crashes, kill and resume.

One folder of 11 submissions (correct and broken .py files, notebooks, a
folder, two hostile ones, a syntax error, an empty file) plus entries to skip
is graded once with -j 1 and once with -j 2 (module fixtures); the other
tests read those results. The kill test runs `python -m checker.cli grade` as
a real process and SIGKILLs it.
"""
import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

import checker.records.batch as batch
from checker.records.outfolder import lock_outdir
from checker._version import __version__
from checker.cli import main
from checker.judging.scorecard import validate
from checker.spec import load_spec, reference_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = reference_file(load_spec("attention"))
MANUAL = next(q["id"] for q in load_spec("attention")["questions"] if q.get("manual"))  # the written answer
SPEC = load_spec("attention")
AUTO_POINTS = sum(q["points"] for q in SPEC["questions"] if not q.get("manual"))
# each submission's budget: grace's 17 hanging calls (0.5 s, then 0.125 s each at 5 s) and their reloads (charged
# from the new worker's walls up) spent all of 5 s on a loaded CI machine, so its later questions scored
# otherwise in the -j 1 and -j 2 runs (81.2 and 54.3); at 10 s they take about half of it
TIMEOUT = "10"
SEED = "4242"
GRADESCOPE_TEST_KEYS = {"name", "number", "score", "max_score", "status", "output", "visibility"}


def _notebook(*cells):
    return json.dumps({
        "cells": [{"cell_type": "markdown", "metadata": {}, "source": ["# My homework\n"]}]
        + [{"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": c.splitlines(True)} for c in cells],
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "nbformat": 4, "nbformat_minor": 5})


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    d = tmp_path_factory.mktemp("class")
    src = open(REFERENCE, encoding="utf-8").read()
    good, bad = "return scores / math.sqrt(n)", "return scores / n"
    assert good in src, "the reference changed: update the broken line"
    q1_end = src.index("# --------------------------------------------------------------------------- Q2")
    (d / "alice.py").write_text(src + f"\n# {MANUAL}\n# =Each head has its own softmax.\n")  # correct, answered
    (d / "bob.py").write_text(src.replace(good, bad))                        # broken scaling
    (d / "erin.py").write_text(src.replace("keepdims=True)  # (..., T), rows", "keepdims=False)  # (..., T), rows")
                               if "keepdims=True)  # (..., T), rows" in src else src.replace(good, bad))
    (d / "carol").mkdir()                                                    # a folder
    (d / "carol" / "attention.py").write_text(src)
    (d / "carol" / "NOTES.md").write_text("my notes\n")
    (d / "dave.ipynb").write_text(_notebook(src[:q1_end], src[q1_end:]))     # a notebook, 2 cells
    (d / "frank.ipynb").write_text(_notebook(src[:q1_end]))                  # a notebook with Q1 only
    (d / "hostile.py").write_text("while True:\n    pass\n")                # loops while loading
    (d / "grace.py").write_text(src + "\n\ndef get_scores(matrix, vector):\n    while True:\n        pass\n")
    (d / "syntax.py").write_text(src + "\ndef oops(:\n")                     # a syntax error
    (d / "empty.py").write_text("")                                          # nothing
    (d / "notes.txt").write_text("not a submission\n")                       # skipped
    (d / ".hidden.py").write_text(src)                                       # skipped
    (d / ".git").mkdir()                                                     # skipped
    (d / "late.zip").write_bytes(b"PK\x05\x06" + bytes(18))                  # skipped, and said so
    (d / "OLD.PY").write_text(src)                                           # skipped, and said so
    (d / "__pycache__").mkdir()                                              # skipped
    return d


IDS = ["alice", "bob", "carol", "dave", "empty", "erin", "frank", "grace", "hostile", "syntax"]


def _grade(subs, out, *extra):
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(out),
                                  "--timeout", TIMEOUT, "--seed", SEED, *extra])
    return r


@pytest.fixture(scope="module")
def j1(subs, tmp_path_factory):
    out = tmp_path_factory.mktemp("out-j1")
    r = _grade(subs, out, "--keep-raw")
    assert r.exit_code == 0, r.output
    return out, r


@pytest.fixture(scope="module")
def j2(subs, tmp_path_factory):
    """The same class with -j 2, and stderr taken for a terminal: the progress bar."""
    import checker.cli
    out = tmp_path_factory.mktemp("out-j2")
    t0 = time.monotonic()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checker.cli, "isatty", lambda name: name == "stderr")
        r = _grade(subs, out, "-j", "2")
    assert r.exit_code == 0, r.output
    return out, r, time.monotonic() - t0


def _card(out, sid):
    with open(os.path.join(out, f"{sid}.json"), encoding="utf-8") as f:
        return json.load(f)


def _scorecard_names(out):
    return sorted(n for n in os.listdir(out) if n.endswith(".json") and not n.startswith(".")
                  and not n.endswith(".raw.json"))


# ---------------------------------------------------------------------------
# entries
# ---------------------------------------------------------------------------

def test_list_entries_takes_files_and_folders_and_skips_the_rest(subs, tmp_path):
    entries = batch.list_entries(str(subs))
    assert [sid for sid, _ in entries] == IDS
    assert dict(entries)["carol"] == os.path.join(str(subs), "carol")
    (tmp_path / "bob.py").write_text("")
    (tmp_path / "bob.ipynb").write_text("{}")
    (tmp_path / "bob").mkdir()
    (tmp_path / "eve.raw.py").write_text("")
    (tmp_path / "eve.py").write_text("")
    notes = []
    entries = batch.list_entries(str(tmp_path), notes)
    # none of them was graded as `bob` before, so none takes it (ids are stable: checker.records.entries)
    assert [sid for sid, _ in entries] == ["bob (folder)", "bob.ipynb", "bob.py", "eve", "eve.raw.py"]
    assert dict(entries)["bob (folder)"] == str(tmp_path / "bob")
    assert len(notes) == 2 and "bob is graded as 'bob (folder)'; bob.ipynb is graded as 'bob.ipynb'" in notes[0]


def test_grade_usage_errors_exit_2(subs, tmp_path):
    run = CliRunner().invoke
    assert run(main, ["grade", str(subs), "-o", str(tmp_path / "o")]).exit_code == 2         # no -a
    assert run(main, ["grade", str(subs), "-a", "attention"]).exit_code == 2                 # no -o
    assert run(main, ["grade", str(tmp_path / "nope"), "-a", "attention", "-o", "o"]).exit_code == 2
    assert run(main, ["grade", str(subs), "-a", "attention", "-o", "o", "-j", "-1"]).exit_code == 2
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "readme.txt").write_text("")
    r = run(main, ["grade", str(empty), "-a", "attention", "-o", str(tmp_path / "o")])
    assert r.exit_code == 2 and "no submissions" in r.stderr


# ---------------------------------------------------------------------------
# the -j 1 batch: scorecards, results.json, grades.csv, raw reports, progress
# ---------------------------------------------------------------------------

def test_every_submission_gets_a_valid_scorecard(j1):
    out, _ = j1
    assert _scorecard_names(out) == [f"{sid}.json" for sid in IDS]
    for sid in IDS:
        card = _card(out, sid)
        validate(card)
        assert card["submission"]["id"] == sid and card["assignment"] == "attention"
        assert card["grader"]["mode"] == "hidden" and card["grader"]["version"] == __version__
        assert card["grader"]["seed"] == int(SEED)
        assert not card["grader"].get("internal_error"), card["load"]
    assert not any(n.endswith(".tmp") for n in os.listdir(out))


def test_verdicts_of_the_mixed_submissions(j1):
    out, _ = j1
    cards = {sid: _card(out, sid) for sid in IDS}
    for sid in ("alice", "carol", "dave"):
        assert cards[sid]["score"] == AUTO_POINTS and cards[sid]["status"] == "graded", sid
    for sid in ("bob", "erin", "frank"):
        assert 0 < cards[sid]["score"] < AUTO_POINTS, sid
    assert cards["frank"]["questions"][0]["score"] == cards["frank"]["questions"][0]["max_score"]
    assert cards["hostile"]["status"] == "timeout" and cards["hostile"]["score"] == 0
    assert cards["hostile"]["duration_s"] < 30
    assert cards["grace"]["score"] < AUTO_POINTS
    assert any(t["outcome"] == "timeout" for q in cards["grace"]["questions"] for t in q["tests"])
    # a 5 s budget shrinks the 10 s per-call limit: the hanging get_scores costs Q1 alone
    assert [q["score"] == q["max_score"] for q in cards["grace"]["questions"][:3]] == [False, True, True]
    assert cards["empty"]["score"] == 0 and cards["empty"]["status"] == "load_failed"
    assert cards["empty"]["load"]["ok"] is False
    assert any("empty.py defines nothing" in m for m in cards["empty"]["load"]["messages"])
    assert cards["syntax"]["load"]["ok"] is False
    assert any("SyntaxError" in m for m in cards["syntax"]["load"]["messages"])
    # hidden tests ran (hidden mode) and are marked so
    assert any(t["visibility"] == "hidden" for q in cards["alice"]["questions"] for t in q["tests"])


def test_gradescope_results_follow_the_format(j1):
    out, _ = j1
    for sid in IDS:
        path = os.path.join(out, "gradescope", sid, "results.json")
        with open(path, encoding="utf-8") as f:
            text = f.read()
        results = json.loads(text)  # the whole file is one JSON object: no stray output
        card = _card(out, sid)
        assert isinstance(results["score"], (int, float)) and results["score"] == pytest.approx(card["score"])
        assert isinstance(results["execution_time"], (int, float)) and results["execution_time"] >= 0
        assert isinstance(results.get("output", ""), str)
        assert results["tests"], sid
        numbers = set()
        for t in results["tests"]:
            assert GRADESCOPE_TEST_KEYS <= set(t), t
            assert isinstance(t["name"], str) and t["name"]
            assert re.fullmatch(r"\d+\.\d+", t["number"]) and t["number"] not in numbers
            numbers.add(t["number"])
            assert 0 <= t["score"] <= t["max_score"] + 1e-9
            assert t["status"] in ("passed", "failed")
            assert t["visibility"] in ("visible", "after_published")
            assert isinstance(t["output"], str)
        hidden = {q["id"]: [t for t in q["tests"] if t["visibility"] == "hidden"] for q in card["questions"]}
        assert any(hidden.values())
        summaries = {t["name"]: t for t in results["tests"] if t["visibility"] == "after_published"}
        assert set(summaries) == {f"{qid} \u203a hidden tests ({len(ts)})" for qid, ts in hidden.items() if ts}
        for qid, ts in hidden.items():
            if ts:
                entry = summaries[f"{qid} \u203a hidden tests ({len(ts)})"]
                assert entry["score"] == pytest.approx(sum(t["points"] for t in ts), abs=1e-3)
                assert entry["output"].startswith(f"{len(ts)} hidden tests")
        # a question's score is rounded once (scorecard docstring), its tests' shares each: they agree to
        # half a unit of the 4th decimal per test
        tolerance = 0.00005 * len(results["tests"]) + 0.0001 * len(card["questions"])
        assert sum(t["score"] for t in results["tests"]) == pytest.approx(results["score"], abs=tolerance)


def test_gradebook_csv_opens_with_one_row_per_submission(j1):
    out, _ = j1
    with open(os.path.join(out, "grades.csv"), newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == (["id", "student", "student_id", "total"] + [q["id"] for q in SPEC["questions"]]
                       + ["max_total", "status", "mode", "note"])
    assert [r[0] for r in rows[1:]] == IDS
    for row in rows[1:]:
        card = _card(out, row[0])
        assert float(row[3]) == pytest.approx(card["score"])
        assert row[-3:-1] == [card["status"], "hidden"]
        skipped = card["load"].get("skipped") or []  # what the load left out is flagged for the TA
        row[-1] = "; ".join(p for p in row[-1].split("; ") if not p.startswith("identical code to "))
        assert row[-1] == (f"load skipped {len(skipped)}: " + skipped[0] if skipped else "") or \
            (skipped and row[-1].startswith(f"load skipped {len(skipped)}: "))
        assert len(row) == len(rows[0])


def test_answers_csv_holds_each_written_answer_for_the_person_who_grades_it(j1):
    out, _ = j1
    with open(os.path.join(out, "answers.csv"), newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == ["id", MANUAL] and [r[0] for r in rows[1:]] == IDS
    by_id = dict(rows[1:])
    assert by_id["alice"] == "'=Each head has its own softmax."  # a formula-looking cell is defused
    assert by_id["bob"] == ""
    written = {n: next(q for q in _card(out, n)["questions"] if q["id"] == MANUAL) for n in ("alice", "bob")}
    assert written["alice"]["answer"] == "=Each head has its own softmax."
    assert written["bob"]["answer"] is None
    assert f"wrote {os.path.join(str(out), 'answers.csv')}: the written answers" in j1[1].output


def test_keep_raw_writes_the_pytest_json_report_beside(j1):
    out, _ = j1
    for sid in IDS:
        with open(os.path.join(out, f"{sid}.raw.json"), encoding="utf-8") as f:
            raw = json.load(f)
        assert "tests" in raw and "summary" in raw
        assert "_raw_report" not in _card(out, sid)


def test_plain_progress_lines_and_summary(j1):
    _, r = j1
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("[")]
    assert len(lines) == len(IDS)
    total = f"{sum(q['points'] for q in load_spec('attention')['questions']):g}"
    assert re.fullmatch(r"\[ ?\d+/10\] \w+: [\d.]+/" + total + r" (graded|timeout|load_failed|crashed) \d+\.\ds",
                        lines[0]), lines[0]
    assert {ln.split("]")[1].split(":")[0].strip() for ln in lines} == set(IDS)
    assert "\r" not in r.output
    assert "attention: 10/10 submissions" in r.stdout and "grades.csv" in r.stdout
    skipped = [ln for ln in r.output.splitlines() if "not graded" in ln]  # the summary's list, once
    assert "not graded: 4 entries of the folder graded" in skipped[0], skipped  # .git and __pycache__ go unsaid
    for part in ("'.hidden.py': its name starts with '.'", "'late.zip': an archive: unpack it",
                 "'OLD.PY': rename it to end in lower-case .py", "'notes.txt': not a .py or .ipynb file"):
        assert sum(part in ln for ln in skipped) == 1, skipped


def test_progress_bar_text():
    event = {"id": "alice", "done": 3, "total": 12, "failed": 1, "eta": 75.0, "status": "graded",
             "score": 72.5, "max_score": 100, "seconds": 1.2, "resumed": False, "internal": None}
    bar = batch.progress_bar(event, 100)
    assert "3/12" in bar and "failed 1" in bar and "ETA 1:15" in bar and len(bar) < 100
    assert batch.progress_line(event) == "[ 3/12] alice: 72.5/100 graded 1.2s"


# ---------------------------------------------------------------------------
# -j 2
# ---------------------------------------------------------------------------

def test_progress_bar_on_a_terminal(j2):
    _, r, _ = j2
    bars = [part for part in r.stderr.split("\r") if part.startswith("[")]
    assert len(bars) == len(IDS)
    assert bars[-1].split("]")[1].split()[0] == f"{len(IDS)}/{len(IDS)}"
    assert all("failed" in b and "ETA" in b for b in bars)
    assert "\n[" not in r.stderr  # no plain per-submission lines on a terminal

def test_two_jobs_give_the_same_scores(j1, j2):
    out1, _ = j1
    out2, r2, _ = j2
    assert "-j 2" in r2.stdout
    for sid in IDS:
        a, b = _card(out1, sid), _card(out2, sid)
        validate(b)
        assert (b["score"], b["status"]) == (a["score"], a["status"]), sid
        assert [q["score"] for q in b["questions"]] == [q["score"] for q in a["questions"]], sid
        assert not os.path.exists(os.path.join(out2, f"{sid}.raw.json"))  # no --keep-raw
    with open(os.path.join(out1, "grades.csv")) as f1, open(os.path.join(out2, "grades.csv")) as f2:
        assert f1.read() == f2.read()


def test_a_dying_trusted_worker_loses_nothing_else(subs, tmp_path, monkeypatch):
    """A forked grading process that dies: its submission is crashed, the rest are graded, resume fixes it."""
    real = batch.grade_one

    def dies_on_bob(grader, sid, *args, **kwargs):
        if sid == "bob":
            os._exit(7)
        return real(grader, sid, *args, **kwargs)
    monkeypatch.setattr(batch, "grade_one", dies_on_bob)  # inherited by the forked workers
    entries = [e for e in batch.list_entries(str(subs)) if e[0] in ("alice", "bob", "carol", "dave")]
    events = []
    result = batch.grade_batch(entries, "attention", str(tmp_path), jobs=2, mode="public",
                               on_progress=events.append)
    assert [e["done"] for e in events] == [1, 2, 3, 4]
    assert [r["id"] for r in result.internal] == ["bob"]
    assert "died" in result.internal[0]["internal"] and "exit status 7" in result.internal[0]["internal"]
    bob = _card(tmp_path, "bob")
    validate(bob)
    assert bob["status"] == "crashed" and bob["score"] == 0 and bob["grader"]["internal_error"]
    with open(tmp_path / "gradescope" / "bob" / "results.json") as f:
        assert json.load(f) == {"score": 0, "execution_time": pytest.approx(bob["duration_s"], abs=0.01),
                                "output": f"hwcheck could not grade this submission: "
                                          f"{bob['grader']['internal_error']}", "tests": []}
    for sid in ("alice", "carol", "dave"):
        assert _card(tmp_path, sid)["score"] == AUTO_POINTS

    monkeypatch.setattr(batch, "grade_one", real)
    again = batch.grade_batch(entries, "attention", str(tmp_path), jobs=2, mode="public", resume=True)
    assert sorted(r["id"] for r in again.resumed) == ["alice", "carol", "dave"]
    assert [r["id"] for r in again.graded] == ["bob"] and not again.internal
    assert _card(tmp_path, "bob")["status"] == "graded"


def test_grade_options_reach_the_batch(subs, tmp_path, monkeypatch):
    """The CLI passes its options through, and exits 1 when hwcheck could not grade some submission."""
    seen = {}

    def fake(entries, assignment, outdir, **kwargs):
        seen.update(entries=entries, assignment=assignment, outdir=outdir, **kwargs)
        result = batch.BatchResult(assignment, outdir, len(entries), kwargs["jobs"])
        result.results.append({"id": "bob", "status": "crashed", "score": 0, "max_score": 100,
                               "seconds": 0.1, "internal": "the grading process died", "resumed": False})
        return result
    monkeypatch.setattr(batch, "grade_batch", fake)
    out = subs / "out-inside"  # an OUTDIR inside DIR is not a submission
    out.mkdir()
    try:
        r = CliRunner().invoke(main, ["grade", str(subs), "-a", "vit", "-o", str(out), "-j", "0", "--resume",
                                      "--public", "--keep-raw", "--timeout", "7.5", "--device", "cpu"])
    finally:
        shutil.rmtree(out)  # (it holds .students.json, written before the batch)
    assert r.exit_code == 1, r.output
    assert [sid for sid, _ in seen["entries"]] == IDS
    assert seen["assignment"] == "vit" and seen["outdir"] == str(out)
    assert seen["jobs"] == (os.cpu_count() or 1) and seen["resume"] and seen["keep_raw"]
    assert seen["mode"] == "public" and seen["timeout"] == 7.5 and seen["devices"] == ("cpu",)
    assert seen["seed"] is None
    assert "not graded: bob: the grading process died" in r.stdout and "--resume" in r.stdout


def test_one_batch_at_a_time_per_outdir(subs, tmp_path):
    fd = lock_outdir(str(tmp_path))  # another batch holds OUTDIR
    try:
        r = CliRunner().invoke(main, ["grade", str(subs), "-a", "attention", "-o", str(tmp_path)])
    finally:
        os.close(fd)
    assert r.exit_code == 2 and "another `hwcheck grade` is writing" in r.stderr
    assert not _scorecard_names(tmp_path)


def test_is_current_checks_hash_version_mode_and_status(j1, subs, tmp_path):
    from checker.records import owned
    out, _ = j1
    alice = os.path.join(str(subs), "alice.py")
    shutil.copy(os.path.join(out, "alice.json"), tmp_path / "alice.json")  # a copy hwcheck did not write there
    assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden")
    owned.write_json(str(tmp_path), "alice.json", _card(out, "alice"), kind="scorecard", sid="alice")
    assert batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden")
    assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "public")
    assert not batch.is_current(str(tmp_path), "alice", alice, "vit", "hidden")
    assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden", keep_raw=True)
    assert not batch.is_current(str(tmp_path), "alice", os.path.join(str(subs), "bob.py"), "attention", "hidden")
    card = _card(tmp_path, "alice")
    for key, value in (("version", "0.0.0"), ("spec_sha256", "0" * 64), ("internal_error", "x")):
        changed = json.loads(json.dumps(card))
        changed["grader"][key] = value
        owned.write_json(str(tmp_path), "alice.json", changed, kind="scorecard", sid="alice")
        assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden"), key
    owned.write_text(str(tmp_path), "alice.json", json.dumps(card)[:-20], kind="scorecard", sid="alice")  # cut short
    assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden")
    owned.write_json(str(tmp_path), "alice.json", card, kind="scorecard", sid="alice")
    (tmp_path / "alice.json").write_text(json.dumps(card, indent=1))  # the same card, but not the bytes written
    assert not batch.is_current(str(tmp_path), "alice", alice, "attention", "hidden")


# ---------------------------------------------------------------------------
# kill midway, then --resume
# ---------------------------------------------------------------------------

def _snapshot(out):
    snap = {}
    for name in _scorecard_names(out):
        path = os.path.join(out, name)
        with open(path, "rb") as f:
            snap[name] = (os.stat(path).st_mtime_ns, f.read())
    return snap


def _processes_mentioning(text):
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                cmdline = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if text in cmdline and state != "Z":
            found.append((int(pid), cmdline))
    return found


def test_kill_midway_then_resume_loses_nothing_and_grades_nothing_twice(subs, tmp_path):
    folder = tmp_path / "class"  # the class without its two slow hostile submissions
    shutil.copytree(subs, folder, ignore=shutil.ignore_patterns("hostile.py", "grace.py"))
    ids = [sid for sid in IDS if sid not in ("hostile", "grace")]
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(folder), "-a", "attention", "-o", str(out),
           "--timeout", TIMEOUT, "-j", "2"]  # no --seed: the resumed run must keep the first one
    tmp = tmp_path / "tmp"  # the batch's own temp dir: what a SIGKILL leaves behind shows up there
    tmp.mkdir()
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.is_dir() and _scorecard_names(out) and os.path.isfile(out / "grades.csv"):
                break  # (grades.csv is written as each scorecard lands, not only at the end)
            time.sleep(0.02)
        assert proc.poll() is None, proc.stdout.read().decode()
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.wait(timeout=30)
        proc.stdout.close()
    time.sleep(1.0)  # the forked graders die with their parent (PDEATHSIG)
    assert not _processes_mentioning(str(out)), "grading processes outlived the kill"
    deadline = time.monotonic() + 10  # the zygote, told by PDEATHSIG, kills its workers then cleans up
    while os.listdir(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.listdir(tmp), "the killed batch left temp dirs behind"
    before = _snapshot(out)
    assert before and len(before) < len(ids), "the kill came too late to test anything"
    time.sleep(0.5)
    assert _snapshot(out) == before, "something went on writing after the kill"
    for name in os.listdir(out):  # what is there is complete; leftovers are only hidden temp files
        path = os.path.join(out, name)
        if name.endswith(".json") and not name.startswith("."):
            validate(json.loads(open(path, encoding="utf-8").read()))
        elif os.path.isfile(path):
            assert name.startswith(".") and name.endswith(".tmp") or name in (
                "grades.csv", "answers.csv", "manual.csv", ".hwcheck.lock", ".grades.csv.sha256", ".students.json",
                ".grades-written.json"), name
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:  # as current as the scorecards
        rows = [row[0] for row in list(csv.reader(f))[1:]]  # (but the one or two landing as the kill came)
    assert rows and set(rows) <= {n[:-5] for n in before} and len(before) - len(rows) <= 2

    r = subprocess.run(cmd + ["--resume"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    after = _snapshot(out)
    assert sorted(after) == [f"{sid}.json" for sid in ids]
    lines = {ln.split("] ", 1)[1].split(":")[0]: ln for ln in r.stderr.splitlines() if ln.startswith("[")}
    assert sorted(lines) == ids
    for name, (mtime, content) in before.items():
        assert after[name] == (mtime, content), f"{name} was graded again"
        assert lines[name[:-5]].endswith("(up to date, not regraded)")
    resumed = [ln for ln in r.stderr.splitlines() if "(up to date, not regraded)" in ln]
    assert len(resumed) == len(before)
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]
    with open(out / "grades.csv", newline="", encoding="utf-8-sig") as f:
        assert [row[0] for row in list(csv.reader(f))[1:]] == ids
    for sid in ids:
        validate(_card(out, sid))
        assert os.path.isfile(out / "gradescope" / sid / "results.json")
    assert len({_card(out, sid)["grader"]["seed"] for sid in ids}) == 1  # one seed for the class


def test_a_replacement_worker_reaches_the_zygote_whoever_read_its_ready_message():
    """The zygote says "ready" once per channel. A trusted worker forked to replace a dead one
    cannot know whether the dead one, or the pool's drain, read that message: its first request
    must be answered at once either way, not wait two minutes for a message that never comes."""
    from checker.running.sandbox import Zygote
    with Zygote(channels=2) as z:
        assert z.channel(0)._ask({"op": "status", "pid": 1}) == {"status": None}  # reads "ready" first
        replacement = z.channel(0)
        replacement._ready = set()  # what a process forked before that read knows
        start = time.monotonic()
        assert replacement._ask({"op": "status", "pid": 1}) == {"status": None}
        assert time.monotonic() - start < 5

        z.channels[1].settimeout(120)
        assert json.loads(z.channels[1].recv(65536))["ready"]  # the drain of a dead worker's channel
        start = time.monotonic()
        assert z.channel(1)._ask({"op": "status", "pid": 1}) == {"status": None}
        assert time.monotonic() - start < 5


def test_long_file_names_get_short_distinct_ids_and_the_batch_goes_on(tmp_path):
    """A 245-byte file name: '<id>.raw.json' and the atomic write's temporary would pass 255 bytes."""
    d = tmp_path / "class"
    d.mkdir()
    src = open(REFERENCE, encoding="utf-8").read()
    long1, long2 = "é" * 100 + "x" * 40 + "1", "é" * 100 + "x" * 40 + "2"   # 241 bytes each
    (d / f"{long1}.py").write_text(src)
    (d / f"{long2}.py").write_text("def get_scores(:\n")
    entries = batch.list_entries(str(d))
    ids = [sid for sid, _ in entries]
    assert len(set(ids)) == 2 and all(len(s.encode()) <= batch.MAX_ID_BYTES for s in ids)
    assert all(s.startswith("é" * 60) for s in ids)           # still readable, cut on a character
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(d), "-a", "attention", "-o", str(out), "--timeout", TIMEOUT,
                                  "--keep-raw"])
    assert r.exit_code == 0, r.output
    cards = {sid: _card(out, sid) for sid in ids}
    assert sorted(c["status"] for c in cards.values()) == ["graded", "load_failed"]
    good = next(c for c in cards.values() if c["status"] == "graded")
    assert good["score"] == AUTO_POINTS and good["submission"]["path"].endswith(f"{long1}.py")
    assert not [n for n in os.listdir(out) if n.endswith(".tmp")]
    with open(out / "grades.csv", encoding="utf-8-sig") as f:
        assert len(list(csv.DictReader(f))) == 2


def test_an_outdir_holding_another_assignment_is_refused(j1, subs, tmp_path):
    out, _ = j1
    shutil.copytree(out, tmp_path / "out")  # hwcheck's own scorecards (its records travel with the folder)
    os.unlink(tmp_path / "out" / "grades.csv")
    before = (tmp_path / "out" / "alice.json").read_bytes()
    r = CliRunner().invoke(main, ["grade", str(subs), "-a", "charlm", "-o", str(tmp_path / "out")])
    assert r.exit_code == 2 and "already holds scorecards of attention" in r.stderr, r.output
    assert (tmp_path / "out" / "alice.json").read_bytes() == before and not (tmp_path / "out" / "grades.csv").exists()


def test_scorecards_of_submissions_gone_from_the_folder_are_marked_in_the_gradebook(j1, subs, tmp_path):
    out, _ = j1
    shutil.copytree(out, tmp_path / "out")
    only = tmp_path / "class"
    only.mkdir()
    shutil.copy(subs / "alice.py", only / "alice.py")
    r = CliRunner().invoke(main, ["grade", str(only), "-a", "attention", "-o", str(tmp_path / "out"),
                                  "--resume", "--timeout", TIMEOUT, "--seed", SEED])
    assert r.exit_code == 0, r.output
    assert f"{len(IDS) - 1} older scorecards" in r.stdout and "note column" in r.stdout, r.stdout
    with open(tmp_path / "out" / "grades.csv", newline="", encoding="utf-8-sig") as f:
        notes = {row["id"]: row["note"] for row in csv.DictReader(f)}
    assert notes.pop("alice") == "" and len(notes) == len(IDS) - 1
    assert all(n.startswith("not in the folder graded last: an older scorecard") for n in notes.values())


def test_sigterm_midway_says_how_to_resume_and_leaves_nothing(subs, tmp_path):
    """A scheduler ends a job with SIGTERM (SLURM's time limit, `timeout`, `docker stop`): the batch stops as on
    Ctrl-C, says what it kept and the command that goes on, and leaves no grading process or temp dir."""
    folder = tmp_path / "class"
    shutil.copytree(subs, folder, ignore=shutil.ignore_patterns("hostile.py", "grace.py"))
    out, tmp = tmp_path / "out", tmp_path / "tmp"
    tmp.mkdir()
    cmd = [sys.executable, "-m", "checker.cli", "grade", str(folder), "-a", "attention", "-o", str(out),
           "--timeout", TIMEOUT, "-j", "2"]
    env = {**os.environ, "PYTHONPATH": ROOT, "TMPDIR": str(tmp), "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            if out.is_dir() and _scorecard_names(out):
                break
            time.sleep(0.02)
        assert proc.poll() is None, proc.stdout.read().decode()
        proc.send_signal(signal.SIGTERM)
        said = proc.communicate(timeout=60)[0].decode()
        code = proc.returncode
    finally:
        proc.kill()
        proc.wait()
    assert code == 143, (code, said)  # 128 + SIGTERM, as a shell gives it (it was 130, Ctrl-C's)
    assert "hwcheck: interrupted:" in said and "--resume" in said, said
    assert said.count("hwcheck: interrupted") == 1, said  # said once (it was said twice with -j)
    assert "Traceback" not in said, said
    assert not _processes_mentioning(str(out)), "grading processes outlived the batch"
    deadline = time.monotonic() + 10
    while os.listdir(tmp) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not os.listdir(tmp), "the batch left temp dirs behind"


def test_a_class_graded_as_the_wrong_assignment_is_said_once_in_the_summary(tmp_path):
    """A TA's probe (h22): `-a charlm` on a class of attention homework gave every student 0, and the summary
    said only "load_failed"; each scorecard asked "the right assignment?". The scorecards name the
    assignment the code was written for (load.written_for, in the schema), and the summary says it once."""
    folder = tmp_path / "class"
    folder.mkdir()
    for name, example in (("alice", "correct.py"), ("bob", "no_scaling.py")):
        shutil.copyfile(os.path.join(ROOT, "submissions", "attention", example), folder / f"{name}.py")
    (folder / "carol.py").write_text("x = 1\n")  # defines nothing of any assignment: named by no warning
    out = tmp_path / "out"
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "charlm", "-o", str(out), "--public", "--timeout", "5"])
    assert r.exit_code == 0, r.output
    assert ("warning: 2 of 3 submissions define none of charlm's names and most of attention's: were they "
            "written for attention? (hwcheck grade ... -a attention)") in r.output, r.output
    cards = {n: json.loads((out / f"{n}.json").read_text()) for n in ("alice", "bob", "carol")}
    assert [cards[n]["load"].get("written_for") for n in ("alice", "bob", "carol")] == ["attention", "attention", None]
    for card in cards.values():
        validate(card)
    # graded as the right assignment, nothing is said
    r = CliRunner().invoke(main, ["grade", str(folder), "-a", "attention", "-o", str(tmp_path / "right"),
                                  "--public", "--timeout", "5"])
    assert r.exit_code == 0 and "were they written for" not in r.output, r.output
