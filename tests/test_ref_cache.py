"""Every speed-up of grading, and the reference's answers kept from one submission to the next
(checker.running.ref_cache) among them, changes no scorecard.

A grader as a batch runs it grades a sample of each assignment's example submissions (the reference, honest
variants and named mistakes, whose hints are computed on the trusted side) one after another, so that each
after the first is graded from the reference answers the earlier ones left, in one pytest session
(checker.running.session, its items run by checker.running.lean_protocol), with each test's asks sent to the
worker together (checker.running.together), the plugin giving the parametrized values up front
(plugin._direct_params) and property tests' examples drawn once (HwcheckPlugin.replay_examples). A grader
with none of them (no cache, a pytest.main per submission, every ask alone at its get(), every parametrized
value from pytest's fixtures, every example drawn by hypothesis) grades the same files with the same seed.
The scorecards must be the same byte for byte once the times (and the walls' per-worker uid) are left out,
and each speed-up must really have acted (else the comparison proves nothing of it). One comparison for all
of them, since each costs a grading of the whole sample: tests/test_lean_protocol.py, test_examples_first.py
and test_session.py compare one speed-up alone on attention, raw reports included.
"""
import json
import os
import re

import pytest

import checker.running.together as together
from checker.running import plugin as plugin_module
from checker.running.plugin import HwcheckPlugin
from checker.running.ref_cache import CachingRef, RefCache, cached_call
from checker.running.runner import Grader
from checker.spec import assignment_ids, example_dirs

SEED = 424242


def _without_times(card):
    """The scorecard as JSON text, its measured durations left out and the walls' per-worker uid written as
    N (they differ from one grade to the next, cache or not)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: (re.sub(r"uid \d+", "uid N", json.dumps(x)) if k == "isolation" else strip(x))
                    for k, x in v.items() if k != "duration_s"}
        if isinstance(v, list):
            return [strip(x) for x in v]
        return v
    return json.dumps(strip(card), sort_keys=False, ensure_ascii=False)


def _sample(aid):
    """correct, then every 6th other example (sorted), so each assignment's sample has mistakes with hints."""
    entries = []
    for folder in example_dirs(aid):
        entries += sorted(os.path.join(folder, e) for e in os.listdir(folder)
                          if e != "expected.json" and not e.startswith((".", "__")))
    correct = [e for e in entries if os.path.splitext(os.path.basename(e))[0] == "correct"]
    rest = [e for e in entries if e not in correct]
    return correct + rest[::6]


@pytest.mark.slow
@pytest.mark.parametrize("aid", assignment_ids())
def test_scorecards_same_with_every_speed_up_and_with_none(aid, monkeypatch):
    sample = _sample(aid)
    assert len(sample) >= 3, sample
    sent, given = [], []  # what the speed-ups did: asks sent together, parametrized values given up front
    send, direct = together.Together.send, plugin_module._direct_params

    def counting_send(self):
        was = self.sent
        send(self)
        if not was and self.round_trips:
            sent.append(len(self.asks))

    def counting_direct(item):
        names = direct(item)
        given.extend(names)
        return names
    monkeypatch.setattr(together.Together, "send", counting_send)
    monkeypatch.setattr(plugin_module, "_direct_params", counting_direct)
    with Grader(mode="hidden", seed=SEED) as fast:
        got = [_without_times(fast.grade(p, aid)) for p in sample]
        again = _without_times(fast.grade(sample[0], aid))  # every reference answer now from the cache
        hits, kept = fast.ref_cache.hits, len(fast.ref_cache)
        (held,) = fast._sessions.values()  # one session graded them all (checker.running.session)
        lean, replayed = held.lean_items, held.plugin.examples_replayed
    assert sent and given and lean > 0, (len(sent), len(given), lean)
    if aid == "attention":  # its property tests are the ones whose examples are drawn once
        assert replayed > 0
    if aid != "vit":  # vit's tests ask the reference almost nothing: it may keep little
        assert kept > 0 and hits > kept, (hits, kept)

    monkeypatch.setattr(together, "SEND_TOGETHER", False)
    monkeypatch.setattr(plugin_module, "_direct_params", lambda item: ())
    monkeypatch.setattr(HwcheckPlugin, "replay_examples", False)
    sent.clear()
    with Grader(mode="hidden", seed=SEED, ref_cache=False, reuse_session=False) as plain:
        assert plain.ref_cache is None and not plain._sessions
        want = [_without_times(plain.grade(p, aid)) for p in sample]
    assert not sent
    for path, w, g in zip(sample, want, got):
        assert g == w, f"{os.path.basename(path)}: the scorecard differs with the speed-ups"
    assert again == want[0]


def test_cached_answers_are_copies_and_keyed_by_arguments():
    import numpy as np
    calls = []

    def softmax(x, axis=-1):
        calls.append(1)
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    class Module:
        pass
    mod = Module()
    mod.softmax, mod.WIDTH = softmax, 4
    cache = RefCache()
    ref = CachingRef(mod, cache, ("a", "sha", 1, "test_x"))
    x = np.arange(6.0).reshape(2, 3)
    first = ref.softmax(x)
    first[0, 0] = 99.0  # a test that changes its answer in place changes only its own copy
    second = ref.softmax(x)
    assert len(calls) == 1 and second[0, 0] != 99.0
    np.testing.assert_array_equal(second, softmax(x))
    ref.softmax(x, axis=0)  # other arguments: computed
    ref.softmax(x + 1)
    assert len(calls) == 1 + 1 + 2  # (the direct call above counts one)
    other = CachingRef(mod, cache, ("a", "sha", 1, "test_y"))  # another test: its own entries
    other.softmax(x)
    assert len(calls) == 5
    assert ref.WIDTH == 4


def test_values_that_are_not_plain_data_are_computed_each_time():
    import numpy as np
    cache, made = RefCache(), []

    def build(n):
        made.append(n)
        return {"layer": object()}  # not plain data: never kept

    cached_call(cache, "s", "build", build, (3,), {})
    cached_call(cache, "s", "build", build, (3,), {})
    assert made == [3, 3] and len(cache) == 0
    cached_call(cache, "s", "f", lambda a: 1, (object(),), {})  # an argument that cannot be digested
    assert cache.uncacheable == 1
    small = RefCache(max_bytes=1000)  # past its bound it keeps nothing more
    cached_call(small, "s", "z", np.zeros, (10_000,), {})
    assert len(small) == 0
