"""Hostile submissions aimed at the trusted side's own passes over student text, names and values.

Issue 17 item 5: the grader's trusted process reads the submission's text (the
written-answer finder), compares the names it defines (the "close spellings"
suggestions) and walks what comes back. A submission must not make any of these
run for hours or raise in the trusted process: each pass is linear and capped,
and when it gives up it costs only what it was for (the written answer, a
suggestion), never the grade. Every test grades a real submission file through
the real path (`Grader.grade`, or `grade_batch` with `resume`) and checks the
outcome first: the code's points are kept, the status is `graded`, and a load
message says what was skipped. The wall-clock bounds are generous (the point
is seconds against hours; timing itself belongs in benchmarks).
"""
import json
import time

import pytest

from checker.records import batch
from sandbox_helpers import GOOD

BOUND_S = 60  # generous: these ran for minutes to hours before the fix; seconds after


@pytest.fixture(scope="module")
def good_score(grader, tmp_path_factory):
    path = tmp_path_factory.mktemp("good") / "good.py"
    path.write_text(GOOD)
    card = grader.grade(str(path), "attention")
    assert card["status"] == "graded" and card["score"] > 0
    return card["score"]


def _grade(grader, path):
    t0 = time.monotonic()
    card = grader.grade(str(path), "attention")
    return card, time.monotonic() - t0


def _notebook(*cells):
    return json.dumps({"cells": [{"cell_type": kind, "metadata": {}, "source": src,
                                  **({"outputs": [], "execution_count": None} if kind == "code" else {})}
                                 for kind, src in cells],
                       "metadata": {}, "nbformat": 4, "nbformat_minor": 5})


def test_a_label_followed_by_20000_empty_comment_lines_costs_only_the_written_answer(grader, good_score, tmp_path):
    # the answer finder's pattern backtracked over the blank lines: 2,800 of them took 55 s, 20,000 hours
    path = tmp_path / "blank_comments.py"
    path.write_text(GOOD + "\n# Q3-text\n" + "#\n" * 20000)
    card, seconds = _grade(grader, path)
    assert card["status"] == "graded" and card["score"] == good_score
    assert seconds < BOUND_S
    notes = [m for m in card["load"]["messages"] if "Written answer Q3-text" in m]
    assert notes and "only the first 2000 lines" in notes[0] and "no answer was found" in notes[0], notes


def test_a_notebook_heading_followed_by_thousands_of_blank_lines(grader, good_score, tmp_path):
    path = tmp_path / "blank_lines.ipynb"
    path.write_text(_notebook(("code", GOOD), ("markdown", "## Q3-text\n" + "\n" * 20000),
                              ("markdown", "   \n" * 5000)))
    card, seconds = _grade(grader, path)
    assert card["status"] == "graded" and card["score"] == good_score
    assert seconds < BOUND_S
    assert any("Written answer Q3-text: only the first 2000 lines" in m for m in card["load"]["messages"])


def test_30000_globals_keep_suggestions_bounded_and_close(grader, good_score, tmp_path):
    # close_names compared every name with difflib and de-duplicated its prefix matches in a list:
    # quadratic in the names a submission defines, for each name it misses
    path = tmp_path / "many_globals.py"
    path.write_text(GOOD.replace("def get_scores(", "def getScores(")
                    + "".join(f"get_scores_{i} = {i}\n" for i in range(30000)))
    card, seconds = _grade(grader, path)
    assert seconds < BOUND_S
    assert card["status"] == "graded" and 0 < card["score"] < good_score  # only get_scores' tests lost
    assert "Close spellings that exist: getScores" in json.dumps(card)


def test_a_200000_deep_attribute_chain_keeps_a_correct_submissions_points(grader, good_score, tmp_path):
    # ast.parse of the whole file raised RecursionError in the trusted process: `crashed`, 0 points
    path = tmp_path / "deep_chain.py"
    path.write_text(GOOD + "\nx = " + ".".join(["a"] * 200000) + "\n\n# Q3-text: each head has its own softmax.\n")
    card, seconds = _grade(grader, path)
    assert card["status"] == "graded" and card["score"] == good_score
    assert seconds < BOUND_S
    assert any("nested too deeply" in m for m in card["load"]["messages"]), card["load"]["messages"]
    manual = [q for q in card["questions"] if q["id"] == "Q3-text"]
    assert manual and "each head has its own softmax." in json.dumps(manual[0])


def test_deep_nesting_in_a_batch_is_graded_and_stays_graded_on_resume(good_score, tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    chain = ".".join(["a"] * 200000)
    (subs / "deep_chain.py").write_text(GOOD + "\ny = " + chain + "\n")
    (subs / "deep_cell.ipynb").write_text(_notebook(("code", GOOD), ("code", "z = " + chain),
                                                    ("markdown", "## Q3-text\nOne softmax per head.")))
    (subs / "deep_json.ipynb").write_text('{"cells": [], "metadata": ' + "[" * 200000 + "]" * 200000 + "}")
    out = tmp_path / "out"
    entries = batch.list_entries(str(subs))
    first = batch.grade_batch(entries, "attention", str(out), jobs=1, mode="public")
    assert not first.internal, first.internal
    cards = {sid: json.loads((out / f"{sid}.json").read_text()) for sid, _ in entries}
    for sid in ("deep_chain", "deep_cell"):
        assert cards[sid]["status"] == "graded" and cards[sid]["score"] == good_score, (sid, cards[sid]["load"])
    assert cards["deep_json"]["status"] != "crashed" and not cards["deep_json"]["grader"].get("internal_error")
    again = batch.grade_batch(entries, "attention", str(out), jobs=1, mode="public", resume=True)
    assert not again.internal and sorted(r["id"] for r in again.resumed) == sorted(sid for sid, _ in entries)
    for sid in ("deep_chain", "deep_cell"):
        card = json.loads((out / f"{sid}.json").read_text())
        assert card["status"] == "graded" and card["score"] == good_score
