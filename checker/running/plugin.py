"""The pytest plugin that gives grading tests their fixtures and labels their results.

What it is for: grading tests (`assignments/<id>/test_*.py`) run in the
trusted process under this plugin. It provides `sub` (the submission's
handle), `ref` (the reference module), `device`, `float_dtype`, `rng`,
`seed` and `close`; deselects hidden tests in public mode; skips CUDA items
with a reason where CUDA is absent; and attaches to each test the metadata
the scorecard is built from (question, visibility, device, dtype, weight,
outcome, message) through pytest-json-report's metadata hook.

What it is not: a scorecard builder (`scorecard`), a runner of student code
(`sandbox`), a judge (`compare`), or the way to grade one submission with
plain pytest (`-p checker.standalone`, above both this plugin and the runner,
which registers it). It never imports student code.
"""

import hashlib
import importlib
import os
import re
import sys

import numpy as np
import pytest

from checker.judging.compare import compare
from checker.judging.portability import CUDA_ONLY, CUDA_WALLED, NO_CUDA
from checker.errors import GradingFailure
from checker.running import examples_first

__all__ = ["HwcheckPlugin", "cuda_available", "DEVICES", "FLOAT_DTYPES"]

DEVICES = ["cpu", "cuda"]
FLOAT_DTYPES = ["float32", "float64", "float16", "bfloat16"]


def cuda_available():
    os.environ.setdefault("PYTORCH_NVML_BASED_CUDA_CHECK", "1")  # keep the check fork-safe
    try:
        import torch
        return bool(torch.cuda.is_available())
    except Exception:  # noqa: BLE001
        return False


FLAKY_MESSAGE = ("it gave different answers to the same inputs on different calls: does it keep state between "
                 "calls (a counter, a cache, a global it changes) or draw random numbers?")


def _is_flaky(exc):
    """Hypothesis's Flaky errors: a test that failed, then passed on the same example."""
    return any(c.__name__ in ("Flaky", "FlakyFailure") and c.__module__.startswith("hypothesis")
               for c in type(exc).__mro__)


class HwcheckPlugin:
    """Passed to `pytest.main(plugins=[...])` for one submission, or to a `checker.running.session.GradingSession`
    that binds it to one submission after another (`bind`)."""

    def __init__(self, handle, spec, *, mode="public", seed=1234, devices=("cpu", "cuda"), record=None,
                 replay=None, ref_cache=None, spec_sha256=None, cuda=None):
        self._handle, self._spec, self.mode, self.run_seed = handle, spec, mode, int(seed)
        self._record, self._replay = record, replay  # see checker.platforms.kit: the student kit has no reference
        # checker.running.ref_cache: the reference's answers kept for the next submission of the batch, under the
        # spec's hash and the run seed (and, per call, the test id and the arguments)
        self._ref_cache, self._cache_scope = ref_cache, (spec.get("id"), spec_sha256, self.run_seed)
        self.devices = set(devices)
        self.hidden = {t for q in spec["questions"] for t in q.get("hidden_tests", [])}
        self.questions = {q["id"]: q for q in spec["questions"]}
        self.hidden_counts = {}
        self.problems = []
        # True, False, why CUDA does not start inside the walls (checker.running.cuda_probe), or a callable
        # asked at the first CUDA variant that returns one of those; None: ask torch
        self._cuda = cuda
        self._item = None  # the item being set up and run (pytest_runtest_setup)
        self.examples_replayed = 0  # property tests run by checker.running.examples_first, every submission

    def bind(self, handle, *, record=None, replay=None):
        """The submission (and the kit's recording or replay) the next items run on (a GradingSession's)."""
        self._handle, self._record, self._replay = handle, record, replay

    # ------------------------------------------------------------ collection
    def pytest_collection_modifyitems(self, session, config, items):
        keep, dropped = [], []
        for item in items:
            marks = list(item.iter_markers("question"))
            if len(marks) != 1 or not marks[0].args or marks[0].args[0] not in self.questions:
                self.problems.append(f"{item.nodeid}: needs exactly one valid @pytest.mark.question")
                dropped.append(item)
                continue
            qid = marks[0].args[0]
            hidden = item.originalname in self.hidden
            params = getattr(item, "callspec", None)
            device = params.params.get("device") if params else None
            if device is not None and device not in self.devices:
                dropped.append(item)
                continue
            item.stash[_BASE] = {
                "question": qid, "visibility": "hidden" if hidden else "visible",
                "device": device or "cpu",
                "dtype": (params.params.get("float_dtype") or params.params.get("dtype")) if params else None,
                "weight": float(next((m.args[0] for m in item.iter_markers("weight")), 1.0)),
                "outcome": None, "message": "",
            }
            item.stash[_META] = _fresh_meta(item)
            if hidden and self.mode == "public":
                self.hidden_counts[qid] = self.hidden_counts.get(qid, 0) + 1
                dropped.append(item)
            else:
                keep.append(item)
        if dropped:
            config.hook.pytest_deselected(items=dropped)
        items[:] = keep

    def pytest_configure(self, config):
        config.addinivalue_line("markers", "question(id): the question a grading test belongs to")
        config.addinivalue_line("markers", "weight(w): relative weight of a test within its question")

    # ------------------------------------------------------------ results
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item):
        if _BASE in item.stash:  # each run of an item starts from its collected labels (a GradingSession reruns it)
            item.stash[_META] = _fresh_meta(item)
        # the item whose fixtures are set up next: they read it here rather than from pytest's `request`, which
        # pytest 9 makes anew (with an inspect.signature) each time a fixture asks for it (~10% of a grade)
        self._item = item
        # a parametrized argument's value, given before pytest looks for it: pytest runs a fixture for each one
        # (`request.param`), building a `request` for it each time (~5% of an attention grade); the value is the
        # same (tests/test_plugin.py)
        funcargs = getattr(item, "funcargs", None)
        if isinstance(funcargs, dict):
            for name in _direct_params(item):
                funcargs.setdefault(name, item.callspec.params[name])
        called = getattr(self._handle, "called", None)
        if isinstance(called, list):
            called.clear()

    # property tests' examples run without hypothesis's engine while they pass (checker.running.examples_first;
    # False: the engine runs every one, tests/test_examples_first.py compares the scorecards)
    replay_examples = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(self, pyfuncitem):
        fn = pyfuncitem.obj
        if not (self.replay_examples and getattr(fn, "is_hypothesis_test", False)):
            return None
        if getattr(pyfuncitem.config, "_hwcheck_own_pyfunc", None) is None:  # no other plugin calls tests its way
            pyfuncitem.config._hwcheck_own_pyfunc = all(
                impl.plugin is self or getattr(impl.plugin, "__name__", "") == "_pytest.python"
                for impl in pyfuncitem.config.hook.pytest_pyfunc_call.get_hookimpls())
        if not pyfuncitem.config._hwcheck_own_pyfunc:
            return None
        testargs = {arg: pyfuncitem.funcargs[arg] for arg in pyfuncitem._fixtureinfo.argnames}
        try:
            if not examples_first.run(fn, testargs, GradingFailure):
                return None
        except BaseException:  # the failure hypothesis's engine raised, after the examples that had passed
            self.examples_replayed += 1
            raise
        self.examples_replayed += 1
        return True

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        self.label_report(item, call, outcome.get_result())

    def label_report(self, item, call, rep):
        """Label `item` from one phase's call and report (checker.running.lean_protocol calls it too)."""
        try:
            self._label(item, call, rep)
        finally:
            _forget_frames(call)

    def _label(self, item, call, rep):
        meta = item.stash.get(_META, None)
        if meta is None or call.excinfo is None or rep.skipped:
            return
        exc = call.excinfo.value
        if isinstance(exc, GradingFailure):
            meta["outcome"] = exc.outcome
            meta["message"] = exc.message
            meta["missing_names"] = exc.missing_names
            # the student's own file and line, for CI annotations: where it raised, else the def it is about
            where = _where_of(exc) or _def_of(self._handle, exc.message, exc.missing_names)
            if isinstance(where, dict) and where.get("file"):
                meta["where"] = {k: where.get(k) for k in ("file", "cell", "label", "line", "function")}
            rep.longrepr = exc.message
        elif call.when == "call" and isinstance(exc, AssertionError):
            meta["outcome"] = "failed"
            meta["message"] = str(exc).split("\nassert ")[0] or "a check of the result failed"
            where = _def_of(self._handle, meta["message"], [])
            if where:
                meta["where"] = dict(where)
        elif call.when == "call" and _is_flaky(exc):
            # Hypothesis met an input that failed once and passed when asked again: the student's function
            # answers the same input differently from call to call (state kept between calls, randomness)
            inner = next((e for e in getattr(exc, "exceptions", ()) if isinstance(e, GradingFailure)), None)
            meta["outcome"] = "failed"
            meta["message"] = (FLAKY_MESSAGE + (f" Once it failed so: {inner.message}" if inner else ""))
        elif call.when == "call":
            meta["outcome"] = "error"
            meta["message"] = (f"the grader could not check this result ({type(exc).__name__}: {exc}); "
                               "a value of an unexpected type or shape is the usual cause")
        else:
            meta["outcome"] = "error"
            meta["message"] = f"the test could not be set up: {type(exc).__name__}: {exc}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_json_runtest_metadata(self, item, call):
        meta = item.stash.get(_META, None)
        return dict(meta) if meta else {}

    # ------------------------------------------------------------ fixtures
    @pytest.fixture
    def sub(self):
        return self._handle

    @pytest.fixture
    def spec(self):
        return self._spec

    @pytest.fixture
    def note(self):
        """note(text): a word for the student on a test that passes (how it was checked), kept as the
        test's message; a failure's own message replaces it."""
        node = self._item

        def _note(text):
            meta = node.stash.get(_META, None)
            if meta is not None:
                meta["message"] = str(text)
        return _note

    @pytest.fixture
    def ref(self):
        key = self._item.nodeid.split("::", 1)[-1]
        if self._replay is not None:
            from checker.running.recorded import ReplayRef
            return ReplayRef(self._replay, key)
        module = importlib.import_module(self._spec["reference"])
        if self._record is not None:
            from checker.running.recorded import RecordingRef
            return RecordingRef(module, self._record, key)
        if self._ref_cache is not None:
            from checker.running.ref_cache import CachingRef
            return CachingRef(module, self._ref_cache, (*self._cache_scope, key))
        return module

    @pytest.fixture(params=DEVICES)
    def device(self):
        param = self._item.callspec.params["device"]  # what pytest's request.param is for this item
        if param == "cuda":
            if self._cuda is None:
                self._cuda = cuda_available()
            elif callable(self._cuda):
                self._cuda = self._cuda()
            if isinstance(self._cuda, str):
                pytest.skip(CUDA_WALLED.format(self._cuda))
            if not self._cuda:
                pytest.skip(NO_CUDA)
        return param

    @pytest.fixture(params=FLOAT_DTYPES)
    def float_dtype(self, device):
        param = self._item.callspec.params["float_dtype"]
        if param in ("float16", "bfloat16") and device != "cuda":
            pytest.skip(CUDA_ONLY.format(param))
        return param

    @pytest.fixture
    def seed(self):
        # the test's name, not its file: a test moved to another file keeps its inputs
        digest = hashlib.sha256(f"{self.run_seed}:{self._item.nodeid.split('::', 1)[-1]}".encode()).digest()
        return int.from_bytes(digest[:4], "little")

    @pytest.fixture
    def rng(self, seed):
        return np.random.default_rng(seed)

    @pytest.fixture
    def close(self):
        node = self._item
        marks = list(node.iter_markers("question"))
        q = self.questions.get(marks[0].args[0]) if marks else None
        # per-dtype tolerances: the question's, then the test's own (spec table `test_tolerances`)
        overrides = dict((q or {}).get("tolerances", {}))
        overrides.update(self._spec.get("test_tolerances", {}).get(node.originalname, {}))

        def _close(got, expected, **kw):
            kw.setdefault("overrides", overrides)
            return compare(got, expected, **kw)
        return _close


_DIRECT = pytest.StashKey()  # an item's directly parametrized argument names (`_direct_params`)
_META = pytest.StashKey()  # an item's labels in this run: question, visibility, device, ..., outcome, message
_BASE = pytest.StashKey()  # the labels collection gave it


def _direct_params(item):
    """The names of `item`'s arguments given by @pytest.mark.parametrize itself (not through a fixture), whose
    value is `item.callspec.params[name]`; none where this pytest has no `DirectParamFixtureDef`."""
    names = item.stash.get(_DIRECT, None)
    if names is None:
        try:
            from _pytest.python import DirectParamFixtureDef
        except ImportError:
            DirectParamFixtureDef = ()
        callspec = getattr(item, "callspec", None)
        info = getattr(item, "_fixtureinfo", None)
        names = ()
        if callspec is not None and info is not None and DirectParamFixtureDef:
            names = tuple(name for name, defs in info.name2fixturedefs.items()
                          if name in callspec.params and defs and isinstance(defs[-1], DirectParamFixtureDef))
        item.stash[_DIRECT] = names
    return names


def _fresh_meta(item):
    return {**item.stash[_BASE], "missing_names": []}


def _forget_frames(call):
    """Drop the locals of a failed test's frames once its report is made (the report keeps only text): a
    traceback would otherwise keep every answer the test held alive (a 128 MiB array per failed test),
    and pytest keeps the last one in sys.last_traceback."""
    exc, seen = call.excinfo.value if call.excinfo is not None else None, set()
    while exc is not None and id(exc) not in seen and len(seen) < 20:
        seen.add(id(exc))
        tb = exc.__traceback__
        while tb is not None:
            try:
                tb.tb_frame.clear()
                # pytest read the frame's locals (for __tracebackhide__): that snapshot outlives clear(),
                # and reading them again now drops from it what clear() dropped
                tb.tb_frame.f_locals  # noqa: B018
            except RuntimeError:  # a frame still running (pytest's own): nothing of the test's
                pass
            tb = tb.tb_next
        exc = exc.__cause__ or exc.__context__
    for name in ("last_type", "last_value", "last_traceback", "last_exc"):
        if hasattr(sys, name):
            try:
                delattr(sys, name)
            except AttributeError:
                pass


def _def_of(handle, message, missing):
    """{file, cell, line} of the student's def/class this failure is about: the one the message names
    first among those the test called, else the first the test called; None when unknown."""
    defs = getattr(handle, "defs", None)
    called = [n for n in getattr(handle, "called", None) or [] if n not in (missing or [])]
    if not isinstance(defs, dict) or not called:
        return None
    named = []
    for i, n in enumerate(called):
        m = re.search(rf"(?<![\w.]){re.escape(n)}(?!\w)", message or "") if n in defs else None
        if m:
            named.append((m.start(), i, n))
    name = min(named)[2] if named else called[0]
    return {**defs[name], "function": name} if name in defs else None


def _where_of(exc):
    """The student's file/line of a failure, also when a test re-raised it with more words."""
    seen = 0
    while exc is not None and seen < 5:
        where = getattr(exc, "where", None)
        if isinstance(where, dict):
            return where
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return None

