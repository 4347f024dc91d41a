"""The reference's answers recorded for the student kit and replayed there, and the answer models.

What it is for: while the kit is built, `RecordingRef` records every answer the public tests ask of
the reference; in the kit, `ReplayRef` hands them back in order, and `Answers` replays the answer
models' results (the known mistakes) that the full package computes. See checker.platforms.kit.

What it is not: the building of the kit (checker.platforms.kit), or a grader.
"""

import base64
import contextlib
import hashlib
import importlib
import json
import os

import pytest

from checker import wire

__all__ = ["RecordingRef", "ReplayRef", "Answers", "recorded_path", "load_recording"]

RECORDED = "recorded.json"
HIDDEN_COUNTS = "__hidden_counts__"  # a key of recorded.json: {question id: hidden tests in the full package}
ANSWER_MODELS = "_answers.py"  # each assignment's answer models: never in the kit (see Answers)
RECORDED_ANSWERS = "__answers__"  # a key of recorded.json: {"name:digest of the arguments": packed result}
NOT_IN_KIT = ("this check needs the reference solutions, which the student kit does not include; it runs when "
              "your work is graded")


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
        if mode == "compute" and hasattr(ref, "cached_call"):  # checker.running.ref_cache: computed once per batch
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
