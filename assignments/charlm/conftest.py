"""The fixtures every grading test of `charlm` uses (pytest finds this file beside the tests).

What it is not: a place for the tests (test_charlm_<question>.py) or their helpers (_common.py).
"""

from ._common import *  # noqa: F401,F403

collect_ignore = ["examples"]  # the example submissions are graded, never collected as tests


@pytest.fixture
def close(close, sub):
    """The plugin's close, naming an answer that this function already gave for other inputs
    (checker.judging.edge_gate: a result cached in a global)."""
    return logged_close(close, sub)


@pytest.fixture(autouse=True)
def _answers_as_ref(ref):
    """A computes, records or replays as this test's `ref` does (checker.running.recorded.Answers)."""
    with A.following(ref):
        yield
