"""The grading pipeline end to end: references score full marks, devices, visibility, seeds."""
import os

import pytest

from checker.running.plugin import cuda_available
from checker.judging.scorecard import student_view, validate
from checker.spec import assignment_ids, load_spec, reference_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def ref_path(aid):
    return reference_file(load_spec(aid))  # assignments/<id>/reference.py (reference/<id>.py is a link: refused)


@pytest.mark.parametrize("aid", assignment_ids())
@pytest.mark.parametrize("mode", ["public", "hidden"])
def test_reference_scores_full_marks(request, aid, mode):
    grader = request.getfixturevalue("grader" if mode == "public" else "hidden_grader")
    card = grader.grade(ref_path(aid), aid)
    validate(card)
    for q in card["questions"]:
        failures = [f"{t['name']}: {t['message']}" for t in q["tests"] if t["outcome"] not in ("passed", "skipped")]
        if q["manual"]:
            assert q.get("pending") and q["score"] == 0
        else:
            assert q["score"] == q["max_score"], f"{aid} {q['id']} ({mode}):\n" + "\n".join(failures)
            assert q["tests"], f"{aid} {q['id']} has no tests"
    manual = sum(q["max_score"] for q in card["questions"] if q["manual"])
    assert card["score"] == card["max_score"] - manual


@pytest.mark.parametrize("aid", ["vit", "charlm"])
def test_cuda_items_are_collected_and_skipped_with_a_reason(grader, aid):
    card = grader.grade(ref_path(aid), aid)
    cuda = [t for q in card["questions"] for t in q["tests"] if t["device"] == "cuda"]
    assert cuda, "no CUDA variants were collected"
    if cuda_available():
        assert all(t["outcome"] == "passed" for t in cuda)
    else:
        assert all(t["outcome"] == "skipped" and "CUDA is not available" in t["message"] for t in cuda)
        assert all(t["max_points"] == 0 for t in cuda)
    lowp = [t for q in card["questions"] for t in q["tests"] if t["dtype"] in ("float16", "bfloat16")]
    assert all(t["device"] == "cuda" or t["outcome"] == "skipped" for t in lowp)


@pytest.mark.parametrize("aid", assignment_ids())
def test_public_mode_runs_no_hidden_test_but_counts_them(grader, aid):
    spec = load_spec(aid)
    card = grader.grade(ref_path(aid), aid)
    for q, qs in zip(card["questions"], spec["questions"]):
        assert all(t["visibility"] == "visible" for t in q["tests"])
        if qs["hidden_tests"]:
            assert q["hidden_tests"] > 0, f"{aid} {q['id']}: hidden tests not counted"


def test_hidden_mode_seed_is_kept_for_the_ta_and_not_shown_to_students(hidden_grader):
    card = hidden_grader.grade(ref_path("attention"), "attention")
    assert card["grader"]["seed"] == 20261122 and card["grader"]["mode"] == "hidden"
    assert "seed" not in repr(student_view(card))
    assert any(t["visibility"] == "hidden" for q in card["questions"] for t in q["tests"])
    assert not any(t["visibility"] == "hidden" for q in student_view(card)["questions"] for t in q["tests"])


def test_starters_load_and_score_zero_without_crashing(grader):
    for aid in assignment_ids():
        card = grader.grade(os.path.join(ROOT, "assignments", aid, "starter.ipynb"), aid)
        validate(card)
        assert card["status"] == "graded" and card["score"] == 0
        assert any("NotImplementedError" in t["message"] for q in card["questions"] for t in q["tests"])


def test_tolerances_can_be_overridden_per_question_and_per_test(tmp_path):
    import contextlib
    import io

    import pytest as _pytest
    from pytest_jsonreport.plugin import JSONReport

    from checker.running.plugin import HwcheckPlugin
    from checker.running.runner import PYTEST_ARGS

    tests = tmp_path / "test_tol.py"
    tests.write_text(
        "import pytest\n"
        "@pytest.mark.question('Q')\n"
        "def test_loose(close):\n    close([1.001], [1.0], dtype='float32')\n"
        "@pytest.mark.question('Q')\n"
        "def test_strict(close):\n    close([1.001], [1.0], dtype='float32')\n"
        "@pytest.mark.question('R')\n"
        "def test_question_wide(close):\n    close([1.0 + 2e-5], [1.0], dtype='float32')\n")
    spec = {"id": "tol", "reference": "math",
            "questions": [{"id": "Q", "title": "q", "points": 10, "names": [], "tolerances": {}},
                          {"id": "R", "title": "r", "points": 10, "names": [],
                           "tolerances": {"float32": {"rtol": 1e-4, "atol": 1e-5}}}],
            "test_tolerances": {"test_loose": {"float32": {"rtol": 1e-2, "atol": 0.0}}}}
    report = JSONReport()
    with contextlib.redirect_stdout(io.StringIO()):
        _pytest.main([str(tests), *PYTEST_ARGS, "--rootdir", str(tmp_path)],
                     plugins=[HwcheckPlugin(None, spec), report])
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in report.report["tests"]}
    assert outcomes == {"test_loose": "passed", "test_strict": "failed", "test_question_wide": "passed"}


def test_parametrized_values_given_before_pytest_looks_for_them_are_pytests_own(tmp_path):
    """The plugin hands a directly parametrized argument its value before pytest runs its fixture for it
    (checker.running.plugin._direct_params): the value is the one pytest would give, an indirect parameter
    still goes through its fixture, and a fixture that asks for a parameter gets the same value."""
    import contextlib
    import io

    import pytest as _pytest
    from pytest_jsonreport.plugin import JSONReport

    from checker.running import plugin as plugin_module
    from checker.running.runner import PYTEST_ARGS

    tests = tmp_path / "test_params.py"
    tests.write_text(
        "import pytest\n"
        "@pytest.fixture\n"
        "def doubled(request):\n    return request.param * 2\n"
        "@pytest.fixture\n"
        "def shape_of(n):\n    return ('shape', n)\n"
        "@pytest.mark.question('Q')\n"
        "@pytest.mark.parametrize('n', [0, 3, None], ids=['zero', 'three', 'none'])\n"
        "@pytest.mark.parametrize('doubled', [5], indirect=True)\n"
        "@pytest.mark.parametrize('dtype', ['float32'])\n"
        "def test_values(n, doubled, dtype, shape_of):\n"
        "    assert doubled == 10 and dtype == 'float32' and shape_of == ('shape', n)\n"
        "    assert n in (0, 3, None)\n")
    spec = {"id": "params", "reference": "math",
            "questions": [{"id": "Q", "title": "q", "points": 10, "names": [], "tolerances": {}}]}
    given = []
    real = plugin_module._direct_params

    def spy(item):
        names = real(item)
        given.append((item.name, names))
        return names

    report = JSONReport()
    with contextlib.redirect_stdout(io.StringIO()), _pytest.MonkeyPatch.context() as mp:
        mp.setattr(plugin_module, "_direct_params", spy)
        _pytest.main([str(tests), *PYTEST_ARGS, "--rootdir", str(tmp_path)],
                     plugins=[plugin_module.HwcheckPlugin(None, spec), report])
    outcomes = {t["nodeid"].split("::")[-1]: t["outcome"] for t in report.report["tests"]}
    assert outcomes == {f"test_values[float32-5-{i}]": "passed" for i in ("zero", "three", "none")}
    assert len(given) == 3 and all(sorted(names) == ["dtype", "n"] for _, names in given), given
