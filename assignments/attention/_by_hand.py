"""The "by hand" tests' helpers in `attention`'s grading tests (trusted side): which library calls would do
a function's work for the student, as the worker's trace names them and as the source scan reads them
(checker.running.by_hand), and `_check_by_hand`, which fails a right answer computed through one.

What it is not: the scan itself (checker.running.by_hand) or the tests (test_attention_<question>.py).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._carried import *  # noqa: F401,F403 - the carried-forward softmax (_close_own_softmax)
from checker.running.by_hand import NameFamily


# Library calls that would do a function's work for the student (the handout: "by hand", numpy only).
# torch's calls are named as torch names them; other libraries' as "library:function".
ATTENTION_CALLS = {"scaled_dot_product_attention": "torch's scaled_dot_product_attention",
                   "multi_head_attention_forward": "torch.nn.MultiheadAttention",
                   "_scaled_dot_product_attention_math": "torch._scaled_dot_product_attention_math",
                   "_native_multi_head_attention": "torch._native_multi_head_attention",
                   "flex_attention": "torch's flex_attention"}
# attention computes a softmax (of the scores): a library's attention is a library's softmax as well
SOFTMAX_CALLS = {"softmax": "torch.softmax", "log_softmax": "torch.log_softmax", "softmin": "torch's softmin",
                 "_softmax": "torch._softmax", "_log_softmax": "torch._log_softmax", "scipy:softmax":
                 "scipy.special.softmax", "scipy:log_softmax": "scipy.special.log_softmax",
                 "sklearn:softmax": "sklearn's softmax", "jax:softmax": "jax.nn.softmax",
                 "tensorflow:softmax": "tf.nn.softmax", **ATTENTION_CALLS}


# The same, as bare names read in the source (checker.running.by_hand): F.softmax, x.softmax(...), nn.Softmax, ...
# torch's own names for the same work count as well: softmin(x) is softmax(-x), and the private ops behind the
# public functions (torch._softmax, torch._scaled_dot_product_attention_math, torch.ops.aten...) compute it too
# Each set is a NameFamily (checker.running.by_hand): besides the names listed, any name whose words hold
# "softmax", "softmin" or "crossentropy" (resp. "attention", "transformer") is one of them whatever torch
# calls it: torch.ops.aten.special_softmax, special_log_softmax, _softmax.default, _safe_softmax, jax's
# _softmax, cross_entropy_loss, _native_multi_head_attention, _transformer_encoder_layer_fwd... in the
# source and in the worker's trace alike (a listed name is kept for how the message shows it)
ATTENTION_WORDS = ("attention", "transformer")
SOFTMAX_WORDS = ("softmax", "softmin", "crossentropy", *ATTENTION_WORDS)
ATTENTION_NAMES = {"scaled_dot_product_attention", "multi_head_attention_forward", "MultiheadAttention",
                   "_scaled_dot_product_attention_math", "_scaled_dot_product_attention_math_for_mps",
                   "_scaled_dot_product_flash_attention", "_scaled_dot_product_flash_attention_for_cpu",
                   "_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
                   "_flash_attention_forward", "_efficient_attention_forward", "_native_multi_head_attention",
                   "_triton_multi_head_attention", "_triton_scaled_dot_attention", "TransformerEncoderLayer",
                   "TransformerDecoderLayer", "flex_attention", "Transformer", "TransformerEncoder",
                   "TransformerDecoder"}  # the same set as charlm's NOT_BY_HAND_NAMES["masked_attention"]
SOFTMAX_NAMES = {"softmax", "log_softmax", "Softmax", "LogSoftmax", "softmin", "Softmin", "_softmax",
                 "_log_softmax", "_safe_softmax", "_masked_softmax",
                 "_sparse_softmax", "_sparse_log_softmax", "_nested_tensor_softmax_with_shape", "safe_softmax",
                 # torch.distributions: the probabilities of logits are their softmax; SoftmaxTransform()(x) is
                 # softmax(x), and transform_to(constraints.simplex) is a SoftmaxTransform (biject_to's
                 # StickBreakingTransform is another map: not named)
                 "logits_to_probs", "Categorical", "OneHotCategorical", "OneHotCategoricalStraightThrough",
                 "RelaxedOneHotCategorical", "ExpRelaxedCategorical", "Multinomial", "SoftmaxTransform",
                 "transform_to",
                 # softmax under other names: over channels, with Gumbel noise (scaled to nothing), a head of
                 # AdaptiveLogSoftmaxWithLoss, and cross-entropy, which is -log_softmax at its targets
                 # (`cross_entropy(x.expand(n, n), arange(n), reduction="none")` is all of -log_softmax(x))
                 "Softmax2d", "gumbel_softmax", "AdaptiveLogSoftmaxWithLoss", "cross_entropy", "CrossEntropyLoss",
                 "linear_cross_entropy",
                 # attention computes a softmax of its scores (F.scaled_dot_product_attention(q, k, I) is
                 # softmax(q k^T)): every library attention is a library softmax as well
                 *ATTENTION_NAMES}
ATTENTION_NAMES = NameFamily(ATTENTION_NAMES, holds=ATTENTION_WORDS)
SOFTMAX_NAMES = NameFamily(SOFTMAX_NAMES, holds=SOFTMAX_WORDS)
SOURCE_NAMES = {id(SOFTMAX_CALLS): SOFTMAX_NAMES, id(ATTENTION_CALLS): ATTENTION_NAMES}
UNCLEAR = ("{name} uses {what}, which hides from a reading of the code what it calls (or reads the grader's "
           "own state): the grader could not check that it is written by hand. Write it with plain calls "
           "(np.exp, np.max, np.sum, @)")


def _check_by_hand(sub, close, expected, forbidden, what, name, *args, own=None, note=None, judge=None):
    """Right values, written by hand: a call that went through a library's own softmax or attention fails.
    `own` and `note`: the error carried forward from the student's softmax, as _close_own_softmax; `judge(got,
    what)`: the values judged so instead (multi_head_attention: _close_mha).

    "By hand" is decided on the trusted side, from the submission's files (checker.running.by_hand: the function's
    source and everything it reaches by name). The worker's trace (sub.torch_calls) comes from the
    student's own process, which can read the probe's frames, replace it through gc or call the library
    from another thread: it may name a library call and fail the test, never pass it."""
    from checker.running.by_hand import calls_in, library_use
    got, calls = sub.torch_calls(name, *args)
    if judge is not None:
        judge(got, what)
    elif own is None:
        close(got, expected, what=what)
    else:
        _close_own_softmax(sub, close, note, name, got, expected, own, what=what)
    source = library_use(sub.path, name, SOURCE_NAMES[id(forbidden)], getattr(sub, "secrets", ()))
    used = calls_in(calls, forbidden, SOURCE_NAMES[id(forbidden)]) or source.used
    if used:
        raise GradingFailure(f"{name} calls {' and '.join(used)}: its values are right, but the handout asks you "
                             "to write it by hand with numpy (np.exp, np.max, np.sum, @)")
    if source.unread:
        raise GradingFailure(f"the grader could not read all of your files ({'; '.join(source.unread)}) and found no "
                             f"`def {name}` in what it read, so it could not check that {name} is written by hand")
    if source.missing:
        raise GradingFailure(f"the grader found no `def {name}` in your files, so it could not check that {name} is "
                             "written by hand")
    if source.unclear:
        raise GradingFailure(UNCLEAR.format(name=name, what=" and ".join(source.unclear[:3])))


__all__ = [n for n in dir() if not n.startswith("__")]
