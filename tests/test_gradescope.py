"""Tests of checker.render.gradescope: scorecard -> Gradescope results.json."""

import json

from checker.render.gradescope import make_failure_results, make_results
from checker.judging.scorecard import SEE_QUESTION_MESSAGE, build_scorecard

SPEC = {
    "id": "attention",
    "questions": [
        {"id": "Q1", "title": "Context vector", "points": 30},
        {"id": "Q2", "title": "Self-attention", "points": 30},
        {"id": "Q3-text", "title": "Why heads", "points": 10, "manual": True},
    ],
}


def rtest(name, outcome, question, *, visibility="visible", message=None, skip=None,
          missing=()):
    test = {
        "nodeid": f"test_attention.py::{name}", "outcome": outcome,
        "setup": {"duration": 0.01, "outcome": "passed"},
        "call": {"duration": 0.02, "outcome": outcome if outcome != "error" else "passed"},
        "teardown": {"duration": 0.0, "outcome": "passed"},
        "metadata": {"question": question, "visibility": visibility, "device": "cpu",
                     "dtype": "float64", "weight": 1,
                     "outcome": "error" if missing else None, "message": message,
                     "missing_names": list(missing)},
    }
    if outcome == "failed":
        test["call"]["crash"] = {"path": "t.py", "lineno": 1, "message": "AssertionError: off by one"}
    if outcome == "skipped":
        test["call"]["longrepr"] = f"('t.py', 3, 'Skipped: {skip}')"
    return test


def scorecard(tests, **kw):
    return build_scorecard(
        {"tests": tests}, SPEC,
        submission={"id": "alice", "path": "alice.py", "sha256": None},
        load={"ok": True, "messages": []},
        environment={"python": "3.11", "torch": None, "numpy": "1.26", "platform": "Linux",
                     "cuda": None},
        grader={"version": "0.1.0", "mode": "hidden", "spec_sha256": None, "seed": 99},
        duration_s=3.25, **kw)


def test_results_fields_numbering_and_visibility():
    card = scorecard([
        rtest("test_a", "passed", "Q1"),
        rtest("test_b", "failed", "Q1"),
        rtest("test_gpu", "skipped", "Q1", skip="CUDA is not available"),
        rtest("test_c", "passed", "Q1", visibility="hidden"),
        rtest("test_d", "passed", "Q2"),
    ])
    results = make_results(card)
    json.dumps(results, allow_nan=False)
    assert results["score"] == 50
    assert results["execution_time"] == 3.25
    assert "Q3-text" in results["output"] and "10 points" in results["output"]
    assert "pending" in results["output"]
    tests = results["tests"]
    assert [t["name"] for t in tests] == [
        "Q1 \u203a test_a", "Q1 \u203a test_b", "Q1 \u203a test_gpu", "Q1 \u203a hidden tests (1)",
        "Q2 \u203a test_d"]
    assert [t["number"] for t in tests] == ["1.1", "1.2", "1.3", "1.4", "2.1"]
    assert [t["status"] for t in tests] == ["passed", "failed", "passed", "passed", "passed"]
    assert [t["max_score"] for t in tests] == [10, 10, 0, 10, 30]
    assert [t["score"] for t in tests] == [10, 0, 0, 10, 30]
    assert [t["visibility"] for t in tests] == [
        "visible", "visible", "visible", "after_published", "visible"]
    assert tests[1]["output"] == "AssertionError: off by one"
    assert tests[3]["output"] == "1 hidden tests (inputs you have not seen): 1 passed."
    assert "CUDA is not available" in tests[2]["output"]
    # The per-test scores add up to the top-level score.
    assert sum(t["score"] for t in tests) == results["score"]
    assert all(set(t) == {"name", "number", "score", "max_score", "status", "output",
                          "visibility"} for t in tests)
    assert "seed" not in json.dumps(results)


def test_missing_names_message_is_shown_in_each_test():
    msg = "Not found in your submission: get_scores. Close spellings that exist: get_score."
    card = scorecard([rtest("test_a", "failed", "Q1", message=msg, missing=["get_scores"]),
                      rtest("test_b", "failed", "Q1", message=msg, missing=["get_scores"])])
    assert card["questions"][0]["tests"][0]["message"] == SEE_QUESTION_MESSAGE
    results = make_results(card)
    assert [t["output"] for t in results["tests"]] == [msg, msg]
    assert msg in results["output"]


def test_status_is_explained():
    card = scorecard([], status="load_failed")
    card["load"] = {"ok": False, "messages": ["SyntaxError in cell 3"]}
    results = make_results(card)
    assert results["score"] == 0 and results["tests"] == []
    assert "could not be loaded" in results["output"]
    assert "SyntaxError in cell 3" in results["output"]


def test_failure_results():
    results = make_failure_results("The submission is not a .py, .ipynb or folder.")
    assert results["score"] == 0
    assert results["output"] == "The submission is not a .py, .ipynb or folder."
    assert results["tests"] == []
    assert isinstance(results["execution_time"], (int, float))
    json.dumps(results, allow_nan=False)


def test_hidden_tests_show_as_one_entry_per_question_with_counts_not_messages():
    """Their messages quote values computed from the hidden inputs: results.json keeps them out."""
    card = scorecard([
        rtest("test_a", "passed", "Q1"),
        rtest("test_h1", "passed", "Q1", visibility="hidden"),
        rtest("test_h2", "failed", "Q1", visibility="hidden", message="expected [0.7316] got [0.5]"),
        rtest("test_b", "passed", "Q1"),
        rtest("test_h3", "failed", "Q2", visibility="hidden", message="max abs error 0.25 at (3, 1)"),
    ])
    results = make_results(card)
    tests = results["tests"]
    assert [(t["number"], t["name"]) for t in tests] == [
        ("1.1", "Q1 \u203a test_a"), ("1.2", "Q1 \u203a test_b"), ("1.3", "Q1 \u203a hidden tests (2)"),
        ("2.1", "Q2 \u203a hidden tests (1)")]
    assert [t["visibility"] for t in tests] == ["visible", "visible", "after_published", "after_published"]
    assert tests[2]["status"] == "failed" and tests[2]["max_score"] == 15 and tests[2]["score"] == 7.5
    assert "2 hidden tests" in tests[2]["output"] and "1 passed, 1 failed" in tests[2]["output"]
    assert "test_h2" in tests[2]["output"]
    text = json.dumps(results)
    assert "0.7316" not in text and "0.25 at" not in text
    assert sum(t["score"] for t in tests) == results["score"]


def test_the_automatic_line_counts_the_automatic_questions_only():
    """A card with a person's grades merged in (manual points, an adjustment) says its automatic points as they
    are, and the total apart (it once said 'Automatic tests: 97.5/90')."""
    card = {"score": 97.5, "max_score": 100, "status": "graded", "questions": [
        {"id": "Q1", "manual": False, "score": 30, "max_score": 30, "tests": []},
        {"id": "Q2", "manual": False, "score": 60, "max_score": 60, "tests": []},
        {"id": "Q3-text", "manual": True, "score": 7.5, "max_score": 10, "pending": False, "tests": []}]}
    out = make_results(card)["output"]
    assert "Automatic tests: 90/90 points." in out, out
    assert "Total, with what a person graded: 97.5/100 points." in out, out
    plain = dict(card, score=90, questions=card["questions"][:2])
    assert "Total" not in make_results(plain)["output"]


def test_a_question_a_person_regraded_is_not_counted_as_automatic():
    """After an override in manual.csv (Q1's 22.78 made 30), results.json said "Automatic tests: 90/90" while
    the tests it lists sum to 82.78: the automatic line keeps the tests' own points, the total says the rest."""
    card = {"score": 97.2222, "max_score": 100, "status": "graded", "questions": [
        {"id": "Q1", "manual": False, "score": 30, "max_score": 30, "tests": []},
        {"id": "Q2", "manual": False, "score": 60, "max_score": 60, "tests": []},
        {"id": "Q3-text", "manual": True, "score": 7.2222, "max_score": 10, "pending": False, "tests": []}],
        "manual_grades": [{"question": "Q1", "kind": "override", "points": 30.0, "was": 22.7778, "comment": ""}]}
    out = make_results(card)["output"]
    assert "Automatic tests: 82.7778/90 points." in out, out
    assert "Total, with what a person graded: 97.2222/100 points." in out, out


def test_a_hidden_entrys_points_carry_no_float_noise():
    """Each test's points are kept to 4 decimals; their sum was a float's (9.344399999999997 in a TA's
    results.json, a probe): the hidden entry's score is kept to 4 decimals too."""
    card = scorecard([rtest(f"test_h{i}", "passed", "Q1", visibility="hidden") for i in range(19)]
                     + [rtest("test_h19", "failed", "Q1", visibility="hidden")])
    q = next(q for q in card["questions"] if q["id"] == "Q1")
    for t in q["tests"]:
        t["points"], t["max_points"] = (0.4918, 0.4918) if t["outcome"] == "passed" else (0.0, 0.4918)
    (hidden,) = [t for t in make_results(card)["tests"] if t["name"].startswith("Q1") and "hidden" in t["name"]]
    assert repr(hidden["score"]) == "9.3442" and repr(hidden["max_score"]) == "9.836", hidden
