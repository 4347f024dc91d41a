"""The `hwcheck` command line through click's CliRunner: every command, option and exit status.

Grading is real (real grading tests, real workers); to keep the file fast,
most `check` runs build their Grader on one warm zygote shared by the module
(`warm`), and one run (`test_check_correct_end_to_end`) goes through the
Grader exactly as a student's would.
"""
import json
import os
import shutil
import xml.etree.ElementTree as ET

import pytest
from click.testing import CliRunner

import checker.running.runner
from checker._version import __version__
from checker.cli import main
from checker.options import use_color
from checker.judging.scorecard import validate
from checker.spec import assignment_ids, load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REFERENCE = os.path.join(ROOT, "reference", "attention.py")
GOOD_LINE = "return scores / math.sqrt(n)"
BAD_LINE = "return scores / n"
AUTO_POINTS = sum(q["points"] for q in load_spec("attention")["questions"] if not q.get("manual"))
ESC = "\x1b["


def _points(x):
    from checker.render.scorecard_text import format_points
    return format_points(x)


@pytest.fixture(scope="module")
def subs(tmp_path_factory):
    """A correct and a broken `attention` submission, and one that is no assignment at all."""
    d = tmp_path_factory.mktemp("subs")
    src = open(REFERENCE, encoding="utf-8").read()
    assert GOOD_LINE in src, "the reference changed: update GOOD_LINE"
    (d / "good.py").write_text(src)
    (d / "broken.py").write_text(src.replace(GOOD_LINE, BAD_LINE))
    (d / "nothing.py").write_text("x = 1\n")
    return d


@pytest.fixture(scope="module")
def zygote():
    from checker.running.sandbox import Zygote
    z = Zygote()
    yield z
    z.close()


@pytest.fixture
def warm(monkeypatch, zygote):
    """Make the CLI's Grader use the module's warm zygote; record how it was built."""
    calls = []
    real = checker.running.runner.Grader

    def factory(**kwargs):
        calls.append(kwargs)
        return real(**{"zygote": zygote, **kwargs})  # unless the command gives its own (check starts one first)
    monkeypatch.setattr(checker.running.runner, "Grader", factory)
    return calls


def run(*args, env=None):
    return CliRunner().invoke(main, [str(a) for a in args], env=env)


# ---------------------------------------------------------------------------
# --version, --help, list
# ---------------------------------------------------------------------------

def test_version():
    for flag in ("--version", "-V"):
        r = run(flag)
        assert r.exit_code == 0
        assert r.output.strip() == f"hwcheck {__version__}"


def test_help_lists_every_command():
    r = run("--help")
    assert r.exit_code == 0
    for command in ("check", "grade", "show", "list", "init-ci"):
        assert command in r.output


def test_no_command_and_unknown_command_are_usage_errors():
    assert run("frobnicate").exit_code == 2
    r = run()
    assert r.exit_code in (0, 2)  # click prints the help; its status depends on click's version
    assert "Commands:" in r.output


def test_list_shows_assignments_questions_titles_points():
    r = run("list")
    assert r.exit_code == 0, r.output
    for aid in assignment_ids():
        spec = load_spec(aid)
        assert f"{aid}  {spec['title']}" in r.output
        block = r.output.split(f"{aid}  {spec['title']}", 1)[1].split("\n\n", 1)[0]
        for q in spec["questions"]:
            line = next(ln for ln in block.splitlines() if ln.startswith(f"  {q['id']} "))
            assert _points(q["points"]) in line and q["title"] in line
    assert "graded by a person" in r.output  # attention's manual question


# ---------------------------------------------------------------------------
# check
# ---------------------------------------------------------------------------

def test_check_correct_end_to_end(subs):
    """No warm zygote here: the whole path a student's `hwcheck check` takes."""
    r = run("check", subs / "good.py", "-a", "attention")
    assert r.exit_code == 0, r.output
    assert f"Total: {_points(AUTO_POINTS)}/100" in r.output
    assert "FAILED" not in r.output and ESC not in r.output
    assert "Traceback" not in r.output


def test_check_infers_the_assignment_and_says_so(warm, subs, tmp_path):
    out = tmp_path / "card.json"
    r = run("check", subs / "good.py", "--json", out)
    assert r.exit_code == 0, r.output
    assert "assignment inferred from the names defined: attention" in r.output
    card = json.loads(out.read_text())
    validate(card)
    assert card["assignment"] == "attention"
    assert card["grader"]["mode"] == "public"
    assert "seed" not in card["grader"]  # the student view
    assert all(t["visibility"] == "visible" for q in card["questions"] for t in q["tests"])
    assert warm[-1]["mode"] == "public"


def test_check_broken_exits_1_and_explains(warm, subs, tmp_path):
    out = tmp_path / "sub" / "dir" / "card.json"  # parent folders are created
    r = run("check", subs / "broken.py", "-a", "attention", "--json", out)
    assert r.exit_code == 1, r.output
    assert "FAILED" in r.output and "sqrt" in r.output  # the hint about dividing by n
    assert "assignment inferred" not in r.output
    card = json.loads(out.read_text())
    validate(card)
    assert 0 < card["score"] < AUTO_POINTS
    assert not any(p.name.endswith(".tmp") for p in out.parent.iterdir())


def test_check_json_dash_prints_only_json(warm, subs):
    r = run("check", subs / "broken.py", "-a", "attention", "--json", "-")
    assert r.exit_code == 1
    validate(json.loads(r.stdout))


def test_check_ci_annotations_summary_and_junit(warm, subs, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# earlier step\n")
    junit = tmp_path / "junit.xml"
    r = run("check", subs / "broken.py", "-a", "attention", "--ci", "--junit", junit,
            env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert r.exit_code == 1, r.output
    annotations = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ")]
    assert annotations and all("::" in ln[2:] for ln in annotations)
    assert any("test_scale_scores" in ln for ln in annotations)
    assert all("\n" not in ln for ln in annotations)
    text = summary.read_text()
    assert text.startswith("# earlier step\n")  # appended, not replaced
    assert "## hwcheck: attention - broken" in text and "### Failures" in text
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites"
    assert int(root.get("failures")) + int(root.get("errors")) >= 1
    assert {s.get("name") for s in root.iter("testsuite")} == {
        q["id"] for q in load_spec("attention")["questions"]}
    assert ESC not in r.output


def test_check_ci_without_step_summary_env(warm, subs, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    r = run("check", subs / "good.py", "-a", "attention", "--ci")
    assert r.exit_code == 0, r.output
    assert "::error" not in r.output


def test_check_junit_alone_on_a_correct_submission(warm, subs, tmp_path):
    junit = tmp_path / "j.xml"
    r = run("check", subs / "good.py", "-a", "attention", "--junit", junit)
    assert r.exit_code == 0
    root = ET.parse(junit).getroot()
    assert root.get("failures") == "0" and root.get("errors") == "0"
    assert int(root.get("tests")) > 0


def test_check_min_score_decides_the_exit_status(warm, subs, tmp_path):
    card = tmp_path / "c.json"
    r = run("check", subs / "broken.py", "-a", "attention", "--json", card, "--min-score", "10")
    assert r.exit_code == 0, r.output  # some tests failed, but the score is above 10
    score = json.loads(card.read_text())["score"]
    assert run("check", subs / "broken.py", "-a", "attention", "--min-score", score).exit_code == 0
    assert run("check", subs / "broken.py", "-a", "attention", "--min-score", score + 0.01).exit_code == 1
    assert run("check", subs / "good.py", "-a", "attention", "--min-score", 100).exit_code == 1
    assert run("check", subs / "good.py", "-a", "attention", "--min-score", "-1").exit_code == 2


def test_check_device_and_timeout_reach_the_grader(warm, subs):
    from checker.running.plugin import cuda_available
    here = (("cpu", ("cpu",)), ("all", ("cpu", "cuda"))) + ((("cuda", ("cuda",)),) if cuda_available() else ())
    for choice, devices in here:
        r = run("check", subs / "good.py", "-a", "attention", "--device", choice, "--timeout", 30)
        assert r.exit_code == 0, r.output
        assert warm[-1]["devices"] == devices and warm[-1]["timeout"] == 30
    assert run("check", subs / "good.py", "--device", "tpu").exit_code == 2
    assert run("check", subs / "good.py", "--timeout", 0).exit_code == 2


def test_device_cuda_without_cuda_is_refused_before_grading(warm, subs, tmp_path):
    """--device cuda leaves the CPU variants out: where CUDA is absent no device variant would run and the score
    would rest on fewer tests (a bug shown only by the device tests got full marks), so check and grade refuse."""
    from checker.running.plugin import cuda_available
    if cuda_available():
        pytest.skip("this machine has CUDA: --device cuda runs its variants")
    before = len(warm)
    r = run("check", subs / "good.py", "-a", "attention", "--device", "cuda")
    assert r.exit_code == 2 and "CUDA is not available on this machine" in r.output, r.output
    out = tmp_path / "out"
    r = run("grade", subs, "-a", "attention", "-o", out, "--device", "cuda")
    assert r.exit_code == 2 and "--device all" in r.output, r.output
    assert not out.exists() and len(warm) == before  # nothing graded, nothing written


def test_check_verbose_lists_passed_tests(warm, subs):
    r = run("check", subs / "good.py", "-a", "attention", "-v")
    assert r.exit_code == 0
    assert "passed test_" in r.output


def test_check_colour_only_when_asked_or_on_a_terminal(warm, subs, monkeypatch):
    r = run("check", subs / "broken.py", "-a", "attention")
    assert ESC not in r.output  # CliRunner's stdout is not a terminal
    r = run("check", subs / "broken.py", "-a", "attention", "--color")
    assert r.exit_code == 1 and ESC in r.stdout
    r = run("check", subs / "broken.py", "-a", "attention", "--color", "--ci")
    assert ESC in r.stdout  # explicit --color wins even in CI mode
    r = run("check", subs / "broken.py", "-a", "attention", "--ci")
    assert ESC not in r.stdout


def test_use_color_rules():
    assert use_color(None, True, {}) is True
    assert use_color(None, True, {"NO_COLOR": "1"}) is False
    assert use_color(None, True, {"NO_COLOR": ""}) is True  # no-color.org: set *and* non-empty
    assert use_color(None, False, {}) is False
    assert use_color(True, False, {"NO_COLOR": "1"}) is True
    assert use_color(False, True, {}) is False


def test_no_color_on_a_fake_terminal(subs, tmp_path, monkeypatch, warm):
    """With stdout a terminal, colour appears unless NO_COLOR is set."""
    import checker.cli_base as cli_base

    card = tmp_path / "c.json"
    assert run("check", subs / "broken.py", "-a", "attention", "--json", card).exit_code == 1
    monkeypatch.setattr(cli_base, "isatty", lambda name: name == "stdout")
    monkeypatch.delenv("NO_COLOR", raising=False)
    assert ESC in run("show", card).stdout
    assert ESC not in run("show", card, env={"NO_COLOR": "1"}).stdout
    assert ESC not in run("show", card, "--no-color").stdout


def test_check_usage_and_internal_errors_exit_2(warm, subs, tmp_path, monkeypatch):
    r = run("check", tmp_path / "missing.py")
    assert r.exit_code == 2 and "does not exist" in r.output
    assert run("check", subs / "good.py", "-a", "nope").exit_code == 2
    assert run("check").exit_code == 2
    assert run("check", subs / "good.py", "--bogus").exit_code == 2
    r = run("check", subs / "nothing.py")  # no assignment can be inferred: HwcheckError
    assert r.exit_code == 2
    assert r.stderr.startswith("hwcheck: error: could not tell which assignment")
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    (tmp_path / "cut.ipynb").write_text('{"cells": [')  # unreadable: the reason is said, not only "no names"
    r = run("check", tmp_path / "cut.ipynb")
    assert r.exit_code == 2 and "could not read cut.ipynb: it is not valid notebook JSON" in r.stderr
    (tmp_path / "hw").mkdir()
    r = run("check", tmp_path / "hw")
    assert r.exit_code == 2 and "hw holds no .py or .ipynb file: give hwcheck your homework file" in r.stderr
    blocker = tmp_path / "file"
    blocker.write_text("")
    r = run("check", subs / "good.py", "-a", "attention", "--json", blocker / "x.json")
    assert r.exit_code == 2 and r.stderr.startswith("hwcheck: error:")

    def boom(**kwargs):
        raise RuntimeError("a bug")
    monkeypatch.setattr(checker.running.runner, "Grader", boom)
    r = run("check", subs / "good.py", "-a", "attention")
    assert r.exit_code == 2
    assert "internal error (RuntimeError: a bug)" in r.stderr and "Traceback" not in r.output


def test_check_hostile_timeout_exits_1(warm, tmp_path):
    hostile = tmp_path / "spin.py"
    hostile.write_text("def get_scores(matrix, vector):\n    pass\n\nwhile True:\n    pass\n")
    r = run("check", hostile, "-a", "attention", "--timeout", 1)
    assert r.exit_code == 1, r.output
    # the loop is stopped as one statement; get_scores, defined before it, is graded (and wrong)
    assert "spin.py, line 4 ran longer than 1 s and was stopped" in r.output, r.output
    assert "test_get_scores_handout" in r.output and "Traceback" not in r.output
    hostile.write_text("while True:\n    pass\n")
    r = run("check", hostile, "-a", "attention", "--timeout", 1)
    assert r.exit_code == 1 and "Status: timeout" in r.output, r.output


def test_check_folder_submission(warm, subs, tmp_path):
    folder = tmp_path / "mywork"
    folder.mkdir()
    shutil.copy(subs / "good.py", folder / "attention.py")
    r = run("check", folder)
    assert r.exit_code == 0, r.output
    assert "submission mywork" in r.output


# ---------------------------------------------------------------------------
# show
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def ta_card(zygote, subs, tmp_path_factory):
    """A full (hidden-mode) scorecard of the broken submission, as `grade` writes it."""
    from checker.records.atomic import write_json_atomic
    with checker.running.runner.Grader(mode="hidden", seed=99, zygote=zygote) as g:
        card = g.grade(str(subs / "broken.py"), "attention")
    path = tmp_path_factory.mktemp("cards") / "broken.json"
    write_json_atomic(path, card)
    return path


def test_show_student_view_and_all(ta_card):
    card = json.loads(ta_card.read_text())
    hidden = [t["name"] for q in card["questions"] for t in q["tests"] if t["visibility"] == "hidden"]
    assert hidden
    r = run("show", ta_card)
    assert r.exit_code == 0, r.output
    assert "hwcheck: attention - submission broken" in r.output
    assert "[hidden]" not in r.output and "hidden tests (not shown" in r.output
    assert f"Total: {_points(card['score'])}/100" in r.output
    r = run("show", ta_card, "--all")
    assert r.exit_code == 0
    assert "[hidden]" in r.output and "passed test_" in r.output


def test_show_matches_check(warm, subs, tmp_path):
    card = tmp_path / "c.json"
    checked = run("check", subs / "broken.py", "-a", "attention", "--json", card)
    shown = run("show", card)
    assert shown.exit_code == 0
    assert shown.stdout == checked.stdout


def test_show_errors_exit_2(tmp_path):
    assert run("show", tmp_path / "nope.json").exit_code == 2
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    r = run("show", bad)
    assert r.exit_code == 2 and "is not JSON" in r.stderr
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    r = run("show", other)
    assert r.exit_code == 2 and "not a hwcheck scorecard" in r.stderr
    invalid = tmp_path / "invalid.json"
    invalid.write_text(json.dumps({"assignment": "attention", "questions": [], "score": -3}))
    r = run("show", invalid)
    assert r.exit_code == 2 and "not a valid scorecard" in r.stderr
    assert "Traceback" not in r.output


# ---------------------------------------------------------------------------
# init-ci
# ---------------------------------------------------------------------------

def _check_workflow(text, path, assignment, package="hwcheck"):
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is not None:
        doc = yaml.safe_load(text)
        steps = doc["jobs"]["check"]["steps"]
        runs = "\n".join(s.get("run", "") for s in steps)
        uses = [s.get("uses", "").split("@")[0] for s in steps]
        assert uses[:2] == ["actions/checkout", "actions/setup-python"]
        assert steps[1]["with"]["python-version"] == "3.11"
    else:
        # No YAML parser here: check the structure line by line.
        lines = text.splitlines()
        assert "\t" not in text
        assert lines[lines.index("jobs:") + 1] == "  check:"
        assert "    steps:" in lines
        step_lines = [ln for ln in lines if ln.startswith("      - ")]
        assert step_lines and all(ln.startswith("      - name: ") for ln in step_lines)
        for ln in lines:  # every non-empty line is a comment, a key, a list item or a block line
            stripped = ln.strip()
            assert (not stripped or stripped.startswith(("#", "- ")) or ":" in stripped
                    or ln.startswith(" " * 10)), ln
        uses = [ln.split("uses:", 1)[1].strip().split("@")[0] for ln in lines if "uses:" in ln]
        assert uses[:2] == ["actions/checkout", "actions/setup-python"]
        assert 'python-version: "3.11"' in text
        runs = "\n".join(ln.strip() for ln in lines if ln.startswith(" " * 10) and ":" not in ln.split()[0])
    order = [runs.index("pip install torch --index-url https://download.pytorch.org/whl/cpu"),
             runs.index(f"pip install {package}"),
             runs.index(f"hwcheck check {path}" + (f" -a {assignment}" if assignment else "")
                        + " --ci --junit hwcheck-junit.xml")]
    assert order == sorted(order)


def test_init_ci_writes_a_workflow_and_refuses_to_overwrite(tmp_path):
    out = tmp_path / "repo" / ".github" / "workflows" / "hwcheck.yml"
    r = run("init-ci", "--assignment", "attention", "--path", "attention.ipynb", "-o", out,
            "--package", "hwcheck")
    assert r.exit_code == 0, r.output
    text = out.read_text()
    _check_workflow(text, "attention.ipynb", "attention")
    out.write_text("mine\n")
    r = run("init-ci", "-a", "attention", "-o", out, "--path", ".", "--package", "hwcheck")
    assert r.exit_code == 2 and "already exists" in r.stderr
    assert out.read_text() == "mine\n"
    r = run("init-ci", "-a", "vit", "--path", "vit work.ipynb", "-o", out, "--force",
            "--package", "hwcheck==0.1.0")
    assert r.exit_code == 0
    _check_workflow(out.read_text(), "'vit work.ipynb'", "vit", package="hwcheck==0.1.0")


def test_init_ci_default_location_and_stdout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    pkg = "git+https://github.com/course/hwcheck-student"
    r = run("init-ci", "--package", pkg)
    assert r.exit_code == 2 and "--path" in r.stderr and "no .ipynb or .py file" in r.stderr
    (tmp_path / "starter.ipynb").write_text("{}")       # the handout's starter is never the homework
    (tmp_path / "alice_attention.ipynb").write_text("{}")
    r = run("init-ci", "--package", pkg)
    assert r.exit_code == 0, r.output
    assert "checking alice_attention.ipynb" in r.stderr
    text = (tmp_path / ".github" / "workflows" / "hwcheck.yml").read_text()
    _check_workflow(text, "alice_attention.ipynb", None, package=pkg)
    assert run("init-ci", "--package", pkg).exit_code == 2   # it exists
    (tmp_path / "scratch.py").write_text("")
    r = run("init-ci", "-a", "charlm", "-o", "-", "--package", pkg)
    assert r.exit_code == 2 and "found alice_attention.ipynb, scratch.py" in r.stderr
    r = run("init-ci", "-a", "charlm", "-o", "-", "--package", pkg, "--path", ".")
    assert r.exit_code == 0
    _check_workflow(r.stdout, ".", "charlm", package=pkg)


def test_init_ci_needs_to_know_where_hwcheck_is_installed_from(tmp_path, monkeypatch):
    """'hwcheck' on PyPI is not this tool: the full package has no default; the kit knows its own."""
    r = run("init-ci", "--path", "hw.ipynb", "-o", "-")
    assert r.exit_code == 2 and "--package" in r.stderr and "student kit" in r.stderr
    import checker.platforms.ci
    kit_dir = tmp_path / "checker"
    kit_dir.mkdir()
    (kit_dir / "kit.json").write_text('{"package": "git+https://example.org/kit.git"}')
    monkeypatch.setattr(checker.platforms.ci, "__file__", str(kit_dir / "platforms" / "ci.py"))
    r = run("init-ci", "--path", "hw.ipynb", "-o", "-")
    assert r.exit_code == 0, r.output
    _check_workflow(r.stdout, "hw.ipynb", None, package="git+https://example.org/kit.git")


def test_init_ci_rejects_bad_values():
    assert run("init-ci", "-a", "nope", "-o", "-", "--package", "hwcheck").exit_code == 2
    r = run("init-ci", "--path", "a\nb: c", "-o", "-", "--package", "hwcheck")
    assert r.exit_code == 2 and "one line" in r.stderr


def test_check_ci_annotations_point_at_the_students_file_and_line(warm, tmp_path, monkeypatch):
    # a student repository with the homework in a subfolder, checked from the repository root
    repo = tmp_path / "repo"
    (repo / "hw").mkdir(parents=True)
    (repo / "hw" / "q1.py").write_text(
        "import numpy as np\n"
        "def get_context_vector(attention_weights, hidden_encoder_matrix):\n"
        "    return (hidden_encoder_matrix * attention_weights).sum(axis=0)\n")
    monkeypatch.chdir(repo)
    r = run("check", "hw/q1.py", "-a", "attention", "--ci")
    assert r.exit_code == 1
    located = [ln for ln in r.stdout.splitlines() if ln.startswith("::error file=")]
    raised = [ln for ln in located if "raised" in ln]  # the line that raised; a wrong value: the def line
    assert raised and all(ln.startswith("::error file=hw/q1.py,line=3,") for ln in raised), raised[:3]
    assert all(ln.startswith("::error file=hw/q1.py,line=2,") for ln in located if ln not in raised)


def test_code_that_did_not_load_is_a_warning_at_its_file_and_line(warm, tmp_path, monkeypatch):
    # the statement that raised while loading is why a def after it is missing: CI points at it, once per
    # place, as a warning beside the errors of the tests (a notebook cell's line is no line of the file)
    repo = tmp_path / "repo"
    (repo / "hw").mkdir(parents=True)
    (repo / "hw" / "q1.py").write_text(
        "import numpy as np\n"
        "W = np.load('weights_on_my_laptop.npy')\n"
        "def scale_scores(scores, n):\n"
        "    return scores / W\n")
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import numpy as np\nprint(undefined_name)\n"}]}
    (repo / "hw" / "q2.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(repo)
    r = run("check", "hw", "-a", "attention", "--ci")
    assert r.exit_code == 1
    warnings = [ln for ln in r.stdout.splitlines() if ln.startswith("::warning ")]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("::warning file=hw/q1.py,line=2,title=hwcheck › part of your code did not run::"), warnings
    assert "FileNotFoundError" in warnings[0], warnings
    assert warnings[1].startswith("::warning file=hw/q2.ipynb,title="), warnings
    assert "NameError" in warnings[1], warnings
    errors = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ")]
    assert 0 < len(errors) <= 10, errors  # the errors keep their own ten


def test_a_wrong_answer_is_located_at_the_students_def(warm, tmp_path, monkeypatch):
    # no exception to take a line from: the annotation and the report point at the def the failure is about
    repo = tmp_path / "repo"
    (repo / "hw").mkdir(parents=True)
    (repo / "hw" / "q1.py").write_text("import numpy as np\n")
    (repo / "hw" / "q2.py").write_text(
        "import numpy as np\n"
        "\n"
        "def scale_scores(scores, n):\n"
        "    return np.asarray(scores) / n\n")
    nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# Q1"},
        {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
         "source": "import numpy as np\n\n\ndef get_scores(matrix, vector):\n    return np.asarray(vector) @ np.asarray(matrix)\n"}]}
    (repo / "hw" / "q3.ipynb").write_text(json.dumps(nb))
    monkeypatch.chdir(repo)
    r = run("check", "hw", "-a", "attention", "--ci")
    assert r.exit_code == 1
    scale = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ") and "test_scale_scores" in ln]
    assert scale and all(ln.startswith("::error file=hw/q2.py,line=3,") for ln in scale), scale[:2]
    scores = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ") and "test_get_scores" in ln]
    # a line within a notebook cell is no line of the .ipynb file: the annotation names the file only
    assert scores and all(ln.startswith("::error file=hw/q3.ipynb,title=") for ln in scores), scores[:2]
    assert "(your `scale_scores` is in q2.py, line 3)" in r.stdout
    # the cell as the notebook shows it: it never ran, and the markdown cell above it is not counted
    assert "(your `get_scores` is in q3.ipynb, the 1st code cell, line 4)" in r.stdout
    missing = [ln for ln in r.stdout.splitlines() if ln.startswith("::error ") and "test_context_vector" in ln]
    assert missing and not any("file=" in ln for ln in missing)  # a missing function has no place


def test_show_warns_of_a_scorecard_hwcheck_did_not_write(warm, subs, tmp_path):
    """The folder of the students' files may be OUT itself (`-o` the download folder): a student's upload named
    like a scorecard, or a scorecard edited after grading, sits in OUT beside hwcheck's. `show` still prints it,
    then says hwcheck did not write it and exits 1; hwcheck's own scorecard shows as before."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(subs / "broken.py", folder / "alice.py")
    r = run("grade", folder, "-a", "attention", "-o", folder)
    assert r.exit_code == 0, r.output
    card = folder / "alice.json"
    assert run("show", card).exit_code == 0
    forged = json.loads(card.read_text())
    forged["score"] = forged["max_score"]
    (folder / "mallory.json").write_text(json.dumps(forged))  # uploaded by a student, never written by hwcheck
    for path in (folder / "mallory.json", card):
        if path == card:
            card.write_text(json.dumps(forged))  # edited after grading
        r = run("show", path)
        assert r.exit_code == 1, r.output
        assert "hwcheck did not write" in r.stderr and "no grade" in r.stderr, r.stderr
    elsewhere = tmp_path / "saved.json"  # a scorecard saved outside any output folder: nothing to tell
    elsewhere.write_text(json.dumps(forged))
    r = run("show", elsewhere)
    assert r.exit_code == 0 and "hwcheck did not write" not in r.stderr


def test_resume_says_so_before_it_regrades_another_modes_scorecards(warm, subs, tmp_path):
    """`--resume --public` on a folder graded with the hidden tests regraded every student with the public tests
    alone, silently; `--resume --seed` other than the batch's gave the new students other inputs. Both are
    said first, with the command that keeps the grades."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(subs / "good.py", folder / "alice.py")
    out = tmp_path / "out"
    assert run("grade", folder, "-a", "attention", "-o", out, "--seed", 42).exit_code == 0
    shutil.copy(subs / "broken.py", folder / "bob.py")
    r = run("grade", folder, "-a", "attention", "-o", out, "--resume", "--seed", 43)
    assert r.exit_code == 0, r.output
    assert "graded with seed 42" in r.stderr and "--seed 42" in r.stderr, r.stderr
    # the summary says the scorecards' seeds, not only the last one (it said "seed 43 (kept in the scorecards")
    assert "seeds 42 (1 scorecard), 43 (1 scorecard)" in r.output or "seeds 43 (1 scorecard), 42 (1 scorecard)" \
        in r.output, r.output
    assert "seed 43 (kept in the scorecards" not in r.output, r.output
    r = run("grade", folder, "-a", "attention", "-o", out, "--resume", "--public")
    assert r.exit_code == 0, r.output
    assert "graded with the hidden tests" in r.stderr and "without --public" in r.stderr, r.stderr
    r = run("grade", folder, "-a", "attention", "-o", out, "--resume", "--public")
    assert "warning" not in r.stderr, r.stderr  # now all public: nothing differs


def test_a_new_written_answer_under_a_grade_typed_for_the_old_one_is_told(warm, subs, tmp_path):
    """A late resubmission with another written answer: `--resume` regrades it and manual.csv's points for the
    old answer (the TA's, never changed by hwcheck) went on counting for the new one without a word. They still
    count, and the summary and grades.csv's note say the answer changed since it was graded by hand."""
    import csv as _csv
    folder = tmp_path / "class"
    folder.mkdir()
    src = (subs / "good.py").read_text() + "\n# Q3-text\n# Several heads look at different things at once.\n"
    (folder / "alice.py").write_text(src)
    out = tmp_path / "out"
    assert run("grade", folder, "-a", "attention", "-o", out, "--seed", 5).exit_code == 0
    manual = (out / "manual.csv").read_text(encoding="utf-8-sig").replace("alice,Q3-text,,", "alice,Q3-text,8,v1")
    (out / "manual.csv").write_text(manual, encoding="utf-8-sig")
    r = run("grade", folder, "-a", "attention", "-o", out, "--resume")
    assert "changed since it was graded by hand" not in r.output + r.stderr  # nothing changed yet
    (folder / "alice.py").write_text(src.replace("Several heads", "LATE: several heads"))
    r = run("grade", folder, "-a", "attention", "-o", out, "--resume")
    assert r.exit_code == 0, r.output
    said = r.output + r.stderr
    assert "alice: the written answer to Q3-text changed since it was graded by hand (8 points" in said, said
    with open(out / "grades.csv", encoding="utf-8-sig", newline="") as f:
        row = next(row for row in _csv.DictReader(f) if row["id"] == "alice")
    assert row["Q3-text"] == "8" and "changed since it was graded by hand" in row["note"], row
    assert "alice,Q3-text,8,v1" in (out / "manual.csv").read_text(encoding="utf-8-sig")  # the TA's, as typed


def test_export_of_a_plain_folder_writes_the_gradebook_and_says_there_is_no_lms_file(warm, subs, tmp_path):
    """`hwcheck export OUT` after grading by hand, OUT from a plain folder: it rewrote grades.csv with the grades
    typed into manual.csv, then said "error: ... holds no Canvas or Moodle students" and exited 2."""
    folder = tmp_path / "class"
    folder.mkdir()
    shutil.copy(subs / "good.py", folder / "alice.py")
    out = tmp_path / "out"
    assert run("grade", folder, "-a", "attention", "-o", out).exit_code == 0
    manual = (out / "manual.csv").read_text(encoding="utf-8-sig").replace("alice,Q3-text,,", "alice,Q3-text,7,")
    (out / "manual.csv").write_text(manual, encoding="utf-8-sig")
    r = run("export", out)
    assert r.exit_code == 0, r.output
    assert "no canvas.csv or moodle.csv" in r.stdout and "error" not in r.output, r.output
    assert ",7," in (out / "grades.csv").read_text(encoding="utf-8-sig")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run("export", empty)
    assert r.exit_code == 2 and "holds no scorecards" in r.stderr, r.output


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="mounting a small tmpfs takes root")
def test_export_on_a_full_disk_says_what_may_be_stale_and_the_command_again(warm, subs, tmp_path):
    """`hwcheck export` with OUT's disk full said only "hwcheck: error: [Errno 28] No space left on device" (a
    TA's probe, h22): it says the disk is full, which file, that the exports may hold the last run's grades,
    and the command to run again; manual.csv, the TA's, is as it was."""
    import subprocess
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(small)], check=True)
    try:
        folder = tmp_path / "class"
        folder.mkdir()
        shutil.copy(subs / "good.py", folder / "s0.py")
        out = small / "out"
        r = run("grade", folder, "-a", "attention", "-o", out, "--public", "--seed", 3)
        assert r.exit_code == 0, r.output
        manual = (out / "manual.csv").read_bytes()
        free = os.statvfs(small)
        (small / "filler").write_bytes(b"\0" * (free.f_bavail * free.f_frsize))
        r = run("export", out)
        assert r.exit_code != 0 and "is full" in r.stderr and "Errno" not in r.stderr, r.stderr
        assert f"hwcheck export {out}" in r.stderr and "may still hold the last run's grades" in r.stderr, r.stderr
        assert (out / "manual.csv").read_bytes() == manual
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("mount"), reason="mounting a small tmpfs takes root")
def test_a_full_disk_stops_the_batch_naming_the_resume_command(warm, subs, tmp_path):
    """OUT on a disk that fills midway (a 2 MB tmpfs, nearly full): the batch ended with the bare
    "[Errno 28] No space left on device"; it says what is kept and the command that goes on, as Ctrl-C does."""
    import subprocess
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(small)], check=True)
    try:
        (small / "filler").write_bytes(b"\0" * (2 * 2**20 - 96 * 1024))
        folder = tmp_path / "class"
        folder.mkdir()
        for i in range(6):
            shutil.copy(subs / "good.py", folder / f"s{i}.py")
        r = run("grade", folder, "-a", "attention", "-o", small / "out", "--seed", 3)
        assert r.exit_code == 2, r.output
        assert "is full" in r.stderr and "--resume --seed 3" in r.stderr and "Errno" not in r.stderr, r.stderr
        assert "crashed" not in r.output, r.output  # no 0/100 card for each submission left
    finally:
        subprocess.run(["umount", "-l", str(small)], check=False)
