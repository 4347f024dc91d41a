"""The HTML page a notebook shows for a check (`checker.check()` in Jupyter, JupyterLab, VS Code, Colab).

What it is for: one pure function, `scorecard_html(view, source=...)`, from a
student view of a scorecard (`checker.judging.scorecard.student_view`) to a
self-contained HTML fragment: a table with a row per question (its id, title
and points), each failing test folded open under its question (`<details
open>`) with its message and "Likely mistake" hint, load messages above, the
total below. Every text that a student controls (messages quote their code,
names, file names) goes through `checker.render.escape.for_terminal` then
`html.escape`, so it is shown, never interpreted. There is no link, no
script, no external stylesheet: inline styles only, so the page renders the
same in every notebook front end and offline.

What it is not: the plain-text report (`checker.render.report.format_scorecard`,
which the notebook shows where HTML is not) or the class report.
"""

import html

from checker.render.escape import for_terminal
from checker.render.scorecard_text import answer_note, failure_groups, format_points, skip_groups

__all__ = ["scorecard_html"]

_FAILING = ("failed", "error", "timeout")
_LABEL = {"failed": "FAILED", "error": "ERROR", "timeout": "TIMEOUT", "skipped": "skipped", "passed": "passed"}
_RED, _GREEN, _AMBER, _GREY = "#b91c1c", "#15803d", "#a16207", "#6b7280"


def _e(text):
    """Student-controlled text, made inert for HTML (control characters shown as escapes first)."""
    return html.escape(for_terminal("" if text is None else str(text)), quote=True)


def _pre(text):
    return (f'<pre style="white-space:pre-wrap;margin:4px 0 4px 12px;font-size:12px;background:none">'
            f'{_e(text)}</pre>')


def _points(q):
    return f"{format_points(q.get('score'))}/{format_points(q.get('max_score'))}"


def _question_rows(q):
    """The table rows of one question: its summary row, then a row with its failures (if any)."""
    tests = q.get("tests") or []
    failing = [t for t in tests if t.get("outcome") in _FAILING]
    ran = [t for t in tests if t.get("outcome") != "skipped"]
    if q.get("manual"):
        state = "pending (graded by a person)" if q.get("pending", True) else _points(q)
        color, status = _AMBER, state
    else:
        color = _RED if failing or (q.get("message") and not ran) else (_GREEN if ran else _AMBER)
        status = _points(q)
    summary = (f"{len(failing)} of {len(ran)} checks failed" if failing else
               (f"all {len(ran)} checks passed" if ran else ("" if q.get("manual") else "no check ran")))
    if q.get("hidden_tests"):
        summary += f"{'; ' if summary else ''}{int(q['hidden_tests'])} more run when it is graded"
    rows = [f'<tr><td style="padding:4px 8px;font-weight:bold;text-align:left">{_e(q.get("id"))}</td>'
            f'<td style="padding:4px 8px;text-align:left">{_e(q.get("title") or "")}</td>'
            f'<td style="padding:4px 8px;text-align:right;color:{color};font-weight:bold">{_e(status)}</td>'
            f'<td style="padding:4px 8px;text-align:left;color:{_GREY}">{_e(summary)}</td></tr>']
    body = []
    if q.get("message"):
        body.append(_pre(q["message"]))
    # the failing variants of one test that failed the same way are one block, as `check` prints them: the
    # first opened with its message, the others named under it (the text's grouping, checker.render.report)
    for n, (t, others) in enumerate(failure_groups(tests)):
        outcome = t.get("outcome")
        where = t.get("where") or {}
        place = ""
        if isinstance(where, dict) and where.get("file"):
            place = f" ({where['file']}" + (f", {where.get('label') or 'cell ' + str(where['cell'])}" if where.get("cell") else "") + \
                (f", line {where['line']}" if where.get("line") else "") + ")"
        also = (f'<div style="color:{_GREY};margin-left:12px">also failed the same way, same test with other '
                f'inputs: {_e(", ".join(others[:8]))}{f" and {len(others) - 8} more" if len(others) > 8 else ""}'
                f'</div>' if others else "")
        body.append(f'<details open style="margin:2px 0"><summary style="cursor:pointer">'
                    f'<span style="color:{_RED};font-weight:bold">{_LABEL.get(outcome, _e(outcome))}</span> '
                    f'<code>{_e(t.get("name"))}</code>{_e(place)}</summary>'
                    f'{_pre(t.get("message") or "")}{also}</details>')
    for reason, count in skip_groups(tests):  # one short line per reason, counted, as in the text
        body.append(f'<div style="color:{_AMBER};margin-left:12px">{count} check{"s" if count != 1 else ""} '
                    f'skipped: {_e(reason)}</div>')
    if q.get("manual") and answer_note(q):
        body.append(f'<div style="color:{_GREY};margin-left:12px">{_e(answer_note(q))}</div>')
    if body:
        rows.append(f'<tr><td></td><td colspan="3" style="padding:0 8px 6px 8px;text-align:left">'
                    f'{"".join(body)}</td></tr>')
    return rows


def scorecard_html(view, *, source=None):
    """The HTML fragment for a student view; `source` says what was checked (one line, escaped)."""
    parts = ['<div class="hwcheck" style="font-family:sans-serif;font-size:13px;line-height:1.35">']
    sub = view.get("submission") or {}
    parts.append(f'<div style="font-weight:bold;margin-bottom:4px">hwcheck: {_e(view.get("assignment"))}'
                 f' &mdash; {_e(sub.get("id"))}</div>')
    if source:
        parts.append(f'<div style="color:{_GREY};margin-bottom:4px">{_e(source)}</div>')
    status = view.get("status", "graded")
    if status != "graded":
        parts.append(f'<div style="color:{_RED};font-weight:bold">Status: {_e(str(status).replace("_", " "))}</div>')
    load = view.get("load") or {}
    if load.get("messages"):
        head = "Loading your code:" if load.get("ok", True) else \
            "Loading your code: some parts failed (whatever they would have defined is missing):"
        parts.append(f'<details open><summary style="cursor:pointer">{_e(head)}</summary>'
                     + "".join(_pre(m) for m in load["messages"]) + "</details>")
    parts.append('<table style="border-collapse:collapse;margin:4px 0">')
    parts.append('<tr><th style="padding:4px 8px;text-align:left">Question</th><th></th>'
                 '<th style="padding:4px 8px;text-align:right">Points</th><th></th></tr>')
    for q in view.get("questions") or []:
        parts.extend(_question_rows(q))
    parts.append("</table>")
    parts.append(f'<div style="font-weight:bold">Total: {_e(format_points(view.get("score")))}/'
                 f'{_e(format_points(view.get("max_score")))}</div>')
    parts.append("</div>")
    return "".join(parts)
