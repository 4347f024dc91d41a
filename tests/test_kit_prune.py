"""The student kit ships no helper that only a hidden test used, and the kit check names one that a public test
uses (h56: a course's `_case(rng, T)` returning `((Q, K, V), answer)`, used by a hidden test only, stayed in the
kit beside the tests it served, and `hwcheck validate` said "kit: ok").

* checker.platforms.kit_files.unreferenced_pruned / local_imports: what is kept, through star imports,
  decorators, fixtures, parametrize and string uses (fast);
* a course's copy of attention with a Q4 whose hidden test uses `_case`: the kit has no `_case`, and the kit's
  public checks of a correct submission all pass (slow: the kit is built);
* the same with a public test using `_case`: `hwcheck validate` names it with its file and line (slow: the probe).
"""

import ast
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from checker.spec import assignment_dir, example_path, load_spec, reference_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HWCHECK = [sys.executable, "-m", "checker.cli"]

COMMON = textwrap.dedent('''\
    import pytest


    def used_by_a_public_test(x):
        return _inner(x)


    def _inner(x):
        return x


    def only_hidden(x):
        return x * 2


    def fixture_helper():
        return 1


    class Unused:
        pass


    class Decorator:
        pass


    @pytest.fixture
    def some_fixture():
        return fixture_helper()


    def by_name():
        return 0


    def by_parameter():
        return 0


    def imported_by_name():
        return 0


    def in_parametrize():
        return 0


    def in_pytestmark():
        return 0


    def pytest_configure(config):
        pass


    unused_lambda = lambda: 0  # noqa: E731
    used_lambda = lambda: 0  # noqa: E731
    CONSTANT = only_hidden  # a plain assignment stays, and keeps what it names
    __all__ = [n for n in dir() if not n.startswith("__")]
''')

TESTS = textwrap.dedent('''\
    from ._common import *  # noqa: F401,F403
    from ._common import imported_by_name


    def _hidden_helper():
        return 3


    def _decorate(f):
        return f


    pytestmark = [pytest.mark.usefixtures("some_fixture"), in_pytestmark()]


    @pytest.mark.parametrize("x", [in_parametrize()])
    @_decorate
    def test_public(x, by_parameter):
        assert used_by_a_public_test(x) == x and getattr(sys.modules[__name__], "by_name") and used_lambda


    class TestGrouped:
        def test_it(self):
            pass
''')


def _names(source):
    return {n.name if hasattr(n, "name") else n.targets[0].id for n in ast.parse(source).body
            if isinstance(n, (ast.FunctionDef, ast.ClassDef)) or (isinstance(n, ast.Assign)
                                                                  and isinstance(n.value, ast.Lambda))}


def test_what_nothing_shipped_references_is_cut_out_of_the_test_modules():
    from checker.platforms.kit_files import local_imports, unreferenced_pruned
    plots = "def handout_plot(scores):\n    return scores\n\n\ndef _unused_in_a_module_no_test_imports():\n    pass\n"
    sources = {"_common.py": COMMON, "test_x.py": TESTS, "plots.py": plots, "__init__.py": ""}
    pruned = local_imports(sources, ["test_x.py", "conftest.py"], ["assignments.hw"])
    assert pruned == {"test_x.py", "_common.py"}  # conftest.py absent; plots.py imported by no test
    out = unreferenced_pruned(sources, pruned)
    assert _names(out["_common.py"]) == {"used_by_a_public_test", "_inner", "only_hidden", "fixture_helper",
                                         "some_fixture", "by_name", "by_parameter", "imported_by_name",
                                         "in_parametrize", "in_pytestmark", "pytest_configure", "used_lambda"}
    assert _names(out["test_x.py"]) == {"_decorate", "test_public", "TestGrouped"}
    assert out["plots.py"] == plots and out["__init__.py"] == ""
    for path in out:
        ast.parse(out[path])
    assert "\n\n\n\n" not in out["_common.py"]  # a cut takes its blank lines with it


def test_a_helper_only_a_hidden_test_used_goes_with_it_and_what_it_alone_used_too():
    from checker.platforms.kit_files import local_imports, unreferenced_pruned
    tests = textwrap.dedent('''\
        from . import _sub as helpers


        def _case(rng, T):
            return helpers.make(rng, T), 1


        def test_public():
            assert helpers.public()
    ''')
    sub = "def make(rng, T):\n    return T\n\n\ndef public():\n    return 1\n"
    sources = {"test_q.py": tests, "_sub.py": sub}
    pruned = local_imports(sources, ["test_q.py"])
    assert pruned == {"test_q.py", "_sub.py"}
    out = unreferenced_pruned(sources, pruned)
    assert _names(out["test_q.py"]) == {"test_public"} and _names(out["_sub.py"]) == {"public"}
    # a module that does not parse: nothing is cut (the kit check says so)
    assert unreferenced_pruned({**sources, "_sub.py": "def (:"}, pruned)["test_q.py"] == tests


# --------------------------------------------------------------------------- a course's copy of attention, with Q4

MASKED = '''

def masked_attention(Q, K, V):
    """Causal attention: token i attends to tokens 0..i."""
    s = Q @ K.T / np.sqrt(K.shape[-1])
    s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ V
'''

Q4_TESTS = '''"""Grading tests of question Q4: causal (masked) attention."""

from ._common import *  # noqa: F401,F403


def _qkv(rng, T, dk, dv):
    return [rng.standard_normal(s) for s in ((T, dk), (T, dk), (T, dv))]


def _case(rng, T, dk=6, dv=2):
    """Inputs and their answer (independent of ref, to double-check it)."""
    Q, K, V = _qkv(rng, T, dk, dv)
    s = Q @ K.T / np.sqrt(K.shape[-1])
    s = np.where(np.tril(np.ones(s.shape, dtype=bool)), s, -np.inf)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (Q, K, V), (e / e.sum(axis=-1, keepdims=True)) @ V


@pytest.mark.question("Q4")
def test_masked_attention_handout(sub, ref, close, rng):
    Q, K, V = _qkv(rng, 5, 4, 3)
    close(sub.call("masked_attention", Q, K, V), ref.masked_attention(Q, K, V), what="masked_attention, T=5")


@pytest.mark.question("Q4")
@pytest.mark.parametrize("T", [1, 3, 8])
def test_masked_attention_random(sub, close, rng, T):
    (Q, K, V), want = _case(rng, T)
    close(sub.call("masked_attention", Q, K, V), want, what=f"masked_attention, T={T}")
'''


def _course_copy(root, aid, hidden):
    """attention with a Q4 (masked_attention) whose test_masked_attention_random uses `_case`: hidden or public."""
    folder = root / aid
    shutil.copytree(assignment_dir("attention"), folder,
                    ignore=shutil.ignore_patterns("__pycache__", "recorded.json", "examples", "reference.py",
                                                  "starter.ipynb"))
    spec = (folder / "spec.toml").read_text().replace('id = "attention"', f'id = "{aid}"')
    spec += textwrap.dedent(f'''
        [[questions]]
        id = "Q4"
        title = "Causal (masked) attention"
        points = 10
        names = ["masked_attention"]
        hidden_tests = {'["test_masked_attention_random"]' if hidden else "[]"}
        [questions.signatures]
        masked_attention = "masked_attention(Q, K, V) -> (T, d_v)"
    ''')
    (folder / "spec.toml").write_text(spec)
    (folder / "README.md").write_text((folder / "README.md").read_text() + "\n## Q4\n\nWrite `masked_attention`.\n")
    with open(reference_file(load_spec("attention")), encoding="utf-8") as f:
        (folder / "reference.py").write_text(f.read() + MASKED)
    (folder / "test_attention_q4.py").write_text(Q4_TESTS)
    return folder


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("HWCHECK_ASSIGNMENTS", "PYTHONPATH")}
    return {**env, **extra}


@pytest.mark.slow
def test_the_kit_leaves_out_a_helper_only_a_hidden_test_used_and_its_public_checks_still_pass(tmp_path):
    course = tmp_path / "course"
    _course_copy(course, "attnhid", hidden=True)
    kit = tmp_path / "kit"
    r = subprocess.run(HWCHECK + ["kit", "-o", str(kit)], capture_output=True, text=True, cwd=REPO, timeout=1500,
                       env=_env(HWCHECK_ASSIGNMENTS=str(course), PYTHONPATH=REPO))
    assert r.returncode == 0, r.stdout + r.stderr
    shipped = (kit / "assignments" / "attnhid" / "test_attention_q4.py").read_text()
    defined = {n.name for n in ast.parse(shipped).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    assert defined == {"_qkv", "test_masked_attention_handout"}, shipped
    assert "_case" not in shipped, shipped
    # the kit's public checks of a correct submission, from the kit alone (the full package hidden), all pass
    from test_kit import RUN_FROM_KIT
    with open(example_path("attention", "correct.py"), encoding="utf-8") as f:
        (tmp_path / "correct.py").write_text(f.read() + "\nimport numpy as np\n" + MASKED)
    card = tmp_path / "card.json"
    p = subprocess.run([sys.executable, "-c", RUN_FROM_KIT, str(kit), "check", "correct.py", "-a", "attnhid",
                        "--json", str(card)], capture_output=True, text=True, timeout=600, cwd=tmp_path, env=_env())
    assert p.returncode == 0 and card.exists(), p.stdout + p.stderr
    scorecard = json.loads(card.read_text())
    tests = {t["name"]: t["outcome"] for q in scorecard["questions"] for t in q["tests"]}
    assert tests and set(tests.values()) == {"passed"}, tests
    assert [t for t in tests if "masked_attention" in t] == ["test_masked_attention_handout"], tests
    q4 = next(q for q in scorecard["questions"] if q["id"] == "Q4")
    assert q4["score"] == q4["max_score"] == 10 and q4["hidden_tests"] == 3, q4


@pytest.mark.slow
def test_validate_names_a_helper_of_a_public_test_that_computes_the_answer_with_its_file_and_line(tmp_path):
    folder = _course_copy(tmp_path / "course", "attnpub", hidden=False)
    line = Q4_TESTS.splitlines().index("def _case(rng, T, dk=6, dv=2):") + 1
    r = subprocess.run(HWCHECK + ["validate", str(folder), "--skip", "reference", "--skip", "examples"],
                       capture_output=True, text=True, cwd=REPO, timeout=1500,
                       env=_env(HWCHECK_ASSIGNMENTS=str(folder), PYTHONPATH=REPO))
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "Traceback" not in out, out
    assert ("the kit ships code that computes an answer: assignments.attnpub.test_attention_q4._case "
            f"(assignments/attnpub/test_attention_q4.py, line {line}) returns inputs of masked_attention with the "
            "reference's answer to them") in out, out
    assert "_qkv" not in out, out  # it makes inputs only
