"""The course's `hwcheck` commands: validate, kit, init-ci, gradescope (and autograde, inside Gradescope).

What it is for: an instructor's and a student's set-up commands, as thin as `checker.cli`'s: arguments
(options from `checker.options`), a library call, its text, the exit status. `checker.cli` adds them to
the `hwcheck` group.

What it is not: the library (`checker.platforms.validate`, `.kit`, `.ci`, `.classroom`, `.autograder`,
`.autograde`), nor the student's and TA's commands (check, grade, show, report: `checker.cli`).
"""

import contextlib
import os
import shlex
import sys

import click

from checker.cli_base import EXIT_FAILED, EXIT_OK, Fail, echo, guarded
from checker.options import (assignment_option, autograder_root_option, container_python_option, force_option,
                             online_option, required_assignment_option, seeds_option, skip_checks_option,
                             timeout_option, torch_wheel_option)
from checker.render.escape import for_terminal

__all__ = ["validate", "init_ci", "kit", "gradescope", "autograde", "COMMANDS"]


@click.command()
@click.argument("targets", nargs=-1, metavar="[ASSIGNMENT|DIR]...")
@skip_checks_option
@seeds_option
@guarded
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
        echo(f"hwcheck: {p}")
    problems = len(unused)
    graded = {"reference", "examples"} & set(checks)  # the others read files only: no zygote
    with (Grader(mode="hidden", seed=1234) if graded else contextlib.nullcontext()) as grader:
        for aid in aids:
            problems += len(run_checks(aid, checks=checks, grader=grader, echo=echo,
                                       seeds=extra_seeds(seeds) if graded else None,
                                       started=lambda line: echo(line, err=True)))  # kit, examples: minutes
    echo(f"{len(aids)} assignment(s): " + (f"{problems} problem(s)" if problems else "every check passed"))
    sys.exit(EXIT_FAILED if problems else EXIT_OK)


# ---------------------------------------------------------------------------
# init-ci
# ---------------------------------------------------------------------------

@click.command("init-ci")
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
@guarded
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
        echo(f"checking {for_terminal(sub_path, newlines=False)} (the one homework file here; --path picks "
                   "another)", err=True)
    try:
        text = workflow_yaml(assignment=assignment, path=sub_path, package=package)
    except ValueError as e:
        raise Fail(str(e)) from None
    if output == "-":
        echo(text, nl=False)
        return
    if os.path.exists(output) and not force:
        raise Fail(f"{output} already exists; use --force to overwrite it")
    write_text_atomic(output, text)
    echo(f"wrote {output}: commit and push it, and each push runs "
               f"`hwcheck check {sub_path}{' -a ' + assignment if assignment else ''} --ci`.")



# ---------------------------------------------------------------------------
# kit
# ---------------------------------------------------------------------------

@click.command()
@click.option("-o", "--output", "outdir", required=True, type=click.Path(file_okay=False),
              help="An empty or new folder for the kit.")
@click.option("--package", default=None, metavar="SPEC",
              help="Where you will publish the kit (e.g. git+https://github.com/COURSE/hwcheck-student): "
                   "the kit's `init-ci` then installs it from there without being told.")
@guarded
def kit(outdir, package):
    """Write a student kit: hwcheck without the reference solutions and the hidden tests.

    The kit answers the public checks from the reference's recorded answers,
    and names mistakes from the recorded results of the tests' answer models.
    Publish it (a git repository) and give --package where: students install
    it from there (`pip install ./OUTDIR` installs it on this machine).
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
    from checker.spec import assignment_ids, spec_problems
    from checker.platforms.validate import kit_problems
    # a spec that disagrees with its tests (a typo in hidden_tests makes a hidden test public) would ship it
    wrong = [f"{aid}: {p}" for aid in assignment_ids() for p in spec_problems(aid) + kit_problems(aid)]
    if wrong:
        raise Fail("no kit written: " + "; ".join(wrong[:5]) + ("; ..." if len(wrong) > 5 else "")
                   + " (hwcheck validate tells every problem)")
    with Grader(mode="public") as grader:
        build_kit(outdir, lambda aid: record_public(aid, grader), package=package)
    # pip takes a bare name (`hwcheck-student`) for a package of PyPI's, never this folder: the command names
    # where --package says the kit is published, else the folder as a path
    if package is not None:
        install = (f"students install it with `pip install {shlex.quote(package)}` (as its README says), once you "
                   f"publish this folder there")
    else:
        install = (f"install it with `pip install {shlex.quote(_as_path(outdir))}` on this machine; for students, "
                   f"publish it (a git repository) and build it again with --package naming where, so that its "
                   f"README and init-ci install it from there")
    echo(f"wrote the student kit to {outdir}: no reference solutions, no hidden tests, no answer models (its "
          "public checks replay the expected values and the hints' mistaken answers recorded from the reference); "
          f"{install}")


def _as_path(folder):
    """`folder` as pip reads a path (a separator in it), not as a name of PyPI's: `./hwcheck-student`."""
    return folder if os.sep in folder or (os.altsep and os.altsep in folder) else os.path.join(".", folder)


# ---------------------------------------------------------------------------
# gradescope, autograde
# ---------------------------------------------------------------------------

@click.command()
@required_assignment_option
@click.option("-o", "--output", default="autograder.zip", show_default=True, type=click.Path(dir_okay=False),
              help="Where to write the autograder zip.")
@torch_wheel_option
@container_python_option
@online_option
@timeout_option
@force_option
@guarded
def gradescope(assignment, output, torch_wheel, container_python, online, timeout, force):
    """Build the Gradescope autograder zip of an assignment (all tests, hidden ones included).

    Upload it as the assignment's autograder (Configure Autograder > Zip file upload).
    Its setup.sh installs, from the wheels inside it, the CPU build of the torch
    installed here, this hwcheck and its dependencies at the versions installed here;
    its run_autograder grades each submission and writes results.json.
    """
    from checker.platforms.autograder import GRADESCOPE_PYTHONS, base_image_note, write_autograder_zip
    if os.path.exists(output) and not force:
        raise Fail(f"{output} already exists; use --force to overwrite it")
    note = None if online else base_image_note(container_python)  # --online: setup.sh fetches for the image's own
    if note:
        echo(f"hwcheck: {for_terminal(note, newlines=False)}", err=True)
    if not online:
        echo(f"fetching the wheels for Python {container_python} on x86_64 Linux (torch's CPU build)...")
    info = write_autograder_zip(output, assignment, torch_wheel=torch_wheel, timeout=timeout,
                                python=container_python, online=online)
    echo(f"wrote {for_terminal(info['path'], newlines=False)} ({info['size'] / 1e6:.1f} MB): "
               f"{len(info['files'])} files; torch {info['torch']} (CPU) "
               + (("from the wheel inside" if torch_wheel else "from PyTorch's CPU index at setup") if online
                  else f"and every other package from the wheels inside, for Python {info['python']}"))
    if info.get("pinned") is False:
        echo(f"note: the versions installed here do not all exist for Python {info['python']}: the zip holds "
                   "the newest versions hwcheck allows (its hwcheck-autograder.json lists them)")
    base = GRADESCOPE_PYTHONS.get(container_python) or f"one whose python3 is {container_python}"
    echo(f"upload it on Gradescope: Configure Autograder > Zip file upload, base image {base}")


@click.command(hidden=True)
@required_assignment_option
@autograder_root_option
@timeout_option
def autograde(assignment, root, timeout):
    """Inside Gradescope's container: grade ROOT/submission, write ROOT/results/results.json (never fails)."""
    from checker.platforms.autograde import autograde as run
    results = run(root, assignment, timeout=timeout)
    echo(f"hwcheck autograde: {results.get('score')} points; {len(results.get('tests') or [])} tests "
               f"in {os.path.join(root, 'results', 'results.json')}", err=True)


COMMANDS = [validate, init_ci, kit, gradescope, autograde]
