"""Hostile submissions against checks that used to be decided inside the student's process (issue 17, 6-7).

Each submission is written as an attacker would write it, graded end to end by `Grader.grade` in real
workers, and compared with its plain twin (the same mistakes without the trick), which must score at
least as much: the trick earns nothing.

  * "by hand" and "arguments left unchanged" (Q1): a submission that reads its caller's frames to
    recognise the probe, one that finds the probe through gc and replaces it, and one that calls the
    library from a helper thread. Now "by hand" is read from the source on the trusted side
    (checker.running.by_hand) and the arguments are compared there with the copies it kept.
  * carried-forward credit (Q2/Q3): a softmax that is wrong in Q1 and answers the weights that excuse
    stubs ignoring W_Q and W_K once the stubs have run (a global flag) or after enough calls (a counter).
    Now the carried answers come from a fresh worker that never runs the function under test, asked
    twice in a random order among Q1's inputs.
"""
import textwrap

import pytest

from sandbox_helpers import GOOD, write

# ------------------------------------------------------------------ item 6: probes told what to answer

# the plain twin: torch's softmax, and scale_scores divides the caller's array in place
PLAIN_6 = GOOD + textwrap.dedent('''
    import torch


    def get_attention_weights(scores):
        return torch.softmax(torch.as_tensor(np.asarray(scores, dtype=float)), dim=-1).numpy()


    def scale_scores(scores, n):
        scores /= math.sqrt(n)
        return scores
''')

FRAMES = GOOD + textwrap.dedent('''
    import sys
    import torch


    def _probed(name):
        f = sys._getframe(1)
        while f is not None:
            if f.f_code.co_name == name:
                return f
            f = f.f_back
        return None


    def get_attention_weights(scores):
        s = np.asarray(scores, dtype=float)
        if _probed("torch_calls"):  # watched: do it by hand
            e = np.exp(s - s.max(axis=-1, keepdims=True))
            return e / e.sum(axis=-1, keepdims=True)
        return torch.softmax(torch.as_tensor(s), dim=-1).numpy()


    def scale_scores(scores, n):
        scores /= math.sqrt(n)
        probe = _probed("call_changes")
        if probe is not None:  # make the probe's copies match what we did to its arguments
            for b, a in zip(probe.f_locals.get("before") or [], probe.f_locals.get("args") or []):
                if b is not None and b.shape == a.shape:
                    b[...] = a
        return scores
''')

GC = GOOD + textwrap.dedent('''
    import gc
    import torch


    def _tame_the_probe():
        for obj in gc.get_objects():
            if type(obj).__name__ == "Probes" and not getattr(obj, "_tamed", False):
                def torch_calls(name, args, kwargs, _p=obj):
                    return {"value": _p.function(name)(*args, **(kwargs or {})), "calls": []}

                def call_changes(name, args, kwargs, _p=obj):
                    return {"value": _p.function(name)(*args, **(kwargs or {})), "changed": []}
                obj.torch_calls, obj.call_changes, obj._tamed = torch_calls, call_changes, True


    def get_attention_weights(scores):
        _tame_the_probe()
        return torch.softmax(torch.as_tensor(np.asarray(scores, dtype=float)), dim=-1).numpy()


    def scale_scores(scores, n):
        _tame_the_probe()
        scores /= math.sqrt(n)
        return scores
''')

THREAD = GOOD + textwrap.dedent('''
    import threading
    import torch


    def _softmax_elsewhere(out, s):
        out.append(torch.softmax(torch.as_tensor(s), dim=-1).numpy())


    def get_attention_weights(scores):
        out = []
        t = threading.Thread(target=_softmax_elsewhere, args=(out, np.asarray(scores, dtype=float)))
        t.start()
        t.join()
        return out[0]


    def scale_scores(scores, n):
        scores /= math.sqrt(n)
        return scores
''')


def _tests(card, qid):
    q = next(q for q in card["questions"] if q["id"] == qid)
    return q, {t["name"].split("[")[0]: t for t in q["tests"]}


@pytest.fixture(scope="module")
def plain_6(grader, tmp_path_factory):
    return grader.grade(write(tmp_path_factory.mktemp("plain6"), "plain.py", PLAIN_6), "attention")


def test_plain_twin_loses_the_points_in_question(plain_6):
    q, tests = _tests(plain_6, "Q1")
    assert tests["test_attention_weights_by_hand"]["outcome"] == "failed"
    assert tests["test_q1_functions_leave_their_arguments_unchanged"]["outcome"] == "failed"


@pytest.mark.parametrize("attack", ["FRAMES", "GC", "THREAD"])
def test_probe_tricks_earn_nothing(grader, tmp_path, plain_6, attack):
    card = grader.grade(write(tmp_path, "attack.py", globals()[attack]), "attention")
    q, tests = _tests(card, "Q1")
    base, _ = _tests(plain_6, "Q1")
    assert tests["test_attention_weights_by_hand"]["outcome"] == "failed", tests["test_attention_weights_by_hand"]
    if attack != "THREAD":  # the thread attack leaves the in-place division as it is: caught before too
        assert tests["test_q1_functions_leave_their_arguments_unchanged"]["outcome"] == "failed"
    assert q["score"] <= base["score"], (q["score"], base["score"])


# ------------------------------------------------------------------ item 7: carried credit steered

# Q1's softmax normalises over the wrong axis (it loses Q1 points); the stubs ignore W_Q and W_K and
# answer what uniform weights would give.
STUBS = textwrap.dedent('''
    def _wrong_axis(s):
        s = np.asarray(s, dtype=float)
        e = np.exp(s - s.max(axis=0, keepdims=True))
        return e / e.sum(axis=0, keepdims=True)


    def self_attention(X, W_Q, W_K, W_V):
        _ran()
        V = X @ W_V
        return np.tile(V.mean(axis=0), (len(X), 1))


    def self_attention_token(X, W_Q, W_K, W_V, i):
        return self_attention(X, W_Q, W_K, W_V)[i]


    def multi_head_attention(X, W_Q, W_K, W_V, W_O, num_heads):
        return self_attention(X, W_Q, W_K, W_V) @ W_O
''')

PLAIN_7 = GOOD + STUBS + textwrap.dedent('''
    def _ran():
        pass


    def get_attention_weights(scores):
        return _wrong_axis(scores)
''')

FLAG = GOOD + STUBS + textwrap.dedent('''
    _STUBS_RAN = []


    def _ran():
        _STUBS_RAN.append(1)


    def get_attention_weights(scores):
        s = np.asarray(scores, dtype=float)
        if _STUBS_RAN:  # asked right after a stub: the weights that make the stub "right"
            return np.ones_like(s) / s.shape[-1]
        return _wrong_axis(s)
''')

COUNTER = GOOD + STUBS + textwrap.dedent('''
    _CALLS = [0]


    def _ran():
        pass


    def get_attention_weights(scores):
        s = np.asarray(scores, dtype=float)
        _CALLS[0] += 1
        if _CALLS[0] > 24:  # Q1's tests are over: from here on the answers serve the stubs
            return np.ones_like(s) / s.shape[-1]
        return _wrong_axis(s)
''')


@pytest.fixture(scope="module")
def plain_7(grader, tmp_path_factory):
    return grader.grade(write(tmp_path_factory.mktemp("plain7"), "plain.py", PLAIN_7), "attention")


@pytest.mark.parametrize("attack", ["FLAG", "COUNTER"])
def test_steered_softmax_carries_nothing(grader, tmp_path, plain_7, attack):
    card = grader.grade(write(tmp_path, "attack.py", globals()[attack]), "attention")
    for qid in ("Q2", "Q3"):
        q, tests = _tests(card, qid)
        base, _ = _tests(plain_7, qid)
        assert q["score"] <= base["score"], (qid, q["score"], base["score"])
    _, q2 = _tests(card, "Q2")
    _, q3 = _tests(card, "Q3")
    assert q2["test_self_attention_handout"]["outcome"] == "failed", q2["test_self_attention_handout"]
    assert q3["test_multi_head_attention_handout"]["outcome"] == "failed", q3["test_multi_head_attention_handout"]
