"""What a batch prints: a progress line or bar per submission, and the summary after it.

What it is for: pure texts from the batch's events and result (`progress_line`, `progress_bar`,
`summary_lines`, whose scores are the totals with manual.csv merged, which names the manual grades
pending, with --only tells the regrade apart from the submissions kept, and says when the totals are
out of different maxima (scorecards of two spec.toml files); `rerun_note`, said before a batch
regrades an OUT that holds scorecards without --resume; `resume_note` and `only_note`, said before
--resume or --only where OUT's scorecards were graded otherwise: another mode, seed or spec.toml
(`batch_seeds`: the seeds they were graded with); `not_graded_lines`, every file or folder of the
graded folder that was not graded, with the reason), every student-controlled string kept on its
line and escaped (`checker.render.escape`); `isolation_gaps` picks from a scorecard's
`grader.isolation` the walls that could not be put up, which the summary names once per batch; the students whose
total the batch moved (`checker.records.moved`).

What it is not: the batch (`checker.records.batch`) or the command line; it prints nothing itself.
"""

import collections
import math
import os
import statistics

from checker.records.moved import moved_lines
from checker.render.escape import for_terminal
from checker.render.scorecard_text import format_points
from checker.judging.scorecard import STATUSES

__all__ = ["progress_line", "progress_bar", "summary_lines", "isolation_gaps", "not_graded_lines", "rerun_note",
           "resume_note", "only_note", "batch_seeds"]

def _pts(x):
    return format_points(x)  # as `check` and `show` print points: 84.34, not 84.3396


def _clock(seconds):
    if seconds is None or not math.isfinite(seconds):
        return "--:--"
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


def _line(text):
    """A student-controlled string (an id, a message quoting a file name) kept inside its one line, escaped."""
    return for_terminal(text, newlines=False)


# words in grader.isolation that name a wall missing on the machine that ran the worker
_GAP_MARKS = ("unavailable", "failed", "uid-0-kept", "no-memory-cap", "namespaces-off")


def isolation_gaps(walls):
    """The entries of a scorecard's grader.isolation that say a wall could not be put up."""
    if not isinstance(walls, list):
        return []
    return [str(w)[:120] for w in walls if isinstance(w, str) and any(m in w for m in _GAP_MARKS)]


def progress_line(event):
    """`[3/12] alice: 72.5/100 graded 1.2s` (one line per submission, for logs)."""
    width = len(str(event["total"]))
    head = f"[{event['done']:>{width}}/{event['total']}] {_line(event['id'])}: "
    body = f"{_pts(event['score'])}/{_pts(event['max_score'])} {event['status']}"
    if event.get("resumed"):
        tail = " (up to date, not regraded)"
    else:
        tail = f" {float(event.get('seconds') or 0):.1f}s"
    if event.get("internal"):
        tail += f" - hwcheck could not grade it: {_line(event['internal'])}"
    return head + body + tail


def progress_bar(event, width=80):
    """One line, rewritten in place on a terminal: bar, done/total, failed, ETA, last id."""
    done, total = event["done"], event["total"]
    stats = f" {done}/{total}  failed {event['failed']}  ETA {_clock(event.get('eta')) if done < total else '0:00'}"
    bar_width = max(10, min(40, width - len(stats) - 20))
    filled = int(bar_width * done / total) if total else bar_width
    line = f"[{'#' * filled}{'.' * (bar_width - filled)}]{stats}  {_line(event['id'])}"
    return line[:max(width - 1, 20)]


def summary_lines(batch):
    """The lines printed after a batch."""
    results = batch.results
    graded, resumed = batch.graded, batch.resumed
    kept = [r for r in results if r.get("kept")]  # --only: not asked for, kept as they were
    rate = len(graded) / batch.elapsed * 60 if batch.elapsed > 0 and graded else 0
    per_minute = f"; {rate:.1f} per minute with -j {batch.jobs}" if graded else ""
    if kept:
        lines = [f"{batch.assignment}: {len(graded)} regraded (--only) in {batch.elapsed:.1f} s; "
                 f"{len(kept)} kept as they were ({len(results)}/{batch.total} submissions)"]
    else:
        lines = [f"{batch.assignment}: {len(results)}/{batch.total} submissions in {batch.elapsed:.1f} s "
                 f"({len(graded)} graded, {len(resumed)} up to date{per_minute})"]
    if results:
        counts = collections.Counter(r["status"] for r in results)
        lines.append("  status: " + ", ".join(f"{s} {counts[s]}" for s in STATUSES if counts[s]))
        merged = getattr(batch, "scores", None) or {}  # with manual.csv merged, when the batch has them
        scores = [float(merged.get(r["id"], r["score"]) or 0) for r in results]
        maxima = collections.Counter(_pts(r["max_score"]) for r in results if r.get("status") in STATUSES)
        out_of = f"of {_pts(results[0]['max_score'])}"
        if len(maxima) > 1:  # scorecards of two spec.toml files (--only after the spec changed)
            out_of = (f"out of {', '.join(f'{m} for {n}' for m, n in maxima.most_common())}: graded with different "
                      f"spec.toml files; `--resume` regrades the older ones with the batch's seed")
        lines.append(f"  score: mean {_pts(round(statistics.mean(scores), 2))}, "
                     f"median {_pts(round(statistics.median(scores), 2))}, "
                     f"min {_pts(min(scores))}, max {_pts(max(scores))} ({out_of})")
    elsewhere = collections.Counter(r["written_for"] for r in results if isinstance(r.get("written_for"), str))
    for other, n in elsewhere.most_common(1):  # most of the class handed in another assignment's names: a wrong -a
        if n * 2 >= len(results):
            lines.append(f"  warning: {n} of {len(results)} submissions define none of {batch.assignment}'s names "
                         f"and most of {_line(other)}'s: were they written for {_line(other)}? (hwcheck grade ... "
                         f"-a {_line(other)})")
    gaps = sorted({g for r in results for g in r.get("gaps") or ()})
    if gaps:  # once per batch: how protected this run was (the README's trust model says what each means)
        lines.append(f"  isolation: walls missing on this machine: {_line(', '.join(gaps))} "
                     "(see the README's trust model; each scorecard's grader.isolation lists the walls)")
    for r in batch.internal:
        lines.append(f"  not graded: {_line(r['id'])}: {_line(r['internal'])}")
    if batch.internal:
        lines.append("  (hwcheck's own failures; rerun with --resume to grade those again)")
    if batch.interrupted:
        lines.append("  interrupted: rerun with --resume to grade the rest")
    if batch.stale:
        lines.append(f"  {len(batch.stale)} older scorecards in {_line(batch.outdir)} are of submissions not in this "
                     f"folder ({_line(', '.join(batch.stale[:5]))}{', ...' if len(batch.stale) > 5 else ''}); "
                     f"grades.csv keeps them, marked in its note column")
    lines += [_line(line) for line in moved_lines(getattr(batch, "totals_moved", None),
                                                    getattr(batch, "totals_kept", None))]  # whose total moved
    if batch.gradebook:
        lines.append(f"  wrote {batch.gradebook}, scorecards in {batch.outdir}, "
                     f"Gradescope files in {os.path.join(batch.outdir, 'gradescope')}")
    if batch.answers:
        lines.append(f"  wrote {batch.answers}: the written answers, for the questions graded by a person")
    if batch.manual:
        added, moved = batch.manual_added, getattr(batch, "manual_moved", 0)
        rewritten = getattr(batch, "manual_rewritten", 0)
        said = ([f"{added} row{'s' if added != 1 else ''} added for new submissions"] if added else []) + \
            ([f"{moved} grade{'s' if moved != 1 else ''} typed into grades.csv moved here"] if moved else []) + \
            ([f"{rewritten} grade{'s' if rewritten != 1 else ''} changed in grades.csv written into "
              f"{'their rows' if rewritten != 1 else 'its row'}"] if rewritten else [])
        added = f" ({'; '.join(said)})" if said else ""
        lines.append(f"  manual grades: {_line(batch.manual)}{added}, yours to edit (points and comments; "
                     f"hwcheck appends rows, and writes into a row only a grade typed into grades.csv: a row's "
                     f"points changed there, or an empty row's grade and comment), "
                     f"merged into grades.csv and the totals")
    if getattr(batch, "pending", ""):
        lines.append(f"  {_line(batch.pending)}")
    for problem in batch.problems[:20]:
        lines.append(f"  {_line(problem)}")
    if len(batch.problems) > 20:
        lines.append(f"  ... and {len(batch.problems) - 20} more rows of manual.csv not used")
    seeds = getattr(batch, "seeds", None) or {}
    if batch.seed is not None and len(seeds) > 1:  # a --resume with another --seed (warned before it graded)
        shown = ", ".join(f"{s} ({n} scorecard{'s' * (n > 1)})" for s, n in sorted(seeds.items(), key=lambda x: -x[1]))
        lines.append(f"  seeds {shown}: the submissions got different hidden inputs; `--only ID` regrades a "
                     f"submission with seed {batch.seed}, and `--resume --seed N` grades new ones with N")
    elif batch.seed is not None:
        lines.append(f"  seed {batch.seed} (kept in the scorecards: `--only ID` regrades a submission with it)")
    return lines


def not_graded_lines(items):
    """The summary's list of every entry of the folder graded that was not graded, each with its reason.

    items: [(name, why)] as `checker.records.lms.prepare` records them (names in quotes, so that a space at an end
    shows; invisible characters are shown escaped)."""
    good = sorted({(str(n), str(w)) for n, w in (
        (i[0], i[1]) for i in items or () if isinstance(i, (list, tuple)) and len(i) == 2)})
    if not good:
        return []
    lines = [f"  not graded: {len(good)} {'entry' if len(good) == 1 else 'entries'} of the folder graded "
             f"(rename or unpack them and grade again, or grade them by hand):"]
    lines += [f"  not graded: '{_line(name)}': {_line(why)}" for name, why in good]
    return lines


def rerun_note(cards, ids, outdir, assignment, mode, seed):
    """What a `grade` without --resume or --only says before regrading an OUT that holds scorecards of these
    submissions ('' when it holds none): everyone is graded again, and, in hidden mode with no --seed, with a
    new seed (the hidden tests' inputs change for everyone) and the seed that keeps them."""
    ids = set(ids)
    before = [c for c in cards if str((c.get("submission") or {}).get("id")) in ids]
    if not before:
        return ""
    note = (f"{_line(outdir)} already holds {len(before)} scorecards of {assignment}: without --resume all "
            f"{len(ids)} submissions are graded again (--resume grades only the new and changed ones)")
    seeds = [(c.get("grader") or {}).get("seed") for c in before
             if (c.get("grader") or {}).get("mode") == mode and not (c.get("grader") or {}).get("internal_error")]
    seeds = [x for x in seeds if isinstance(x, int) and not isinstance(x, bool)]
    if mode == "hidden" and seed is None and seeds:
        old = collections.Counter(seeds).most_common(1)[0][0]
        note += (f", with a new seed: the hidden tests' inputs change for everyone; to keep the seed they were "
                 f"graded with, stop (Ctrl-C) and rerun with --seed {old} (or --resume)")
    return note


def resume_note(cards, ids, outdir, assignment, mode, seed, spec_sha=None):
    """What `grade --resume` says before it grades, where OUT's scorecards of these submissions were graded
    otherwise ('' when nothing differs): in another mode (every one of them is graded again, in this mode),
    with other grading files than `spec_sha`'s (`checker.spec.spec_sha256`: graded again, with the batch's seed), or in hidden mode with
    another seed than the --seed given (the new ones get other inputs than the rest)."""
    ids = set(ids)
    graders = [c.get("grader") or {} for c in cards if str((c.get("submission") or {}).get("id")) in ids]
    graders = [g for g in graders if not g.get("internal_error")]
    other = [g for g in graders if g.get("mode") in ("public", "hidden") and g.get("mode") != mode]
    if other:
        was = collections.Counter(g["mode"] for g in other).most_common(1)[0][0]
        return (f"{_line(outdir)} holds {len(other)} scorecards of {assignment} graded with the {was} tests: "
                f"--resume grades them all again with the {mode} tests"
                + (" (their hidden tests are dropped)" if mode == "public" else "")
                + f"; to keep them, stop (Ctrl-C) and rerun {'with' if was == 'public' else 'without'} --public")
    seeds = [g.get("seed") for g in graders if g.get("mode") == mode == "hidden"]
    seeds = [x for x in seeds if isinstance(x, int) and not isinstance(x, bool)]
    old = collections.Counter(seeds).most_common(1)[0][0] if seeds else None
    changed = [g for g in graders if spec_sha and g.get("mode") == mode and g.get("spec_sha256") != spec_sha]
    said = ""
    if changed:  # every one of them is graded again: said, with the seed that keeps the hidden inputs
        said = (f"{assignment}'s grading tests changed since {len(changed)} of the {len(graders)} scorecards in "
                f"{_line(outdir)} were graded (its spec.toml, a test or helper file, or the reference edited, or "
                f"another copy of the assignment): --resume grades those {len(changed)} again with the new tests")
        if mode == "hidden" and seed is None and old is not None:
            said += f", with the batch's seed {old}, so their hidden inputs stay the same"
        said += "; to keep the old grades instead, stop (Ctrl-C) and put the old files back"
    if seed is not None and old is not None and any(x != seed for x in seeds):
        said += ("; " if said else "") + (
            f"{_line(outdir)} holds scorecards graded with seed {old}; --seed {seed} gives the submissions "
            f"graded now other hidden inputs than theirs; to grade everyone alike, stop (Ctrl-C) and rerun "
            f"with --seed {old} (or without --seed)")
    return said


def only_note(cards, only, outdir, assignment, spec_sha, resume):
    """What `grade --only` says before it regrades, where the scorecards it keeps were graded with another
    grading files than the assignment's now (`checker.spec.spec_sha256`; '' when none was): the regraded ones would be graded out of the new
    points, the rest out of the old, in one grades.csv and export; `resume` is the command that regrades
    everyone with the new spec and the batch's seed."""
    only = set(only)
    kept = [c for c in cards if str((c.get("submission") or {}).get("id")) not in only
            and not (c.get("grader") or {}).get("internal_error")]
    other = [c for c in kept if (c.get("grader") or {}).get("spec_sha256") != spec_sha]
    if not other:
        return ""
    maxima = sorted({_pts(c.get("max_score")) for c in other if isinstance(c.get("max_score"), (int, float))})
    out_of = f" (out of {' or '.join(maxima)} points)" if maxima else ""
    return (f"{assignment}'s grading tests changed (its spec.toml, a test or helper file, or the reference) since "
            f"the batch in {_line(outdir)} was graded: {len(other)} of the "
            f"{len(kept)} scorecards --only keeps were graded with the old ones{out_of}, and --only grades "
            f"{', '.join(_line(i) for i in sorted(only)[:5])}{', ...' if len(only) > 5 else ''} with the new ones, so "
            f"grades.csv and the exports would mix the two; to regrade everyone with the new tests and the batch's "
            f"seed, run instead: {_line(resume)}")


def batch_seeds(cards, mode):
    """The seeds OUT's scorecards of `mode` were graded with (hwcheck's own failures left out): a regrade
    (`--only`, or `--resume` where none is current) goes on with the most common."""
    seeds = [(c.get("grader") or {}).get("seed") for c in cards
             if (c.get("grader") or {}).get("mode") == mode and not (c.get("grader") or {}).get("internal_error")]
    return [x for x in seeds if isinstance(x, int) and not isinstance(x, bool)]

