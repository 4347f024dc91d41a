"""The class report of a graded batch: `hwcheck report OUTDIR` writes one self-contained HTML page.

What it is for: `write_report(outdir, output)` reads what `hwcheck grade` wrote in OUTDIR (the
scorecards, and OUTDIR/manual.csv when a TA keeps manual grades there), computes the class's numbers
(`data`), ranks the submissions by shared code (`similarity`, read from the submissions where they
were graded: `sources`), draws the histograms (`plots`) and writes the page (`html`), which carries
its numbers as JSON too. `missing_extra()` names the optional packages (the `report` extra) that
are not installed.

A scorecard that hwcheck wrote and that can no longer be read (emptied, cut short: `hwcheck export` names it
too) leaves its submission out of every number: the page says so in a banner at its top (`data["incomplete"]`,
the ids in `data["unreadable"]`), with the `grade --resume` that grades it again, and `hwcheck report` exits 1.

What it is not: `checker.render.report`, the text renderer of `check` and `show` (whose text the feedback
pages reuse), nor a grader: it reads scorecards and never runs student code.
"""

from __future__ import annotations

import datetime
import importlib.util

__all__ = ["REPORT_PACKAGES", "missing_extra", "build_page", "write_report"]

REPORT_PACKAGES = {"matplotlib": "matplotlib", "copydetect": "copydetect", "tqdm": "tqdm"}
TOP_PAIRS_SHOWN = 5


def missing_extra():
    """The pip names of the `report` extra's packages that cannot be imported here."""
    return [pip for module, pip in REPORT_PACKAGES.items() if importlib.util.find_spec(module) is None]


def _progress(enabled):
    """A tqdm wrapper shown on a terminal once a step takes longer than a moment, or none."""
    if not enabled:
        return None
    from tqdm import tqdm

    def wrap(iterable, desc="", **kw):
        return tqdm(iterable, desc=f"hwcheck report: {desc}", delay=0.5, leave=False, unit="", **kw)
    return wrap


def _feedback(cards, wrap):
    from checker.records.manual import student_comment
    from checker.records.classreport.data import submission_id
    from checker.records.classreport.html import feedback_text
    from checker.render.scorecard_text import format_points
    from checker.judging.scorecard import student_view
    out = []
    for card in wrap(sorted(cards, key=submission_id), desc="feedback pages"):
        sid = submission_id(card)
        view = student_view(card)
        rows = []
        for q in view.get("questions") or []:
            qid, of = str(q.get("id")), format_points(q.get("max_score") or 0)
            if q.get("manual") and q.get("pending", True):
                shown = "pending (graded by a person)"
            else:
                shown = f"{format_points(q.get('score') or 0)}/{of}"
            rows.append({"id": qid, "title": q.get("title", ""), "shown": shown, "comment": q.get("manual_comment")})
        for row in card.get("manual_grades") or []:
            if row.get("kind") == "adjustment":
                rows.append({"id": "adjustment", "title": "", "shown": format_points(row.get("points") or 0),
                             "comment": student_comment(row.get("comment"))})  # the TA's words, not hwcheck's
        out.append({"id": sid, "score": f"{format_points(view.get('score') or 0)}/"
                                        f"{format_points(view.get('max_score') or 0)}",
                    "questions": rows, "text": feedback_text(view)})
    return out


def _unreadable_note(outdir, assignment, broken, shown):
    """What the page and the terminal say of OUTDIR's scorecards that cannot be read (`broken`, the report
    showing `shown` others): by how many the report falls short, then `hwcheck export`'s own line naming them
    and the `grade --resume` that grades them again (`checker.records.batch.unreadable_line`)."""
    from checker.records.batch import unreadable_line
    whole = shown + len(broken)
    short = (f"this report is incomplete: it leaves out {len(broken)} of the {whole} submissions graded into "
             f"{outdir} (its numbers, plots, item analysis, similarity ranking and feedback pages are of the "
             f"{shown} others). " if shown else "")
    return f"{short}{unreadable_line(outdir, assignment, broken)}, and write this report again"


def _max_depth():
    from checker.walk import MAX_DEPTH
    return MAX_DEPTH


def build_page(outdir, *, submissions_dir=None, top=50, progress=False):
    """(html text, data dict) of the report of OUTDIR (see write_report)."""
    from checker.records.classreport import html, plots, similarity, sources
    from checker.records.classreport.data import class_data
    from checker.spec import load_spec
    from checker.records.outfolder import unreadable_scorecards
    wrap = _progress(progress) or (lambda it, **kw: it)
    broken = unreadable_scorecards(outdir)  # graded, but their scorecards were emptied or cut short since
    try:
        assignment, cards = sources.read_scorecards(outdir)
    except ValueError:
        if broken:  # not "run `hwcheck grade` first": they were graded, and `grade --resume` repairs them
            from checker.records.lms import read_students
            raise ValueError("no report written: " + _unreadable_note(
                outdir, read_students(outdir).get("assignment") or "ASSIGNMENT", broken, 0)) from None
        raise
    try:
        spec = load_spec(assignment)
    except Exception:  # noqa: BLE001 - an assignment this install lacks: the scorecards' own questions
        spec = {"id": assignment}
    cards, problems, has_manual = sources.merge_manual(outdir, spec, cards, unreadable=broken)
    data = class_data(cards, spec)
    data["notes"] = [f"manual.csv: {p}" for p in problems]
    data["manual_csv"] = has_manual
    data["unreadable"] = broken
    data["incomplete"] = _unreadable_note(outdir, assignment, broken, len(cards)) if broken else ""

    codes, where = sources.locate_code(cards, submissions_dir, secrets=[outdir], names=sources.assignment_names(spec))
    given = sources.given_code(assignment)
    notes = []
    if where["missing"]:
        shown = ", ".join(where["missing"][:10]) + (", ..." if len(where["missing"]) > 10 else "")
        notes.append(f"{len(where['missing'])} of {len(cards)} submissions were not found "
                     + (f"in {submissions_dir}" if submissions_dir else "where they were graded (the folder moved?)")
                     + f" and are left out of the similarity ranking: {shown}. "
                     "Run `hwcheck report` with --submissions DIR to read them from where they are now.")
    if where.get("unreadable"):
        shown = ", ".join(where["unreadable"][:10]) + (", ..." if len(where["unreadable"]) > 10 else "")
        notes.append(f"{len(where['unreadable'])} of {len(cards)} submissions are where they were graded, but hold no "
                     "code the report may read (files it may not open, links out of their folder, no .py or .ipynb "
                     f"file) and are left out of the similarity ranking: {shown}.")
    if where.get("not_notebook"):
        shown = ", ".join(where["not_notebook"][:10]) + (", ..." if len(where["not_notebook"]) > 10 else "")
        notes.append(f"{len(where['not_notebook'])} submissions hold a .ipynb file that is not a notebook (not JSON, "
                     f"or no list of cells); it is shown without code and left out of the similarity ranking: {shown}.")
    if where.get("cut"):
        shown = ", ".join(where["cut"][:10]) + (", ..." if len(where["cut"]) > 10 else "")
        notes.append(f"{len(where['cut'])} submissions are compared in part (the report compares at most "
                     f"{sources.MAX_CODE_BYTES // 1024} KiB of code of each, the files that define the "
                     f"assignment's names first, and reads no file nested more than {_max_depth()} folders deep "
                     f"or past {sources.MAX_FILES} files): {shown}.")
    if where["changed"]:
        shown = ", ".join(where["changed"][:10]) + (", ..." if len(where["changed"]) > 10 else "")
        notes.append(f"{len(where['changed'])} submissions changed since they were graded (their sha256 differs "
                     f"from the scorecard's); the ranking compares their code as it is now: {shown}.")
    pairs = similarity.rank_pairs(codes, given, top=top, progress=_progress(progress))
    data["similarity"] = pairs
    data["similarity_notes"] = notes
    data["notes"] += notes

    figures = [("total", plots.histogram_uri(data["total"]["scores"], data["total"]["max"], "total"))]
    for qid, q in wrap([(k, v) for k, v in data["questions"].items() if v["scores"]], desc="plots"):
        figures.append((f"{qid}: {q['title']}", plots.histogram_uri(q["scores"], q["max"], f"{qid}: {q['title']}"[:60])))
    pairs_html = [(p["a"], p["b"], p["score"], *similarity.side_by_side(codes[p["a"]], codes[p["b"]], given))
                  for p in pairs[:TOP_PAIRS_SHOWN]]
    feedback = _feedback(cards, wrap)
    generated = datetime.datetime.now().isoformat(timespec="seconds")
    return html.render(data, figures, pairs_html, feedback, generated=generated), data


def write_report(outdir, output=None, *, submissions_dir=None, top=50, progress=False):
    """Write the report of OUTDIR to `output` (default OUTDIR/report.html) atomically; returns (path, data)."""
    from checker.records import owned
    from checker.records.atomic import write_text_atomic
    page, data = build_page(outdir, submissions_dir=submissions_dir, top=top, progress=progress)
    if output is None:  # hwcheck's own file in OUTDIR: beside a student's report.html, never over it (checker.records.owned)
        return owned.write_text(outdir, "report.html", page, kind="report"), data
    write_text_atomic(output, page)
    return output, data
