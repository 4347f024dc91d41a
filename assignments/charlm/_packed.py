"""What test_model_attention_scaled_by_the_head_width does where the grader cannot read the model's attention
layout (trusted side): it fails closed, saying so, instead of skipping.

What it is for: the temperature test (_temperature.py) sets the attention's projections from their names and shapes
(_layouts.py, packed parameters included). Where it sets none at all, or the model then answers as no structure
the grader knows while some of its parameters that may be projections (a whole number of D x D/h blocks:
_layouts._unread; a table of positions or a bias is none) were left as built or read only from their size (a flat
parameter packing q, k, v), a wrong scale cannot be told from a misread layout. A skip there spread the test's points over
the question's other tests, so a model whose scores were never divided by sqrt(d_k) lost nothing once its
projections were packed into one flat parameter (found by a probe, 2026-11-28); a student may choose any layout,
but the scale is a mistake HOMEWORK.md names. So the test fails, with no likely mistake named (nothing wrong was
seen) and a message that says the grader could not read the layout and that a TA checks the scale by hand
(checker.judging.packed_layouts.unread_message, starting with UNREAD_MARK). A right model in such a layout loses the
test's points until then, with that message, rather than a wrong one keeping them in silence. Skips for other
reasons stand: a model the other tests judge (it fails to build or to run), and one whose layout was read in full
but whose structure the grader does not know (rotary positions, extra layers) or whose output scale does not show.

What it is not: the judging of the temperature (_temperature.py), or the reading of a layout (_layouts.py).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._layouts import _unread
from ._temperature import _check_temperature
from checker.judging.packed_layouts import unread_message

# the two skips of _check_temperature that a layout the grader cannot read may cause (their texts' starts)
NOT_CHECKED = "the temperature of the attention was not checked: "
LAYOUT_SKIPS = (NOT_CHECKED + "the grader cannot set this model's attention projections",
                NOT_CHECKED + "with its projections set to the identity, the model answers as no structure")


def check_temperature_closed(sub, ref, rng, seed, cfg, note=None):
    """_check_temperature, except that a skip of LAYOUT_SKIPS, where the grader could not read the layout
    (_layouts._unread: no way set, or parameters left as built or read from their size), fails (unread_message)."""
    try:
        _check_temperature(sub, ref, rng, seed, cfg, note)
        return
    except pytest.skip.Exception as e:
        skipped = e
    if not str(skipped.msg).startswith(LAYOUT_SKIPS):
        raise skipped
    try:
        why, names = _unread(_new(sub, cfg, seed), cfg)
    except GradingFailure:
        raise skipped from None
    if not why and not names:
        raise skipped  # every parameter read: a structure the grader does not know, which the other tests judge
    said = str(skipped.msg)[len(NOT_CHECKED):].replace(" (the other tests judge it)", "")
    _fail(f"{unread_message(_cfg_text(cfg), ([why] if why else []) + names)}\n(What the grader saw: {said.split('; the other tests')[0]}.)")
