"""The student kit: no reference solutions, no hidden tests, same public verdicts."""
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from checker.cli import main
from checker.spec import assignment_ids, load_spec

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KIT_PACKAGE = "git+https://github.com/course/hwcheck-student@v1"

# Run hwcheck from the kit alone: the editable install of the full package is hidden from the import system.
RUN_FROM_KIT = """
import sys
kit = sys.argv[1]
sys.meta_path[:] = [f for f in sys.meta_path if "editable" not in repr(f) and "editable" not in str(type(f))]
sys.path.insert(0, kit)
import checker, checker.cli
assert checker.__file__.startswith(kit), checker.__file__
try:
    import reference
except ImportError:
    pass
else:
    raise SystemExit("the reference solutions are importable from the kit: " + str(reference.__path__))
sys.argv = ["hwcheck"] + sys.argv[2:]
checker.cli.main()
"""


@pytest.fixture(scope="module")
def kit(tmp_path_factory):
    out = tmp_path_factory.mktemp("kit") / "hwcheck-student"
    r = CliRunner().invoke(main, ["kit", "-o", str(out), "--package", KIT_PACKAGE])
    assert r.exit_code == 0, r.output
    return out


def check_from_kit(kit, submission, aid, tmp_path):
    card = tmp_path / f"{aid}-{os.path.basename(submission)}.json"
    p = subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), "check", submission, "-a", aid,
                        "--json", str(card)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode in (0, 1) and card.exists(), p.stdout + p.stderr
    return json.loads(card.read_text()), p


def test_kit_holds_no_reference_and_no_hidden_test(kit):
    assert not (kit / "reference").exists()
    assert '"reference"' not in (kit / "pyproject.toml").read_text()
    for aid in assignment_ids():
        spec = load_spec(aid)
        source = (kit / "assignments" / aid / spec["tests"]).read_text()
        for name in (t for q in spec["questions"] for t in q["hidden_tests"]):
            assert f"def {name}(" not in source, name
        assert (kit / "assignments" / aid / "recorded.json").is_file()
    # no line of a reference solution's code travelled into the kit (recordings included)
    solution_lines = set()
    for aid in assignment_ids():
        with open(os.path.join(ROOT, "reference", f"{aid}.py"), encoding="utf-8") as f:
            for line in f:
                code = line.split("#")[0].strip()
                if len(code) > 30 and not code.startswith(("def ", "class ", "import ", "from ", '"""')):
                    solution_lines.add(code)
    assert len(solution_lines) > 20
    for root, _dirs, files in os.walk(kit):
        for name in files:
            if name.startswith("test_"):
                continue  # public grading tests compute the known mistakes: generic lines like a softmax
            text = open(os.path.join(root, name), encoding="utf-8", errors="replace").read()
            leaked = [code for code in solution_lines if code in text]
            assert not leaked, (os.path.join(root, name), leaked[:3])


@pytest.mark.slow
@pytest.mark.parametrize("aid,sub", [("attention", "correct.py"), ("attention", "feature_axis.py"),
                                     ("charlm", "layernorm_unbiased.py")])
def test_kit_gives_the_public_verdicts_of_the_full_package(kit, grader, tmp_path, aid, sub):
    path = os.path.join(ROOT, "submissions", aid, sub)
    full = grader.grade(path, aid)
    from_kit, p = check_from_kit(kit, path, aid, tmp_path)
    assert from_kit["score"] == full["score"], p.stdout
    assert [q["score"] for q in from_kit["questions"]] == [q["score"] for q in full["questions"]]
    # the student is told as many hidden tests as grading will run (not the count of test functions)
    assert [q["hidden_tests"] for q in from_kit["questions"]] == [q["hidden_tests"] for q in full["questions"]]
    hints = [t["message"] for q in full["questions"] for t in q["tests"] if t["outcome"] == "failed"]
    kit_msgs = "\n".join(t["message"] for q in from_kit["questions"] for t in q["tests"])
    assert all(h in kit_msgs for h in hints)


def test_kit_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "something.txt").write_text("x")
    r = CliRunner().invoke(main, ["kit", "-o", str(tmp_path)])
    assert r.exit_code == 2 and "not empty" in r.output
    assert sorted(os.listdir(tmp_path)) == ["something.txt"]


@pytest.mark.slow
def test_kit_refuses_hidden_grading_and_its_public_scorecards_never_resume_a_real_batch(kit, tmp_path):
    """The kit has no hidden tests: a 'hidden' scorecard from it would be a forged full grade."""
    subs = tmp_path / "class"
    subs.mkdir()
    (subs / "alice.py").write_text(open(os.path.join(ROOT, "reference", "attention.py")).read())
    out = tmp_path / "out"
    p = subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), "grade", str(subs), "-a", "attention",
                        "-o", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 2, p.stdout + p.stderr
    assert "student kit" in p.stderr and "--public" in p.stderr
    assert not (out / "alice.json").exists()

    p = subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), "grade", str(subs), "-a", "attention",
                        "-o", str(out), "--public", "--timeout", "20"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    card = json.loads((out / "alice.json").read_text())
    assert card["grader"]["student_kit"] is True and card["grader"]["mode"] == "public"

    from checker.batch import is_current
    assert not is_current(str(out), "alice", str(subs / "alice.py"), "attention", "public")


def test_the_kits_init_ci_installs_the_kit_from_where_it_was_published(kit, tmp_path):
    (tmp_path / "my_attention.ipynb").write_text("{}")
    p = subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), "init-ci", "-a", "attention", "-o", "-"],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert f"pip install {KIT_PACKAGE}" in p.stdout
    assert "hwcheck check my_attention.ipynb -a attention --ci" in p.stdout


def _kit_cli(kit, *args, cwd=None):
    return subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), *args], capture_output=True, text=True,
                          timeout=120, cwd=cwd or str(kit))


def test_the_kits_readme_is_written_for_students(kit):
    """Install (the CPU build of torch first), check from a terminal, a notebook and Colab, and CI: and
    nothing of what the kit lacks (grading with hidden tests, `kit`, the reference solutions)."""
    readme = (kit / "README.md").read_text()
    torch_cpu = "pip install torch --index-url https://download.pytorch.org/whl/cpu"
    assert torch_cpu in readme and f"pip install {KIT_PACKAGE}" in readme
    assert readme.index(torch_cpu) < readme.index(f"pip install {KIT_PACKAGE}")
    assert f"!pip install -q {KIT_PACKAGE}" in readme  # a Colab cell
    for line in ("hwcheck check my_attention.ipynb", "import checker", "checker.check()", 'checker.check("Q1")',
                 "%load_ext checker", "%hwcheck Q1", "hwcheck init-ci -a attention", "Colab"):
        assert line in readme, line
    for word in ("hwcheck grade", "hwcheck kit", "reference", "--hidden", "gradescope", "TA"):
        assert word not in readme, word
    pyproject = (kit / "pyproject.toml").read_text()
    assert 'requires = ["setuptools>=77,<85"]' in pyproject and "reference" not in pyproject
    assert "[project.optional-dependencies]" not in pyproject and "importlinter" not in pyproject
    p = _kit_cli(kit, "--help")
    assert p.returncode == 0, p.stderr
    offered = {line.split()[0] for line in p.stdout.split("Commands:")[1].splitlines() if line.strip()}
    assert offered == {"check", "list", "show", "init-ci"}, p.stdout
    assert "grade" not in p.stdout and "TAs" not in p.stdout


def test_the_kit_builds_with_its_pinned_backend_without_deprecation_warnings(kit, tmp_path):
    from packaging.specifiers import SpecifierSet
    from importlib.metadata import version
    from checker.kit_files import BUILD_REQUIRES
    # the backend here (the one this test builds with, offline) is one the kit's pin allows
    assert version("setuptools") in SpecifierSet(BUILD_REQUIRES.split("setuptools", 1)[1])
    import shutil
    src = tmp_path / "kit"
    shutil.copytree(kit, src)
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-v",
                        "-w", str(tmp_path / "dist"), str(src)], capture_output=True, text=True, timeout=300)
    out = p.stdout + p.stderr
    assert p.returncode == 0, out[-3000:]
    assert "deprecat" not in out.lower(), [line for line in out.splitlines() if "eprecat" in line][:5]
    # (with PYTHONDONTWRITEBYTECODE set, setuptools says it skips byte-compiling: an environment's choice)
    warned = [line for line in out.splitlines() if "warning" in line.lower() and "byte-compiling is disabled" not in line]
    assert not warned, warned[:5]
    wheel = next((tmp_path / "dist").glob("hwcheck-*.whl"))
    import zipfile
    names = zipfile.ZipFile(wheel).namelist()
    assert not [n for n in names if n.startswith("reference/")]
    assert "checker/kit.json" in names and "assignments/attention/recorded.json" in names


@pytest.mark.slow
def test_the_kit_installs_cpu_only_in_a_fresh_venv_as_its_readme_says_and_checks_a_notebook(kit, tmp_path):
    """The README's steps in a new venv: torch's CPU build first (here the wheel on this machine's disk,
    as .ci/run installs it), then the kit; no nvidia-* package comes in, and `hwcheck check` works."""
    import shutil
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip"]
    p = subprocess.run(pip + ["install", "-q", "torch==2.13.0"], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    src = tmp_path / "hwcheck-student"
    shutil.copytree(kit, src)
    p = subprocess.run(pip + ["install", "-q", str(src)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "deprecat" not in (p.stdout + p.stderr).lower(), p.stderr
    listed = subprocess.run(pip + ["list", "--format=freeze"], capture_output=True, text=True, timeout=120).stdout
    assert not [line for line in listed.splitlines() if line.lower().startswith("nvidia")], listed
    assert "torch==2.13.0+cpu" in listed, listed
    nb = tmp_path / "work" / "my_attention.ipynb"
    nb.parent.mkdir()
    shutil.copy(os.path.join(ROOT, "submissions", "attention", "correct_notebook.ipynb"), nb)
    p = subprocess.run([str(venv / "bin" / "hwcheck"), "check", nb.name], capture_output=True, text=True,
                       timeout=600, cwd=nb.parent)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "Total: 90/100" in p.stdout and "pending" in p.stdout, p.stdout
    import_check = subprocess.run([str(venv / "bin" / "python"), "-c", "import checker; print(checker.check)"],
                                  capture_output=True, text=True, timeout=120, cwd=nb.parent)
    assert import_check.returncode == 0 and "function check" in import_check.stdout, import_check.stderr
