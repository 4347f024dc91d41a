"""The `hwcheck` command line: check, grade, show, list (the course's commands, validate, kit, init-ci
and gradescope, are `checker.cli_course`'s; report, merge and export, `checker.cli_class`'s; what they share,
`checker.cli_base`).

What it is for: parsing arguments (options come from `checker.options`),
calling the library, printing its texts and choosing the exit status:

    0  success (`check`: every test that ran passed, or --min-score reached)
    1  `check`: some test failed or the submission did not load / timed out,
       or the score is below --min-score; `grade`: hwcheck could not grade
       some submission (their scorecards say why)
    2  usage errors, and errors of hwcheck or its inputs: one line on stderr,
       never a traceback (HWCHECK_DEBUG=1 shows it)
  130  interrupted by Ctrl-C (SIGINT)
  143  `grade` ended by SIGTERM (a scheduler's time limit, `timeout`, `docker
       stop`): 128 + the signal, as a shell gives each

What it is not: a place for logic. Grading is `checker.running.runner` and
`checker.records.batch`, texts are `checker.render.report`, the CI workflow is `checker.platforms.ci`.
Heavy modules (pytest, torch) are imported inside the commands that need them.
"""

import json
import os
import sys

import click

from checker._version import __version__
from checker.cli_base import (EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_TERMINATED, FAILING, Fail, cannot_write,
                              color_wanted, disk_full, echo, guarded, isatty, refuse_absent_devices,
                              resume_command)
from checker.errors import HwcheckError
from checker.cli_class import COMMANDS as CLASS_COMMANDS
from checker.cli_course import COMMANDS as COURSE_COMMANDS
from checker.render.escape import for_json_text, for_terminal
from checker.options import (all_option, assignment_option, ci_option, color_option, device_option,
                             jobs_option, json_option, junit_option, classroom_output_option,
                             keep_raw_option, min_score_option, output_dir_option, public_option,
                             required_assignment_option, resume_option, seed_option, timeout_option, only_option)
from checker.options import verbose_option
from checker.options import canvas_title_option, roster_option
from checker.options import cluster_option, scheduler_option, shard_option

__all__ = ["main", "resume_command"]


def _all_passed(view):
    """Every test that ran passed, and the submission loaded and finished."""
    if view.get("status") != "graded":
        return False
    return not any(t.get("outcome") in FAILING for q in view.get("questions") or []
                   for t in q.get("tests") or [])


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, "-V", "--version", prog_name="hwcheck", message="%(prog)s %(version)s")
def main():
    """hwcheck: check and grade the transformer homework (attention, vit, charlm).

    \b
    Students:  hwcheck check my_attention.ipynb
    TAs:       hwcheck grade submissions/ -a attention -o graded/ -j 2
    CI:        hwcheck init-ci -a attention --path attention.ipynb (from the student kit)
    """


# ---------------------------------------------------------------------------
# list
# ---------------------------------------------------------------------------

@main.command("list")
@guarded
def list_command():
    """List the assignments with their questions, titles and points."""
    from checker.spec import ambiguous_ids, assignment_ids, load_spec
    from checker.render.scorecard_text import format_points
    ambiguous = ambiguous_ids()  # two folders have the id: refused wherever it is named, said here
    for n, aid in enumerate(assignment_ids()):
        if aid in ambiguous:
            echo(("\n" if n else "") + f"{aid}  warning: {ambiguous[aid]}")
            continue
        spec = load_spec(aid)
        questions = spec.get("questions") or []
        total = sum(float(q.get("points", 0)) for q in questions)
        if n:
            echo("")
        echo(f"{aid}  {spec.get('title', '')}  ({format_points(total)} points)")
        width = max((len(str(q["id"])) for q in questions), default=2)
        for q in questions:
            manual = "  (graded by a person)" if q.get("manual") else ""
            echo(f"  {str(q['id']):<{width}}  {format_points(q.get('points', 0)):>3}  "
                       f"{q.get('title', '')}{manual}")


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------

def _repo_relative(view, submission):
    """Annotation paths relative to the current directory (the repository root in CI), not the submission."""
    import copy
    base = submission if os.path.isdir(submission) else os.path.dirname(submission)
    base = os.path.relpath(os.path.abspath(base)) if base else ""
    view = copy.deepcopy(view)
    places = [t.get("where") for q in view.get("questions", []) for t in q.get("tests", [])]
    places += (view.get("load") or {}).get("left_out") or []
    for where in places:
        if isinstance(where, dict) and where.get("file") and base not in ("", "."):
            where["file"] = os.path.join(base, where["file"])
    return view


def _stop_commands():
    """Print GitHub's `::stop-commands::TOKEN` (a fresh random token no student text can hold) and return the
    line that resumes them: between the two the runner obeys no workflow command, a second wall behind
    checker.render.escape's defusing of the report's lines. Only where the runner reads (GITHUB_ACTIONS=true)."""
    import secrets
    token = f"hwcheck-{secrets.token_hex(16)}"
    echo(f"::stop-commands::{token}", commands=True)
    return f"::{token}::"


@main.command()
@click.argument("submission", type=click.Path(exists=True, readable=True))
@assignment_option
@json_option
@device_option
@timeout_option
@ci_option
@classroom_output_option
@junit_option
@min_score_option
@color_option
@verbose_option
@guarded
def check(submission, assignment, json_file, devices, timeout, ci, classroom_output, junit_file, min_score, color,
          verbose):
    """Self-check SUBMISSION (a .py file, a notebook or a folder) on the public tests.

    Exit status: 0 when every test that ran passed, 1 when some failed (or,
    with --min-score, when the score is below it), 2 on usage or hwcheck errors.
    """
    from checker.spec import uses_torch
    from checker.running.zygote_client import Zygote
    refuse_absent_devices(devices)
    warm = bool(assignment) and uses_torch(assignment)
    # the zygote starts first: it imports torch while this process imports pytest, the grader and its tests
    zygote = Zygote(warm_meta=warm)
    try:
        from checker.running.runner import Grader
        with Grader(mode="public", devices=devices, timeout=timeout, zygote=zygote) as grader:
            card = grader.grade(submission, assignment)
    except Exception as e:  # exit status 2, said on stderr by `guarded`; under --ci also where the job shows it
        if ci:
            _ci_error(submission, e)
        raise
    finally:
        zygote.close()
    from checker.records.atomic import dumps_json, write_json_atomic, write_text_atomic
    from checker.render.github import format_markdown, github_annotations
    from checker.render.junit import junit_xml
    from checker.render.report import format_scorecard
    from checker.render.scorecard_text import min_score_line
    from checker.judging.scorecard import student_view
    view = student_view(card)

    # under the GitHub runner, it obeys no command in the text that holds the student's
    resume = _stop_commands() if ci and os.environ.get("GITHUB_ACTIONS") == "true" else None
    if json_file == "-":
        echo(for_json_text(dumps_json(view)), nl=False)
    else:
        colored = color_wanted(color) if not ci or color else False
        echo(format_scorecard(view, color=colored, verbose=verbose), color=colored)
        if json_file:
            write_json_atomic(json_file, view)
    if ci:
        if resume:
            echo(resume, commands=True)
        for line in github_annotations(_repo_relative(view, submission), min_score=min_score):
            echo(line, commands=True)
        summary = os.environ.get("GITHUB_STEP_SUMMARY")
        if summary:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(format_markdown(view, min_score=min_score))
    if junit_file:
        write_text_atomic(junit_file, junit_xml(view))
    if classroom_output:
        _classroom_output(view)

    if min_score is not None:
        ok = float(view.get("score") or 0) >= min_score
        echo(min_score_line(view, min_score), err=json_file == "-")  # stdout stays JSON with --json -
    else:
        ok = _all_passed(view)
    sys.exit(EXIT_OK if ok else EXIT_FAILED)


def _ci_error(submission, e):
    """An error that stops `check --ci` before any test ran (no assignment recognised, ...) as an `::error`
    annotation and a short step summary: on stderr alone, the job went red with neither."""
    from checker.render.github import error_annotation, error_markdown
    if isinstance(e, HwcheckError):
        text = str(e)
    elif isinstance(e, OSError):  # as `guarded` words it
        text = f"{e.strerror or e}: {e.filename}" if e.filename else str(e)
    else:
        text = f"internal error of hwcheck ({type(e).__name__}): the log of this step says more"
    echo(error_annotation(text), commands=True)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        try:
            with open(summary, "a", encoding="utf-8") as f:
                f.write(error_markdown(os.path.basename(os.path.normpath(submission)), text))
        except OSError:  # the error itself is what the step must say (on stderr, next)
            pass


def _classroom_output(view):
    """The step output `result` for GitHub Classroom's grading reporter (checker.platforms.classroom)."""
    from checker.platforms.classroom import encode_result
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        echo("hwcheck: --classroom-output: $GITHUB_OUTPUT is not set (not a GitHub Actions step): "
              "nothing written for Classroom", err=True)
        return
    with open(target, "a", encoding="ascii") as f:
        f.write(f"result={encode_result(view)}\n")


# ---------------------------------------------------------------------------
# grade
# ---------------------------------------------------------------------------

@main.command()
@click.argument("directory", type=click.Path(exists=True, file_okay=False))
@required_assignment_option
@output_dir_option
@jobs_option
@resume_option
@timeout_option
@public_option
@seed_option
@keep_raw_option
@device_option
@only_option
@roster_option
@canvas_title_option
@scheduler_option
@cluster_option
@shard_option
@guarded
def grade(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only, roster=None,
          scheduler=None, cluster=None, shard=None, canvas_title=None):
    """Grade every submission in DIRECTORY (each .py/.ipynb file or folder is one).

    \b
    Writes OUTDIR/<id>.json (scorecard), OUTDIR/gradescope/<id>/results.json
    and OUTDIR/grades.csv. Hidden tests run unless --public.
    Exit status: 0 when every submission got a scorecard from grading, 1 when
    hwcheck could not grade some or refused some (look-alike names: see the
    summary), 2 on usage or hwcheck errors.
    """
    again = resume_command(directory, assignment, outdir, jobs, timeout, public, seed, keep_raw, devices,
                           scheduler=scheduler, cluster=cluster, shard=shard, canvas_title=canvas_title, only=only)
    try:
        _grade(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only, roster,
               scheduler, cluster, shard, canvas_title, again)
    except OSError as e:  # writing OUT failed outside the batch (students.json, the exports): said as the batch says it
        why = cannot_write(e, outdir)
        if why is None:
            raise
        from checker.records.outfolder import scorecard_ids
        try:
            kept = len(scorecard_ids(outdir))
        except OSError:
            kept = 0
        if disk_full(e):
            echo(f"hwcheck: stopped: {why}: {for_terminal(outdir, newlines=False)} keeps the {kept} scorecards it "
                 f"holds (grades.csv holds them); free some space, then go on with:\n  "
                 f"{for_terminal(again, newlines=False)}", err=True)
            sys.exit(2)
        raise Fail(f"{why}: make it writable (or grade into another folder, -o), then go on with: {again}") from None


def _grade(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only, roster,
           scheduler, cluster, shard, canvas_title, again):
    from checker.records import batch

    # every refusal comes before lms.record writes OUT's students.json: those that need no listing of the folder
    # before OUT's lock is taken, the others (no submissions, an --only id no one has) after lms.listing
    batch.refuse_before_writing(outdir, assignment, "public" if public else "hidden")
    if not (scheduler or cluster):  # a cluster's workers have devices of their own
        refuse_absent_devices(devices)
    from checker.records.shard import check_shard_folder, check_shard_seed
    check_shard_folder(outdir, shard)  # a shard's own folder takes that shard only
    if shard:
        check_shard_seed(public, seed)
    from checker.records.outfolder import foreign_key_line, lock_outdir, unlock_outdir
    doing = ("`hwcheck grade --only` would regrade with a new seed and write grades.csv and canvas.csv or "
             "moodle.csv without them" if only else "`hwcheck grade --resume` would grade them all again, with a "
             "new seed" if resume else "")
    foreign = foreign_key_line(outdir, doing) if os.path.isdir(outdir) else ""
    if foreign and (only or resume):  # the gradebook and the exports rewritten without them
        raise Fail(foreign)
    if foreign:  # a plain grade grades every submission again, as asked: said, with what is lost
        echo(f"hwcheck: warning: {foreign.split(': ', 1)[0]}: every submission is graded again, with a new "
             "seed unless --seed gives it (set HWCHECK_KEY to the key that graded it to keep them)", err=True)
    made = not os.path.lexists(outdir)
    try:  # held from before the listing (which stages a student's files into OUT) to the exports: a second
        lock = lock_outdir(outdir)  # grade of this OUT is refused before it writes anything there
    except HwcheckError as e:
        raise Fail(f"{e} (nothing was written to {outdir})") from None
    try:
        _grade_locked(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only,
                      roster, scheduler, cluster, shard, canvas_title, again)
    finally:
        unlock_outdir(outdir, lock, made)  # a refused grade into a new OUT leaves none


def _grade_locked(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only,
                  roster, scheduler, cluster, shard, canvas_title, again):
    from checker.records import batch
    from checker.records.outputs import is_own_output
    executor, where = _executor(jobs, scheduler, cluster), f"-j {jobs}"
    notes = []
    from checker.records import lms  # an LMS's export: one submission per student, whatever files they handed in
    from checker.records import regrade_from  # a --resume regrades each scorecard from the file it was graded from
    mode, regrading = "public" if public else "hidden", resume and not only and not shard
    import unicodedata  # --only's ids as the listing's (NFC); the record keeps every other student's as it was
    listed, record = lms.listing(directory, outdir, notes, roster=roster, assignment=assignment, regrading=(
        regrade_from.stale_own_files(outdir, assignment, mode, timeout, devices, keep_raw) if regrading else None),
        only={unicodedata.normalize("NFC", o) for o in only} if only else None)
    entries = [(sid, path) for sid, path in listed
               if not is_own_output(outdir, path)]  # -o inside DIR: hwcheck's own files are no submission
    if regrading and entries:  # another download's scorecards, graded with other tests: regraded from their files
        more, said = regrade_from.carried(outdir, entries, assignment, mode, timeout, devices, keep_raw, directory)
        entries, notes = entries + more, notes + said
    for note in notes:
        echo(f"hwcheck: {for_terminal(note, newlines=False)}", err=True)
    # what is not graded (and why) is listed once, in the summary at the end (students.json's not_graded)
    if not entries:
        raise Fail(f"no submissions in {directory} (a submission is a .py or .ipynb file, or a folder)")
    if executor is not None:
        where = executor.describe()
    if shard:  # one slice of the folder (a CI matrix, a SLURM array), the same seed for every slice
        from checker.records.shard import shard_entries
        all_entries, entries = entries, shard_entries(entries, *shard)
        where += f", shard {shard[0]}/{shard[1]}: {len(entries)} of {len(all_entries)}"

    on_tty = isatty("stderr")
    state = {"width": 0}

    def on_progress(event):
        if on_tty:
            import shutil
            line = batch.progress_bar(event, shutil.get_terminal_size().columns)
            pad = " " * max(0, state["width"] - len(line))
            state["width"] = len(line)
            echo(line + pad, nl=False, err=True, rewind=True)
        else:
            echo(batch.progress_line(event), err=True)

    if only:  # an id no submission has is said before anything else (not after "regrading 1 of 6")
        try:
            batch.resolve_only(entries, only)
        except HwcheckError as e:
            raise Fail(" ".join(str(e).split())) from None
    regrade_from.note_folder(outdir, record, directory, latest=not only)  # the folders graded into OUT, latest last
    lms.record(outdir, record)  # OUT's record of the class, now that nothing refuses
    from checker.records.exports import canvas_unused_line, keep_canvas_title
    keep_canvas_title(outdir, canvas_title)  # kept before any grading: a stopped batch's --resume and export use it
    from checker.records.shard import write_shard_info
    # the --resume that regrades every submission not current (no --only): a shard's record, the --only warning
    everyone = resume_command(directory, assignment, outdir, jobs, timeout, public, seed, keep_raw, devices,
                              scheduler=scheduler, cluster=cluster, shard=shard, canvas_title=canvas_title)
    if shard:  # which shard this folder is, before any grading: a stopped shard is merged as incomplete
        write_shard_info(outdir, shard[0], shard[1], all_entries, assignment, seed, graded=len(entries),
                         finished=False, resume=everyone)
    asked = f"regrading {len(set(only))} of {len(entries)}" if only else f"grading {len(entries)}"
    echo(f"hwcheck: {asked} submissions of {assignment} "
               f"({'public' if public else 'hidden'} tests, {where}) into {outdir}", err=True)
    if not resume and not only:  # regrading a graded OUT: said, with the seed that keeps the inputs
        from checker.records.progress import rerun_note
        note = rerun_note(batch.collect_scorecards(outdir, assignment), [sid for sid, _ in entries], outdir,
                          assignment, "public" if public else "hidden", seed)
        if note:
            echo(f"hwcheck: {note}", err=True)
    elif resume and not only:  # scorecards of another mode, seed or spec: said before they are replaced or joined
        from checker.records.progress import resume_note
        from checker.spec import spec_sha256
        cards, ids = batch.collect_scorecards(outdir, assignment), [sid for sid, _ in entries]
        for note in (resume_note(cards, ids, outdir, assignment, "public" if public else "hidden", seed,
                                 spec_sha=spec_sha256(assignment)), batch.settings_note(cards, ids, outdir, timeout,
                                                                                        devices)):
            if note:  # other tests, seed or mode; other --timeout or --device: those are graded again
                echo(f"hwcheck: warning: {note}", err=True)
    else:  # --only: scorecards it keeps graded with another spec.toml would be mixed with the regraded ones
        from checker.records.progress import only_note
        from checker.spec import spec_sha256
        note = only_note(batch.collect_scorecards(outdir, assignment), only, outdir, assignment,
                         spec_sha256(assignment), everyone)
        if note:
            echo(f"hwcheck: warning: {note}", err=True)
    state["kept"] = 0

    def counted(event):  # what is kept, for the words on Ctrl-C
        state["kept"], state["total"] = event["done"], event["total"]  # with --only, of those asked for
        on_progress(event)

    import signal
    import threading

    def terminated(signum, frame):  # a scheduler's end of the job (SLURM's time limit, `timeout`): as Ctrl-C
        state["signal"] = signum  # ... but exits with SIGTERM's status, 143, not Ctrl-C's 130
        raise KeyboardInterrupt
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, terminated) if main_thread else None
    try:
        result = batch.grade_batch(entries, assignment, outdir, jobs=jobs, resume=resume, timeout=timeout,
                                   mode="public" if public else "hidden", keep_raw=keep_raw,
                                   on_progress=counted, seed=seed, devices=devices,
                                   only=only or None, executor=executor, held=True)
    except (KeyboardInterrupt, OSError, HwcheckError) as e:
        import errno
        if isinstance(e, OSError) and e.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        if isinstance(e, HwcheckError) and not getattr(e, "stops_batch", False):
            raise  # a stop of the batch (the Dask scheduler lost) is said as Ctrl-C's, with what is kept, exit 1
        if on_tty and state["width"]:
            echo("", err=True)
            state["width"] = 0
        why = ("interrupted" if isinstance(e, KeyboardInterrupt) else
               f"stopped: {for_terminal(str(e), newlines=False)}" if isinstance(e, HwcheckError) else
               f"stopped: the disk holding {for_terminal(outdir, newlines=False)} is full ({e.strerror or e})")
        stopped = getattr(e, "batch", None)  # the batch's own count: the scorecards that landed in OUTDIR
        kept, total = stopped.counts() if stopped is not None else (state["kept"], state.get("total", len(entries)))
        for problem in getattr(stopped, "problems", None) or []:  # grades typed into grades.csv, moved
            if problem.startswith("grades.csv"):
                echo(f"hwcheck: {for_terminal(problem, newlines=False)}", err=True)
        echo(f"hwcheck: {why}: {kept} of {total} submissions are graded "
              f"and kept in "
                   f"{for_terminal(outdir, newlines=False)} (grades.csv holds them); "
                   + ("" if isinstance(e, (KeyboardInterrupt, HwcheckError)) else "free some space, then ")
                   + "go on with:\n  " + for_terminal(again, newlines=False), err=True)
        # said once (not again by guarded); Ctrl-C 130, SIGTERM 143 (128 + the signal, as a shell gives each); the
        # cluster lost: 1, the batch did not finish (as a merge of an incomplete shard)
        sys.exit(EXIT_FAILED if isinstance(e, HwcheckError) else 2 if not isinstance(e, KeyboardInterrupt) else
                 EXIT_TERMINATED if state.get("signal") == signal.SIGTERM else EXIT_INTERRUPTED)
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)
        if on_tty and state["width"]:
            echo("", err=True)
    if shard:
        write_shard_info(outdir, shard[0], shard[1], all_entries, assignment, result.seed, graded=len(entries),
                         finished=True, resume=everyone)
    if executor is not None:
        result.jobs = executor.workers  # the summary's rate is per this many graders at once
    for line in batch.summary_lines(result):
        echo(line)
    for line in batch.after_batch(outdir, assignment, canvas_title):  # the roster's verdicts, canvas.csv / moodle.csv
        echo(for_terminal(line, newlines=False))
    unused = canvas_unused_line(outdir, canvas_title)  # --canvas on a folder of no Canvas students: said, not fatal
    if unused:
        echo(for_terminal(unused, newlines=False), err=True)
    ungraded = lms.read_students(outdir).get("ungraded")  # submissions refused (look-alike names): no scorecard
    sys.exit(EXIT_FAILED if result.internal or ungraded else EXIT_OK)


def _executor(jobs, scheduler, cluster):
    """The Dask executor of --scheduler / --cluster (checker.platforms.cluster), or None for the local processes."""
    if scheduler is None and cluster is None:
        return None
    if scheduler is not None and cluster is not None:
        raise Fail("give either --scheduler or --cluster, not both")
    if jobs != 1:
        raise Fail("-j counts processes on this machine; with --scheduler or --cluster the Dask workers grade")
    from checker.platforms.cluster import DaskExecutor
    return DaskExecutor(scheduler=scheduler, local_workers=cluster[1] if cluster else None)


# ---------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------

@main.command()
@click.argument("scorecard_file", metavar="SCORECARD.json", type=click.Path(exists=True, dir_okay=False))
@all_option
@verbose_option
@color_option
@guarded
def show(scorecard_file, show_all, verbose, color):
    """Print a scorecard as `check` would (the student's view unless --all; -v as `check -v`).

    A file in an output folder that hwcheck did not write there (a student's upload, or a scorecard edited since)
    is printed with a warning, and the exit status is 1."""
    from checker.render.report import format_scorecard
    from checker.judging.scorecard import student_view

    try:
        with open(scorecard_file, encoding="utf-8") as f:
            card = json.load(f)
    except ValueError as e:
        raise Fail(f"{scorecard_file} is not JSON ({e})") from None
    if not isinstance(card, dict) or not {"assignment", "questions", "score"} <= set(card):
        raise Fail(f"{scorecard_file} is not a hwcheck scorecard")
    try:
        from checker.judging.scorecard import validate
        validate(card)
    except ImportError:
        pass  # jsonschema is optional
    except Exception as e:  # noqa: BLE001 - jsonschema.ValidationError
        raise Fail(f"{scorecard_file} is not a valid scorecard: {getattr(e, 'message', e)}") from None
    colored = color_wanted(color)
    view = card if show_all else student_view(card)
    echo(format_scorecard(view, color=colored, verbose=show_all or verbose), color=colored)
    from checker.records.owned_listing import written_by_hwcheck
    outdir, ours = written_by_hwcheck(scorecard_file)
    if outdir is not None and not ours:  # in an output folder, yet not the file hwcheck wrote there
        echo(f"hwcheck: warning: hwcheck did not write {for_terminal(scorecard_file, newlines=False)} (or it changed "
             f"since): the output folder {for_terminal(outdir, newlines=False)} has no record of it, so what it "
             "says is no grade. The grades are in grades.csv and the scorecards hwcheck lists there.", err=True)
        sys.exit(EXIT_FAILED)


def _offer_only_what_the_kit_can_do():
    """In the student kit, `hwcheck --help` lists the student's commands only (the others stay callable)."""
    from checker.platforms.kit_files import STUDENT_COMMANDS, installed_as_kit
    if installed_as_kit():
        for name, command in main.commands.items():
            command.hidden = command.hidden or name not in STUDENT_COMMANDS
        main.help = "\n".join(line.replace("check and grade", "check") for line in (main.help or "").splitlines()
                              if "TAs:" not in line)


for _command in COURSE_COMMANDS + CLASS_COMMANDS:
    main.add_command(_command)
_offer_only_what_the_kit_can_do()

if __name__ == "__main__":
    main()
