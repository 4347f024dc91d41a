"""Tests of checker/running/freetext.py: finding a written answer in notebooks, .py files and folders."""
import json
import os

from checker.running.freetext import MAX_ANSWER, answer_in_notebook, answer_in_python, find_answers

PROMPT = "In a few sentences: why does a transformer use several attention heads of width d/h rather than one?"


def _md(text):
    return {"cell_type": "markdown", "metadata": {}, "source": text.splitlines(True)}


def _code(text):
    return {"cell_type": "code", "metadata": {}, "execution_count": None, "outputs": [],
            "source": text.splitlines(True)}


def _nb(*cells):
    return {"cells": list(cells), "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


STARTER_CELL = ("## Q3-text — Why several heads rather than one? (10 points, graded by a person)\n\n"
                f"*{PROMPT}*\n\n**Your answer:** (replace this line with your answer)\n")


def test_the_starters_placeholder_is_no_answer():
    assert answer_in_notebook(_nb(_md(STARTER_CELL), _code("x = 1")), "Q3-text", PROMPT) is None


def test_an_answer_after_the_prompt_or_in_following_cells_is_found():
    filled = STARTER_CELL.replace("(replace this line with your answer)", "Heads look at different tokens.")
    assert answer_in_notebook(_nb(_md(filled)), "Q3-text", PROMPT) == "Heads look at different tokens."
    # the student left the placeholder's cell alone and wrote the answer in the next markdown cells
    nb = _nb(_md(STARTER_CELL), _md("Each head has its own softmax."), _md("So they specialise."),
             _md("## Q4 something else"), _md("not this"))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) == "Each head has its own softmax.\nSo they specialise."


def test_the_handouts_own_question_is_not_taken_for_the_answer():
    cell = f"## Q3-text\n*{PROMPT}*\n\nBecause one head averages everything.\n"
    assert answer_in_notebook(_nb(_md(cell)), "Q3-text", PROMPT) == "Because one head averages everything."


def test_other_questions_headings_do_not_count():
    nb = _nb(_md("## Q3 — Heads and shapes\nShape helpers return tuples."), _md("## Q3-text\n"))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) is None


def test_python_comments_a_string_or_a_comment_in_a_code_cell():
    src = "def f():\n    pass\n\n# Q3-text\n# Heads attend\n# to different things.\n\nx = 1\n# later\n"
    assert answer_in_python(src, "Q3-text") == "Heads attend\nto different things."
    assert answer_in_python('Q3_TEXT = """Several softmaxes."""\n', "Q3-text") == "Several softmaxes."
    assert answer_in_python("# Q3-text\n# TODO\n", "Q3-text") is None
    nb = _nb(_code("import numpy as np"), _code("# Q3-text: my answer\n# Different subspaces.\n"))
    assert answer_in_notebook(nb, "Q3-text") == "Different subspaces."
    # the answer begun on the label's own line is kept whole
    assert answer_in_python("x = 1\n# Q3-text: Each head has its own softmax.\nx = 2\n", "Q3-text") == \
        "Each head has its own softmax."
    assert answer_in_python("# Q3-text: Each head\n# attends elsewhere.\n", "Q3-text") == "Each head\nattends elsewhere."


def test_answers_are_capped():
    assert len(answer_in_python("# Q3-text\n" + "# word\n" * 5000, "Q3-text")) == MAX_ANSWER


def test_a_folder_is_searched_and_links_are_not_followed(tmp_path):
    secret = tmp_path / "secret.py"
    secret.write_text("# Q3-text\n# the reference's text\n")
    sub = tmp_path / "sub"
    (sub / "deep").mkdir(parents=True)
    os.symlink(secret, sub / "a_link.py")
    os.symlink(tmp_path, sub / "b_dir_link")
    (sub / "deep" / "hw.ipynb").write_text(json.dumps(_nb(_md("## Q3-text\nMine.\n"))))
    assert find_answers(sub, {"Q3-text": PROMPT}) == {"Q3-text": "Mine."}
    os.unlink(sub / "deep" / "hw.ipynb")
    assert find_answers(sub, {"Q3-text": PROMPT}) == {"Q3-text": None}
    assert find_answers(sub / "a_link.py", {"Q3-text": None}) == {"Q3-text": None}


def test_unreadable_or_broken_files_give_no_answer(tmp_path):
    (tmp_path / "nb.ipynb").write_text("{not json")
    assert find_answers(tmp_path / "nb.ipynb", {"Q3-text": None}) == {"Q3-text": None}
    assert find_answers(tmp_path / "missing.py", {"Q3-text": None}) == {"Q3-text": None}
    assert find_answers(tmp_path / "nb.ipynb", {}) == {}


def test_labels_spacing_and_a_code_cell_between_heading_and_answer():
    # a bold label instead of a heading, with the answer on the same line
    nb = _nb(_md("Some notes.\n\n**Q3-text:** Heads look at different subspaces.\nAnd they are cheap."))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) == "Heads look at different subspaces.\nAnd they are cheap."
    nb = _nb(_md("Q3 text (10 points): Each head has its own softmax."))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) == "Each head has its own softmax."
    # a sentence that merely starts with the name is no label
    assert answer_in_notebook(_nb(_md("Q3 text is below, I think.")), "Q3-text", PROMPT) is None
    # spaces and dashes around the separator
    for heading in ("## Q3 - text", "## Q3 – text", "### Q3: text"):
        assert answer_in_notebook(_nb(_md(f"{heading}\nOne softmax per head.")), "Q3-text") == "One softmax per head."
    # the student ran a code cell under the heading and wrote the answer below it
    nb = _nb(_md(STARTER_CELL), _code("print(head_weight_shape(512, 8))"), _md("Heads specialise."),
             _code("x = 1"), _md("not this"))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) == "Heads specialise."
    # but not past the next heading
    nb = _nb(_md(STARTER_CELL), _code("x = 1"), _md("## Q4\nsomething else"))
    assert answer_in_notebook(nb, "Q3-text", PROMPT) is None


def test_a_notebook_made_large_by_a_plots_saved_image_is_read(tmp_path):
    """A notebook's saved outputs (a plot is a base64 image) make it far larger than its code: one of 7 MB is
    read, its answer found; a .py file of that size is still not (safe_read's caps, by kind of file)."""
    plot = {"output_type": "display_data", "metadata": {},
            "data": {"image/png": "iVBORw0KGgo" + "A" * (7 << 20), "text/plain": ["<Figure>"]}}
    cell = _code("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
    cell["outputs"] = [plot]
    (tmp_path / "hw.ipynb").write_text(json.dumps(_nb(cell, _md("## Q3-text\nHeads attend to different things.\n"))))
    assert os.path.getsize(tmp_path / "hw.ipynb") > 7 << 20
    assert find_answers(tmp_path / "hw.ipynb", {"Q3-text": PROMPT}) == {"Q3-text": "Heads attend to different things."}
    (tmp_path / "big.py").write_text("# Q3-text\n# Mine.\n" + "#" * (5 << 20) + "\n")
    assert find_answers(tmp_path / "big.py", {"Q3-text": PROMPT}) == {"Q3-text": None}


def test_an_answer_written_as_a_string_of_its_own_is_found():
    """A student who writes the written answer as a docstring-like string (a triple-quoted `Q3-text: ...` at the
    end of the file) was told no answer was found; a docstring that does not name the question is no answer."""
    from checker.running.freetext import answer_in_python
    src = ('import numpy as np\n\ndef f(x):\n    """Q3-text: not this one: it is a function\'s docstring."""\n'
           '    return x\n\n"""\nQ3-text: Several heads attend to different positions\nat the same cost.\n"""\n')
    assert answer_in_python(src, "Q3-text") == "Several heads attend to different positions\nat the same cost."
    assert answer_in_python('"""My homework, by Ann."""\nx = 1\n', "Q3-text") is None
    assert answer_in_python("'''Q3 text: one line.'''\n", "Q3-text") == "one line."


def test_a_notebook_of_plots_up_to_the_copys_bound_is_read_and_one_past_it_is_said(tmp_path):
    """A Gradescope probe (h39): a correct notebook with 60 MB of saved plots scored its code in full, while its
    written answer was "No answer to Q3-text was found": the trusted side read notebooks to 32 MiB only, and
    said nothing of it. Every notebook the worker is given (64 MiB a file) is read; one past that is named as
    not read, not as holding no answer."""
    from checker.worker.sources import MAX_NOTEBOOK_BYTES

    def plots(mib):
        plot = {"output_type": "display_data", "metadata": {},
                "data": {"image/png": "iVBORw0KGgo" + "A" * (mib << 20), "text/plain": ["<Figure>"]}}
        cell = _code("import matplotlib.pyplot as plt\nplt.plot([1, 2])")
        cell["outputs"] = [plot]
        return json.dumps(_nb(cell, _md("## Q3-text\nHeads attend to different things.\n")))
    (tmp_path / "hw.ipynb").write_text(plots(60))
    assert 60 << 20 < os.path.getsize(tmp_path / "hw.ipynb") <= MAX_NOTEBOOK_BYTES
    assert find_answers(tmp_path / "hw.ipynb", {"Q3-text": PROMPT}) == {"Q3-text": "Heads attend to different things."}
    (tmp_path / "hw.ipynb").write_text(plots(65))
    notes = []
    assert find_answers(tmp_path / "hw.ipynb", {"Q3-text": PROMPT}, notes) == {"Q3-text": None}
    assert any("hw.ipynb was not read for them: it is larger than 64 MiB" in n for n in notes), notes
