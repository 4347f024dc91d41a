"""Grading tests of the `vit` assignment (trusted side): patchify, multi-head self-attention, ViT.

What it is for: judging a student's `patchify` against the reference (it is
pure data movement, so the answer is exact), and the student's
`MultiHeadSelfAttention` and `VisionTransformer` modules by properties that
every correct design has, whatever its parameter layout (fused or per-head
projections, `nn.MultiheadAttention`, a `Conv2d` patch embedding, dropout):
output shape, registered parameters that follow `.to(...)` and take part in
the graph, permutation equivariance, token mixing and weights that average
over the keys and scores that are not symmetric (MHSA only), batch
independence, determinism in eval mode, dependence on every patch, a
class-token readout, pre-norm residual blocks that are chained, and an MLP
that is not linear (ViT only), dtype and device of the output, and the full
ViT-B/16 size on the meta device. An edge-case input on which a listed
mistake is invisible (one patch, a module's parameters without its forward)
earns only for code that is also right where the mistake shows; a property
test runs on inputs the submission can take (a square image, float32) when
its failure on the others is charged elsewhere.

What it is not: a comparison of module outputs with the reference (the
student's weights are not ours), or a place that runs student code; every
student call goes through `sub` and comes back as plain data.

Sizes are small (each test well under a second on a 2-core CPU). ViT
configurations keep `hidden_dim`, `out_dim` and `N + 1` pairwise different
so that a `LayerNorm` built with the wrong normalized shape cannot pass by
accident.
"""

import contextlib
import re

import numpy as np
import pytest
import torch

from checker.compare import as_plain_array
from checker.edge_gate import only_if_right_elsewhere
from checker.errors import GradingFailure, StudentError
from checker.kit import Answers
from checker.notebook_globals import naming_globals
from checker.portability import check_runs_on_another_device, meta_only

LIST_HINT = "per-head layers kept in a plain Python list are not registered: use nn.ModuleList"
RESHAPE_HINT = "patches cut by reshape, not tiles"
CHANNEL_LAST_HINT = ("the tiles are right but each patch is flattened channel-last (P_h, P_w, C); flatten it "
                     "channel-first (C, P_h, P_w), as F.unfold does")
COLUMN_MAJOR_HINT = ("the tiles are right but in column-major order: number the patches row by row over the "
                     "grid (left to right, then top to bottom)")
SWAPPED_PATCH_HINT = ("patch_dims read in the wrong order: it is (P_h, P_w), the patch height first, as the "
                      "image is (C, H, W); `ph, pw = patch_dims`, and H // P_h patches down, W // P_w across")
DTYPE_HINT = ("a tensor in forward is not in the input's dtype: either weights that did not follow `.to(dtype)` "
              f"({LIST_HINT}), or a tensor made or cast inside forward (`.float()`, `torch.zeros(...)` "
              "without `dtype=x.dtype`)")
DEVICE_HINT = ("a tensor in forward is not on the input's device: either weights that did not follow "
               f"`.to(device)` ({LIST_HINT}), or a tensor made inside forward without `device=x.device`")

# (substring of the student's error, lowercase) -> what the mistake probably is
_ERROR_HINTS = [
    ('missing the required "forward" function',
     "the class has no `forward` method: is `def forward` indented inside the class body?"),
    ("did not return a tensor",
     "`forward` must return the output tensor: does it end with `return ...`?"),
    ("nonetype",
     "a `forward` (of the module or of one of its parts) returns nothing: does each one end with `return ...`?"),
    ("normalized_shape",
     "an nn.LayerNorm was built with the wrong normalized shape: it normalizes the features (the last "
     "axis), so build it as nn.LayerNorm(hidden_dim)"),
    ("same dtype", DTYPE_HINT),
    ("expected scalar type", DTYPE_HINT),
    ("should be the same", DTYPE_HINT),
    ("same device", DEVICE_HINT),
    ("two devices", DEVICE_HINT),
]

_NO_FORWARD = 'missing the required "forward" function'

# Types whose missing attribute is not a name mismatch between __init__ and forward.
_NOT_MODULES = {"Tensor", "Parameter", "NoneType", "tuple", "list", "dict", "int", "float", "str", "Size",
                "ndarray", "function", "method", "module", "generator"}



# ---------------------------------------------------------------- helpers

@contextlib.contextmanager
def explained():
    """Re-raise a failure of the student's code with the likely mistake named, when it is a known one."""
    try:
        yield
    except GradingFailure as e:
        if _NO_FORWARD in e.message:
            # nn.Module's own NotImplementedError, not a starter's stub: the class is written, its forward
            # is not where torch looks (so the question is not "not started")
            e = e.retold(e.message.replace("raised NotImplementedError", "raised nn.Module's NotImplementedError"))
        text = e.message.lower()
        extra = next((hint for key, hint in _ERROR_HINTS if key in text), None)
        owner = re.search(r"'(\w+)' object has no attribute", e.message)
        if extra is None and owner and owner.group(1) not in _NOT_MODULES:
            extra = (f"`forward` uses an attribute of `{owner.group(1)}` that `__init__` never created: the "
                     "attribute names in `__init__` and `forward` must be the same")
        if extra is None or extra.lower() in text:
            raise e from None
        end = "" if extra.endswith(("?", ".")) else "."
        raise e.retold(f"{e.message}\nLikely mistake: {extra}{end}") from None


# the answer models (the known patchify mistakes): computed in the full package, replayed in the student kit
A = Answers("assignments.vit._answers")


@pytest.fixture(autouse=True)
def _answers_as_ref(ref):
    """A computes, records or replays as this test's `ref` does (checker.kit.Answers)."""
    with A.following(ref):
        yield


def randn(rng, shape, dtype="float32", device="cpu"):
    """A random torch tensor made on the trusted side (it is sent to the worker as raw bytes)."""
    t = torch.from_numpy(rng.standard_normal(shape)).to(getattr(torch, dtype))
    return t.to(device) if device != "cpu" else t


def as_np(t):
    """A float64 numpy copy of a trusted-side tensor (exact for every float dtype used here)."""
    return t.detach().to("cpu", torch.float64).numpy()


def check_shape(value, shape, what):
    """The answer as a plain array, after checking its shape and that it is finite."""
    arr = as_plain_array(value, what)
    if tuple(arr.shape) != tuple(shape):
        raise GradingFailure(f"{what}: expected shape {tuple(shape)}, got {tuple(arr.shape)}")
    if arr.dtype.kind == "f" and not np.isfinite(arr).all():
        raise GradingFailure(f"{what}: contains NaN or Inf")
    return arr.astype(np.float64)


# the constructors' arguments, in the handout's order
ARG_NAMES = {"MultiHeadSelfAttention": ("hidden_dim", "num_heads"),
             "VisionTransformer": ("img_shape", "patch_dims", "hidden_dim", "num_heads", "out_dim",
                                   "num_encoder_blocks")}


def new(sub, cls, *args, **kwargs):
    """The student's module, built in the worker; a failure names a notebook global read instead of an
    argument, or arguments taken in another order than the handout's, when it looks like one."""
    sizes = dict(zip(ARG_NAMES.get(cls, ()), args))
    if "num_encoder_blocks" in kwargs:
        sizes["num_encoder_blocks"] = kwargs["num_encoder_blocks"]
    kwargs.setdefault("example", example_input(cls, sizes))
    with naming_globals(sub, sizes, cls), explained():
        try:
            m = sub.new(cls, *args, **kwargs)
        except GradingFailure as e:
            if not _blocks_named_otherwise(e, kwargs):
                raise
            # the handout's keyword has another name in this __init__ (n_blocks, depth, ...): pass it by
            # position so the other tests judge the model; test_vit_takes_num_encoder_blocks_by_name charges it
            m = sub.new(cls, *args, kwargs["num_encoder_blocks"], **{k: v for k, v in kwargs.items()
                                                                      if k != "num_encoder_blocks"})
    m.sizes = sizes
    return m


def example_input(cls, sizes):
    """An input of the tests' shape for a module built with `sizes`: the worker runs one forward on it only
    when the module has lazy layers (nn.LazyLinear), to make their parameters (Probes.new)."""
    if cls == "MultiHeadSelfAttention" and isinstance(sizes.get("hidden_dim"), int):
        return {"shape": [2, 4, sizes["hidden_dim"]], "vocab": None}
    img = sizes.get("img_shape")
    if cls == "VisionTransformer" and isinstance(img, (list, tuple)) and all(isinstance(n, int) for n in img):
        return {"shape": [2, *img], "vocab": None}
    return None


def _blocks_named_otherwise(e, kwargs):
    return ("num_encoder_blocks" in kwargs
            and "unexpected keyword argument 'num_encoder_blocks'" in getattr(e, "message", ""))


def forward(m, inputs):
    with naming_globals(m.sub, getattr(m, "sizes", {}), m.cls), explained():
        return m.forward(inputs)


def changed(a, b, scale):
    """True when a and b differ by clearly more than float32 rounding, relative to `scale`."""
    return float(np.max(np.abs(a - b))) > 1e-4 * max(scale, 1e-6)


def check_registered(m, what, hint=LIST_HINT):
    """Non-empty parameters, all of them moved by `.to("meta")`."""
    if not m.params:
        raise GradingFailure(f"{what} has no registered parameters (`.parameters()` is empty), so "
                             f"`.to(device)` and an optimizer never see its weights.\nLikely mistake: {hint}.")
    with explained():
        moved = m.to("meta")
    params = moved.get("params", []) if isinstance(moved, dict) else []
    stayed = [p["name"] for p in params if p.get("device") != "meta"]
    if not params or stayed:
        raise GradingFailure(f"{what}.to('meta') left parameters where they were: {', '.join(stayed[:5])}"
                             f"\nLikely mistake: {hint}.")


def check_in_graph(m, x, weight, what):
    """Every parameter gets a gradient tensor (it may be exactly zero, as the key bias's is)."""
    with explained():
        g = m.grads(x, weight)
    params = g.get("params", []) if isinstance(g, dict) else []
    if not params:
        raise GradingFailure(f"{what} has no registered parameters, so nothing can be trained."
                             f"\nLikely mistake: {LIST_HINT}.")
    unused = [p["name"] for p in params if not p.get("has_grad")]
    if unused:
        raise GradingFailure(
            f"{what}: these parameters got no gradient, they take no part in computing the output: "
            f"{', '.join(unused[:8])}" + (f" and {len(unused) - 8} more" if len(unused) > 8 else "")
            + "\n(a layer that is created but never used in forward, or a result that is detached)")
    bad = [p["name"] for p in params if p.get("finite") is False]
    if bad:
        raise GradingFailure(f"{what}: the gradients of {', '.join(bad[:8])} contain NaN or Inf")


# ---------------------------------------------------------------- patchify

def _check_patchify(sub, ref, close, images, patch, dtype="float64", got=None, gate=True):
    """Judge patchify on `images`. Where a listed mistake gives the right patches on these images (one patch
    is a plain reshape, one channel hides the channel order, one row or column of patches hides the grid
    order), the test earns only for a patchify that is also right where they show (`gate`)."""
    expected = as_np(ref.patchify(images.cpu(), patch))
    m = A.patchify_mistakes(images, patch)
    reshaped, channel_last, column_major = m["reshape"], m["channel_last"], m["column_major"]
    try:
        if got is None:
            with explained():
                got = sub.call("patchify", images, patch)
        close(got, expected, what=f"patchify(images of shape {tuple(images.shape)}, {patch!r})", dtype=dtype,
              hints=[(RESHAPE_HINT, reshaped), (CHANNEL_LAST_HINT, channel_last), (COLUMN_MAJOR_HINT, column_major)])
    except GradingFailure as e:  # an error, a wrong shape or wrong values: all three when (P_w, P_h) is read
        if "Likely mistake" not in e.message and _reads_patch_swapped(sub, images, patch, expected):
            raise e.retold(f"{e.message}\nLikely mistake: {SWAPPED_PATCH_HINT}.") from None
        raise
    hidden = [words for words, mistaken in (("a plain reshape", reshaped), ("channel-last patches", channel_last),
                                            ("patches numbered column by column", column_major))
              if mistaken.shape == expected.shape and np.array_equal(mistaken, expected)]
    if gate and hidden:
        revealing = torch.from_numpy(np.random.default_rng(0).standard_normal((2, 3, 8, 12)))
        only_if_right_elsewhere(
            "patchify", f"{' and '.join(hidden)} would be right as well",
            "images of shape (2, 3, 8, 12) cut into 4 x 4 patches",
            lambda: _check_patchify(sub, ref, close, revealing, 4, gate=False))


def _reads_patch_swapped(sub, images, patch, expected):
    """Does the student's patchify give the right patches when handed (P_w, P_h)? Then it reads the
    tuple the other way round (`pw, ph = patch_dims`)."""
    if isinstance(patch, int) or patch[0] == patch[1]:
        return False
    try:
        got = as_plain_array(sub.call("patchify", images, tuple(reversed(patch))), "patchify")
    except GradingFailure:
        return False
    return got.shape == expected.shape and np.allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 8), 4), ((1, 3, 12, 12), 4), ((2, 1, 8, 8), 2)])
def test_patchify_square(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 12), 4), ((1, 1, 12, 6), 3)])
def test_patchify_non_square_image(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [((2, 3, 8, 12), (4, 6)), ((1, 3, 6, 8), (3, 2))])
def test_patchify_tuple_patch(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


@pytest.mark.question("patchify")
def test_patchify_dtype_and_device(sub, ref, close, rng, device, float_dtype):
    images = randn(rng, (2, 3, 8, 12), float_dtype, device)
    with explained():
        got, info = sub.call_info("patchify", images, 4)
    dtypes = info.get("dtypes") or []
    if dtypes[:1] != [float_dtype]:
        raise GradingFailure(f"patchify of {float_dtype} images returned "
                             f"{dtypes[0] if dtypes else 'something that is not an array'}: the patches must "
                             "keep the images' dtype (and device)")
    _check_patchify(sub, ref, close, images, 4, dtype=float_dtype, got=got)


@pytest.mark.question("patchify")
@pytest.mark.parametrize("shape,patch", [
    ((3, 1, 6, 9), (2, 3)),
    ((1, 3, 16, 8), (8, 4)),
    ((2, 2, 10, 15), 5),
    ((2, 3, 4, 4), 4),  # a single patch
    ((1, 3, 4, 12), (4, 2)),  # a single row of patches
])
def test_patchify_more_shapes(sub, ref, close, rng, shape, patch):
    _check_patchify(sub, ref, close, randn(rng, shape, "float64"), patch)


# ---------------------------------------------------------------- multi-head self-attention

def _mhsa_shape(sub, rng, seed, B, N, D, h):
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    r = forward(m, [randn(rng, (B, N, D))])
    check_shape(r.outputs[0], (B, N, D), f"MultiHeadSelfAttention({D}, {h}) on input of shape ({B}, {N}, {D})")


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("B,N,D,h", [(2, 5, 8, 2), (1, 1, 8, 2), (3, 4, 16, 4)])
def test_mhsa_output_shape(sub, rng, seed, B, N, D, h):
    _mhsa_shape(sub, rng, seed, B, N, D, h)


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("B,N,D,h", [(3, 7, 12, 3), (1, 9, 10, 5), (1, 1, 12, 3), (4, 13, 10, 5), (2, 6, 6, 1)])
def test_mhsa_output_shape_odd_heads(sub, rng, seed, B, N, D, h):
    _mhsa_shape(sub, rng, seed, B, N, D, h)


@pytest.mark.question("mhsa")
def test_mhsa_parameters_registered(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    check_registered(m, "MultiHeadSelfAttention(12, 3)")
    _structure_earns_if_it_runs(sub, rng, seed)


def _structure_earns_if_it_runs(sub, rng, seed):
    """A test of structure (registered parameters, their count) passes for a module whose forward is
    wrong in every way (returns None, say): it earns only for a module that also answers in the right
    shape."""
    only_if_right_elsewhere("MultiHeadSelfAttention", "the module's parameters, which a forward that does "
                            "not work has as well", "an input of shape (2, 5, 12)",
                            lambda: _mhsa_shape(sub, rng, seed, 2, 5, 12, 3))


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("D,h", [(12, 3), (16, 4)])
def test_mhsa_parameter_count(sub, rng, seed, D, h):
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    low = 4 * D * D
    if m.n_params >= low:
        _structure_earns_if_it_runs(sub, rng, seed)
        return
    if m.n_params >= 3 * D * D:
        hint = ("no output projection: after the heads are concatenated, step 4 of the handout applies W^O "
                "(D x D, e.g. nn.Linear(D, D)), which lets the heads' outputs mix")
    elif any(tuple(p.get("shape", ())) == (D // h, D // h) for p in m.params):
        hint = (f"each head's projection sees only its own slice of D/num_heads = {D // h} features (a "
                f"Linear({D // h}, {D // h}) per head): a head's W_i^Q maps all D = {D} features to D/num_heads, "
                "so it is (D, D/num_heads), and the Q, K and V projections of all heads hold 3 * D * D values")
    else:
        hint = LIST_HINT
    raise GradingFailure(
        f"MultiHeadSelfAttention({D}, {h}) has {m.n_params} registered parameter values; the query, key, value "
        f"and output projections need at least 4 * D * D = {low} (each maps D = {D} features to D, the first "
        f"three split over the heads).\nLikely mistake: {hint}.")


@pytest.mark.question("mhsa")
def test_mhsa_every_parameter_in_graph(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    check_in_graph(m, randn(rng, (2, 5, 12)), randn(rng, (2, 5, 12)), "MultiHeadSelfAttention(12, 3)")


@pytest.mark.question("mhsa")
def test_mhsa_every_parameter_in_graph_odd_heads(sub, rng, seed):
    m = new(sub, "MultiHeadSelfAttention", 10, 5, seed=seed)
    check_in_graph(m, randn(rng, (1, 3, 10)), randn(rng, (1, 3, 10)), "MultiHeadSelfAttention(10, 5)")


def _mhsa_equivariant(sub, close, rng, seed, B, N, D, h):
    perm = rng.permutation(N)
    while N > 1 and (perm == np.arange(N)).all():
        perm = rng.permutation(N)
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    x = randn(rng, (B, N, D))
    check_deterministic(m, x, f"MultiHeadSelfAttention({D}, {h})")
    r = forward(m, [x, x[:, torch.from_numpy(perm)]])
    what = f"MultiHeadSelfAttention({D}, {h})"
    out = check_shape(r.outputs[0], (B, N, D), f"{what} output")
    out_p = check_shape(r.outputs[1], (B, N, D), f"{what} output for the permuted tokens")
    try:
        close(out_p, out[:, perm], dtype="float32",
              what=f"{what}: the output for the tokens in the order {perm.tolist()} compared with the output for "
                   "the original order, permuted the same way (self-attention without positions must move each "
                   "token's output along with the token)",
              hints=[("the output does not follow the tokens: something depends on the position of a token "
                      "(a fixed positional term, or a softmax/mean over the wrong axis)", out)])
    except GradingFailure as e:
        if "Likely mistake" in e.message:
            raise
        raise GradingFailure(f"{e.message}\nLikely mistake: {HEAD_SPLIT_HINT}.") from None


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)  # what self-attention is; a head split that mixes tokens fails only here
def test_mhsa_permutation_equivariant(sub, close, rng, seed):
    _mhsa_equivariant(sub, close, rng, seed, 2, 6, 12, 3)


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)
def test_mhsa_permutation_equivariant_odd_heads(sub, close, rng, seed):
    _mhsa_equivariant(sub, close, rng, seed, 3, 7, 10, 5)


NO_MIXING_HINT = ("each token's output depends on that token alone, so the module is not attending: the "
                  "scores must compare every query with every key, Q @ K.transpose(-2, -1) of shape "
                  "(B, heads, N, N), before the softmax over the keys (the last axis). An elementwise "
                  "(Q * K).sum(-1) gives each token only itself. With nn.MultiheadAttention, build it with "
                  "batch_first=True: without it, it reads (N, B, D) and attends over the batch")


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # attention is mixing: a per-token layer passes the equivariance tests trivially
def test_mhsa_mixes_tokens(sub, rng, seed):
    B, N, D, h = 2, 5, 12, 3
    j = int(rng.integers(N))
    x = randn(rng, (B, N, D))
    x2 = x.clone()
    x2[:, j] = randn(rng, (B, D))
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    r = forward(m, [x, x2])
    what = f"MultiHeadSelfAttention({D}, {h})"
    out = check_shape(r.outputs[0], (B, N, D), f"{what} output")
    out2 = check_shape(r.outputs[1], (B, N, D), f"{what} output")
    others = [i for i in range(N) if i != j]
    if not changed(out2[:, others], out[:, others], float(np.max(np.abs(out)))):
        raise GradingFailure(
            f"{what}: changing token {j} did not change the output of any other token, so the module treats "
            "each token on its own. In self-attention every token's output is a weighted sum over the values "
            f"of all tokens.\nLikely mistake: {NO_MIXING_HINT}.")


RANDOM_IN_EVAL_HINT = (
    "the module gives different outputs for the same input in eval mode: dropout that ignores "
    "`self.training` (`F.dropout(x, p)` is on by default; use an nn.Dropout layer built in `__init__` "
    "(`self.drop = nn.Dropout(p)`), or pass `training=self.training`; an nn.Dropout made inside forward "
    "(`nn.Dropout(p)(x)`) is a new layer on every call, always in training mode, which `model.eval()` never "
    "reaches; F.scaled_dot_product_attention(..., dropout_p=p) drops whatever the mode: "
    "pass `dropout_p=p if self.training else 0.0`), or random numbers drawn in forward")


def check_deterministic(m, x, what):
    """Eval mode is deterministic: the same input with a different random seed gives the same output."""
    a = forward(m, [x]).outputs[0]
    b = m.forward([x], seed=1).outputs[0]  # (not `forward`: the error hints are the same)
    a, b = as_plain_array(a, what), as_plain_array(b, what)
    if a.shape == b.shape and a.dtype.kind == "f" and changed(a.astype(np.float64), b.astype(np.float64),
                                                              float(np.max(np.abs(a), initial=0.0))):
        raise GradingFailure(f"{what}: {RANDOM_IN_EVAL_HINT}.")


HEAD_SPLIT_HINT = ("the heads are split or merged with reshape/view alone: (B, N, D) -> (B, h, N, D/h) needs "
                   "`.view(B, N, h, D // h).transpose(1, 2)`, and back `.transpose(1, 2).reshape(B, N, D)`; a "
                   "plain reshape across the token and head axes mixes the tokens, so the output no longer "
                   "moves with its token (or something else in forward depends on where a token is)")

SOFTMAX_HINT = ("the attention weights of a query must be a softmax over the keys: the last axis of the "
                "(B, heads, N, N) scores, `softmax(scores, dim=-1)`")


def _tokens_and_alone(sub, rng, seed, N, D, h):
    """The one-sequence output of N tokens and the output of each token alone (B = 1), in float64 so that
    a least-squares fit is exact: (what, x, out (N, D), single (N, D), tolerance of the fit). A module that
    cannot run in float64 (layers in a plain list stay float32; the dtype test charges it) is judged in
    float32, with a tolerance to match, so that it fails here on the property, if at all."""
    for dtype, tol in (("float64", 1e-5), ("float32", 1e-3)):
        what = f"MultiHeadSelfAttention({D}, {h}) in {dtype}"
        m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed, dtype=dtype)
        x = randn(rng, (1, N, D), dtype) * 2
        try:
            check_deterministic(m, x, what)
            r = forward(m, [x] + [x[:, j:j + 1] for j in range(N)])
        except GradingFailure as e:
            if dtype == "float64" and DTYPE_HINT in e.message:
                continue
            raise
        out = check_shape(r.outputs[0], (1, N, D), f"{what} output")[0]                # (N, D)
        single = np.stack([check_shape(o, (1, 1, D), f"{what} output for one token")[0, 0]
                           for o in r.outputs[1:]])                                  # (N, D): g(x_j)
        return what, x, out, single, tol


@pytest.mark.question("mhsa")
@pytest.mark.weight(6)  # the point of attention: each token's output is a weighted average of the values
def test_mhsa_averages_the_values_over_the_keys(sub, rng, seed):
    # With one head, the output of token i is sum_j a_ij g(x_j): a per-token map g (value and output
    # projections, with their biases) averaged with weights a_ij >= 0 that sum to 1 over the keys j.
    # g(x_j) is the output for token j alone (any softmax of a single score is 1), so a least-squares fit of
    # each output row on the single-token outputs (N <= D: a unique fit) must be exact, with weights >= 0
    # summing to 1. Softmax over the queries, or no softmax, leaves weights that do not sum to 1 over the
    # keys (and, with biases, an inexact fit). Any projection layout passes; float64 makes the fit exact.
    B, N, D, h = 1, 4, 8, 1
    what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h)
    fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N): a_ij
    scale = max(float(np.max(np.abs(out))), 1e-12)
    misfit = float(np.max(np.abs(fit @ single - out))) / scale
    rows, cols = fit.sum(axis=1), fit.sum(axis=0)                                  # (N,), (N,)
    alone = np.max(np.abs(out - single)) <= tol * 1e-3 * scale  # every token's output is its output alone
    if misfit <= tol and np.all(np.abs(rows - 1) <= tol) and fit.min() >= -tol and not alone:
        return
    if alone:
        raise GradingFailure(f"{what} on {N} tokens with one head: the output of each token is exactly its "
                             f"output when it is alone: the weights over the keys are the identity, no token "
                             f"is averaged with another.\nLikely mistake: {NO_MIXING_HINT}.")
    found = (f"the output of each token, written as a weighted sum of the outputs of the tokens alone, has "
             f"weights over the keys that sum to {np.round(rows, 4).tolist()} (they must sum to 1 and be >= 0)"
             + (f", and even that sum misses the output by {misfit:.2g} of its size" if misfit > tol else ""))
    xs = as_np(x[0])                                                                   # (N, D)
    fit_res = np.linalg.lstsq((single - xs).T, (out - xs).T, rcond=None)[0].T         # (N, N)
    if (np.max(np.abs(fit_res @ (single - xs) - (out - xs))) / scale <= tol
            and np.all(np.abs(fit_res.sum(axis=1) - 1) <= tol)):
        mistake = ("the module adds its input to the attention output (a residual connection inside "
                   "MultiHeadSelfAttention). The encoder block adds the residual (Z = Z + MHSA(LN(Z))); the "
                   "module is the attention alone, or the block adds its input twice")
    elif np.all(np.abs(cols - 1) <= 10 * tol):
        mistake = ("softmax over the queries (dim=-2) instead of the keys: the weights sum to 1 down each "
                   "column of the attention matrix, not along each row; " + SOFTMAX_HINT)
    else:
        mistake = (f"no softmax, or a softmax over the wrong axis; {SOFTMAX_HINT}. (A residual connection or "
                   "a normalization inside the module has the same effect: the encoder block adds the "
                   "residual, MHSA is the attention alone.)")
    raise GradingFailure(f"{what} on {N} tokens with one head: {found}.\nLikely mistake: {mistake}")


SYMMETRIC_HINT = ("the keys are the queries: K is computed with the query layer (`k = self.q(x)`), or Q and K are "
                  "one tensor, so the scores Q @ K^T are symmetric and token i weighs token j as j weighs i. The "
                  "key projection W^K is a layer of its own, next to W^Q and W^V")


@pytest.mark.question("mhsa")
@pytest.mark.weight(6)  # queries and keys are what attention compares: with K = Q it is another function
def test_mhsa_queries_and_keys_differ(sub, rng, seed):
    # With one head the weights a_ij of query i over key j are recovered exactly (see the test above). If
    # the scores are symmetric (s_ij = s_ji: the keys made by the query layer), a_ij = exp(s_ij) / Z_i, so
    # around every cycle of three tokens a_ij a_jk a_ki = a_ik a_kj a_ji (the products of the Z_i cancel).
    # Separate query and key projections break that by O(1) in the log. No layout is assumed.
    B, N, D, h = 1, 5, 8, 1
    what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h)
    fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N): a_ij
    scale = max(float(np.max(np.abs(out))), 1e-12)
    misfit = float(np.max(np.abs(fit @ single - out))) / scale
    if (misfit > tol or np.any(np.abs(fit.sum(axis=1) - 1) > tol) or fit.min() < -tol
            or np.max(np.abs(out - single)) <= tol * 1e-3 * scale):
        pytest.skip("judged by test_mhsa_averages_the_values_over_the_keys, not here: the outputs are not a "
                    "softmax-weighted average of the values with weights of a useful size, so the weights of "
                    "the queries over the keys cannot be read off")
    log_a = np.log(np.maximum(fit, 1e-300))
    cycles = [abs(log_a[i, j] + log_a[j, k] + log_a[k, i] - log_a[i, k] - log_a[k, j] - log_a[j, i])
              for i in range(N) for j in range(i + 1, N) for k in range(j + 1, N)
              if min(fit[a, b] for a in (i, j, k) for b in (i, j, k)) > 1e-3]  # weights read accurately
    if not cycles:
        pytest.skip("the attention weights of these tokens are too close to 0 to compare the cycles")
    spread = float(np.max(log_a.max(axis=1) - log_a.min(axis=1)))  # how far the scores of a query differ
    if spread < 1e-3:
        pytest.skip("judged by the other tests, not here: every query weighs the keys (almost) equally, so "
                    "there is no order of the scores to compare")
    # symmetric scores leave only the fit's rounding in the cycles; small weights (scores near 0) give
    # small cycles too, but in proportion to the spread of the scores
    if max(cycles) > max(tol, 0.01 * spread):
        return
    raise GradingFailure(
        f"{what} on {N} tokens with one head: the attention weights a_ij (query i over key j), read off the "
        f"outputs, satisfy a_ij a_jk a_ki = a_ik a_kj a_ji around every cycle of three tokens (largest gap in "
        f"the log: {max(cycles):.2g}): the scores are symmetric, token i scores token j exactly as j scores "
        f"i.\nLikely mistake: {SYMMETRIC_HINT}.")


@pytest.mark.question("mhsa")
@pytest.mark.weight(4)  # "multi-head": one attention pattern for every feature is a single head
def test_mhsa_uses_several_heads(sub, rng, seed):
    # With one head, out_i = sum_j a_ij g(x_j), g(x_j) being the output for token j alone: every output row
    # lies in the span of the single-token outputs (see test_mhsa_averages_the_values_over_the_keys). With h
    # heads, each with its own softmax, out_i = sum_h sum_j a^h_ij g^h(x_j) leaves that span (N < D), because
    # the heads weigh the tokens differently. A module that ignores num_heads (one head of width D), or shares
    # one attention pattern across the heads, stays in it exactly.
    B, N, D, h = 1, 3, 12, 3
    what, x, out, single, tol = _tokens_and_alone(sub, rng, seed, N, D, h)
    fit = np.linalg.lstsq(single.T, out.T, rcond=None)[0].T                          # (N, N)
    scale = max(float(np.max(np.abs(out))), 1e-12)
    misfit = float(np.max(np.abs(fit @ single - out))) / scale
    if np.max(np.abs(out - single)) <= tol * 1e-3 * scale:
        raise GradingFailure(f"{what} on {N} tokens: each token's output is its output alone, so there is no "
                             f"attention, and no heads to tell apart.\nLikely mistake: {NO_MIXING_HINT}.")
    if misfit > tol / 10:
        return  # several heads
    raise GradingFailure(
        f"{what} on {N} tokens: every output row is a weighted sum of the outputs of the tokens alone, which "
        f"is what one attention head gives: all {D} features were mixed with the same attention weights.\n"
        f"Likely mistake: the heads are not split (num_heads is ignored, or one softmax over the full width is "
        f"shared by the heads): each of the {h} heads needs its own scores from its own {D // h}-wide slice of "
        "Q and K, its own softmax, and its own slice of V; then concatenate the heads.")


def _mhsa_batch_independent(sub, close, rng, seed, N, D, h):
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    x1, x2, x3 = (randn(rng, (1, N, D)) for _ in range(3))
    r = forward(m, [torch.cat([x1, x2]), torch.cat([x1, x3])])
    what = f"MultiHeadSelfAttention({D}, {h})"
    a = check_shape(r.outputs[0], (2, N, D), f"{what} output")
    b = check_shape(r.outputs[1], (2, N, D), f"{what} output")
    close(b[0], a[0], dtype="float32",
          what=f"{what}: the output for the first sequence of a batch, when only the second sequence "
               "changes (sequences of a batch must not see each other: is attention, a softmax or a mean "
               "taken over the batch axis? nn.MultiheadAttention reads (N, B, D) unless built with "
               "batch_first=True)")


@pytest.mark.question("mhsa")
def test_mhsa_batch_independent(sub, close, rng, seed):
    _mhsa_batch_independent(sub, close, rng, seed, 5, 12, 3)


@pytest.mark.question("mhsa")
def test_mhsa_batch_independent_odd_heads(sub, close, rng, seed):
    _mhsa_batch_independent(sub, close, rng, seed, 3, 10, 5)


@pytest.mark.question("mhsa")
def test_mhsa_dtype_and_device(sub, rng, seed, device, float_dtype):
    B, N, D, h = 2, 5, 12, 3
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed, device=device, dtype=float_dtype)
    r = forward(m, [randn(rng, (B, N, D), float_dtype, device)])
    what = f"MultiHeadSelfAttention({D}, {h}) in {float_dtype} on {device}"
    check_shape(r.outputs[0], (B, N, D), f"{what}: the output")
    if r.dtypes[:1] != [float_dtype] or not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"{what}: the output is {r.dtypes[0]} on {r.devices[0]}; it must have the "
                             "input's dtype and device (no hard-coded .float(), float32 or device inside forward)")


@pytest.mark.question("mhsa")
@pytest.mark.weight(3)  # a module that fails on every GPU
def test_mhsa_runs_on_another_device(sub, seed):
    m = new(sub, "MultiHeadSelfAttention", 12, 3, seed=seed)
    shape = check_runs_on_another_device(m, (2, 5, 12), "MultiHeadSelfAttention(12, 3)")
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, 5, 12]:
        raise GradingFailure(f"MultiHeadSelfAttention(12, 3) on another device returned shape {tuple(shape)}; "
                             "expected (2, 5, 12)")


@pytest.mark.question("mhsa")
@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_mhsa_to_cuda(sub, rng, seed, device):
    B, N, D, h = 2, 5, 12, 3
    m = new(sub, "MultiHeadSelfAttention", D, h, seed=seed)
    with explained():
        moved = m.to(device)
    stayed = [p["name"] for p in moved.get("params", []) if not str(p.get("device")).startswith(device)]
    if stayed:
        raise GradingFailure(f"MultiHeadSelfAttention.to('cuda') left these parameters behind: "
                             f"{', '.join(stayed[:5])}\nLikely mistake: {LIST_HINT}.")
    r = forward(m, [randn(rng, (B, N, D), "float32", device)])
    check_shape(r.outputs[0], (B, N, D), "MultiHeadSelfAttention moved to cuda: the output")
    if not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"MultiHeadSelfAttention moved to cuda returned its output on {r.devices[0]}")


# ---------------------------------------------------------------- Vision Transformer

def _vit_args(img, patch, D, h, out, blocks):
    return [img, patch, D, h, out], ({} if blocks is None else {"num_encoder_blocks": blocks})


def _vit_name(img, patch, D, h, out, blocks):
    extra = "" if blocks is None else f", num_encoder_blocks={blocks}"
    return f"VisionTransformer({img}, {patch!r}, {D}, {h}, {out}{extra})"


def _vit(sub, seed, img, patch, D, h, out, blocks, **kw):
    args, kwargs = _vit_args(img, patch, D, h, out, blocks)
    return new(sub, "VisionTransformer", *args, seed=seed, **kwargs, **kw)


def _patch_count_mistake(count, img, patch):
    """What a wrong number of patches (`count`) says about how it was computed, or None."""
    _, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    if count == (H // P_h) * (W // P_w):
        return None
    for value, words in [((H // P_h) * (W // P_h), "the patch height twice: (H // P_h) * (W // P_h)"),
                         ((H // P_w) * (W // P_w), "the patch width twice: (H // P_w) * (W // P_w)"),
                         ((H // P_w) * (W // P_h), "the patch sides swapped: (H // P_w) * (W // P_h)"),
                         ((H // P_h) ** 2, "the image taken as square: (H // P_h) ** 2"),
                         ((W // P_w) ** 2, "the image taken as square: (W // P_w) ** 2")]:
        if count == value:
            return (f"the number of patches was computed with {words}; with patch_dims (P_h, P_w) = "
                    f"({P_h}, {P_w}) on a {H}x{W} image it is (H // P_h) * (W // P_w) = {(H // P_h) * (W // P_w)}")
    return None


def _positions_hint(m, img, patch):
    """The patch-count mistake behind a ViT that fails on this geometry, read off its positional embedding."""
    try:
        info = m.attr_shape("positional_embedding")
    except GradingFailure:
        return None
    shape = info.get("shape") if isinstance(info, dict) else info
    if not shape or len(shape) < 2:
        return None
    return _patch_count_mistake(int(shape[-2]) - 1, img, patch)


def _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks):
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    try:
        r = forward(m, [randn(rng, (B, *img))])
        check_shape(r.outputs[0], (B, out), f"{_vit_name(img, patch, D, h, out, blocks)} on images of shape "
                                            f"{(B, *img)}")
    except GradingFailure as e:
        hint = None if "Likely mistake" in e.message else _positions_hint(m, img, patch)
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None


@pytest.mark.question("vit")
@pytest.mark.parametrize("B,img,patch,D,h,out,blocks", [
    (2, (3, 8, 8), 4, 16, 2, 10, None),  # the default number of blocks
    (3, (3, 8, 8), 2, 12, 3, 7, 1),
    (2, (3, 8, 12), (2, 4), 12, 3, 6, 1),  # non-square patches on a non-square image
])
def test_vit_output_shape(sub, rng, seed, B, img, patch, D, h, out, blocks):
    _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks)


@pytest.mark.question("vit")
@pytest.mark.parametrize("B,img,patch,D,h,out,blocks", [
    (2, (3, 8, 12), 4, 16, 4, 5, 2),
    (1, (1, 6, 10), (3, 5), 10, 5, 3, 1),
    (2, (2, 12, 8), (4, 2), 12, 3, 6, 1),
])
def test_vit_output_shape_non_square(sub, rng, seed, B, img, patch, D, h, out, blocks):
    _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks)


def _vit_embeddings(sub, rng, seed, img, patch, D, h, out):
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    N = (H // P_h) * (W // P_w)
    m = _vit(sub, seed, img, patch, D, h, out, 1)
    name = _vit_name(img, patch, D, h, out, 1)
    for attr, shapes in (("class_embedding", ([1, D], [1, 1, D])),
                         ("positional_embedding", ([N + 1, D], [1, N + 1, D]))):
        with explained():
            info = m.attr_shape(attr)
        shape = info.get("shape") if isinstance(info, dict) else info
        if shape is None:
            raise GradingFailure(f"{name} has no tensor attribute `{attr}` (the handout names it; it must be "
                                 f"an nn.Parameter of shape {tuple(shapes[0])} or {tuple(shapes[1])})")
        if list(shape) not in [list(s) for s in shapes]:
            mistake = _patch_count_mistake(int(shape[-2]) - 1, img, patch) if (
                attr == "positional_embedding" and len(shape) >= 2) else None
            raise GradingFailure(f"{name}.{attr} has shape {tuple(shape)}; expected {tuple(shapes[0])} or "
                                 f"{tuple(shapes[1])} (N = {N} patches, D = {D})"
                                 + (f"\nLikely mistake: {mistake}." if mistake else ""))
        if isinstance(info, dict) and info.get("is_parameter") is False:
            raise GradingFailure(f"{name}.{attr} is a plain tensor, not an nn.Parameter: it is learnable, "
                                 "so wrap it in nn.Parameter(...)")
    _vit_structure_earns_if_it_runs(sub, rng, seed)


@pytest.mark.question("vit")
def test_vit_embedding_shapes(sub, rng, seed):
    _vit_embeddings(sub, rng, seed, (3, 8, 12), (2, 4), 16, 2, 10)


@pytest.mark.question("vit")
def test_vit_embedding_shapes_non_square(sub, rng, seed):
    _vit_embeddings(sub, rng, seed, (2, 12, 8), (4, 2), 12, 3, 6)


def _vit_every_patch(sub, rng, seed, img, patch, D, h, out, blocks):
    C, H, W = img
    P_h, P_w = (patch, patch) if isinstance(patch, int) else patch
    gh, gw = H // P_h, W // P_w
    x = randn(rng, (1, *img))
    inputs = [x]
    for k in range(gh * gw):
        r_, c_ = divmod(k, gw)
        xk = x.clone()
        xk[:, :, r_ * P_h:(r_ + 1) * P_h, c_ * P_w:(c_ + 1) * P_w] = randn(rng, (1, C, P_h, P_w))
        inputs.append(xk)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    r = forward(m, inputs)
    name = _vit_name(img, patch, D, h, out, blocks)
    base = check_shape(r.outputs[0], (1, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    outs = [check_shape(o, (1, out), f"{name} output") for o in r.outputs[1:]]
    if len(outs) > 1 and not any(changed(o, base, scale) for o in outs):
        raise GradingFailure(
            f"{name}: changing any one patch of a {gh} x {gw} grid did not change the output: the logits do "
            "not depend on the image at all.\nLikely mistake: the class token never attends to the patches: "
            "nn.MultiheadAttention without batch_first=True reads (B, N+1, D) as (sequence, batch, D), so each "
            "token attends across the images of the batch instead of across its own tokens (build it with "
            "batch_first=True); or the logits are read from the class token before the encoder blocks, or the "
            "patch embeddings never join the sequence.")
    for k, ok in enumerate(outs):
        if not changed(ok, base, scale):
            r_, c_ = divmod(k, gw)
            raise GradingFailure(
                f"{name}: changing only patch {k} (grid row {r_}, column {c_} of a {gh} x {gw} grid) did not "
                "change the output: the model ignores part of the image (is every patch embedded and "
                "attended to, and is the output read from the class token after the encoder blocks?)")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # a ViT blind to part of its image cannot classify it
def test_vit_depends_on_every_patch(sub, rng, seed):
    _vit_every_patch(sub, rng, seed, (3, 8, 8), 4, 16, 4, 10, 2)


@pytest.mark.question("vit")
def test_vit_depends_on_every_patch_non_square(sub, rng, seed):
    _vit_every_patch(sub, rng, seed, (2, 6, 8), (3, 4), 12, 3, 5, 1)


@pytest.mark.question("vit")
def test_vit_batch_independent(sub, close, rng, seed, note):
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    x1, x2, x3 = (randn(rng, (1, *img)) for _ in range(3))
    r = forward(m, [torch.cat([x1, x2]), torch.cat([x1, x3])])
    name = _vit_name(img, patch, D, h, out, blocks)
    a = check_shape(r.outputs[0], (2, out), f"{name} output")
    b = check_shape(r.outputs[1], (2, out), f"{name} output")
    close(b[0], a[0], dtype="float32",
          what=f"{name}: the logits of the first image of a batch, when only the second image changes "
               "(images of a batch must not see each other)")


SQUARE = ((3, 12, 12), 4)  # the geometry a property test falls back to


def _geometry_it_takes(sub, rng, seed, img, patch, D, h, out, note):
    """(img, patch) for a property test: the given non-square geometry, or a square image when the model
    fails on the non-square one but runs on a square one (the non-square shape tests charge that failure;
    a property that holds should not be charged for it a second time)."""
    try:
        _vit_shape(sub, rng, seed, 2, img, patch, D, h, out, 1)
        return img, patch
    except GradingFailure as e:
        first = (e.message or "").strip().splitlines()[:1]
        try:
            _vit_shape(sub, rng, seed, 2, *SQUARE, D, h, out, 1)
        except GradingFailure:
            return img, patch  # fails on either: judged as it is
    note(f"judged on {SQUARE[0][1]}x{SQUARE[0][2]} images: the model fails on a {img[1]}x{img[2]} image, which "
         f"the output-shape tests of non-square images charge ({first[0][:200] if first else 'it failed'})")
    return SQUARE


@pytest.mark.question("vit")
def test_vit_parameters_registered(sub, rng, seed):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 2
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    name = _vit_name(img, patch, D, h, out, blocks)
    C, H, W = img
    N = (H // patch) * (W // patch)
    low = blocks * 4 * D * D + C * patch * patch * D + D * out + (N + 1) * D + D
    if m.n_params < low:
        raise GradingFailure(
            f"{name} has {m.n_params} registered parameter values, fewer than the {low} that the patch "
            f"embedding, the class and positional embeddings, the classifier and the Q, K, V and output "
            f"projections of {blocks} blocks need at the least.\nLikely mistake: {LIST_HINT} (the same for "
            "a list of encoder blocks).")
    check_registered(m, name, hint=f"{LIST_HINT} (the same for a list of encoder blocks)")
    _vit_structure_earns_if_it_runs(sub, rng, seed)


def _vit_structure_earns_if_it_runs(sub, rng, seed):
    """A test of structure (parameters, their count, the embeddings' shapes) passes for a model whose
    forward does not work (returns None, say): it earns only for a model that also gives logits of the
    right shape."""
    only_if_right_elsewhere("VisionTransformer", "the model's parameters, which a forward that does not work "
                            "has as well", "images of shape (2, 3, 8, 8)",
                            lambda: _vit_shape(sub, rng, seed, 2, (3, 8, 8), 4, 16, 2, 10, 1))


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # a ViT whose blocks share one set of weights passes every other test
def test_vit_each_block_has_its_own_weights(sub, rng, seed):
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    one, three = (_vit(sub, seed, img, patch, D, h, out, n) for n in (1, 3))
    per_block = (three.n_params - one.n_params) / 2
    if per_block >= 4 * D * D:
        _vit_structure_earns_if_it_runs(sub, rng, seed)
        return
    what = (f"{_vit_name(img, patch, D, h, out, 3)} has {three.n_params} registered parameter values, "
            f"{_vit_name(img, patch, D, h, out, 1)} {one.n_params}")
    if per_block <= 0:
        raise GradingFailure(
            f"{what}: the two extra blocks add no weights of their own.\nLikely mistake: the blocks share one "
            "set of weights (`nn.ModuleList([Block()] * n)` or `nn.Sequential(*[block] * n)` repeat one module n "
            "times: build n modules, `nn.ModuleList([Block() for _ in range(n)])`), or num_encoder_blocks is "
            "ignored (a fixed number of blocks).")
    raise GradingFailure(
        f"{what}: each extra block adds {per_block:g}, fewer than the 4 * D * D = {4 * D * D} of its attention's "
        "Q, K, V and output projections.\nLikely mistake: part of each block is shared between the blocks, or "
        "kept outside nn.ModuleList.")


@pytest.mark.question("vit")
def test_vit_every_parameter_in_graph(sub, rng, seed):
    img, patch, D, h, out, blocks = (1, 8, 8), (4, 2), 12, 3, 4, 2
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    check_in_graph(m, randn(rng, (2, *img)), randn(rng, (2, out)), _vit_name(img, patch, D, h, out, blocks))


@pytest.mark.question("vit")
def test_vit_b16_on_meta(sub, rng, seed, note):
    args, kwargs = [(3, 224, 224), 16, 768, 12, 1000], {"num_encoder_blocks": 12}
    name = "VisionTransformer((3, 224, 224), 16, 768, 12, 1000, num_encoder_blocks=12) (ViT-B/16)"
    fallback = None
    try:
        with explained():
            try:
                r = sub.meta_forward("VisionTransformer", args, kwargs, (2, 3, 224, 224))
            except GradingFailure as e:
                if not _blocks_named_otherwise(e, kwargs):
                    raise
                args, kwargs = args + [kwargs["num_encoder_blocks"]], {}  # (charged by the test below)
                r = sub.meta_forward("VisionTransformer", args, kwargs, (2, 3, 224, 224))
        fallback = r.get("fallback") if isinstance(r, dict) else None
    except StudentError as e:
        if not meta_only(e.message):
            raise
        fallback = e.message
    if fallback:
        # Looking at values (.item(), a data-dependent branch) is legal but impossible on the meta device:
        # run the ViT-B/16 geometry for real instead, with a narrow width so that it is quick.
        m = new(sub, "VisionTransformer", (3, 224, 224), 16, 48, 12, 1000, seed=seed, **kwargs)
        out = forward(m, [randn(rng, (1, 3, 224, 224))])
        check_shape(out.outputs[0], (1, 1000),
                    "VisionTransformer((3, 224, 224), 16, 48, 12, 1000, num_encoder_blocks=12) (run for real "
                    "because the model looks at values, which the meta device cannot do) on a (1, 3, 224, 224) "
                    "image")
        said = " ".join(str(fallback).split())
        said = said if len(said) <= 160 else said[:157] + "..."
        note("checked by a real run of the ViT-B/16 geometry at width 48 instead of a full-size run on the meta "
             f"device, where the model stopped ({said}). Reading tensor values (.item()) stops it there and is "
             "allowed; a tensor made on a fixed device is not, and the device test of this question says so")
        return
    shape = r.get("shape") if isinstance(r, dict) else None
    if list(shape or []) != [2, 1000]:
        raise GradingFailure(f"{name} on a (2, 3, 224, 224) batch built on the meta device returned shape "
                             f"{tuple(shape) if shape is not None else None}; expected (2, 1000)")


@pytest.mark.question("vit")
def test_vit_takes_num_encoder_blocks_by_name(sub, seed):
    """The handout's signature ends with `num_encoder_blocks=6`: a caller (the TA's notebook, this grader)
    passes it by that name. A model that calls it otherwise is judged by the other tests all the same."""
    img, patch, D, h, out = (3, 8, 8), 4, 8, 2, 5
    try:
        with explained():
            m = sub.new("VisionTransformer", img, patch, D, h, out, num_encoder_blocks=1, seed=seed,
                        example=example_input("VisionTransformer", {"img_shape": img}))
    except GradingFailure as e:
        if not _blocks_named_otherwise(e, {"num_encoder_blocks": 1}):
            raise
        raise e.retold(
            f"{e.message}\nThe handout's signature is VisionTransformer(img_shape, patch_dims, hidden_dim, "
            "num_heads, out_dim, num_encoder_blocks=6): your __init__ calls its last argument something else. "
            "Rename it num_encoder_blocks, so that code written against the handout can call your model. "
            "(The other tests passed the number of blocks by position, so they judged your model.)") from None
    with explained():  # a model that only builds (a starter's) earns nothing here
        r = m.forward([randn(np.random.default_rng(seed), (2, *img))])
    check_shape(r.outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} on images of shape {(2, *img)}")


@pytest.mark.question("vit")
def test_vit_dtype_and_device(sub, rng, seed, device, float_dtype):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 1
    m = _vit(sub, seed, img, patch, D, h, out, blocks, device=device, dtype=float_dtype)
    r = forward(m, [randn(rng, (2, *img), float_dtype, device)])
    what = f"{_vit_name(img, patch, D, h, out, blocks)} in {float_dtype} on {device}"
    check_shape(r.outputs[0], (2, out), f"{what}: the output")
    if r.dtypes[:1] != [float_dtype] or not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"{what}: the output is {r.dtypes[0]} on {r.devices[0]}; it must have the "
                             "input's dtype and device (create new tensors with the input's dtype and device, "
                             "no hard-coded .float(), float32 or device inside forward)")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # a module that fails on every GPU
def test_vit_runs_on_another_device(sub, rng, seed, note):
    D, h, out, blocks = 16, 2, 10, 2
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    name = _vit_name(img, patch, D, h, out, blocks)
    shape = check_runs_on_another_device(m, (2, *img), name)
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, out]:
        raise GradingFailure(f"{name} on another device returned shape {tuple(shape)}; expected (2, {out})")


@pytest.mark.question("vit")
@pytest.mark.parametrize("device", ["cuda"], indirect=True)
def test_vit_to_cuda(sub, rng, seed, device):
    img, patch, D, h, out, blocks = (3, 8, 8), 4, 16, 2, 10, 1
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    with explained():
        moved = m.to(device)
    stayed = [p["name"] for p in moved.get("params", []) + moved.get("buffers", [])
              if not str(p.get("device")).startswith(device)]
    if stayed:
        raise GradingFailure(f"VisionTransformer.to('cuda') left these tensors behind: {', '.join(stayed[:5])}"
                             f"\nLikely mistake: {LIST_HINT}.")
    r = forward(m, [randn(rng, (2, *img), "float32", device)])
    check_shape(r.outputs[0], (2, out), "VisionTransformer moved to cuda: the output")
    if not str(r.devices[0]).startswith(device):
        raise GradingFailure(f"VisionTransformer moved to cuda returned its output on {r.devices[0]}")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # what the class token is for; a mean-pooling model passes every other test
def test_vit_classifies_from_the_class_token(sub, close, rng, seed, note):
    # On a constant one-channel image every patch token has the same content, however the patches are
    # cut. Swapping two rows of the positional embedding then only swaps two tokens, and attention does
    # not care about order: the class token, and the logits, must stay the same. A ViT that reads a patch
    # token (x[:, 1], x[:, -1]) instead of the class token x[:, 0] changes its answer.
    img, patch, D, h, out, blocks = (1, 8, 8), 4, 16, 2, 10, 2
    zero_blocks_checked = _class_token_without_blocks(sub, close, rng, seed, img, patch, D, h, out)
    name = _vit_name(img, patch, D, h, out, blocks)
    m = _vit(sub, seed, img, patch, D, h, out, blocks)
    check_deterministic(m, randn(rng, (1, *img)), name)
    with explained():
        shape = m.attr_shape("positional_embedding")
    shape = shape.get("shape") if isinstance(shape, dict) else None
    if not shape or len(shape) < 2 or shape[-2] != 5:
        # test_vit_embedding_shapes charges the embedding; the readout is judged here only as far as it can be
        if zero_blocks_checked:
            note("the readout was checked with no encoder block (the logits are the same for every image); "
                 "the check that swaps rows of `positional_embedding` was not made: the model has no such "
                 f"attribute with N+1 = 5 rows (shape {shape}), which test_vit_embedding_shapes charges")
            return
        pytest.skip("judged by test_vit_embedding_shapes, not here: the model has no `positional_embedding` with "
                    f"N+1 = 5 rows (shape {shape}), whose rows this test swaps")
    x = torch.full((1, *img), 0.7)
    before = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    with explained():
        m.swap_rows("positional_embedding", 1, 4)  # rows of the first and last patch (row 0: the class token)
    after = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
    try:
        close(after, before, dtype="float32",
              what=f"{name} on a constant image: the logits after swapping the positional embeddings of two "
                   "patches with the same content (the class token sees the same tokens, so its logits must "
                   "not change)")
    except GradingFailure as e:
        if _class_token_last(m, x, before, close, name, out) and _last_row_unused(m, x, before, close, name, out):
            hint = ("the positional embedding is added to the patch tokens before the class token is prepended "
                    "(rows 0..N-1 go to the patches, the class token gets none): prepend the class token first, "
                    "then add all N+1 rows, so that row 0 is the class token's")
        elif _class_token_last(m, x, before, close, name, out, swapped=True):
            hint = ("the class token is appended after the patches (its positional row is the last one, N) and "
                    "read there: the handout prepends it, at position 0, so that row 0 of positional_embedding "
                    "is the class token's and the classifier reads the output at position 0")
        elif zero_blocks_checked:  # the readout is the class token's: the tokens themselves are not what they should be
            hint = ("patches with the same content do not give the same tokens, or the encoder is not equivariant "
                    "to their order: a patch embedding that scrambles the tokens (e.g. a Conv2d output reshaped "
                    "to (B, N, D) instead of `.flatten(2).transpose(1, 2)`), a positional term other than "
                    "`positional_embedding`, or an attention that fails its own permutation test (see mhsa)")
        else:
            hint = ("the classifier reads a patch token instead of the class token (use the output at position "
                    "0, where the class embedding was prepended)")
        raise GradingFailure(f"{e.message}\nLikely mistake: {hint}.") from e


def _class_token_last(m, x, before, close, name, out, swapped=False):
    """Do the patches use rows 0..N-1 of the positional embedding (the class token kept last, or given no
    row)? Rows 1 and 4 of it are swapped; swap them back, then swap rows 0 and 3, two patches' rows then:
    the logits on the constant image stay the same only then. `swapped`: rows 0 and 3 are swapped already
    (an earlier call), so only compare."""
    try:
        if not swapped:
            with explained():
                m.swap_rows("positional_embedding", 1, 4)
                m.swap_rows("positional_embedding", 0, 3)
        again = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
        close(again, before, dtype="float32", what="")
    except GradingFailure:
        return False
    return True


def _last_row_unused(m, x, before, close, name, out):
    """After _class_token_last: does changing row N of the positional embedding leave the logits alone (no
    token uses it: the embedding was added before the class token was prepended)? False when the row is
    used, or when the embedding is not a parameter by that name; the row is put back either way."""
    try:
        with explained():
            got = m.get_params(["positional_embedding"])
        pe = got.get("positional_embedding") if isinstance(got, dict) else None
        if pe is None:
            return False
        pe = np.array(pe, dtype=np.float32)
        changed_pe = pe.copy()
        # a random change: a constant one would vanish in every LayerNorm
        changed_pe[..., -1, :] += np.random.default_rng(0).standard_normal(pe.shape[-1]).astype(np.float32)
        with explained():
            m.set_params({"positional_embedding": torch.from_numpy(changed_pe)})
        try:
            again = check_shape(forward(m, [x]).outputs[0], (1, out), f"{name} output")
        finally:
            with explained():
                m.set_params({"positional_embedding": torch.from_numpy(pe)})
        close(again, before, dtype="float32", what="")
    except GradingFailure:
        return False
    return True


def _class_token_without_blocks(sub, close, rng, seed, img, patch, D, h, out):
    """With no encoder block the class token never meets the image, so the logits of a ViT that
    classifies from it are the same for every image; a mean over the tokens (or a patch token) is not.
    A model that cannot be built with zero blocks is not judged here (the handout does not ask for it):
    returns whether the check was made."""
    name = _vit_name(img, patch, D, h, out, 0)
    try:
        m = _vit(sub, seed, img, patch, D, h, out, 0)
        r = forward(m, [randn(rng, (1, *img)), randn(rng, (1, *img))])
    except StudentError:
        return False
    a = check_shape(r.outputs[0], (1, out), f"{name} output")
    b = check_shape(r.outputs[1], (1, out), f"{name} output")
    if changed(a, b, float(np.max(np.abs(a)))):
        check_deterministic(m, randn(rng, (1, *img)), name)
        raise GradingFailure(
            f"{name}: with no encoder block the class token never sees the image, so the logits must be the "
            f"same for every image; two random images gave {np.round(a[0, :4], 4).tolist()}... and "
            f"{np.round(b[0, :4], 4).tolist()}...\nLikely mistake: the classifier reads a patch token instead of "
            "the class token, or a mean over the tokens (it must read the class token alone: the output at "
            "position 0, where the class embedding was prepended); or a layer mixes the tokens outside the "
            "attention (e.g. a LayerNorm over (N+1, D) instead of D).")
    return True


PRE_NORM_HINT = ("an encoder block that is not `Z = Z + MHSA(LN(Z)); Z = Z + MLP(LN(Z))`: a missing residual "
                 "connection (`Z = MHSA(LN(Z))`), a post-norm block (`Z = LN(Z + MHSA(Z))`, the original "
                 "Transformer's order, or nn.TransformerEncoderLayer without norm_first=True), or a block that "
                 "transforms Z outside its two residual branches")


@pytest.mark.question("vit")
@pytest.mark.weight(2)  # the handout's block; every other test passes without residuals or with post-norm
def test_vit_blocks_are_pre_norm_residual(sub, close, rng, seed, note):
    # Set every parameter of the second encoder block to zero: in a pre-norm block with residual connections
    # both branches then add exactly zero (LN(Z) is 0, so MHSA and the MLP give 0), and the two-block model must
    # give the logits of the same model with one block. The block's parameters are found by name: those a
    # two-block model has and a one-block model lacks. No parameter name or layout is assumed.
    D, h, out = 16, 2, 10
    img, patch = _geometry_it_takes(sub, rng, seed, (3, 8, 12), 4, D, h, out, note)
    two = _vit(sub, seed, img, patch, D, h, out, 2)
    one = _vit(sub, seed + 1, img, patch, D, h, out, 1)
    shapes_two = {p["name"]: tuple(p["shape"]) for p in two.params}
    shapes_one = {p["name"]: tuple(p["shape"]) for p in one.params}
    extra = sorted(set(shapes_two) - set(shapes_one))
    if not extra or any(shapes_two.get(n) != s for n, s in shapes_one.items()):
        pytest.skip("the parameters of a one-block and a two-block model do not line up by name "
                    "(blocks sharing weights, or stacked in one tensor): the block structure was not checked")
    with explained():
        shared = two.get_params(sorted(shapes_one))
        one.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in shared.items()})
        two.set_params({n: torch.zeros(shapes_two[n]) for n in extra})
    x = randn(rng, (2, *img))
    name = _vit_name(img, patch, D, h, out, 2)
    check_deterministic(two, x, name)
    want = check_shape(forward(one, [x]).outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} output")
    got = check_shape(forward(two, [x]).outputs[0], (2, out), f"{name} output")
    try:
        close(got, want, dtype="float32",
              what=f"{name} with every parameter of its second block ({', '.join(extra[:4])}"
                   f"{', ...' if len(extra) > 4 else ''}) set to zero, against the same model with one block (a "
                   "pre-norm residual block whose weights are all zero adds nothing, so the logits must be equal)")
    except GradingFailure as e:
        # the check holds only if the registered parameters are all the weights: a model with layers in a
        # plain Python list computes another function with the same parameters (the registration test says so)
        again = _vit(sub, seed + 2, img, patch, D, h, out, 1)
        with explained():
            again.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in shared.items()})
        same = check_shape(forward(again, [x]).outputs[0], (2, out), f"{_vit_name(img, patch, D, h, out, 1)} output")
        if not np.allclose(same, want, rtol=1e-4, atol=1e-5):
            pytest.skip("two models with the same registered parameters give different logits, so some weights "
                        "are not registered parameters (see the parameter test): the block structure was not checked")
        if _unchained_block(sub, rng, seed) is not None:
            pytest.skip("judged by test_vit_blocks_are_chained, not here: a block's weights do not reach the "
                        "logits, so a block's own structure cannot be seen through them")
        raise GradingFailure(f"{e.message}\nLikely mistake: {PRE_NORM_HINT}.") from e


def _block_names(sub, seed, img, patch, D, h, out):
    """[[names of block 0], [block 1], [block 2]] of a three-block model, found from the models with 1, 2
    and 3 blocks: the parameters the third block adds, and the same names with their block number (a
    whole dotted part, `blocks.2.attn.qkv.weight`) counted down. None when they do not line up so."""
    shapes = [{p["name"]: tuple(p["shape"]) for p in _vit(sub, seed, img, patch, D, h, out, n).params}
              for n in (1, 2, 3)]
    last = sorted(set(shapes[2]) - set(shapes[1]))
    blocks = [[], [], last]
    for name in last:
        parts = name.split(".")
        for i, part in enumerate(parts):
            if part != "2":
                continue
            lower = [".".join(parts[:i] + [str(k)] + parts[i + 1:]) for k in (0, 1)]
            if shapes[0].get(lower[0]) == shapes[2][name] and shapes[1].get(lower[1]) == shapes[2][name] \
                    and lower[1] not in shapes[0]:
                blocks[0].append(lower[0])
                blocks[1].append(lower[1])
                break
        else:
            return None
    return blocks if last else None


CHAIN_HINT = ("the blocks are not chained: each block must read the previous block's output, "
              "`for block in self.blocks: z = block(z)`; a loop that feeds every block the embeddings "
              "(`out = block(z)`, `x = block(embeddings)`) keeps only the last block's work")


def _unchained_block(sub, rng, seed):
    """None when changing the weights of any one block of a three-block model changes its logits (or the
    blocks cannot be found by name); else the failure message naming the block that does not count."""
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    blocks = _block_names(sub, seed, img, patch, D, h, out)
    if blocks is None:
        return None
    name = _vit_name(img, patch, D, h, out, 3)
    m = _vit(sub, seed, img, patch, D, h, out, 3)
    x = randn(rng, (2, *img))
    base = check_shape(forward(m, [x]).outputs[0], (2, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    noise = np.random.default_rng(seed)
    for k, names in enumerate(blocks):
        with explained():
            kept = {n: np.array(v, dtype=np.float32) for n, v in m.get_params(names).items()}
            m.set_params({n: torch.from_numpy(v + noise.standard_normal(v.shape).astype(np.float32)
                                              * max(float(v.std()), 0.5))
                          for n, v in kept.items()})
        try:
            got = check_shape(forward(m, [x]).outputs[0], (2, out), f"{name} output")
        finally:
            with explained():
                m.set_params({n: torch.from_numpy(v) for n, v in kept.items()})
        if not changed(got, base, scale):
            return (f"{name}: new random values for every weight of encoder block {k} ({', '.join(names[:3])}"
                    f"{', ...' if len(names) > 3 else ''}) left the logits as they were: that block takes no "
                    f"part in the output, so a deeper model is no better than one block.\nLikely mistake: "
                    f"{CHAIN_HINT}.")
    return None


@pytest.mark.question("vit")
@pytest.mark.weight(4)  # depth is what the blocks are for: unchained, only the last block counts
def test_vit_blocks_are_chained(sub, rng, seed):
    img, patch, D, h, out = (3, 8, 8), 4, 16, 2, 10
    if _block_names(sub, seed, img, patch, D, h, out) is None:
        pytest.skip("the parameters of the models with 1, 2 and 3 blocks do not line up by block number "
                    "(blocks sharing weights, or stacked in one tensor): the chaining of the blocks was not checked")
    failure = _unchained_block(sub, rng, seed)
    if failure:
        raise GradingFailure(failure)


LINEAR_MLP_HINT = ("the encoder block's MLP has no nonlinearity: Linear -> Dropout -> Linear is one linear map "
                   "(the two weight matrices multiply into one), so the MLP adds nothing a single layer could not. "
                   "Put nn.GELU() between the two Linear layers, as the handout's block has")


@pytest.mark.question("vit")
@pytest.mark.weight(3)  # the MLP is the block's nonlinearity per token; without it the block is much weaker
def test_vit_mlp_is_not_linear(sub, rng, seed):
    # Two layers with nothing elementwise between them, h = A u (+ a), y = B h, compute y = B A u: rotating the
    # hidden units, A -> S A and B -> B S^T (S orthogonal, fixing every bias-shaped parameter so biases need
    # not be found), leaves the logits exactly as they were. A GELU (any elementwise nonlinearity) between
    # them does not commute with S, so the logits change. Every pair of 2-D parameters of shapes (m, D) and
    # (D, m), m > D (the MLP widens the tokens), is tried; nn.Linear's (out, in) and a raw (in, out) matrix
    # are both covered. An attention's value and output projections are such a pair too, a whole-width one
    # (m = D) when the heads are not split, so m = D is not tried: a linear MLP of width D is not seen.
    img, patch, D, h, out = (2, 8, 8), 4, 12, 3, 5
    name = _vit_name(img, patch, D, h, out, 1)
    m = _vit(sub, seed, img, patch, D, h, out, 1)
    x = randn(rng, (2, *img))  # (dropout on in eval mode draws the same masks: every forward has one seed)
    base = check_shape(forward(m, [x]).outputs[0], (2, out), f"{name} output")
    scale = float(np.max(np.abs(base)))
    shapes = {p["name"]: tuple(p["shape"]) for p in m.params}
    pairs = [(a, b) for a, sa in shapes.items() for b, sb in shapes.items()
             if a != b and len(sa) == 2 and sa[1] == D and sa[0] > D and sb == (D, sa[0])]
    noise = np.random.default_rng(seed)
    for a, b in pairs:
        hidden = shapes[a][0]
        with explained():
            got = m.get_params([a, b] + [n for n, s in shapes.items() if s == (hidden,)])
        kept = {n: np.array(got[n], dtype=np.float64) for n in (a, b)}
        biases = [np.array(v, dtype=np.float64) for n, v in got.items() if n not in (a, b)]
        S = _rotation_fixing(hidden, biases, noise)
        if S is None:
            continue
        moved = {a: S @ kept[a], b: kept[b] @ S.T}
        if not changed(moved[a], kept[a], float(np.max(np.abs(kept[a])))):
            continue
        with explained():
            m.set_params({n: torch.from_numpy(v.astype(np.float32)) for n, v in moved.items()})
        try:
            again = check_shape(forward(m, [x]).outputs[0], (2, out), f"{name} output")
        finally:
            with explained():
                m.set_params({n: torch.from_numpy(v.astype(np.float32)) for n, v in kept.items()})
        if not changed(again, base, scale):
            raise GradingFailure(
                f"{name}: rotating the {hidden} hidden units between the parameters `{a}` {shapes[a]} and `{b}` "
                f"{shapes[b]} ({a} -> S {a}, {b} -> {b} S^T, S orthogonal) left the logits as they were; with a "
                f"nonlinearity between the two layers they change. Nothing but a linear map lies between them."
                f"\nLikely mistake: {LINEAR_MLP_HINT}.")


def _rotation_fixing(m, vectors, rng):
    """A random m x m orthogonal matrix that leaves every vector of `vectors` (each of length m) as it is,
    rotating only their orthogonal complement; None when that complement has fewer than two dimensions."""
    basis = np.eye(m)
    if vectors:
        u, sv, _ = np.linalg.svd(np.stack(vectors, axis=1), full_matrices=True)
        rank = int(np.sum(sv > 1e-9 * max(float(sv.max(initial=0.0)), 1e-300)))
        basis = u[:, rank:]
    r = basis.shape[1]
    if r < 2:
        return None
    q, _ = np.linalg.qr(rng.standard_normal((r, r)))
    if np.linalg.det(q) < 0:
        q[:, 0] = -q[:, 0]
    return np.eye(m) + basis @ (q - np.eye(r)) @ basis.T
