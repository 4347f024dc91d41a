"""The fixtures every grading test of `vit` uses (pytest finds this file beside the tests).

What it is not: a place for the tests (test_vit_<question>*.py, test_vit_blocks.py) or their helpers (_common.py).
"""

from ._common import *  # noqa: F401,F403

collect_ignore = ["examples"]  # the example submissions are graded, never collected as tests


@pytest.fixture(autouse=True)
def _answers_as_ref(ref):
    """A computes, records or replays as this test's `ref` does (checker.running.recorded.Answers)."""
    with A.following(ref):
        yield
