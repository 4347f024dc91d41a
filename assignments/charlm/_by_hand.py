"""Written by hand (charlm's masked_attention and layer_norm): the right values, and no torch function the handout
forbids inside them.

What it is for: `_check_by_hand`, which judges the values on the trusted side and then reads the submission's
files (`checker.running.by_hand.library_use`) for a call of a forbidden function, and the names it looks for
(`NOT_BY_HAND`: those the worker's trace may show, with how the student wrote them; `NOT_BY_HAND_NAMES`: those
the reading of the source looks for). What it is not: the tests (test_charlm_attention.py,
test_charlm_layernorm.py), or a place that runs student code (every call goes through `sub`).
"""

from ._common import _fail, _np64, _shape
from checker.running.by_hand import NORM_VALUES, NameFamily

# torch functions the handout forbids inside the functions written by hand
NOT_BY_HAND = {"masked_attention": {"scaled_dot_product_attention": "F.scaled_dot_product_attention",
                                    "multi_head_attention_forward": "nn.MultiheadAttention",
                                    "_scaled_dot_product_attention_math": "torch._scaled_dot_product_attention_math",
                                    "_native_multi_head_attention": "torch._native_multi_head_attention"},
               "layer_norm": {"layer_norm": "F.layer_norm / nn.LayerNorm",
                              "native_layer_norm": "torch.native_layer_norm", "group_norm": "F.group_norm",
                              "instance_norm": "F.instance_norm", "batch_norm": "F.batch_norm",
                              "rms_norm": "F.rms_norm", "normalize": "F.normalize"}}


# the same, as bare names read in the source (checker.running.by_hand): F.layer_norm, nn.LayerNorm, ...
# torch's own names for the same work count as well: the private ops behind the public functions
# (torch._scaled_dot_product_attention_math, torch.native_layer_norm, torch.ops.aten...), and the other norms,
# which normalize the last axis exactly as layer_norm does once the input is viewed so (group_norm with one
# group, instance_norm, batch_norm of the transpose, rms_norm or normalize of x - mean)
NOT_BY_HAND_NAMES = {"masked_attention": {"scaled_dot_product_attention", "multi_head_attention_forward",
                                          "MultiheadAttention", "_scaled_dot_product_attention_math",
                                          "_scaled_dot_product_attention_math_for_mps",
                                          "_scaled_dot_product_flash_attention",
                                          "_scaled_dot_product_flash_attention_for_cpu",
                                          "_scaled_dot_product_efficient_attention",
                                          "_scaled_dot_product_cudnn_attention", "_flash_attention_forward",
                                          "_efficient_attention_forward", "_native_multi_head_attention",
                                          "_triton_multi_head_attention", "_triton_scaled_dot_attention",
                                          "TransformerEncoderLayer", "TransformerDecoderLayer", "flex_attention",
                                          "Transformer", "TransformerEncoder", "TransformerDecoder"},
                     "layer_norm": {"layer_norm", "LayerNorm", "native_layer_norm", "group_norm",
                                    "native_group_norm", "GroupNorm", "instance_norm", "InstanceNorm1d",
                                    "InstanceNorm2d", "InstanceNorm3d", "batch_norm", "native_batch_norm",
                                    "_native_batch_norm_legit", "_native_batch_norm_legit_no_training",
                                    "_batch_norm_impl_index", "BatchNorm1d", "BatchNorm2d", "BatchNorm3d",
                                    "rms_norm", "_fused_rms_norm", "RMSNorm", "normalize", "LazyBatchNorm1d",
                                    "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyInstanceNorm1d", "LazyInstanceNorm2d",
                                    "LazyInstanceNorm3d", "SyncBatchNorm", "LocalResponseNorm", "local_response_norm",
                                    "CrossMapLRN2d"}}

# ... and, whatever torch calls it (checker.running.by_hand.NameFamily: in the source and in the worker's trace),
# any name whose words hold "attention" or "transformer" (torch.ops.aten._native_multi_head_attention,
# _transformer_encoder_layer_fwd), resp. a normalisation: "norm" other than in "normal" (random numbers) and
# than in the norms that are values (NORM_VALUES: torch.linalg.vector_norm, x.norm()), "normalize", "renorm",
# "LRN", scipy's zscore, "standardize": torch.ops.aten._native_batch_norm_legit_functional,
# _batch_norm_with_update, batch_norm_elemt, _weight_norm, torch._refs.native_layer_norm...
NORMALISATION = r"norm(?!al(?!i[sz]))|lrn|zscore|standardi[sz]|standardscal"
NOT_BY_HAND_NAMES = {"masked_attention": NameFamily(NOT_BY_HAND_NAMES["masked_attention"],
                                                    holds=("attention", "transformer")),
                     "layer_norm": NameFamily(NOT_BY_HAND_NAMES["layer_norm"], pattern=NORMALISATION,
                                              spared=NORM_VALUES)}


def _check_by_hand(sub, close, expected, name, *args, hints=()):
    """Right values, written by hand: a call that went through a forbidden torch function fails.

    Decided on the trusted side from the submission's files (checker.running.by_hand); the worker's trace
    (sub.torch_calls) comes from the student's own process, which can see and replace the probe or call
    the library from another thread, so it may fail the test but never passes it."""
    from checker.running.by_hand import calls_in, library_use
    got, calls = sub.torch_calls(name, *args)
    what = f"{name} on float32 input of shape {_shape(args[0].shape)}"
    close(got, _np64(expected), dtype="float32", what=what, hints=hints)
    source = library_use(sub.path, name, NOT_BY_HAND_NAMES[name], getattr(sub, "secrets", ()))
    used = calls_in(calls, NOT_BY_HAND[name], NOT_BY_HAND_NAMES[name]) or source.used
    if used:
        _fail(f"{name} calls {' and '.join(used)}: its values are right, but the handout asks you to write it "
              "by hand (matmul, masked_fill, softmax, mean, var and sqrt are fine)")
    if source.unread:
        _fail(f"the grader could not read all of your files ({'; '.join(source.unread)}) and found no "
              f"`def {name}` in what it read, so it could not check that {name} is written by hand")
    if source.missing:
        _fail(f"the grader found no `def {name}` in your files, so it could not check that {name} is "
              "written by hand")
    if source.unclear:
        _fail(f"{name} uses {' and '.join(source.unclear[:3])}, which hides from a reading of the code what it "
              "calls (or reads the grader's own state): the grader could not check that it is written by hand. "
              "Write it with plain calls")


__all__ = [n for n in dir() if not n.startswith("__")]
