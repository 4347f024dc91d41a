"""checker.running.runner's pure helpers (grading itself is driven by test_submissions and test_batch)."""
import os

from checker.running.runner import _answer_source, nothing_defined
from checker.spec import load_spec


def test_written_answers_of_a_linked_file_are_read_where_it_points_unless_that_is_secret(tmp_path):
    store, secret, entries = tmp_path / "store", tmp_path / "reference", tmp_path / "class"
    for d in (store, secret, entries):
        d.mkdir()
    (store / "alice.py").write_text("# Q3-text\n# each head has its own softmax\n")
    (secret / "attention.py").write_text("# Q3-text\n# the reference's words\n")
    os.symlink(store / "alice.py", entries / "alice.py")
    os.symlink(secret / "attention.py", entries / "mallory.py")
    (entries / "bob.py").write_text("")
    secrets = [str(secret), str(entries)]
    assert _answer_source(str(entries / "alice.py"), secrets) == str(store / "alice.py")
    assert _answer_source(str(entries / "mallory.py"), secrets) == str(entries / "mallory.py")  # not followed
    assert _answer_source(str(entries / "bob.py"), secrets) == str(entries / "bob.py")


def test_nothing_defined_says_what_was_found_and_what_was_asked(tmp_path):
    spec = load_spec("attention")
    assert "defines nothing" in nothing_defined(str(tmp_path / "a.py"), [], spec)
    text = nothing_defined(str(tmp_path / "a.py"), ["foo", "_private", "np"], spec)
    assert "it defines `foo`, `np`" in text and "`get_scores`" in text and "_private" not in text
    (tmp_path / "hw").mkdir()
    assert "the folder hw holds no .py or .ipynb file" in nothing_defined(str(tmp_path / "hw"), [], spec)
