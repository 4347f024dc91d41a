"""Grading tests of `charlm`, question data (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._data import *  # noqa: F401,F403 - build_vocab and make_blocks checks


@pytest.mark.question("data")
@pytest.mark.parametrize("text", ["hello", "hello world", "to be,\nor not to be.", "aaaa"],
                         ids=["hello", "hello-world", "two-lines", "aaaa"])
def test_build_vocab(sub, text):
    # these texts are lower-case ASCII with no space at their ends (one is a single character, where any order
    # is sorted): a vocabulary of text.lower(), of its ASCII characters only, sorted case-insensitively or of
    # text.strip() is right on them. Each earns its points only for a build_vocab also right on REVEALING,
    # asked in the same round trip (a student probe, h43: such code had 10/10 in `hwcheck check`)
    with sub.together(chain=True) as t:
        edge, other = t.call("build_vocab", text), t.call("build_vocab", REVEALING)
    _check_vocab(edge.get(), text)
    only_if_right_elsewhere("build_vocab", "lower-case ASCII text" if len(set(text)) > 1 else "a single character",
                            f"build_vocab({REVEALING!r})", lambda: _check_vocab(other.get(), REVEALING))


@pytest.mark.question("data")
def test_build_vocab_keeps_every_character(sub):
    # capitals beside their lower case, characters outside ASCII, white space only at the text's ends: the
    # vocabulary is every character of the text as it is, sorted by code point (the handout)
    _check_vocab(sub.call("build_vocab", REVEALING), REVEALING)


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
