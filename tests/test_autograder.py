"""Tests of `hwcheck gradescope` (checker.platforms.autograder) and the zip's run_autograder (checker.platforms.autograde).

The zip is built with the real command (--online here: only hwcheck's wheel inside; the zip with
every wheel inside, as built by default, is installed by its setup.sh in a Gradescope-shaped
container in tests/test_autograder_container.py); its `run_autograder` runs in a
temporary folder laid out as Gradescope's (`source/`, `submission/`,
`results/`, moved there with HWCHECK_AUTOGRADER_ROOT) with this venv's bin on
PATH; every results.json is validated against the JSON Schema of Gradescope's
documented format (checker/schema/gradescope-results.schema.json), and its
top-level score must be exactly the sum of its tests.
"""

import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from decimal import Decimal
from importlib import resources

import jsonschema
import pytest

from checker.platforms.autograde import autograder_results
from checker.judging.scorecard import build_scorecard
from checker.spec import assignment_dir, assignment_ids, load_spec, reference_file
from checker.spec import example_path as example
from checker.spec import grading_test_files

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
HWCHECK = os.path.join(BIN, "hwcheck")
# the automatic points of each assignment, from its spec (adding a question changes no number here)
AUTO = {aid: sum(q["points"] for q in load_spec(aid)["questions"] if not q.get("manual")) for aid in assignment_ids()}
SCHEMA = json.loads(resources.files("checker").joinpath("schema", "gradescope-results.schema.json")
                    .read_text(encoding="utf-8"))
pytestmark = pytest.mark.skipif(not os.path.exists(HWCHECK), reason="hwcheck is not installed in this venv")


def validate(results):
    """Gradescope's format, and the score is the sum of the tests (exactly, in 4 decimals)."""
    jsonschema.validate(results, SCHEMA)
    total = sum((Decimal(str(t["score"])) for t in results["tests"]), Decimal(0))
    assert Decimal(str(results["score"])) == total
    assert abs(results["score"] - sum(t["score"] for t in results["tests"])) < 1e-6
    for t in results["tests"]:
        assert 0 <= t["score"] <= t["max_score"] + 1e-9, t


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("zip") / "autograder.zip"
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(out), "--online"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "wrote" in proc.stdout
    return out


@pytest.fixture(scope="module")
def built_vit(tmp_path_factory):
    out = tmp_path_factory.mktemp("zipvit") / "autograder.zip"
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "vit", "-o", str(out), "--online"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return out


def layout(tmp_path, zip_path):
    """A folder laid out as Gradescope's /autograder, the zip unpacked in source/ (modes kept)."""
    root = tmp_path / "autograder"
    for d in ("source", "submission", "results"):
        (root / d).mkdir(parents=True)
    with zipfile.ZipFile(zip_path) as z:
        for info in z.infolist():
            z.extract(info, root / "source")
            mode = info.external_attr >> 16
            if mode:
                os.chmod(root / "source" / info.filename, stat.S_IMODE(mode))
    return root


def run_autograder(root, *, path=None, env=None, timeout=300):
    environ = dict(os.environ, HWCHECK_AUTOGRADER_ROOT=str(root),
                   PATH=path if path is not None else BIN + os.pathsep + os.environ.get("PATH", ""))
    environ.pop("HWCHECK_AUTOGRADE_CRASH", None)
    environ.update(env or {})
    proc = subprocess.run([str(root / "source" / "run_autograder")], env=environ, capture_output=True,
                          text=True, timeout=timeout, cwd=str(root / "source"))
    assert proc.returncode == 0, proc.stderr
    with open(root / "results" / "results.json", encoding="utf-8") as f:
        results = json.load(f)
    validate(results)
    return results


# ---------------------------------------------------------------------------
# the zip
# ---------------------------------------------------------------------------

def test_zip_holds_gradescope_entry_points_config_and_wheel(built, tmp_path):
    import torch
    with zipfile.ZipFile(built) as z:
        names = set(z.namelist())
        modes = {i.filename: stat.S_IMODE(i.external_attr >> 16) for i in z.infolist()}
        setup = z.read("setup.sh").decode()
        config = json.loads(z.read("hwcheck-autograder.json"))
        constraints = z.read("constraints.txt").decode()
    wheels = [n for n in names if n.startswith("wheels/hwcheck-") and n.endswith(".whl")]
    assert {"setup.sh", "run_autograder", "constraints.txt", "hwcheck-autograder.json"} <= names and len(wheels) == 1
    assert modes["setup.sh"] & 0o111 and modes["run_autograder"] & 0o111
    version = torch.__version__.split("+")[0]
    assert config["assignment"] == "attention" and config["torch"] == version
    assert f"TORCH_VERSION={version}" in setup and "https://download.pytorch.org/whl/cpu" in setup
    import numpy
    assert f"numpy=={numpy.__version__}\n" in constraints
    assert "\ntorch==" not in constraints  # torch comes on its own, as the CPU build
    root = layout(tmp_path, built)
    for script in ("setup.sh", "run_autograder"):
        proc = subprocess.run(["bash", "-n", str(root / "source" / script)], capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr


def test_wheel_in_zip_installs_with_the_hidden_tests_and_reference(built, tmp_path):
    root = layout(tmp_path, built)
    wheel = next((root / "source" / "wheels").glob("hwcheck-*.whl"))
    target = tmp_path / "site"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                           "--disable-pip-version-check", "-q", "--target", str(target), str(wheel)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    spec = load_spec("attention")
    hidden = "".join((target / os.path.relpath(p, ROOT)).read_text(encoding="utf-8") for p in grading_test_files(spec))
    assert "hidden" in hidden
    assert (target / os.path.relpath(reference_file(spec), ROOT)).is_file()
    assert (target / "checker" / "schema" / "gradescope-results.schema.json").is_file()
    assert not (target / "tests").exists() and not (target / "submissions").exists()


def test_torch_wheel_option_puts_the_wheel_in_and_setup_installs_it(tmp_path):
    import torch
    version = torch.__version__.split("+")[0]
    fake = tmp_path / f"torch-{version}+cpu-cp311-cp311-linux_x86_64.whl"
    with zipfile.ZipFile(fake, "w") as z:
        z.writestr("torch/__init__.py", "")
    out = tmp_path / "a.zip"
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(out), "--torch-wheel", str(fake),
                           "--online"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    with zipfile.ZipFile(out) as z:
        assert f"wheels/{fake.name}" in z.namelist()
        assert f"TORCH_WHEEL={fake.name}" in z.read("setup.sh").decode().replace("'", "")
    # another torch than the one tested is refused; an existing zip is kept without --force
    wrong = tmp_path / "torch-1.0.0-cp311-cp311-linux_x86_64.whl"
    shutil.copyfile(fake, wrong)
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(tmp_path / "b.zip"),
                           "--torch-wheel", str(wrong)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "not the torch installed here" in proc.stderr
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(out)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "--force" in proc.stderr


# ---------------------------------------------------------------------------
# run_autograder on submissions
# ---------------------------------------------------------------------------

def test_wheels_for_a_python_that_is_no_version_are_refused(tmp_path):
    proc = subprocess.run([HWCHECK, "gradescope", "-a", "attention", "-o", str(tmp_path / "a.zip"), "--python", "3"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2 and "MAJOR.MINOR" in proc.stderr and not (tmp_path / "a.zip").exists()


def _hidden_entries_only_summaries(results):
    hidden = [t for t in results["tests"] if t["visibility"] != "visible"]
    assert hidden and all("hidden tests (" in t["name"] for t in hidden)


def test_correct_notebook_scores_full_automatic_points(built, tmp_path):
    root = layout(tmp_path, built)
    shutil.copy(example("attention", "correct_notebook.ipynb"), root / "submission")
    results = run_autograder(root)
    auto = AUTO["attention"]
    assert results["score"] == auto and results["output"].startswith(f"Automatic tests: {auto:g}/{auto:g}")
    _hidden_entries_only_summaries(results)
    assert results["extra_data"]["hwcheck"]["mode"] == "hidden"


def test_folder_with_the_starter_beside_the_students_files(built, tmp_path):
    root = layout(tmp_path, built)
    shutil.copytree(example("attention", "correct_folder"), root / "submission" / "hw")
    shutil.copy(os.path.join(assignment_dir("attention"), "starter.ipynb"), root / "submission" / "hw")
    os.makedirs(root / "submission" / "__MACOSX" / "hw")  # what a Mac's zip adds: not graded
    (root / "submission" / "__MACOSX" / "hw" / "._q1.py").write_bytes(b"\x00\x05\x16\x07junk")
    results = run_autograder(root)
    assert results["score"] == AUTO["attention"], results["output"]


def test_broken_file_gets_its_messages_and_a_valid_file(built, tmp_path):
    root = layout(tmp_path, built)
    shutil.copy(example("attention", "syntax_error.py"), root / "submission")
    results = run_autograder(root)
    assert 0 < results["score"] < AUTO["attention"]
    assert any("split_heads" in t["output"] for t in results["tests"])


def test_empty_submission_scores_zero_with_a_message(built, tmp_path):
    root = layout(tmp_path, built)
    results = run_autograder(root)
    assert results["score"] == 0 and "no .py or .ipynb file" in results["output"]


@pytest.mark.parametrize("how", ["crash", "no-submission-folder"])
def test_internal_error_still_writes_a_valid_results_json(built, tmp_path, how):
    root = layout(tmp_path, built)
    shutil.copy(example("attention", "correct.py"), root / "submission")
    env = {}
    if how == "crash":
        env["HWCHECK_AUTOGRADE_CRASH"] = "1"
    else:
        shutil.rmtree(root / "submission")
    results = run_autograder(root, env=env)
    assert results["score"] == 0 and results["tests"] == []
    assert "could not grade this submission" in results["output"] and "course staff" in results["output"]


def test_hwcheck_missing_or_writing_garbage_still_leaves_a_valid_results_json(built, tmp_path):
    root = layout(tmp_path, built)
    python_only = tmp_path / "bin"
    python_only.mkdir()
    os.symlink(sys.executable, python_only / "python3")
    results = run_autograder(root, path=f"{python_only}:/usr/bin:/bin")  # no hwcheck on PATH
    assert results["score"] == 0 and "exit status 127" in results["output"]
    # an hwcheck that dies after writing half a file
    (python_only / "hwcheck").write_text('#!/bin/sh\nprintf \'{"score": 9\' > "$HWCHECK_AUTOGRADER_ROOT/results/'
                                         'results.json"\nexit 3\n')
    os.chmod(python_only / "hwcheck", 0o755)
    results = run_autograder(root, path=f"{python_only}:/usr/bin:/bin")
    assert results["score"] == 0 and "exit status 3" in results["output"]


def test_gpu_variants_are_folded_into_one_line(built_vit, tmp_path):
    root = layout(tmp_path, built_vit)
    shutil.copy(example("vit", "correct.py"), root / "submission")
    results = run_autograder(root)
    assert results["score"] == AUTO["vit"]
    assert not any("cuda" in t["name"].lower() or "CUDA" in t["output"] for t in results["tests"])
    assert "need a GPU (CUDA) and were not run here" in results["output"]
    assert results["extra_data"]["hwcheck"]["gpu_tests_not_run"] > 0


# ---------------------------------------------------------------------------
# the mapping (pure)
# ---------------------------------------------------------------------------

SPEC = {"id": "attention", "questions": [{"id": "Q1", "title": "Seven tests", "points": 10},
                                         {"id": "Q2", "title": "By hand", "points": 5, "manual": True}]}


def _rtest(i, outcome, device="cpu", visibility="visible"):
    test = {"nodeid": f"test_attention.py::test_{i}", "outcome": outcome,
            "setup": {"duration": 0.0, "outcome": "passed"},
            "call": {"duration": 0.0, "outcome": outcome},
            "teardown": {"duration": 0.0, "outcome": "passed"},
            "metadata": {"question": "Q1", "visibility": visibility, "device": device, "dtype": "float64",
                         "weight": 1, "outcome": None, "message": None, "missing_names": []}}
    if outcome == "failed":
        test["call"]["crash"] = {"path": "t.py", "lineno": 1, "message": "AssertionError: wrong"}
    if outcome == "skipped":
        test["call"]["longrepr"] = "('t.py', 3, 'Skipped: CUDA is not available on this machine')"
    return test


def _card(tests, **kw):
    return build_scorecard(
        {"tests": tests}, SPEC, submission={"id": "s", "path": "s.py", "sha256": None},
        load={"ok": True, "messages": []},
        environment={"python": "3.11", "torch": None, "numpy": "1.26", "platform": "Linux", "cuda": None},
        grader={"version": "0.1.0", "mode": "hidden", "spec_sha256": None, "seed": 1}, duration_s=1.0, **kw)


def test_score_is_the_sum_of_the_tests_where_shares_round():
    # 7 tests share 10 points (1.4286 each, the last 1.4284); 5 of the first 6 pass: the question scores
    # 10 * 5/7 = 7.1429 while their shares add up to 7.1430
    tests = [_rtest(i, "passed" if i < 5 else "failed") for i in range(7)]
    card = _card(tests)
    assert card["score"] == 7.1429
    plain = sum(Decimal(str(t["points"])) for t in card["questions"][0]["tests"])
    assert plain != Decimal("7.1429")  # the case this is about
    results = autograder_results(card)
    validate(results)
    assert results["score"] == 7.1429


def test_gpu_skips_left_out_hidden_folded_manual_not_scored():
    tests = [_rtest(0, "passed"), _rtest(1, "skipped", device="cuda"), _rtest(2, "passed", visibility="hidden"),
             _rtest(3, "skipped", device="cuda", visibility="hidden"), _rtest(4, "failed", visibility="hidden")]
    results = autograder_results(_card(tests))
    validate(results)
    assert [t["name"] for t in results["tests"]] == ["Q1 \u203a test_0", "Q1 \u203a hidden tests (2)"]
    assert "2 test variants need a GPU" in results["output"] and "Q2 (5 points)" in results["output"]
    assert results["score"] == 6.6667  # 2 of the 3 tests that ran, of 10 points


def test_only_the_plugins_own_reasons_fold_a_skip_into_the_gpu_line():
    """A skip whose reason quotes a student's text that says CUDA (a test "judged by the other tests, not here:
    get_scores: needs CUDA") stays a test of its own; the plugin's reasons (checker.judging.portability) fold."""
    from checker.judging.portability import CUDA_ONLY, NO_CUDA
    tests = [_rtest(i, "skipped") for i in range(4)]
    reasons = ["judged by the other tests, not here: get_scores: needs CUDA", "CUDA", CUDA_ONLY.format("float16"),
               NO_CUDA]
    for test, reason in zip(tests, reasons):
        test["call"]["longrepr"] = repr(("t.py", 3, "Skipped: " + reason))
    results = autograder_results(_card(tests))
    validate(results)
    assert [t["name"] for t in results["tests"]] == ["Q1 \u203a test_0", "Q1 \u203a test_1"]
    assert "2 test variants need a GPU" in results["output"]


def test_internal_error_scorecard_maps_to_zero_with_a_message():
    card = _card([_rtest(0, "passed")])
    card["grader"]["internal_error"] = "boom"
    results = autograder_results(card)
    validate(results)
    assert results["score"] == 0 and "boom" in results["output"]
