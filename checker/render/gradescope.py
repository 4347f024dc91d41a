"""Turn a scorecard into Gradescope's autograder `results.json` dict.

What it is for: `make_results(scorecard)` maps the grader's (full, not
student-view) scorecard to Gradescope's format: one Gradescope test per
visible scorecard test; a question's hidden tests as ONE entry with
visibility `after_published` that gives their points, how many passed and
the names of those that failed, never their messages (those quote values of
the hidden inputs; the README promises hidden tests are shown only as a
count); the automatic
score at the top level (manual questions are left to Gradescope's own manual
grading and only mentioned in `output`). `make_failure_results(message)` is
the file to write when a submission could not be graded at all.
Every text of the dict (the top-level `output`, each test's `name` and
`output`) goes through `checker.render.escape.for_gradescope`: a student's
exception message, load message or file name keeps no raw ESC, bidi
override or other control character there (Gradescope shows it as it is).
What it is not: it writes no file (use `checker.records.atomic.write_json_atomic`,
and print nothing else to that file) and it runs no grading.
"""

from __future__ import annotations

import math

from checker.render.escape import for_gradescope
from checker.render.scorecard_text import answer_note
from checker.judging.scorecard import test_message

__all__ = ["make_results", "make_failure_results", "make_hidden_summary", "SEPARATOR"]

SEPARATOR = " \u203a "  # " › " between question id and test name

_STATUS_TEXT = {
    "load_failed": "Your submission could not be loaded completely; tests that needed it did not pass.",
    "timeout": "Grading ran past its time limit; tests that did not finish earned no points.",
    "crashed": "Grading stopped early (the checker's process ended); tests that did not run earned no points.",
}
_MAX_LOAD_MESSAGES = 5


def _fmt(x):
    x = float(x)
    if x == int(x):
        return str(int(x))
    return f"{x:.4f}".rstrip("0").rstrip(".")


def _number(x):
    x = float(x or 0)
    return x if math.isfinite(x) else 0.0


def make_output(scorecard):
    """The short top-level text: score, status, load messages, question notes, pending manual work."""
    questions = scorecard.get("questions") or []
    manual = [q for q in questions if q.get("manual")]
    auto_max = sum(float(q.get("max_score") or 0) for q in questions if not q.get("manual"))
    # the automatic questions' own points: a card with a person's grades merged in has them in its score too,
    # and a question a person regraded (an override in manual.csv) holds their points: its tests' are `was`
    was = {str(r.get("question")): r.get("was") for r in scorecard.get("manual_grades") or []
           if isinstance(r, dict) and r.get("kind") == "override"}
    auto = (sum(_number(was[str(q.get("id"))] if str(q.get("id")) in was else q.get("score"))
                for q in questions if not q.get("manual")) if questions else scorecard.get("score", 0))
    lines = [f"Automatic tests: {_fmt(_number(auto))}/{_fmt(auto_max)} points."]
    total = _number(scorecard.get("score"))
    if questions and abs(total - _number(auto)) > 1e-9:  # a person's grades and adjustments are in the score
        lines.append(f"Total, with what a person graded: {_fmt(total)}/{_fmt(_number(scorecard.get('max_score')))} "
                     "points.")
    status = scorecard.get("status", "graded")
    if status in _STATUS_TEXT:
        lines.append(_STATUS_TEXT[status])
    messages = (scorecard.get("load") or {}).get("messages") or []
    for message in messages[:_MAX_LOAD_MESSAGES]:
        lines.append(f"Loading: {message}")
    if len(messages) > _MAX_LOAD_MESSAGES:
        lines.append(f"Loading: ... and {len(messages) - _MAX_LOAD_MESSAGES} more messages.")
    for q in questions:
        if not q.get("manual") and q.get("message"):
            lines.append(f"{q['id']}: {q['message']}")
    for q in manual:
        state = "pending, graded by a person" if q.get("pending", True) else "graded by a person"
        note = answer_note(q)
        lines.append(f"{q['id']} ({_fmt(q.get('max_score', 0))} points): {state}." + (f" {note}" if note else ""))
    return for_gradescope("\n".join(lines))


def make_test(question_index, question, test_index, test):
    """One Gradescope test entry from a scorecard test."""
    # Gradescope shows no question-level text: a collapsed message goes in each test.
    message = test_message(question, test)
    outcome = test.get("outcome")
    if outcome == "skipped":
        message = f"Skipped (worth 0 points here): {message}" if message else "Skipped (worth 0 points here)."
    return {
        "name": for_gradescope(f"{question.get('id')}{SEPARATOR}{test.get('name')}"),
        "number": f"{question_index}.{test_index}",
        "score": _number(test.get("points")),
        "max_score": _number(test.get("max_points")),
        # A skipped test is worth 0/0: not a failure.
        "status": "passed" if outcome in ("passed", "skipped") else "failed",
        "output": for_gradescope(message),
        "visibility": "after_published" if test.get("visibility") == "hidden" else "visible",
    }


def make_hidden_summary(question_index, question, number, hidden):
    """One Gradescope entry for a question's hidden tests: points, counts, failed names; no messages."""
    outcomes = [t.get("outcome") for t in hidden]
    failed = [t.get("name") for t in hidden if t.get("outcome") not in ("passed", "skipped")]
    counts = ", ".join(f"{outcomes.count(o)} {o}" for o in ("passed", "failed", "error", "timeout", "skipped")
                       if outcomes.count(o))
    text = f"{len(hidden)} hidden tests (inputs you have not seen): {counts}."
    if failed:
        text += " Not passed: " + ", ".join(str(n) for n in failed[:10]) + (" ..." if len(failed) > 10 else "")
        text += ". The visible tests of this question name the mistake when they catch it."
    return {
        "name": for_gradescope(f"{question.get('id')}{SEPARATOR}hidden tests ({len(hidden)})"),
        "number": f"{question_index}.{number}",
        # a sum of points kept to 4 decimals, to 4 decimals again (9.3444, not 9.344399999999997)
        "score": round(_number(sum(_number(t.get("points")) for t in hidden)), 4),
        "max_score": round(_number(sum(_number(t.get("max_points")) for t in hidden)), 4),
        "status": "failed" if failed else "passed",
        "output": for_gradescope(text),
        "visibility": "after_published",
    }


def make_results(scorecard):
    """Gradescope's results.json dict for a graded scorecard."""
    tests = []
    for qi, q in enumerate(scorecard.get("questions") or [], 1):
        if q.get("manual"):
            continue
        shown = [t for t in q.get("tests") or [] if t.get("visibility") != "hidden"]
        hidden = [t for t in q.get("tests") or [] if t.get("visibility") == "hidden"]
        tests += [make_test(qi, q, ti, t) for ti, t in enumerate(shown, 1)]
        if hidden:
            tests.append(make_hidden_summary(qi, q, len(shown) + 1, hidden))
    return {
        "score": _number(scorecard.get("score")),
        "execution_time": _number(scorecard.get("duration_s")),
        "output": make_output(scorecard),
        "tests": tests,
    }


def make_failure_results(message, *, execution_time=0.0):
    """results.json for a submission that could not be graded: score 0 and the reason."""
    return {
        "score": 0,
        "execution_time": _number(execution_time),
        "output": for_gradescope(message),
        "tests": [],
    }
