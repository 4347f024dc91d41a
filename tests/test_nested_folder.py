"""A folder submission graded where an archive put it (issue 27 item 2).

An unzipped archive or a Gradescope folder upload often puts a student's files one level (or two)
below the submission's folder: `submission/hw/q1.py`. Files that import each other (`from q1 import
...`) must load there as they do at the top, and no message may blame the student for the layout.
Each example folder submission (`assignments/<id>/examples/correct_folder`) is graded flat, one level down,
two levels down, and beside an unrelated README folder; the scores and messages must be the same.
"""
import os
import shutil

import pytest

from checker.spec import assignment_ids, example_path
from checker.worker.roots import import_roots

FOLDERS = sorted(a for a in assignment_ids() if example_path(a, "correct_folder"))


def _messages(card):
    load = card.get("load") or {}
    return "\n".join([m.get("text", "") if isinstance(m, dict) else str(m) for m in load.get("messages", [])]
                     + [q.get("message", "") for q in card["questions"]]
                     + [t.get("message", "") or "" for q in card["questions"] for t in q["tests"]])


def test_import_roots_finds_the_folder_that_holds_the_imported_modules(tmp_path):
    (tmp_path / "hw" / "part2").mkdir(parents=True)
    (tmp_path / "hw" / "q1.py").write_text("def f():\n    return 1\n")
    (tmp_path / "hw" / "part2" / "q2.py").write_text("from q1 import f\nimport numpy\nimport helpers.x\n")
    (tmp_path / "hw" / "part2" / "helpers").mkdir()
    (tmp_path / "hw" / "part2" / "helpers" / "__init__.py").write_text("")
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "scratch.py").write_text("x = 1\n")  # imported by nobody: not a root
    roots = import_roots(str(tmp_path))
    assert roots == [str(tmp_path), str(tmp_path / "hw"), str(tmp_path / "hw" / "part2")]
    # a file never names a folder outside the submission, and a link is not followed
    outside = tmp_path.parent / (tmp_path.name + "_outside")
    outside.mkdir()
    (outside / "secret.py").write_text("")
    (tmp_path / "hw" / "link").symlink_to(outside)
    (tmp_path / "hw" / "q1.py").write_text("import secret\n")
    assert all(r.startswith(str(tmp_path)) for r in import_roots(str(tmp_path)))


def test_import_roots_reads_imports_before_a_syntax_error(tmp_path):
    (tmp_path / "in" / "deep").mkdir(parents=True)
    (tmp_path / "in" / "deep" / "q1.py").write_text("def f():\n    return 1\n")
    (tmp_path / "in" / "q2.py").write_text("from q1 import f\n\ndef g(:\n")
    assert str(tmp_path / "in" / "deep") in import_roots(str(tmp_path))


@pytest.mark.slow
@pytest.mark.parametrize("aid", FOLDERS)
def test_a_folder_one_or_two_levels_down_scores_as_at_the_top(grader, tmp_path, aid):
    flat = example_path(aid, "correct_folder")
    want = grader.grade(flat, aid)
    layouts = {"one_down": ("hw",), "two_down": ("submission", "hw")}
    for name, parts in layouts.items():
        dest = tmp_path / name
        shutil.copytree(flat, dest.joinpath(*parts))
        if name == "two_down":  # an unrelated folder beside it (not a single wrapper any more)
            (dest / "notes").mkdir()
            (dest / "notes" / "README.txt").write_text("my notes\n")
        card = grader.grade(str(dest), aid)
        assert card["score"] == want["score"] == card["max_score"] - sum(
            q["max_score"] for q in card["questions"] if q["manual"]), (name, _messages(card))
        text = _messages(card)
        assert "No module named" not in text and "not installed" not in text, (name, text)
