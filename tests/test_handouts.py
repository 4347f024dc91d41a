"""Checks of the student handouts: each assignment folder's README.md and starter.ipynb.

Every assignment hwcheck finds (checker.spec: the built-in ones, HWCHECK_ASSIGNMENTS, entry points) is
checked, its questions, names and points read from its spec. Executing the starters needs whatever they
import (numpy, torch), which the project depends on.
"""

from __future__ import annotations

import inspect
import json
import os
import re
from pathlib import Path

import pytest

from checker.spec import assignment_dir, assignment_ids, load_spec

ASSIGNMENTS = assignment_ids()
# a starter notebook is optional for an assignment (docs/authoring.md); every built-in one has one
WITH_STARTER = [a for a in ASSIGNMENTS if os.path.isfile(os.path.join(assignment_dir(a), "starter.ipynb"))]


def folder(aid):
    return Path(assignment_dir(aid))


def load_notebook(aid):
    with open(folder(aid) / "starter.ipynb", encoding="utf-8") as f:
        return json.load(f)


def cell_source(cell):
    src = cell["source"]
    return src if isinstance(src, str) else "".join(src)


def run_starter(aid):
    """Execute the starter's code cells in order in one fresh namespace."""
    nb = load_notebook(aid)
    ns = {"__name__": "__main__"}
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code":
            exec(compile(cell_source(cell), f"<{aid} starter cell {i}>", "exec"), ns)
    return ns


def readme(aid):
    return (folder(aid) / "README.md").read_text(encoding="utf-8")


def spec_names(aid):
    return [n for q in load_spec(aid)["questions"] for n in q.get("names", [])]


@pytest.mark.parametrize("aid", WITH_STARTER)
def test_starter_is_nbformat4(aid):
    nb = load_notebook(aid)
    assert nb["nbformat"] == 4
    assert isinstance(nb["nbformat_minor"], int) and nb["nbformat_minor"] >= 5
    assert nb["metadata"]["kernelspec"]["language"] == "python"
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    ids = set()
    assert nb["cells"], "empty notebook"
    for cell in nb["cells"]:
        assert cell["cell_type"] in ("markdown", "code")
        assert isinstance(cell["metadata"], dict)
        assert isinstance(cell["source"], list)
        assert all(isinstance(line, str) for line in cell["source"])
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", cell["id"]), cell["id"]
        assert cell["id"] not in ids, f"duplicate cell id {cell['id']}"
        ids.add(cell["id"])
        if cell["cell_type"] == "code":
            assert cell["execution_count"] is None
            assert cell["outputs"] == []
            src = cell_source(cell)
            # Nothing the grader's machine cannot run.
            assert not re.search(r"^\s*[!%]", src, re.M), "shell/magic line in starter"
    assert nb["cells"][0]["cell_type"] == "markdown"


@pytest.mark.parametrize("aid", WITH_STARTER)
def test_starter_runs_and_defines_every_name(aid):
    ns = run_starter(aid)
    missing = [n for n in spec_names(aid) if n not in ns]
    assert not missing, f"starter of {aid} does not define {missing}"


def _signature_params(text, name):
    """Parameter list of `name(...)` at the start of a spec signature string."""
    m = re.match(re.escape(name) + r"\(([^)]*)\)", text.strip())
    assert m, f"cannot parse spec signature {text!r}"
    params = []
    for part in filter(None, (p.strip() for p in m.group(1).split(","))):
        pname, _, default = part.partition("=")
        params.append((pname.strip(), default.strip() or None))
    return params


@pytest.mark.parametrize("aid", WITH_STARTER)
def test_starter_signatures_match_spec(aid):
    ns = run_starter(aid)
    for q in load_spec(aid)["questions"]:
        for name, sig_text in q.get("signatures", {}).items():
            obj = ns[name]
            if inspect.isclass(obj):
                import torch.nn as nn  # only the torch starters define classes

                assert issubclass(obj, nn.Module), f"{name} is not an nn.Module"
                assert "forward" in vars(obj), f"{name} defines no forward"
                sig = inspect.signature(obj.__init__)
                got = list(sig.parameters.values())[1:]  # drop self
            else:
                got = list(inspect.signature(obj).parameters.values())
            want = _signature_params(sig_text, name)
            assert [p.name for p in got] == [w[0] for w in want], (name, got, want)
            for p, (_, default) in zip(got, want):
                if default is None:
                    assert p.default is inspect.Parameter.empty, (name, p)
                else:
                    assert p.default == eval(default), (name, p, default)


@pytest.mark.parametrize("aid", WITH_STARTER)
def test_starter_stubs_raise_not_implemented(aid):
    ns = run_starter(aid)
    for name in spec_names(aid):
        obj = ns[name]
        if inspect.isclass(obj):
            params = list(inspect.signature(obj.__init__).parameters.values())[1:]
            inst = obj(*[2 for p in params if p.default is inspect.Parameter.empty])
            target = inst.forward
        else:
            target = obj
        nargs = sum(
            1
            for p in inspect.signature(target).parameters.values()
            if p.default is inspect.Parameter.empty
        )
        with pytest.raises(NotImplementedError):
            target(*[None] * nargs)


@pytest.mark.parametrize("aid", ASSIGNMENTS)
def test_readme_mentions_every_name_and_question(aid):
    text = readme(aid)
    for name in spec_names(aid):
        assert f"`{name}" in text, f"README of {aid} does not mention {name}"
    lines = text.splitlines()
    for q in load_spec(aid)["questions"]:
        qid, pts = q["id"], q["points"]
        pattern = re.compile(r"`" + re.escape(qid) + r"`.*\b" + str(pts) + r" points\b")
        assert any(pattern.search(line) for line in lines), (
            f"README of {aid} has no line naming `{qid}` with {pts} points"
        )
        # Each question also has its own section heading.
        assert any(
            line.startswith("#") and f"`{qid}`" in line and f"{pts} points" in line
            for line in lines
        ), f"README of {aid} has no section for `{qid}` ({pts} points)"
    assert "hwcheck check" in text and f"-a {aid}" in text
    assert "hidden" in text.lower()


def test_attention_handout_data_matches_readme():
    """The data cell of the starter and the README's code block are the same arrays."""
    import numpy as np

    text = readme("attention")
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    data_blocks = [b for b in blocks if "H_e =" in b]
    assert len(data_blocks) == 1
    from_readme = {}
    exec(data_blocks[0], from_readme)
    ns = run_starter("attention")
    shapes = {"H_e": (4, 4), "H_d": (2, 4), "W_Q": (4, 4), "W_K": (4, 4), "W_V": (4, 4), "X": (3, 4)}
    for name, shape in shapes.items():
        a, b = np.asarray(ns[name]), np.asarray(from_readme[name])
        assert a.shape == shape and a.dtype == np.float64, name
        assert np.array_equal(a, b), name
    # Spot values from the homework contract.
    assert ns["H_e"][3].tolist() == [0.03, 0.85, -0.41, 0.76]
    assert ns["W_V"][3].tolist() == [-0.92, 0.37, 0.28, -0.50]
    assert ns["X"][2].tolist() == [0.03, -0.99, 0.42, 0.11]
    # The handout's check value (scores of decoder state 2) holds for this data.
    assert np.allclose(ns["H_e"] @ ns["H_d"][1], [-0.6053, -0.7374, -0.2628, 0.977], atol=1e-4)


def test_attention_readme_has_free_text_prompt():
    spec = load_spec("attention")
    (manual,) = [q for q in spec["questions"] if q.get("manual")]
    assert manual["prompt"] in " ".join(readme("attention").replace(">", " ").split())
    nb = load_notebook("attention")
    assert any(
        c["cell_type"] == "markdown" and manual["id"] in cell_source(c) for c in nb["cells"]
    )
