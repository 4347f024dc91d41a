"""Asks sent together (checker.running.together) change no scorecard.

A grader grades a sample of each assignment's example submissions (the reference, honest variants and
named mistakes) with every ask sent alone (`together.SEND_TOGETHER = False`), then again with the asks of
each test sent together, with the same seed. The scorecards must be the same byte for byte once the
times (and the walls' per-worker uid) are left out, and asks must really have gone together (else the
comparison proves nothing: an assignment whose tests do not use sub.together yet is skipped).
"""
import pytest

import checker.running.together as together
from checker.running.runner import Grader
from checker.spec import assignment_ids
from test_ref_cache import SEED, _sample, _without_times


@pytest.mark.slow
@pytest.mark.parametrize("aid", assignment_ids())
def test_scorecards_same_with_asks_alone_and_together(aid, monkeypatch):
    sample = _sample(aid)
    sent = []
    orig = together.Together.send

    def send(self):
        was = self.sent
        orig(self)
        if not was and self.round_trips:
            sent.append(len(self.asks))
    monkeypatch.setattr(together.Together, "send", send)
    monkeypatch.setattr(together, "SEND_TOGETHER", False)
    with Grader(mode="hidden", seed=SEED) as g:
        alone = [_without_times(g.grade(p, aid)) for p in sample]
    assert sent == []
    monkeypatch.setattr(together, "SEND_TOGETHER", True)
    with Grader(mode="hidden", seed=SEED) as g:
        both = [_without_times(g.grade(p, aid)) for p in sample]
    if not sent:
        pytest.skip(f"no grading test of {aid} sends asks together (sub.together) yet")
    for path, a, b in zip(sample, alone, both):
        assert b == a, f"{path}: the scorecard differs with asks sent together"
