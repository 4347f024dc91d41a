"""The student kit: hwcheck without the reference solutions and without the hidden tests.

What it is for: `hwcheck check` computes expected values by calling the
reference solutions, so the full package cannot be given to students.
`build_kit(outdir)` writes a source tree students can `pip install` instead:
each assignment's `reference.py` is left out; in its place the assignment carries
`recorded.json`, the reference's answers to the public tests, recorded by
running those tests once with the public seed (`RecordingRef`). Hidden test
functions are cut out of the test files. In the kit the `ref` fixture is a
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

What it is not: a secret keeper for the public answers (they are in the kit
in plain sight, as public test expectations are) or a grader: grading with
hidden tests needs the full package.
"""

import ast
import base64
import contextlib
import hashlib
import importlib
import json
import os
import shutil

import pytest

from checker import wire

__all__ = ["RecordingRef", "ReplayRef", "Answers", "recorded_path", "load_recording", "build_kit", "record_public"]

RECORDED = "recorded.json"
HIDDEN_COUNTS = "__hidden_counts__"  # a key of recorded.json: {question id: hidden tests in the full package}
ANSWER_MODELS = "_answers.py"  # each assignment's answer models: never in the kit (see Answers)
RECORDED_ANSWERS = "__answers__"  # a key of recorded.json: {"name:digest of the arguments": packed result}
NOT_IN_KIT = ("this check needs the reference solutions, which the student kit does not include; it runs when "
              "your work is graded")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def recorded_path(spec):
    from checker.spec import ASSIGNMENTS_DIR
    return os.path.join(ASSIGNMENTS_DIR, spec["id"], RECORDED)


def _pack(name, value):
    obj, bufs = wire.encode(value)
    return {"name": name, "value": obj, "bufs": [base64.b64encode(bytes(b)).decode() for b in bufs]}


def _unpack(entry):
    return wire.decode_worker(entry["value"], [base64.b64decode(b) for b in entry["bufs"]])


class RecordingRef:
    """Calls the reference module and records each answer under the test's key."""

    def __init__(self, module, store, key):
        self._module, self._store, self._key = module, store, key
        self.store = store

    def __getattr__(self, name):
        target = getattr(self._module, name)
        if not callable(target):
            return target

        def call(*args, **kwargs):
            value = target(*args, **kwargs)
            try:
                entry = _pack(name, value)
            except wire.EncodeError:
                entry = {"name": name, "unrecordable": True}
            entry["args"] = _digest_or_none(args, kwargs)
            self._store.setdefault(self._key, []).append(entry)
            return value
        return call


class ReplayRef:
    """Hands back the recorded answers of one test: the one recorded for the same name and arguments
    (whatever the order: a student's answer may take a test down another path, asking the reference
    fewer or other questions); call by call in order for arguments that have no digest."""

    def __init__(self, store, key):
        self._calls = list(store.get(key, []))
        self._key = key
        self.store = store

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args, **kwargs):
            digest = _digest_or_none(args, kwargs)
            if digest is not None:
                at = next((i for i, c in enumerate(self._calls) if c.get("name") == name and c.get("args") == digest),
                          None)
            else:
                at = 0 if self._calls and self._calls[0].get("name") == name else None
            if at is None or self._calls[at].get("unrecordable"):
                pytest.skip(NOT_IN_KIT)
            return _unpack(self._calls.pop(at))
        return call


def _digest_or_none(args, kwargs):
    try:
        return _digest(args, kwargs)
    except TypeError:
        return None


def _digest(args, kwargs):
    """A digest of an answer model's arguments: plain data, arrays and tensors by dtype, shape and bytes."""
    import numpy as np
    h = hashlib.sha256()

    def feed(v):
        if v is None or type(v) in (bool, int, float, str):
            h.update(repr((type(v).__name__, v)).encode())
        elif isinstance(v, (np.ndarray, np.generic)):
            a = np.ascontiguousarray(v)
            h.update(f"nd:{a.dtype.str}:{a.shape}:".encode())
            h.update(a.tobytes())
        elif type(v).__module__.startswith("torch") and hasattr(v, "detach"):
            t = v.detach().to("cpu").contiguous().reshape(-1)
            h.update(f"t:{v.dtype}:{tuple(v.shape)}:".encode())
            h.update(t.view(__import__("torch").uint8).numpy().tobytes())
        elif type(v) in (list, tuple):
            h.update(b"[" if type(v) is list else b"(")
            for x in v:
                feed(x)
            h.update(b"]")
        elif type(v) is dict:
            h.update(b"{")
            for k in sorted(v, key=repr):
                feed(k)
                feed(v[k])
            h.update(b"}")
        else:
            raise TypeError(f"an answer model was given a {type(v).__name__}: its arguments must be plain data, "
                            "arrays or tensors, so that its result can be recorded for the kit")
    feed(tuple(args))
    feed(dict(kwargs))
    return h.hexdigest()[:32]


class Answers:
    """A test file's way to its assignment's answer models (`assignments/<id>/_answers.py`).

    `A = Answers("assignments.attention._answers")` at the top of the test file, and an autouse fixture
    `with A.following(ref): yield`; then `A.softmax(s)` is the model's `softmax(s)`: computed in the
    full package, computed and recorded while `record_public` grades the reference for the kit (and handed
    back as the kit will hand it back, through the wire encoding), replayed from recorded.json in the kit,
    where a call that was not recorded skips the check (`A.maybe.name(...)` gives None instead: a hint that
    depends on the student's own answer). Outside a test it computes, which the kit cannot: the module is
    not there."""

    def __init__(self, module, _missing="skip", _modes=None):
        self._module_name, self._missing = module, _missing
        self._modes = _modes if _modes is not None else [("compute", None)]

    @property
    def maybe(self):
        return Answers(self._module_name, "none", self._modes)

    @contextlib.contextmanager
    def following(self, ref):
        """Within this block, compute, record or replay as the `ref` fixture `ref` does."""
        store = getattr(ref, "store", None)
        mode = ("replay" if isinstance(ref, ReplayRef) else "record" if isinstance(ref, RecordingRef)
                else "compute")
        if mode == "compute" and hasattr(ref, "cached_call"):  # checker.ref_cache: computed once per batch
            mode, store = "cached", ref.cached_call
        self._modes.append((mode, store))
        try:
            yield self
        finally:
            self._modes.pop()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)

        def call(*args, **kwargs):
            mode, store = self._modes[-1]
            if mode == "compute":
                return getattr(importlib.import_module(self._module_name), name)(*args, **kwargs)
            if mode == "cached":
                fn = getattr(importlib.import_module(self._module_name), name)
                return store(f"{self._module_name}.{name}", fn, args, kwargs)
            key = f"{name}:{_digest(args, kwargs)}"
            book = store.setdefault(RECORDED_ANSWERS, {})
            if mode == "replay":
                if key not in book or book[key].get("unrecordable"):
                    if self._missing == "none":
                        return None
                    pytest.skip(NOT_IN_KIT)
                return _unpack(book[key])
            value = getattr(importlib.import_module(self._module_name), name)(*args, **kwargs)
            try:
                book[key] = _pack(name, value)
            except wire.EncodeError:
                book[key] = {"name": name, "unrecordable": True}
                return value
            return _unpack(book[key])  # what the kit will be handed
        call.__name__ = name
        return call


def load_recording(spec):
    path = recorded_path(spec)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as f:
        return json.load(f)


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


def build_kit(outdir, record, package=None):
    """Write the student kit into `outdir`; `record(aid)` returns the recorded answers of an assignment.

    package: the pip spec the kit will be published as; written to
    `checker/kit.json` for `hwcheck init-ci` (see `checker.ci.kit_package`) and into the
    student README. The kit's pyproject.toml and README.md come from `checker.kit_files`.
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
        with open(os.path.join(outdir, "assignments", aid, RECORDED), "w", encoding="utf-8") as f:
            json.dump(record(aid), f)
    from checker.ci import KIT_FILE, _value
    from checker.kit_files import kit_pyproject, kit_readme
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
