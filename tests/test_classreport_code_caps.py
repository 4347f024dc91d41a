"""The class report compares at most 256 KiB of code per submission and shows excerpts, not whole files (h90 b2).

Two submissions of 2 MB of code each made `hwcheck report` fingerprint 2 MiB of each with copydetect (~400 MB and
~12 s apiece, all kept at once) and write whole files into the side-by-side view (a 9 MB page). A homework is
some 10-50 kB of code: past 256 KiB a submission is compared in part and named in the report's notes, and each
side of a pair shows a few lines around its shared passages, within MAX_SHOWN_CHARS.
"""

from pathlib import Path

import pytest

from checker.records.classreport import similarity, sources

ROOT = Path(__file__).resolve().parents[1]
CORRECT = (ROOT / "submissions" / "attention" / "correct.py").read_text(encoding="utf-8")


_SHAPES = {  # code of different shapes: copydetect abstracts names away, so only the shape tells code apart
    "a": "def {tag}_helper_{i}(x, y):\n    return [x * {i} + y for _ in range({k})]\n\n\n",
    "b": "class {tag}_Box{i}:\n    size = {i}\n\n    def grow(self):\n        while self.size < {k}:\n"
         "            self.size += 1\n\n\n",
    "c": "{tag}_table_{i} = {{'k': ({i}, {k}), 'v': [{k}, {i}, {k}]}}\n",
}


def _junk(tag, nbytes):
    shape = _SHAPES.get(tag, _SHAPES["a"])
    lines, size, i = [], 0, 0
    while size < nbytes:
        s = shape.format(tag=tag, i=i, k=i % 7 + 1)
        lines.append(s)
        size += len(s)
        i += 1
    return "".join(lines)


def test_a_submission_is_compared_within_256_kib_and_named_as_cut(tmp_path):
    assert sources.MAX_CODE_BYTES == 256 << 10
    path = tmp_path / "big_a.py"
    path.write_text(CORRECT + _junk("a", 1_000_000))      # 1 MB: under the old 2 MiB, over 256 KiB
    cut = []
    code = sources.code_of(path, cut=cut)
    assert code.startswith(CORRECT) and len(code) <= 256 << 10
    assert cut == [str(path)]
    codes, where = sources.locate_code([{"submission": {"id": "big_a", "path": str(path)}},
                                        {"submission": {"id": "plain", "path": str(ROOT / "submissions" /
                                                                                     "attention" / "correct.py")}}])
    assert where["cut"] == ["big_a"] and len(codes["big_a"]) <= 256 << 10 and codes["plain"] == CORRECT


def test_a_folder_keeps_the_files_that_define_the_names_within_the_smaller_budget(tmp_path):
    from checker.spec import load_spec
    sub = tmp_path / "dave"
    sub.mkdir()
    for i in range(3):
        (sub / f"a{i}_helpers.py").write_text(_junk(f"h{i}", 200_000))
    (sub / "zz_homework.py").write_text(CORRECT)
    cut = []
    code = sources.code_of(sub, names=sources.assignment_names(load_spec("attention")), cut=cut)
    assert "def get_scores" in code and "def multi_head_attention" in code and len(code) <= (256 << 10) + 16
    assert cut == [str(sub)]


def test_the_side_by_side_view_shows_excerpts_not_whole_files():
    pytest.importorskip("copydetect")
    code_a = _junk("a", 120_000) + CORRECT + _junk("c", 60_000)
    code_b = _junk("b", 100_000) + CORRECT
    html_a, html_b = similarity.side_by_side(code_a, code_b)
    for html in (html_a, html_b):
        assert "<mark>" in html and html.count("<mark>") == html.count("</mark>")
        assert "get_attention_weights" in html              # the shared passage is shown
        assert len(html) < 30_000, len(html)               # old: the whole file, ~130-190 kB
    assert "a_helper_5(" not in html_a                     # far from the shared passage: left out


def test_two_large_copies_are_shown_in_part_and_say_so():
    pytest.importorskip("copydetect")
    code = CORRECT + _junk("same", 150_000)
    html_a, html_b = similarity.side_by_side(code, code)
    for html in (html_a, html_b):
        assert len(html) < 30_000, len(html)
        assert html.count("<mark>") == html.count("</mark>") >= 1
        assert "not shown here" in html
