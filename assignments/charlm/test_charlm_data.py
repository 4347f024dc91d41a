"""Grading tests of `charlm`, question data (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._data import *  # noqa: F401,F403 - build_vocab and make_blocks checks


@pytest.mark.question("data")
@pytest.mark.parametrize("text", ["hello", "hello world", "to be,\nor not to be.", "aaaa"],
                         ids=["hello", "hello-world", "two-lines", "aaaa"])
def test_build_vocab(sub, text):
    if len(set(text)) > 1:
        _check_vocab(sub.call("build_vocab", text), text)
        return
    # one character: any order of the characters (first appearance, a set's) is sorted here
    with sub.together(chain=True) as t:
        edge, other = t.call("build_vocab", text), t.call("build_vocab", "hello")
    _check_vocab(edge.get(), text)
    only_if_right_elsewhere("build_vocab", "a single character", "build_vocab('hello')",
                            lambda: _check_vocab(other.get(), "hello"))


@pytest.mark.question("data")
def test_build_vocab_random_text(sub, rng):
    alphabet = list("abcdefghijklmnopqrstuvwxyzABCDEFXYZ0123456789 .,;:!?'\"\n\t-é€ü")
    text = "".join(rng.choice(alphabet, size=200))
    _check_vocab(sub.call("build_vocab", text), text)


@pytest.mark.question("data")
@pytest.mark.parametrize("L,bs", [(10, 3), (9, 8)])
def test_make_blocks(sub, close, rng, L, bs):
    _check_blocks(sub, close, rng, L, bs)


@pytest.mark.question("data")
@pytest.mark.parametrize("L,bs", [(50, 1), (17, 16)])
def test_make_blocks_more_sizes(sub, close, rng, L, bs):
    _check_blocks(sub, close, rng, L, bs)
