"""The reference's answers, computed once per batch rather than once per submission.

What it is for: a grading test's inputs come from the run seed and the test id, never from the student,
so what the reference answers to them is the same for every submission of a batch. A `Grader` keeps one
`RefCache` (per trusted process: each batch slot, a `check`, the notebook's kept-warm server), and the
plugin's `ref` fixture hands tests a `CachingRef` over the reference module: a call whose arguments and
answer are plain data (numpy arrays, CPU torch tensors without grad, numbers, strings, None, and lists,
tuples and dicts of them) is computed on its first asking and later handed back as a deep copy (a test
that changes an answer in place changes only its own copy). The key is the assignment's spec hash, the
run seed, the test id, the function's name and a digest of its arguments (`checker.running.recorded._digest`: dtypes,
shapes and bytes), so a value computed from the student's answer is keyed by that answer and a different
question never meets another's value. Anything else (a class, a module, an answer with grad, an argument
that cannot be digested) is computed each time, as without the cache. The cache keeps at most
`max_bytes` of answers; past that, calls are computed again.

`cached_call(cache, scope, name, fn, args, kwargs)` is the same for other trusted-side values: the answer
models of `assignments/<id>/_answers.py` (a softmax to make inputs with, the named mistakes' answers) go
through `CachingRef.cached_call` when a test's `checker.running.recorded.Answers` follows a `CachingRef`.

What it is not: a cache across processes or runs (memory only, never written), a judge, or a way to skip
a check: every comparison runs as before, only its expected value is remembered. The scorecards with and
without it are the same byte for byte (tests/test_ref_cache.py).
"""

import copy

__all__ = ["RefCache", "CachingRef", "cached_call"]

_SCALARS = (type(None), bool, int, float, complex, str, bytes)


def _plain_size(v, depth=0):
    """The bytes a plain-data value holds, or None when it is not plain data (so not cached)."""
    if depth > 20:
        return None
    if isinstance(v, _SCALARS):
        return 64
    mod = type(v).__module__
    if mod == "numpy":
        import numpy as np
        if isinstance(v, np.ndarray) and v.dtype.hasobject:
            return None
        return int(getattr(v, "nbytes", 64)) + 64
    if mod.startswith("torch") and type(v).__name__ in ("Tensor", "Parameter"):
        if v.requires_grad or v.device.type != "cpu" or getattr(v, "is_sparse", False) or v.is_quantized:
            return None
        return int(v.element_size() * v.nelement()) + 64
    if type(v) in (list, tuple):
        total = 64
        for x in v:
            s = _plain_size(x, depth + 1)
            if s is None:
                return None
            total += s
        return total
    if type(v) is dict:
        total = 64
        for k, x in v.items():
            sk, sx = _plain_size(k, depth + 1), _plain_size(x, depth + 1)
            if sk is None or sx is None:
                return None
            total += sk + sx
        return total
    return None


class RefCache:
    """Answers kept in memory under (scope, name, digest of the arguments)."""

    def __init__(self, max_bytes=256 << 20):
        self.max_bytes, self.bytes = max_bytes, 0
        self.hits = self.misses = self.uncacheable = 0
        self._values = {}

    def __len__(self):
        return len(self._values)

    def clear(self):
        self._values.clear()
        self.bytes = 0


def cached_call(cache, scope, name, fn, args, kwargs):
    """fn(*args, **kwargs), or a deep copy of what it answered before to the same arguments in `scope`."""
    if cache is None:
        return fn(*args, **kwargs)
    from checker.running.recorded import _digest
    try:
        key = (scope, name, _digest(args, kwargs))
    except (TypeError, ValueError, RuntimeError):  # an argument that is not plain data: computed each time
        cache.uncacheable += 1
        return fn(*args, **kwargs)
    if key in cache._values:
        cache.hits += 1
        return copy.deepcopy(cache._values[key])
    cache.misses += 1
    value = fn(*args, **kwargs)
    size = _plain_size(value)
    if size is not None and cache.bytes + size <= cache.max_bytes:
        try:
            cache._values[key] = copy.deepcopy(value)
            cache.bytes += size
        except Exception:  # noqa: BLE001 - a value that cannot be copied is simply not kept
            pass
    return value


class CachingRef:
    """The reference module as the `ref` fixture gives it, its plain-data answers taken from `cache`."""

    def __init__(self, module, cache, scope):
        self._module, self._cache, self._scope = module, cache, scope

    def cached_call(self, name, fn, args, kwargs):
        """fn(*args, **kwargs) kept under this test's scope: the answer models' way in (checker.running.recorded.Answers)."""
        return cached_call(self._cache, self._scope, name, fn, args, kwargs)

    def __getattr__(self, name):
        target = getattr(self._module, name)
        if not callable(target) or isinstance(target, type):
            return target  # constants and classes (a model to build) as they are

        def call(*args, **kwargs):
            return cached_call(self._cache, self._scope, name, target, args, kwargs)
        call.__name__ = name
        call.__wrapped__ = target  # inspect.signature sees the reference function's parameters
        return call
