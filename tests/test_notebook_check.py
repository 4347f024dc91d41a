"""`import checker; checker.check()` and `%hwcheck` in a real kernel, from an in-memory notebook with no path.

Each test runs a notebook through nbclient + ipykernel (the kernel is this venv's Python), so the check
sees exactly what a student's kernel would: IPython's history of executed cells, no notebook file.
The verdicts are compared with `hwcheck check`'s (the runner's) on the same code saved as a file.
"""
import json
import os
import re
import subprocess
import sys
import time

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
pytestmark = pytest.mark.slow


def _cells_of(path):
    """The submission's code cut into cells at its '# ---- Qn ----' banners, as a student's notebook is."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    return [c for c in re.split(r"\n(?=# -+ Q)", text) if c.strip()]


def _run(cells, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    # no path, no file: the kernel knows nothing of a notebook on disk (as on Colab)
    env_before = os.environ.pop("JPY_SESSION_NAME", None)
    try:
        client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                                         resources={"metadata": {"path": str(tmp_path)}})
        client.execute()
    finally:
        if env_before is not None:
            os.environ["JPY_SESSION_NAME"] = env_before
    return nb


def _output(cell):
    """(text/plain, text/html) of a cell's displayed result; fails with the cell's errors otherwise."""
    for out in cell.outputs:
        if out.output_type in ("execute_result", "display_data"):
            return out.data.get("text/plain", ""), out.data.get("text/html", "")
    raise AssertionError(f"no result shown by {cell.source!r}: {[dict(o) for o in cell.outputs]}")


def _points_in_text(text):
    return {m.group(1): m.group(2) for m in re.finditer(r"^(Q[\w-]+)\s+(\S+/\S+|pending)", text, re.M)}


def _expected(path, tmp_path):
    """The view `hwcheck check FILE --json` writes (a process of its own, as the notebook's check runs)."""
    out = tmp_path / "expected.json"
    p = subprocess.run([sys.executable, "-m", "checker.cli", "check", path, "--json", str(out)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode in (0, 1) and out.exists(), p.stdout + p.stderr
    view = json.loads(out.read_text())
    from checker.render.scorecard_text import format_points
    return view, {q["id"]: (f"{format_points(q['score'])}/{format_points(q['max_score'])}" if not q["manual"]
                            else "pending") for q in view["questions"]}


@pytest.mark.parametrize("sub", ["correct.py", "no_scaling.py"])
def test_check_in_a_kernel_gives_hwcheck_checks_verdicts(tmp_path, sub):
    path = os.path.join(ROOT, "submissions", "attention", sub)
    view, points = _expected(path, tmp_path)
    nb = _run(_cells_of(path) + ["import checker\nr = checker.check()\nr", "checker.check('Q1')",
                                 "r.score, r.max_score"], tmp_path)
    text, page = _output(nb.cells[-3])
    assert "the code run in this kernel" in text
    assert _points_in_text(text) == points, text
    from checker.render.scorecard_text import format_points
    assert f"Total: {format_points(view['score'])}/{format_points(view['max_score'])}" in text
    for qid, pts in points.items():  # the HTML has a row per question with the same points
        row = re.search(r"<tr><td[^>]*>" + re.escape(qid) + r"</td>.*?</tr>", page)
        assert row and (pts.split("/")[0] in row.group(0) or pts == "pending"), (qid, page[:2000])
    assert "<script" not in page and "href=" not in page and "<link" not in page
    failing = [t for q in view["questions"] for t in q["tests"] if t["outcome"] in ("failed", "error")]
    for t in failing:  # each failure is folded open with its message (the hint included), or named as a
        # variant that failed the same way under the first one (grouped as the text groups them)
        if f"<code>{t['name']}</code>" not in page:
            variant = t["name"][len(t["name"].split("[")[0]):]
            assert variant and variant in page and "also failed the same way" in page, t["name"]
            continue
        first = t["message"].splitlines()[0]
        assert first.replace("'", "&#x27;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;") \
            in page or first in text
    assert ('<details open style="margin:2px 0"><summary' in page) == bool(failing)
    one, one_page = _output(nb.cells[-2])
    assert _points_in_text(one) == {"Q1": points["Q1"]}, one
    assert "Q2" not in _points_in_text(one) and ">Q1<" in one_page
    score = _output(nb.cells[-1])[0]
    assert score == repr((view["score"], view["max_score"])).replace(".0", "") or \
        score == repr((view["score"], view["max_score"]))


def test_hwcheck_magic_checks_one_question(tmp_path):
    path = os.path.join(ROOT, "submissions", "attention", "no_scaling.py")
    _view, points = _expected(path, tmp_path)
    nb = _run(_cells_of(path) + ["%load_ext checker", "%hwcheck Q1"], tmp_path)
    text, page = _output(nb.cells[-1])
    assert _points_in_text(text) == {"Q1": points["Q1"]}, text
    assert "FAILED" in page


def test_check_names_the_cell_as_the_student_sees_it(tmp_path):
    """A failing cell is named by its In [n], not by a count that includes markdown or the check cells."""
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    cells = _cells_of(path)
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# My homework"), nbformat.v4.new_code_cell("import checker")] + \
        [nbformat.v4.new_code_cell(c) for c in cells[:2]] + \
        [nbformat.v4.new_code_cell("open('data/cats.txt').read()")] + \
        [nbformat.v4.new_code_cell(c) for c in cells[2:]] + \
        [nbformat.v4.new_code_cell("checker.check()")]
    client = nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True)
    client.execute()
    text = _output(nb.cells[-1])[0]
    # In [4]: the markdown cell is no cell, and the `import checker` cell (In [1]) is left out of what is
    # checked but not out of the count
    assert "notebook.ipynb, In [4], line 1 raised FileNotFoundError" in text, text


def test_check_outside_a_kernel_says_where_it_works(monkeypatch):
    import checker
    from checker.errors import HwcheckError
    # no IPython shell here, whatever another test of this process made (IPython keeps one per process)
    monkeypatch.setattr("IPython.get_ipython", lambda: None, raising=False)
    with pytest.raises(HwcheckError, match="hwcheck check"):
        checker.check()


def test_history_notebook_leaves_out_hwchecks_own_lines():
    from checker.platforms.notebook import history_notebook
    nb = history_notebook([(1, "import numpy as np\nx = 1"), (2, "import checker\nr = checker.check()"),
                           (3, "r"), (4, "%load_ext checker"), (5, "%hwcheck Q1"), (6, "%matplotlib inline\ny = 2")])
    assert [(c["execution_count"], c["source"]) for c in nb["cells"]] == \
        [(1, "import numpy as np\nx = 1"), (6, "%matplotlib inline\ny = 2")]
    json.dumps(nb)



def test_hwchecks_own_names_are_cut_out_of_the_students_statements_not_the_statements_with_them():
    """A Jupyter probe (h45): `import numpy as np, checker` was left out whole, `np` taken for the check
    session's, and every statement reading np after it dropped (27.4 of 100 in check(), 90 from the saved
    file); `x = 1; checker.check(); z = 2` lost x and z."""
    from checker.platforms.notebook import history_notebook
    nb = history_notebook([(1, "import numpy as np, checker"), (2, "def f(x):\n    return np.exp(x)"),
                           (3, "x = 1; checker.check(); z = 2"), (4, "r = checker.check(); w = np.ones(2)"),
                           (5, "print(r.score)"), (6, "import checker as c, json\nc.check()"),
                           (7, "from checker import check\ncheck('Q1')"), (8, "checker.check(); checker.check()")])
    assert [(c["execution_count"], c["source"]) for c in nb["cells"]] == \
        [(1, "import numpy as np"), (2, "def f(x):\n    return np.exp(x)"), (3, "x = 1; pass; z = 2"),
         (4, "pass; w = np.ones(2)"), (6, "import json\n")]


def test_a_check_imported_with_the_homeworks_own_imports_grades_the_homework(tmp_path):
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    _view, points = _expected(path, tmp_path)
    cells = _cells_of(path)
    first = next(i for i, c in enumerate(cells) if "import numpy as np" in c)
    cells[first] = cells[first].replace("import numpy as np", "import numpy as np, checker", 1)
    nb = _run(cells + ["checker.check()"], tmp_path)
    text = _output(nb.cells[-1])[0]
    assert _points_in_text(text) == points and "not defined" not in text, text


class _Kernel:
    """Just what saved_notebook_path reads of an IPython shell."""

    def __init__(self, ns):
        self.user_ns = ns


def test_a_saved_notebook_is_checked_only_when_it_holds_what_was_run(tmp_path, monkeypatch):
    from checker.platforms.notebook import _saved_matches, saved_notebook_path
    path = tmp_path / "hw.ipynb"
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("## Q3-text\n**Your answer:** heads look at different things"),
                nbformat.v4.new_code_cell("import numpy as np", execution_count=1),
                nbformat.v4.new_code_cell("x = np.ones(3)", execution_count=2),
                nbformat.v4.new_code_cell("y = 2", execution_count=None)]
    path.write_text(nbformat.writes(nb))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    assert saved_notebook_path(_Kernel({})) == str(path)
    assert saved_notebook_path(_Kernel({"__vsc_ipynb_file__": str(tmp_path / "gone.ipynb")})) == str(path)
    ran = [(1, "import numpy as np"), (2, "x = np.ones(3)"), (3, "import checker\nchecker.check()")]
    assert _saved_matches(str(path), ran)  # the check cell itself is not expected in the file
    assert not _saved_matches(str(path), [(1, "import numpy as np"), (2, "x = np.zeros(3)")])  # edited, unsaved
    assert not _saved_matches(str(path), ran[:2] + [(3, "z = 5")])  # run after the last save
    # the last "Run All" saved check cells below this one with counts this kernel has not reached yet: they
    # are hwcheck's own lines, not graded, and do not make the file differ; graded code saved so does
    nb.cells += [nbformat.v4.new_code_cell("%load_ext checker", execution_count=4),
                 nbformat.v4.new_code_cell("r = checker.check('Q1')", execution_count=5),
                 nbformat.v4.new_code_cell("print(r.score)", execution_count=6)]
    path.write_text(nbformat.writes(nb))
    assert _saved_matches(str(path), ran)
    assert not _saved_matches(str(path), [(1, "import numpy as np"), (2, "x = np.zeros(3)"), ran[2]])
    nb.cells.append(nbformat.v4.new_code_cell("def f():\n    return 1", execution_count=7))
    path.write_text(nbformat.writes(nb))
    assert not _saved_matches(str(path), ran)  # graded code the kernel has not run
    del nb.cells[-1]
    path.write_text(nbformat.writes(nb))
    monkeypatch.chdir(tmp_path)  # a server root elsewhere: the path is relative to it, the kernel runs here
    monkeypatch.setenv("JPY_SESSION_NAME", "course/week1/hw.ipynb")
    assert saved_notebook_path(_Kernel({})) == str(path)
    monkeypatch.delenv("JPY_SESSION_NAME")
    assert saved_notebook_path(_Kernel({})) is None  # Colab: no file; the kernel's history is checked


def test_check_reads_the_saved_notebook_when_jupyter_names_it_and_it_holds_what_ran(tmp_path, monkeypatch):
    """The saved file is checked (its markdown answer found) when every cell run is saved as run."""
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    code = _cells_of(path)
    saved = nbformat.v4.new_notebook()
    saved.cells = [nbformat.v4.new_code_cell(c, execution_count=i) for i, c in enumerate(code, 1)] + \
        [nbformat.v4.new_markdown_cell("## Q3-text\n**Your answer:** each head can attend to a different "
                                       "relation between tokens, in its own smaller subspace.")]
    nb_path = tmp_path / "my_attention.ipynb"
    nb_path.write_text(nbformat.writes(saved))
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb_path))  # what Jupyter Server tells its kernels
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in code] + [nbformat.v4.new_code_cell("import checker\n"
                                                                                        "checker.check()")]
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True).execute()
    text = _output(nb.cells[-1])[0]
    assert f"checked: the saved notebook {nb_path}" in text, text
    assert "Your answer was found" in text, text
    # one cell changed in the kernel and not saved: the kernel's code is checked, and the student told
    nb.cells[0].source += "\nextra = 1"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True).execute()
    text = _output(nb.cells[-1])[0]
    assert "the code run in this kernel" in text and "holds other code than what ran here" in text, text
    assert "grading runs the saved file top to bottom" in text and "hwcheck check" in text, text


def test_rerun_of_a_saved_run_all_with_check_cells_below_is_the_saved_notebook(tmp_path, monkeypatch):
    """Restart & Run All, save, then run it again from the top: when the check cell runs, the cells below it
    (`%load_ext checker`, `%hwcheck Q1`) still hold the counts of the last run, which this kernel has not
    reached. They are not graded code: the saved file holds what ran and is checked, with no word that it
    differs. A graded cell edited and run without a save is still told."""
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    code = _cells_of(path) + ["import checker\nchecker.check()", "%load_ext checker", "%hwcheck Q1"]
    saved = nbformat.v4.new_notebook()
    saved.cells = [nbformat.v4.new_code_cell(c, execution_count=i) for i, c in enumerate(code, 1)] + \
        [nbformat.v4.new_markdown_cell("## Q3-text\n**Your answer:** each head can attend to a different "
                                       "relation between tokens, in its own smaller subspace.")]
    nb_path = tmp_path / "rerun.ipynb"
    nb_path.write_text(nbformat.writes(saved))
    monkeypatch.setenv("JPY_SESSION_NAME", str(nb_path))
    nb = nbformat.reads(nb_path.read_text(), as_version=4)
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True).execute()
    check_cell = len(code) - 3
    text = _output(nb.cells[check_cell])[0]
    assert f"checked: the saved notebook {nb_path}" in text, text
    assert "differs" not in text and "Your answer was found" in text, text
    assert f"checked: the saved notebook {nb_path}" in _output(nb.cells[check_cell + 2])[0]
    # a graded cell edited and run, not saved: the kernel's code is checked and the student told
    nb = nbformat.reads(nb_path.read_text(), as_version=4)
    nb.cells[0].source += "\nextra = 1"
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True).execute()
    text = _output(nb.cells[check_cell])[0]
    assert "the code run in this kernel" in text and "holds other code than what ran here" in text, text
    assert "grading runs the saved file top to bottom" in text and "hwcheck check" in text, text


def test_a_module_next_to_the_notebook_is_named_with_the_folder_check(tmp_path):
    """`from attn_helpers import softmax` with attn_helpers.py next to the notebook: check() grades the notebook
    alone (as `hwcheck check NOTEBOOK`), so the import fails there; the student is told the file is next to the
    notebook and how to check the folder, not to hand in a file they have."""
    (tmp_path / "attn_helpers.py").write_text("def softmax(z):\n    return z\n")
    cells = _cells_of(os.path.join(ROOT, "submissions", "attention", "correct.py"))
    cells[0] += "\nfrom attn_helpers import softmax"
    nb = _run(cells + ["import checker\nchecker.check()"], tmp_path)
    text, page = _output(nb.cells[-1])
    assert "ModuleNotFoundError: No module named 'attn_helpers'" in text, text
    assert f"`attn_helpers.py` is next to your notebook, in {tmp_path}" in text, text
    assert f"hwcheck check {tmp_path}" in text and "hand it in with the rest" not in text, text
    assert "attn_helpers.py` is next to your notebook" in page
    assert "Q1  30/30" in text, text  # the failed import costs only itself


def test_the_page_shows_student_text_and_never_runs_it():
    from checker.platforms.notebook_html import scorecard_html
    evil = "<script>alert(1)</script><a href='x'>\x1b[31m"
    view = {"assignment": "attention", "submission": {"id": evil}, "status": "graded", "score": 0, "max_score": 30,
            "load": {"ok": False, "messages": [f"notebook.ipynb, In [2], line 1 raised ValueError: {evil}"]},
            "questions": [{"id": "Q1", "title": evil, "score": 0, "max_score": 30, "manual": False, "hidden_tests": 3,
                           "tests": [{"name": f"test_x[{evil}]", "outcome": "failed", "message": evil,
                                      "where": {"file": evil, "cell": 2, "label": "In [2]", "line": 1}}]}]}
    page = scorecard_html(view, source=evil)
    assert "<script" not in page and "<a " not in page  # shown as text, never markup
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\x1b" not in page and "\\x1b" in page
    assert "In [2]" in page and "<details open" in page


def test_the_students_check_session_is_not_the_homework(tmp_path):
    """`r = checker.check('Q2')` and cells that read `r` are the student's check session: the next check leaves
    them out (they were charged as 'NameError: name r is not defined'); an unknown question is one line."""
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    _view, points = _expected(path, tmp_path)
    nb = _run(_cells_of(path) + ["import checker\nr = checker.check('Q2')", "print(r.score)\nsummary = r.text\nr",
                                 "from checker import check as c\nc('Q1')", "checker.check()", "checker.check('Q9')"],
              tmp_path)
    text = _output(nb.cells[-2])[0]
    assert _points_in_text(text) == points, text
    assert "NameError" not in text and "some parts failed" not in text, text
    problem = nb.cells[-1]
    assert not [o for o in problem.outputs if o.output_type == "error"], "a traceback for an unknown question"
    one = _output(problem)[0]
    assert one.startswith("hwcheck: ") and "'Q9'" in one and "Q1" in one and "Q3" in one and "\n" not in one, one


def _with_answer(path):
    """The file's code cells without its `# Q3-text` comment answer, and the answer as a markdown cell."""
    code = [re.sub(r"^# Q3-text\n(#.*\n?)*", "", c, flags=re.M) for c in _cells_of(path)]
    assert not any("Q3-text" in c for c in code)
    answer = ("## Q3-text\n**Your answer:** several heads attend to different relations between the tokens at "
              "once, each in a smaller subspace, and their outputs are combined by W_O.")
    return code, answer


def test_in_memory_notebook_says_the_written_answer_could_not_be_read(tmp_path):
    """No saved file and no front end to ask (a notebook executed in memory): the check must not tell the
    student their answer is missing, but that it could not read it from this kernel."""
    code, answer = _with_answer(os.path.join(ROOT, "submissions", "attention", "correct.py"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in code] + [nbformat.v4.new_markdown_cell(answer),
                                                                nbformat.v4.new_code_cell("import checker\n"
                                                                                          "checker.check()")]
    os.environ.pop("JPY_SESSION_NAME", None)
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    text, page = _output(nb.cells[-1])
    assert "could not be read from this kernel" in text and "No answer to Q3-text was found" not in text, text
    assert "could not be read from this kernel" in page


def test_colab_gives_the_written_answer_from_the_open_notebook(tmp_path):
    """Colab has no saved file, but answers `get_ipynb` with the notebook open in the browser. Colab itself
    cannot run here: the kernel gets a stand-in `google.colab._message` that answers as Colab's does
    ({"ipynb": the notebook}), and the check reads the written answer from it."""
    code, answer = _with_answer(os.path.join(ROOT, "submissions", "attention", "correct.py"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in code] + [nbformat.v4.new_markdown_cell(answer)]
    open_in_browser = json.loads(nbformat.writes(nb))
    stand_in = ("import sys, types, json\n"
                "colab = types.ModuleType('google.colab'); message = types.ModuleType('google.colab._message')\n"
                f"NB = json.loads({json.dumps(json.dumps(open_in_browser))})\n"
                "message.blocking_request = lambda kind, request='', timeout_sec=5: {'ipynb': NB} "
                "if kind == 'get_ipynb' else None\n"
                "colab._message = message\n"
                "sys.modules.update({'google': types.ModuleType('google'), 'google.colab': colab, "
                "'google.colab._message': message})")
    nb.cells = [nbformat.v4.new_code_cell(stand_in)] + nb.cells + [nbformat.v4.new_code_cell("import checker\n"
                                                                                              "checker.check()")]
    os.environ.pop("JPY_SESSION_NAME", None)
    nbclient.NotebookClient(nb, kernel_name="python3", timeout=600, allow_errors=True,
                            resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = _output(nb.cells[-1])[0]
    assert "Your answer was found (2" in text and "text cells of the notebook open in Colab" in text, text


def test_a_recheck_uses_the_warm_grading_process(tmp_path):
    """The kernel's grading process (and its zygote, with torch imported) outlives a check: the second check
    in the same kernel is answered by the same process, so it costs the grading alone (bench/bench.py times it)."""
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    nb = _run(_cells_of(path) + ["import checker, checker.platforms.notebook as nbk\nfirst = checker.check()\n"
                                 "pid = nbk._Server.proc.pid",
                                 "again = checker.check()\n(again.score == first.score, nbk._Server.proc.pid == pid)"],
              tmp_path)
    assert _output(nb.cells[-1])[0] == "(True, True)"


@pytest.mark.parametrize("end", ["os.kill(os.getpid(), signal.SIGKILL)", "os.killpg(os.getpgid(0), signal.SIGTERM)"],
                         ids=["kernel-sigkill", "group-sigterm"])
def test_a_kernel_that_ends_abruptly_leaves_no_folder_of_its_grading_process(tmp_path, monkeypatch, end):
    """A kernel killed by SIGKILL (a restart that does not wait, an out-of-memory kill) never runs its exit
    hooks: its grading process, told by the end of its input, removes its own folder (and closes its zygote,
    which removes its own). Jupyter ends a kernel that does not stop within a few seconds of being asked with
    SIGTERM to its whole process group, the grading process included: that process removes its folder first,
    then closes its graders (a SIGKILL that follows may cut that short: the zygote cleans up after itself).
    Either way nothing of hwcheck's is left in the temp dir."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    path = os.path.join(ROOT, "submissions", "attention", "correct.py")
    seen = tmp_path / "seen.txt"  # what the temp dir held after the check, before the end
    cells = _cells_of(path) + [f"import checker, os\nchecker.check()\nopen({str(seen)!r}, 'w').write("
                               "' '.join(os.listdir(os.environ['TMPDIR'])))",
                               "import os, signal\n" + end]
    try:
        _run(cells, tmp_path)
    except nbclient.exceptions.DeadKernelError:
        pass
    assert "hwcheck-nbserver-" in seen.read_text() and "hwcheck-zygote-" in seen.read_text(), seen.read_text()
    deadline = time.monotonic() + 30
    while [n for n in os.listdir(tmp) if n.startswith("hwcheck-")] and time.monotonic() < deadline:
        time.sleep(0.2)
    assert [n for n in os.listdir(tmp) if n.startswith("hwcheck-")] == []


def test_the_grading_process_ends_on_sigterm_in_the_middle_of_a_grade(tmp_path, monkeypatch):
    """SIGTERM that reaches the kernel's grading process while a grading test waits on the student's code
    (Jupyter's end of a slow kernel) ends it then, folder and all, rather than being taken by pytest for that
    test's failure while the grading goes on until the SIGKILL that follows cuts everything short."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmp))
    sub = tmp_path / "slow.py"
    with open(os.path.join(ROOT, "submissions", "attention", "correct.py"), encoding="utf-8") as f:
        sub.write_text(f.read() + "\nimport time\n_ok = get_attention_weights\n"
                       "def get_attention_weights(*a, **k):\n    time.sleep(60)\n    return _ok(*a, **k)\n")
    folder = tmp / "hwcheck-nbserver-test"
    folder.mkdir()
    proc = subprocess.Popen([sys.executable, "-c", "from checker.platforms.notebook import _serve; _serve()"],
                            cwd=folder, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    try:
        proc.stdin.write(json.dumps({"path": str(sub), "assignment": "attention", "timeout": None}) + "\n")
        proc.stdin.flush()
        deadline = time.monotonic() + 60  # until a worker runs the submission (its folder is in the temp dir)
        while not [n for n in os.listdir(tmp) if n.startswith("hwcheck-w-")] and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
        proc.send_signal(15)
        proc.wait(timeout=15)  # a SIGTERM taken for one test's failure: it would grade on for minutes
    finally:
        proc.kill()
        proc.wait()
    assert not folder.exists()
    assert [n for n in os.listdir(tmp) if n.startswith("hwcheck-")] == []


def test_a_saved_notebook_that_calls_check_is_graded_without_a_word_about_it(tmp_path):
    """The handout's `import checker; checker.check()` cell, left in the notebook a TA grades: in the worker it
    does nothing (the worker's own copy of hwcheck is out of the student's way, so the package the cell imports
    could not tell it was being graded and said to run `hwcheck check` from a terminal, as a failed cell)."""
    from checker.running.runner import Grader
    from checker.spec import load_spec, reference_file
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(open(reference_file(load_spec("attention")), encoding="utf-8").read()),
                nbformat.v4.new_code_cell("import checker\nchecker.check()"),
                nbformat.v4.new_code_cell("checker.check('Q1')")]
    path = tmp_path / "hw.ipynb"
    nbformat.write(nb, str(path))
    with Grader(mode="public") as g:
        card = g.grade(str(path), "attention")
    assert card["load"]["ok"], card["load"]
    assert not any("HwcheckError" in m or "checker.check" in m for m in card["load"]["messages"]), card["load"]
    assert card["score"] == 90, card["score"]
