"""What every `hwcheck` command shares: the one way it prints, its exit statuses, its one-line errors.

What it is for: `echo` (every printed text through `checker.render.escape.for_output`), `Fail` (an error in
one line, exit status 2), `guarded` (hwcheck's errors and bugs as one line, never a traceback unless
HWCHECK_DEBUG), the exit statuses, and whether a stream is a terminal. `checker.cli` (the student's and the
TA's commands) and `checker.cli_course` (the course's: validate, kit, init-ci, gradescope) use them.

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
           "guarded", "isatty", "color_wanted"]

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


def isatty(name):
    """Whether sys.stdout / sys.stderr (as they are now: CliRunner replaces them) is a terminal."""
    try:
        return bool(getattr(sys, name).isatty())
    except (AttributeError, ValueError, OSError):
        return False


def color_wanted(flag):
    return use_color(flag, isatty("stdout"))
