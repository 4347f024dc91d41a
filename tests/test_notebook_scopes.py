"""Which statements of a kernel's history are the student's check session: names read as Python scopes them.

`res = checker.check('Q1')` binds the notebook's global `res`; a function whose own parameter, local,
comprehension variable or nested function is also named `res` (common in ML code) does not read it, and is
the homework, graded as edited. A function that does read the global result is the check session.
"""
import os
import re

import pytest

from checker.platforms.notebook import history_notebook, without_checker

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSION = "import checker\nres = checker.check('Q1')\nres"


def _kept(*cells):
    """The sources history_notebook keeps of these cells, run in this order after SESSION."""
    nb = history_notebook([(1, "import numpy as np"), (2, SESSION)] + [(n, c) for n, c in enumerate(cells, 3)])
    return [c["source"] for c in nb["cells"]][1:]


@pytest.mark.parametrize("homework", [
    # a local assignment (the student-tester's softmax)
    "def softmax(x, axis=-1):\n    res = np.exp(x)\n    return res / res.sum(axis=axis, keepdims=True)",
    "def f(res):\n    return res + 1",  # a parameter
    "def f(x, *res, **out):\n    return res, out",
    "def f(xs):\n    return [res * 2 for res in xs]",  # a comprehension's variable
    "def f(xs):\n    return {k: res for k, res in xs}",
    "def f(xs):\n    for res in xs:\n        pass\n    return res",  # a for target
    "def f(p):\n    with open(p) as res:\n        return res.read()",  # with-as
    "def f():\n    try:\n        return 1\n    except ValueError as res:\n        return str(res)",  # except-as
    # a nested function reading its enclosing function's res
    "def outer():\n    res = 1\n    def inner():\n        return res\n    return inner()",
    "def outer():\n    def res():\n        return 2\n    return res()",  # a nested def of that name
    "g = lambda res: res * 2",
    "squares = [res ** 2 for res in range(3)]",  # a top-level comprehension's own variable
    "class Model:\n    res = 3\n    twice = res * 2",  # a class body's own name
    "class Model:\n    def forward(self, res):\n        return res",
])
def test_a_function_s_own_name_is_not_the_check_result(homework):
    assert _kept(homework) == [homework]


@pytest.mark.parametrize("session", [
    "def show():\n    print(res.total)",
    "def show(x):\n    return [res.total for _ in x]",
    "def show():\n    def inner():\n        return res\n    return inner()",
    "def show():\n    global res\n    return res.score",
    "class Report:\n    def text(self):\n        return res.text",
    "class Report:\n    total = res.total",
    "print([r for r in res.questions])",  # a comprehension's iterable is read in the cell
    "res",
])
def test_a_def_that_reads_the_global_check_result_is_the_check_session(session):
    assert _kept(session) == []


def test_reads_of_the_result_after_a_homework_def_with_a_local_of_its_name_are_still_cut():
    """The function's local `res` rebinds no global: `print(res.score)` after it is still the check session
    (else the grader would run it and charge a NameError)."""
    softmax = "def softmax(x):\n    res = np.exp(x - x.max())\n    return res / res.sum()"
    assert _kept(softmax, "print(res.score)") == [softmax]
    # a function that binds the global anew, or a top-level binding, makes later reads the homework's
    rebind = "def f():\n    global res\n    res = 5"
    assert _kept(rebind, "print(res)") == [rebind, "print(res)"]
    assert _kept("res = 5", "print(res)") == ["res = 5", "print(res)"]


def test_a_cut_def_s_locals_do_not_become_the_check_session_s_names():
    bound = set()
    without_checker(SESSION, bound)
    assert without_checker("def show():\n    x = res.total\n    print(x)", bound).strip() == ""
    assert "x" not in bound and "show" in bound
    assert without_checker("x = 2\ny = x + 1", bound) == "x = 2\ny = x + 1"


def test_a_function_s_own_checker_name_is_not_the_checker():
    src = "def run(checker, x):\n    return checker(x)"
    assert without_checker(src, set()) == src
    assert without_checker("def f():\n    return checker.check()", set()).strip() == ""


def test_the_student_s_own_pass_is_kept():
    """Lines left holding only `pass` were blanked in every cell, the student's own too: `class E(Exception):`
    then `    pass` lost its body and the cell failed to compile when graded."""
    src = "class E(Exception):\n    pass\n\n\ndef f(xs):\n    for x in xs:\n        pass"
    assert without_checker(src, set()) == src
    assert without_checker("checker.check(); checker.check()\nx = 1", set()) == "\nx = 1"  # hwcheck's lines go


@pytest.mark.slow
def test_an_edit_after_a_stored_check_result_is_graded(tmp_path):
    """The student-tester's proof (h62): the homework, `res = checker.check('Q1')`, then softmax edited into
    one that overflows, with a local named `res`, then a check: the edited def was left out as the check
    session's ("1 cells") and Q1 kept 30/30. Now it is graded and Q1 loses points."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    with open(os.path.join(ROOT, "submissions", "attention", "correct.py"), encoding="utf-8") as f:
        homework = f.read()
    overflow = ("def get_attention_weights(scores):\n    scores = np.array(scores, dtype=float)\n"
                "    res = np.exp(scores)\n    return res / np.sum(res, axis=-1, keepdims=True)\n")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in
                [homework, SESSION, overflow, "print(res.score)", "checker.check('Q1')"]]
    env_before = os.environ.pop("JPY_SESSION_NAME", None)  # no notebook file: the kernel's history is checked
    try:
        nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                                resources={"metadata": {"path": str(tmp_path)}}).execute()
    finally:
        if env_before is not None:
            os.environ["JPY_SESSION_NAME"] = env_before

    def shown(cell):
        texts = [o.data.get("text/plain", "") for o in cell.outputs if o.output_type == "execute_result"]
        assert texts, [dict(o) for o in cell.outputs]
        return texts[0]

    def q1(text):
        m = re.search(r"^Q1\s+(\S+)/(\S+)", text, re.M)
        assert m, text
        return float(m.group(1)), float(m.group(2))

    first, second = shown(nb.cells[1]), shown(nb.cells[-1])
    assert q1(first)[0] == q1(first)[1], first
    assert q1(second)[0] < q1(second)[1], second
    assert "overflow" in second and "NameError" not in second, second
    assert "(2 cells, " in second, second
    assert "(1 cell, " in first, first  # one cell, not "1 cells"
