"""Two rules of judging, shared by the assignments' grading tests (trusted side).

What it is for:
  * `only_if_right_elsewhere`: an edge-case input (T = 1, position 0, one head, a single element) is kept
    because it catches crashes, but on it some listed mistakes are invisible (an unscaled attention over
    one token is right). Such a test earns its points only for a function that is also right on an input
    where those mistakes show; otherwise it is skipped, so its share goes to the tests that judge the
    mistake. The same rule as the tests of arguments changed in place: an answer that is not right
    earns nothing there.
  * `AnswerLog`: the answers a submission gave, kept across its tests, so that a wrong answer equal to
    the one given earlier for other inputs is named (a function that caches its first answer in a global).

What it is not: a comparison (checker.judging.compare decides right or wrong) or a place that runs student code;
the tests pass in what they got back from `sub`.
"""

import weakref

import numpy as np
import pytest

from checker.errors import GradingFailure

__all__ = ["EDGE_SKIP", "STALE_ANSWER", "only_if_right_elsewhere", "AnswerLog", "answer_log", "logged_close"]

EDGE_SKIP = ("judged by the other tests, not here: on this input ({edge}) some listed mistakes give the right "
             "answer, so it earns points only for a {name} that is also right on an input where they show, "
             "and on {other} it was not ({why})")

STALE_ANSWER = ("this is the answer it gave earlier for other inputs: the answer did not follow the inputs that "
                "changed. Either the function keeps its first answer (a result cached in a global variable, or "
                "`if result is None: result = ...`) and returns it for later inputs, or what changed is lost on "
                "the way (an argument unused, or a softmax over an axis of size 1, whose weights are all 1: "
                "scores of shape (T, 1) rather than (T,)); compute the answer from every argument on every call")


def only_if_right_elsewhere(name, edge, other, check):
    """After an edge-case test passed: run `check()`, the same function judged on an input where the
    mistakes show (`other` says which); a GradingFailure there skips this test with the reason.

    Call it only once the edge case itself passed: a crash or a wrong answer on the edge case fails as
    it did."""
    try:
        check()
    except GradingFailure as e:
        first = (e.message or "").strip().splitlines()[:1]
        why = first[0][:200] if first else "it failed"
        pytest.skip(EDGE_SKIP.format(edge=edge, name=name, other=other, why=why))


class AnswerLog:
    """The numeric answers one submission gave (capped), by function, each with the expected answer of
    its inputs.

    `stale_hints(key, expected)`: [(STALE_ANSWER, earlier answer)] for each earlier answer of the function
    `key` given for other inputs (another expected answer), as `close` hints: a wrong answer that matches
    one is named."""

    LIMIT = 400

    def __init__(self):
        self.answers = {}
        self.count = 0

    def add(self, key, got, expected):
        if self.count >= self.LIMIT:
            return
        try:
            g = np.array(got, dtype=np.float64, copy=True)
            e = np.array(expected, dtype=np.float64, copy=True)
        except (TypeError, ValueError, OverflowError):
            return
        if g.size and g.size <= 100_000 and np.isfinite(g).all():
            self.answers.setdefault(key, []).append((g, e))
            self.count += 1

    def stale_hints(self, key, expected):
        try:
            e = np.array(expected, dtype=np.float64)
        except (TypeError, ValueError, OverflowError):
            return []
        hints = []
        for g, e0 in self.answers.get(key, ()):
            if e0.shape == e.shape and np.allclose(e0, e, rtol=1e-9, atol=1e-12):
                continue  # the same inputs (as far as the answer tells): keeping it is not a mistake
            hints.append((STALE_ANSWER, g))  # any shape: a table kept from a smaller input, say
        return hints


_LOGS = weakref.WeakKeyDictionary()


def logged_close(close, sub):
    """`close` that names a stale answer: each answer is logged under its function's name (what `what`
    starts with), and the earlier answers of that function to other inputs are added to the hints."""
    log = answer_log(sub)

    def _close(got, expected, *, what="the result", hints=(), **kw):
        key = str(what).split("(")[0].split(":")[0].strip()
        if not key or key == "the result":
            return close(got, expected, what=what, hints=hints, **kw)
        try:
            return close(got, expected, what=what, hints=list(hints or ()) + log.stale_hints(key, expected), **kw)
        finally:
            log.add(key, got, expected)
    return _close


def answer_log(sub):
    """The AnswerLog of one submission handle (a fresh, unkept one when the handle cannot be keyed)."""
    try:
        return _LOGS.setdefault(sub, AnswerLog())
    except TypeError:
        return AnswerLog()
