"""Answers rounded to a few decimal places (trusted side): what the `close` of conftest.py says of them.

What it is for: a function that returns `np.round(weights, 6)` (the handout prints its values rounded to 6 places)
is off by up to 5e-7, which fails a float64 test and passes at float32's precision, so the comparison's own note
("agree ... to float32 precision only: computed in float32 somewhere?") names the wrong cause. Read from the
answer itself: every value a multiple of 10^-k (k >= 2 places, the last one used) and within half of 10^-k of the
expected value is the expected answer rounded to k places, which a float32 computation never gives. An answer
computed from rounded weights (context_vector) is not rounded itself: there the note is kept and the softmax's
own rounding, as the Q1 tests of get_attention_weights recorded it (_carried._Carry.q1), is named beside it.

What it is not: a change of any verdict (only the message of a failing comparison is retold), or code that
computes an answer (no reference value is made here: the expected one comes from the test).
"""

import numpy as np

from checker.errors import GradingFailure
from checker.judging.compare import as_plain_array

from ._carried import _carry

FLOAT32_NOTE = "Your values agree with the expected ones to float32 precision only"
ROUNDED = ("the values are rounded to {k} decimal places (`np.round(..., {k})`, `round(x, {k})`, or numbers "
           "printed and read back): each is the expected value rounded so. The handout shows its numbers rounded "
           "for reading; the functions must return them unrounded")
ROUNDED_WEIGHTS = ("\nYour values agree with the expected ones to float32 precision only. Your get_attention_weights "
                   "returned its weights rounded to {k} decimal places in the tests of Q1: where this answer is "
                   "computed from them, that rounding is the likely cause (return the weights unrounded); else, "
                   "was this float64 input computed in float32 somewhere?")


def _decimals(values):
    """The fewest decimal places k (0..8) of which every value is a multiple, or None (a float64 answer only: a
    float32 one cannot hold such decimals exactly)."""
    if values.dtype != np.float64 or not values.size or not np.isfinite(values).all():
        return None
    for k in range(0, 9):
        scaled = values * 10.0 ** k
        if np.all(np.abs(scaled - np.round(scaled)) <= 4e-15 * np.abs(scaled) + 1e-9):  # float64's rounding
            return k
    return None


def _places(values):
    """_decimals where it is 2 or more: 0 or 1 places (a one-hot answer, whole numbers) tell no rounding."""
    k = _decimals(values)
    return k if k is not None and k >= 2 else None


def rounded_places(got, expected):
    """k where `got` is `expected` rounded to k decimal places (and `expected` is not), else None."""
    try:
        g = as_plain_array(got, "the answer")
        e = np.asarray(expected, dtype=np.float64)
    except (GradingFailure, TypeError, ValueError):
        return None
    if g.shape != e.shape or g.dtype.kind != "f":
        return None
    k = _places(g)
    if k is None or _places(e) is not None or not np.isfinite(e).all():
        return None
    return k if np.all(np.abs(g - e) <= 0.5 * 10.0 ** -k * (1 + 1e-6) + 1e-12) else None


def softmax_rounded(sub):
    """k where the student's get_attention_weights answered float64 scores in the Q1 tests with weights rounded to
    k decimal places (every answer kept, none exact), else None."""
    places = [_decimals(np.asarray(answer)) for scores, answer in _carry(sub).q1
              if answer is not None and np.asarray(scores).dtype == np.float64]
    if not places or None in places or max(places) < 2:
        return None  # an answer unrounded (or none kept): the softmax does not round
    return max(places)


def _told(message, got, expected, sub):
    k = rounded_places(got, expected)
    if k is not None:
        kept = [line for line in message.split("\n") if not line.startswith(FLOAT32_NOTE)]
        text = "\n".join(kept)
        return text if "Likely mistake" in text else f"{text}\nLikely mistake: {ROUNDED.format(k=k)}."
    if FLOAT32_NOTE in message:
        k = softmax_rounded(sub)
        if k is not None:
            kept = [line for line in message.split("\n") if not line.startswith(FLOAT32_NOTE)]
            return "\n".join(kept) + ROUNDED_WEIGHTS.format(k=k)
    return None


def rounding_told(close, sub):
    """`close`, whose failure on an answer rounded to a few decimal places (or computed from weights the student's
    softmax rounds) says so instead of blaming float32 alone."""
    def judged(got, expected, *args, **kwargs):
        try:
            return close(got, expected, *args, **kwargs)
        except GradingFailure as e:
            told = _told(e.message or "", got, expected, sub)
            if told is None:
                raise
            raise e.retold(told) from None
    return judged
