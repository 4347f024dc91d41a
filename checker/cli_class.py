"""The TA's commands on a graded class: report (the class report) and merge (the shards of a class).

What it is for: as thin as `checker.cli`'s commands: arguments (options from `checker.options`), a library
call (`checker.records.classreport`, `checker.records.shard`), its text, the exit status. `checker.cli` adds
them to the `hwcheck` group.

What it is not: grading (`checker.cli`'s grade and check) or the library itself.
"""

import sys

import click

from checker.cli_base import EXIT_FAILED, EXIT_OK, Fail, echo, guarded, isatty, refuse_other_tests
from checker.options import output_dir_option, report_output_option, submissions_dir_option, top_pairs_option
from checker.render.escape import for_terminal

__all__ = ["report", "merge", "COMMANDS"]


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


COMMANDS = [report, merge]
