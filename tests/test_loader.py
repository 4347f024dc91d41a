"""Loading student code in a real worker: .py files, notebooks, folders, and what goes wrong in them.

Every submission is written into tmp_path and loaded by a real worker
(`SubmissionHandle` on a real `Zygote`); names are then called for real.
"""
import ast
import json
import os
import textwrap

import numpy as np
import pytest

from checker.errors import MissingName, WorkerCrashed
from checker.worker.isolation import landlock_abi
from checker.running.sandbox import Limits, SubmissionHandle, Zygote, sha256_of
from checker.worker.syntax import trainer_defs, training
from sandbox_helpers import CONTEXT_D1, GOOD, H_D1, H_E, descendants, notebook, wait_until, write

FAST = dict(call_s=5, cell_s=2, submission_s=60)
SECRET = "hwcheck-test-secret-8d1f"


@pytest.fixture(scope="module")
def zyg():
    """A zygote started while the grading process holds secrets in its environment."""
    saved = {k: os.environ.get(k) for k in ("HWCHECK_SECRET_TOKEN", "HOME")}
    os.environ["HWCHECK_SECRET_TOKEN"] = SECRET
    os.environ.setdefault("HOME", "/root")
    try:
        with Zygote() as z:
            # wait until it has imported torch: tests with second-long load limits must not pay for that
            os.rmdir(z.mkdir())
            yield z
            assert wait_until(lambda: not descendants(z.pid), timeout=1.5), "workers left behind"
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def load(z, path, **limits):
    h = SubmissionHandle(str(path), z, Limits(**{**FAST, **limits}))
    return h, h.load()


def context_ok(h):
    np.testing.assert_allclose(h.call("context_vector", np.array(H_E), np.array(H_D1)), CONTEXT_D1, atol=1e-6)


def body_of_good():
    """GOOD without its import lines (a notebook imports in an earlier cell)."""
    return "\n".join(line for line in GOOD.splitlines() if not line.startswith("import "))


NAMES = ["get_scores", "scale_scores", "get_attention_weights", "get_context_vector", "context_vector",
         "self_attention", "self_attention_token", "split_heads", "head_weight_shape", "head_output_shape",
         "concat_shape", "w_o_shape", "multi_head_attention"]


# --------------------------------------------------------------------------- what loads

def test_correct_py_file(zyg, tmp_path):
    path = write(tmp_path, "hw.py", GOOD)
    h, report = load(zyg, path)
    try:
        assert report["ok"] and report["messages"] == []
        assert set(NAMES) <= set(report["names"])
        context_ok(h)
        assert h.call("head_weight_shape", 512, 8) == (512, 64)
        blocks = h.call("split_heads", np.arange(12.0).reshape(2, 6), 3)
        assert isinstance(blocks, list) and [b.shape for b in blocks] == [(2, 2)] * 3
        lines = GOOD.splitlines()
        assert report["origins"]["get_scores"] == f"hw.py, line {lines.index('def get_scores(matrix, vector):') + 1}"
        assert report["origins"]["np"] == "hw.py, line 2"
    finally:
        h.close()


NOTEBOOK_CELLS = [
    ("markdown", "# Attention homework\nRun every cell."),                        # 1
    "%matplotlib inline\nimport math\nimport numpy as np",                       # 2
    "!pip install einops\nfiles = !ls\nnp.mean?",                                # 3
    "%%time\ndef get_scores(matrix, vector):\n    return matrix @ vector",      # 4
    "print('loading the weights')\ndata = np.load('weights.npy')",               # 5
    None,                                                                        # 6: the rest of GOOD
    "%%bash\necho this is not python",                                           # 7
    "def load_images():\n    return open('cats/1.png', 'rb').read()",            # 8
    "images = load_images()",                                                    # 9
    "%%writefile tools.py\ndef triple(x):\n    return 3 * x",                    # 10
    "from tools import triple\ncontext_vector(H_e, H_d[1])",                     # 11
]


def test_notebook_with_failing_cells_and_magics(zyg, tmp_path):
    rest = body_of_good().replace("def get_scores(", "def _earlier_get_scores(")  # get_scores is in the 3rd code cell
    cells = [rest if c is None else c for c in NOTEBOOK_CELLS]
    path = write(tmp_path, "homework.ipynb", notebook(cells))
    h, report = load(zyg, path)
    try:
        assert set(NAMES) <= set(report["names"]) and "triple" in report["names"]
        context_ok(h)
        assert h.call("triple", 2) == 6
        o = report["origins"]
        assert o["np"] == "homework.ipynb, the 1st code cell"  # code cells are counted, not markdown
        assert o["get_scores"] == "homework.ipynb, the 3rd code cell"        # the %%time cell's body ran
        assert o["context_vector"] == "homework.ipynb, the 5th code cell"
        assert o["triple"] == "homework.ipynb, the 10th code cell"
        text = "\n".join(report["messages"])
        for magic in ("%matplotlib inline", "!pip install einops", "files = !ls", "%%bash"):
            assert magic in text, (magic, text)
        assert "homework.ipynb, the 4th code cell, line 2 raised FileNotFoundError" in text
        assert "data = np.load('weights.npy')" in text
        # an error inside a function from another cell names both places, with the student's code
        assert "homework.ipynb, the 8th code cell, line 1 raised FileNotFoundError" in text
        assert "in homework.ipynb, the 7th code cell, line 2\n    return open('cats/1.png', 'rb').read()" in text
        assert "homework.ipynb, the 10th code cell, line 2 raised NameError" in text and "H_e" in text
        assert not report["ok"]
    finally:
        h.close()


def test_folder_submission(zyg, tmp_path):
    folder = tmp_path / "alice"
    write(folder, "helpers.py", "import numpy as np\n\n\ndef softmax(x):\n"
                                "    e = np.exp(x - x.max(-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)\n")
    write(folder, "attention.py", GOOD.replace(
        "def get_attention_weights(scores):", "from helpers import softmax\n\n\ndef _unused(scores):") +
        "\n\ndef get_attention_weights(scores):\n    return softmax(np.asarray(scores))\n")
    write(folder, "questions.ipynb", notebook([
        "import helpers",
        "def head_weight_shape(d_model, num_heads):\n    return (d_model, d_model // num_heads)\n\n"
        "def uses_helpers(x):\n    return helpers.softmax(x)",
    ]))
    write(folder, ".ipynb_checkpoints/questions-checkpoint.ipynb", notebook(["raise SystemExit('stale copy')"]))
    h, report = load(zyg, folder)
    try:
        assert report["ok"], report["messages"]
        assert set(NAMES) <= set(report["names"]) and {"softmax", "uses_helpers"} <= set(report["names"])
        context_ok(h)
        np.testing.assert_allclose(h.call("uses_helpers", np.zeros(4)), [0.25] * 4)
        o = report["origins"]
        assert o["softmax"].startswith("helpers.py, line ")
        assert o["get_attention_weights"].startswith("attention.py, line ")
        assert o["head_weight_shape"] == "questions.ipynb, the 2nd code cell"
    finally:
        h.close()


def test_a_package_in_a_folder_imports_relatively_and_each_module_keeps_its_own_helpers(zyg, tmp_path):
    """A folder holding a package (`hw/__init__.py` and its modules, importing each other relatively) loads as
    Python imports it: each module has its own globals, so two private helpers of one name in two modules do
    not replace each other, and `from . import util` binds the module."""
    folder = tmp_path / "bob"
    write(folder, "hw/__init__.py", "from .weights import get_attention_weights\nfrom .context import *\n")
    write(folder, "hw/util.py", "import numpy as np\n\n\ndef stable_exp(s):\n    return np.exp(s - s.max(-1, keepdims=True))\n")
    write(folder, "hw/weights.py", textwrap.dedent('''\
        import numpy as np
        from . import util


        def _prep(scores):
            return np.asarray(scores, dtype=float)


        def get_attention_weights(scores):
            e = util.stable_exp(_prep(scores))
            return e / e.sum(-1, keepdims=True)
        '''))
    write(folder, "hw/context.py", GOOD.replace("def get_attention_weights(scores):", "def _unused(scores):") + textwrap.dedent('''

        from .weights import get_attention_weights


        def _prep(a, b, c):  # another signature than weights._prep: called by weights' own code, it would fail
            return a


        __all__ = ["get_scores", "scale_scores", "get_context_vector", "context_vector", "self_attention",
                   "self_attention_token", "head_weight_shape", "get_attention_weights"]
        '''))
    h, report = load(zyg, folder)
    try:
        assert report["ok"] and not report["messages"], report["messages"]
        assert set(NAMES) <= set(report["names"])
        context_ok(h)
        np.testing.assert_allclose(h.call("get_attention_weights", [0.0, 0.0]), [0.5, 0.5])
        assert report["origins"]["get_attention_weights"].startswith("hw/weights.py, line ")
    finally:
        h.close()


def test_a_file_another_imports_by_name_is_its_own_module_run_statement_by_statement(zyg, tmp_path):
    """`import weights` in model.py makes weights.py module `weights`, as in Python: its functions use its own
    helpers, not another file's of the same name; and it still runs one statement at a time, as every file of
    a submission does (a failing statement costs only itself, a training loop is not run)."""
    folder = tmp_path / "carol"
    write(folder, "weights.py", textwrap.dedent('''\
        import numpy as np

        table = open("missing.csv").read()


        def _prep(scores):
            return np.asarray(scores, dtype=float)


        def get_attention_weights(scores):
            s = _prep(scores)
            e = np.exp(s - s.max(-1, keepdims=True))
            return e / e.sum(-1, keepdims=True)


        for step in range(10 ** 9):
            loss = get_attention_weights([1.0, 2.0]).sum()
            loss.backward()
        '''))
    write(folder, "zmodel.py", "import weights\n\n\ndef _prep(a, b):\n    return a\n\n\n"
                               "def double_weights(s):\n    return 2 * weights.get_attention_weights(s)\n")
    h, report = load(zyg, folder)
    try:
        np.testing.assert_allclose(h.call("get_attention_weights", [0.0, 0.0]), [0.5, 0.5])
        np.testing.assert_allclose(h.call("double_weights", [0.0, 0.0]), [1.0, 1.0])
        text = "\n".join(report["messages"])
        assert "weights.py, line 3 raised FileNotFoundError" in text, text
        assert "weights.py, line 16: a training loop" in text, text
        assert "differently" not in text, text  # no file's helper replaced another's
    finally:
        h.close()


def test_a_module_of_the_submission_sees_what_the_files_before_it_defined(zyg, tmp_path):
    """As in the one namespace a folder's files run into, a module imported by name may use a name another
    file defined before it (`np`, a helper) without importing it; its own definitions stay its own."""
    folder = tmp_path / "erin"
    write(folder, "a_setup.py", "import numpy as np\n\n\ndef _prep(s):\n    return np.asarray(s, dtype=float)\n")
    write(folder, "b_weights.py", "def get_attention_weights(scores):\n    s = _prep(scores)\n"
                                  "    e = np.exp(s - s.max(-1, keepdims=True))\n    return e / e.sum(-1, keepdims=True)\n")
    write(folder, "c_model.py", "import b_weights\n\n\ndef _prep(a, b):\n    return a\n")
    h, report = load(zyg, folder)
    try:
        assert report["ok"], report["messages"]
        np.testing.assert_allclose(h.call("get_attention_weights", [0.0, 0.0]), [0.5, 0.5])
    finally:
        h.close()


def test_a_statement_stopped_inside_a_function_names_the_function_and_its_line(zyg, tmp_path):
    """`W = train(10)` at the top level runs past its limit inside train's loop: the statement alone does not say
    which loop never ends, so the message names the function and the line it was stopped at too."""
    folder = tmp_path / "erin"
    write(folder, "hw.py", GOOD + "\n\ndef train(steps):\n    w = 0\n    while True:\n        w += 1\n\n\n"
                                  "W = train(10)\n")
    h, report = load(zyg, folder, cell_s=1.5)
    try:
        text = "\n".join(report["messages"])
        lines = GOOD.count("\n") + 2
        assert f"hw.py, line {lines + 7} ran longer than" in text, text
        assert "inside `train` (hw.py, line " in text and ("while True" in text or "w += 1" in text), text
        context_ok(h)
    finally:
        h.close()


def test_a_module_of_the_submission_that_hangs_at_import_costs_only_its_statement(zyg, tmp_path):
    """A statement of an imported module of the submission runs under the unit limit of its own, and the
    statement that imports it gets back the time it had left: the loop is stopped and named in its own file,
    the rest of that module and of the submission loads."""
    folder = tmp_path / "dan"
    write(folder, "slow.py", "import time\n\nwhile True:\n    time.sleep(0.01)\n\nVALUE = 7\n")
    write(folder, "main.py", GOOD + "\nimport slow\n\n\ndef value():\n    return slow.VALUE\n")
    h, report = load(zyg, folder, cell_s=1.5)
    try:
        text = "\n".join(report["messages"])
        assert "slow.py, line 3 ran longer than" in text, text
        assert h.call("value") == 7
        context_ok(h)
    finally:
        h.close()


# --------------------------------------------------------------------------- what goes wrong

BROKEN = textwrap.dedent('''\
    import math
    import numpy as np


    def get_scores(matrix, vector):
        return matrix @ vector


    def scale_scores(scores, n)
        return scores / math.sqrt(n)


    def get_attention_weights(scores):
        e = np.exp(scores - np.max(scores, axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)
''')


def test_syntax_error_loses_only_the_broken_def(zyg, tmp_path):
    h, report = load(zyg, write(tmp_path, "broken.py", BROKEN))
    try:
        text = "\n".join(report["messages"])
        assert "SyntaxError in broken.py, line 9" in text and "def scale_scores(scores, n)" in text
        assert {"get_scores", "get_attention_weights", "np", "math"} <= set(report["names"])
        assert "scale_scores" not in report["names"]
        np.testing.assert_allclose(h.call("get_attention_weights", np.zeros(2)), [0.5, 0.5])
        with pytest.raises(MissingName, match="scale_scores"):
            h.call("scale_scores", np.ones(2), 4)
        assert not report["ok"]
    finally:
        h.close()


def test_a_notebook_saved_as_py_keeps_working_without_its_shell_lines(zyg, tmp_path):
    """Colab's "Download .py" keeps `!pip` and `%matplotlib` lines, a SyntaxError for Python: they are
    skipped as in a notebook, and nothing else is lost (the imports above the first def were)."""
    src = "!pip install -q numpy\n%matplotlib inline\n" + GOOD
    h, report = load(zyg, write(tmp_path, "colab.py", src))
    try:
        text = "\n".join(report["messages"])
        assert "skipped IPython line `!pip install -q numpy`" in text and "SyntaxError" not in text
        assert report["ok"], report["messages"]
        context_ok(h)
    finally:
        h.close()


def test_a_broken_statement_between_imports_loses_only_itself(zyg, tmp_path):
    lines = GOOD.split("\n")
    first_import = next(i for i, line in enumerate(lines) if line.startswith("import"))
    lines.insert(first_import + 1, 'print("loaded"')  # an unclosed call, at the top, between imports
    h, report = load(zyg, write(tmp_path, "typo.py", "\n".join(lines)))
    try:
        text = "\n".join(report["messages"])
        assert f"left out lines {first_import + 2}-{first_import + 2} (`print(\"loaded\"`)" in text, text
        context_ok(h)  # every import and def around it is there
    finally:
        h.close()


def test_source_encodings_as_python_reads_them(zyg, tmp_path):
    """A coding line (PEP 263) is honoured and CRLF line ends are fine; a file that is neither UTF-8
    nor declared costs only itself, with a message that says how to fix it."""
    declared = ("# -*- coding: cp1252 -*-\n# \u2013 saved on Windows\n" + GOOD).replace("\n", "\r\n")
    (tmp_path / "declared.py").write_bytes(declared.encode("cp1252"))
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbf" + GOOD.encode())
    for name in ("declared.py", "bom.py"):
        h, report = load(zyg, tmp_path / name)
        try:
            assert report["ok"], report["messages"]
            context_ok(h)
        finally:
            h.close()
    for where, body in (("first line", b"# caf\xe9\n" + GOOD.encode()), ("later", GOOD.encode() + b"# caf\xe9\n")):
        (tmp_path / "latin.py").write_bytes(body)
        h, report = load(zyg, tmp_path / "latin.py")
        try:
            text = "\n".join(report["messages"])
            assert "could not read latin.py: UnicodeError" in text and "save the file as UTF-8" in text, where
            assert not report["names"], where
        finally:
            h.close()


def test_a_py_file_has_its___file__(zyg, tmp_path):
    h, report = load(zyg, write(tmp_path, "uses_file.py", GOOD + "\nimport os\nHERE = os.path.basename(__file__)\n"
                                                             "def here():\n    return HERE\n"))
    try:
        assert report["ok"], report["messages"]
        assert h.call("here") == "uses_file.py"
    finally:
        h.close()


def test_missing_names_suggest_close_spellings(zyg, tmp_path):
    src = GOOD.replace("def get_context_vector(", "def get_context(").replace(
        "get_context_vector(w, encoder_states)", "get_context(w, encoder_states)").replace(
        "def get_scores(", "def getScores(").replace("get_scores(encoder_states", "getScores(encoder_states")
    h, report = load(zyg, write(tmp_path, "names.py", src))
    try:
        context_ok(h)
        with pytest.raises(MissingName, match="`get_context_vector` is not defined.*get_context") as e:
            h.call("get_context_vector", np.ones(2), np.eye(2))
        assert e.value.missing_names == ["get_context_vector"]
        with pytest.raises(MissingName, match="`get_scores` is not defined.*getScores"):
            h.call("get_scores", np.eye(2), np.ones(2))
    finally:
        h.close()


def test_hanging_cell_is_stopped_and_the_rest_loads(zyg, tmp_path):
    cells = ["import math\nimport numpy as np", "import time\nprint('training...')\ntime.sleep(100)",
             body_of_good()]
    h, report = load(zyg, write(tmp_path, "slow.ipynb", notebook(cells)), cell_s=1)
    try:
        text = "\n".join(report["messages"])
        assert "slow.ipynb, the 2nd code cell" in text and "longer than 1 s" in text
        context_ok(h)
        assert report["origins"]["context_vector"] == "slow.ipynb, the 3rd code cell"
    finally:
        h.close()


def test_slow_training_cells_spend_neither_the_tests_time_nor_run_again(zyg, tmp_path):
    """A notebook whose training cells each run to the cell limit: loading does not spend the budget
    of the calls, and the reload after a crashed call skips the stopped statements (only those: the
    class defined before the training loop in the same cell is still there)."""
    cells = ["import math\nimport numpy as np\nimport time", body_of_good(),
             "class Model:\n    pass\nfor epoch in range(1000):\n    time.sleep(0.1)",
             "while True:\n    time.sleep(0.1)",
             "def vanish():\n    import os\n    os._exit(0)\ndef has_model():\n    return 'Model' in globals()"]
    h, report = load(zyg, write(tmp_path, "train.ipynb", notebook(cells)), cell_s=1, submission_s=1.5)
    try:
        text = "\n".join(report["messages"])
        assert "train.ipynb, the 3rd code cell" in text and "train.ipynb, the 4th code cell" in text, text
        assert h.time_left() > 1.4, "loading spent the calls' budget"
        context_ok(h)
        with pytest.raises(WorkerCrashed):
            h.call("vanish")
        assert ["train.ipynb", 3, 3] in h.skip and ["train.ipynb", 4, 1] in h.skip, h.skip
        assert h.call("has_model") is True  # reloaded without the two stopped statements, in time
        context_ok(h)
        assert h.restarts == 1
    finally:
        h.close()


def test_training_at_the_top_level_is_not_run(zyg, tmp_path):
    """A notebook trains its model in a loop (or through a train() function), for minutes on a laptop:
    grading never uses the trained model, so those statements are skipped with a note, not run to the
    cell limit; what they would have bound is missing quietly, and everything else runs."""
    cells = [
        "import math\nimport time\nimport numpy as np\nimport torch",
        body_of_good(),
        "model = torch.nn.Linear(3, 1)\nopt = torch.optim.SGD(model.parameters(), lr=0.1)\nlosses = []\n"
        "for step in range(10**9):\n    loss = model(torch.randn(4, 3)).pow(2).mean()\n"
        "    opt.zero_grad()\n    loss.backward()\n    opt.step()\n    losses.append(loss.item())\n"
        "after_loop = True",
        "def train(m, steps):\n    for _ in range(steps):\n        m(torch.randn(2, 3)).sum().backward()\n"
        "        time.sleep(1)\n    return m\n"
        "trained = train(model, 10**9)\nprint(trained.weight.shape)\nnext_line = 1",
        "def loss_once(m):\n    out = m(torch.randn(2, 3)).sum()\n    out.backward()  # one step, no loop: runs\n"
        "    return True\nran_once = loss_once(model)",
        "def uses_loop_vars():\n    return [after_loop, next_line, ran_once, len(losses)]",
        "class Sampler:\n    def generate(self, n):\n        time.sleep(100)\n"
        "print(Sampler().generate(10**6))\nafter_sampling = 1",
    ]
    h, report = load(zyg, write(tmp_path, "trains.ipynb", notebook(cells)), cell_s=20)
    try:
        text = "\n".join(report["messages"])
        assert report["ok"], text
        assert "trains.ipynb, the 3rd code cell, line 4: a training loop (it calls .backward()) was not run" in text
        assert "never uses a trained model" in text
        assert "the 4th code cell, line 6: a call of train(), which trains a model" in text
        assert "the 4th code cell, line 7 was not run either: it uses `trained`" in text
        assert "longer than" not in text and "raised" not in text, text
        assert h.call("uses_loop_vars") == [True, 1, True, 0]
        assert "the 7th code cell, line 4: sampling text from the model (a .generate() call) was not run either" in text
        assert "after_sampling" in report["origins"]
        context_ok(h)
    finally:
        h.close()


def test_a_loop_calling_a_step_function_is_training_and_is_not_run(zyg, tmp_path):
    """The usual script: a train_step() helper takes one gradient step (no loop of its own) and a top-level
    loop calls it thousands of times, directly or through another helper (defined in either order), or
    through a train() that loops over it. Each such loop is skipped as the loop calling .backward() itself
    would be, not run to the statement limit; a loop over a helper that only does inference still runs."""
    src = GOOD + textwrap.dedent('''
        import time
        import torch

        model = torch.nn.Linear(3, 1)


        def train_step(m):
            loss = m(torch.randn(4, 3)).pow(2).mean()
            loss.backward()
            time.sleep(0.5)
            return loss.item()


        for epoch in range(10 ** 9):
            l = train_step(model)


        def outer_step(m):
            return inner_step(m(torch.randn(4, 3)).sum())


        def inner_step(loss):
            loss.backward()
            time.sleep(0.5)


        while True:
            outer_step(model)


        def train(m, steps):
            for _ in range(steps):
                train_step(m)


        train(model, 10 ** 9)


        def evaluate(m):
            with torch.no_grad():
                return m(torch.randn(4, 3)).sum().item()


        scores = []
        for i in range(3):
            scores.append(evaluate(model))
        one_step = train_step(model)


        def ran():
            return [len(scores), isinstance(one_step, float)]
        ''')
    lines = src.splitlines()
    h, report = load(zyg, write(tmp_path, "steps.py", src))
    try:
        text = "\n".join(report["messages"])
        assert report["ok"], text
        line = lines.index("for epoch in range(10 ** 9):") + 1
        assert f"steps.py, line {line}: a training loop (it calls .backward()) was not run" in text, text
        line = lines.index("while True:") + 1
        assert f"steps.py, line {line}: a training loop (it calls .backward()) was not run either" in text, text
        line = lines.index("train(model, 10 ** 9)") + 1
        assert f"steps.py, line {line}: a call of train(), which trains a model" in text, text
        assert "longer than" not in text and "raised" not in text, text
        assert h.call("ran") == [3, True]  # the inference loop and the single step ran
        context_ok(h)
    finally:
        h.close()


def _units(*sources):
    """What syntax.training says of each unit, loaded one after another as the loader does."""
    trainers, out = set(), []
    for src in sources:
        tree = ast.parse(textwrap.dedent(src))
        out.append(training(tree, trainers))
        trainers.update(trainer_defs(tree))
    return out


STEP = "def train_step(m, xb, yb):\n    opt.zero_grad()\n    loss = f(m(xb), yb)\n    loss.backward()\n    opt.step()\n"


def test_syntax_a_loop_over_a_step_helper_trains():
    loop = "for epoch in range(2000):\n    l = train_step(model, xb, yb)\n"
    assert _units(STEP, loop, "l = train_step(model, xb, yb)") == [
        None, "a training loop (it calls .backward())", None]  # one step alone still runs
    assert _units(STEP, "while l > 0.1:\n    if True:\n        l = float(train_step(model, xb, yb))\n")[1]


def test_syntax_a_loop_over_a_chain_of_helpers_trains_in_any_order_and_cycles_end():
    chain = ["def epoch(m):\n    return batch(m)\n", "def batch(m):\n    return backprop(m(1))\n",
             "def backprop(loss):\n    loss.backward()\n"]
    loop = "for i in range(10):\n    epoch(model)\n"
    assert _units(*chain, loop)[-1] == "a training loop (it calls .backward())"
    assert _units(*reversed(chain), loop)[-1] == "a training loop (it calls .backward())"
    assert _units(*chain, "def train():\n    for i in range(9):\n        epoch(1)\n", "train()")[-1] == (
        "a call of train(), which trains a model (a loop calling .backward())")
    # mutual recursion with no step in it: answered, not followed forever; a step behind it still found
    cycle = ["def ping(n):\n    return pong(n)\n", "def pong(n):\n    return ping(n)\n"]
    assert _units(*cycle, loop.replace("epoch", "ping"))[-1] is None
    assert _units(*cycle, "def pong(n):\n    return backprop(ping(n))\n", chain[2],
                  loop.replace("epoch", "ping"))[-1] == "a training loop (it calls .backward())"


def test_syntax_a_loop_over_an_inference_helper_runs_and_a_step_helper_beside_it_does_not():
    evaluate = "def evaluate(m, xb):\n    with torch.no_grad():\n        return m(xb).argmax(-1)\n"
    predict = "def predict(m, xb):\n    return evaluate(m, xb).tolist()\n"
    assert _units(STEP, evaluate, predict,
                  "for xb in batches:\n    preds.append(predict(model, xb))\n",
                  "for xb, yb in batches:\n    preds.append(predict(model, xb))\n    train_step(model, xb, yb)\n",
                  ) == [None, None, None, None, "a training loop (it calls .backward())"]
    # a helper far deeper than any training code goes is not followed to the end
    deep = [f"def h{i}():\n    return h{i + 1}()\n" for i in range(40)] + ["def h40():\n    x.backward()\n"]
    assert _units(*deep, "while True:\n    h0()\n")[-1] is None


def test_knock_on_failures_are_told_once_under_the_failure_that_caused_them(zyg, tmp_path):
    """A data file the grader does not have: the cell reading it fails, and then every statement that
    uses what it would have defined fails with a NameError. The student sees the cause once, with where
    the knock-on failures were, instead of a screen of NameErrors; an unrelated NameError is still its own."""
    cells = [
        "import math\nimport numpy as np",
        "with open('input.txt') as f:\n    text = f.read()",
        "chars = sorted(set(text))\nprint(len(chars))",
        "stoi = {c: i for i, c in enumerate(chars)}\nencode = lambda s: [stoi[c] for c in s]\nencode('hi')",
        "text = 'abc'\nprint(len(text))",
        "print(undefined_thing)",
        body_of_good(),
    ]
    h, report = load(zyg, write(tmp_path, "data.ipynb", notebook(cells)))
    try:
        msgs = report["messages"]
        assert len(msgs) == 2, msgs
        assert "data.ipynb, the 2nd code cell, line 1 raised FileNotFoundError" in msgs[0]
        assert ("then 4 later statements failed for want of what it would have defined: the 3rd code cell, line 1; "
                "the 3rd code cell, line 2; the 4th code cell, line 1; the 4th code cell, line 3") in msgs[0]
        assert "the 6th code cell, line 1 raised NameError: name 'undefined_thing' is not defined" in msgs[1]
        assert not report["ok"]
        context_ok(h)
    finally:
        h.close()


def test_cells_that_kill_the_worker_are_skipped(zyg, tmp_path):
    cells = ["import math\nimport numpy as np",
             "import os\nprint('bye')\nos._exit(1)",
             "def get_scores(matrix, vector):\n    return matrix @ vector",
             "import ctypes\nctypes.string_at(0)",
             body_of_good().replace("def get_scores(", "def _old_get_scores(")]
    h, report = load(zyg, write(tmp_path, "crashy.ipynb", notebook(cells)))
    try:
        text = "\n".join(report["messages"])
        assert "crashy.ipynb, the 2nd code cell: your code ended the process that runs it with os._exit(1)" in text
        assert "crashy.ipynb, the 4th code cell: your code crashed with a segmentation fault" in text
        assert text.count("skipped this cell") == 2
        assert h.respawns == 2
        context_ok(h)
        assert report["origins"]["get_scores"] == "crashy.ipynb, the 3rd code cell"
        assert not report["ok"]
    finally:
        h.close()


# --------------------------------------------------------------------------- the worker's world

WORLD = GOOD + textwrap.dedent('''
    import os
    import sys

    def modules():
        # every module object alive in the worker, whether sys.modules still lists it or not (the worker
        # takes hwcheck's own modules out of sys.modules, so that a student's checker.py can be imported)
        import gc
        import types
        objects = gc.get_objects()
        alive = {m.__name__ for m in objects if isinstance(m, types.ModuleType)}
        alive |= {f.__module__ for f in objects if isinstance(f, types.FunctionType) and f.__module__}
        return sorted(alive | set(sys.modules))

    def listed_modules():
        return sorted(sys.modules)

    def world():
        with open("/proc/self/environ", "rb") as f:
            raw = f.read().decode(errors="replace")
        return {"cwd": os.getcwd(), "env": dict(os.environ), "proc_environ": raw, "uid": os.getuid(),
                "listing": sorted(os.listdir("."))}

    def scribble(original):
        with open("world.py", "a") as f:
            f.write("\\n# changed by the student\\n")
        with open("world.py") as f:
            copy_changed = f.read().endswith("# changed by the student\\n")
        try:
            with open(original, "a") as f:
                f.write("\\n# changed through the absolute path\\n")
            wrote_original = True
        except OSError:
            wrote_original = False
        return copy_changed, wrote_original
''')


def test_worker_never_imports_the_secret_side(zyg, tmp_path):
    h, report = load(zyg, write(tmp_path, "world.py", WORLD))
    try:
        mods = h.call("modules")
        for secret in ("reference", "assignments", "checker.running.plugin", "checker.judging.scorecard", "checker.running.runner",
                       "checker.judging.compare", "pytest"):
            assert secret not in mods
        assert not [m for m in mods if m.startswith(("reference.", "assignments."))]
        assert {"checker.worker.serve", "checker.worker.loader", "checker.wire", "numpy", "torch"} <= set(mods)
        assert not [m for m in h.call("listed_modules") if m == "checker" or m.startswith("checker.")]
    finally:
        h.close()


def test_worker_cwd_and_environment(zyg, tmp_path):
    path = write(tmp_path, "world.py", WORLD)
    h, report = load(zyg, path)
    try:
        w = h.call("world")
        workdir = os.path.realpath(h.workdir)
        assert os.path.realpath(w["cwd"]).startswith(workdir + os.sep)
        assert os.path.realpath(w["cwd"]) != os.path.realpath(str(tmp_path))
        assert w["listing"] == ["world.py"]
        # no one else's: 0o700, or in the fallback walls (no CAP_SYS_ADMIN) 0o750, the worker's group reading only
        mode = os.stat(h.workdir).st_mode & 0o777
        assert mode & 0o027 == 0 and mode & 0o700 == 0o700, oct(mode)
        env = w["env"]
        # HWCHECK_WORKER=1: what tells a notebook's `checker.check()` cell it is being graded (a constant)
        assert set(env) <= {"PATH", "HOME", "TMPDIR", "LANG", "LC_ALL", "USER", "LOGNAME", "HWCHECK_WORKER"}, env
        assert env.get("HWCHECK_WORKER") == "1", env
        assert env["USER"] == env["LOGNAME"] == "nobody", env  # never the grader's own name
        # its scratch folder, the one it may write: a copy of the submission, not on sys.path
        assert env["HOME"] == env["TMPDIR"] == os.path.join(h.workdir, "scratch")
        assert os.path.realpath(w["cwd"]).startswith(os.path.join(workdir, "scratch") + os.sep)
        assert SECRET not in repr(env) and SECRET not in w["proc_environ"]
        assert "HOME=/root" not in w["proc_environ"] and os.path.expanduser("~") not in env.values()
    finally:
        h.close()
    assert not os.path.exists(workdir), "the private temp dir outlived its handle"


def test_submission_is_a_copy(zyg, tmp_path):
    path = write(tmp_path, "world.py", WORLD)
    before = sha256_of(path)
    h, report = load(zyg, path)
    try:
        copy_changed, wrote_original = h.call("scribble", path)
        assert copy_changed
        if landlock_abi():
            assert not wrote_original
    finally:
        h.close()
    if landlock_abi():
        assert sha256_of(path) == before


def test_a_failing_statement_in_a_cell_does_not_take_the_rest_of_the_cell_down(zyg, tmp_path):
    # the usual first cell: an import the grader lacks, then imports the functions need
    path = write(tmp_path, "hw.ipynb", notebook([
        "import numpy as np\nimport not_a_real_package_xyz\nimport math\nx = 1; y = 2",
        "undefined_helper()\n" + body_of_good(),
    ]))
    h, report = load(zyg, path)
    try:
        context_ok(h)  # defined after the failing line of cell 2
        assert h.call("get_scores", np.eye(2), np.ones(2)).tolist() == [1.0, 1.0]
        text = "\n".join(report["messages"])
        assert "hw.ipynb, the 1st code cell, line 2 raised ModuleNotFoundError" in text
        assert "hw.ipynb, the 2nd code cell, line 1 raised NameError" in text
        assert {"math", "x", "y", "get_scores"} <= set(report["names"])
    finally:
        h.close()


def test_missing_display_packages_are_stood_in_for(zyg, tmp_path):
    import importlib.util
    absent = [m for m in ("matplotlib", "seaborn", "tqdm") if importlib.util.find_spec(m) is None]
    if not absent:
        pytest.skip("matplotlib, seaborn and tqdm are all installed here: nothing to stand in for")
    path = write(tmp_path, "hw.ipynb", notebook([
        "import numpy as np\nimport math\nimport matplotlib.pyplot as plt\nimport seaborn as sns\nfrom tqdm.auto import tqdm",
        "fig, ax = plt.subplots(1, 2)\nax[0].imshow(np.eye(3)); plt.show()\nsns.heatmap(np.eye(2))\n"
        "total = sum(i for i in tqdm(range(4)))",
        body_of_good(),
    ]))
    h, report = load(zyg, path)
    try:
        context_ok(h)
        assert h.call("get_scores", np.eye(2), np.ones(2)).tolist() == [1.0, 1.0]
        text = "\n".join(report["messages"])
        for name in absent:
            assert f"`{name}` is not installed where the grader runs" in text
        assert "raised" not in text, text  # no cell failed
        assert "total" in report["names"]
    finally:
        h.close()


def test_a_stand_in_can_be_subclassed_indexed_and_called(zyg, tmp_path):
    """A missing display package's names stand in as a class: tqdm.notebook subclasses ipywidgets' HBox
    (`_Dummy() takes no arguments` was shown as the cell's error), a logger subclasses wandb's, plots set
    rcParams; every one of these lines does nothing and none fails."""
    import importlib.util
    if importlib.util.find_spec("wandb") is not None:
        pytest.skip("wandb is installed here: nothing to stand in for")
    cells = ["import numpy as np\nimport math\nimport wandb\n"
             "class Logger(wandb.Run):\n    def __init__(self, name):\n        super().__init__(name)\n"
             "logger = Logger('run')\nwandb.config['lr'] = 3e-4\nrun = wandb.init(project='hw', config={'a': 1})\n"
             "run.log({'loss': 1.0}); wandb.finish()\nfor part in wandb.Table:\n    pass\nsteps = 2"]
    bars = importlib.util.find_spec("ipywidgets") is None and importlib.util.find_spec("tqdm") is not None
    if bars:  # tqdm.notebook without ipywidgets: tqdm's text bars (its widgets bar failed in its first use)
        cells.append("from tqdm.notebook import tqdm, trange\nfrom tqdm.auto import tqdm as auto\n"
                     "steps = sum(1 for _ in tqdm(range(3))) + sum(1 for _ in trange(2)) + sum(1 for _ in auto([1]))")
    path = write(tmp_path, "hw.ipynb", notebook(cells + [body_of_good()]))
    h, report = load(zyg, path)
    try:
        context_ok(h)
        text = "\n".join(report["messages"])
        assert "`wandb` is not installed where the grader runs" in text
        assert "raised" not in text, text  # no cell failed
        assert {"logger", "run", "steps"} <= set(report["names"])
        if bars:
            assert h.call("get_scores", np.eye(2), np.ones(2)).tolist() == [1.0, 1.0]
            assert "`ipywidgets` is not installed where the grader runs" in text
    finally:
        h.close()


def test_a_class_under_another_name_is_pointed_out(zyg, tmp_path):
    path = write(tmp_path, "vit.py", "import torch.nn as nn\nfrom torch import Tensor\n\n\n"
                                     "class ViT(nn.Module):\n    pass\n\n\nclass Block(nn.Module):\n    pass\n")
    h, _report = load(zyg, path)
    try:
        with pytest.raises(MissingName) as e:
            h.new("VisionTransformer", (3, 8, 8), 4, 16, 2, 10)
        text = str(e.value)
        assert "Classes your submission defines: Block, ViT." in text  # not Tensor: it is imported
        assert "`VisionTransformer = ViT`" in text
    finally:
        h.close()


def test_defs_that_never_ran_are_told_apart_from_missing_ones(zyg, tmp_path):
    # a .py is imported: its main-guard block does not run; a def whose default argument fails, and one in
    # a `try:` block cut short by an error, never run either: each message says where the def is and why
    src = (GOOD.split("def split_heads")[0] + '\nif __name__ == "__main__":\n    print("demo")\n    def split_heads(W, num_heads):\n'
           "        return []\n    def w_o_shape(d_model, num_heads):\n        return (d_model, d_model)\n"
           "def concat_shape(seq_len, d_model, num_heads=H):\n    return (seq_len, d_model)\n"
           "try:\n    undefined_helper()\n    def head_output_shape(seq_len, d_model, num_heads):\n        return None\n"
           "except ImportError:\n    pass\n")
    h, report = load(zyg, write(tmp_path, "guarded.py", src))
    try:
        context_ok(h)
        with pytest.raises(MissingName) as e:
            h.call("split_heads", np.eye(2), 1)
        text = str(e.value)
        assert "`split_heads`, `w_o_shape` are defined in guarded.py, lines" in text
        assert 'inside `if __name__ == "__main__":`' in text and "move the defs to the top level" in text
        assert e.value.missing_names == ["split_heads"]
        with pytest.raises(MissingName, match=r"`w_o_shape` are defined"):  # one text for the group
            h.call("w_o_shape", 4, 2)
        with pytest.raises(MissingName, match=r"`concat_shape` is defined in guarded.py, line \d+, but running "
                                              r"that code stopped with an error"):
            h.call("concat_shape", 3, 4, 2)
        with pytest.raises(MissingName, match=r"`head_output_shape` is defined in guarded.py, line \d+, inside an "
                                              r"if/for/while/with/try block"):
            h.call("head_output_shape", 3, 4, 2)
        with pytest.raises(MissingName, match="`multi_head_attention` is not defined in your submission"):
            h.call("multi_head_attention", np.eye(2), np.eye(2), np.eye(2), np.eye(2), np.eye(2), 1)
    finally:
        h.close()


def test_a_notebook_runs_its_main_guard_as_jupyter_does(zyg, tmp_path):
    path = write(tmp_path, "guard.ipynb", notebook([
        "import math\nimport numpy as np",
        'if __name__ == "__main__":\n' + "\n".join("    " + ln for ln in body_of_good().splitlines()),
        "class Net:\n    pass",
    ]))
    h, report = load(zyg, path)
    try:
        context_ok(h)
        assert "Net" in h.classes  # a notebook's own class counts as written there (its module is __main__)
    finally:
        h.close()


def test_a_writefile_module_is_imported_as_the_cell_wrote_it_and_its_classes_are_the_students(zyg, tmp_path):
    """%%writefile puts the module in the worker's cwd, a scratch folder not on sys.path (a module the code
    writes itself is never imported from there): the loader serves the cell's own text, which the by-hand
    scan reads, whatever the file holds by the time of the import; its classes count as the student's."""
    path = write(tmp_path, "hw.ipynb", notebook([
        "%%writefile model.py\nclass Net:\n    def forward(self, x):\n        return 2 * x",
        "open('model.py', 'w').write('class Net:\\n    pass\\n')  # changed on disk before the import",
        "from model import Net\nimport math\nimport numpy as np\nDOUBLE = Net().forward(3)\n" + body_of_good(),
    ]))
    h, report = load(zyg, path)
    try:
        context_ok(h)
        assert "Net" in h.classes, (h.classes, report["messages"])
        assert "DOUBLE" in report["names"], report["messages"]  # the cell's Net, not the file's as changed
    finally:
        h.close()


def test_a_def_redefined_in_a_cell_run_earlier_is_pointed_out(zyg, tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": c, "source": src}
             for c, src in [(1, "import numpy as np"), (9, "def f(x):\n    return x + 1\n"),
                            (3, "def f(x):\n    return x\n"), (4, "def g(x):\n    return x\n"),
                            (5, "def g(x):\n    return 2 * x\n")]]
    path = tmp_path / "order.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    h, report = load(zyg, path)
    try:
        assert h.call("f", 1) == 1  # top to bottom: cell 3's f
        notes = [m for m in report["messages"] if "again, lower in the notebook" in m]
        assert len(notes) == 1, report["messages"]  # g was redefined in the order it ran: nothing to say
        # named as the notebook shows them: by their In [n]
        assert "`f` is defined in In [9] and again, lower in the notebook, in In [3]" in notes[0]
        assert "In [9] ran last" in notes[0]
        assert report["ok"]  # a note, not a failure
    finally:
        h.close()


def test_only_a_line_that_starts_a_statement_is_a_magic(zyg, tmp_path):
    """`!= 0` and `% n` continuing a bracketed condition (black's layout) are Python, not shell or magic
    lines; `%time STMT` and `y = %time EXPR` run as in IPython; `t = %timeit -o ...` is skipped and the
    NameError it causes later is told under it."""
    cells = [
        "import numpy as np\ndef f():\n    return 1",
        "def split_heads(W, num_heads):\n    if (W.shape[1]\n            % num_heads\n            != 0):\n"
        "        raise ValueError('not divisible')\n    return np.split(W, num_heads, axis=1)",
        '%time a = f() + 1\nb = %time f() + 2\nt = %timeit -o f()\ntext = """\n!not a shell line\n"""',
        "speed = t.average",
    ]
    path = write(tmp_path, "hw.ipynb", notebook(cells))
    h, report = load(zyg, path)
    try:
        assert [b.shape for b in h.call("split_heads", np.ones((2, 4)), 2)] == [(2, 2), (2, 2)]
        text = "\n".join(report["messages"])
        assert "!= 0" not in text and "% num_heads" not in text and "!not" not in text, text
        assert {"a", "b", "text"} <= set(report["origins"]), report["origins"]
        skipped = [m for m in report["messages"] if "t = %timeit -o f()" in m]
        assert len(skipped) == 1 and "then 1 later statement failed" in skipped[0] and "the 4th code cell" in skipped[0]
        assert "NameError" not in text, text
    finally:
        h.close()


def test_a_def_that_two_files_of_a_folder_define_differently_is_pointed_out(zyg, tmp_path):
    write(tmp_path / "sub", "homework.ipynb", notebook(["def f(x):\n    return x + 1", "def g(x):\n    return 2 * x"]))
    write(tmp_path / "sub", "scratch.ipynb", notebook(["def f(x):\n    return x", "def g(x):\n    return 2 * x"]))
    h, report = load(zyg, tmp_path / "sub")
    try:
        assert h.call("f", 1) == 1  # name order: scratch.ipynb runs last
        notes = [m for m in report["messages"] if "differently" in m]
        assert len(notes) == 1, report["messages"]  # g is the same in both: nothing to say
        assert notes[0].startswith("`f` is defined in homework.ipynb, the 1st code cell") and "scratch.ipynb is graded" in notes[0]
        assert report["ok"]
        # and grades.csv's note says it (a TA skimming the gradebook: the scratch copy was graded)
        from checker.running.runner import skipped_in_load
        assert [m["text"] for m in h.load_messages if m.get("kind") == "other_file"] == notes
        assert any(s.startswith("`f` is defined in homework.ipynb") for s in skipped_in_load(h.load_messages))
    finally:
        h.close()


def test_a_dataclass_under_postponed_annotations_loads(zyg, tmp_path):
    """`from __future__ import annotations` makes dataclasses look the defining module up in sys.modules:
    the namespace a .py file or a notebook runs in is a registered module."""
    src = ("from __future__ import annotations\nfrom dataclasses import dataclass\nimport pickle\n\n"
           "@dataclass\nclass Config:\n    width: int = 4\n    heads: int = 2\n\n"
           "def width():\n    return Config().width\n\n"
           "def round_trip():\n    return pickle.loads(pickle.dumps(Config(heads=3))).heads\n")
    for path in (write(tmp_path, "hw.py", src), write(tmp_path, "hw.ipynb", notebook([src]))):
        h, report = load(zyg, path)
        try:
            assert report["ok"], report["messages"]
            assert h.call("width") == 4 and h.call("round_trip") == 3
        finally:
            h.close()


def test_failing_calls_are_named_with_their_arguments_shapes():
    import torch

    from checker.running.sandbox import call_text
    assert call_text("split_heads", (np.zeros((4, 6)), 4), {}) == "split_heads(array (4, 6) float64, 4)"
    assert call_text("f", (torch.zeros(3, dtype=torch.float32), [1, 2], "ab", None), {"eps": 1e-5}) == \
        "f(tensor (3,) float32, [1, 2], 'ab', None, eps=1e-05)"
    # sizes show as they are (a patch of (4, 6)); longer or non-number sequences by their length
    assert call_text("patchify", (torch.zeros(2, 3, 8, 12, dtype=torch.float64), (4, 6))) == \
        "patchify(tensor (2, 3, 8, 12) float64, (4, 6))"
    assert call_text("g", ([1, 2, 3, 4, 5], ("a", "b"))) == "g(a list of 5, a tuple of 2)"
    assert len(call_text("g", (np.zeros(2),) * 40)) == 160


def test_old_and_odd_notebooks_load_or_say_why(zyg, tmp_path):
    """nbformat 3 (code in `input`, cells in worksheets), a UTF-8 byte order mark, and files that are no notebook."""
    v3 = {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [
        {"cell_type": "markdown", "source": "# Homework"},
        {"cell_type": "code", "language": "python", "input": "import math\nimport numpy as np",
         "prompt_number": 1, "outputs": []},
        {"cell_type": "code", "language": "python", "input": body_of_good().splitlines(True),
         "prompt_number": 2, "outputs": []}]}]}
    bom = "\ufeff" + notebook(["import math\nimport numpy as np", body_of_good()])
    for name, text in [("old.ipynb", json.dumps(v3)), ("bom.ipynb", bom)]:
        path = tmp_path / name
        path.write_bytes(text.encode("utf-8"))
        h, report = load(zyg, path)
        try:
            assert report["ok"], (name, report["messages"])
            context_ok(h)
        finally:
            h.close()
    broken = {"trunc.ipynb": '{"cells": [{"cell_type": "code", "source": "x = 1"',
              "list.ipynb": "[1, 2, 3]",
              "deep.ipynb": "[" * 100000 + "]" * 100000,
              "script.ipynb": "import numpy as np\ndef get_scores(m, v):\n    return m @ v\n",
              "blank.ipynb": ""}
    for name, text in broken.items():
        path = tmp_path / name
        path.write_text(text)
        h, report = load(zyg, path)
        try:
            text = "\n".join(report["messages"])
            assert f"could not read {name}" in text and "save it again" in text, (name, text)
            assert "Error:" not in text and "Traceback" not in text, (name, text)  # words, not exception names
        finally:
            h.close()
        if name == "script.ipynb":
            assert "it looks like Python code: name it .py" in text


def test_an_archive_or_a_pdf_handed_in_is_named_as_such(zyg, tmp_path):
    import zipfile
    with zipfile.ZipFile(tmp_path / "homework.zip", "w") as z:
        z.writestr("homework/attention.py", GOOD)
    (tmp_path / "homework.ipynb").write_bytes(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    for name, kind in [("homework.zip", "a zip archive (unzip it first)"), ("homework.ipynb", "a PDF document")]:
        h, report = load(zyg, tmp_path / name)
        try:
            text = "\n".join(report["messages"])
            assert f"could not read {name}: it is {kind}, not Python code" in text, text
            assert "encoding" not in text
        finally:
            h.close()


def test_a_function_name_rebound_to_its_result_is_told_with_the_cell(zyg, tmp_path):
    """`context_vector = context_vector(H_E, h_d)` in a notebook: the name holds an array, not the function."""
    from checker.errors import StudentError
    path = write(tmp_path, "rebound.ipynb", notebook([
        "import math\nimport numpy as np", body_of_good(),
        "H = np.eye(3)\nh = np.ones(3)\ncontext_vector = context_vector(H, h)\nprint(context_vector)"]))
    h, report = load(zyg, path)
    try:
        with pytest.raises(StudentError) as e:
            h.call("context_vector", np.array(H_E), np.array(H_D1))
        assert "`context_vector` holds a numpy.ndarray, not a function" in e.value.message
        assert "rebound.ipynb, the 3rd code cell gives the name that value" in e.value.message
    finally:
        h.close()


def test_a_name_assigned_in_a_later_cell_that_ran_earlier_is_explained(zyg, tmp_path):
    cells = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": c, "source": src}
             for c, src in [(1, "import numpy as np"), (4, "def f(x, k=K):\n    return x * k\n"),
                            (2, "K = 3"), (3, "def g():\n    return missing_name\n\ng()")]]
    path = tmp_path / "order2.ipynb"
    path.write_text(json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells}))
    h, report = load(zyg, path)
    try:
        text = "\n".join(report["messages"])
        assert "order2.ipynb, In [4], line 1 raised NameError: name 'K' is not defined" in text, text
        assert "`K` is assigned in In [2], below this one; in your notebook it ran before this one. " in text, text
        assert "Restart & Run All" in text
        assert text.count("below this one") == 1  # missing_name is assigned nowhere: no such note
    finally:
        h.close()


def test_a_missing_package_is_told_once_for_all_its_imports(zyg, tmp_path):
    path = write(tmp_path, "colab.ipynb", notebook([
        "import math\nimport numpy as np\nimport not_a_pkg_xyz\nimport not_a_pkg_xyz.sub as S\nfrom not_a_pkg_xyz import f",
        body_of_good()]))
    h, report = load(zyg, path)
    try:
        errors = [m for m in report["messages"] if "ModuleNotFoundError" in m]
        assert len(errors) == 1, report["messages"]
        assert "`not_a_pkg_xyz` is neither a file of your submission nor a package installed" in errors[0]
        assert "then 2 later statements failed" in errors[0]
        context_ok(h)
    finally:
        h.close()
