"""Carried-forward credit: one mistake of a student's function charged once (trusted side).

What it is for: a graded function B of a later question that calls another graded function A of the
student's (Q3's multi_head_attention built from Q2's self_attention, one call a head) should not lose
points again for A's mistake. Where A lost points in its own question in this run, B's failing answer
also passes when it equals what the student's own A gives, composed the way the handout specifies B to
use it; the passing test carries a note naming A ("right with your own self_attention, which is wrong:
counted in Q2 only"). B's own mistakes still fail: the composition is the right one, only A is theirs.

The answers of A used for that are never taken from the worker that has just run B (a function that
keeps a counter or a flag, or reads its stack, could answer the "right" value there only after a stub
B ran). They come from a fresh worker of the same submission that is only ever asked A, each input asked
twice, with a varied input (one whose right answer differs) and up to four of the inputs A was given in
its own question's tests, in an order the student's code cannot predict. Credit is refused, with the
reason told, unless A answers as a function of its arguments would: the same inputs, the same answer,
now and in its own question; and an answer that changes when the inputs do. A degenerate composition
(NaN, all zeros) earns nothing.

Use from a grading test module (docs/authoring.md, "Carried-forward credit"):
  * `judged(sub, A, args, got, check)` around the value check of each test of A in its own question:
    it remembers the arguments and answer, and whether the check failed (only then is anything carried);
  * `close_carried(sub, close, note, failure, got, name=B, by=A, question=..., compose=..., vary=...)`
    when B's own check failed with `failure`: `compose(ask)` builds B's expected value from
    `ask([args, ...])`, A's answers to those arguments; `vary(args)` gives other arguments to A;
    `alike(ask)` what wrong B's would give with the same A: a composition equal to one of them carries
    nothing (A's mistake erased what B's answer could show);
  * `close_raised(sub, note, error, name=B, by=A, question=..., compose=..., vary=...)` when B raised
    `error` instead: it passes when the same composition of A's answers raises the very exception B's code did;
  * `close_workers()` at the end of the module (a module-scoped fixture), `set_seed(seed)` at its start.

What it is not: a judge of values (the test's `close` decides) or a runner of student code (the fresh
worker is a `checker.running.sandbox.SubmissionHandle`). It holds no knowledge of any assignment.
"""

import os
import random
import weakref

import numpy as np

from checker.errors import GradingFailure, StudentError

__all__ = ["OWN_FUNCTION", "NOT_CARRIED", "judged", "lost_points", "answers", "close_carried", "close_workers",
           "close_raised", "set_seed"]

OWN_FUNCTION = ("right with your own {by}, which is wrong: counted in {question} only "
                "(fix {by} and {name} follows)")
NOT_CARRIED = "\n(Your {by} was not used to excuse this answer: {why}.)"

KEPT = 8   # answers of A kept from its own question's tests
ASKED_AGAIN = 4  # of which this many are asked again of the fresh worker


class _State:
    """One function A of one submission: `failed` (a test of A's own question failed in this run), `own`
    [(args, answer)] A gave in those tests, `worker` (the fresh worker that only answers A), `refused`
    (why A's answers excuse nothing, once found), `asks` (how many batches were asked, for the order)."""

    def __init__(self):
        self.failed, self.own, self.worker, self.refused, self.asks = False, [], None, None, 0


_STATES = weakref.WeakKeyDictionary()  # sub -> {name: _State}
_UNREF = {}  # a handle that cannot be weakly referenced: its own states, for this process
_SEED = {"seed": None}


def set_seed(seed):
    """The run's seed: the order of the asks follows it (a regrade asks in the same order); never sent to a
    worker. None: an order from os.urandom."""
    _SEED["seed"] = seed


def _state(sub, name):
    try:
        states = _STATES.setdefault(sub, {})
    except TypeError:
        states = _UNREF.setdefault(id(sub), {})
    return states.setdefault(name, _State())


def _plain(value, name):
    from checker.judging.compare import as_plain_array
    try:
        a = as_plain_array(value, name)
    except (GradingFailure, TypeError, ValueError):
        return None
    return a.astype(np.float64) if a.dtype.kind in "fiu" else None


def _copy(args):
    return tuple(np.array(a, copy=True) if isinstance(a, np.ndarray) else a for a in args)


def judged(sub, name, args, got, check):
    """Run `check()`, the value check of a test of `name` in its own question, remembering the arguments
    sent, the answer, and whether the check failed (GradingFailure, raised again)."""
    state = _state(sub, name)
    answer = _plain(got, name)
    if answer is not None and len(state.own) < KEPT:
        state.own.append((_copy(args), answer))
    try:
        check()
    except GradingFailure:
        state.failed = True
        raise


def lost_points(sub, name):
    """Whether a test of `name` in its own question failed in this run."""
    return _state(sub, name).failed


def _worker(sub, name):
    state = _state(sub, name)
    if state.worker is None:
        from checker.running.sandbox import SubmissionHandle
        handle = SubmissionHandle(sub.path, sub.zygote, sub.limits, sub.secrets, f"{sub.id}-{name}")
        weakref.finalize(sub, handle.close)
        state.worker = handle
        handle.load()
    return state.worker


def close_workers():
    """End every fresh worker this module started (at the end of the grading tests' module)."""
    for states in list(_STATES.values()) + list(_UNREF.values()):
        for state in states.values():
            if state.worker is not None:
                state.worker.close()
                state.worker = None
    _UNREF.clear()


def _same(a, b):
    return a is not None and b is not None and a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0,
                                                                                     equal_nan=True)


def _equal_args(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) if isinstance(x, np.ndarray) or isinstance(y, np.ndarray)
                                    else x == y for x, y in zip(a, b))


def answers(sub, name, calls, vary):
    """The student's `name` of each argument tuple of `calls`, as the fresh worker answers them (float64
    arrays). GradingFailure (with the reason, kept: later asks are refused at once) where the answers are
    not those of a function of its arguments (see the module's docstring)."""
    state = _state(sub, name)
    if state.refused:
        raise GradingFailure(state.refused)
    calls = [tuple(c) for c in calls]
    asks = [("s", i, c) for i, c in enumerate(calls)] * 2
    asks += [("v", i, tuple(vary(c))) for i, c in enumerate(calls)]
    asks += [("q", i, args) for i, (args, _) in enumerate(state.own[:ASKED_AGAIN])]
    seed = _SEED["seed"]
    order = os.urandom(8) if seed is None else f"{seed}:{getattr(sub, 'id', '')}:{name}:{state.asks}"
    state.asks += 1
    random.Random(order).shuffle(asks)  # an order the student's code cannot predict
    worker, got = _worker(sub, name), {}
    for kind, i, args in asks:
        try:
            value = _plain(worker.call(name, *args), name)
        except (GradingFailure, StudentError):
            value = None
        got.setdefault((kind, i), []).append(value)
    whys = []  # the first reason found is told
    for i, args in enumerate(calls):
        first, again = got[("s", i)]
        if first is None:
            whys.append("it gave no answer of numbers to the inputs asked")
        elif not _same(first, again):
            whys.append("it gave two different answers to the same inputs")
        elif not _equal_args(args, tuple(vary(args))) and _same(first, got[("v", i)][0]):
            whys.append("its answer did not change when its inputs did")
    for i, (args, answer) in enumerate(state.own[:ASKED_AGAIN]):
        if not _same(got[("q", i)][0], answer):
            whys.append("it answered inputs of its own question's tests otherwise than it did in those tests")
    if whys:
        why = whys[0]
        state.refused = why
        raise GradingFailure(why)
    return [got[("s", i)][0] for i in range(len(calls))]


def close_carried(sub, close, note, failure, got, *, name, by, question, compose, vary, dtype=None, alike=None):
    """After B's (`name`) own check failed with `failure`: pass with a note when A (`by`) lost points in
    its own `question` in this run and `got` equals `compose(ask)`, B's value built from A's answers
    (`ask(calls)`, from the fresh worker); else raise `failure` again (with the reason where A's answers
    were refused).

    alike(ask): [(what, value)], what a wrong B would give with the same A (multi-head attention as one head
    of the full width; the caller gives none where the handout's B is as close to it, as with one head). Where
    the composition equals one of them (to the answer's precision), A's mistake has erased what B's answer
    could show of B's own work (a self_attention that ignores W_Q and W_K, linear in W_V: its heads,
    concatenated, are one head), so nothing is carried, and the reason is told. Where the composition itself
    raises (A's answers of a shape the handout's B cannot compose), nothing is carried either, and that is told."""
    if not lost_points(sub, by):
        raise failure
    erased = None
    try:
        ask = lambda calls: answers(sub, by, calls, vary)  # noqa: E731
        try:
            carried = np.asarray(compose(ask), dtype=np.float64)
        except GradingFailure:
            raise
        except Exception as e:  # A's answers do not fit the handout's composition (a head of the wrong shape)
            erased = f"with its answers, the handout's {name} itself raises {type(e).__name__}"
        if erased is None and not (np.isfinite(carried).all() and np.any(carried)):
            raise failure from None
        # the same answer, as far as numbers of the answer's precision tell (float32: a few units of its last place)
        rel = 1e-5 if str(np.dtype(dtype or np.float64)) in ("float32", "float16") else 1e-9
        for what, value in (alike(ask) if alike is not None and erased is None else ()):
            value = np.asarray(value, dtype=np.float64)
            scale = max(float(np.max(np.abs(carried))), 1e-300)
            if value.shape == carried.shape and np.max(np.abs(carried - value)) <= rel * scale:
                erased = (f"with it, {what} gives the same answer as the handout's {name}, so your answer cannot "
                          f"show your {name}'s own work")
                break
        if erased is None:
            close(got, carried, what="", dtype=dtype)
    except GradingFailure as e:
        refused = _state(sub, by).refused
        if e is not failure and refused and e.message == refused:
            raise failure.retold(failure.message + NOT_CARRIED.format(by=by, why=refused)) from None
        raise failure from None
    if erased is not None:
        raise failure.retold(failure.message + NOT_CARRIED.format(by=by, why=erased)) from None
    note(OWN_FUNCTION.format(by=by, question=question, name=name))


def close_raised(sub, note, error, *, name, by, question, compose, vary):
    """After B (`name`) raised `error` (a StudentError) where its question's check would have judged a value:
    pass with a note when A (`by`) lost points in its own `question` in this run and a composition of A's
    own answers as the handout specifies B (`compose(ask)` as for `close_carried`, or a list of such, each a
    faithful way of writing B: they differ only on answers of A that the handout's B was never given) raises
    an exception of the very class B's code raised (a head of the wrong shape meeting the concatenation:
    numpy's AxisError in both), so that B's error is what A's mistake gives B, charged in A's question only.
    Else raise `error` again (with the reason where A's answers were refused)."""
    if not lost_points(sub, by) or not getattr(error, "exc_types", ()):
        raise error
    for way in (compose if isinstance(compose, (list, tuple)) else [compose]):
        try:
            way(lambda calls: answers(sub, by, calls, vary))
        except GradingFailure as e:
            refused = _state(sub, by).refused
            if refused and e.message == refused:
                raise error.retold(error.message + NOT_CARRIED.format(by=by, why=refused)) from None
            raise error from None
        except Exception as e:
            if type(e).__name__ == error.exc_types[0]:
                note(OWN_FUNCTION.format(by=by, question=question, name=name))
                return
    raise error
