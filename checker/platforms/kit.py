"""The student kit: hwcheck without the reference solutions and without the hidden tests.

What it is for: `hwcheck check` computes expected values by calling the
reference solutions, so the full package cannot be given to students.
`build_kit(outdir)` writes a source tree students can `pip install` instead:
each assignment's `reference.py` is left out; in its place the assignment carries
`recorded.json`, the reference's answers to the public tests, recorded by
running those tests once with the public seed (`RecordingRef`). Hidden test
functions are cut out of the test files, and then every module-level helper
of the test modules that nothing shipped references any more
(`checker.platforms.kit_files.unreferenced_pruned`: a helper only a hidden
test used may compute its answer). In the kit the `ref` fixture is a
`ReplayRef` that hands back the recorded answer of each call, in order; a
check whose answers were not recorded (a CUDA variant, say) is skipped with
the reason.

The grading tests' own models of answers (a softmax to make inputs with, the
known mistakes a hint names: each a step or an argument away from a right
answer) live in `assignments/<id>/_answers.py`, which the kit does not ship:
a test file reaches them through `Answers`, which computes them in the full
package, records each result (keyed by the function's name and its
arguments) while the kit is built, and replays it in the kit, so the kit's
public checks give the same verdicts, messages and hints without any code
that computes an answer.

For `hwcheck validate`'s kit probe (checker.platforms.kit_probe, which runs the kit's code out of process)
this module makes, on the trusted side, what the probe compares with: `capturing_calls` records the public
tests' calls of the reference while the kit is built, `answer_cases` the reference's answers to fresh
inputs of those shapes, and `returned_answer_hits` runs the reference on the inputs a shipped helper
returned (decoded data only) to see whether the helper returned the answer beside them.

What it is not: a secret keeper for the public answers (they are in the kit
in plain sight, as public test expectations are) or a grader: grading with
hidden tests needs the full package.
"""

import ast
import base64
import contextlib
import importlib
import inspect
import json
import os
import shutil

from checker import wire

from checker.running.recorded import ANSWER_MODELS, HIDDEN_COUNTS, RECORDED

__all__ = ["build_kit", "record_public", "capturing_calls", "answer_cases", "returned_answer_hits", "CASES_PER_FUNCTION"]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # checker/platforms/..


def _strip_hidden(source, hidden):
    """The test file's source without the hidden test functions (and their decorators)."""
    tree = ast.parse(source)
    lines = source.splitlines(keepends=True)
    cut = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in hidden:
            start = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            cut.update(range(start - 1, node.end_lineno))
    return "".join(line for i, line in enumerate(lines) if i not in cut)


def _prune_folder(folder, tests, packages):
    """Cut the kit's copy of an assignment folder's test modules down to what its public tests reference
    (`checker.platforms.kit_files.unreferenced_pruned`): no helper that only a hidden test used is shipped."""
    from checker.platforms.kit_files import local_imports, unreferenced_pruned
    sources = {}
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(f for f in files if f.endswith(".py")):
            with open(os.path.join(root, name), encoding="utf-8") as f:
                sources[os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")] = f.read()
    starts = list(tests) + ["conftest.py"]
    for path, source in unreferenced_pruned(sources, local_imports(sources, starts, packages)).items():
        if source != sources[path]:
            with open(os.path.join(folder, *path.split("/")), "w", encoding="utf-8") as f:
                f.write(source)


def build_kit(outdir, record, package=None):
    """Write the student kit into `outdir`; `record(aid)` returns the recorded answers of an assignment.

    package: the pip spec the kit will be published as; written to
    `checker/kit.json` for `hwcheck init-ci` (see `checker.platforms.ci.kit_package`) and into the
    student README. The kit's pyproject.toml and README.md come from `checker.platforms.kit_files`.
    """
    from checker.spec import ASSIGNMENTS_DIR, assignment_ids, load_spec, grading_test_files
    if os.path.exists(outdir) and os.listdir(outdir):
        raise FileExistsError(f"{outdir} exists and is not empty")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", RECORDED, ANSWER_MODELS)
    shutil.copytree(os.path.join(ROOT, "checker"), os.path.join(outdir, "checker"), ignore=ignore,
                    dirs_exist_ok=True)
    # an assignment's own reference.py and example submissions never go into the kit (issue 29)
    folder_ignore = shutil.ignore_patterns("__pycache__", "*.pyc", RECORDED, ANSWER_MODELS, "reference.py",
                                           "examples")
    shutil.copytree(ASSIGNMENTS_DIR, os.path.join(outdir, "assignments"), ignore=folder_ignore)
    from checker.spec import assignment_dirs, is_builtin
    for aid, folder in assignment_dirs().items():  # a course's own (HWCHECK_ASSIGNMENTS, entry points)
        if not is_builtin(aid):
            shutil.copytree(folder, os.path.join(outdir, "assignments", aid), ignore=folder_ignore)
    for aid in assignment_ids():
        spec = load_spec(aid)
        hidden = {t for q in spec["questions"] for t in q.get("hidden_tests", [])}
        for path in grading_test_files(spec):
            with open(path, encoding="utf-8") as f:
                source = f.read()
            target = os.path.join(outdir, "assignments", aid, os.path.basename(path))
            with open(target, "w", encoding="utf-8") as f:
                f.write(_strip_hidden(source, hidden))
        _prune_folder(os.path.join(outdir, "assignments", aid), [os.path.basename(p) for p in grading_test_files(spec)],
                      [f"assignments.{aid}"])
        with open(os.path.join(outdir, "assignments", aid, RECORDED), "w", encoding="utf-8") as f:
            json.dump(record(aid), f)
    from checker.platforms.ci import KIT_FILE, _value
    from checker.platforms.kit_files import kit_pyproject, kit_readme
    # kit.json marks this copy as the student kit (the CLI then offers no `kit` nor `grade`), and says
    # where it is published for `hwcheck init-ci`
    with open(os.path.join(outdir, "checker", KIT_FILE), "w", encoding="utf-8") as f:
        json.dump({"student_kit": True, **({"package": _value("package", package)} if package else {})}, f)
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        pyproject = kit_pyproject(f.read())
    with open(os.path.join(outdir, "pyproject.toml"), "w", encoding="utf-8") as f:
        f.write(pyproject)
    titles = [(aid, load_spec(aid).get("title", aid)) for aid in assignment_ids()]
    with open(os.path.join(outdir, "README.md"), "w", encoding="utf-8") as f:
        f.write(kit_readme(titles, package))
    return outdir


def record_public(aid, grader):
    """Grade the reference on the public tests, recording every answer the tests ask of it."""
    import importlib.util

    from checker.errors import HwcheckError
    from checker.spec import load_spec
    spec = load_spec(aid)
    store = {}
    grader.record = store
    try:
        card = grader.grade(importlib.util.find_spec(spec["reference"]).origin, aid)
    finally:
        grader.record = None
    # the kit has no hidden test to count: it tells the full package's count of them
    store[HIDDEN_COUNTS] = {q["id"]: q.get("hidden_tests", 0) for q in card["questions"]}
    manual = sum(q["max_score"] for q in card["questions"] if q["manual"])
    if card["score"] != card["max_score"] - manual:
        raise HwcheckError(f"the reference of {aid} does not pass its own public tests; no kit written")
    return store


# ---------------------------------------------------------------------------
# the reference's answers that `hwcheck validate`'s kit probe (checker.platforms.kit_probe) looks for
# ---------------------------------------------------------------------------

CASES_PER_FUNCTION = 2  # fresh inputs per graded function (its first shapes the public tests gave)


@contextlib.contextmanager
def capturing_calls(module, names, calls, per_name=50):
    """Within this block the reference module's graded functions record their calls into `calls` as
    (name, function, args, kwargs), at most `per_name` each (what the public tests ask of them)."""
    saved = {}
    for name in names:
        fn = getattr(module, name, None)
        if fn is None or inspect.isclass(fn) or not callable(fn):
            continue

        def wrapper(*args, _fn=fn, _name=name, **kwargs):
            if sum(c[0] == _name for c in calls) < per_name:
                calls.append((_name, _fn, args, kwargs))
            return _fn(*args, **kwargs)
        saved[name] = fn
        setattr(module, name, wrapper)
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(module, name, fn)


def _is_float_array(v):
    import numpy as np
    if type(v).__module__.startswith("torch") and hasattr(v, "is_floating_point"):
        return v.is_floating_point()
    return isinstance(v, np.ndarray) and v.dtype.kind == "f"


def _fresh(value, rng):
    """`value` with every float array or tensor drawn anew (same shape and dtype; non-negative stays so)."""
    import numpy as np
    if _is_float_array(value):
        old = value.detach().cpu().numpy() if hasattr(value, "detach") else value
        new = rng.standard_normal(old.shape)
        if old.size and (old >= 0).all():
            new = np.abs(new)
        if hasattr(value, "detach"):
            import torch
            return torch.from_numpy(new).to(value.dtype)
        return new.astype(old.dtype)
    if type(value) in (list, tuple):
        return type(value)(_fresh(v, rng) for v in value)
    if type(value) is dict:
        return {k: _fresh(v, rng) for k, v in value.items()}
    return value


def _float_answer(value):
    """(float64 numpy array, dtype name) of an answer, or (None, None) where it is no float array."""
    import numpy as np
    if type(value) in (list, tuple) and value and all(_is_float_array(v) for v in value):
        parts = [v.detach().cpu().numpy() if hasattr(v, "detach") else v for v in value]
        if len({p.shape for p in parts}) != 1:
            return None, None
        return np.stack(parts).astype(np.float64), str(parts[0].dtype)
    if not _is_float_array(value):
        return None, None
    dtype = str(value.dtype).replace("torch.", "")
    arr = value.detach().cpu().numpy() if hasattr(value, "detach") else value
    return arr.astype(np.float64), dtype


def _shape_key(value):
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        return ("array", tuple(value.shape), str(value.dtype))
    if type(value) in (list, tuple):
        return (type(value).__name__, tuple(_shape_key(v) for v in value))
    return (type(value).__name__, repr(value)[:50])


def answer_cases(spec, calls, seed=20261126):
    """The probe's cases: for each graded function, up to CASES_PER_FUNCTION calls the public tests made
    (distinct shapes), its float arrays drawn anew, and the reference's float-array answer to them with
    the spec's tolerance for it. An answer that is constant or equals one of its inputs is left out:
    any function handing back its argument would seem to compute it."""
    import numpy as np

    from checker.judging.compare import tolerance
    from checker.running.recorded import _pack
    rng = np.random.default_rng(seed)
    question = {n: q for q in spec["questions"] for n in q.get("names", [])}
    cases, seen = [], set()
    for name, fn, args, kwargs in calls:
        try:
            bound = inspect.signature(fn).bind(*args, **kwargs)
        except (TypeError, ValueError):
            continue
        if bound.kwargs or (name, _shape_key(bound.args)) in seen \
                or sum(c["name"].split(" ")[0] == name for c in cases) >= CASES_PER_FUNCTION:
            continue
        seen.add((name, _shape_key(bound.args)))
        fresh = _fresh(tuple(bound.args), rng)
        try:
            answer, dtype = _float_answer(fn(*fresh))
        except Exception:  # noqa: BLE001  (inputs the reference refuses: no case)
            continue
        if answer is None or answer.size < 4 or not np.isfinite(answer).all() or np.ptp(answer) == 0:
            continue
        rtol, atol = tolerance(dtype, question[name].get("tolerances"))
        inputs = [a for a in (_float_answer(v)[0] for v in fresh) if a is not None]
        if any(a.shape == answer.shape and np.all(np.abs(a - answer) <= atol + rtol * np.abs(answer))
               for a in inputs):
            continue
        try:
            packed = {"name": f"{name} {'x'.join(map(str, answer.shape))}", "args": _pack(name, fresh),
                      "answer": _pack(name, answer), "rtol": rtol, "atol": atol}
        except wire.EncodeError:
            continue
        cases.append(packed)
    return cases

def _floats_in(value, depth=0):
    """The float numpy arrays of a decoded value, in order, nested in lists, tuples and dicts."""
    if _is_float_array(value):
        return [value]
    if depth > 6:
        return []
    items = value.values() if type(value) is dict else value if type(value) in (list, tuple) else ()
    return [a for v in items for a in _floats_in(v, depth + 1)]


def _groups(value, depth=0):
    """Every list or tuple of a decoded value, the outermost first: where a helper puts a call's inputs."""
    if depth > 6:
        return []
    items = list(value.values()) if type(value) is dict else value if type(value) in (list, tuple) else []
    return ([list(value)] if type(value) in (list, tuple) else []) + [g for v in items for g in _groups(v, depth + 1)]


def _as_argument(value, like):
    """A decoded numpy array as the reference takes it: a tensor where the public test's call gave one."""
    if type(like).__module__.startswith("torch") and _is_float_array(value):
        import torch
        return torch.from_numpy(value.copy())
    return value


def returned_answer_hits(specs, calls, returned, *, max_calls=2000, seconds=120):
    """The kit probe's helper results (checker.platforms.kit_probe: a shipped helper called with arguments of
    its own signature, its result sent back as checker.wire data) that hold inputs of a graded function and,
    beside them, the reference's answer to those inputs (an answer a public test's helper computes, e.g.
    `_case(rng, T)` returning `((Q, K, V), answer)`). `specs` {aid: spec}, `calls` {aid: [(name, function,
    args, kwargs)]} the public tests' calls of the reference (capturing_calls); each call shape is a template:
    a list or tuple of the result whose float arrays are as many as the template's (or more: the first of
    them) takes their places. Runs only the reference, on decoded data; [{"function", "file", "line",
    "answer", "returned": True}]."""
    import time

    import numpy as np

    from checker.judging.compare import tolerance
    templates, seen = [], set()
    for aid, spec in specs.items():
        question = {n: q for q in spec["questions"] for n in q.get("names", [])}
        for name, fn, args, kwargs in calls[aid]:
            if not kwargs and (name, _shape_key(args)) not in seen \
                    and sum(t[0] == name for t in templates) < CASES_PER_FUNCTION + 1:
                seen.add((name, _shape_key(args)))
                templates.append((name, fn, list(args), question[name].get("tolerances")))
    hits, done, budget, until = [], set(), max_calls, time.monotonic() + seconds
    for entry in returned:
        if entry.get("function") in done:
            continue
        try:
            value, _ = wire.decode_trusted(entry["value"], [base64.b64decode(b) for b in entry["bufs"]])
        except Exception:  # noqa: BLE001  (what a helper returned is data: a value wire refuses is no hit)
            continue
        floats = _floats_in(value)
        for group, (name, fn, args, tolerances) in ((g, t) for g in _groups(value) for t in templates):
            slots = [i for i, a in enumerate(args) if _is_float_array(a)]
            given = [v for v in group if _is_float_array(v)]
            if budget <= 0 or time.monotonic() > until or entry.get("function") in done or len(given) < len(slots):
                continue
            taken = group if len(group) == len(args) and len(given) == len(slots) else given[:len(slots)]
            call = list(args)
            for i, v in (enumerate(taken) if taken is group else zip(slots, taken)):
                call[i] = _as_argument(v, args[i])
            budget -= 1
            try:
                answer, dtype = _float_answer(fn(*call))
            except Exception:  # noqa: BLE001  (inputs the reference refuses: no hit)
                continue
            if answer is None or answer.size < 4 or not np.isfinite(answer).all() or np.ptp(answer) == 0:
                continue
            rtol, atol = tolerance(dtype, tolerances)
            inputs = {id(v) for v in taken}
            close = [a for a in floats if a.shape == answer.shape
                     and bool(np.all(np.abs(a.astype(np.float64) - answer) <= atol + rtol * np.abs(answer)))]
            if close and not any(id(a) in inputs for a in close):
                done.add(entry.get("function"))
                hits.append({"function": entry.get("function"), "file": entry.get("file"), "line": entry.get("line"),
                             "answer": name, "returned": True})
    return hits
