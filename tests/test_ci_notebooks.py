"""`hwcheck check --ci` on notebooks and on submissions that never get checked: what GitHub Actions shows.

What it is for: real `check --ci` runs (click's CliRunner, a warm zygote, GITHUB_ACTIONS=true and
GITHUB_STEP_SUMMARY pointing at a file) from a scratch repository's root, on the example notebook of the
attention assignment and variants of it, read the way a student reads the job: the annotations and the step
summary, not the log. A notebook's annotation has no line to point at, so its message says which cell; the
summary holds what loading said (a def defined twice, a statement that raised), escaped and bounded; a
notebook that is not valid JSON says so in the summary and in an annotation; and an error that stops the check
(exit status 2) is an annotation and a summary too, not only a line on stderr.

What it is not: the escaping of every hostile form (tests/test_hostile_ci.py, tests/test_hostile_output.py)
or the rendering functions alone (tests/test_report.py).
"""

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

import checker.running.runner
from checker.cli import main
from checker.render.github import format_markdown
from checker.render.scorecard_text import MAX_LOAD_MESSAGES

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "assignments" / "attention" / "examples" / "correct_notebook.ipynb"
# text a student's exception can carry: a fence that would close the summary's, table and HTML syntax, commands
HOSTILE = "`````` | <img src=x> ::error::forged ##[add-mask]x"


@pytest.fixture(scope="module")
def zygote():
    from checker.running.sandbox import Zygote
    z = Zygote()
    yield z
    z.close()


@pytest.fixture
def warm(monkeypatch, zygote):
    real = checker.running.runner.Grader
    monkeypatch.setattr(checker.running.runner, "Grader", lambda **kw: real(**{"zygote": zygote, **kw}))


def check_ci(repo, *args, monkeypatch):
    """(result, step summary text) of `hwcheck check ARGS --ci` run from the repository root `repo`."""
    monkeypatch.chdir(repo)
    summary = repo / "summary.md"
    summary.write_text("", encoding="utf-8")
    r = CliRunner().invoke(main, ["check", *map(str, args), "--ci"],
                           env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary), "NO_COLOR": "1"})
    return r, summary.read_text(encoding="utf-8")


def annotations(r):
    return [ln for ln in (r.stdout + "\n" + r.stderr).splitlines() if ln.startswith(("::error ", "::warning "))]


def outside_fences(markdown):
    """The summary's lines that are not inside a fenced code block (where Markdown would act on them)."""
    out, fence = [], None
    for line in markdown.split("\n"):
        stripped = line.strip()
        if fence:
            fence = None if stripped == fence else fence
            continue
        if stripped.startswith("```"):
            fence = re.match(r"`+", stripped).group()
            continue
        out.append(line)
    assert fence is None, "a code fence was never closed"
    return out


def cell(source, count):
    return {"cell_type": "code", "metadata": {}, "execution_count": count, "outputs": [], "source": source}


@pytest.fixture
def repo(tmp_path):
    (tmp_path / "repo" / "hw").mkdir(parents=True)
    return tmp_path / "repo"


def twice_defined(repo):
    """The example notebook with `get_attention_weights` defined again in a later cell that ran first: the lower
    one (a softmax that overflows) is graded; and a cell that raises the student's text while loading."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    at = next(i for i, c in enumerate(nb["cells"]) if "def get_attention_weights" in "".join(c["source"]))
    nb["cells"][at]["execution_count"] = 18
    nb["cells"][at + 1:at + 1] = [
        cell("def get_attention_weights(scores):\n"
             "    e = np.exp(scores)\n    return e / e.sum(axis=-1, keepdims=True)\n", 17),
        cell(f"raise ValueError({HOSTILE!r})\n", 19)]
    path = repo / "hw" / "attention.ipynb"
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


def test_a_notebooks_annotation_says_which_cell(warm, repo, monkeypatch):
    """The annotation is at the .ipynb (a cell's line is no line of the file), and said nothing of where the
    failing function is: the Actions UI never told which cell failed."""
    twice_defined(repo)
    r, _ = check_ci(repo, "hw/attention.ipynb", "-a", "attention", monkeypatch=monkeypatch)
    assert r.exit_code == 1, r.output
    softmax = [ln for ln in annotations(r) if ln.startswith("::error ") and "test_softmax" in ln]
    assert softmax, annotations(r)
    for line in softmax:
        assert line.startswith("::error file=hw/attention.ipynb,title="), line  # no line= into the JSON
        assert line.endswith("%0A(your `get_attention_weights` is in hw/attention.ipynb, In [17], line 1)"), line


def test_the_step_summary_holds_the_load_messages(warm, repo, monkeypatch):
    """The duplicate definition that explains the lost points, and the statement that raised, were only in the
    log; the summary had the score and the failures alone."""
    twice_defined(repo)
    r, summary = check_ci(repo, "hw/attention.ipynb", "-a", "attention", monkeypatch=monkeypatch)
    assert r.exit_code == 1, r.output
    assert "**Loading your submission: some parts failed" in summary
    assert "is defined in In [18] and again, lower in the notebook, in In [17]" in summary
    assert "FileNotFoundError" in summary and "attention_diagram.png" in summary
    # before the table, as `check` prints them
    assert summary.index("and again, lower in the notebook") < summary.index("| Question |")
    # the student's text is there, inside a fence longer than its own backticks: no Markdown of theirs acts
    assert "::error::forged" in summary
    plain = outside_fences(summary)
    assert not any("forged" in line for line in plain), plain
    assert any(re.fullmatch("`{7,}text", line) for line in summary.splitlines())


def test_the_load_messages_in_the_summary_are_bounded():
    many = [f"cell {i} raised ValueError: " + "x" * 5000 for i in range(MAX_LOAD_MESSAGES + 5)]
    md = format_markdown({"assignment": "attention", "submission": {"id": "s"}, "status": "graded",
                          "score": 0, "max_score": 1, "questions": [], "load": {"ok": False, "messages": many}})
    assert "cell 0 raised" in md and f"cell {MAX_LOAD_MESSAGES - 1} raised" in md
    assert f"cell {MAX_LOAD_MESSAGES} raised" not in md and "... and 5 more" in md
    assert len(md) < 20_000


def test_a_corrupt_notebook_says_why_in_the_summary_and_an_annotation(warm, repo, monkeypatch):
    """Only "`get_scores` is not defined" x3 and a raw `Status: **load_failed**` reached the job; the reason was in
    the log alone."""
    (repo / "hw" / "attention.ipynb").write_text('{"cells": [\n', encoding="utf-8")
    r, summary = check_ci(repo, "hw/attention.ipynb", "-a", "attention", monkeypatch=monkeypatch)
    assert r.exit_code == 1, r.output
    errors = [ln for ln in annotations(r) if ln.startswith("::error ")]
    assert errors[0].startswith("::error title=hwcheck › your submission did not load::could not read "
                                "attention.ipynb: it is not valid notebook JSON"), errors
    assert len(errors) <= 10
    assert "Status: **load failed**" in summary and "load_failed" not in summary
    assert "not valid notebook JSON" in summary
    assert summary.index("not valid notebook JSON") < summary.index("| Question |")
    # each test says only that a name is missing: one line for them, not one block each
    failures = summary[summary.index("### Failures"):]
    assert "tests failed because your submission did not load" in failures and "```" not in failures, failures


@pytest.mark.parametrize("name, text", [
    ("empty.py", ""),
    ("nohw.py", "import numpy as np\nprint('hello')\n"),
    ("broken | <b>x ##[add-mask]y.ipynb", '{"cells": [\n'),
])
def test_an_error_that_stops_the_check_is_an_annotation_and_a_summary(warm, repo, monkeypatch, name, text):
    """Without -a, a submission that names no assignment stops with exit status 2: it was one line on stderr,
    and the job went red with no annotation and an empty summary."""
    (repo / name).write_text(text, encoding="utf-8")
    r, summary = check_ci(repo, name, monkeypatch=monkeypatch)
    assert r.exit_code == 2, r.output
    assert "could not tell which assignment this is" in r.stderr
    (line,) = [ln for ln in r.stdout.splitlines() if ln.startswith("::")]
    assert line.startswith("::error title=hwcheck › the check did not run::could not tell which assignment "
                           "this is"), line
    assert "##[" not in line  # the student's file name, defused (`#\#[`)
    assert "The check did not run" in summary and "could not tell which assignment this is" in summary
    for md in outside_fences(summary):
        assert not re.search(r"(?<!\\)[|<>]", md), md  # the file name makes no table cell or HTML
    if name.endswith(".ipynb"):
        assert "not valid notebook JSON" in line and "not valid notebook JSON" in summary


def test_the_check_passes_on_the_example_notebook_with_no_error(warm, repo, monkeypatch):
    shutil.copy(NOTEBOOK, repo / "hw" / "attention.ipynb")
    r, summary = check_ci(repo, "hw/attention.ipynb", "-a", "attention", monkeypatch=monkeypatch)
    assert not [ln for ln in annotations(r) if ln.startswith("::error ")], annotations(r)
    assert "did not load" not in summary and "The check did not run" not in summary
