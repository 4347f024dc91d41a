"""GitHub Actions' renderings of a scorecard, for `check --ci`: the step summary and the workflow commands.

What it is for: pure text out of a scorecard dict:
- `format_markdown` — a GitHub Actions step summary (what loading said, bounded; table + failures);
- `github_annotations` — `::error ...::` workflow-command lines, one per
  failed test, escaped as GitHub requires (`::notice` when the score reaches
  `--min-score`: the run passes, the failures are for information);
- `error_annotation` / `error_markdown` — an error that stopped the check (exit status 2)
  as an annotation and a short step summary.
Give it the student view (`checker.judging.scorecard.student_view`).

What it is not: the words every rendering shares (`checker.render.scorecard_text`), the terminal's text
(`checker.render.report`), JUnit XML (`checker.render.junit`), or the workflow itself
(`checker.platforms.ci`); it prints nothing and writes no file, and it decides no points.
"""

from __future__ import annotations

import re
from collections import Counter

from checker.render.escape import for_annotation_data, for_annotation_property, for_markdown, for_markdown_code
from checker.render.scorecard_text import (ALL_NOT_STARTED, FAILING, all_not_started, bounded_load_messages,
                                           defined_at, failure_kind, format_points, hidden_note, load_failed,
                                           load_heading, min_score_line, place_of, total_line)
from checker.judging.scorecard import test_message

__all__ = ["format_markdown", "github_annotations", "error_annotation", "error_markdown", "MAX_ANNOTATIONS",
           "MAX_ERROR_CHARS"]


# ---------------------------------------------------------------------------
# GitHub step summary (Markdown)
# ---------------------------------------------------------------------------

def _md_cell(text):
    return for_markdown(text)


def _md_fence(text):
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(3, longest + 1)


def format_markdown(scorecard, min_score=None):
    """A Markdown step summary: total, a table of questions, then each failure.

    A question not started says so once in the table; its failures are not listed one by one.
    With `min_score`, a line says whether the score reaches it (`min_score_line`)."""
    submission = scorecard.get("submission") or {}
    out = [f"## hwcheck: {_md_cell(scorecard.get('assignment'))} - "
           f"{_md_cell(submission.get('id'))}", ""]
    out.append(f"**{total_line(scorecard)}**")
    if min_score is not None:
        out += ["", _md_cell(min_score_line(scorecard, min_score))]
    if all_not_started(scorecard):
        out += ["", _md_cell(ALL_NOT_STARTED)]
    if scorecard.get("status", "graded") != "graded":
        out += ["", f"Status: **{_md_cell(str(scorecard['status']).replace('_', ' '))}**"]
    heading = load_heading(scorecard)
    if heading:  # before the table, as `check` prints them: a statement that raised is why points are missing
        messages = for_markdown_code("\n".join(bounded_load_messages(scorecard)))
        fence = _md_fence(messages)
        out += ["", f"**{_md_cell(heading[0])}**", "", f"{fence}text", *messages.split("\n"), fence]
    out += ["", "| Question | Score | Tests | Note |", "|---|---:|---|---|"]
    failures = []
    for question in scorecard.get("questions") or []:
        name = f"{question.get('id')} {question.get('title') or ''}".strip()
        if question.get("manual"):
            score = ("pending" if question.get("pending", True)
                     else format_points(question.get("score")))
            found = ("" if "answer" not in question else
                     "; your answer was found" if question.get("answer") else "; no answer found")
            out.append(f"| {_md_cell(name)} | {score}/{format_points(question.get('max_score'))} "
                       f"|  | graded by a person{found} |")
            continue
        counts = Counter(t.get("outcome") for t in question.get("tests") or [])
        summary = ", ".join(f"{n} {o}" for o, n in counts.items())
        hidden = hidden_note(scorecard, question)
        if hidden:
            summary = f"{summary}, {hidden}" if summary else hidden
        out.append(f"| {_md_cell(name)} | {format_points(question.get('score'))}/"
                   f"{format_points(question.get('max_score'))} | {_md_cell(summary)} "
                   f"| {_md_cell(question.get('message') or '')} |")
        for test in question.get("tests") or []:
            if test.get("outcome") in FAILING and not question.get("not_started"):
                failures.append((question, test))
    if failures and scorecard.get("status") == "load_failed":  # each says a name is missing; the load says why
        out += ["", "### Failures", "", f"{len(failures)} tests failed because your submission did not load "
                "(see above); the table says which names each question misses."]
    elif failures:
        out += ["", "### Failures", ""]
        for question, test in failures:
            bits = [test.get("outcome")] + [b for b in (test.get("device"), test.get("dtype")) if b]
            out.append(f"- **{_md_cell(question.get('id'))} \u203a {_md_cell(test.get('name'))}** "
                       f"({_md_cell(', '.join(str(b) for b in bits))})")
            message = test_message(question, test)
            message = for_markdown_code(message) if message else message
            if message:
                fence = _md_fence(message)
                out += ["", f"  {fence}text"]
                out += [f"  {line}" for line in message.split("\n")]
                out += [f"  {fence}", ""]
    return "\n".join(out).rstrip("\n") + "\n"


# ---------------------------------------------------------------------------
# GitHub workflow commands
# ---------------------------------------------------------------------------

_escape_data, _escape_property = for_annotation_data, for_annotation_property


MAX_ANNOTATIONS = 10  # GitHub shows 10 error annotations of a step; more would be cut without a word


def github_annotations(scorecard, min_score=None):
    """`::error ...::message` lines for the failed, error or timed-out tests.

    Tests of one question that fail with one message at one place share one
    annotation ("test_x and 2 more"), as do the variants of one test (its other
    inputs) that fail the same way, numbers aside, as the terminal report groups them
    (five inputs of one wrong shape would crowd out other mistakes); a question not
    started is one annotation;
    past `MAX_ANNOTATIONS`, the last line says how many more failed and where to read them.
    A submission that did not load at all (`load_failed`, or a load that timed out or crashed) is one line
    first, with what loading it said (a notebook that is not valid JSON), bounded: the tests' own messages
    say only that the names are missing. A notebook's cell has no line of the file to point at, so an
    annotation at a notebook says in its message where (`In [7], line 3`, as the report does).
    Code the loader left out (`load.left_out`: a statement that raised or did not parse, the likely cause of
    the tests that say a name is not defined) comes first, a `::warning` at its file and line each
    (GitHub shows ten warnings of a step besides ten errors).
    With `min_score`: when the score reaches it the run passes, so the lines are
    `::notice` (information, not errors) and the first says the score reached it; when not,
    the first line is an error saying so and the most the automatic tests can give.
    """
    level = "notice" if min_score is not None and float(scorecard.get("score") or 0) >= min_score else "error"
    head = []
    if min_score is not None:
        head.append(f"::{level} title={_escape_property('hwcheck --min-score')}::"
                    + _escape_data(min_score_line(scorecard, min_score)))
    load = scorecard.get("load") if isinstance(scorecard.get("load"), dict) else {}
    if load_failed(scorecard):  # why every test failed ("not valid notebook JSON"), not only what is missing
        head.append(f"::{level} title={_escape_property('hwcheck › your submission did not load')}::"
                    + _escape_data("\n".join(bounded_load_messages(scorecard, count=5, chars=600))))
    for place in (load.get("left_out") or [])[:MAX_ANNOTATIONS]:
        if not isinstance(place, dict) or not place.get("file"):
            continue
        props = [f"file={_escape_property(place['file'])}"]
        if place.get("line") and not place.get("cell"):  # a notebook cell's line is no line of the file
            props.append(f"line={_escape_property(place['line'])}")
        props.append(f"title={_escape_property('hwcheck › part of your code did not run')}")
        head.append(f"::warning {','.join(props)}::" + _escape_data(
            f"{place.get('text', '')} (what it would have defined is missing; the rest was graded)"))
    variants = {}  # one test's variants that failed the same way (as the terminal report groups them)
    for question in scorecard.get("questions") or []:
        for test in question.get("tests") or []:
            if test.get("outcome") not in FAILING:
                continue
            base = str(test.get("name", "")).split("[")[0]
            key = (str(question.get("id")), base, test.get("outcome"), failure_kind(test.get("message")))
            if key in variants:
                variants[key][1].append(test)
                continue
            props = []
            where = test.get("where")
            message = test_message(question, test) or test.get("outcome")
            if isinstance(where, dict) and where.get("file"):
                props.append(f"file={_escape_property(where['file'])}")
                if where.get("line") and not where.get("cell") and not question.get("not_started"):
                    props.append(f"line={_escape_property(where['line'])}")  # a notebook cell's line is no line of the file
                elif where.get("cell") and not question.get("not_started"):  # so the message says which cell
                    message = f"{message}\n{defined_at(test) or '(at ' + place_of(where) + ')'}"
            variants[key] = (tuple(props), [test], message)
    groups = {}  # and tests that fail with one message at one place
    for (qid, *_), (props, tests, message) in variants.items():
        groups.setdefault((qid, props, message), []).extend(tests)
    lines = []
    for (qid, props, message), tests in groups.items():
        outcomes = sorted({str(t.get("outcome")) for t in tests})
        what = str(tests[0].get("name")) + (f" and {len(tests) - 1} more" if len(tests) > 1 else "")
        title = f"{qid} \u203a {what} ({', '.join(outcomes)})"
        lines.append(f"::{level} {','.join([*props, f'title={_escape_property(title)}'])}::{_escape_data(message)}")
    room = MAX_ANNOTATIONS - sum(1 for h in head if not h.startswith("::warning"))
    if len(lines) > room:
        rest = sum(len(ts) for ts in list(groups.values())[room - 1:])
        lines = lines[:room - 1] + [
            f"::{level} title={_escape_property('hwcheck')}::"
            + _escape_data(f"{rest} more failing tests: the job summary lists them all, "
                           "or run `hwcheck check` on your submission")]
    return head + lines


MAX_ERROR_CHARS = 2000  # an error's text can quote a loader message, so a student's text: bounded as those are


def _bounded_error(message):
    message = " ".join(str(message).split()) or "hwcheck stopped with an error"
    return message if len(message) <= MAX_ERROR_CHARS else message[:MAX_ERROR_CHARS - 3].rstrip() + "..."


def error_annotation(message):
    """The `::error` line of an error that stopped `check --ci` before any test ran (exit status 2: no assignment
    recognised, a file that is not a submission): without it the job went red with no annotation at all."""
    return f"::error title={_escape_property('hwcheck › the check did not run')}::" + _escape_data(
        _bounded_error(message))


def error_markdown(submission, message):
    """The step summary of an error that stopped `check --ci` (exit status 2): what it said, and that no test ran."""
    return (f"## hwcheck: {_md_cell(submission)}\n\n**The check did not run: no test ran, nothing was scored.**\n\n"
            f"{_md_cell(_bounded_error(message))}\n")
