"""Tests of checker.render.report: terminal text, Markdown, GitHub annotations, JUnit XML."""

import xml.etree.ElementTree as ET

from checker.render.gradescope import make_output
from checker.render.github import format_markdown, github_annotations
from checker.render.junit import junit_xml
from checker.render.report import format_scorecard
from checker.render.scorecard_text import answer_note, format_points
from checker.judging.scorecard import build_scorecard, student_view

SPEC = {
    "id": "attention",
    "questions": [
        {"id": "Q1", "title": "Context vector", "points": 30},
        {"id": "Q2", "title": "Self-attention", "points": 30},
        {"id": "Q3", "title": "Heads", "points": 30, "hidden_tests": ["test_h1", "test_h2"]},
        {"id": "Q3-text", "title": "Why heads", "points": 10, "manual": True},
    ],
}
MISSING = "Not found in your submission: self_attention."


def rtest(name, result, question, **meta):
    test = {
        "nodeid": f"assignments/attention/test_attention.py::{name}", "outcome": result,
        "setup": {"duration": 0.01, "outcome": "passed"},
        "call": {"duration": 0.25, "outcome": result},
        "teardown": {"duration": 0.0, "outcome": "passed"},
        "metadata": {"question": question, "visibility": "visible", "device": "cpu",
                     "dtype": "float64", "weight": 1, "outcome": None, "message": None,
                     "missing_names": [], **meta},
    }
    if result == "failed":
        test["call"]["crash"] = {"path": "t.py", "lineno": 1, "message": "AssertionError: boom"}
    if result == "skipped":
        test["call"]["longrepr"] = "('t.py', 3, 'Skipped: CUDA is not available')"
    return test


def card(mode="hidden", tests=None, **kw):
    if tests is None:
        tests = [
            rtest("test_scores", "passed", "Q1"),
            rtest("test_weights[float64]", "failed", "Q1",
                  message="weights are wrong\n  expected [0.2, 0.8]\n  got [0.8, 0.2]",
                  where={"file": "alice.py", "line": 12}),
            rtest("test_weights_cuda", "skipped", "Q1", device="cuda"),
            rtest("test_big", "skipped", "Q1", device="cuda"),
            rtest("test_slow", "failed", "Q1", outcome="timeout",
                  message="get_context_vector took more than 10 s"),
            rtest("test_self_a", "failed", "Q2", outcome="error", message=MISSING,
                  missing_names=["self_attention"]),
            rtest("test_heads", "passed", "Q3"),
            rtest("test_h1", "passed", "Q3", visibility="hidden"),
            rtest("test_h2", "failed", "Q3", visibility="hidden", message="hidden: wrong, 100%"),
        ]
    return build_scorecard(
        {"tests": tests}, SPEC,
        submission={"id": "alice", "path": "submissions/alice.py", "sha256": None},
        load={"ok": True, "messages": ["cell 4: plt.show() skipped"]},
        environment={"python": "3.11", "torch": None, "numpy": "1.26", "platform": "Linux",
                     "cuda": None},
        grader={"version": "0.1.0", "mode": mode, "spec_sha256": None}, duration_s=2.0, **kw)


def test_the_student_is_told_whether_their_written_answer_was_found():
    found = student_view(card(answers={"Q3-text": "Each head has its own softmax " * 10}))
    q = found["questions"][-1]
    assert answer_note(q).startswith('Your answer was found (60 words): "Each head has its own softmax Each')
    assert answer_note(q).endswith('..."')
    assert answer_note(q) in format_scorecard(found) and answer_note(q) in make_output(found)
    assert "your answer was found" in format_markdown(found)
    missing = student_view(card(answers={"Q3-text": None}))
    assert "No answer to Q3-text was found: write it in the markdown cell under the '## Q3-text' heading" \
        in format_scorecard(missing)
    assert answer_note(card()["questions"][-1]) is None  # a scorecard that does not say: nothing is claimed


def test_format_points():
    assert [format_points(x) for x in (30, 30.0, 22.5, 4.28571, 0)] == [
        "30", "30", "22.5", "4.29", "0"]


def test_format_scorecard_text():
    sc = card()
    assert sc["score"] == 10 + 20  # Q1: 1 of 3 runnable; Q3: 2 of 3
    text = format_scorecard(student_view(sc))
    lines = text.splitlines()
    assert "attention" in lines[0] and "alice" in lines[0]
    assert "cell 4: plt.show() skipped" in text
    assert any(line.startswith("Q1  10/30") for line in lines)
    assert "FAILED test_weights[float64]" in text
    # multi-line messages are kept, indented
    assert "          expected [0.2, 0.8]" in lines and "          got [0.8, 0.2]" in lines
    assert "TIMEOUT test_slow" in text and "took more than 10 s" in text
    assert "    2 skipped: CUDA is not available" in lines
    assert "test_scores" not in text  # passed tests only in verbose mode
    # the missing name is said once, for the question; its tests are counted, not listed
    assert MISSING in text and "ERROR test_self_a" not in text
    assert "could not run because of this" in text
    assert "+ 2 hidden tests (not shown; counted in the score)" in text
    assert "hidden: wrong" not in text
    assert "Q3-text  pending (graded by a person)" in text
    assert lines[-1] == "Total: 30/100 (10 pending manual)"
    assert "\x1b[" not in text


def test_variants_are_grouped_only_when_they_failed_the_same_way():
    def variant(params, **meta):
        return rtest(f"test_softmax[{params}]", "failed", "Q1", **meta)
    text = format_scorecard(card(tests=[
        variant("1d", message="f(1-d, T=3): values differ\nexpected [1]\n     got [2]"),
        variant("1d-big", message="f(1-d, T=9): values differ\nexpected [3]\n     got [4]"),
        variant("2d", outcome="timeout", message="f(...) did not finish within 10 s"),
        variant("2d-big", outcome="timeout", message="f(...) did not finish within 2 s"),
        variant("2d-t", message="f(2-d, T=4): values differ\nexpected [1]\n     got [2]\nLikely mistake: wrong axis."),
    ]))
    lines = text.splitlines()
    assert sum("test_softmax[" in line for line in lines) == 3, text  # three ways of failing, each shown
    assert "(also failed the same way, same test with other inputs: [1d-big]; -v shows each)" in lines[
        next(i for i, line in enumerate(lines) if "test_softmax[1d]" in line) + 4]
    assert "did not finish" in text and "[2d-big]" in text and "Likely mistake: wrong axis." in text


def test_format_scorecard_public_mode_and_verbose():
    sc = card(mode="public", tests=[rtest("test_heads", "passed", "Q3")])
    text = format_scorecard(sc, verbose=True)
    assert "Q3  30/30" in text
    assert "passed test_heads" in text
    assert "+ 2 hidden tests run at grading time" in text
    assert "Q1  0/30" in text and "No test of this question ran." in text


def test_format_scorecard_color_and_control_characters():
    sc = card(tests=[rtest("test_a", "failed", "Q1", message="bad \x1b[2J value"),
                     rtest("test_b", "skipped", "Q1"), rtest("test_c", "passed", "Q2")])
    text = format_scorecard(sc, color=True)
    assert "\x1b[31m" in text and "\x1b[32m" in text and "\x1b[33m" in text
    assert "\x1b[2J" not in text and "\\x1b[2J" in text
    assert "\x1b[" not in format_scorecard(sc).replace("\\x1b[", "")


def test_format_markdown():
    sc = card()
    md = format_markdown(sc)
    assert "**Total: 30/100 (10 pending manual)**" in md
    assert "| Q1 Context vector | 10/30 |" in md
    assert "| Q3-text Why heads | pending/10 |" in md
    assert "### Failures" in md
    assert "- **Q1 \u203a test_weights[float64]** (failed, cpu, float64)" in md
    assert "  got [0.8, 0.2]" in md
    table = [line for line in md.splitlines() if line.startswith("| Q") and "Question" not in line]
    assert len(table) == 4 and all(line.count(" | ") >= 3 for line in table)


def test_github_annotations_escaping():
    lines = github_annotations(card())
    assert len(lines) == 4  # failed, timeout, error (Q2), hidden failure (Q3)
    first = lines[0]
    assert first.startswith("::error file=alice.py,line=12,title=Q1 \u203a test_weights[float64] (failed)::")
    assert first.endswith("::weights are wrong%0A  expected [0.2, 0.8]%0A  got [0.8, 0.2]")
    assert "\n" not in "".join(lines)
    assert lines[1].startswith("::error title=Q1 \u203a test_slow (timeout)::")
    assert lines[3].endswith("::hidden: wrong, 100%25")
    # the collapsed missing-name message is spelled out where no question text is shown
    assert lines[2].endswith("::" + MISSING)

    tricky = card(tests=[rtest("test_x[a:b,c]", "failed", "Q1", message="50%\r\ndone",
                               where={"file": "C:/x,y.py", "line": 3})])
    (line,) = github_annotations(tricky)
    assert line == ("::error file=C%3A/x%2Cy.py,line=3,"
                    "title=Q1 \u203a test_x[a%3Ab%2Cc] (failed)::50%25%0Adone")  # CR LF is one line break


def test_github_annotations_group_one_message_and_stop_at_ten():
    """GitHub shows 10 error annotations of a step: 89 lines of one mistake hid the rest without a word."""
    same = [rtest(f"test_w[{i}]", "failed", "Q1", message="no 1/sqrt(d_k) scaling", where={"file": "a.py", "line": 4})
            for i in range(30)]
    lines = github_annotations(card(tests=same))
    assert lines == ["::error file=a.py,line=4,title=Q1 \u203a test_w[0] and 29 more (failed)::no 1/sqrt(d_k) scaling"]
    many = [rtest(f"test_{i}", "failed", "Q2", message=f"mistake {i}") for i in range(25)]
    lines = github_annotations(card(tests=many))
    assert len(lines) == 10
    assert lines[8].endswith("::mistake 8")
    assert lines[9] == ("::error title=hwcheck::16 more failing tests: the job summary lists them all, "
                        "or run `hwcheck check` on your submission")


def test_junit_xml_counts():
    xml_text = junit_xml(card())
    root = ET.fromstring(xml_text.split("?>", 1)[1])
    assert root.tag == "testsuites"
    assert (root.get("tests"), root.get("failures"), root.get("errors"), root.get("skipped")) == \
        ("9", "3", "1", "2")
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert list(suites) == ["Q1", "Q2", "Q3", "Q3-text"]
    q1 = suites["Q1"]
    assert (q1.get("tests"), q1.get("failures"), q1.get("errors"), q1.get("skipped")) == \
        ("5", "2", "0", "2")
    cases = q1.findall("testcase")
    assert [c.get("name") for c in cases][:2] == ["test_scores", "test_weights[float64]"]
    assert cases[0].find("failure") is None
    failure = cases[1].find("failure")
    assert failure.get("message") == "weights are wrong" and "got [0.8, 0.2]" in failure.text
    assert cases[4].find("failure").get("type") == "timeout"
    assert cases[2].find("skipped").get("message") == "CUDA is not available"
    assert suites["Q2"].find("testcase/error").get("message") == MISSING
    assert suites["Q3-text"].get("tests") == "0"
    pending = suites["Q3-text"].find("properties/property[@name='pending']")
    assert pending.get("value") == "true"


def test_junit_xml_survives_control_characters():
    sc = card(tests=[rtest("test_a", "failed", "Q1", message="nul \x00 and bell \x07")])
    root = ET.fromstring(junit_xml(sc).split("?>", 1)[1])
    assert root.get("failures") == "1"


def test_a_note_that_several_passing_tests_share_is_told_once():
    note = "right with your own get_attention_weights as the softmax: counted in Q1 only"
    tests = [rtest(f"test_sa[{i}]", "passed", "Q2", message=note) for i in range(6)]
    tests.append(rtest("test_other", "passed", "Q2", message="checked another way"))
    text = format_scorecard(card(tests=tests))
    assert text.count(note) == 1 and text.count("checked another way") == 1, text
    assert "test_sa[0], test_sa[1], test_sa[2], test_sa[3] and 2 more: " + note in text
    assert "test_other: checked another way" in text
    verbose = format_scorecard(card(tests=tests), verbose=True)
    assert verbose.count(note) == 6


def test_github_annotations_group_a_tests_variants_that_fail_the_same_way():
    """Five inputs of one wrong shape took five of the ten annotations GitHub shows, and another mistake was only
    "2 more failing tests": variants of one test failing the same way (numbers aside) share one, as in the
    terminal report."""
    shapes = [rtest(f"test_get_scores[{n}-4]", "failed", "Q1", message=f"get_scores: expected shape ({n}, 4), got (4, {n})",
                    where={"file": "hw1/attention.py", "line": 30}) for n in range(1, 6)]
    other = [rtest(f"test_mistake_{i}", "failed", "Q2", message=f"mistake {i}") for i in range(9)]
    lines = github_annotations(card(tests=shapes + other))
    assert lines[0] == ("::error file=hw1/attention.py,line=30,title=Q1 \u203a test_get_scores[1-4] and 4 more "
                        "(failed)::get_scores: expected shape (1, 4), got (4, 1)")
    assert len(lines) == 10 and lines[9].endswith("::mistake 8")  # every other mistake has its own
    # a variant that fails otherwise keeps an annotation of its own
    odd = shapes + [rtest("test_get_scores[9-4]", "error", "Q1", message="get_scores raised ValueError")]
    assert len(github_annotations(card(tests=odd))) == 2
