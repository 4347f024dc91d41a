"""What a scorecard says, in the words every rendering of it shares (terminal, CI, notebook, Gradescope).

What it is for: pure functions of a scorecard dict that more than one rendering uses alike:
- `format_points`, `total_line`, `automatic_max`, `min_score_line` (what `check --min-score` says),
  `ALL_NOT_STARTED`, `hidden_note` (tests not shown), `answer_note` (a manual question's written answer);
- how failures and skips are grouped: `failure_groups` (the variants of one test that failed the same
  way, numbers aside: `failure_kind`), `short_reason` and `skip_groups`;
- where a failure is: `place_of` ("FILE, In [7], line L"), `defined_at` (the student's def it is about);
- what loading said: `load_heading`, `bounded_load_messages` (bounded for CI: `MAX_LOAD_MESSAGES`,
  `MAX_LOAD_MESSAGE_CHARS`).

What it is not: a rendering itself (`checker.render.report` the terminal's text, `checker.render.github`
GitHub's step summary and annotations, `checker.render.junit` JUnit XML, `checker.render.gradescope`),
nor escaping (`checker.render.escape`: each rendering escapes for its medium). It decides no points.
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = [
    "FAILING", "format_points", "total_line", "ALL_NOT_STARTED", "all_not_started", "automatic_max", "min_score_line",
    "hidden_note", "answer_note", "failure_kind", "short_reason", "skip_groups", "failure_groups", "place_of",
    "defined_at", "load_heading", "load_failed", "MAX_LOAD_MESSAGES", "MAX_LOAD_MESSAGE_CHARS",
    "bounded_load_messages",
]

FAILING = ("failed", "error", "timeout")


def format_points(x):
    """22.5 -> '22.5', 30.0 -> '30', 4.28571 -> '4.29' (the scorecard keeps 4 decimals)."""
    x = float(x or 0)
    if x == int(x):
        return str(int(x))
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _pending_points(scorecard):
    return sum(float(q.get("max_score") or 0) for q in scorecard.get("questions") or []
               if q.get("manual") and q.get("pending", True))


def total_line(scorecard):
    line = (f"Total: {format_points(scorecard.get('score'))}/"
            f"{format_points(scorecard.get('max_score'))}")
    pending = _pending_points(scorecard)
    if pending:
        line += f" ({format_points(pending)} pending manual)"
    return line


ALL_NOT_STARTED = ("Not started: every question graded automatically is still at the starter's stubs "
                   "(`raise NotImplementedError`).")


def all_not_started(scorecard):
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


def hidden_note(scorecard, question):
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


def failure_kind(message):
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


def failure_groups(tests):
    """[(the first failing variant, [the other variants' names])]: the variants of one test that failed the
    same way (same outcome, same message up to its numbers), in order, as `check` prints them."""
    groups, order = {}, []
    for t in tests:
        if t.get("outcome") not in FAILING:
            continue
        base = str(t.get("name", "")).split("[")[0]
        key = (base, t.get("outcome"), failure_kind(t.get("message")))
        if key in groups:
            groups[key][1].append(str(t.get("name", ""))[len(base):] or base)
        else:
            groups[key] = (t, [])
            order.append(key)
    return [groups[k] for k in order]


def place_of(where):
    """'FILE, In [7], line L' (a notebook's cell as the notebook shows it), or '' when there is no place."""
    if not (isinstance(where, dict) and where.get("file")):
        return ""
    place = str(where["file"]) + (f", {where.get('label') or 'cell ' + str(where['cell'])}" if where.get("cell") else "")
    return place + (f", line {where['line']}" if where.get("line") else "")


def defined_at(test):
    """'your `f` is in FILE, cell C, line L' when the failure's place is the student's def it is about."""
    where = test.get("where")
    if not (isinstance(where, dict) and where.get("function") and where.get("file")):
        return ""
    return f"(your `{where['function']}` is in {place_of(where)})"


def load_heading(scorecard):
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


def load_failed(scorecard):
    """Whether the submission did not load at all: the load messages are the reason every test failed."""
    load = scorecard.get("load") or {}
    return bool(load.get("messages")) and (scorecard.get("status") == "load_failed" or (
        scorecard.get("status") in ("timeout", "crashed") and not load.get("ok", True)))


# The load messages in CI output, bounded: they come from the student's code (an exception's text, a quoted line),
# and a step summary (1 MiB) or an annotation (GitHub cuts it) is no place for all of a long one; the log has them.
MAX_LOAD_MESSAGES, MAX_LOAD_MESSAGE_CHARS = 10, 1500


def bounded_load_messages(scorecard, count=MAX_LOAD_MESSAGES, chars=MAX_LOAD_MESSAGE_CHARS):
    messages = [str(m) for m in (scorecard.get("load") or {}).get("messages") or []]
    out = [m if len(m) <= chars else m[:chars - 3].rstrip() + "..." for m in messages[:count]]
    if len(messages) > count:
        out.append(f"... and {len(messages) - count} more (the log of the check shows them all)")
    return out
