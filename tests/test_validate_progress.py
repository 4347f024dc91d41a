"""`hwcheck validate` says each check as it starts (h91: nothing for ~3 minutes during the kit check).

The start lines go to stderr (the result lines, `ID: CHECK: ok`, stay on stdout, as scripts read them); the slow
checks say how long they take, the examples check how many examples it grades. Only the file-reading checks
run here (seconds): the kit, reference and examples checks' start lines are `start_line`'s, tested directly.
"""
import os

from click.testing import CliRunner

from checker.cli import main
from checker.platforms.validate import start_line, validate

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_each_check_is_said_as_it_starts_on_stderr():
    r = CliRunner().invoke(main, ["validate", "attention", "--skip", "kit", "--skip", "reference",
                                  "--skip", "examples"])
    assert r.exit_code == 0, r.output
    assert "attention: spec: reading the spec" in r.stderr and "attention: handout: reading" in r.stderr, r.stderr
    assert "attention: spec: ok" in r.stdout and "reading" not in r.stdout, r.stdout


def test_a_start_line_comes_before_its_result():
    said = []
    validate("attention", checks=("spec", "handout"), echo=lambda line: said.append(("done", line)),
             started=lambda line: said.append(("start", line)))
    kinds = [k for k, line in said if not line.startswith("  ")]
    assert kinds == ["start", "done", "start", "done"], said


def test_the_slow_checks_say_how_long_and_how_many():
    examples = [n for n in os.listdir(os.path.join(ROOT, "assignments", "attention", "examples"))
                if n != "expected.json"]  # files and folders (correct_folder), each one example
    line = start_line("attention", "examples")
    assert f"grading the {len(examples)} example submissions" in line, (line, len(examples))
    assert "minutes" in start_line("attention", "kit")
    assert "at 3 seeds" in start_line("attention", "reference", 3)
