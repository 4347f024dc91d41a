"""Hostile submissions against the class report's similarity ranking (an attacker's probe: item F4).

`hwcheck report` ranks pairs of submissions by shared code (`checker.records.classreport.similarity`), on the
code `checker.records.classreport.sources` reads. A copier escaped it twice:

- a notebook padded with one saved 3 MB output (a plot's image) was skipped whole, "no code the report may
  read", as its 2 MiB cap counted the file, outputs and all: now a notebook is read within grading's own
  bound (64 MiB) and only its code cells are measured;
- a folder with 50 one-line files named to sort before the copied notebook was cut at its first 50 files by
  name: now the files that define the assignment's names come first, the others smallest first, within a
  budget of code, and what is left out is said in the report;

and a folder nested 1,100 deep raised RecursionError in the report's os.walk: it is walked without
recursion, to a bounded depth, through no link. The copies are made from the example notebook with its
variables renamed, as the attacker made them, and ranked by the real copydetect.
"""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from checker.records.classreport import sources
from checker.spec import load_spec

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "assignments" / "attention" / "examples" / "correct_notebook.ipynb"
NAMES = sources.assignment_names(load_spec("attention"))


def _renamed():
    """The example notebook with two variables renamed: a near copy (the attacker's control)."""
    nb = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    for c in nb["cells"]:
        if c["cell_type"] == "code":
            s = "".join(c["source"]) if isinstance(c["source"], list) else c["source"]
            c["source"] = s.replace("shifted", "shft").replace("exps", "ex")
    return nb


def _padded():
    """The near copy with one saved 3 MB plot output in its first code cell."""
    nb = _renamed()
    first = next(c for c in nb["cells"] if c["cell_type"] == "code")
    first["outputs"] = [{"output_type": "display_data", "metadata": {},
                         "data": {"image/png": "iVBORw0KGgo" + "A" * 3_000_000, "text/plain": ["<Figure>"]}}]
    return nb


@pytest.fixture()
def subs(tmp_path):
    subs = tmp_path / "subs"
    subs.mkdir()
    shutil.copyfile(NOTEBOOK, subs / "alice.ipynb")
    (subs / "bob_plain.ipynb").write_text(json.dumps(_renamed()))
    (subs / "bob_padded.ipynb").write_text(json.dumps(_padded()))
    carol = subs / "carol_padded"
    carol.mkdir()
    for i in range(50):
        (carol / f"a{i:02d}.py").write_text(f"# helper {i}\n")
    (carol / "hw.ipynb").write_text(json.dumps(_renamed()))
    return subs


def test_a_notebooks_saved_outputs_do_not_count_as_its_code(subs):
    padded = subs / "bob_padded.ipynb"
    assert padded.stat().st_size > 3_000_000
    plain = sources.code_of(subs / "bob_plain.ipynb")
    assert plain and "def get_scores" in plain
    assert sources.code_of(padded) == plain  # it was None: "no code the report may read"
    assert "iVBORw0KGgo" not in plain


def test_fifty_files_named_to_sort_first_do_not_push_the_code_out(subs):
    code = sources.code_of(subs / "carol_padded", names=NAMES)
    assert code and "def get_scores" in code and "shft" in code
    assert "# helper 0" in code  # everything fits: nothing left out


def test_every_copy_is_ranked_with_its_original(subs):
    pytest.importorskip("copydetect")
    from checker.records.classreport.similarity import rank_pairs
    cards = [{"submission": {"id": p.name.split(".")[0], "path": str(p)}} for p in sorted(subs.iterdir())]
    codes, where = sources.locate_code(cards, names=NAMES)
    assert sorted(codes) == ["alice", "bob_padded", "bob_plain", "carol_padded"], where
    assert where["unreadable"] == [] and where["cut"] == [], where
    pairs = {(p["a"], p["b"]): p["score"] for p in rank_pairs(codes, sources.given_code("attention"))}
    for copier in ("bob_padded", "bob_plain", "carol_padded"):
        assert pairs.get(("alice", copier), 0) > 0.9, pairs


def test_the_files_that_define_the_names_come_first_within_the_budget(tmp_path):
    """Past the budget of code, the files that define the assignment's names are compared first, whatever
    their names and sizes; the junk beside them is left out and the submission named as compared in part."""
    sub = tmp_path / "dave"
    sub.mkdir()
    junk = "".join(f"value_{i} = {i} * {i} + {i}\n" for i in range(40_000))  # about 1 MB of code each
    for i in range(4):
        (sub / f"a{i}_helpers.py").write_text(junk.replace("value_", f"v{i}_"))
    shutil.copyfile(NOTEBOOK, sub / "zz_homework.ipynb")
    assert sum(f.stat().st_size for f in sub.iterdir()) > 2 * sources.MAX_CODE_BYTES
    cut = []
    code = sources.code_of(sub, names=NAMES, cut=cut)
    assert "def get_scores" in code and "def multi_head_attention" in code
    assert len(code) <= sources.MAX_CODE_BYTES + 16
    assert cut == [str(sub)]
    codes, where = sources.locate_code([{"submission": {"id": "dave", "path": str(sub)}}], names=NAMES)
    assert "def get_scores" in codes["dave"] and where["cut"] == ["dave"], where


def test_a_single_file_past_the_budget_is_compared_in_part_not_skipped(tmp_path):
    path = tmp_path / "erin.py"
    body = (NOTEBOOK.parent / "correct.py").read_text(encoding="utf-8")
    path.write_text(body + "pad = 0\n" * 400_000)  # 3.2 MB: within grading's 4 MiB for a .py file
    assert sources.MAX_CODE_BYTES < path.stat().st_size < 4 << 20
    cut = []
    code = sources.code_of(path, cut=cut)
    assert code and code.startswith(body) and len(code) <= sources.MAX_CODE_BYTES
    assert cut == [str(path)]


def test_a_folder_nested_1100_deep_is_read_without_recursion(tmp_path):
    """os.walk recursed (Python 3.11): RecursionError, and `hwcheck report` stopped. Now the folder is walked
    to a bounded depth (checker.walk), what lies deeper is left out and said, and the code above it read."""
    sub = tmp_path / "deep"
    shutil.copyfile(NOTEBOOK.parent / "correct.py", (sub.mkdir() or sub) / "hw.py")
    here = sub
    for _ in range(1100):
        here = here / "d"
        here.mkdir()
    (here / "bottom.py").write_text("hidden_at_the_bottom = 1\n")
    try:
        cut = []
        code = sources.code_of(sub, names=NAMES, cut=cut)
        assert "def get_scores" in code and "hidden_at_the_bottom" not in code
        assert cut == [str(sub)]
    finally:  # pytest's own removal of tmp_path recurses as os.walk did
        from checker.worker.cleanup import remove_tree
        assert remove_tree(str(sub / "d"))


def test_a_link_to_a_folder_is_not_followed(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "theirs.py").write_text("classmates_code = 1\n")
    sub = tmp_path / "frank"
    sub.mkdir()
    shutil.copyfile(NOTEBOOK.parent / "correct.py", sub / "hw.py")
    os.symlink(outside, sub / "linked")
    os.symlink(sub, sub / "loop")
    code = sources.code_of(sub, names=NAMES)
    assert "def get_scores" in code and "classmates_code" not in code
    assert code.count("def get_scores") == 1


@pytest.mark.slow
def test_the_attackers_batch_is_ranked_by_the_real_commands(subs, tmp_path):
    """The attacker's own run: `hwcheck grade` then `hwcheck report`; every copy is in the ranking."""
    pytest.importorskip("copydetect")
    pytest.importorskip("matplotlib")
    out = tmp_path / "out"
    for args in (["grade", str(subs), "-a", "attention", "-o", str(out), "-j", "2", "--seed", "7"],
                 ["report", str(out)]):
        proc = subprocess.run([sys.executable, "-m", "checker.cli", *args], cwd=ROOT, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    import re
    text = (out / "report.html").read_text(encoding="utf-8")
    data = json.loads(re.search(r'<script type="application/json" id="hwcheck-data">(.*?)</script>', text,
                                re.DOTALL).group(1))
    pairs = {(p["a"], p["b"]): p["score"] for p in data["similarity"]}
    for copier in ("bob_padded", "bob_plain", "carol_padded"):
        assert pairs.get(("alice", copier), 0) > 0.9, pairs
    assert not any("hold no code" in n for n in data["similarity_notes"]), data["similarity_notes"]


def test_code_in_a_hidden_folder_is_read_and_an_oversized_file_is_named(tmp_path):
    """An attacker's probe (round 5): a copy kept in `.lib/impl.py` (imported through sys.path: the worker copies
    hidden folders) was in no pair, and one padded past grading's 4 MiB for a .py file was dropped without a
    word. The hidden folder's code is read; a large .py is read with its tables of numbers blanked; a file the
    report still cannot compare whole makes the submission compared in part."""
    correct = (ROOT / "submissions" / "attention" / "correct.py").read_text(encoding="utf-8")
    hidden = tmp_path / "mallory_hidden"
    (hidden / ".lib").mkdir(parents=True)
    (hidden / ".lib" / "impl.py").write_text(correct)
    (hidden / "main.py").write_text("import sys\nsys.path.insert(0, '.lib')\nfrom impl import *\n")
    cut = []
    assert "def get_scores" in sources.code_of(hidden, names=NAMES, cut=cut) and cut == []
    big = tmp_path / "mallory_big"
    big.mkdir()
    (big / "main.py").write_text("from big import *\n")
    (big / "big.py").write_text(correct + "_PAD = [" + "0, " * 1_600_000 + "]\n")  # 4.8 MB
    cut = []
    code = sources.code_of(big, names=NAMES, cut=cut)  # read past 4 MiB, its table of zeros blanked
    assert "def get_scores" in code and "_PAD" not in code and len(code) < len(correct) + 100 and cut == []
    (big / "big.py").write_text("# " + "pad " * 1_200_000 + "\n" + correct)  # padding no reading can blank
    cut = []
    sources.code_of(big, names=NAMES, cut=cut)
    assert cut == [str(big)]
