"""The class report's numbers, computed from scorecards: pure functions, no file, no process, no plot.

What it is for: `class_data(scorecards, spec, manual_rows)` gives one JSON-ready dict, the numbers
of `hwcheck report` (the page shows them and carries them in its `hwcheck-data` script):

    total      the scorecards' `score` (grades.csv's `total`; manual grades count once merged into
               the scorecards, see sources.merge_manual): mean, median, lowest, highest, max (every
               question's points, grades.csv's `max_total`), full_share, zero_share, scores
    questions  {QID: {title, manual, mean, median, lowest, highest, max, full_share, zero_share,
               graded, pending, scores}}; `max` is the question's points, `mean` is over the cells
               grades.csv fills (a pending manual question's empty cell counts in neither)
    tests      [{name, question, visibility, points, runs, passed, pass_rate, point_biserial,
               upper_lower}] in spec order; pass_rate = passed / runs, where runs counts the
               scorecards in which the test ran (any outcome but skipped)
    mistakes   [{question, hint, count, ids}]: each kind of "Likely mistake" hint of a question (a line that
               starts with the prefix itself, as the grader appends it: `hints_of`), with
               the students whose scorecard names it there (in any test of the question, hidden
               ones included), most common first. Hints of one kind differ only in parenthesised
               details and numbers ("(H_e)", "(H_e, H_d)"); `hint` is the most common wording. An
               ambiguous hint ("A; or B (this input cannot tell these apart)") counts as its own
               kind unless another failure of the question names A or B alone.
    attention  [{id, status, reasons}]: the submissions a TA should open by hand: scored 0, did not load,
               load problems, full marks with load notes, timed out, crashed, manual questions
               pending (once grading by hand has begun for that question)
    manual_not_started  the manual questions no submission has points for yet

Item analysis: `point_biserial` is the correlation of passing the test with the total score less
the test's own points (the corrected item-total correlation); `upper_lower` is the pass rate of the
top 27% of submissions by total minus that of the bottom 27% (Kelley's groups). Either is None where
it is not defined (every submission passed or failed the test, or too few submissions).

Manual grades: the report merges OUTDIR/manual.csv into the scorecards first (as the gradebook
does); `manual_rows` ({id, question, points} dicts) may add grades of manual questions on top, for
callers holding them otherwise. A row with empty points leaves its question pending; without a row
the scorecard's own state counts.

What it is not: a reader of files (`checker.records.classreport.sources`), a renderer
(`checker.records.classreport.html`) or a similarity measure (`checker.records.classreport.similarity`).
"""

from __future__ import annotations

import collections
import math
import re
import statistics

__all__ = ["HINT_PREFIX", "class_data", "hints_of", "hint_key", "manual_points", "question_order", "submission_id"]

HINT_PREFIX = "Likely mistake:"
_UPPER_LOWER_SHARE = 0.27


def _round(x, n=4):
    if x is None:
        return None
    x = round(float(x), n)
    return int(x) if x == int(x) else x


def submission_id(card):
    return str((card.get("submission") or {}).get("id", ""))


def question_order(scorecards, spec):
    """[(qid, title, points, manual)] in the spec's order, then questions only scorecards have."""
    out, seen = [], set()
    for q in (spec or {}).get("questions") or []:
        qid = str(q["id"])
        seen.add(qid)
        out.append((qid, str(q.get("title", "")), float(q.get("points", 0)), bool(q.get("manual"))))
    for card in scorecards:
        for q in card.get("questions") or []:
            qid = str(q.get("id"))
            if qid not in seen:
                seen.add(qid)
                out.append((qid, str(q.get("title", "")), float(q.get("max_score") or 0), bool(q.get("manual"))))
    return out


def hints_of(message):
    """The "Likely mistake" hints of a message, each without the prefix and its final period.

    Only a line that starts with the prefix itself, at its first character, is the grader's hint: the grader
    appends its hints so (`\nLikely mistake: ...`), and a student's text quoted into a message (an exception's
    words, a line of their code) has each line after its first indented (`checker.running.answers.quoted`), so
    no line of it can start with the prefix: an indented "Likely mistake:" is the student's, not a hint.
    """
    out = []
    for line in str(message or "").splitlines():
        if line.startswith(HINT_PREFIX):
            hint = line[len(HINT_PREFIX):].strip().rstrip(".").strip()
            if hint and hint not in out and hint != "the same as above":
                out.append(hint)
    return out


def manual_points(rows):
    """{(id, question): points or None (pending)} from manual.csv's rows (later rows win)."""
    out = {}
    for row in rows or []:
        sid, qid = str(row.get("id") or "").strip(), str(row.get("question") or "").strip()
        if not sid or not qid:
            continue
        text = str(row.get("points") or "").strip()
        try:
            value = float(text) if text else None
        except ValueError:
            value = None
        out[(sid, qid)] = value if value is None or math.isfinite(value) else None
    return out


def _summary(scores, max_points):
    if not scores:
        return {"mean": None, "median": None, "lowest": None, "highest": None, "max": _round(max_points),
                "full_share": None, "zero_share": None, "scores": []}
    eps = 1e-9
    return {
        "mean": _round(statistics.fmean(scores)),
        "median": _round(statistics.median(scores)),
        "lowest": _round(min(scores)),
        "highest": _round(max(scores)),
        "max": _round(max_points),
        "full_share": _round(sum(1 for s in scores if max_points > 0 and s >= max_points - eps) / len(scores)),
        "zero_share": _round(sum(1 for s in scores if abs(s) <= eps) / len(scores)),
        "scores": [_round(s) for s in scores],
    }


def _question_cell(card, question, manual):
    """The points grades.csv shows for this question (None: an empty, pending cell)."""
    sid, qid = submission_id(card), str(question.get("id"))
    if question.get("manual"):
        if (sid, qid) in manual:
            return manual[(sid, qid)]
        if question.get("pending", True):
            return None
    return float(question.get("score") or 0)


def _point_biserial(passed, rest):
    n = len(passed)
    if n < 3:
        return None
    p = sum(passed) / n
    sd = statistics.pstdev(rest)
    if p in (0, 1) or sd == 0:
        return None
    m1 = statistics.fmean(r for r, x in zip(rest, passed) if x)
    m0 = statistics.fmean(r for r, x in zip(rest, passed) if not x)
    return (m1 - m0) / sd * math.sqrt(p * (1 - p))


def _upper_lower(passed, totals):
    n = len(passed)
    g = int(round(n * _UPPER_LOWER_SHARE))
    if g < 1 or 2 * g > n:
        return None
    order = sorted(range(n), key=lambda i: totals[i])
    low, high = order[:g], order[-g:]
    return sum(passed[i] for i in high) / g - sum(passed[i] for i in low) / g


def _tests(scorecards, qorder):
    rank = {qid: i for i, (qid, *_rest) in enumerate(qorder)}
    items = {}  # (qid, name) -> {"pass": [...], "points": [...], "totals": [...], ...}
    for card in scorecards:
        total = float(card.get("score") or 0)
        for q in card.get("questions") or []:
            for t in q.get("tests") or []:
                key = (str(q.get("id")), str(t.get("name")))
                item = items.setdefault(key, {"pass": [], "earned": [], "totals": [], "weights": [],
                                              "visibility": t.get("visibility") or "visible",
                                              "order": len(items)})
                if t.get("outcome") == "skipped":
                    continue
                # a test's points vary a little from card to card (a skip elsewhere in its question shares out
                # that test's points): the report shows what most students' cards give it
                item["weights"].append(float(t.get("max_points") or 0))
                item["pass"].append(1 if t.get("outcome") == "passed" else 0)
                item["earned"].append(float(t.get("points") or 0))
                item["totals"].append(total)
    out = []
    for (qid, name), item in sorted(items.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), kv[1]["order"])):
        runs = len(item["pass"])
        rest = [tot - e for tot, e in zip(item["totals"], item["earned"])]
        out.append({
            "name": name, "question": qid, "visibility": item["visibility"],
            "points": _round(_usual(item["weights"])),
            "runs": runs, "passed": sum(item["pass"]),
            "pass_rate": _round(sum(item["pass"]) / runs) if runs else None,
            "point_biserial": _round(_point_biserial(item["pass"], rest), 3),
            "upper_lower": _round(_upper_lower(item["pass"], item["totals"]), 3),
        })
    return out


def _usual(weights):
    """The value most of `weights` hold (rounded as shown; the largest of equally common ones), 0 for none."""
    if not weights:
        return 0.0
    counts = collections.Counter(round(w, 4) for w in weights)
    return max(counts, key=lambda w: (counts[w], w))


_AMBIGUOUS = "(this input cannot tell these apart)"
_CRASH = re.compile(r"\bcrash|restarted your code|process running your code died|worker was restarted", re.IGNORECASE)


def hint_key(hint):
    """What groups hints of one kind: the text less its parenthesised details and numbers, in lower case."""
    text = re.sub(r"\s*\([^()]*\)", "", str(hint))
    return re.sub(r"\d+(\.\d+)?", "#", " ".join(text.split())).lower()


def _alternatives(hint):
    """The hints an ambiguous hint ("A; or B (this input cannot tell these apart)") names, else []."""
    if not hint.endswith(_AMBIGUOUS):
        return []
    return [h.strip() for h in hint[: -len(_AMBIGUOUS)].split("; or ") if h.strip()]


def _question_hints(question):
    """The hints one scorecard names in one question; an ambiguous one is dropped when another
    failure of the question names one of its alternatives alone."""
    hints = hints_of(question.get("message"))
    for t in question.get("tests") or []:
        hints += [h for h in hints_of(t.get("message")) if h not in hints]
    plain = {hint_key(h) for h in hints if not _alternatives(h)}
    return [h for h in hints if not any(hint_key(a) in plain for a in _alternatives(h))]


def _mistakes(scorecards, qorder):
    rank = {qid: i for i, (qid, *_rest) in enumerate(qorder)}
    found = {}  # (qid, key) -> ({ids}, Counter of texts)
    for card in scorecards:
        sid = submission_id(card)
        for q in card.get("questions") or []:
            qid = str(q.get("id"))
            for hint in _question_hints(q):
                ids, texts = found.setdefault((qid, hint_key(hint)), (set(), collections.Counter()))
                ids.add(sid)
                texts[hint] += 1
    rows = [{"question": qid, "hint": texts.most_common(1)[0][0], "count": len(ids), "ids": sorted(ids)}
            for (qid, _key), (ids, texts) in found.items()]
    rows.sort(key=lambda r: (-r["count"], rank.get(r["question"], len(rank)), r["hint"]))
    return rows


def _pending_everywhere(scorecards, manual, manual_qids):
    """The manual questions no submission has points for yet (told once, not per submission)."""
    return [qid for qid in manual_qids
            if all(_is_pending(card, qid, manual) for card in scorecards)]


def _is_pending(card, qid, manual):
    sid = submission_id(card)
    if (sid, qid) in manual:
        return manual[(sid, qid)] is None
    q = next((q for q in card.get("questions") or [] if str(q.get("id")) == qid), None)
    return q is not None and bool(q.get("pending", True))


def _attention(scorecards, manual, qorder):
    manual_qids = [qid for qid, _t, _p, is_manual in qorder if is_manual]
    not_started = set(_pending_everywhere(scorecards, manual, manual_qids))
    out = []
    for card in sorted(scorecards, key=submission_id):
        sid, status = submission_id(card), str(card.get("status", ""))
        load = card.get("load") or {}
        messages = [str(m) for m in load.get("messages") or []]
        tests = [t for q in card.get("questions") or [] for t in q.get("tests") or []]
        auto_max = sum(float(q.get("max_score") or 0) for q in card.get("questions") or [] if not q.get("manual"))
        full = auto_max > 0 and float(card.get("score") or 0) >= auto_max - 1e-9
        reasons = []
        if status == "load_failed":
            reasons.append("did not load" + (f": {_first_line(messages[0])}" if messages else ""))
        elif messages and full:
            reasons.append(f"full marks with load notes ({len(messages)}): {_first_line(messages[0])}")
        elif load.get("ok") is False and messages:
            reasons.append(f"load problems ({len(messages)}): {_first_line(messages[0])}")
        n_timeout = sum(1 for t in tests if t.get("outcome") == "timeout")
        if status == "timeout" or n_timeout:
            reasons.append("timed out" + (f" ({n_timeout} tests)" if n_timeout else ""))
        n_crash = sum(1 for t in tests if t.get("outcome") in ("failed", "error")
                      and _CRASH.search(str(t.get("message") or "")))
        internal = (card.get("grader") or {}).get("internal_error")
        if status == "crashed" or internal or n_crash:
            reasons.append("crashed" + (f" ({n_crash} tests)" if n_crash else "")
                           + (f": {_first_line(internal)}" if internal else ""))
        if auto_max > 0 and float(card.get("score") or 0) <= 0 and not reasons:
            # nothing earned though it loaded and ran: another homework's file, an empty notebook, a name
            # mistyped everywhere; a person should look before the zero goes out
            reasons.append(f"0 of {auto_max:g} automatic points: no test passed")
        if card.get("unassigned"):
            reasons.append(f"{len(card['unassigned'])} tests of no question (a bug of the grading tests)")
        pending = [qid for qid in manual_qids if qid not in not_started and _is_pending(card, qid, manual)]
        if pending:
            reasons.append(f"manual questions pending: {', '.join(pending)}")
        if reasons:
            out.append({"id": sid, "status": status, "reasons": reasons})
    return out, sorted(not_started, key=manual_qids.index)


def _first_line(text):
    line = next((ln.strip() for ln in str(text).splitlines() if ln.strip()), "")
    return line if len(line) <= 160 else line[:157] + "..."


def class_data(scorecards, spec, manual_rows=None):
    """The report's numbers (see the module docstring) from the scorecards of one assignment."""
    scorecards = sorted(scorecards, key=submission_id)
    manual = manual_points(manual_rows)
    qorder = question_order(scorecards, spec)
    max_total = sum(p for _q, _t, p, _m in qorder)
    modes = sorted({str((c.get("grader") or {}).get("mode", "")) for c in scorecards})
    questions = {}
    for qid, title, points, is_manual in qorder:
        cells = []
        for card in scorecards:
            q = next((q for q in card.get("questions") or [] if str(q.get("id")) == qid), None)
            cells.append(None if q is None else _question_cell(card, q, manual))
        scores = [c for c in cells if c is not None]
        entry = _summary(scores, points)
        entry.update({"title": title, "manual": is_manual, "graded": len(scores), "pending": len(cells) - len(scores)})
        questions[qid] = entry
    total = _summary([float(c.get("score") or 0) for c in scorecards], max_total)
    attention, not_started = _attention(scorecards, manual, qorder)
    statuses = {}
    for c in scorecards:
        statuses[str(c.get("status"))] = statuses.get(str(c.get("status")), 0) + 1
    return {
        "assignment": str((spec or {}).get("id") or (scorecards[0].get("assignment") if scorecards else "")),
        "title": str((spec or {}).get("title", "")),
        "submissions": len(scorecards),
        "modes": modes,
        "statuses": statuses,
        "ids": [submission_id(c) for c in scorecards],
        "total": total,
        "questions": questions,
        "tests": _tests(scorecards, qorder),
        "mistakes": _mistakes(scorecards, qorder),
        "attention": attention,
        "manual_not_started": not_started,
    }
