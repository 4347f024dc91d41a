"""The `hwcheck` command line: check, grade, show, report, list, init-ci.

What it is for: parsing arguments (options come from `checker.options`),
calling the library, printing its texts and choosing the exit status:

    0  success (`check`: every test that ran passed, or --min-score reached)
    1  `check`: some test failed or the submission did not load / timed out,
       or the score is below --min-score; `grade`: hwcheck could not grade
       some submission (their scorecards say why)
    2  usage errors, and errors of hwcheck or its inputs: one line on stderr,
       never a traceback (HWCHECK_DEBUG=1 shows it)

What it is not: a place for logic. Grading is `checker.running.runner` and
`checker.records.batch`, texts are `checker.render.report`, the CI workflow is `checker.platforms.ci`.
Heavy modules (pytest, torch) are imported inside the commands that need them.
"""

import contextlib
import functools
import json
import os
import sys

import click

from checker._version import __version__
from checker.errors import HwcheckError
from checker.render.escape import for_json_text, for_output, for_terminal
from checker.options import (DEVICE_CHOICES, all_option, assignment_option, ci_option, color_option, device_option,
                             force_option, jobs_option, json_option, junit_option, classroom_output_option,
                             keep_raw_option, min_score_option, output_dir_option, public_option,
                             required_assignment_option, resume_option, seed_option, timeout_option, only_option,
                             use_color)
from checker.options import report_output_option, submissions_dir_option, top_pairs_option, verbose_option

from checker.options import autograder_root_option, container_python_option, online_option, torch_wheel_option
from checker.options import canvas_title_option, roster_option
from checker.options import cluster_option, scheduler_option, shard_option
from checker.options import seeds_option, skip_checks_option

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_ERROR, EXIT_INTERRUPTED = 0, 1, 2, 130
_FAILING = ("failed", "error", "timeout")


def _echo(message="", *, err=False, nl=True, color=None, commands=False, rewind=False):
    """The one way hwcheck prints: `checker.render.escape.for_output` over the whole text, so no control, bidi or
    ignorable character and no GitHub workflow command reaches a terminal or a CI log, whatever pieces a
    caller forgot to escape or put side by side. color: keep hwcheck's own colour codes; commands: the lines
    are hwcheck's own workflow commands; rewind: a carriage return first (a progress bar redrawn in place)."""
    text = for_output(message, color=bool(color), commands=commands)
    click.echo(("\r" if rewind else "") + text, err=err, nl=nl, color=color)


class Fail(click.ClickException):
    """An error to report in one line on stderr, exit status 2."""

    exit_code = EXIT_ERROR

    def show(self, file=None):
        _echo(f"hwcheck: error: {for_terminal(self.format_message(), newlines=False)}", err=True)


def _guarded(f):
    """Turn hwcheck's errors into one line and exit 2; never show a traceback (unless HWCHECK_DEBUG)."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            _echo("\nhwcheck: interrupted", err=True)
            sys.exit(EXIT_INTERRUPTED)
        except HwcheckError as e:
            raise Fail(" ".join(str(e).split()) or type(e).__name__) from None
        except OSError as e:
            raise Fail(f"{e.strerror or e}: {e.filename}" if e.filename else str(e)) from None
        except Exception as e:  # noqa: BLE001 - a bug of hwcheck: one line, exit 2
            if os.environ.get("HWCHECK_DEBUG"):
                raise
            raise Fail(f"internal error ({type(e).__name__}: {' '.join(str(e).split())[:300]}); "
                       "run again with HWCHECK_DEBUG=1 to see where") from None
    return wrapper


def _isatty(name):
    """Whether sys.stdout / sys.stderr (as they are now: CliRunner replaces them) is a terminal."""
    try:
        return bool(getattr(sys, name).isatty())
    except (AttributeError, ValueError, OSError):
        return False


def _color(flag):
    return use_color(flag, _isatty("stdout"))


def _all_passed(view):
    """Every test that ran passed, and the submission loaded and finished."""
    if view.get("status") != "graded":
        return False
    return not any(t.get("outcome") in _FAILING for q in view.get("questions") or []
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
@_guarded
def list_command():
    """List the assignments with their questions, titles and points."""
    from checker.spec import assignment_ids, load_spec
    from checker.render.report import format_points
    for n, aid in enumerate(assignment_ids()):
        spec = load_spec(aid)
        questions = spec.get("questions") or []
        total = sum(float(q.get("points", 0)) for q in questions)
        if n:
            _echo("")
        _echo(f"{aid}  {spec.get('title', '')}  ({format_points(total)} points)")
        width = max((len(str(q["id"])) for q in questions), default=2)
        for q in questions:
            manual = "  (graded by a person)" if q.get("manual") else ""
            _echo(f"  {str(q['id']):<{width}}  {format_points(q.get('points', 0)):>3}  "
                       f"{q.get('title', '')}{manual}")


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------

# ---------------------------------------------------------------------------
# validate
# ---------------------------------------------------------------------------

@main.command()
@click.argument("targets", nargs=-1, metavar="[ASSIGNMENT|DIR]...")
@skip_checks_option
@seeds_option
@_guarded
def validate(targets, skip, seeds):
    """Check that assignments hold together (every one hwcheck finds, when none is named).

    \b
    spec       every hidden_tests name is a test; every question has tests; points are positive
    handout    README.md names, and starter.ipynb defines, every function the spec grades
    kit        the kit holds no hidden test, and no code it ships computes an answer
    reference  the reference earns full marks on the public and hidden tests
    examples   every example submission earns its expected.json verdicts
    The last two grade in hidden mode at run seed 1234 (--seeds N: at N seeds).
    Exit status 1 when a check finds a problem. See docs/authoring.md.
    """
    from checker.running.runner import Grader
    from checker.spec import assignment_ids, discovery_problems
    from checker.platforms.validate import CHECKS, extra_seeds, resolve
    from checker.platforms.validate import validate as run_checks
    aids = [resolve(t) for t in targets] or assignment_ids()
    checks = [c for c in CHECKS if c not in skip]
    unused = discovery_problems()  # a folder or entry point named but not used: told once, a problem
    for p in unused:
        _echo(f"hwcheck: {p}")
    problems = len(unused)
    graded = {"reference", "examples"} & set(checks)  # the others read files only: no zygote
    with (Grader(mode="hidden", seed=1234) if graded else contextlib.nullcontext()) as grader:
        for aid in aids:
            problems += len(run_checks(aid, checks=checks, grader=grader, echo=_echo,
                                       seeds=extra_seeds(seeds) if graded else None))
    _echo(f"{len(aids)} assignment(s): " + (f"{problems} problem(s)" if problems else "every check passed"))
    sys.exit(EXIT_FAILED if problems else EXIT_OK)


def _repo_relative(view, submission):
    """Annotation paths relative to the current directory (the repository root in CI), not the submission."""
    import copy
    base = submission if os.path.isdir(submission) else os.path.dirname(submission)
    base = os.path.relpath(os.path.abspath(base)) if base else ""
    view = copy.deepcopy(view)
    for q in view.get("questions", []):
        for t in q.get("tests", []):
            where = t.get("where")
            if isinstance(where, dict) and where.get("file") and base not in ("", "."):
                where["file"] = os.path.join(base, where["file"])
    return view


def _stop_commands():
    """Print GitHub's `::stop-commands::TOKEN` (a fresh random token no student text can hold) and return the
    line that resumes them: between the two the runner obeys no workflow command, a second wall behind
    checker.render.escape's defusing of the report's lines. Only where the runner reads (GITHUB_ACTIONS=true)."""
    import secrets
    token = f"hwcheck-{secrets.token_hex(16)}"
    _echo(f"::stop-commands::{token}", commands=True)
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
@_guarded
def check(submission, assignment, json_file, devices, timeout, ci, classroom_output, junit_file, min_score, color,
          verbose):
    """Self-check SUBMISSION (a .py file, a notebook or a folder) on the public tests.

    Exit status: 0 when every test that ran passed, 1 when some failed (or,
    with --min-score, when the score is below it), 2 on usage or hwcheck errors.
    """
    from checker.spec import load_spec
    from checker.running.zygote_client import Zygote
    warm = bool(assignment) and load_spec(assignment).get("framework") == "torch"
    # the zygote starts first: it imports torch while this process imports pytest, the grader and its tests
    zygote = Zygote(warm_meta=warm)
    try:
        from checker.running.runner import Grader
        with Grader(mode="public", devices=devices, timeout=timeout, zygote=zygote) as grader:
            card = grader.grade(submission, assignment)
    finally:
        zygote.close()
    from checker.records.atomic import dumps_json, write_json_atomic, write_text_atomic
    from checker.render.report import format_markdown, format_scorecard, github_annotations, junit_xml, min_score_line
    from checker.judging.scorecard import student_view
    view = student_view(card)

    # under the GitHub runner, it obeys no command in the text that holds the student's
    resume = _stop_commands() if ci and os.environ.get("GITHUB_ACTIONS") == "true" else None
    if json_file == "-":
        _echo(for_json_text(dumps_json(view)), nl=False)
    else:
        colored = _color(color) if not ci or color else False
        _echo(format_scorecard(view, color=colored, verbose=verbose), color=colored)
        if json_file:
            write_json_atomic(json_file, view)
    if ci:
        if resume:
            _echo(resume, commands=True)
        for line in github_annotations(_repo_relative(view, submission), min_score=min_score):
            _echo(line, commands=True)
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
        _echo(min_score_line(view, min_score), err=json_file == "-")  # stdout stays JSON with --json -
    else:
        ok = _all_passed(view)
    sys.exit(EXIT_OK if ok else EXIT_FAILED)


def _classroom_output(view):
    """The step output `result` for GitHub Classroom's grading reporter (checker.platforms.classroom)."""
    from checker.platforms.classroom import encode_result
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        _echo("hwcheck: --classroom-output: $GITHUB_OUTPUT is not set (not a GitHub Actions step): "
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
@_guarded
def grade(directory, assignment, outdir, jobs, resume, timeout, public, seed, keep_raw, devices, only, roster=None,
          scheduler=None, cluster=None, shard=None, canvas_title=None):
    """Grade every submission in DIRECTORY (each .py/.ipynb file or folder is one).

    \b
    Writes OUTDIR/<id>.json (scorecard), OUTDIR/gradescope/<id>/results.json
    and OUTDIR/grades.csv. Hidden tests run unless --public.
    Exit status: 0 when every submission got a scorecard from grading, 1 when
    hwcheck could not grade some (see the summary), 2 on usage or hwcheck errors.
    """
    from checker.records import batch
    from checker.records.outputs import is_own_output

    notes = []
    from checker.records import lms  # an LMS's export: one submission per student, whatever files they handed in
    entries = [(sid, path) for sid, path in lms.prepare(directory, outdir, notes, roster=roster, assignment=assignment)
               if not is_own_output(outdir, path)]  # -o inside DIR: hwcheck's own files are no submission
    for note in notes:
        _echo(f"hwcheck: {for_terminal(note, newlines=False)}", err=True)
    # what is not graded (and why) is listed once, in the summary at the end (students.json's not_graded)
    if not entries:
        raise Fail(f"no submissions in {directory} (a submission is a .py or .ipynb file, or a folder)")
    executor, where = _executor(jobs, scheduler, cluster), f"-j {jobs}"
    if executor is not None:
        where = executor.describe()
    if shard:  # one slice of the folder (a CI matrix, a SLURM array), the same seed for every slice
        from checker.records.shard import check_shard_seed, shard_entries
        check_shard_seed(public, seed)
        all_entries, entries = entries, shard_entries(entries, *shard)
        where += f", shard {shard[0]}/{shard[1]}: {len(entries)} of {len(all_entries)}"

    on_tty = _isatty("stderr")
    state = {"width": 0}

    def on_progress(event):
        if on_tty:
            import shutil
            line = batch.progress_bar(event, shutil.get_terminal_size().columns)
            pad = " " * max(0, state["width"] - len(line))
            state["width"] = len(line)
            _echo(line + pad, nl=False, err=True, rewind=True)
        else:
            _echo(batch.progress_line(event), err=True)

    asked = f"regrading {len(set(only))} of {len(entries)}" if only else f"grading {len(entries)}"
    _echo(f"hwcheck: {asked} submissions of {assignment} "
               f"({'public' if public else 'hidden'} tests, {where}) into {outdir}", err=True)
    if not resume and not only:  # regrading a graded OUT: said, with the seed that keeps the inputs
        from checker.records.progress import rerun_note
        note = rerun_note(batch.collect_scorecards(outdir, assignment), [sid for sid, _ in entries], outdir,
                          assignment, "public" if public else "hidden", seed)
        if note:
            _echo(f"hwcheck: {note}", err=True)
    state["kept"] = 0

    def counted(event):  # what is kept, for the words on Ctrl-C
        state["kept"], state["total"] = event["done"], event["total"]  # with --only, of those asked for
        on_progress(event)

    try:
        result = batch.grade_batch(entries, assignment, outdir, jobs=jobs, resume=resume, timeout=timeout,
                                   mode="public" if public else "hidden", keep_raw=keep_raw,
                                   on_progress=counted, seed=seed, devices=devices,
                                   only=only or None, executor=executor)
    except KeyboardInterrupt:
        if on_tty and state["width"]:
            _echo("", err=True)
            state["width"] = 0
        _echo(f"hwcheck: interrupted: {state['kept']} of {state.get('total', len(entries))} submissions are graded "
              f"and kept in "
                   f"{for_terminal(outdir, newlines=False)} (grades.csv holds them); go on with:\n  "
                   + for_terminal(resume_command(directory, assignment, outdir, jobs, timeout, public, seed,
                                                 keep_raw, devices, scheduler=scheduler, cluster=cluster,
                                                 shard=shard), newlines=False), err=True)
        raise
    finally:
        if on_tty and state["width"]:
            _echo("", err=True)
    if shard:
        from checker.records.shard import write_shard_info
        write_shard_info(outdir, shard[0], shard[1], all_entries, result)
    if executor is not None:
        result.jobs = executor.workers  # the summary's rate is per this many graders at once
    for line in batch.summary_lines(result):
        _echo(line)
    for line in batch.after_batch(outdir, assignment, canvas_title):  # the roster's verdicts, canvas.csv / moodle.csv
        _echo(for_terminal(line, newlines=False))
    sys.exit(EXIT_FAILED if result.internal else EXIT_OK)


@main.command("export")
@click.argument("outdir", type=click.Path(exists=True, file_okay=False))
@canvas_title_option
@_guarded
def export_command(outdir, canvas_title):
    """Write OUTDIR/canvas.csv / moodle.csv again (manual.csv's grades merged), for the LMS to import.

    `grade` writes them when the folder graded is a Canvas or Moodle export; run
    this after grading by hand, or to give Canvas's column title (--canvas, kept
    for later runs). It names the submissions whose manual grades are pending.
    """
    from checker.records import batch
    lines = batch.after_batch(outdir, None, canvas_title, roster=False)
    if not lines:
        raise Fail(f"{outdir} holds no Canvas or Moodle students (grade a Canvas or Moodle export, or give --roster "
                   f"a roster exported from one)")
    for line in lines:
        _echo(for_terminal(line, newlines=False))


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


def resume_command(directory, assignment, outdir, jobs, timeout, public, seed, keep_raw, devices, *,
                   scheduler=None, cluster=None, shard=None):
    """The exact `hwcheck grade ... --resume` command that goes on with an interrupted batch."""
    import shlex
    words = ["hwcheck", "grade", directory, "-a", assignment, "-o", outdir]
    words += (["--scheduler", scheduler] if scheduler else ["--cluster", f"local:{cluster[1]}"] if cluster
              else ["-j", str(jobs)])
    words += ["--shard", f"{shard[0]}/{shard[1]}"] if shard else []
    words += ["--resume"]
    words += ["--timeout", f"{timeout:g}"] if timeout else []
    words += ["--public"] if public else []
    words += ["--seed", str(seed)] if seed is not None else []
    words += ["--keep-raw"] if keep_raw else []
    words += ["--device", {v: k for k, v in DEVICE_CHOICES.items()}[tuple(devices)]] \
        if tuple(devices) != DEVICE_CHOICES["all"] else []
    return " ".join(shlex.quote(w) for w in words)


# ---------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------

@main.command()
@click.argument("scorecard_file", metavar="SCORECARD.json", type=click.Path(exists=True, dir_okay=False))
@all_option
@verbose_option
@color_option
@_guarded
def show(scorecard_file, show_all, verbose, color):
    """Print a scorecard as `check` would (the student's view unless --all; -v as `check -v`)."""
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
    colored = _color(color)
    view = card if show_all else student_view(card)
    _echo(format_scorecard(view, color=colored, verbose=show_all or verbose), color=colored)


# ---------------------------------------------------------------------------
# report
# ---------------------------------------------------------------------------

@main.command()
@click.argument("outdir", metavar="OUTDIR", type=click.Path(exists=True, file_okay=False))
@report_output_option
@submissions_dir_option
@top_pairs_option
@_guarded
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
    try:
        path, data = write_report(outdir, output, submissions_dir=submissions_dir, top=top,
                                  progress=_isatty("stderr"))
    except ValueError as e:
        raise Fail(str(e)) from None
    for note in data.get("notes") or []:
        _echo(f"hwcheck: {note}", err=True)
    _echo(f"wrote {path}: {data['submissions']} submissions of {data['assignment']}")


# ---------------------------------------------------------------------------
# init-ci
# ---------------------------------------------------------------------------

@main.command("init-ci")
@assignment_option
@click.option("--path", "sub_path", default=None, metavar="SUBMISSION",
              help="The submission, relative to the repository root (a file or a folder). "
                   "Default: the one .ipynb or .py file here that is not a starter.")
@click.option("--package", default=None, metavar="SPEC",
              help="What the workflow pip-installs for hwcheck: where your course publishes the student "
                   "kit (a git URL, name==version). Default: what the kit was published as.")
@click.option("--classroom", is_flag=True, default=False,
              help="Write GitHub Classroom's autograding workflow instead (.github/workflows/classroom.yml): "
                   "the check's points per question reach Classroom's dashboard through its grading reporter.")
@click.option("-o", "--output", default=None,
              type=click.Path(dir_okay=False, allow_dash=True),
              help="Where to write the workflow ('-': print it). Default: .github/workflows/hwcheck.yml, "
                   "or classroom.yml with --classroom.")
@force_option
@_guarded
def init_ci(assignment, sub_path, package, classroom, output, force):
    """Write a GitHub Actions workflow that runs `hwcheck check --ci` on every push."""
    from checker.records.atomic import write_text_atomic
    from checker.platforms.ci import DEFAULT_WORKFLOW, guess_submission, kit_package, workflow_yaml
    if classroom:
        from checker.platforms.classroom import DEFAULT_WORKFLOW, workflow_yaml  # noqa: F811 - the Classroom flavour
    output = output or DEFAULT_WORKFLOW

    package = package or kit_package()
    if not package:
        raise Fail("say where the workflow installs hwcheck from with --package: where your course publishes "
                   "the student kit, e.g. --package git+https://github.com/COURSE/hwcheck-student "
                   "(ask your instructor). A plain `hwcheck` from PyPI is not this tool.")
    if sub_path is None:
        sub_path, seen = guess_submission(".")
        if sub_path is None:
            raise Fail("say which file is your homework with --path (relative to the repository root): "
                       + (f"found {', '.join(seen)}" if seen else "no .ipynb or .py file here besides starters"))
        _echo(f"checking {for_terminal(sub_path, newlines=False)} (the one homework file here; --path picks "
                   "another)", err=True)
    try:
        text = workflow_yaml(assignment=assignment, path=sub_path, package=package)
    except ValueError as e:
        raise Fail(str(e)) from None
    if output == "-":
        _echo(text, nl=False)
        return
    if os.path.exists(output) and not force:
        raise Fail(f"{output} already exists; use --force to overwrite it")
    write_text_atomic(output, text)
    _echo(f"wrote {output}: commit and push it, and each push runs "
               f"`hwcheck check {sub_path}{' -a ' + assignment if assignment else ''} --ci`.")



# ---------------------------------------------------------------------------
# kit
# ---------------------------------------------------------------------------

@main.command()
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="An empty or new folder for the kit.")
@click.option("--package", default=None, metavar="SPEC",
              help="Where you will publish the kit (e.g. git+https://github.com/COURSE/hwcheck-student): "
                   "the kit's `init-ci` then installs it from there without being told.")
@_guarded
def kit(outdir, package):
    """Write a student kit: hwcheck without the reference solutions and the hidden tests.

    The kit answers the public checks from the reference's recorded answers,
    and names mistakes from the recorded results of the tests' answer models.
    Students install it with `pip install OUTDIR` (or from a repository you
    publish it in); point `init-ci --package` at it.
    """
    from checker.platforms.kit import build_kit, record_public
    from checker.running.runner import Grader

    if os.path.exists(outdir) and os.listdir(outdir):
        raise Fail(f"{outdir} exists and is not empty")
    if package is not None:
        from checker.platforms.ci import _value
        try:
            _value("package", package)
        except ValueError as e:
            raise Fail(str(e)) from None
    from checker.spec import assignment_ids
    from checker.platforms.validate import kit_problems, spec_problems
    # a spec that disagrees with its tests (a typo in hidden_tests makes a hidden test public) would ship it
    wrong = [f"{aid}: {p}" for aid in assignment_ids() for p in spec_problems(aid) + kit_problems(aid)]
    if wrong:
        raise Fail("no kit written: " + "; ".join(wrong[:5]) + ("; ..." if len(wrong) > 5 else "")
                   + " (hwcheck validate tells every problem)")
    with Grader(mode="public") as grader:
        build_kit(outdir, lambda aid: record_public(aid, grader), package=package)
    _echo(f"wrote the student kit to {outdir}: no reference solutions, no hidden tests, no answer models (its "
          "public checks replay the expected values and the hints' mistaken answers recorded from the reference); "
          f"students install it with `pip install {outdir}`")


# ---------------------------------------------------------------------------
# gradescope, autograde
# ---------------------------------------------------------------------------

@main.command()
@required_assignment_option
@click.option("-o", "--output", default="autograder.zip", show_default=True, type=click.Path(dir_okay=False),
              help="Where to write the autograder zip.")
@torch_wheel_option
@container_python_option
@online_option
@timeout_option
@force_option
@_guarded
def gradescope(assignment, output, torch_wheel, container_python, online, timeout, force):
    """Build the Gradescope autograder zip of an assignment (all tests, hidden ones included).

    Upload it as the assignment's autograder (Configure Autograder > Zip file upload).
    Its setup.sh installs, from the wheels inside it, the CPU build of the torch
    installed here, this hwcheck and its dependencies at the versions installed here;
    its run_autograder grades each submission and writes results.json.
    """
    from checker.platforms.autograder import write_autograder_zip
    if os.path.exists(output) and not force:
        raise Fail(f"{output} already exists; use --force to overwrite it")
    if not online:
        _echo(f"fetching the wheels for Python {container_python} on x86_64 Linux (torch's CPU build)...")
    info = write_autograder_zip(output, assignment, torch_wheel=torch_wheel, timeout=timeout,
                                python=container_python, online=online)
    _echo(f"wrote {for_terminal(info['path'], newlines=False)} ({info['size'] / 1e6:.1f} MB): "
               f"{len(info['files'])} files; torch {info['torch']} (CPU) "
               + (("from the wheel inside" if torch_wheel else "from PyTorch's CPU index at setup") if online
                  else f"and every other package from the wheels inside, for Python {info['python']}"))
    if info.get("pinned") is False:
        _echo(f"note: the versions installed here do not all exist for Python {info['python']}: the zip holds "
                   "the newest versions hwcheck allows (its hwcheck-autograder.json lists them)")
    base = "Ubuntu 22.04" if container_python == "3.10" else f"one whose python3 is {container_python}"
    _echo(f"upload it on Gradescope: Configure Autograder > Zip file upload, base image {base}")


@main.command(hidden=True)
@required_assignment_option
@autograder_root_option
@timeout_option
def autograde(assignment, root, timeout):
    """Inside Gradescope's container: grade ROOT/submission, write ROOT/results/results.json (never fails)."""
    from checker.platforms.autograde import autograde as run
    results = run(root, assignment, timeout=timeout)
    _echo(f"hwcheck autograde: {results.get('score')} points; {len(results.get('tests') or [])} tests "
               f"in {os.path.join(root, 'results', 'results.json')}", err=True)


# ---------------------------------------------------------------------------
# merge
# ---------------------------------------------------------------------------

@main.command()
@click.argument("sources", nargs=-1, required=True, metavar="OUTDIR...",
                type=click.Path(exists=True, file_okay=False))
@output_dir_option
@_guarded
def merge(sources, outdir):
    """Merge the output folders of `grade --shard I/N` into one OUTDIR and gradebook.

    Refuses folders of different assignments, seeds, modes, grading tests or
    hwcheck versions, and a submission graded in two of them. Exit status 1
    when a shard is missing.
    """
    from checker.records.shard import merge as merge_folders
    result = merge_folders(list(sources), outdir)
    for note in result.notes:
        _echo(f"hwcheck: {for_terminal(note, newlines=False)}", err=True)
    _echo(f"merged {result.cards} scorecards of {result.assignment} from {len(sources)} folders into "
               f"{for_terminal(outdir, newlines=False)}; wrote {for_terminal(result.gradebook, newlines=False)}")
    sys.exit(EXIT_FAILED if result.missing else EXIT_OK)


def _offer_only_what_the_kit_can_do():
    """In the student kit, `hwcheck --help` lists the student's commands only (the others stay callable)."""
    from checker.platforms.kit_files import STUDENT_COMMANDS, installed_as_kit
    if installed_as_kit():
        for name, command in main.commands.items():
            command.hidden = command.hidden or name not in STUDENT_COMMANDS
        main.help = "\n".join(line.replace("check and grade", "check") for line in (main.help or "").splitlines()
                              if "TAs:" not in line)


_offer_only_what_the_kit_can_do()

if __name__ == "__main__":
    main()
