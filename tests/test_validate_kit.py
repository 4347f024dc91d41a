"""`hwcheck validate`'s kit check: the kit built from an assignment ships no code that computes an answer
(issue 29 item 3; checker.platforms.kit_probe builds the kit into a temporary folder and probes it out of process).

* every built-in assignment's kit: the probe ran (fresh inputs of its graded functions, every shipped
  function; one probe for all of them) and found nothing;
* a course's copy of attention whose folder ships a helper with a real softmax and its answer models
  under another name than `_answers.py`: `hwcheck validate` fails, naming each file and function;
* a probe that hangs or crashes is a problem with a message, not a traceback.
"""

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from checker.spec import assignment_dir, assignment_ids, load_spec, reference_file

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HWCHECK = [sys.executable, "-m", "checker.cli"]
BUILT_IN = [a for a in assignment_ids() if os.path.dirname(assignment_dir(a)) == os.path.join(REPO, "assignments")]

SOFTMAX_HELPER = textwrap.dedent('''\
    """Plotting helpers for the handout (an author's slip: one of them is a real softmax)."""
    import numpy as np


    def normalised_scores(scores, axis=-1):
        s = np.asarray(scores, dtype=np.float64)
        e = np.exp(s - s.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)


    def rescale(scores, n):
        return np.asarray(scores) * 2.0  # not an answer: no hit
''')


def _answer_cases():
    """Fresh inputs (never the public tests' own) of each reference function whose answer is an array of
    floats, with the reference's answers to them: what no code of the kit may compute."""
    import base64

    import numpy as np
    import torch

    import importlib

    from checker.spec import load_spec
    att, lm, vit = (importlib.import_module(load_spec(a)["reference"]) for a in ("attention", "charlm", "vit"))
    from checker import wire
    rng = np.random.default_rng(20261126)
    r = lambda *shape: rng.standard_normal(shape)  # noqa: E731
    t = lambda *shape: torch.from_numpy(rng.standard_normal(shape))  # noqa: E731
    X, Wq, Wk, Wv, W6 = r(5, 4), r(4, 3), r(4, 3), r(4, 5), [r(6, 6) for _ in range(4)]
    Q, K, V = t(2, 5, 4), t(2, 5, 4), t(2, 5, 3)
    x_ln = t(3, 6)
    cases = [("attention.get_scores", att.get_scores, (r(5, 3), r(3))),
             ("attention.scale_scores", att.scale_scores, (r(5), 7)),
             ("attention.get_attention_weights (1-D)", att.get_attention_weights, (r(5),)),
             ("attention.get_attention_weights (2-D)", att.get_attention_weights, (r(3, 5),)),
             ("attention.get_context_vector", att.get_context_vector, (rng.dirichlet(np.ones(4)), r(4, 6))),
             ("attention.context_vector", att.context_vector, (r(4, 6), r(6))),
             ("attention.self_attention", att.self_attention, (X, Wq, Wk, Wv)),
             ("attention.self_attention_token", att.self_attention_token, (X, Wq, Wk, Wv, 2)),
             ("attention.split_heads", lambda W, h: np.stack(att.split_heads(W, h)), (r(4, 6), 3)),
             ("attention.multi_head_attention", att.multi_head_attention, (r(5, 6), *W6, 3)),
             ("charlm.masked_attention", lm.masked_attention, (Q, K, V)),
             ("charlm.layer_norm", lm.layer_norm, (x_ln, 1e-5)),
             ("charlm.layer_norm (default eps)", lm.layer_norm, (x_ln,)),
             ("charlm.sinusoidal_positions", lm.sinusoidal_positions, (7, 6)),
             ("vit.patchify", vit.patchify, (t(2, 3, 8, 12), 4))]

    def pack(value):
        obj, bufs = wire.encode(value)
        return {"value": obj, "bufs": [base64.b64encode(bytes(b)).decode() for b in bufs]}
    out = []
    for name, fn, args in cases:
        answer = fn(*args)
        answer = answer.numpy() if isinstance(answer, torch.Tensor) else np.asarray(answer)
        assert answer.dtype.kind == "f" and answer.size >= 4, name
        out.append({"name": name, "args": pack(tuple(args)), "answer": pack(answer)})
    return out


# a planted control: the probe must find these (and only these, of the control's functions)
PLANTED = '''
import numpy as np
def _helper_with_defaults(s, axis=-1, shift=True):
    s = np.asarray(s, dtype=np.float64)
    e = np.exp(s - s.max(axis=axis, keepdims=True)) if shift else np.exp(s)
    return e / e.sum(axis=axis, keepdims=True)
def _needs_more_arguments(Q, K, V, scale, mask, dim):
    import torch
    s = (Q @ K.transpose(-2, -1)) * scale
    if mask is not None:
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=dim) @ V
def _only_mistakes(s):
    return [("not a softmax", s / np.abs(s).sum(axis=-1, keepdims=True))]
'''


@pytest.mark.slow
def test_the_kit_of_every_built_in_assignment_computes_no_answer(tmp_path):
    """`hwcheck validate`'s kit check of every built-in assignment (test_authoring runs the others): its static
    part (no hidden test in the kit) and its probe, one probe of one kit with every assignment's answers
    recorded and every assignment's cases (the kit's code is the same for each). The same run probes fresh
    inputs of Q1-Q3, masked_attention, layer_norm, sinusoidal_positions and patchify made here (and what their
    shapes suggest for more arguments): a hint's mistaken answers are recorded, like the expected values, so the
    helpers that computed them (`_softmax`, `_mistaken_context(enc, dec)` with its defaults, `_attend`) are not
    in the kit; and a planted control, which it must find (and only its functions that compute an answer)."""
    from checker.platforms.kit_check import probe_kit
    from checker.platforms.validate import kit_problems
    for aid in BUILT_IN:
        assert kit_problems(aid) == [], aid
    planted = tmp_path / "planted.py"
    planted.write_text(PLANTED)
    ours = _answer_cases()
    found = probe_kit(BUILT_IN, more_cases=ours, extra=[planted])
    recorded = [c for aid in BUILT_IN for c in found["cases_by_assignment"][aid]]
    assert found["cases"] == recorded + [c["name"] for c in ours]
    for aid in BUILT_IN:
        graded = {n for q in load_spec(aid)["questions"] if not q["manual"] for n in q["names"]}
        probed = {c.split(" ")[0] for c in found["cases_by_assignment"][aid]}
        assert probed and probed <= graded, (aid, found["cases_by_assignment"])
    assert found["functions"] > 500 and not found["not_imported"], found
    planted_hits = {(h["function"].rsplit(".", 1)[-1], h["answer"]) for h in found["hits"]
                    if "_probe_extra_" in h["function"]}
    # a softmax with defaults answers get_attention_weights (a recorded case or one made here: the first found)
    assert any(f == "_helper_with_defaults" and "get_attention_weights" in a for f, a in planted_hits), found["hits"]
    assert "_needs_more_arguments" in {f for f, _ in planted_hits}, found["hits"]
    assert "_only_mistakes" not in {f for f, _ in planted_hits}, found["hits"]
    shipped = sorted({f"{h['function']} gives {h['answer']}" for h in found["hits"]
                      if "_probe_extra_" not in h["function"]})
    assert not shipped, shipped


@pytest.mark.slow
def test_validate_names_shipped_code_that_computes_an_answer(tmp_path):
    folder = tmp_path / "course" / "attnleak"
    shutil.copytree(assignment_dir("attention"), folder,
                    ignore=shutil.ignore_patterns("__pycache__", "recorded.json", "examples", "reference.py"))
    spec = (folder / "spec.toml").read_text()
    (folder / "spec.toml").write_text(spec.replace('id = "attention"', 'id = "attnleak"'))
    with open(reference_file(load_spec("attention")), encoding="utf-8") as f:
        (folder / "reference.py").write_text(f.read())
    (folder / "plots.py").write_text(SOFTMAX_HELPER)
    # the answer models under a name the kit does not leave out (it leaves out `_answers.py` only)
    shutil.copy(folder / "_answers.py", folder / "answer_models.py")
    env = dict(os.environ, HWCHECK_ASSIGNMENTS=str(folder), PYTHONPATH=REPO)
    r = subprocess.run(HWCHECK + ["validate", str(folder), "--skip", "reference", "--skip", "examples"],
                       capture_output=True, text=True, env=env, cwd=REPO, timeout=1500)
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    assert "Traceback" not in out, out
    assert "attnleak: spec: ok" in out and "attnleak: handout: ok" in out, out
    assert ("the kit ships code that computes an answer: assignments.attnleak.plots.normalised_scores "
            "(assignments/attnleak/plots.py) returns the reference's answer of get_attention_weights") in out, out
    assert "assignments.attnleak.answer_models.softmax (assignments/attnleak/answer_models.py)" in out, out
    assert "plots.rescale" not in out, out
    # the assignment's own _answers.py is not in the kit, so nothing of it is named
    assert "attnleak._answers" not in out and "_answers.py)" not in out, out


def _fake_kit(root, module_source):
    """A folder shaped like a kit (the kit's checker.wire) with one more module."""
    (root / "checker").mkdir(parents=True)
    (root / "checker" / "__init__.py").write_text("")
    shutil.copy(os.path.join(REPO, "checker", "wire.py"), root / "checker" / "wire.py")
    shutil.copy(os.path.join(REPO, "checker", "errors.py"), root / "checker" / "errors.py")
    (root / "extra.py").write_text(module_source)
    from checker.running.recorded import _pack
    import numpy as np
    x = np.arange(6.0).reshape(2, 3)
    cases = root.parent / "cases.json"
    cases.write_text(json.dumps([{"name": "double 2x3", "args": _pack("double", (x,)), "answer": _pack("double", x * 2),
                                  "rtol": 1e-7, "atol": 1e-7}]))
    return cases


def test_a_probe_that_finds_a_hit_reports_it_with_its_file(tmp_path):
    from checker.platforms.kit_check import run_probe
    cases = _fake_kit(tmp_path / "kit", "def twice(a):\n    return a * 2\n\ndef thrice(a):\n    return a * 3\n")
    summary, hits = run_probe(tmp_path / "kit", cases, tmp_path / "hits.jsonl", timeout=300)
    assert [(h["function"], h["file"], h["answer"]) for h in hits] == [("extra.twice", "extra.py", "double 2x3")]
    assert summary["functions"] >= 2 and not summary["not_imported"], summary


def test_a_probe_that_hangs_is_a_problem_with_a_message(tmp_path):
    from checker.errors import HwcheckError
    from checker.platforms.kit_check import run_probe
    cases = _fake_kit(tmp_path / "kit", "import threading\nthreading.Event().wait()\n")  # its import never ends
    with pytest.raises(HwcheckError, match=r"the kit probe \(checker/platforms/kit_probe.py\) did not finish in 3 s"):
        run_probe(tmp_path / "kit", cases, tmp_path / "hits.jsonl", timeout=3)


def test_a_probe_that_crashes_is_a_problem_with_a_message(tmp_path):
    from checker.errors import HwcheckError
    from checker.platforms.kit_check import run_probe
    cases = _fake_kit(tmp_path / "kit", "")
    os.remove(tmp_path / "kit" / "checker" / "wire.py")  # no wire: the probe cannot read its cases
    with pytest.raises(HwcheckError, match=r"the kit probe \(checker/platforms/kit_probe.py\) failed \(exit status 1\): "
                                           r"ImportError: cannot import name .wire. from .checker."):
        run_probe(tmp_path / "kit", cases, tmp_path / "hits.jsonl", timeout=300)


def test_a_probed_function_cannot_fork(tmp_path):
    """A probed function that forks is refused (os.fork raises): the child would go on probing beside its parent
    until the time limit (hwcheck's own fork_init did so, a minute per probe of a kit)."""
    from checker.platforms.kit_check import run_probe
    marker = tmp_path / "forked"
    cases = _fake_kit(tmp_path / "kit", textwrap.dedent(f'''\
        import os


        def spawn(a):
            if os.fork() == 0:
                open({str(marker)!r}, "a").close()
                os._exit(0)
            os.wait()
            return a * 3


        def twice(a):
            return a * 2
    '''))
    summary, hits = run_probe(tmp_path / "kit", cases, tmp_path / "hits.jsonl", timeout=300)
    assert [h["function"] for h in hits] == ["extra.twice"], hits  # the probe went on after the refusal
    assert not marker.exists()


def test_a_probed_function_that_asks_for_the_temp_dir_leaves_nothing_in_it(tmp_path, monkeypatch):
    """In the probe's children removing files is refused, so Python's first look for the temp dir (it writes
    a file there, then removes it) left that file behind, in every temp dir it tried, at every probed call
    that asked: thousands of files in /tmp per `hwcheck validate`. The probe's temp dir is its own folder."""
    from checker.platforms.kit_check import run_probe
    system_tmp = tmp_path / "tmp"
    system_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(system_tmp))  # the probe's process finds its temp dir from this
    cases = _fake_kit(tmp_path / "kit", textwrap.dedent('''\
        import tempfile


        def where(a):
            return tempfile.gettempdir()


        def scratch(a):
            fd, path = tempfile.mkstemp()
            return path


        def twice(a):
            return a * 2
    '''))
    summary, hits = run_probe(tmp_path / "kit", cases, tmp_path / "hits.jsonl", timeout=300)
    assert [h["function"] for h in hits] == ["extra.twice"], hits
    assert summary["functions"] >= 3, summary
    assert sorted(os.listdir(system_tmp)) == []
