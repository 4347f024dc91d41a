"""`hwcheck report` on a real graded batch: its numbers against grades.csv and the scorecards.

One batch of example attention submissions is graded once (hidden mode, module fixture): alice and bob
hand in the same file, carol and dave two independent correct solutions (the example notebook, the
reference), erin, frank and gina named mistakes and a load problem.
"""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys

import pytest

pytest.importorskip("matplotlib")
pytest.importorskip("copydetect")

from checker.records.classreport import data as cdata  # noqa: E402
from checker.spec import example_dirs, load_spec, reference_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = next(d for d in example_dirs("attention") if os.path.isfile(os.path.join(d, "correct.py")))
MANUAL = next(q["id"] for q in load_spec("attention")["questions"] if q.get("manual"))  # the written answer
BATCH = {
    "alice.py": "correct.py", "bob.py": "correct.py",
    "carol.ipynb": "correct_notebook.ipynb", "dave.py": reference_file(load_spec("attention")),
    "erin.py": "no_scaling.py", "frank.py": "syntax_error.py", "gina.py": "softmax_wrong_axis.py",
}

pytestmark = pytest.mark.slow


def _hwcheck(*args, check=True):
    proc = subprocess.run([sys.executable, "-m", "checker.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)
    if check:
        assert proc.returncode == 0, proc.stderr + proc.stdout
    return proc


def page_data(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r'<script type="application/json" id="hwcheck-data">(.*?)</script>', text, re.DOTALL)
    assert m, "the page carries its numbers"
    return text, json.loads(m.group(1))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    base = tmp_path_factory.mktemp("classreport")
    subs = base / "subs"
    subs.mkdir()
    for name, src in BATCH.items():
        shutil.copyfile(os.path.join(EXAMPLES, src), subs / name)
    out = base / "out"
    _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "-j", "2", "--seed", "7")
    return base, subs, out


@pytest.fixture(scope="module")
def report(batch):
    _base, _subs, out = batch
    proc = _hwcheck("report", str(out))
    assert "wrote" in proc.stdout
    text, data = page_data(out / "report.html")
    return text, data


def _gradebook(out):
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as f:
        return list(csv.DictReader(f))


def _cards(out):
    cards = []
    for name in sorted(os.listdir(out)):
        if name.endswith(".json"):
            with open(out / name, encoding="utf-8") as f:
                card = json.load(f)
            if isinstance(card, dict) and card.get("schema_version") == 1:
                cards.append(card)
    return cards


def test_question_means_match_the_gradebook(batch, report):
    _text, data = report
    rows = _gradebook(batch[2])
    assert data["submissions"] == len(rows) == len(BATCH)
    for qid, q in data["questions"].items():
        cells = [float(r[qid]) for r in rows if r[qid] != ""]
        assert q["graded"] == len(cells)
        if cells:
            assert q["mean"] == pytest.approx(statistics.fmean(cells), abs=1e-3)
            assert q["median"] == pytest.approx(statistics.median(cells), abs=1e-3)
    totals = [float(r["total"]) for r in rows]
    assert data["total"]["mean"] == pytest.approx(statistics.fmean(totals), abs=1e-3)
    assert data["total"]["max"] == pytest.approx(float(rows[0]["max_total"]))
    assert data["questions"]["Q1"]["max"] == 30


def test_pass_rates_match_the_scorecards(batch, report):
    _text, data = report
    cards = _cards(batch[2])
    assert data["tests"], "every test is listed"
    for t in data["tests"]:
        outcomes = [x["outcome"] for c in cards for q in c["questions"] if q["id"] == t["question"]
                    for x in q["tests"] if x["name"] == t["name"] and x["outcome"] != "skipped"]
        assert t["runs"] == len(outcomes)
        if outcomes:
            assert t["pass_rate"] == pytest.approx(outcomes.count("passed") / len(outcomes), abs=1e-4)
    hidden = [t for t in data["tests"] if t["visibility"] == "hidden"]
    assert hidden, "hidden mode: the hidden tests are analysed too"


def test_mistakes_are_counted_per_student_and_question(batch, report):
    _text, data = report
    cards = {c["submission"]["id"]: c for c in _cards(batch[2])}
    scaling = [m for m in data["mistakes"] if "1/sqrt(d_k) scaling" in m["hint"]]
    # Q1 and Q2 name it; Q3's multi_head_attention built from the student's own self_attention is not charged
    # again (checker.running.carry), so the scaling mistake is counted where it was made
    assert {"Q1", "Q2"} <= {m["question"] for m in scaling}
    for m in data["mistakes"]:
        assert m["count"] == len(m["ids"]) > 0
        for sid in m["ids"]:  # each named student's scorecard names a hint of that kind in that question
            q = next(q for q in cards[sid]["questions"] if q["id"] == m["question"])
            texts = [q.get("message") or ""] + [t["message"] for t in q["tests"]]
            assert any(cdata.hint_key(h) == cdata.hint_key(m["hint"]) or cdata.hint_key(m["hint"]) in
                       cdata.hint_key(h) for t in texts for h in cdata.hints_of(t)), (sid, m)
    assert any(m["ids"] == ["gina"] and "wrong axis" in m["hint"] for m in data["mistakes"])
    counts = [m["count"] for m in data["mistakes"]]
    assert counts == sorted(counts, reverse=True)


def test_copies_top_the_similarity_ranking_and_independent_solutions_do_not(report):
    _text, data = report
    sim = data["similarity"]
    assert {sim[0]["a"], sim[0]["b"]} == {"alice", "bob"} and sim[0]["score"] == pytest.approx(1.0)
    scores = [p["score"] for p in sim]
    assert scores == sorted(scores, reverse=True)
    independent = next(p for p in sim if {p["a"], p["b"]} == {"alice", "dave"})
    assert independent["score"] < 0.3, independent
    assert sim.index(independent) > 0


def test_the_handout_code_is_left_out(batch):
    from checker.records.classreport import similarity, sources
    codes = {"alice": sources.code_of(batch[1] / "alice.py"), "carol": sources.code_of(batch[1] / "carol.ipynb")}
    with_given = similarity.rank_pairs(codes, sources.given_code("attention"))[0]["score"]
    without = similarity.rank_pairs(codes, [])[0]["score"]
    assert with_given < without - 0.1, (with_given, without)


def test_submissions_to_open_and_feedback_pages(report):
    text, data = report
    why = {a["id"]: " ".join(a["reasons"]) for a in data["attention"]}
    assert "load" in why["frank"] and "SyntaxError" in why["frank"]
    assert "full marks with load notes" in why["carol"]
    assert "alice" not in why
    assert data["manual_not_started"] == [MANUAL]
    for sid in ("alice", "bob", "carol", "dave", "erin", "frank", "gina"):
        assert f'id="student-{sid}"' in text
    feedback = text[text.index('id="feedback"'):]
    hidden = [t["name"] for t in data["tests"] if t["visibility"] == "hidden"]
    assert hidden and not any(f"FAILED {name}" in feedback for name in hidden), "no hidden test in feedback"
    assert "data:image/svg+xml;base64," in text and "http://" not in text.replace("http://www.w3.org", "")


def test_manual_grades_and_a_moved_folder(batch, tmp_path):
    _base, subs, out = batch
    out2 = tmp_path / "out"
    shutil.copytree(out, out2)
    with open(out2 / "manual.csv", "a", encoding="utf-8", newline="") as f:
        f.write(f"alice,{MANUAL},8,clear\r\nbob,{MANUAL},5,thin\r\n")
    _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out2), "--resume")  # rewrites grades.csv
    moved = tmp_path / "moved"
    shutil.copytree(subs, moved)
    os.rename(out2, tmp_path / "elsewhere")
    out2 = tmp_path / "elsewhere"
    shutil.rmtree(subs.parent / "gone", ignore_errors=True)
    os.rename(subs, subs.parent / "gone")
    try:
        proc = _hwcheck("report", str(out2), "-o", str(tmp_path / "r.html"))
        assert "not found" in proc.stderr
        _text, data = page_data(tmp_path / "r.html")
        assert data["similarity"] == [] and "--submissions" in " ".join(data["notes"])
        rows = _gradebook(out2)
        cells = [float(r[MANUAL]) for r in rows if r[MANUAL] != ""]
        assert data["questions"][MANUAL]["graded"] == len(cells) == 2
        assert data["questions"][MANUAL]["mean"] == pytest.approx(statistics.fmean(cells))
        assert data["total"]["mean"] == pytest.approx(statistics.fmean(float(r["total"]) for r in rows), abs=1e-3)
        assert any(f"manual questions pending: {MANUAL}" in " ".join(a["reasons"]) for a in data["attention"])
        _hwcheck("report", str(out2), "-o", str(tmp_path / "r2.html"), "--submissions", str(moved))
        _text, data = page_data(tmp_path / "r2.html")
        assert {data["similarity"][0]["a"], data["similarity"][0]["b"]} == {"alice", "bob"}
    finally:
        os.rename(subs.parent / "gone", subs)


def test_without_the_extra_it_says_what_to_install(monkeypatch):
    import importlib.util

    from click.testing import CliRunner

    from checker.cli import main
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "copydetect" else real(name, *a))
    result = CliRunner().invoke(main, ["report", ROOT])
    assert result.exit_code == 2
    assert "pip install 'hwcheck[report]'" in result.output and "copydetect" in result.output


def test_a_folder_without_scorecards_is_one_line(tmp_path):
    proc = _hwcheck("report", str(tmp_path), check=False)
    assert proc.returncode == 2 and "no hwcheck scorecards" in proc.stderr and "Traceback" not in proc.stderr


def test_item_analysis_shows_a_tests_usual_points():
    """A test's points differ a little from card to card (a skip elsewhere in its question shares out that
    test's points): the item analysis showed the largest (0.5556) rather than what most cards give (0.5085)."""
    from checker.records.classreport.data import _tests

    def card(points, outcome="passed"):
        return {"score": 50, "questions": [{"id": "Q1", "tests": [
            {"name": "t", "outcome": outcome, "points": points if outcome == "passed" else 0, "max_points": points}]}]}
    items = _tests([card(0.5085), card(0.5085), card(0.5556), card(0.5085, "failed")], [("Q1",)])
    assert items[0]["points"] == 0.5085 and items[0]["runs"] == 4 and items[0]["passed"] == 3, items


def test_a_submission_there_without_code_to_read_is_not_called_moved(tmp_path):
    """A TA's probe: a submission the report could not read was said to be "not found where it was graded
    (the folder moved?)". One that is there but holds no code it may read (no .py or .ipynb, a link out of its
    folder) is told apart from one that is gone."""
    from checker.records.classreport.sources import locate_code
    there = tmp_path / "ana"
    there.mkdir()
    (there / "notes.txt").write_text("no code")
    (there / "hw.py").symlink_to("/etc/hostname")  # out of its folder: not read
    gone = tmp_path / "ben.py"
    cards = [{"submission": {"id": "ana", "path": str(there)}}, {"submission": {"id": "ben", "path": str(gone)}}]
    codes, where = locate_code(cards)
    assert codes == {}
    assert where["unreadable"] == ["ana"] and where["missing"] == ["ben"]


def test_a_report_written_while_a_batch_grades_into_the_folder_says_so(batch, tmp_path):
    """A TA's probe (h22): `hwcheck report` during a batch wrote a report of 19 of 43 submissions saying nothing.
    While a batch holds OUTDIR's lock it says the report shows those graded so far; after, nothing."""
    from checker.records.outfolder import lock_outdir
    _base, _subs, out = batch
    lock = lock_outdir(str(out))  # what a running `hwcheck grade` holds
    try:
        proc = _hwcheck("report", str(out), "-o", str(tmp_path / "during.html"))
    finally:
        os.close(lock)
    assert "is writing into" in proc.stderr and "graded so far" in proc.stderr, proc.stderr
    proc = _hwcheck("report", str(out), "-o", str(tmp_path / "after.html"))
    assert "is writing into" not in proc.stderr, proc.stderr
