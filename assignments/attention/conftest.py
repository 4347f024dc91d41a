"""The fixtures every grading test of `attention` uses (pytest finds this file beside the tests).

What it is not: a place for the tests (test_attention_<question>.py) or their helpers (_common.py).
"""

from ._common import *  # noqa: F401,F403
from ._carried import *  # noqa: F401,F403 - the softmax oracles (_CARRIES) and the asks' seed (_ASK_SEED)
from ._rounded import rounding_told

collect_ignore = ["examples"]  # the example submissions are graded, never collected as tests


@pytest.fixture
def close(close, sub):
    """The plugin's close, naming an answer that this function already gave for other inputs
    (checker.judging.edge_gate: a result cached in a global) and one rounded to a few decimal places
    (_rounded.py: not blamed on float32)."""
    return rounding_told(logged_close(close, sub), sub)


@pytest.fixture(autouse=True)
def _answers_as_ref(ref):
    """A computes, records or replays as this test's `ref` does (checker.running.recorded.Answers)."""
    with A.following(ref):
        yield


@pytest.fixture(scope="session", autouse=True)
def _softmax_oracles_closed(request):
    """The fresh workers of _Carry (and of checker.running.carry) end with the submission's grading (this pytest
    session: the runner starts one per submission), not with a question's file."""
    plugin = next((p for p in request.config.pluginmanager.get_plugins()
                   if isinstance(getattr(p, "run_seed", None), int)), None)
    _ASK_SEED["seed"] = plugin.run_seed if plugin is not None else None
    carry.set_seed(_ASK_SEED["seed"])
    yield
    carry.close_workers()
    for state in list(_CARRIES.values()):
        if state.oracle is not None:
            state.oracle.close()
            state.oracle = None
