"""Write the docs' example outputs and command list from the real CLI, so they cannot go stale.

What it is for: README.md and the pages of docs/ (DOCS) mark what is generated with HTML comments:

    <!-- example: hwcheck check submissions/attention/correct_notebook.ipynb; exit 0 -->
    ```
    (the command's output, as run from the repository root)
    ```
    <!-- /example -->

    <!-- commands -->
    ```
    (every command and option of `hwcheck`, from click's own help)
    ```
    <!-- /commands -->

`python docs/make_readme_examples.py` runs each example's command (the `hwcheck` beside this Python;
no colour, CUDA hidden and the clone's own path left out, so the output is the same on any machine)
and rewrites the blocks; it fails
when a command's exit status is not the one the marker says. `--check` rewrites nothing and exits 1
with a diff when a page differs (tests/test_readme.py runs that).

What it is not: a general documentation tool; it edits only the marked blocks.
"""

import argparse
import difflib
import os
import re
import shlex
import subprocess
import sys

import click

__all__ = ["command_list", "run_example", "render", "main"]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, "README.md")


def docs():
    """README.md and every Markdown page of docs/, the files whose marked blocks are generated."""
    folder = os.path.join(ROOT, "docs")
    return [README] + sorted(os.path.join(folder, n) for n in os.listdir(folder) if n.endswith(".md"))
WIDTH = 100

_EXAMPLE = re.compile(r"(<!-- example: (?P<cmd>.+?); exit (?P<rc>\d+) -->\n)```\n.*?```\n(<!-- /example -->)", re.S)
_COMMANDS = re.compile(r"(<!-- commands -->\n)```\n.*?```\n(<!-- /commands -->)", re.S)


def command_list():
    """Every command of `hwcheck` with its arguments and every option with its help, from click itself."""
    from checker.cli import main as cli
    formatter = click.HelpFormatter(width=WIDTH, max_width=WIDTH)
    top = click.Context(cli, info_name="hwcheck", **cli.context_settings)
    formatter.write_dl([(opts, help_) for opts, help_ in
                        (p.get_help_record(top) for p in cli.get_params(top)) if opts])
    for name in cli.list_commands(top):
        command = cli.get_command(top, name)
        if command.hidden:  # `autograde` runs inside Gradescope's container, from the zip's run_autograder
            continue
        ctx = click.Context(command, info_name=name, parent=top)
        args = " ".join(p.make_metavar(ctx) if hasattr(p, "make_metavar") else p.name.upper()
                        for p in command.get_params(ctx) if isinstance(p, click.Argument))
        formatter.write("\n")
        formatter.write_dl([(f"hwcheck {name} {args}".rstrip(), command.get_short_help_str(limit=WIDTH))])
        records = [record for record in (p.get_help_record(ctx) for p in command.get_params(ctx)
                                         if isinstance(p, click.Option) and "--help" not in p.opts) if record]
        if records:  # -h/--help is every command's: said once, at the top
            with formatter.indentation():
                formatter.write_dl(records)
    return formatter.getvalue().strip("\n") + "\n"


def _hwcheck():
    beside = os.path.join(os.path.dirname(sys.executable), "hwcheck")
    return [beside] if os.path.exists(beside) else [sys.executable, "-m", "checker.cli"]


def run_example(command):
    """(exit status, output) of one README command, run from the repository root."""
    words = shlex.split(command)
    if words[0] != "hwcheck":
        raise ValueError(f"an example runs hwcheck, not {words[0]!r}")
    env = dict(os.environ, NO_COLOR="1", CUDA_VISIBLE_DEVICES="", COLUMNS=str(WIDTH))
    env.pop("GITHUB_STEP_SUMMARY", None)
    done = subprocess.run(_hwcheck() + words[1:], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=600)
    return done.returncode, done.stdout.replace(ROOT + os.sep, "")  # where the clone is varies by machine


def render(text):
    """README text with every marked block regenerated; raises RuntimeError when an exit status differs."""
    def example(m):
        rc, out = run_example(m.group("cmd"))
        if rc != int(m.group("rc")):
            raise RuntimeError(f"`{m.group('cmd')}` exited {rc}, the README says {m.group('rc')}:\n{out}")
        return f"{m.group(1)}```\n{out.rstrip()}\n```\n{m.group(4)}"
    text = _EXAMPLE.sub(example, text)
    return _COMMANDS.sub(lambda m: f"{m.group(1)}```\n{command_list()}```\n{m.group(2)}", text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 with a diff when a page is not current")
    args = parser.parse_args(argv)
    stale = 0
    for path in docs():
        with open(path, encoding="utf-8") as f:
            old = f.read()
        new = render(old)
        if new == old:
            continue
        name = os.path.relpath(path, ROOT)
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True),
                                                       name, f"{name} (generated)"))
            stale = 1
        else:
            with open(path, "w", encoding="utf-8") as f:
                f.write(new)
    return stale


if __name__ == "__main__":
    sys.exit(main())
