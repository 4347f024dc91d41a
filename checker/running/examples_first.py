"""A property test's examples run without hypothesis's engine while every one passes; the engine takes over at
the first failure, without running again what already ran.

What it is for: a grading test under `@given` with `derandomize=True` meets the same examples for every
submission of a batch (hypothesis seeds its generator from the test function's digest). Its engine costs
about as much per example as the test body itself (drawing, the data tree, the global PRNGs saved and
seeded, the build context): for attention's two property tests a tenth of a grade. `run` draws the
examples once per process by running hypothesis on a body that only records them, then, for each
submission, calls the test's own body with them, one after the other, each under hypothesis's deterministic
PRNG and the test's settings as hypothesis runs it. If every example passes, that is the test's result,
as hypothesis would have given it: the same bodies ran with the same arguments in the same order.

At the first example that does not pass, hypothesis's engine runs the test as it always does (same seed,
same examples, then shrinking), but the examples already run are not run again: their outcomes (a pass, or
the `GradingFailure` the failing one raised) are handed back to the engine in their turn, so the student's
code is asked exactly what it is asked without this module, once each, and the failure, its shrinking and
its message are hypothesis's own. An example that raised anything else (a grading test's bug, a helper that
needs hypothesis's build context: `assume`, `note`, `event`, `target`) is run again by the engine, and that
test is left to the engine for the rest of the process.

Not replayed (the engine runs them, as before): tests without `derandomize`, with an explicit seed or a
database, whose body names hypothesis's context functions, that draw anything but plain immutable values
(ints, floats, bools, strings, bytes, None, tuples of them: a drawn list or array could be changed by one
submission's test and seen by the next), or whose recording fails.

What it is not: a property-testing engine of its own (drawing, shrinking and reporting stay hypothesis's),
nor public hypothesis API: it uses `hypothesis.internal` (the digest, the PRNG context) and the
`inner_test` attribute hypothesis documents for plugins that wrap a test's body; anything missing, and it
leaves every test to the engine.
"""

import functools
import inspect

__all__ = ["run"]

# names of hypothesis's functions that need its build context (a body naming one is left to the engine)
_CONTEXT_NAMES = frozenset({"assume", "note", "event", "target", "reject", "current_build_context", "data"})
_PLAIN = (int, float, bool, str, bytes, type(None))
_NOT_REPLAYED = ()  # the value kept on a function whose examples are not replayed


def _plain(value):
    return isinstance(value, _PLAIN) or (type(value) is tuple and all(_plain(v) for v in value))


def _key(value):
    """What tells two drawn values apart (type and repr: -0.0 is not 0.0, a NaN is itself)."""
    if type(value) is tuple:
        return tuple(_key(v) for v in value)
    return type(value), repr(value)


def _seed_of(inner):
    """The seed hypothesis derives from the test body under `derandomize=True`."""
    from hypothesis.core import function_digest, int_from_bytes
    return int_from_bytes(function_digest(inner))


def _drawn(fn):
    """The examples hypothesis gives `fn`'s body, in order (a list of {argument: value}), drawn once per
    process and kept on the function; _NOT_REPLAYED where the engine must run the test."""
    cached = fn.__dict__.get("_hwcheck_examples")
    if cached is None:
        try:
            cached = _record(fn)
        except Exception:  # noqa: BLE001 - hypothesis's internals moved, or the recording failed: the engine
            cached = _NOT_REPLAYED
        fn._hwcheck_examples = cached
    return cached


def _record(fn):
    handle = getattr(fn, "hypothesis", None)
    inner = getattr(handle, "inner_test", None)
    settings = getattr(fn, "_hypothesis_internal_use_settings", None)
    if (not callable(inner) or settings is None or not settings.derandomize or settings.database is not None
            or getattr(fn, "_hypothesis_internal_use_seed", None) is not None
            or _CONTEXT_NAMES & set(getattr(getattr(inner, "__code__", None), "co_names", ()) or ())):
        return _NOT_REPLAYED
    given = inspect.signature(fn).parameters  # what pytest passes (the fixtures); the rest hypothesis draws
    drawn = [p for p in inspect.signature(inner).parameters if p not in given]
    seen = []

    def recorder(*args, **kwargs):
        seen.append({name: kwargs[name] for name in drawn})

    with _body(fn, recorder, _seed_of(inner)):
        fn(**{name: None for name in given})
    if not seen or not all(_plain(v) for example in seen for v in example.values()):
        return _NOT_REPLAYED
    return seen


class _body:
    """`fn`'s body replaced by `body` and its seed fixed to `seed` (the seed the real body's digest gives), for
    one call of `fn`."""

    def __init__(self, fn, body, seed):
        self.fn, self.body, self.seed = fn, body, seed

    def __enter__(self):
        handle = self.fn.hypothesis
        self.inner, self.old_seed = handle.inner_test, self.fn._hypothesis_internal_use_seed
        handle.inner_test, self.fn._hypothesis_internal_use_seed = self.body, self.seed

    def __exit__(self, *exc):
        self.fn.hypothesis.inner_test, self.fn._hypothesis_internal_use_seed = self.inner, self.old_seed
        return False


def run(fn, testargs, failure_types):
    """Run the property test `fn` (hypothesis's wrapper) with pytest's `testargs`: True once it has run (passed,
    or raised what the engine raised); False where it must be called as usual (nothing of it has run).
    `failure_types`: the exceptions whose outcome the engine may be handed back (checker's GradingFailure)."""
    examples = _drawn(fn)
    if not examples:
        return False
    from hypothesis.internal.entropy import deterministic_PRNG
    from hypothesis._settings import local_settings

    inner = fn.hypothesis.inner_test
    settings = fn._hypothesis_internal_use_settings
    outcomes = []  # None: passed; an exception: the failure it raised
    for example in examples:
        try:
            with local_settings(settings), deterministic_PRNG():
                result = inner(**testargs, **example)
        except failure_types as e:
            outcomes.append(e)
            break
        except Exception:  # noqa: BLE001 - not a grading failure: the engine runs this example again
            fn._hwcheck_examples = _NOT_REPLAYED
            break
        if result is not None:  # hypothesis refuses a body that returns a value: let it say so
            fn._hwcheck_examples = _NOT_REPLAYED
            break
        outcomes.append(None)
    else:
        return True
    _engine(fn, testargs, inner, examples, outcomes)
    return True


def _engine(fn, testargs, inner, examples, outcomes):
    """hypothesis's own run of `fn`, its first len(outcomes) examples answered by what they gave before."""
    turn = {"next": 0, "replaying": True}

    @functools.wraps(inner)
    def replaying(*args, **kwargs):
        i = turn["next"]
        turn["next"] += 1
        if turn["replaying"] and i < len(outcomes) and all(
                name in kwargs and _key(kwargs[name]) == _key(value) for name, value in examples[i].items()):
            if outcomes[i] is not None:
                raise outcomes[i]
            return None
        turn["replaying"] = False
        return inner(*args, **kwargs)

    with _body(fn, replaying, _seed_of(inner)):
        fn(**testargs)
