"""Tests of checker.records.gradebook: scorecards -> CSV gradebook."""

import csv
import os

from checker.records.gradebook import csv_header, csv_row, write_gradebook
from checker.judging.scorecard import build_scorecard

SPEC = {
    "id": "attention",
    "questions": [
        {"id": "Q1", "title": "Context vector", "points": 30},
        {"id": "Q2", "title": "Self-attention", "points": 30},
        {"id": "Q3-text", "title": "Why heads", "points": 10, "manual": True},
    ],
}


def scorecard(sid, outcomes, status=None):
    tests = []
    for i, (question, outcome) in enumerate(outcomes):
        tests.append({
            "nodeid": f"test_attention.py::test_{i}", "outcome": outcome,
            "setup": {"duration": 0.0, "outcome": "passed"},
            "call": {"duration": 0.0, "outcome": outcome},
            "teardown": {"duration": 0.0, "outcome": "passed"},
            "metadata": {"question": question, "visibility": "visible", "device": "cpu",
                         "dtype": None, "weight": 1, "outcome": None, "message": None,
                         "missing_names": []},
        })
    return build_scorecard(
        {"tests": tests}, SPEC, submission={"id": sid, "path": None, "sha256": None},
        load={"ok": True, "messages": []},
        environment={"python": None, "torch": None, "numpy": None, "platform": None, "cuda": None},
        grader={"version": "0.1.0", "mode": "hidden", "spec_sha256": None},
        duration_s=1.0, status=status)


def test_header_and_row():
    assert csv_header(SPEC) == ["id", "student", "student_id", "total", "Q1", "Q2", "Q3-text", "max_total", "status", "mode", "note"]
    card = scorecard("bob", [("Q1", "passed"), ("Q1", "failed"), ("Q2", "passed")])
    assert csv_row(card) == ["bob", "", "", 45, 15, 30, "", 70, "graded", "hidden", ""]
    assert csv_row(card, SPEC, "older") == ["bob", "", "", 45, 15, 30, "", 70, "graded", "hidden", "older"]


def test_write_gradebook_round_trip(tmp_path):
    cards = [
        scorecard("zoe", [("Q1", "passed"), ("Q2", "passed")]),
        scorecard("al\u00efce, \"the\" first", [("Q1", "passed"), ("Q1", "passed"),
                                                 ("Q1", "failed"), ("Q2", "failed")]),
        scorecard("=HYPERLINK(\"x\")", [], status="load_failed"),
    ]
    path = tmp_path / "out" / "gradebook.csv"
    people = {"zoe": {"student": "Zo\u0065\u0308 M\u0075\u0308ller", "student_id": "=s9"}}  # NFD, formula-like
    write_gradebook(path, cards, SPEC, {"zoe": "-not in the folder"}, people)
    assert path.read_bytes().startswith(b"\xef\xbb\xbfid,student,student_id,total,")  # a BOM: Excel reads \u00ef right
    with open(path, newline="", encoding="utf-8-sig") as f:
        rows = list(csv.reader(f))
    assert rows[0] == csv_header(SPEC)
    assert rows[1:] == [
        ["'=HYPERLINK(\"x\")", "", "", "0", "0", "0", "", "70", "load_failed", "hidden", ""],
        ["al\u00efce, \"the\" first", "", "", "20", "20", "0", "", "70", "graded", "hidden", ""],
        ["zoe", "Zo\u00eb M\u00fcller", "'=s9", "60", "30", "30", "", "70", "graded", "hidden", "'-not in the folder"],
    ]
    assert os.listdir(path.parent) == ["gradebook.csv"]


def test_fractional_points_are_written_plainly(tmp_path):
    card = scorecard("c", [("Q1", "passed"), ("Q1", "failed"), ("Q1", "failed"),
                           ("Q2", "passed")])
    path = tmp_path / "g.csv"
    write_gradebook(path, [card], SPEC)
    with open(path, newline="", encoding="utf-8-sig") as f:
        row = list(csv.reader(f))[1]
    assert row[:6] == ["c", "", "", "40", "10", "30"]
    card = scorecard("d", [("Q1", "passed")] * 6 + [("Q1", "failed")])
    assert csv_row(card)[4] == 25.7143  # 30 * 6/7, rounded once
