"""Human- and CI-facing renderings of a scorecard.

What it is for: pure text out of a scorecard dict:
- `format_scorecard` — what `hwcheck check` prints (plain, or ANSI colour);
- `format_markdown` — a GitHub Actions step summary (what loading said, bounded; table + failures);
- `error_annotation` / `error_markdown` — with `check --ci`, an error that stopped the check (exit status 2)
  as an annotation and a short step summary;
- `github_annotations` — `::error ...::` workflow-command lines, one per
  failed test, escaped as GitHub requires (`::notice` when the score reaches
  `--min-score`: the run passes, the failures are for information);
- `min_score_line` — what `check --min-score` says: reached or not, and the
  most the automatic tests can give;
- `junit_xml` — JUnit XML (one testsuite per question) for CI test viewers.
Give it the student view (`checker.judging.scorecard.student_view`) for anything a
student sees.
What it is not: it prints nothing and writes no file, and it decides no
points: every number comes from the scorecard.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections import Counter

from checker.render.escape import (for_annotation_data, for_annotation_property, for_markdown, for_markdown_code, for_terminal,
                     for_xml)
from checker.judging.scorecard import SEE_QUESTION_MESSAGE, test_message

__all__ = [
    "answer_note", "format_points", "format_scorecard", "format_markdown",
    "github_annotations", "junit_xml", "min_score_line", "automatic_max", "ALL_NOT_STARTED",
    "short_reason", "skip_groups", "failure_groups", "error_annotation", "error_markdown",
]

_FAILING = ("failed", "error", "timeout")
_LABEL = {"failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT",
          "passed": "passed", "skipped": "skipped"}
_GREEN, _RED, _YELLOW, _BOLD, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"



def format_points(x):
    """22.5 -> '22.5', 30.0 -> '30', 4.28571 -> '4.29' (the scorecard keeps 4 decimals)."""
    x = float(x or 0)
    if x == int(x):
        return str(int(x))
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _safe(text, newlines=True):
    """Student-controlled text for the terminal (checker.render.escape): newlines=False keeps it in its line."""
    return for_terminal(text, newlines)


def _paint(text, code, color):
    return f"{code}{text}{_RESET}" if color else text


def _indent(text, prefix):
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


def _pending_points(scorecard):
    return sum(float(q.get("max_score") or 0) for q in scorecard.get("questions") or []
               if q.get("manual") and q.get("pending", True))


def _total_line(scorecard):
    line = (f"Total: {format_points(scorecard.get('score'))}/"
            f"{format_points(scorecard.get('max_score'))}")
    pending = _pending_points(scorecard)
    if pending:
        line += f" ({format_points(pending)} pending manual)"
    return line


ALL_NOT_STARTED = ("Not started: every question graded automatically is still at the starter's stubs "
                   "(`raise NotImplementedError`).")


def _all_not_started(scorecard):
    auto = [q for q in scorecard.get("questions") or [] if not q.get("manual")]
    return bool(auto) and all(q.get("not_started") for q in auto)


def automatic_max(scorecard):
    """The most the automatic tests can give: the points of the questions not graded by a person."""
    return sum(float(q.get("max_score") or 0) for q in scorecard.get("questions") or [] if not q.get("manual"))


def min_score_line(scorecard, min_score):
    """What `check --min-score` says: whether the score reaches it, and, when not, the most that can be
    earned automatically (the rest of the points are graded by a person, after the deadline)."""
    score, best = float(scorecard.get("score") or 0), automatic_max(scorecard)
    manual = float(scorecard.get("max_score") or 0) - best
    if score >= min_score:
        return f"--min-score {format_points(min_score)} reached: the score is {format_points(score)}."
    line = (f"--min-score {format_points(min_score)} not reached: the score is {format_points(score)}; "
            f"the most the automatic tests can give is {format_points(best)}")
    line += f" (the other {format_points(manual)} points are graded by a person)" if manual > 0 else ""
    if min_score > best:
        line += f", so no submission can reach {format_points(min_score)} here"
    return line + "."


def _hidden_note(scorecard, question):
    shown = sum(1 for t in question.get("tests") or [] if t.get("visibility") == "hidden")
    not_shown = int(question.get("hidden_tests") or 0) - shown
    if not_shown <= 0:
        return None
    plural = "test" if not_shown == 1 else "tests"
    if (scorecard.get("grader") or {}).get("mode") == "public":
        return f"+ {not_shown} hidden {plural} run at grading time"
    return f"+ {not_shown} hidden {plural} (not shown; counted in the score)"


def answer_note(question):
    """What was found of a manual question's written answer: its length and opening, or where to write
    it; None when the scorecard does not say (no `answer` key)."""
    if question.get("answer_unreadable"):  # checked from a kernel that cannot see the notebook's text cells
        return str(question["answer_unreadable"])
    if "answer" not in question:
        return None
    answer = question.get("answer")
    qid = question.get("id")
    if not answer:
        return (f"No answer to {qid} was found: write it in the markdown cell under the '## {qid}' heading, "
                f"after **Your answer:** (in a .py file: comment lines right after a '# {qid}' line).")
    words = len(str(answer).split())
    opening = " ".join(str(answer).split())
    opening = opening if len(opening) <= 100 else opening[:97].rstrip() + "..."
    return f"Your answer was found ({words} word{'s' if words != 1 else ''}): \"{opening}\""


def _failure_kind(message):
    """What a failure says, numbers left out: its first line and its likely mistake, if any."""
    lines = str(message or "").splitlines()
    first = lines[0].split(": ", 1)[-1] if lines else ""
    likely = next((line for line in lines if line.startswith("Likely mistake")), "")
    return re.sub(r"\d+(\.\d+)?(e-?\d+)?", "#", first + "|" + likely)


def short_reason(message, limit=120):
    """A skip reason in one short clause: its first line up to the first ': ' ("judged by test_x, not
    here", "CUDA is not available on this machine"), at most `limit` characters. Variants skipped for one
    reason worded per input (a dtype, a size) become the same clause, so they are counted together."""
    first = (str(message or "").strip().splitlines() or ["no reason given"])[0]
    head = first.split(": ", 1)[0].strip() or "no reason given"
    return head if len(head) <= limit else head[:limit - 3].rstrip() + "..."


def skip_groups(tests, verbose=False):
    """[(reason, count)] of the skipped tests, grouped by their short reason (the full one with verbose)."""
    reasons = Counter((str(t.get("message") or "no reason given") if verbose else short_reason(t.get("message")))
                      for t in tests if t.get("outcome") == "skipped")
    return list(reasons.items())


def _skip_summary(tests, verbose=False):
    groups = skip_groups(tests, verbose)
    if not groups:
        return None
    total = sum(n for _, n in groups)
    parts = [f"{reason}" if n == total else f"{reason} ({n})" for reason, n in groups]
    return f"{total} skipped: {'; '.join(parts)}"


def failure_groups(tests):
    """[(the first failing variant, [the other variants' names])]: the variants of one test that failed the
    same way (same outcome, same message up to its numbers), in order, as `check` prints them."""
    groups, order = {}, []
    for t in tests:
        if t.get("outcome") not in _FAILING:
            continue
        base = str(t.get("name", "")).split("[")[0]
        key = (base, t.get("outcome"), _failure_kind(t.get("message")))
        if key in groups:
            groups[key][1].append(str(t.get("name", ""))[len(base):] or base)
        else:
            groups[key] = (t, [])
            order.append(key)
    return [groups[k] for k in order]


def _where(test):
    bits = [b for b in (test.get("device"), test.get("dtype")) if b]
    return f"  ({', '.join(bits)})" if bits else ""


def _place(where):
    """'FILE, In [7], line L' (a notebook's cell as the notebook shows it), or '' when there is no place."""
    if not (isinstance(where, dict) and where.get("file")):
        return ""
    place = str(where["file"]) + (f", {where.get('label') or 'cell ' + str(where['cell'])}" if where.get("cell") else "")
    return place + (f", line {where['line']}" if where.get("line") else "")


def _defined_at(test):
    """'your `f` is in FILE, cell C, line L' when the failure's place is the student's def it is about."""
    where = test.get("where")
    if not (isinstance(where, dict) and where.get("function") and where.get("file")):
        return ""
    return f"(your `{where['function']}` is in {_place(where)})"


def _load_heading(scorecard):
    """(the line over the load messages, whether it is a warning), as `check` prints it; None without messages."""
    status, load = scorecard.get("status", "graded"), scorecard.get("load") or {}
    if not load.get("messages"):
        return None
    if status == "load_failed":
        return "Loading your submission failed (nothing the assignment asks for was defined):", True
    if status in ("timeout", "crashed") and not load.get("ok", True):
        return "Loading your submission failed:", True
    if load.get("ok", True):
        return "Loading your submission:", False
    return ("Loading your submission: some parts failed (whatever they would have defined is missing; the rest "
            "was graded):", True)


def _load_failed(scorecard):
    """Whether the submission did not load at all: the load messages are the reason every test failed."""
    load = scorecard.get("load") or {}
    return bool(load.get("messages")) and (scorecard.get("status") == "load_failed" or (
        scorecard.get("status") in ("timeout", "crashed") and not load.get("ok", True)))


# The load messages in CI output, bounded: they come from the student's code (an exception's text, a quoted line),
# and a step summary (1 MiB) or an annotation (GitHub cuts it) is no place for all of a long one; the log has them.
MAX_LOAD_MESSAGES, MAX_LOAD_MESSAGE_CHARS = 10, 1500


def _bounded_load_messages(scorecard, count=MAX_LOAD_MESSAGES, chars=MAX_LOAD_MESSAGE_CHARS):
    messages = [str(m) for m in (scorecard.get("load") or {}).get("messages") or []]
    out = [m if len(m) <= chars else m[:chars - 3].rstrip() + "..." for m in messages[:count]]
    if len(messages) > count:
        out.append(f"... and {len(messages) - count} more (the log of the check shows them all)")
    return out


_DROP = object()


def format_scorecard(scorecard, *, color=False, verbose=False):
    """The text `hwcheck check` prints for one scorecard (no trailing newline)."""
    submission = scorecard.get("submission") or {}
    header = f"hwcheck: {scorecard.get('assignment')} - submission {submission.get('id')}"
    if submission.get("path") and submission.get("path") != submission.get("id"):
        header += f" ({submission['path']})"
    lines = [_paint(_safe(header, False), _BOLD, color)]
    status = scorecard.get("status", "graded")
    if status != "graded":
        lines.append(_paint(f"Status: {_safe(str(status).replace('_', ' '), False)}", _RED, color))
    load = scorecard.get("load") or {}
    heading = _load_heading(scorecard)
    if heading:
        lines.append(_paint(heading[0], _YELLOW, color) if heading[1] else heading[0])
        for message in load["messages"]:
            lines.append(_indent(_safe(message), "    "))
    if _all_not_started(scorecard):
        lines.append(_paint(ALL_NOT_STARTED, _YELLOW, color))
    lines.append("")

    for question in scorecard.get("questions") or []:
        qid, title = _safe(question.get("id"), False), _safe(question.get("title") or "", False)
        if question.get("manual"):
            state = "pending (graded by a person)" if question.get("pending", True) else \
                f"{format_points(question.get('score'))}/{format_points(question.get('max_score'))}"
            lines.append(f"{qid}  {_paint(state, _YELLOW, color)}  {title}".rstrip())
            note = answer_note(question)
            if note:
                lines.append(_indent(_safe(note), "    "))
            continue
        tests = question.get("tests") or []
        score = f"{format_points(question.get('score'))}/{format_points(question.get('max_score'))}"
        failing = [t for t in tests if t.get("outcome") in _FAILING]
        ran = [t for t in tests if t.get("outcome") != "skipped"]
        code = _RED if failing else (_GREEN if ran else _YELLOW)
        lines.append(f"{_paint(qid, _BOLD, color)}  {_paint(score, code, color)}  {title}".rstrip())
        if question.get("message"):
            lines.append(_indent(_safe(question["message"]), "    "))
        shown = {}  # base test name -> the variants not printed in full
        placeholders = []
        covered = [t for t in tests if t.get("outcome") != "passed" and t.get("message") == SEE_QUESTION_MESSAGE]
        if covered and not verbose:  # the question's message says it once for all of them
            plural = "s" if len(covered) != 1 else ""
            lines.append(f"    ({len(covered)} test{plural} failed because of this)" if question.get("not_started")
                         else f"    ({len(covered)} test{plural} could not run because of this)")
            tests = [t for t in tests if t not in covered]
        noted = {}  # a note on how passing tests were checked -> the index of its line
        told = set()  # "Likely mistake: ..." paragraphs already shown under this question
        for test in tests:
            outcome = test.get("outcome")
            if outcome == "passed" and test.get("message"):  # a note on how it was checked, told once
                note = str(test["message"])
                if note in noted and not verbose:
                    noted[note][1].append(str(test.get("name")))
                    continue
                noted[note] = (len(lines), [str(test.get("name"))])
                lines.append(note)
                continue
            if outcome == "skipped" or (outcome == "passed" and not verbose):
                continue
            base = str(test.get("name", "")).split("[")[0]
            key = (base, outcome, _failure_kind(test.get("message")))  # variants that failed the same way
            if not verbose and outcome != "passed" and key in shown:
                shown[key].append(str(test.get("name", ""))[len(base):] or base)
                continue
            if outcome != "passed":
                shown[key] = []
            hidden = " [hidden]" if test.get("visibility") == "hidden" else ""
            label = _paint(_LABEL.get(outcome, str(outcome)),
                           _GREEN if outcome == "passed" else _RED, color)
            extra = ""
            if verbose:
                extra = (f"  {format_points(test.get('points'))}/"
                         f"{format_points(test.get('max_points'))}"
                         f"  {float(test.get('duration_s') or 0):.2f}s")
            lines.append(f"    {label} {_safe(test.get('name'), False)}{hidden}{_safe(_where(test), False)}{extra}")
            if outcome != "passed" and test.get("message"):
                message = str(test["message"])
                if not verbose and "\nLikely mistake: " in message:  # one mistake named once per question
                    head, likely = message.split("\nLikely mistake: ", 1)
                    if likely in told:
                        message = head + "\nLikely mistake: the same as above."
                    told.add(likely)
                lines.append(_indent(_safe(message), "        "))
            if outcome != "passed" and _defined_at(test):
                lines.append(f"        {_safe(_defined_at(test), False)}")
            if outcome != "passed":
                lines.append(_DROP)  # placeholder: the other failing variants of this test go here
                placeholders.append((len(lines) - 1, key))
        for note, (index, names) in noted.items():
            shown_names = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")
            lines[index] = (f"    {_paint('passed', _GREEN, color)} {_safe(shown_names, False)}: {_safe(note)}")
        for index, key in placeholders:
            rest = shown.get(key) or []
            lines[index] = (f"        (also failed the same way, same test with other inputs: "
                            f"{_safe(', '.join(rest[:8]), False)}"
                            f"{f' and {len(rest) - 8} more' if len(rest) > 8 else ''}; -v shows each)"
                            if rest else _DROP)
        skipped = None if question.get("not_started") and not verbose else _skip_summary(tests, verbose)
        if skipped:
            lines.append("    " + _paint(_safe(skipped), _YELLOW, color))
        hidden = _hidden_note(scorecard, question)
        if hidden:
            lines.append("    " + hidden)

    if scorecard.get("unassigned"):
        lines.append("")
        lines.append(_paint(f"Grader bug: {len(scorecard['unassigned'])} tests belong to no question:",
                            _RED, color))
        for item in scorecard["unassigned"]:
            lines.append(f"    {_safe(item.get('nodeid'), False)} ({_safe(item.get('why', ''), False)})")
    lines.append("")
    lines.append(_paint(_total_line(scorecard), _BOLD, color))
    return "\n".join(line for line in lines if line is not _DROP)


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
    out.append(f"**{_total_line(scorecard)}**")
    if min_score is not None:
        out += ["", _md_cell(min_score_line(scorecard, min_score))]
    if _all_not_started(scorecard):
        out += ["", _md_cell(ALL_NOT_STARTED)]
    if scorecard.get("status", "graded") != "graded":
        out += ["", f"Status: **{_md_cell(str(scorecard['status']).replace('_', ' '))}**"]
    heading = _load_heading(scorecard)
    if heading:  # before the table, as `check` prints them: a statement that raised is why points are missing
        messages = for_markdown_code("\n".join(_bounded_load_messages(scorecard)))
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
        hidden = _hidden_note(scorecard, question)
        if hidden:
            summary = f"{summary}, {hidden}" if summary else hidden
        out.append(f"| {_md_cell(name)} | {format_points(question.get('score'))}/"
                   f"{format_points(question.get('max_score'))} | {_md_cell(summary)} "
                   f"| {_md_cell(question.get('message') or '')} |")
        for test in question.get("tests") or []:
            if test.get("outcome") in _FAILING and not question.get("not_started"):
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
    if _load_failed(scorecard):  # why every test failed ("not valid notebook JSON"), not only what is missing
        head.append(f"::{level} title={_escape_property('hwcheck › your submission did not load')}::"
                    + _escape_data("\n".join(_bounded_load_messages(scorecard, count=5, chars=600))))
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
            if test.get("outcome") not in _FAILING:
                continue
            base = str(test.get("name", "")).split("[")[0]
            key = (str(question.get("id")), base, test.get("outcome"), _failure_kind(test.get("message")))
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
                    message = f"{message}\n{_defined_at(test) or '(at ' + _place(where) + ')'}"
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


# ---------------------------------------------------------------------------
# JUnit XML
# ---------------------------------------------------------------------------

def _xml_text(text):
    return for_xml(text)


def junit_xml(scorecard):
    """JUnit XML text: one <testsuite> per question, one <testcase> per test.

    failed and timeout -> <failure> (type "failed"/"timeout"), error -> <error>,
    skipped -> <skipped>. A manual question is an empty suite with a
    `pending` property. Test properties carry points, device and dtype.
    """
    assignment = str(scorecard.get("assignment") or "")
    root = ET.Element("testsuites", name=_xml_text(assignment))
    totals = Counter()
    total_time = 0.0
    for question in scorecard.get("questions") or []:
        tests = question.get("tests") or []
        counts = Counter(t.get("outcome") for t in tests)
        q_time = sum(float(t.get("duration_s") or 0) for t in tests)
        suite = ET.SubElement(root, "testsuite", {
            "name": _xml_text(question.get("id")),
            "tests": str(len(tests)),
            "failures": str(counts["failed"] + counts["timeout"]),
            "errors": str(counts["error"]),
            "skipped": str(counts["skipped"]),
            "time": f"{q_time:.6f}",
        })
        props = ET.SubElement(suite, "properties")
        for key in ("title", "score", "max_score"):
            ET.SubElement(props, "property", name=key, value=_xml_text(question.get(key, "")))
        if question.get("manual"):
            ET.SubElement(props, "property", name="pending",
                          value=str(bool(question.get("pending", True))).lower())
        if question.get("message"):
            ET.SubElement(props, "property", name="message", value=_xml_text(question["message"]))
        for test in tests:
            case = ET.SubElement(suite, "testcase", {
                "classname": _xml_text(f"{assignment}.{question.get('id')}"),
                "name": _xml_text(test.get("name")),
                "time": f"{float(test.get('duration_s') or 0):.6f}",
            })
            outcome = test.get("outcome")
            message = _xml_text(test_message(question, test))
            first = message.split("\n", 1)[0]
            if outcome in ("failed", "timeout"):
                ET.SubElement(case, "failure", message=first, type=outcome).text = message
            elif outcome == "error":
                ET.SubElement(case, "error", message=first, type="error").text = message
            elif outcome == "skipped":
                ET.SubElement(case, "skipped", message=first)
            case_props = ET.SubElement(case, "properties")
            for key in ("points", "max_points", "device", "dtype", "visibility"):
                if test.get(key) is not None:
                    ET.SubElement(case_props, "property", name=key, value=_xml_text(test[key]))
        totals.update({"tests": len(tests), "failures": counts["failed"] + counts["timeout"],
                       "errors": counts["error"], "skipped": counts["skipped"]})
        total_time += q_time
    for key in ("tests", "failures", "errors", "skipped"):
        root.set(key, str(totals[key]))
    root.set("time", f"{total_time:.6f}")
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"
