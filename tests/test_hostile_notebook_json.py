"""Notebooks whose JSON is valid but is no notebook stop neither `hwcheck grade` nor `hwcheck report`.

`{"cells": 1.5}`, `{"cells": 5}`, `{"cells": true}`, cells that are not objects, a source that is a number or a
list of non-strings, an nbformat-3 notebook whose "worksheets" is a number: the loader says "it has no list of
cells" (a scorecard entry), and the trusted side's readers of notebook JSON (identical-code detection before
the batch, the class report's code) read them as notebooks with no code, by the loader's rules
(`checker.records.identical.notebook_cells`), never with a traceback. One batch (a correct .py and every shape)
is graded by a real `hwcheck grade` process; the report is written after a graded notebook is replaced by
each shape in turn.
"""

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from checker.records.classreport import sources
from checker.records import identical
from checker.records.identical import identical_groups, normalised_code
from checker.worker.sources import NotebookError, _cells as loader_cells

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")
NOTEBOOK = os.path.join(ROOT, "submissions", "attention", "correct_notebook.ipynb")
TRACEBACK = "Traceback (most recent call last)"


def _nb4(cells):
    return {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


SHAPES = {
    "cells_float": _nb4(1.5),
    "cells_int": _nb4(5),
    "cells_true": _nb4(True),
    "cells_string": _nb4("import os"),
    "cells_not_dicts": _nb4([1, "x = 1", None, [2]]),
    "source_number": _nb4([{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
                            "source": 12}]),
    "source_list_of_numbers": _nb4([{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": 1,
                                     "source": [1, 2.5, None]}]),
    "nbformat3_worksheets_int": {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": 5},
    "nbformat3_worksheet_cells_int": {"nbformat": 3, "nbformat_minor": 0, "metadata": {},
                                      "worksheets": [{"cells": 7}, 3]},
    "json_list": [1, 2, 3],
}
NAMES = sorted(SHAPES)


def _hwcheck(*args):
    return subprocess.run([sys.executable, "-m", "checker.cli", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=600)


def _write(path, shape):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(SHAPES[shape], f)


def _loader_code(path):
    """The loader's code cells of a notebook file, or None where it says the file is no notebook."""
    try:
        return [src for _n, src, _c in loader_cells(path)]
    except NotebookError:
        return None


# ---------------------------------------------------------------------------
# the readers, one shape at a time
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", NAMES)
def test_the_readers_see_no_code_in_a_notebook_that_is_no_notebook(shape, tmp_path):
    path = tmp_path / "bob.ipynb"
    _write(path, shape)
    assert identical.notebook_cells(path.read_text(encoding="utf-8")) == _loader_code(path)  # the loader's rules
    assert normalised_code(str(path)) == []
    shutil.copyfile(CORRECT, tmp_path / "alice.py")
    assert identical_groups([("alice", str(tmp_path / "alice.py")), ("bob", str(path))]) == {}
    assert not sources.code_of(path)  # None (no notebook) or "" (cells without code)


@pytest.mark.parametrize("shape", NAMES)
def test_a_folder_with_a_notebook_that_is_no_notebook_keeps_its_other_code(shape, tmp_path):
    sub = tmp_path / "carol"
    sub.mkdir()
    shutil.copyfile(CORRECT, sub / "attention.py")
    _write(sub / "extra.ipynb", shape)
    code = sources.code_of(sub)
    assert code and "def get_scores" in code
    codes, where = sources.locate_code([{"submission": {"id": "carol", "path": str(sub)}}])
    assert "def get_scores" in codes["carol"] and where["missing"] == []


def test_the_rules_are_the_loaders():
    """Shapes the loader reads as notebooks give the same code cells here (sources keep their strings only)."""
    import tempfile
    nbs = [_nb4([{"cell_type": "code", "source": ["a = 1\n", 2, "b = 2"]}, {"cell_type": "markdown", "source": "x"},
                 {"cell_type": "code", "source": 3}, "cell", {"cell_type": "code", "source": "c = 3"}]),
           {"nbformat": 3, "worksheets": [{"cells": [{"cell_type": "code", "input": "d = 4"}]}, 5, {"cells": 1}]}]
    for nb in nbs:
        with tempfile.NamedTemporaryFile("w", suffix=".ipynb", delete=False) as f:
            json.dump(nb, f)
        try:
            assert identical.notebook_cells(json.dumps(nb)) == _loader_code(f.name)
        finally:
            os.unlink(f.name)


# ---------------------------------------------------------------------------
# a real batch: `hwcheck grade`
# ---------------------------------------------------------------------------

@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile-nb-json")
    subs, out = base / "subs", base / "out"
    subs.mkdir()
    shutil.copyfile(CORRECT, subs / "alice.py")
    shutil.copyfile(NOTEBOOK, subs / "carol.ipynb")  # a real notebook, replaced later for the report
    for shape in NAMES:
        _write(subs / f"{shape}.ipynb", shape)
    proc = _hwcheck("grade", str(subs), "-a", "attention", "-o", str(out), "-j", "2", "--seed", "11")
    return subs, out, proc


def _card(out, sid):
    with open(out / f"{sid}.json", encoding="utf-8") as f:
        return json.load(f)


def test_the_batch_runs_to_its_end(graded):
    _subs, out, proc = graded
    text = proc.stdout + proc.stderr
    assert proc.returncode == 0, text  # a batch with failed submissions, not 2 with an internal error
    assert "internal error" not in text and TRACEBACK not in text, text
    assert (out / "grades.csv").is_file()


def test_the_correct_submissions_get_their_full_scorecards(graded):
    _subs, out, _proc = graded
    for sid in ("alice", "carol"):
        card = _card(out, sid)
        assert card["status"] == "graded", card["status"]
        auto = [q for q in card["questions"] if not q.get("manual")]
        assert auto and all(q["score"] == q["max_score"] for q in auto), [(q["id"], q["score"]) for q in auto]


@pytest.mark.parametrize("shape", NAMES)
def test_each_notebook_that_is_no_notebook_gets_a_scorecard_with_a_message(graded, shape):
    _subs, out, _proc = graded
    card = _card(out, shape)
    assert card["status"] == "load_failed" and card["score"] == 0
    messages = card["load"]["messages"]
    assert messages and all(isinstance(m, str) and m for m in messages)
    assert any(f"{shape}.ipynb" in m for m in messages), messages
    assert TRACEBACK not in json.dumps(card)
    with open(out / "grades.csv", encoding="utf-8-sig") as f:
        assert any(line.startswith(f"{shape},") and "load_failed" in line for line in f)


# ---------------------------------------------------------------------------
# `hwcheck report` after a graded notebook is replaced
# ---------------------------------------------------------------------------

@pytest.mark.parametrize("shape", NAMES)
def test_the_report_is_written_after_a_graded_notebook_is_replaced(graded, shape, tmp_path):
    pytest.importorskip("matplotlib")
    pytest.importorskip("copydetect")
    subs, out, proc = graded
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _write(subs / "carol.ipynb", shape)  # the graded notebook is now no notebook
    page = tmp_path / "report.html"
    rep = _hwcheck("report", str(out), "-o", str(page))
    text = rep.stdout + rep.stderr
    assert rep.returncode == 0 and "internal error" not in text and TRACEBACK not in text, text
    html = page.read_text(encoding="utf-8")
    m = re.search(r'<script type="application/json" id="hwcheck-data">(.*?)</script>', html, re.DOTALL)
    data = json.loads(m.group(1))
    assert all("carol" not in (p["a"], p["b"]) for p in data["similarity"])  # no code of carol's is compared
    noted = [n for n in data["similarity_notes"] if "is not a notebook" in n]
    if _loader_code(str(subs / "carol.ipynb")) is None:  # no notebook by the loader's rules: said so
        assert noted and "carol" in noted[0].rsplit(":", 1)[1], data["similarity_notes"]
    assert any("carol" in n for n in data["similarity_notes"])  # changed since grading, at least


def test_a_folder_holding_a_notebook_whose_source_is_numbers_is_graded(tmp_path):
    """checker.running.starter reads every notebook of a folder (is it the shipped starter?) while grading
    copies it: a code cell whose source is a list of numbers is no code, never a TypeError."""
    from checker.running.starter import starter_units
    folder = tmp_path / "dave"
    folder.mkdir()
    (folder / "attention.py").write_text(open(os.path.join(ROOT, "submissions", "attention", "correct.py"),
                                              encoding="utf-8").read())
    (folder / "scratch.ipynb").write_text(json.dumps({"cells": [{"cell_type": "code", "source": [1, 2]}]}))
    assert starter_units([str(folder / "attention.py"), str(folder / "scratch.ipynb")]) == []
