"""The command line's options, each defined once and shared by the commands that take it.

What it is for: named, reusable click decorators in the manner of pip-tools'
`options.py`, so that `-a/--assignment` (say) reads and validates the same
way in `check`, `grade` and `init-ci`, and a command's signature is a list of
decorators. Callbacks here only validate and normalise values (a device
choice becomes a tuple of devices, `-j 0` becomes the CPU count).

What it is not: a place for behaviour. Commands live in `checker.cli`, their
logic in `checker.records.batch`, `checker.running.runner`, `checker.render.report` and `checker.platforms.ci`.
"""

import os

import click

from checker.spec import ENTRY_POINT_GROUP, ENV_VAR, assignment_ids

__all__ = [
    "DEVICE_CHOICES", "devices_of", "use_color", "AssignmentId",
    "assignment_option", "required_assignment_option", "json_option", "device_option",
    "output_dir_option", "jobs_option", "resume_option", "timeout_option", "public_option",
    "seed_option", "ci_option", "classroom_output_option", "junit_option", "min_score_option", "keep_raw_option",
    "color_option", "force_option", "all_option", "only_option", "verbose_option",
    "report_output_option", "submissions_dir_option", "top_pairs_option",
    "torch_wheel_option", "container_python_option", "online_option", "autograder_root_option",
    "skip_checks_option", "seeds_option",
]

DEVICE_CHOICES = {"cpu": ("cpu",), "cuda": ("cuda",), "all": ("cpu", "cuda")}


def devices_of(choice):
    """'cpu' -> ('cpu',), 'cuda' -> ('cuda',), 'all' -> ('cpu', 'cuda')."""
    return DEVICE_CHOICES[choice]


def use_color(flag, stream_isatty, environ=None):
    """Colour or not: an explicit --color/--no-color wins; else only on a terminal without NO_COLOR.

    NO_COLOR (https://no-color.org) counts when it is set to a non-empty value.
    """
    environ = os.environ if environ is None else environ
    if flag is not None:
        return bool(flag)
    return bool(stream_isatty) and not environ.get("NO_COLOR")


class AssignmentId(click.ParamType):
    """An assignment id among those found when the command runs (built-in, HWCHECK_ASSIGNMENTS, entry
    points: checker.spec), not a list fixed when the CLI was imported."""

    name = "assignment"

    def get_metavar(self, param, *args, **kwargs):
        return "[" + "|".join(assignment_ids()) + "]"

    def shell_complete(self, ctx, param, incomplete):
        from click.shell_completion import CompletionItem
        return [CompletionItem(a) for a in assignment_ids() if a.startswith(incomplete)]

    def convert(self, value, param, ctx):
        known = assignment_ids()
        if value not in known:
            self.fail(f"{value!r} is not one of {', '.join(map(repr, known))} (hwcheck finds assignments in its "
                      f"assignments/ folder, in {ENV_VAR} and in the entry points {ENTRY_POINT_GROUP})", param, ctx)
        return value


def _assignment(required):
    return click.option(
        "-a", "--assignment", "assignment",
        type=AssignmentId(), required=required,
        help=("The assignment." if required else
              "The assignment (default: inferred from the names the submission defines)."))


assignment_option = _assignment(required=False)
required_assignment_option = _assignment(required=True)

json_option = click.option(
    "--json", "json_file", type=click.Path(dir_okay=False, writable=True, allow_dash=True),
    default=None, metavar="FILE",
    help="Also write the scorecard as JSON to FILE (written atomically); '-' prints only the JSON.")

device_option = click.option(
    "--device", "devices", type=click.Choice(sorted(DEVICE_CHOICES)), default="all",
    show_default=True, callback=lambda ctx, param, value: devices_of(value),
    help="Which device variants of the tests to run; CUDA variants are skipped, with a reason, "
         "where CUDA is absent.")

output_dir_option = click.option(
    "-o", "--output-dir", "outdir", required=True,
    type=click.Path(file_okay=False, writable=True), metavar="OUTDIR",
    help="Folder for the scorecards, grades.csv and gradescope/<id>/results.json (created).")


def _jobs(ctx, param, value):
    return value if value > 0 else (os.cpu_count() or 1)


jobs_option = click.option(
    "-j", "--jobs", type=click.IntRange(min=0), default=1, show_default=True, callback=_jobs,
    help="Submissions graded at once (0: one per CPU).")

resume_option = click.option(
    "--resume", is_flag=True, default=False,
    help="Skip submissions whose scorecard in OUTDIR is complete and current (same submission "
         "sha256, grader version, mode, assignment and spec sha256).")

timeout_option = click.option(
    "--timeout", type=click.FloatRange(min=0, min_open=True), default=None, metavar="SECONDS",
    help="Time budget of one submission's calls; its first load may take up to twice this on top "
         "(default: the assignment's limit).")

public_option = click.option(
    "--public", "public", is_flag=True, default=False,
    help="Run only the public tests with the fixed public seed (default: hidden mode, all tests).")

seed_option = click.option(
    "--seed", type=click.IntRange(min=0, max=2**31 - 1), default=None,
    help="Run seed of the hidden tests, to reproduce a batch (default: a fresh random seed).")

ci_option = click.option(
    "--ci", is_flag=True, default=False,
    help="For CI: print GitHub annotations for failed tests and append a Markdown summary to "
         "$GITHUB_STEP_SUMMARY when it is set. No colour.")

classroom_output_option = click.option(
    "--classroom-output", is_flag=True, default=False,
    help="For GitHub Classroom: write the points per question, as Classroom's grading reporter reads them, "
         "to the step output `result` ($GITHUB_OUTPUT); see `init-ci --classroom`.")

junit_option = click.option(
    "--junit", "junit_file", type=click.Path(dir_okay=False, writable=True), default=None,
    metavar="FILE", help="Write a JUnit XML report to FILE.")

min_score_option = click.option(
    "--min-score", type=click.FloatRange(min=0), default=None, metavar="POINTS",
    help="Exit 0 when the score reaches POINTS, else 1 (instead of 'every test passed').")

keep_raw_option = click.option(
    "--keep-raw", is_flag=True, default=False,
    help="Keep pytest-json-report's raw report as OUTDIR/<id>.raw.json.")

color_option = click.option(
    "--color/--no-color", "color", default=None,
    help="Colour the report (default: only on a terminal, and never when NO_COLOR is set).")

force_option = click.option(
    "--force", is_flag=True, default=False, help="Overwrite the file if it exists.")

only_option = click.option(
    "--only", "only", multiple=True, metavar="ID",
    help="Regrade only these submissions (repeat --only for several), with the seed the batch's scorecards "
         "in OUTDIR were graded with, and rewrite grades.csv; the others keep their scorecards.")

verbose_option = click.option(
    "-v", "--verbose", "verbose", is_flag=True, default=False,
    help="Show each test: the passed ones with their points and times, and every failing variant in full "
         "(not grouped).")

all_option = click.option(
    "--all", "show_all", is_flag=True, default=False,
    help="Show everything (hidden tests, passed tests with points and times): the TA's view.")

report_output_option = click.option(
    "-o", "--output", "output", type=click.Path(dir_okay=False, writable=True), default=None,
    metavar="FILE", help="Where to write the report (default: OUTDIR/report.html).")

submissions_dir_option = click.option(
    "--submissions", "submissions_dir", type=click.Path(exists=True, file_okay=False), default=None,
    metavar="DIR", help="Where the submissions are now, when they moved since grading (the code for the "
                        "similarity ranking is read by name from there; default: where each was graded).")

top_pairs_option = click.option(
    "--top", "top", type=click.IntRange(min=0), default=50, show_default=True,
    help="How many of the most similar pairs of submissions the report lists.")

torch_wheel_option = click.option(
    "--torch-wheel", "torch_wheel", type=click.Path(exists=True, dir_okay=False), default=None, metavar="WHEEL",
    help="torch's CPU wheel (of the version installed here, for the container's Python) to put in the zip, "
         "instead of fetching it from PyTorch's CPU index while building.")

container_python_option = click.option(
    "--python", "container_python", default="3.10", show_default=True, metavar="X.Y",
    help="The python3 of the Gradescope base image the zip is for (Ubuntu 22.04, Gradescope's default: 3.10; "
         "Ubuntu 24.04: 3.12): the wheels inside are fetched for it.")

online_option = click.option(
    "--online", is_flag=True,
    help="Put only hwcheck's wheel in the zip: setup.sh fetches torch from PyTorch's CPU index and the other "
         "dependencies from PyPI (pinned to the versions here) when Gradescope builds the image. A zip of a "
         "few MB instead of ~300 MB.")

autograder_root_option = click.option(
    "--root", "root", type=click.Path(file_okay=False), metavar="DIR",
    default=lambda: os.environ.get("HWCHECK_AUTOGRADER_ROOT") or "/autograder",
    help="Gradescope's layout: grades DIR/submission, writes DIR/results/results.json "
         "(default: $HWCHECK_AUTOGRADER_ROOT, else /autograder).")

roster_option = click.option(
    "--roster", "roster", type=click.Path(exists=True, dir_okay=False), default=None, metavar="ROSTER.csv",
    help="The class roster (a CSV with name / student_id / email columns, or the LMS's gradebook export): "
         "grade lists the students with no submission and the submissions that match no student, and "
         "fills grades.csv's student columns from it.")

canvas_title_option = click.option(
    "--canvas", "canvas_title", default=None, metavar="TITLE",
    help="The title of the assignment's column in canvas.csv, as Canvas's own gradebook export writes it "
         "(\"Homework 3 (123456)\"), so that the import updates that assignment; kept in OUTDIR for later runs "
         "(default: the one kept, else the one assignment column of a --roster that is Canvas's gradebook export, "
         "else the assignment id).")

__all__ += ["roster_option", "canvas_title_option"]


def _parsed(parse):
    def callback(ctx, param, value):
        if value is None:
            return None
        try:
            return parse(value)
        except ValueError as e:
            raise click.BadParameter(str(e)) from None
    return callback


def _cluster(value):
    from checker.platforms.cluster import parse_cluster
    return parse_cluster(value)


def _scheduler(value):
    from checker.platforms.cluster import parse_scheduler
    return parse_scheduler(value)


def _shard(value):
    from checker.records.shard import parse_shard
    return parse_shard(value)


scheduler_option = click.option(
    "--scheduler", "scheduler", default=None, metavar="ADDRESS", callback=_parsed(_scheduler),
    help="Grade on the running Dask cluster at ADDRESS (tcp://HOST:8786) instead of -j processes here "
         "(pip install 'hwcheck[dask]' here and on the workers).")

cluster_option = click.option(
    "--cluster", "cluster", default=None, metavar="local:N", callback=_parsed(_cluster),
    help="Start a Dask LocalCluster of N worker processes for this batch (the 'dask' extra).")

shard_option = click.option(
    "--shard", "shard", default=None, metavar="I/N", callback=_parsed(_shard),
    help="Grade only the I-th of N deterministic slices of DIRECTORY (a CI matrix, a SLURM array); "
         "`hwcheck merge` joins the slices' output folders. Hidden mode needs --seed.")

__all__ += ["scheduler_option", "cluster_option", "shard_option"]


skip_checks_option = click.option(
    "--skip", "skip", multiple=True, type=click.Choice(["spec", "handout", "kit", "reference", "examples"]),
    metavar="CHECK", help="Leave out a check (repeatable): spec, handout, kit, reference, examples.")

seeds_option = click.option(
    "--seeds", "seeds", type=click.IntRange(min=1, max=1000), default=1, show_default=True, metavar="N",
    help="Grade the reference and the examples at N run seeds: 1234, then N-1 fresh ones, each named with "
         "what it finds (hidden inputs that only some seeds draw).")
