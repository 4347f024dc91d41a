"""A folder submission holding the shipped starter notebook beside the student's own file grades the student's.

The normal GitHub Classroom repository: `starter.ipynb` (here renamed, as
students do) with its NotImplementedError stubs, and the student's .py.
Before, the stubs replaced the student's functions (0/100).
"""
import os
import shutil

from checker.running.runner import Grader
from checker.running.starter import is_starter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STARTER = os.path.join(ROOT, "assignments", "attention", "starter.ipynb")
CORRECT = os.path.join(ROOT, "submissions", "attention", "correct.py")


def test_the_starter_beside_the_students_file_is_not_graded(tmp_path):
    repo = tmp_path / "alice-repo"
    repo.mkdir()
    shutil.copyfile(CORRECT, repo / "attention.py")
    shutil.copyfile(STARTER, repo / "zz_homework_template.ipynb")  # runs after the .py: its stubs win
    with Grader(mode="public", timeout=10) as grader:
        card = grader.grade(str(repo), "attention")
    auto = sum(q["max_score"] for q in card["questions"] if not q.get("manual"))
    assert card["score"] == auto, card["load"]["messages"]
    assert any("zz_homework_template.ipynb" in m and "starter" in m for m in card["load"]["messages"])


def test_the_starter_is_recognised_by_content_not_name(tmp_path):
    assert is_starter(STARTER)
    nb = (tmp_path / "x.ipynb")
    nb.write_text(open(STARTER, encoding="utf-8").read().replace('raise NotImplementedError(\\"Q1: get_scores\\")',
                                                                  "return matrix @ vector"))
    assert not is_starter(str(nb))
    assert not is_starter(CORRECT)
