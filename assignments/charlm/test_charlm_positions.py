"""Grading tests of `charlm`, question positions (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers


@pytest.mark.question("positions")
@pytest.mark.parametrize("T,d", [(1, 4), (6, 8), (5, 7)])
def test_sinusoidal_positions(sub, ref, close, T, d):
    _check_positions(sub, ref, close, T, d)
    if T == 1:  # position 0: sin(0) = 0 and cos(0) = 1 whatever the frequencies
        only_if_right_elsewhere("sinusoidal_positions", "position 0 only", "sinusoidal_positions(6, 8)",
                                lambda: _check_positions(sub, ref, close, 6, 8))


@pytest.mark.question("positions")
@pytest.mark.parametrize("T,d", [(16, 3), (24, 32)])
def test_sinusoidal_positions_more_sizes(sub, ref, close, T, d):
    _check_positions(sub, ref, close, T, d)
