"""The class report's page: one self-contained HTML file (inline CSS, SVG plots as data URIs, no network).

What it is for: `render(data, plots, pairs_html, feedback)` puts together the page of
`hwcheck report`: the score distributions, the item analysis (a table sortable by a click on its
header, by a few lines of inline script), the common mistakes, the submissions to open by hand, the
similarity ranking with the top pairs side by side, and one feedback page per student (each starts
a printed page). The numbers also go into `<script type="application/json" id="hwcheck-data">`.
Scorecards that cannot be read (`data["incomplete"]`) are said in a banner at the top: the page is short of them.
Every text from a scorecard or a submission is escaped (control and bidi characters shown, then HTML-quoted).

What it is not: a computer of numbers (`data`), of plots (`plots`) or of similarity (`similarity`).
"""

from __future__ import annotations

import json
from html import escape

from checker.render.escape import for_terminal

__all__ = ["render", "feedback_text", "data_script"]

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;max-width:1100px;padding:1em 2em;
color:#222;line-height:1.4}
h1{margin-bottom:.2em} h2{border-bottom:2px solid #4a6fa5;padding-bottom:.2em;margin-top:2em}
nav a{margin-right:1em} .muted{color:#666} .note{background:#fff6d6;border-left:4px solid #e0b000;padding:.4em .8em}
table{border-collapse:collapse;margin:.5em 0;font-size:.9em} th,td{border:1px solid #ccc;padding:.25em .5em;text-align:left;
vertical-align:top} th{background:#eef2f8} td.num{text-align:right;font-variant-numeric:tabular-nums}
table.sortable th{cursor:pointer;user-select:none} table.sortable th:after{content:" \\2195";color:#999}
.plots{display:flex;flex-wrap:wrap;gap:.5em} .plots figure{margin:0} .plots img{width:420px;height:240px}
.low{background:#fde2e2} .pair{display:grid;grid-template-columns:1fr 1fr;gap:.5em;margin-bottom:1.5em}
.pair pre,.feedback pre{font-size:.75em;background:#f7f7f7;border:1px solid #ddd;padding:.5em;overflow-x:auto;
white-space:pre-wrap;word-break:break-word} .pair pre{max-height:40em;overflow-y:auto}
.banner{background:#fde2e2;border:2px solid #c62828;padding:.6em .9em;font-weight:600}
mark{background:#ffd54f} .feedback{border-top:3px solid #4a6fa5;margin-top:2em}
@media print{nav,.noprint{display:none} body{max-width:none;padding:0} .feedback{break-before:page;border:0}
.pair pre{max-height:none;overflow:visible} h2{break-after:avoid} tr{break-inside:avoid}}
"""

_SORT_JS = """
document.querySelectorAll("table.sortable").forEach(function (table) {
  table.querySelectorAll("th").forEach(function (th, col) {
    th.addEventListener("click", function () {
      var body = table.tBodies[0], rows = Array.prototype.slice.call(body.rows);
      var up = th.getAttribute("data-dir") !== "up";
      table.querySelectorAll("th").forEach(function (h) { h.removeAttribute("data-dir"); });
      th.setAttribute("data-dir", up ? "up" : "down");
      rows.sort(function (a, b) {
        var x = a.cells[col].getAttribute("data-v") || a.cells[col].textContent;
        var y = b.cells[col].getAttribute("data-v") || b.cells[col].textContent;
        var nx = parseFloat(x), ny = parseFloat(y), c;
        if (!isNaN(nx) && !isNaN(ny)) { c = nx - ny; } else { c = x.localeCompare(y); }
        return up ? c : -c;
      });
      rows.forEach(function (r) { body.appendChild(r); });
    });
  });
});
"""


def _e(x):
    """Text from a scorecard or a submission, inert in HTML: control, bidi and ignorable characters shown as
    escapes (checker.render.escape.for_terminal, as on the terminal: an override cannot disguise an id), then quoted."""
    return escape(for_terminal("" if x is None else str(x)), quote=True)


def _n(x, digits=2):
    if x is None:
        return "&ndash;"
    x = round(float(x), digits)
    return str(int(x)) if x == int(x) else f"{x:.{digits}f}".rstrip("0")


def _pct(x):
    return "&ndash;" if x is None else f"{100 * float(x):.0f}%"


def _num_td(x, shown=None):
    v = "" if x is None else f"{float(x):.6g}"
    return f'<td class="num" data-v="{v}">{shown if shown is not None else _n(x)}</td>'


def data_script(data):
    """The numbers as a JSON script element (`<` escaped, so no text in them can close the element)."""
    text = json.dumps(data, ensure_ascii=False, sort_keys=True).replace("<", "\\u003c")
    return f'<script type="application/json" id="hwcheck-data">{text}</script>'


def _stats_row(label, s):
    return (f"<tr><td>{_e(label)}</td>{_num_td(s['mean'])}{_num_td(s['median'])}{_num_td(s['lowest'])}"
            f"{_num_td(s['highest'])}{_num_td(s['max'])}{_num_td(s['full_share'], _pct(s['full_share']))}"
            f"{_num_td(s['zero_share'], _pct(s['zero_share']))}</tr>")


def _scores_section(data, plots):
    rows = [_stats_row("total", data["total"])]
    for qid, q in data["questions"].items():
        label = f"{qid} {q['title']}" + (f" (manual; {q['graded']} graded, {q['pending']} pending)" if q["manual"] else "")
        rows.append(_stats_row(label, q))
    figures = "".join(f'<figure><img alt="{_e(title)}" src="{uri}"></figure>' for title, uri in plots)
    return (
        '<h2 id="scores">Score distribution</h2><div class="plots">' + figures + "</div>"
        "<table><thead><tr><th>question</th><th>mean</th><th>median</th><th>lowest</th><th>highest</th>"
        "<th>of</th><th>full marks</th><th>zero</th></tr></thead><tbody>" + "".join(rows) + "</tbody></table>")


def _tests_section(data):
    rows = []
    for t in data["tests"]:
        low = ' class="low"' if t["pass_rate"] is not None and t["pass_rate"] < 0.5 else ""
        rows.append(
            f"<tr{low}><td>{_e(t['question'])}</td><td>{_e(t['name'])}</td><td>{_e(t['visibility'])}</td>"
            f"{_num_td(t['points'], _n(t['points'], 3))}{_num_td(t['runs'])}"
            f"{_num_td(t['pass_rate'], _pct(t['pass_rate']))}"
            f"{_num_td(t['point_biserial'], _n(t['point_biserial'], 2))}"
            f"{_num_td(t['upper_lower'], _n(t['upper_lower'], 2))}</tr>")
    return (
        '<h2 id="items">Item analysis</h2><p class="muted">Every test with its pass rate among the submissions it ran '
        "for, its points, and how well it separates strong from weak submissions: r<sub>pb</sub> is the "
        "correlation of passing it with the total less its own points, D the pass rate of the top 27% "
        "minus the bottom 27%. Near 0 or below: the test does not tell strong from weak. Click a header "
        "to sort.</p>"
        '<table class="sortable"><thead><tr><th>question</th><th>test</th><th>shown to</th><th>points</th>'
        "<th>ran</th><th>pass rate</th><th>r<sub>pb</sub></th><th>D</th></tr></thead><tbody>"
        + "".join(rows) + "</tbody></table>")


def _mistakes_section(data):
    if not data["mistakes"]:
        return '<h2 id="mistakes">Common mistakes</h2><p>No failure named a likely mistake.</p>'
    rows = "".join(
        f"<tr><td>{_e(m['question'])}</td>{_num_td(m['count'])}<td>{_e(m['hint'])}</td>"
        f"<td>{_e(', '.join(m['ids']))}</td></tr>" for m in data["mistakes"])
    return ('<h2 id="mistakes">Common mistakes</h2><p class="muted">The "Likely mistake" hints of the failures, '
            "counted per question: each student once per question.</p>"
            '<table class="sortable"><thead><tr><th>question</th><th>students</th><th>likely mistake</th>'
            "<th>who</th></tr></thead><tbody>" + rows + "</tbody></table>")


def _attention_section(data):
    waiting = "".join(
        f'<p class="note">{_e(qid)} is graded by a person and has no points yet for any of the '
        f'{data["submissions"]} submissions (answers.csv holds their answers; manual.csv takes the points).</p>'
        for qid in data.get("manual_not_started") or [])
    if not data["attention"]:
        return '<h2 id="look">Submissions to open by hand</h2>' + waiting + "<p>None besides.</p>"
    rows = "".join(
        f'<tr><td><a href="#student-{_e(a["id"])}">{_e(a["id"])}</a></td><td>{_e(a["status"])}</td>'
        f"<td>{'<br>'.join(_e(r) for r in a['reasons'])}</td></tr>" for a in data["attention"])
    return ('<h2 id="look">Submissions to open by hand</h2><p class="muted">Zero scores, load problems, timeouts, '
            "crashes, full marks with load notes and manual questions still to grade.</p>" + waiting +
            '<table class="sortable"><thead><tr><th>submission</th><th>status</th><th>why</th></tr></thead>'
            "<tbody>" + rows + "</tbody></table>")


def _similarity_section(data, pairs_html):
    sim = data["similarity"]
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in data.get("similarity_notes") or [])
    if not sim:
        return f'<h2 id="similarity">Similarity</h2>{notes}<p>No two submissions share code beyond the handout\'s.</p>'
    rows = "".join(
        f"<tr>{_num_td(i)}<td>{_e(p['a'])}</td><td>{_e(p['b'])}</td>{_num_td(p['score'], _pct(p['score']))}"
        f"{_num_td(p['share_a'], _pct(p['share_a']))}{_num_td(p['share_b'], _pct(p['share_b']))}</tr>"
        for i, p in enumerate(sim, 1))
    sides = "".join(
        f"<h3>{_e(a)} and {_e(b)}: {_pct(score)}</h3><div class=\"pair\"><div><b>{_e(a)}</b><pre>{code_a}</pre></div>"
        f"<div><b>{_e(b)}</b><pre>{code_b}</pre></div></div>" for a, b, score, code_a, code_b in pairs_html)
    return ('<h2 id="similarity">Similarity</h2>' + notes +
            '<p class="muted">Pairs ranked by the share of their code found in each other (copydetect\'s '
            "winnowed fingerprints of 25-token runs, names and comments abstracted), the starter code and "
            "the handout's given code left out. A high score is a reason to look, not a finding.</p>"
            '<table class="sortable"><thead><tr><th>rank</th><th>a</th><th>b</th><th>score</th><th>of a</th>'
            "<th>of b</th></tr></thead><tbody>" + rows + "</tbody></table>"
            "<h3>The top pairs side by side</h3><p class=\"muted\">Shared passages are marked.</p>" + sides)


def feedback_text(view):
    """The text `hwcheck check` shows for a student view (its path shortened to the file's name)."""
    import copy
    import os

    from checker.render.report import format_scorecard
    view = copy.deepcopy(view)
    sub = view.get("submission") or {}
    if sub.get("path"):
        sub["path"] = os.path.basename(os.path.normpath(str(sub["path"])))
    return format_scorecard(view, color=False, verbose=False)


def _feedback_section(feedback):
    parts = ['<h2 id="feedback">Feedback pages</h2><p class="muted">One page per student, from the scorecard '
             "as the student may see it (hidden tests only as counts); each starts a new printed page.</p>"]
    for fb in feedback:
        rows = "".join(f"<tr><td>{_e(q['id'])}</td><td>{_e(q['title'])}</td><td class=\"num\">{_e(q['shown'])}</td>"
                       f"<td>{_e(q.get('comment') or '')}</td></tr>" for q in fb["questions"])
        parts.append(
            f'<section class="feedback" id="student-{_e(fb["id"])}"><h3>{_e(fb["id"])}: {_e(fb["score"])}</h3>'
            "<table><thead><tr><th>question</th><th>title</th><th>points</th><th>comment</th></tr></thead>"
            f"<tbody>{rows}</tbody></table><pre>{_e(fb['text'])}</pre></section>")
    return "".join(parts)


def render(data, plots, pairs_html, feedback, *, generated=""):
    """The whole page. plots: [(title, data URI)]; pairs_html: [(a, b, score, html_a, html_b)] (already
    escaped, shared passages in <mark>); feedback: [{id, score, questions: [{id, title, shown, comment}], text}]."""
    title = f"hwcheck report: {data['assignment']}"
    notes = "".join(f'<p class="note">{_e(n)}</p>' for n in data.get("notes") or [])
    statuses = ", ".join(f"{k} {v}" for k, v in sorted(data["statuses"].items()))
    # scorecards that cannot be read leave the page short of students: said first, where it cannot be missed
    # (printed too), not among the notes
    banner = (f'<p class="banner" role="alert">{_e(data["incomplete"])}</p>' if data.get("incomplete") else "")
    lost = len(data.get("unreadable") or [])
    count = (f"{data['submissions']} of {data['submissions'] + lost} submissions ({lost} not readable; "
             if lost else f"{data['submissions']} submissions (")
    head = (f"<h1>{_e(title)}</h1>{banner}<p>{_e(data['title'])}<br>{count}{_e(statuses)}); "
            f"tests: {_e(', '.join(data['modes']) or 'none')}"
            + (f"; generated {_e(generated)}" if generated else "") + "</p>" + notes)
    nav = ('<nav class="noprint"><a href="#scores">Scores</a><a href="#items">Item analysis</a>'
           '<a href="#mistakes">Mistakes</a><a href="#look">To open by hand</a>'
           '<a href="#similarity">Similarity</a><a href="#feedback">Feedback pages</a></nav>')
    body = "".join([head, nav, _scores_section(data, plots), _tests_section(data), _mistakes_section(data),
                    _attention_section(data), _similarity_section(data, pairs_html), _feedback_section(feedback)])
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>{_e(title)}</title><link rel=\"icon\" href=\"data:,\"><style>{_CSS}</style></head>"
            f"<body>{body}{data_script(data)}<script>{_SORT_JS}</script></body></html>\n")
