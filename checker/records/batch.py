"""Grade a folder of submissions: scorecards, Gradescope results, the gradebook, resumably.

What it is for: the library behind `hwcheck grade`. `list_entries(folder)`
finds the submissions (a .py or .ipynb file, or a folder; hidden entries and
other files are skipped); `grade_batch(...)` grades them and, for each, writes

    OUTDIR/<id>.json                       the full (TA) scorecard
    OUTDIR/gradescope/<id>/results.json    Gradescope's results.json
    OUTDIR/<id>.raw.json                   pytest-json-report's report (keep_raw only)

then `OUTDIR/grades.csv` over every scorecard of the assignment in OUTDIR (and
`OUTDIR/answers.csv`, the written answers to the questions a person grades).
Every file is written atomically, and the scorecard last: a scorecard that
exists is complete, which is what `resume` relies on. A submission that
cannot be graded at all gets a "crashed" scorecard with 0 points and
`grader.internal_error` set (so `resume` grades it again), and the batch
goes on. `after_batch(...)` then gives the TA's lines (what was not graded
and why, the roster's verdicts) and writes the LMS exports
(`checker.records.exports`); `hwcheck export` runs it again on its own.

Processes: with jobs == 1 everything runs in this process with one warm
zygote (a fresh one if it dies or stops answering; a submission whose card
says the grader failed, `grader.grader_failure`, is graded once more with
the fresh one). With jobs > 1, `checker.records.pool` forks trusted
worker processes over one zygote; with an executor (`checker.platforms.cluster`), a
Dask cluster grades. Each way grades a submission with `grade_one`
(`checker.records.grading`) and writes its files with `checker.records.outfolder`, so
resume, the gradebook and the progress events are the same for all. A batch
stopped (Ctrl-C, SIGTERM, a full disk) first takes in the scorecards that
landed in OUTDIR before their report was made (a Dask scorecard written just
before the signal; a -j worker's result not yet received), so the count the
stop says (`BatchResult.counts`, on the exception's `batch`) and grades.csv
are what OUTDIR keeps.

What it is not: the output folder's paths, reading and writing
(`checker.records.outfolder`), grading one submission (`checker.records.grading`), the
process pool (`checker.records.pool`), a renderer (the progress and summary texts
are `checker.records.progress`), the folder listing (`checker.records.entries`), or a
command line (`checker.cli`). The names the command line and other modules
use of those (`list_entries`, `progress_line`, `scorecard_path`,
`collect_scorecards` ...) are importable from here too, for callers of the
library; `grade_one` is looked up here when a local batch runs, so a
stand-in set on this module reaches this process and the forked workers.
"""

import collections
import os
import secrets
import time

from checker.records.entries import MAX_ID_BYTES, SUBMISSION_SUFFIXES, list_entries, skipped_entries  # noqa: F401
from checker.errors import HwcheckError
from checker.records.exports import export_lines
from checker.records.grading import crash, disk_full, grade_one, new_grader, one_line, summary_of, warm_up
from checker.records.lms import STAGE, read_students
from checker.records.moved import keep, moved, totals_written
from checker.records.outfolder import (batch_running, collect_scorecards, is_current, lock_outdir, other_assignments,
                                      remove_stale_temps, read_scorecard, restore_results, results_path, scorecard_path,
                                      unreadable_scorecards)
from checker.records.outputs import Gradebook, is_own_output
from checker.records.pool import run_parallel
from checker.records.regrade_from import graded_folder, other_settings, settings_words  # noqa: F401 - importable here
from checker.records.progress import (batch_seeds, not_graded_lines, progress_bar, progress_line,  # noqa: F401
                                      summary_lines)
from checker.records.roster import roster_lines
from checker.spec import load_spec, spec_problems, spec_sha256

__all__ = ["SUBMISSION_SUFFIXES", "BatchResult", "list_entries", "skipped_entries", "grade_batch", "resolve_only",
           "refuse_before_writing",
           "grade_one",
           "scorecard_path", "results_path", "is_current", "collect_scorecards", "progress_line", "progress_bar",
           "summary_lines", "after_batch", "other_settings", "settings_note", "crashed_line"]


class BatchResult:
    """What a batch did: one short result per submission (graded or resumed), in finishing order."""

    def __init__(self, assignment, outdir, total, jobs):
        self.assignment, self.outdir, self.total, self.jobs = assignment, outdir, total, jobs
        self.results = []
        self.started = time.monotonic()
        self.elapsed = 0.0
        self.gradebook = None
        self.answers = None  # answers.csv, when the assignment has questions a person grades
        self.interrupted = False
        self.stale = []  # ids of scorecards in OUTDIR whose submission was not in this batch
        self.seed = None  # the batch's seed (kept in its scorecards), for a later --only regrade
        self.seeds = collections.Counter()  # {seed: scorecards of OUT graded with it}, after the batch
        self.manual = None  # manual.csv, the TA's grades (checker.records.manual)
        self.manual_added = 0  # rows appended to it for new submissions
        self.manual_moved = 0  # rows appended to it: grades typed into grades.csv, moved there
        self.manual_rewritten = 0  # rows whose points a grade changed in grades.csv replaced
        self.problems = []  # rows of manual.csv that could not be used, and why
        self.scores = {}  # id -> total with manual.csv merged (the summary's statistics)
        self.pending = ""  # the line naming the submissions whose manual grades are pending

    @property
    def graded(self):
        return [r for r in self.results if not r["resumed"]]

    @property
    def resumed(self):
        return [r for r in self.results if r["resumed"]]

    @property
    def failed(self):
        """Submissions whose status is not "graded" (load failures, timeouts, crashes)."""
        return [r for r in self.results if r["status"] != "graded"]

    @property
    def internal(self):
        """Submissions hwcheck could not grade (its own failure, not the student's)."""
        return [r for r in self.results if r["internal"]]

    def counts(self):
        """(submissions done, of how many) as the progress events count them (with --only, of those regraded)."""
        kept = sum(1 for r in self.results if r.get("kept"))
        return len(self.results) - kept, self.total - kept

    def event(self, result):
        """The progress event after `result`: the result plus done/total/failed/elapsed/eta (with --only, of
        the submissions regraded: those kept as they were are no part of it)."""
        elapsed = time.monotonic() - self.started
        graded = len(self.graded)
        kept = sum(1 for r in self.results if r.get("kept"))
        left = self.total - len(self.results)
        eta = elapsed / graded * left if graded else None
        return {**result, "done": len(self.results) - kept, "total": self.total - kept,
                "failed": len(self.failed), "elapsed": elapsed, "eta": eta}


def grade_batch(entries, assignment, outdir, *, jobs=1, resume=False, timeout=None, mode="hidden",
                keep_raw=False, on_progress=None, seed=None, devices=("cpu", "cuda"), only=None, executor=None,
                held=False):
    """Grade `entries` ([(id, path)]) and write their files and the gradebook into `outdir`.

    jobs: trusted processes (1: in this process). resume: skip submissions
    whose scorecard is current (`is_current`). timeout: each submission's time
    budget in seconds (None: the spec's). mode: "hidden" or "public". seed:
    the run seed (default: random in hidden mode, the public seed in public
    mode); one seed for the whole batch, so every student gets the same
    inputs. on_progress(event) is called once per submission (see
    `BatchResult.event`). only: ids to regrade (whatever their scorecard
    says); the others keep their scorecards, and the seed, when not given,
    is the one the batch's scorecards in OUTDIR were graded with. Entries that
    are OUTDIR's own files (`checker.records.outputs.is_own_output`) are never graded.
    executor(todo, options, report), when given, grades instead of the local
    processes (`checker.platforms.cluster.DaskExecutor`). held: the caller holds OUTDIR's lock already
    (`lock_outdir`: `hwcheck grade` takes it before it lists the folder and records the class). Returns a
    `BatchResult`.
    """
    spec = refuse_before_writing(outdir, assignment, mode, held=held)
    spec_sha = spec_sha256(assignment)
    entries = [(sid, path) for sid, path in entries if not is_own_output(outdir, path)]
    if only is not None:
        only = resolve_only(entries, only)
    os.makedirs(outdir, exist_ok=True)
    lock = None if held else lock_outdir(outdir)
    try:
        return _grade_batch(list(entries), assignment, outdir, spec, spec_sha, jobs=jobs, resume=resume,
                            timeout=timeout, mode=mode, keep_raw=keep_raw, on_progress=on_progress,
                            seed=seed, devices=devices, only=only, executor=executor)
    finally:
        if lock is not None:
            os.close(lock)


def refuse_before_writing(outdir, assignment, mode="hidden", held=False):
    """Every refusal of a batch that the folder graded plays no part in, raised (HwcheckError, ValueError for a
    mode that is none) before anything is written to OUTDIR; the assignment's spec when none refuses.

    `hwcheck grade` asks it before it takes OUTDIR's lock and lists the folder (`checker.records.lms.listing`),
    and `grade_batch` again (held: this process holds the lock, so no other batch can be writing): a refused
    command leaves OUTDIR as it was (a `grade -a vit` into an OUT of
    attention's scorecards rewrote its students.json for vit, and `export` then found no scorecards of it). The
    refusals: a mode that is none, an assignment id two folders have (`checker.spec.ambiguous_ids`), hidden tests
    asked of a student kit, a spec that disagrees with its grading tests (`checker.spec.spec_problems`, what
    `hwcheck validate` and `hwcheck kit` refuse: a typo in hidden_tests grades the hidden test as a public one, a
    question marker naming no question of the spec crashes every student), an OUTDIR holding another
    assignment's scorecards, another batch writing into OUTDIR now (asked, not waited for: `batch_running`)."""
    if mode not in ("public", "hidden"):
        raise ValueError(f"mode must be 'public' or 'hidden', not {mode!r}")
    spec = load_spec(assignment)
    from checker.running.runner import KIT_HAS_NO_HIDDEN, is_student_kit
    if mode == "hidden" and is_student_kit(spec):
        raise HwcheckError(KIT_HAS_NO_HIDDEN)
    # the kit's tests lack the hidden ones its spec names (and `hwcheck kit` checked the spec before writing it)
    wrong = [] if is_student_kit(spec) else spec_problems(assignment)
    if wrong:
        raise HwcheckError(
            f"the spec of {assignment} disagrees with its grading tests, so no student is graded: "
            + "; ".join(wrong[:5]) + ("; ..." if len(wrong) > 5 else "")
            + f" (`hwcheck validate {assignment}` tells every problem; nothing was written to {outdir})")
    if not os.path.isdir(outdir):
        return spec
    others = other_assignments(outdir, assignment)
    if others:
        raise HwcheckError(
            f"{outdir} already holds scorecards of {', '.join(sorted(others))} "
            f"({sum(others.values())} files); grading {assignment} there would mix two assignments "
            f"in one grades.csv and could overwrite their scorecards: choose another output folder "
            f"(nothing was written to {outdir})")
    if not held and batch_running(outdir):
        raise HwcheckError(f"another `hwcheck grade` is writing into {outdir}; wait for it to finish "
                           f"(nothing was written to {outdir})")
    return spec


def resolve_only(entries, only):
    """The ids of `entries` ([(id, path)]) that --only names (an id as grades.csv and the messages show it, such as
    `zw\u200bspace` for an invisible character, names it too, and so does its decomposed Unicode form); HwcheckError
    naming those that are none."""
    import unicodedata

    from checker.render.escape import for_csv_cell
    shown = {for_csv_cell(sid): sid for sid, _ in entries if for_csv_cell(sid) != sid}
    # an id pasted from a macOS file name comes decomposed (NFD); ids are NFC (checker.records.ids.canonical)
    only = {unicodedata.normalize("NFC", o) for o in only}
    only = {o if o in {sid for sid, _ in entries} else shown.get(o, shown.get("'" + o, o)) for o in only}
    unknown = sorted(only - {sid for sid, _ in entries})
    if unknown:
        raise HwcheckError(f"--only: no submission {', '.join(map(repr, unknown))} in the folder graded "
                           f"(ids: {', '.join(sid for sid, _ in entries[:20])}"
                           f"{', ...' if len(entries) > 20 else ''})")
    return only


def holds_submissions(outdir, paths):
    """Does OUTDIR hold the students' own files, so that a grades.csv or manual.csv there may be a student's
    upload (`checker.records.outputs.Gradebook`)? Where `lms.prepare` graded a folder that is OUTDIR or holds
    it (students.json says so), or where a path graded is in OUTDIR, hwcheck's own copies aside: the files
    of a student who handed in several, which it puts into OUTDIR/.lms/<id>/ (in most classes one student
    does) are no student's files in OUTDIR, and counting them set aside every grade a TA typed."""
    if read_students(outdir).get("holds_submissions") is True:
        return True
    real = os.path.realpath(outdir)
    stage = os.path.join(real, STAGE) + os.sep
    return any(p.startswith(real + os.sep) and not p.startswith(stage)
               for p in (os.path.realpath(path) for path in paths if path))


def _grade_batch(entries, assignment, outdir, spec, spec_sha, *, jobs, resume, timeout, mode, keep_raw,
                 on_progress, seed, devices, only=None, executor=None):
    remove_stale_temps(outdir)
    batch = BatchResult(assignment, outdir, len(entries), jobs)
    holds = holds_submissions(outdir, [path for _, path in entries])
    book = Gradebook(outdir, spec, collect_scorecards(outdir, assignment), [sid for sid, _ in entries],
                     holds_submissions=holds)
    # the TA's file exists, with a row per submission, before the first scorecard (--only: those it grades)
    book.ensure_manual(None if only is None else [sid for sid, _ in entries if sid in only])

    told = set()  # the ids whose progress event was given
    before = dict(book.cards)  # the scorecards OUT held when the batch began (a stop tells those that landed since)
    totals = totals_written(book)  # grades.csv's totals as last written: the summary names those the batch moved

    def report(result, quiet=False):
        batch.results.append(result)
        if quiet:  # --only: a submission not asked for, kept as it was (its card is the book's already)
            return
        book.update(result["id"], scorecard_path(outdir, result["id"]))
        try:  # the gradebook stays as current as the scorecards (a SIGKILL loses nothing of it)
            book.write()
        except OSError:
            pass  # written again at the end
        tell(result)

    def tell(result):
        if on_progress is not None and result["id"] not in told:
            told.add(result["id"])
            on_progress(batch.event(result))

    todo, seeds = [], []
    if only is not None and seed is None and mode == "hidden":  # a regrade uses the batch's own seed
        seeds = batch_seeds(book.cards.values(), mode)
    for sid, path in entries:
        if only is not None and sid not in only:
            card = read_scorecard(outdir, sid)  # only a scorecard hwcheck wrote (checker.records.owned)
            if isinstance(card, dict) and isinstance(card.get("submission"), dict):
                report({**summary_of(sid, card, 0.0), "seconds": card.get("duration_s", 0.0), "resumed": True,
                        "kept": True}, quiet=True)
            else:
                batch.total -= 1  # not graded yet, and not asked for: left for a full run
            continue
        if only is None and resume and is_current(outdir, sid, path, assignment, mode, keep_raw=keep_raw,
                                                  spec_sha=spec_sha) and not other_settings(
                                                      read_scorecard(outdir, sid), timeout, devices):
            restore_results(outdir, sid)
            card = read_scorecard(outdir, sid)  # only a scorecard hwcheck wrote (checker.records.owned)
            seeds.append((card.get("grader") or {}).get("seed"))
            report({**summary_of(sid, card, 0.0), "seconds": card.get("duration_s", 0.0), "resumed": True})
        else:
            todo.append((sid, path))
    if seed is None and mode == "hidden":
        # A resumed batch goes on with the seed of its scorecards: one seed for the whole class. Where none is
        # current (the spec changed, so every one is graded again), the seed of the scorecards it replaces.
        known = [x for x in seeds if isinstance(x, int) and not isinstance(x, bool)]
        if not known and resume:
            known = batch_seeds(book.cards.values(), mode)
        seed = collections.Counter(known).most_common(1)[0][0] if known else secrets.randbits(31)
    batch.seed = seed

    # Workers may read neither the output folder nor the folders holding the other submissions.
    secrets_ = sorted({os.path.abspath(outdir)} | {os.path.dirname(os.path.abspath(p)) for _, p in entries})
    options = {"assignment": assignment, "outdir": outdir, "mode": mode, "seed": seed, "secrets": secrets_,
               "timeout": timeout, "keep_raw": keep_raw, "devices": tuple(devices)}
    try:
        if todo and executor is not None:
            executor(todo, options, report)
        elif todo and (jobs <= 1 or len(todo) == 1):
            _run_in_process(todo, options, report)
        elif todo:
            run_parallel(todo, min(jobs, len(todo)), options, report, grade=grade_one)
    except BaseException as e:
        if isinstance(e, KeyboardInterrupt):
            batch.interrupted = True
        # stopped (Ctrl-C, SIGTERM, a full disk): a scorecard may have landed in OUT and its report not been made
        # (a Dask worker's written just before the signal; a -j worker's result not yet received), or its report
        # cut short: each is told now, so the count said and grades.csv are what OUT keeps
        try:
            _landed_since(todo, before, batch, book, outdir, tell, told)
        except Exception:  # noqa: BLE001 - the stop is what is said; the count stays the events'
            pass
        e.batch = batch  # for the words on a stop: what is kept (`checker.cli`)
        raise
    finally:
        batch.elapsed = time.monotonic() - batch.started
        try:
            book.write(final=True)
        except OSError as e:
            e.batch = batch  # a full disk: the stop says what is kept
            raise
        finally:
            batch.problems = book.problems  # said on a stop too (grades typed into grades.csv, moved)
        batch.stale, batch.gradebook, batch.answers = book.stale, book.gradebook, book.answers
        batch.seeds = collections.Counter(batch_seeds(book.cards.values(), mode))  # of every scorecard kept
        batch.manual, batch.manual_added = book.manual, book.added
        batch.manual_moved, batch.manual_rewritten = book.moved, book.rewritten
        batch.totals_moved = moved(totals, book)
        batch.totals_kept = keep(outdir, batch.totals_moved)  # OUT/grades-moved.csv: the list outlives the terminal
        _merged_scores(batch, book, spec)
    return batch


def settings_note(cards, ids, outdir, timeout, devices):
    """What `grade --resume` says before it grades, where scorecards of these submissions were graded with other
    settings than this command's (`other_settings`): they are graded again, with these ('' when none is)."""
    from checker.records.shard import SETTINGS, shown_setting
    ids = set(ids)
    other = collections.defaultdict(list)
    for card in cards:
        if str((card.get("submission") or {}).get("id")) in ids:
            for key, was in other_settings(card, timeout, devices):
                other[(key, was)].append(str(card["submission"].get("id")))
    if not other:
        return ""
    now = dict(timeout=timeout, devices=tuple(sorted(d for d in ("cpu", "cuda") if d in devices)))
    said = "; ".join(f"{len(sids)} scorecard{'s' if len(sids) != 1 else ''} in {outdir} "
                     f"({', '.join(sorted(sids)[:5])}{', ...' if len(sids) > 5 else ''}) were graded with "
                     f"{shown_setting(key, was)}, this command gives {shown_setting(key, now[key])}"
                     for (key, was), sids in sorted(other.items(), key=lambda kv: (kv[0][0], str(kv[0][1]))))
    which = " and ".join(sorted({SETTINGS[key] for key, _ in other}))
    return (f"{said}: {which} decides grades, so --resume grades them again with this command's; to keep them, "
            f"stop (Ctrl-C) and rerun with the setting they were graded with")


def _landed_since(todo, before, batch, book, outdir, tell, told):
    """On a stop: report the scorecards of `todo` that landed in OUT since the batch began (not the one `before`
    held) without a report, and tell each report whose progress event was cut short."""
    reported = {r["id"]: r for r in batch.results if not r.get("resumed")}
    for sid, _ in todo:
        if sid in told:
            continue
        result = reported.get(sid)
        if result is None:
            card = read_scorecard(outdir, sid)  # only a scorecard hwcheck wrote (checker.records.owned)
            if not isinstance(card, dict) or card == before.get(sid):
                continue
            result = {**summary_of(sid, card, float(card.get("duration_s") or 0.0))}
            batch.results.append(result)
        book.update(sid)
        tell(result)


def refresh_gradebook(outdir):
    """grades.csv, answers.csv and each results.json of OUTDIR written again from its scorecards and manual.csv
    (after grading by hand: `hwcheck export`; grades typed into grades.csv are moved to manual.csv first, as a
    batch moves them), under OUTDIR's lock (while a batch writes there, HwcheckError says so). Returns (the
    gradebook written: True, or False when OUTDIR holds no scorecards, its problems, the line naming the
    scorecards that cannot be read, '' when none: those submissions are left out of grades.csv and the exports
    until `grade --resume` grades them again)."""
    known = read_students(outdir)
    assignment = known.get("assignment")
    cards = list(collect_scorecards(outdir, assignment)) if assignment else []
    broken = unreadable_scorecards(outdir) if assignment else []
    said = unreadable_line(outdir, assignment, broken)
    if not cards:
        return False, [], said or other_record_line(outdir, assignment)
    lock = lock_outdir(outdir)
    try:
        holds = holds_submissions(outdir, [str((c.get("submission") or {}).get("path") or "") for c in cards])
        book = Gradebook(outdir, load_spec(assignment), cards, [str(c["submission"].get("id")) for c in cards],
                         holds_submissions=holds, unreadable=broken)
        book.ensure_manual()  # grades typed into grades.csv move to manual.csv, as `grade --resume` moves them
        try:
            book.write(final=True)
        except OSError as e:  # a full disk: what was done before it (grades moved to manual.csv) is still said
            e.problems = book.problems
            raise
        return True, book.problems, said
    finally:
        os.close(lock)


def unreadable_line(outdir, assignment, ids):
    """The TA's line naming the scorecards of OUTDIR that cannot be read (`unreadable_scorecards`), '' for none."""
    if not ids:
        return ""
    shown = ", ".join(ids[:20]) + (f" and {len(ids) - 20} more" if len(ids) > 20 else "")
    one = len(ids) == 1
    return (f"{len(ids)} scorecard{'' if one else 's'} in {outdir} cannot be read (emptied, cut short or changed "
            f"since hwcheck wrote {'it' if one else 'them'}): {shown}; grades.csv and the exports (canvas.csv, "
            f"moodle.csv) leave {'that submission' if one else 'those submissions'} out, so their grades are not "
            f"exported; grade {'it' if one else 'them'} again with `hwcheck grade <the folder graded> -a "
            f"{assignment} -o {outdir} --resume` (it keeps every scorecard that is current), then run "
            f"`hwcheck export {outdir}` again")


def crashed_line(outdir):
    """The TA's line naming OUTDIR's crashed scorecards (hwcheck's own failures, not the students': a Dask worker
    that died twice, a grader that could not start), which grades.csv and the exports count as 0 until `grade
    --resume` grades them again; '' when there are none."""
    assignment = read_students(outdir).get("assignment")
    cards = [c for c in collect_scorecards(outdir, assignment) if c.get("status") == "crashed"] if assignment else []
    if not cards:
        return ""
    ids = sorted(str(c["submission"].get("id")) for c in cards)
    from checker.records import owned
    from checker.records.shard import SHARD_FILE
    info = owned.read_json(outdir, SHARD_FILE, "shard")
    again = info.get("resume") if isinstance(info, dict) and isinstance(info.get("resume"), str) else (
        f"hwcheck grade {graded_folder(cards) or '<the folder graded>'} -a {assignment} -o {outdir} --resume"
        f"{settings_words(cards)}")
    one = len(ids) == 1
    return (f"{len(ids)} submission{'' if one else 's'} crashed (hwcheck's own failures; rerun with --resume): "
            f"{', '.join(ids[:20])}{f' and {len(ids) - 20} more' if len(ids) > 20 else ''} "
            f"{'is' if one else 'are'} exported with 0 points; grade {'it' if one else 'them'} again with "
            f"`{again}`, then run `hwcheck export {outdir}` again")


def other_record_line(outdir, assignment):
    """The TA's line for an OUTDIR whose scorecards are of another assignment than its students.json names (one
    an older hwcheck's refused `grade -a vit` rewrote, or none there): what is wrong, and the `grade --resume`
    that writes the record again from the folder graded, keeping every scorecard; '' when OUTDIR holds no
    scorecards of hwcheck's at all."""
    from checker.records.lms import STUDENTS_JSON
    from checker.records.outfolder import scorecards_in
    cards = list(scorecards_in(outdir))
    if not cards:
        return ""
    held = collections.Counter(c["assignment"] for c in cards)
    which = " and ".join(f"{n} of {a}" for a, n in sorted(held.items()))
    which = f"of {next(iter(held))}" if len(held) == 1 else f"of hwcheck's: {which}"
    named = f"names the assignment {assignment}" if assignment else "names no assignment"
    folder = graded_folder(cards) or "<the folder graded>"
    fix = (f"`hwcheck grade {folder} -a {next(iter(held))} -o {outdir} --resume{settings_words(cards)}` writes "
           f"that record again from "
           f"the folder graded (it keeps every scorecard that is current and grades none of them again), then run "
           f"`hwcheck export {outdir}` again" if len(held) == 1 else
           f"it holds scorecards of {len(held)} assignments: grade each into an output folder of its own")
    return (f"{outdir} holds {len(cards)} scorecard{'s' if len(cards) != 1 else ''} {which}, but its record of the "
            f"class ({STUDENTS_JSON}, written by `hwcheck grade`) {named} (an older hwcheck rewrote it in a `grade` "
            f"of another assignment that it then refused): nothing was exported and no scorecard "
            f"changed; {fix}")


def graded_with_other_tests(outdir):
    """OUTDIR's scorecards graded with other grading tests than its assignment's now (their
    `grader.spec_sha256` differs from `checker.spec.spec_sha256`'s, as `--resume` and `--only` tell them):
    None when every one is current (or the assignment is not known here), else a dict: assignment, stale (how
    many), total (scorecards of the assignment), folder (`graded_folder`), public (the stale ones' mode) and
    resume (the `--resume` command a shard's shard.json keeps, else `regrade_from.regrade_command`'s). Combining
    those scorecards with manual.csv judged against the spec as it is now would mix two specs' maxima: `hwcheck
    export`, `report` and `merge` refuse, naming the `grade ... --resume` that regrades them."""
    assignment = read_students(outdir).get("assignment")
    if not assignment:
        return None
    try:
        sha = spec_sha256(assignment)
    except Exception:  # noqa: BLE001 - an assignment this install lacks: nothing to compare with
        return None
    cards = collect_scorecards(outdir, assignment)
    stale = [c for c in cards if (c.get("grader") or {}).get("spec_sha256") != sha]
    if not stale:
        return None
    from checker.records import owned
    from checker.records.shard import SHARD_FILE
    info = owned.read_json(outdir, SHARD_FILE, "shard")
    resume = info.get("resume") if isinstance(info, dict) and isinstance(info.get("resume"), str) else None
    public = collections.Counter((c.get("grader") or {}).get("mode") for c in stale).most_common(1)[0][0] == "public"
    if resume is None:  # the latest folder graded: its --resume regrades the others' from their own files too
        from checker.records.regrade_from import regrade_command
        resume = regrade_command(outdir, assignment, cards, stale, public)
    return {"assignment": assignment, "stale": len(stale), "total": len(cards), "folder": graded_folder(cards),
            "public": public, "resume": resume}


def after_batch(outdir, assignment=None, canvas_title=None, roster=True):
    """The TA's lines after a batch: what was not graded and why, the roster's verdicts (both when roster:
    after `hwcheck grade`), and the LMS exports written.

    assignment None: the one `checker.records.lms.prepare` recorded in students.json.
    """
    known = read_students(outdir)
    assignment = assignment or known.get("assignment")
    people = known.get("students") if isinstance(known.get("students"), dict) else {}
    lines = not_graded_lines(known.get("not_graded")) + roster_lines(known.get("roster"), people) if roster else []
    if not assignment or not people:
        return lines
    roster_file = known.get("roster_file") if roster and isinstance(known.get("roster_file"), str) else None
    # canvas.csv's title; the manual grades pending (after `grade`, its summary says them)
    return lines + export_lines(outdir, assignment, canvas_title, roster_file, pending=not roster)


def _merged_scores(batch, book, spec):
    """The batch's totals with manual.csv merged (the summary's statistics) and its pending manual grades."""
    from checker.records.manual import pending_line
    cards = {str(c["submission"].get("id")): c for c in book.merged()[0]}
    ours = [cards[r["id"]] for r in batch.results if r["id"] in cards]
    batch.scores = {str(c["submission"].get("id")): c.get("score") for c in ours}
    batch.pending = pending_line(ours, spec)


def _run_in_process(todo, options, report):
    grader = new_grader(options)  # its zygote imports torch while this process warms up
    warm_up(options["assignment"])
    try:
        for sid, path in todo:
            for _attempt in range(2):
                if grader is not None and not grader.zygote.alive():
                    grader.close()  # the zygote died: start a fresh one for the rest
                    grader = None
                if grader is None:
                    grader = new_grader(options)  # a zygote that cannot start stops the batch (exit 2)
                try:
                    result = grade_one(grader, sid, path, options["assignment"], options["outdir"],
                                       keep_raw=options["keep_raw"])
                except Exception as e:  # noqa: BLE001 - writing its files failed: the batch goes on
                    if disk_full(e):
                        raise  # ... unless OUT's disk is full: every one left would fail so (the TA resumes)
                    result = crash(sid, path, options, f"writing its files failed: {type(e).__name__}: "
                                                       f"{one_line(e)}")
                if not result.get("grader_failure"):
                    break
                # the zygote died or hangs (maybe over another submission's leftovers): this one is not
                # charged for it; a fresh zygote grades it once more (its card says so if that fails too)
                grader.close()
                grader = None
            report(result)
    finally:
        if grader is not None:
            grader.close()
