"""The terminal report of a scorecard: what `hwcheck check` and `hwcheck show` print.

What it is for: `format_scorecard`, pure text out of a scorecard dict (plain, or ANSI colour): the
header, what loading said, each question with its failures (variants that failed the same way grouped,
one "Likely mistake" told once per question), notes on how passing tests were checked, skips grouped,
hidden tests counted, the total. Give it the student view (`checker.judging.scorecard.student_view`) for
anything a student sees.

What it is not: the words every rendering shares (`checker.render.scorecard_text`: points, groups, places,
the load's heading), CI's renderings (`checker.render.github`, `checker.render.junit`); it prints nothing
and writes no file, and it decides no points: every number comes from the scorecard.
"""

from __future__ import annotations

from checker.render.escape import for_terminal
from checker.render.scorecard_text import (ALL_NOT_STARTED, FAILING, all_not_started, answer_note, defined_at,
                                           failure_kind, format_points, hidden_note, load_heading, skip_groups,
                                           total_line)
from checker.judging.scorecard import SEE_QUESTION_MESSAGE

__all__ = ["format_scorecard"]

_LABEL = {"failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT",
          "passed": "passed", "skipped": "skipped"}
_GREEN, _RED, _YELLOW, _BOLD, _RESET = "\x1b[32m", "\x1b[31m", "\x1b[33m", "\x1b[1m", "\x1b[0m"


def _safe(text, newlines=True):
    """Student-controlled text for the terminal (checker.render.escape): newlines=False keeps it in its line."""
    return for_terminal(text, newlines)


def _paint(text, code, color):
    return f"{code}{text}{_RESET}" if color else text


def _indent(text, prefix):
    return "\n".join(prefix + line if line else prefix.rstrip() for line in text.split("\n"))


def _skip_summary(tests, verbose=False):
    groups = skip_groups(tests, verbose)
    if not groups:
        return None
    total = sum(n for _, n in groups)
    parts = [f"{reason}" if n == total else f"{reason} ({n})" for reason, n in groups]
    return f"{total} skipped: {'; '.join(parts)}"


def _where(test):
    bits = [b for b in (test.get("device"), test.get("dtype")) if b]
    return f"  ({', '.join(bits)})" if bits else ""


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
    heading = load_heading(scorecard)
    if heading:
        lines.append(_paint(heading[0], _YELLOW, color) if heading[1] else heading[0])
        for message in load["messages"]:
            lines.append(_indent(_safe(message), "    "))
    if all_not_started(scorecard):
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
        failing = [t for t in tests if t.get("outcome") in FAILING]
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
            key = (base, outcome, failure_kind(test.get("message")))  # variants that failed the same way
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
            if outcome != "passed" and defined_at(test):
                lines.append(f"        {_safe(defined_at(test), False)}")
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
        hidden = hidden_note(scorecard, question)
        if hidden:
            lines.append("    " + hidden)

    if scorecard.get("unassigned"):
        lines.append("")
        lines.append(_paint(f"Grader bug: {len(scorecard['unassigned'])} tests belong to no question:",
                            _RED, color))
        for item in scorecard["unassigned"]:
            lines.append(f"    {_safe(item.get('nodeid'), False)} ({_safe(item.get('why', ''), False)})")
    lines.append("")
    lines.append(_paint(total_line(scorecard), _BOLD, color))
    return "\n".join(line for line in lines if line is not _DROP)
