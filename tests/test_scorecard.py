"""Tests of checker.judging.scorecard: report + spec -> scorecard, student view, schema."""

import json
import os
import subprocess
import sys
import textwrap

import jsonschema
import pytest

from checker.judging.scorecard import (
    MANUAL_MESSAGE, SEE_QUESTION_MESSAGE, build_scorecard, load_schema, skip_reason,
    student_view, test_name, validate,
)

SPEC = {
    "id": "attention",
    "title": "Scaled dot-product attention by hand (numpy)",
    "questions": [
        {"id": "Q1", "title": "Context vector", "points": 30, "names": ["get_scores"]},
        {"id": "Q2", "title": "Self-attention", "points": 30, "names": ["self_attention"]},
        {"id": "Q3", "title": "Heads", "points": 30, "names": ["split_heads"],
         "hidden_tests": ["test_heads_hidden"]},
        {"id": "Q3-text", "title": "Why heads", "points": 10, "manual": True, "names": [],
         "prompt": "Why?"},
    ],
}

ENV = {"python": "3.11.7", "torch": None, "numpy": "1.26.4", "platform": "Linux", "cuda": None}
SUB = {"id": "alice", "path": "submissions/alice.py", "sha256": "a" * 64}
LOAD = {"ok": True, "messages": []}


def grader(mode="hidden", **extra):
    return {"version": "0.1.0", "mode": mode, "spec_sha256": "b" * 64, **extra}


def build(report, spec=SPEC, mode="hidden", **kw):
    kw.setdefault("status", None)
    return build_scorecard(report, spec, submission=SUB, load=LOAD, environment=ENV,
                           grader=grader(mode), duration_s=1.5, **kw)


def md(question, **kw):
    base = {"question": question, "visibility": "visible", "device": "cpu",
            "dtype": "float64", "weight": 1, "outcome": None, "message": None,
            "missing_names": []}
    base.update(kw)
    return base


def rtest(name, outcome, metadata=None, *, message="AssertionError: wrong", skip=None,
          phase="call"):
    """One pytest-json-report test entry, shaped like the real thing."""
    test = {
        "nodeid": f"assignments/attention/test_attention.py::{name}",
        "lineno": 10,
        "outcome": outcome,
        "keywords": [name],
        "setup": {"duration": 0.001, "outcome": "passed"},
        "call": {"duration": 0.002, "outcome": "passed"},
        "teardown": {"duration": 0.0005, "outcome": "passed"},
    }
    if metadata is not None:
        test["metadata"] = metadata
    if outcome == "failed":
        test["call"].update(outcome="failed", crash={
            "path": "/x/test_attention.py", "lineno": 12, "message": message},
            longrepr="E   " + message)
    elif outcome == "error":
        test["setup"].update(outcome="failed", crash={
            "path": "/x/test_attention.py", "lineno": 3, "message": message})
        del test["call"]
    elif outcome == "skipped":
        reason = f"('/x/test_attention.py', 12, 'Skipped: {skip}')"
        if phase == "setup":
            test["setup"].update(outcome="skipped", longrepr=reason)
            del test["call"]
        else:
            test["call"].update(outcome="skipped", longrepr=reason)
    return test


# ---------------------------------------------------------------------------
# a real pytest-json-report
# ---------------------------------------------------------------------------

REAL_TESTS = textwrap.dedent('''
    import pytest

    def meta(json_metadata, question, **kw):
        json_metadata.update({"question": question, "visibility": "visible",
                              "device": "cpu", "dtype": "float64", "weight": 1,
                              "outcome": None, "message": None, "missing_names": []})
        json_metadata.update(kw)

    def test_scores_pass(json_metadata):
        meta(json_metadata, "Q1")

    def test_scores_fail(json_metadata):
        meta(json_metadata, "Q1")
        assert [1, 2] == [1, 3], "get_scores returned the wrong values\\nexpected [1, 3]"

    def test_scores_cuda(json_metadata):
        meta(json_metadata, "Q1", device="cuda")
        pytest.skip("CUDA is not available")

    @pytest.mark.parametrize("dtype", ["float32", "float64"])
    def test_scores_dtype(json_metadata, dtype):
        meta(json_metadata, "Q1", dtype=dtype)

    @pytest.fixture
    def needs_gpu(json_metadata):
        # like the plugin's `device` fixture: metadata first, then the skip (setup phase)
        meta(json_metadata, "Q2", device="cuda")
        pytest.skip("needs a GPU")

    def test_self_attention_gpu(json_metadata, needs_gpu):
        pass

    def test_self_attention_missing(json_metadata):
        meta(json_metadata, "Q2", outcome="error", missing_names=["self_attention"],
             message="Not found in your submission: self_attention. "
                     "Close spellings that exist: self_atention.")
        raise AssertionError("missing self_attention")

    def test_heads(json_metadata):
        meta(json_metadata, "Q3", weight=2)

    def test_heads_hidden(json_metadata):
        meta(json_metadata, "Q3", visibility="hidden", seed=1234)

    def test_no_metadata():
        pass
''')


@pytest.fixture(scope="module")
def real_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("real")
    (folder / "pytest.ini").write_text("[pytest]\n")
    (folder / "test_hw.py").write_text(REAL_TESTS)
    report_file = folder / "report.json"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTEST_ADDOPTS", "PYTEST_PLUGINS")}
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--json-report",
         f"--json-report-file={report_file}", "test_hw.py"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120)
    assert report_file.exists(), proc.stdout + proc.stderr
    return json.loads(report_file.read_text())


def test_real_report_shape(real_report):
    summary = real_report["summary"]
    assert summary["passed"] == 6 and summary["failed"] == 2 and summary["skipped"] == 2


def test_real_report_scorecard(real_report):
    card = build(real_report)
    validate(card)
    q1, q2, q3, q3t = card["questions"]

    # Q1: pass, fail, skip, two parametrized passes -> 30 over 4 runnable tests.
    by_name = {t["name"]: t for t in q1["tests"]}
    assert set(by_name) == {"test_scores_pass", "test_scores_fail", "test_scores_cuda",
                            "test_scores_dtype[float32]", "test_scores_dtype[float64]"}
    assert by_name["test_scores_cuda"]["outcome"] == "skipped"
    assert by_name["test_scores_cuda"]["max_points"] == 0
    assert by_name["test_scores_cuda"]["message"] == "CUDA is not available"
    assert by_name["test_scores_cuda"]["device"] == "cuda"
    assert by_name["test_scores_dtype[float32]"]["dtype"] == "float32"
    assert by_name["test_scores_fail"]["outcome"] == "failed"
    assert "get_scores returned the wrong values" in by_name["test_scores_fail"]["message"]
    assert "expected [1, 3]" in by_name["test_scores_fail"]["message"]
    assert [t["max_points"] for t in q1["tests"] if t["outcome"] != "skipped"] == [7.5] * 4
    assert q1["score"] == 22.5 and q1["max_score"] == 30
    assert all(t["duration_s"] >= 0 for t in q1["tests"])

    # Q2: one skip from a fixture (setup phase), one missing name -> collapsed message.
    assert q2["score"] == 0
    gpu, missing = q2["tests"]
    assert gpu["outcome"] == "skipped" and gpu["message"] == "needs a GPU"
    assert missing["outcome"] == "error" and missing["max_points"] == 30
    assert missing["message"] == SEE_QUESTION_MESSAGE
    assert q2["message"].startswith("Not found in your submission: self_attention.")

    # Q3: weights 2 and 1 (hidden), both passed -> full marks exactly.
    assert [t["max_points"] for t in q3["tests"]] == [20, 10]
    assert q3["score"] == 30 and q3["hidden_tests"] == 1

    assert q3t["pending"] is True and q3t["score"] == 0 and q3t["max_score"] == 10
    assert card["score"] == 22.5 + 30 and card["max_score"] == 100
    assert [u["nodeid"] for u in card["unassigned"]] == ["test_hw.py::test_no_metadata"]
    json.dumps(card, allow_nan=False)

    view = student_view(card)
    validate(view)
    assert [t["name"] for t in view["questions"][2]["tests"]] == ["test_heads"]
    assert view["questions"][2]["hidden_tests"] == 1
    assert view["questions"][2]["score"] == 30 and view["score"] == card["score"]


# ---------------------------------------------------------------------------
# points
# ---------------------------------------------------------------------------

def test_points_spread_evenly_and_sum_exactly():
    spec = {"id": "a", "questions": [{"id": "Q", "title": "t", "points": 30}]}
    report = {"tests": [rtest(f"test_{i}", "passed", md("Q")) for i in range(7)]}
    card = build(report, spec)
    q = card["questions"][0]
    shares = [t["max_points"] for t in q["tests"]]
    assert shares[:-1] == [4.2857] * 6
    assert shares[-1] == pytest.approx(30 - 6 * 4.2857)
    assert q["score"] == 30 and card["score"] == 30
    assert all(t["points"] == t["max_points"] for t in q["tests"])


def test_a_question_score_is_rounded_once_not_summed_from_rounded_shares():
    """Half of 6 equal tests of 10 points is 5, whichever half passed; adding up the rounded shares
    (1.6667 x 5 and 1.6665) gave 5.0001 or 4.9999, and a total like 84.9999 can miss a grade cutoff."""
    spec = {"id": "a", "questions": [{"id": "Q", "title": "t", "points": 10}]}
    for passing in ({0, 1, 2}, {3, 4, 5}):
        report = {"tests": [rtest(f"test_{i}", "passed" if i in passing else "failed", md("Q")) for i in range(6)]}
        q = build(report, spec)["questions"][0]
        assert q["score"] == 5 and type(q["score"]) is int, passing


def test_points_follow_weights_and_skips_are_free():
    spec = {"id": "a", "questions": [{"id": "Q", "title": "t", "points": 10}]}
    report = {"tests": [
        rtest("test_a", "passed", md("Q", weight=3)),
        rtest("test_b", "failed", md("Q", weight=1)),
        rtest("test_c", "skipped", md("Q", weight=5), skip="CUDA is not available"),
        rtest("test_d", "passed", md("Q")),  # default weight 1
    ]}
    q = build(report, spec)["questions"][0]
    assert [t["max_points"] for t in q["tests"]] == [6, 2, 0, 2]
    assert [t["points"] for t in q["tests"]] == [6, 0, 0, 2]
    assert q["score"] == 8


def test_weight_missing_or_none_means_one():
    spec = {"id": "a", "questions": [{"id": "Q", "title": "t", "points": 9}]}
    m = md("Q")
    del m["weight"]
    report = {"tests": [rtest("test_a", "passed", m),
                        rtest("test_b", "passed", md("Q", weight=None)),
                        rtest("test_c", "passed", md("Q", weight=1))]}
    assert [t["max_points"] for t in build(report, spec)["questions"][0]["tests"]] == [3, 3, 3]


def test_bad_weight_is_a_grader_bug():
    spec = {"id": "a", "questions": [{"id": "Q", "title": "t", "points": 9}]}
    with pytest.raises(ValueError, match="weight"):
        build({"tests": [rtest("test_a", "passed", md("Q", weight=-1))]}, spec)


def test_question_with_only_skipped_tests():
    report = {"tests": [rtest("test_gpu", "skipped", md("Q1"), skip="CUDA is not available",
                              phase="setup")]}
    card = build(report)
    q1 = card["questions"][0]
    assert q1["score"] == 0 and q1["max_score"] == 30
    assert "CUDA is not available" in q1["message"]
    assert q1["tests"][0]["message"] == "CUDA is not available"
    # Q2 has no test at all
    assert card["questions"][1]["message"] and card["questions"][1]["tests"] == []
    validate(card)


def test_manual_question():
    card = build({"tests": []})
    q = card["questions"][3]
    assert q["manual"] is True and q["pending"] is True and q["message"] == MANUAL_MESSAGE
    assert q["score"] == 0 and q["max_score"] == 10 and q["tests"] == []
    assert card["max_score"] == 100 and card["score"] == 0


def test_outcome_and_message_mapping():
    report = {"tests": [
        rtest("test_t", "failed", md("Q1", outcome="timeout", message="took more than 10 s")),
        rtest("test_e", "error", md("Q1"), message="RuntimeError: fixture broke"),
        rtest("test_f", "failed", md("Q1")),
        rtest("test_p", "passed", md("Q1", outcome="error")),  # passed wins
    ]}
    tests = build(report)["questions"][0]["tests"]
    assert [t["outcome"] for t in tests] == ["timeout", "error", "failed", "passed"]
    assert tests[0]["message"] == "took more than 10 s"
    assert tests[1]["message"] == "RuntimeError: fixture broke"
    assert tests[2]["message"] == "AssertionError: wrong"


def test_missing_names_collapse_only_when_all_runnable_tests_miss():
    msg = "Not found in your submission: get_scores. Close spellings that exist: get_score."
    all_missing = {"tests": [
        rtest("test_a", "failed", md("Q1", outcome="error", message=msg, missing_names=["get_scores"])),
        rtest("test_b", "failed", md("Q1", outcome="error", message=msg, missing_names=["get_scores"])),
        rtest("test_c", "skipped", md("Q1"), skip="CUDA is not available"),
    ]}
    q = build(all_missing)["questions"][0]
    assert q["message"] == msg
    assert [t["message"] for t in q["tests"]] == [SEE_QUESTION_MESSAGE] * 2 + ["CUDA is not available"]

    mixed = {"tests": [
        rtest("test_a", "failed", md("Q1", outcome="error", message=msg, missing_names=["get_scores"])),
        rtest("test_b", "failed", md("Q1", message="wrong values")),
    ]}
    q = build(mixed)["questions"][0]
    assert "message" not in q
    assert [t["message"] for t in q["tests"]] == [msg, "wrong values"]


def test_unassigned_and_unknown_questions():
    report = {"tests": [rtest("test_x", "passed"), rtest("test_y", "passed", md("Q9")),
                        rtest("test_z", "passed", md("Q3-text"))]}
    card = build(report)
    assert [u["why"] for u in card["unassigned"]] == [
        "no question metadata", "question 'Q9' is not in the spec",
        "question 'Q3-text' is graded by a person"]
    assert card["score"] == 0
    validate(card)


def test_status_override_and_missing_report():
    card = build(None, status="crashed")
    assert card["status"] == "crashed" and card["score"] == 0
    validate(card)
    assert build({"tests": []})["status"] == "graded"
    with pytest.raises(ValueError):
        build({"tests": []}, status="exploded")


def test_public_mode_announces_hidden_functions_from_spec():
    card = build({"tests": [rtest("test_heads", "passed", md("Q3"))]}, mode="public")
    assert card["questions"][2]["hidden_tests"] == 1
    assert card["questions"][0]["hidden_tests"] == 0


# ---------------------------------------------------------------------------
# helpers, student view, schema
# ---------------------------------------------------------------------------

def test_test_name_and_skip_reason():
    assert test_name("a/test_x.py::test_get_scores[float64]") == "test_get_scores[float64]"
    assert test_name("a/test_x.py::TestA::test_b[x::y]") == "TestA::test_b[x::y]"
    assert skip_reason("('/p/test_x.py', 12, 'Skipped: CUDA is not available')") == \
        "CUDA is not available"
    assert skip_reason("('/p/test_x.py', 12, \"Skipped: it's absent\")") == "it's absent"
    assert skip_reason("just text") == "just text"
    assert skip_reason(None) == ""


def test_student_view_hides_hidden_tests_and_seeds():
    report = {"tests": [
        rtest("test_visible", "passed", md("Q1")),
        rtest("test_hidden", "failed", md("Q1", visibility="hidden", message="secret input 42")),
        rtest("test_hidden2", "passed", md("Q1", visibility="hidden")),
    ]}
    card = build_scorecard(report, SPEC, submission=SUB, load=LOAD, environment=ENV,
                           grader=grader(seed=987654), duration_s=2.0)
    card["questions"][0]["tests"][0]["seed"] = 5
    view = student_view(card)
    q = view["questions"][0]
    assert [t["name"] for t in q["tests"]] == ["test_visible"]
    assert q["hidden_tests"] == 2
    assert q["score"] == 20 and view["score"] == 20
    text = json.dumps(view)
    assert "seed" not in text and "secret input" not in text and "unassigned" not in text
    assert card["grader"]["seed"] == 987654  # the original is untouched
    assert student_view(view) == view  # idempotent
    validate(view)


def test_schema_rejects_bad_scorecards():
    card = build({"tests": [rtest("test_a", "passed", md("Q1"))]})
    validate(card)
    schema = load_schema()
    assert schema["$schema"].endswith("2020-12/schema")
    for breaker in (
        lambda c: c.pop("score"),
        lambda c: c.update(status="fine"),
        lambda c: c["questions"][0]["tests"][0].update(outcome="xfailed"),
        lambda c: c["grader"].update(mode="secret"),
        lambda c: c["submission"].update(sha256="nothex"),
    ):
        broken = json.loads(json.dumps(card))
        breaker(broken)
        with pytest.raises(jsonschema.ValidationError):
            validate(broken)


def test_inputs_are_not_mutated_or_shared():
    report = {"tests": [rtest("test_a", "passed", md("Q1"))]}
    before = json.dumps(report, sort_keys=True)
    env = dict(ENV)
    card = build_scorecard(report, SPEC, submission=SUB, load=LOAD, environment=env,
                           grader=grader(), duration_s=1)
    card["environment"]["python"] = "changed"
    assert env["python"] == "3.11.7"
    assert json.dumps(report, sort_keys=True) == before
