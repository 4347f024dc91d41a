"""The TA's commands on a graded class: report (the class report), merge (the shards of a class) and export
(the gradebook and the LMS files again, after grading by hand).

What it is for: as thin as `checker.cli`'s commands: arguments (options from `checker.options`), a library
call (`checker.records.classreport`, `checker.records.shard`, `checker.records.batch` and `.exports`), its text,
the exit status. `checker.cli` adds them to the `hwcheck` group (registered after its own commands, so this
`export` is the one `hwcheck export` runs).

What it is not: grading (`checker.cli`'s grade and check) or the library itself.
"""

import os
import sys

import click

from checker.cli_base import (EXIT_FAILED, EXIT_OK, Fail, cannot_write, disk_full, echo, guarded, isatty,
                              refuse_other_tests)
from checker.options import (canvas_title_option, output_dir_option, report_output_option, submissions_dir_option,
                             top_pairs_option)
from checker.render.escape import for_terminal

__all__ = ["report", "merge", "export", "COMMANDS"]


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

@click.command()
@click.argument("outdir", metavar="OUTDIR", type=click.Path(exists=True, file_okay=False))
@report_output_option
@submissions_dir_option
@top_pairs_option
@guarded
def report(outdir, output, submissions_dir, top):
    """Write the class report of a graded OUTDIR: one self-contained HTML page.

    Score distributions, item analysis of every test, the most common named
    mistakes, submissions to open by hand, code similarity (the handout's code
    left out) and one feedback page per student. Needs the `report` extra.
    """
    from checker.records.classreport import missing_extra, write_report
    missing = missing_extra()
    if missing:
        raise Fail(f"hwcheck report needs {', '.join(missing)}: pip install 'hwcheck[report]'")
    refuse_other_tests(outdir, "`hwcheck report`", f"`hwcheck report {outdir}`")  # two specs mixed: no page
    try:
        path, data = write_report(outdir, output, submissions_dir=submissions_dir, top=top,
                                  progress=isatty("stderr"))
    except ValueError as e:
        raise Fail(str(e)) from None
    for note in data.get("notes") or []:
        echo(f"hwcheck: {note}", err=True)
    from checker.records.outfolder import batch_running
    if batch_running(outdir):  # the batch's lock: taken and let go at once (a TA's probe, h22: said nothing)
        echo(f"hwcheck: a `hwcheck grade` is writing into {outdir} now: this report shows the {data['submissions']} "
             "submissions graded so far (and may name students not graded yet among manual.csv's rows); "
             "write it again when the batch is done", err=True)
    lost = len(data.get("unreadable") or [])
    echo(f"wrote {path}: {data['submissions']} " + (f"of {data['submissions'] + lost} " if lost else "")
         + f"submissions of {data['assignment']}")
    if lost:  # said last, where it is seen, and a failure as `hwcheck export`'s: the page is short of them
        echo(f"hwcheck: {for_terminal(data['incomplete'], newlines=False)}", err=True)
        sys.exit(EXIT_FAILED)


# ---------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------

@click.command()
@click.argument("sources", nargs=-1, required=True, metavar="OUTDIR...",
                type=click.Path(exists=True, file_okay=False))
@output_dir_option
@guarded
def merge(sources, outdir):
    """Merge the output folders of `grade --shard I/N` into one OUTDIR and gradebook.

    Refuses folders of different assignments, seeds, modes, grading tests,
    --timeout, --device or hwcheck versions, and a submission graded in two
    of them. Exit status 1 when a shard is missing, or incomplete (its grade
    was stopped: it says how many are graded and the `grade ... --resume`
    that finishes it), or holds crashed scorecards (hwcheck's own failures:
    it names them and the `--resume` that grades them again).
    """
    from checker.records.shard import merge as merge_folders
    result = merge_folders(list(sources), outdir)
    for note in result.notes:
        echo(f"hwcheck: {for_terminal(note, newlines=False)}", err=True)
    echo(f"merged {result.cards} scorecards of {result.assignment} from {len(sources)} folders into "
               f"{for_terminal(outdir, newlines=False)}; wrote {for_terminal(result.gradebook, newlines=False)}")
    from checker.records import batch
    for line in batch.after_batch(outdir, result.assignment, roster=False):  # canvas.csv / moodle.csv, as grade
        echo(for_terminal(line, newlines=False))
    sys.exit(EXIT_FAILED if result.missing or result.incomplete or result.crashed else EXIT_OK)


# ---------------------------------------------------------------------------
# export
# ---------------------------------------------------------------------------

@click.command("export")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@canvas_title_option
@guarded
def export(outdir, canvas_title):
    """Write OUTDIR/canvas.csv / moodle.csv again (manual.csv's grades merged), for the LMS to import.

    grades.csv, answers.csv and the Gradescope results.json files are written
    again too, with the same grades.

    `grade` writes them when the folder graded is a Canvas or Moodle export; run
    this after grading by hand, or to give Canvas's column title (--canvas, kept
    for later runs). It names the submissions whose manual grades are pending.
    Exit status 1 when a scorecard of OUTDIR cannot be read (emptied, cut short):
    it names them, left out of the exports until `grade --resume` grades them;
    and when --canvas is given but no canvas.csv can be written (no student of
    OUTDIR has a Canvas user id): it says so, the rest written.
    """
    from checker.records import batch
    from checker.records.exports import canvas_unused_line, pending_export_line
    from checker.records.lms import read_students
    from checker.records.outfolder import foreign_key_line
    foreign = foreign_key_line(outdir, "`hwcheck export` would write grades.csv and canvas.csv or moodle.csv "
                               "without them")
    if foreign:  # scorecards another key wrote: the exports would be written without them
        raise Fail(foreign)
    refuse_other_tests(outdir, "`hwcheck export`", f"`hwcheck export {outdir}`")  # two specs mixed: nothing written
    try:
        wrote, problems, unreadable = batch.refresh_gradebook(outdir)  # grades.csv, results.json: manual.csv merged
        for problem in problems:
            echo(f"hwcheck: {for_terminal(problem, newlines=False)}", err=True)
        lines = batch.after_batch(outdir, None, canvas_title, roster=False)
        unused = canvas_unused_line(outdir, canvas_title) if wrote else ""  # keeps the title: may write
    except OSError as e:
        why = cannot_write(e, outdir)
        if why is None:
            raise
        for problem in getattr(e, "problems", None) or []:  # what was done before the stop (grades moved)
            echo(f"hwcheck: {for_terminal(problem, newlines=False)}", err=True)
        if not disk_full(e):
            raise Fail(f"{why}: hwcheck export writes grades.csv, canvas.csv or moodle.csv and the results.json "
                       f"files there, so they were not written again; make it writable (or copy {outdir} to a "
                       f"folder that is), then run `hwcheck export {outdir}` again") from None
        # each file is written whole beside its old self, then put in its place (checker.records.atomic): the
        # one that failed, and those after it, are as the last run left them; the TA's manual.csv is theirs
        raise Fail(f"stopped: {why}: the exports "
                   "(grades.csv, canvas.csv or moodle.csv, results.json) may not have been all written again "
                   "and may still hold the last run's grades. Free some space, then run `hwcheck export "
                   f"{outdir}` again.") from None
    if not lines and not wrote and not unreadable:
        raise Fail(f"{outdir} holds no scorecards of hwcheck's: grade into it first (hwcheck grade ... -o {outdir})")
    lms_file = [os.path.join(outdir, name) for name in ("canvas.csv", "moodle.csv")]
    no_lms_file = wrote and not any(line.startswith(f"wrote {path} ") for line in lines for path in lms_file)
    if not lines and wrote:
        lines = [f"wrote {os.path.join(outdir, 'grades.csv')} and the Gradescope results.json files again, manual.csv's "
                 f"grades merged; no canvas.csv or moodle.csv: {outdir} holds no Canvas or Moodle students (grade a "
                 f"Canvas or Moodle export, or give grade --roster a roster exported from one)"]
    assignment = read_students(outdir).get("assignment")
    if no_lms_file and assignment:  # with an LMS file the exports' lines say them; without, nothing did (h91)
        lines += [line for line in [pending_export_line(outdir, assignment)] if line]
    for line in lines:
        echo(for_terminal(line, newlines=False))
    crashed = batch.crashed_line(outdir)  # hwcheck's own failures: exported as 0 until `--resume` grades them
    if crashed:
        echo(f"hwcheck: warning: {for_terminal(crashed, newlines=False)}", err=True)
    if unused:  # asked for and not written: said where it is seen, and a failure (a script's upload would miss it)
        echo(f"hwcheck: {for_terminal(unused, newlines=False)}", err=True)
    if unreadable:  # said last, where it is seen; those students' grades are not exported
        echo(f"hwcheck: {for_terminal(unreadable, newlines=False)}", err=True)
    if unreadable or unused:
        sys.exit(EXIT_FAILED)


COMMANDS = [report, merge, export]
