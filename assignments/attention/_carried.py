"""Carried-forward credit in `attention`'s grading tests (trusted side): an answer of self_attention or
multi_head_attention that is right with the student's own get_attention_weights as its softmax, where that
softmax is wrong on the scores, is counted in Q1 only (`_close_own_softmax`); the softmax's answers to the
scores a later question makes are asked of the worker in the order a regrade asks them (`_softmax_answers`).

What it is not: the tests (test_attention_<question>.py) or the shared data and hints (_common.py).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers


OWN_SOFTMAX = ("right with your own get_attention_weights as the softmax, which is wrong on these scores: "
               "counted in Q1 only (fix get_attention_weights and {name} follows)")
OWN_SOFTMAX_FLOAT32 = ("right with your own get_attention_weights as the softmax, whose answers to float64 scores are "
                       "float32 (accepted in Q1, judged at float32's precision): {name} is judged with them")
NOT_CARRIED = ("\n(Your get_attention_weights was not used to excuse this answer: {why}.)")
NOT_CARRIED_STACKED = ("\n(Your get_attention_weights, called once on the heads' scores stacked (num_heads, T, T), "
                       "was not used to excuse this answer: {why}.)")


class _Carry:
    """What carrying a softmax mistake forward needs to know about one submission, kept across its tests.

    `q1_failed`: a Q1 test of get_attention_weights failed on its values in this run (only a mistake that
    cost points in Q1 is carried). `q1_float32`: it answered float64 scores in float32 (or float16), which Q1
    judges at that precision and accepts (HOMEWORK.md: a float32 answer, float32 tolerances): the weights'
    rounding then reaches Q2's and Q3's float64 answers, which are judged with the student's own weights, as
    a mistake's are (a hidden test failed on 2.6e-7, a student probe, h43). `q1`: [(scores, answer)] the student's softmax gave in those Q1 tests.
    `oracle`: a second worker of the same submission, loaded fresh, that is only ever asked
    get_attention_weights: the answers used to excuse a Q2/Q3 answer come from there, never from the
    worker that has just run the function under test (a softmax that keeps a counter or a flag, or reads
    its stack, answered the "right" weights there only after a stub that ignores W_Q and W_K)."""

    def __init__(self):
        self.q1_failed, self.q1_float32, self.q1, self.oracle, self.refused = False, False, [], None, None


_CARRIES = weakref.WeakKeyDictionary()


def _carry(sub):
    try:
        return _CARRIES.setdefault(sub, _Carry())
    except TypeError:  # a handle that cannot be weakly referenced: nothing is carried
        return _Carry()


_ASK_SEED = {}  # the run's seed, for the order of _softmax_answers' asks (a regrade asks in the same order)


def _q1_softmax_judged(sub, close, scores, got, expected, **kw):
    """close() for a Q1 test of get_attention_weights, remembering its input, answer and whether it failed."""
    state = _carry(sub)
    if str(getattr(got, "dtype", "")) in ("float32", "float16") and np.asarray(scores).dtype == np.float64:
        state.q1_float32 = True  # float64 scores answered at a lower precision (accepted below, at that one)
    if len(state.q1) < 16:
        try:
            from checker.judging.compare import as_plain_array
            answer = as_plain_array(got, "get_attention_weights")
            # kept only where it can be compared (the shape of the scores): a huge wrong answer is not kept
            state.q1.append((np.array(scores, copy=True), answer if answer.shape == np.shape(scores) else None))
        except (GradingFailure, TypeError, ValueError):
            pass
    try:
        close(got, expected, **kw)
    except GradingFailure:
        state.q1_failed = True
        raise


def _oracle(sub):
    """The fresh worker that answers get_attention_weights for carried credit (see _Carry)."""
    state = _carry(sub)
    if state.oracle is None:
        from checker.running.sandbox import SubmissionHandle
        handle = SubmissionHandle(sub.path, sub.zygote, sub.limits, sub.secrets, sub.id + "-softmax")
        weakref.finalize(sub, handle.close)
        handle.load()
        state.oracle = handle
    return state.oracle


def _same(a, b):
    return a is not None and b is not None and a.shape == b.shape and np.allclose(a, b, rtol=1e-12, atol=0,
                                                                                     equal_nan=True)


def _softmax_answers(sub, scores):
    """The student's get_attention_weights of each of `scores`, as the fresh worker answers them.

    Each input is asked twice, and its mirror image (keys reversed) once, shuffled among the inputs of
    the Q1 tests, in an order the student's code cannot predict. Credit is refused (GradingFailure, with
    the reason) unless the function answers as a function of its scores would: the same scores, the same
    answer, now and in Q1; and an answer that changes when the scores do."""
    from checker.judging.compare import as_plain_array
    state = _carry(sub)
    if state.refused:
        raise GradingFailure(state.refused)
    asks = [("s", i, S) for i, S in enumerate(scores)] * 2 + [("m", i, np.flip(S, -1)) for i, S in enumerate(scores)]
    asks += [("q", i, S) for i, (S, _) in enumerate(state.q1[:4])]
    # an order the student's code cannot predict (the run's seed never reaches a worker), the same in a regrade
    seed = _ASK_SEED.get("seed")
    random.Random(os.urandom(8) if seed is None else f"{seed}:{getattr(sub, 'id', '')}:softmax").shuffle(asks)
    oracle, got = _oracle(sub), {}
    for kind, i, S in asks:
        try:
            w = as_plain_array(oracle.call("get_attention_weights", _f64(S)), "get_attention_weights")
            w = w.astype(np.float64) if w.shape == np.shape(S) else None
        except (GradingFailure, TypeError, ValueError):
            w = None
        got.setdefault((kind, i), []).append(w)
    why = None
    for i, S in enumerate(scores):
        first, again = got[("s", i)]
        if first is None:
            raise GradingFailure("")
        if not _same(first, again):
            why = "it gave two different answers to the same scores"
        elif not np.array_equal(S, np.flip(S, -1)) and _same(first, got[("m", i)][0]):
            why = "its answer did not change when the scores did"
    for i, (S, answer) in enumerate(state.q1[:4]):
        if not _same(got[("q", i)][0], answer.astype(np.float64) if answer is not None
                     and answer.shape == np.shape(S) else None):
            why = "it answered scores of the Q1 tests otherwise than it did in those tests"
    if why:
        state.refused = why
        raise GradingFailure(why)
    return [got[("s", i)][0] for i in range(len(scores))]


def _close_own_softmax(sub, close, note, name, got, expected, own, **kw):
    """close(got, expected), with the error carried forward: an answer that is `own()`, the computation
    redone with the student's own get_attention_weights (called on the trusted side's scores), passes with
    a note. The softmax's mistake is Q1's and costs points there only (HOMEWORK.md: a mistake loses points
    on its own question); a function whose own mistake is elsewhere still fails.

    Carried only when the mistake cost points in Q1 (a Q1 test of get_attention_weights failed in this
    run) or the softmax answered float64 scores in float32 (accepted in Q1 at that precision), and only
    from answers the softmax gave when it could not know what they were for: in a fresh
    worker that never runs the function under test, each asked twice among Q1's inputs in a random order
    (_softmax_answers). A softmax that answers otherwise at other times, or ignores its scores, or
    degenerates (zeros, NaN) earns nothing here."""
    try:
        close(got, expected, **kw)
    except GradingFailure as e:
        if not (_carry(sub).q1_failed or _carry(sub).q1_float32):
            raise
        try:
            carried = own()
            last, way_refused = None, None
            for candidate in (carried if isinstance(carried, list) else [carried]):
                if callable(candidate):  # a way asked only where the ways before it missed (_own_mha's 3-D call)
                    state = _carry(sub)
                    kept = state.refused
                    try:
                        candidate = candidate()
                    except GradingFailure as failure:
                        # a refusal of this way's answers refuses this way only (with one head, a softmax
                        # that takes the max of axis 0 answers a (1, T, T) call the same whatever the scores)
                        way_refused = failure.message if failure.message and failure.message != kept else None
                        state.refused = kept
                        continue
                # no credit for a degenerate softmax (zeros, NaN) met by a stub that returns the same, but for
                # the softmax of one score (one token), which a wrong softmax may well make 0 (a log-softmax)
                if not (np.isfinite(candidate).all() and (np.any(candidate) or getattr(own, "one_score", False))):
                    continue
                try:
                    close(got, candidate, what="", dtype=kw.get("dtype"))
                    break
                except GradingFailure as failure:
                    last = failure
            else:
                if way_refused:
                    raise e.retold(e.message + NOT_CARRIED_STACKED.format(why=way_refused)) from None
                raise last or e
        except GradingFailure as failure:
            if NOT_CARRIED_STACKED.split("{")[0] in failure.message:
                raise failure from None
            refused = _carry(sub).refused
            if failure is not e and refused and failure.message == refused:
                raise e.retold(e.message + NOT_CARRIED.format(why=refused)) from None
            raise e from None
        note((OWN_SOFTMAX if _carry(sub).q1_failed else OWN_SOFTMAX_FLOAT32).format(name=name))


def _weights_by(sub, S):
    """The student's get_attention_weights of the scores S (float64), as a float64 array, from the fresh
    worker (_softmax_answers)."""
    return _softmax_answers(sub, [_f64(S)])[0]


def _own_self_attention(sub, X, Wq, Wk, Wv, row=None):
    """own() for _close_own_softmax: self_attention redone with the student's get_attention_weights on the
    trusted side's scores (asked now, so that the kit has them recorded). For one token's row, both ways a
    student computes it: the softmax of that row's scores, or row `row` of self_attention (the handout: row i
    of self_attention is self_attention_token(i); `return self_attention(X, ...)[i]` carries the softmax of
    the whole score matrix, over whichever axis it takes)."""
    S, V = A.scores_and_values(X, Wq, Wk, Wv)
    if row is None:
        own = lambda: _weights_by(sub, S) @ V  # noqa: E731
    else:
        own = lambda: [_weights_by(sub, S[row]) @ V, (_weights_by(sub, S) @ V)[row]]  # noqa: E731
    own.one_score = S.shape[-1] == 1
    return own


def _own_mha(sub, X, Wq, Wk, Wv, Wo, h):
    """own() for _close_own_softmax: multi_head_attention redone with the student's get_attention_weights, both
    ways a student calls it: on each head's (T, T) scores, or once on the heads' scores stacked (h, T, T). The
    second is asked only where the first misses. HOMEWORK.md asks a softmax "over the last axis" that works on
    1-D and 2-D input: that is what Q1 tests, not a rule against calling it on more axes, where a right one
    gives the right heads. A softmax whose mistake shows only there (the max of axis 0, which is the heads of
    a 3-D call) is Q1's mistake, charged in Q1, and multi_head_attention follows it as it follows a 2-D one."""
    parts, Wo = A.heads_scores_and_values(X, Wq, Wk, Wv, h), _f64(Wo)

    def stacked():
        W = _weights_by(sub, np.stack([S for S, _ in parts]))                # (h, T, T), one call
        return np.concatenate([W[i] @ V for i, (_, V) in enumerate(parts)], axis=1) @ Wo

    own = lambda: [np.concatenate([_weights_by(sub, S) @ V for S, V in parts], axis=1) @ Wo,  # noqa: E731
                   stacked]
    own.one_score = all(S.shape[-1] == 1 for S, _ in parts)
    return own


__all__ = [n for n in dir() if not n.startswith("__")]
