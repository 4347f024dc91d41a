"""What every `hwcheck` command shares: the one way it prints, its exit statuses, its one-line errors.

What it is for: `echo` (every printed text through `checker.render.escape.for_output`), `Fail` (an error in
one line, exit status 2), `guarded` (hwcheck's errors and bugs as one line, never a traceback unless
HWCHECK_DEBUG), the exit statuses, whether a stream is a terminal, and `cannot_write` (an output folder on a
full disk or a read-only file system, in words, for the commands' own stop messages), and `resume_command` (the
`grade --resume` that goes on with a stopped batch; `refuse_other_tests` the refusal, naming it, of a command that
would combine scorecards graded with old tests with manual.csv judged by the new spec). `checker.cli` (the
student's and the TA's commands) and `checker.cli_course` (the course's: validate, kit, init-ci, gradescope)
use them.

What it is not: a command, or a place for logic.
"""

import functools
import os
import sys

import click

from checker.errors import HwcheckError
from checker.options import use_color
from checker.render.escape import for_output, for_terminal

__all__ = ["EXIT_OK", "EXIT_FAILED", "EXIT_ERROR", "EXIT_INTERRUPTED", "EXIT_TERMINATED", "FAILING", "Fail", "echo",
           "guarded", "isatty", "color_wanted", "disk_full", "cannot_write",
           "resume_command", "refuse_other_tests", "refuse_absent_devices"]

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143  # 128 + SIGINT (Ctrl-C), 128 + SIGTERM, as a shell gives them
FAILING = ("failed", "error", "timeout")


def echo(message="", *, err=False, nl=True, color=None, commands=False, rewind=False):
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
        echo(f"hwcheck: error: {for_terminal(self.format_message(), newlines=False)}", err=True)


def guarded(f):
    """Turn hwcheck's errors into one line and exit 2; never show a traceback (unless HWCHECK_DEBUG)."""
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        try:
            return f(*args, **kwargs)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except KeyboardInterrupt:
            echo("\nhwcheck: interrupted", err=True)
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


def disk_full(e):
    """Whether the OSError `e` is a full disk (or a quota reached)."""
    import errno
    return isinstance(e, OSError) and e.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", 122))


def cannot_write(e, outdir):
    """Why the OSError `e` kept a command from writing into the output folder `outdir`, in words ("the disk
    holding OUT is full (No space left on device, writing OUT/x)"), or None when it is no such failure (another
    error, or about a file outside `outdir`: a bug or a student's file, said as it is)."""
    import errno
    if not isinstance(e, OSError):
        return None
    name = os.fsdecode(e.filename) if isinstance(e.filename, (str, bytes)) else None
    inside = name is None or os.path.realpath(name).startswith(os.path.realpath(outdir).rstrip(os.sep) + os.sep)
    where = f"{e.strerror or e}" + (f", writing {name}" if name else "")
    shown = for_terminal(str(outdir), newlines=False)
    if disk_full(e):
        return f"the disk holding {shown} is full ({where})"
    if e.errno == errno.EROFS and inside:
        return f"{shown} is on a read-only file system" + (f" (writing {name})" if name else "")
    if e.errno in (errno.EACCES, errno.EPERM) and name is not None and inside:
        return f"{shown} cannot be written by this user ({where})"
    return None


def isatty(name):
    """Whether sys.stdout / sys.stderr (as they are now: CliRunner replaces them) is a terminal."""
    try:
        return bool(getattr(sys, name).isatty())
    except (AttributeError, ValueError, OSError):
        return False


def color_wanted(flag):
    return use_color(flag, isatty("stdout"))


def resume_command(directory, assignment, outdir, jobs, timeout, public, seed, keep_raw, devices, *,
                   scheduler=None, cluster=None, shard=None, canvas_title=None, only=()):
    """The exact `hwcheck grade ... --resume` command that goes on with an interrupted batch (`checker.cli`'s
    grade prints it; a --canvas title is in it too, though OUT keeps it from the batch's start). only: the ids of
    an `--only` regrade (an appeal), each kept as `--only ID`: `--resume` alone would find their old scorecards
    current and regrade nothing; with `--only`, every id named is regraded, with the batch's seed."""
    import shlex

    from checker.options import DEVICE_CHOICES
    words = ["hwcheck", "grade", directory, "-a", assignment, "-o", outdir]
    words += (["--scheduler", scheduler] if scheduler else ["--cluster", f"local:{cluster[1]}"] if cluster
              else ["-j", str(jobs)])
    words += ["--shard", f"{shard[0]}/{shard[1]}"] if shard else []
    words += ["--resume"]
    words += [w for sid in dict.fromkeys(only or ()) for w in ("--only", sid)]
    words += ["--timeout", f"{timeout:g}"] if timeout else []
    words += ["--public"] if public else []
    words += ["--seed", str(seed)] if seed is not None else []
    words += ["--keep-raw"] if keep_raw else []
    words += ["--canvas", canvas_title] if canvas_title else []
    words += ["--device", {v: k for k, v in DEVICE_CHOICES.items()}[tuple(devices)]] \
        if tuple(devices) != DEVICE_CHOICES["all"] else []
    return " ".join(shlex.quote(w) for w in words)


def refuse_other_tests(outdir, doing, again):
    """Fail (nothing written) when OUTDIR holds scorecards graded with other grading tests than its assignment's
    now (`checker.records.batch.graded_with_other_tests`): `doing` would judge manual.csv's grades against the
    spec.toml as it is and the scorecards' points as they were graded, mixing two specs' maxima. The line names
    how many and the `resume_command` that regrades them; `again` is the command to run after it."""
    from checker.options import DEVICE_CHOICES
    from checker.records.batch import graded_with_other_tests
    found = graded_with_other_tests(outdir)
    if found is None:
        return
    command = found["resume"] or resume_command(found["folder"] or "<the folder graded>", found["assignment"],
                                                str(outdir), 1, None, found["public"], None, False,
                                                DEVICE_CHOICES["all"])
    raise Fail(f"{found['stale']} of the {found['total']} scorecards in {outdir} were graded with other grading "
               f"tests than {found['assignment']}'s now (its spec.toml, a test or helper file, or the reference "
               f"changed since): {doing} would judge manual.csv's grades by the spec.toml as it is now and those "
               f"scorecards' points by the old one, mixing the two, so nothing was written (manual.csv is "
               f"unchanged); regrade them first with the batch's seed: {command}; then run {again} again")


def refuse_absent_devices(devices):
    """--device cuda where this machine has no CUDA: no variant of the device tests would run (the CPU ones are
    left out, the CUDA ones skipped), so the grade would rest on fewer tests than --device all or cpu gives."""
    from checker.options import DEVICE_CHOICES
    if tuple(devices) == DEVICE_CHOICES["cuda"]:
        from checker.running.plugin import cuda_available
        if not cuda_available():
            raise Fail("--device cuda: CUDA is not available on this machine, so no variant of the device tests "
                       "would run (--device cuda leaves the CPU variants out) and the score would rest on fewer "
                       "tests; use --device all (the CUDA variants are skipped, saying why) or --device cpu, or "
                       "run on a machine with a GPU")
