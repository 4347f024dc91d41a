"""What every question of `vit`'s grading tests shares (trusted side): the handout's data, the hint
texts expected.json quotes, and the helpers (patchify's judge in _patchify.py, determinism in eval mode in
_determinism.py, the positions in _positions.py, buffers in _registered.py, outputs in _outputs.py); the tests
themselves are in test_vit_<question>.py,
a file per question (a question with many tests has more: test_vit_mhsa_temperature.py, the softmax's
temperature, and test_vit_blocks.py, the ViT's encoder blocks), and the fixtures they share in conftest.py.

Grading tests of the `vit` assignment (trusted side): patchify, multi-head self-attention, ViT.

What it is for: judging a student's `patchify` against the reference (it is
pure data movement, so the answer is exact), and the student's
`MultiHeadSelfAttention` and `VisionTransformer` modules by properties that
every correct design has, whatever its parameter layout (fused or per-head
projections, `nn.MultiheadAttention`, a `Conv2d` patch embedding, dropout):
output shape, registered parameters that follow `.to(...)` and take part in
the graph (and are not frozen), permutation equivariance, token mixing and
weights that average over the keys, scores that are not symmetric, the
temperature sqrt(D/num_heads), and every weight reaching the output (MHSA
only), batch independence, determinism in eval mode, dependence on every
patch, a class-token readout, positions that reach the encoder blocks, pre-norm
residual blocks that are chained, both branches reading LN(Z) (a LayerNorm of its own each), a linear patch
embedding, an MLP that reads
the attention's output and is not linear, blocks wired as the handout's formula
(each branch run in a block of its own gives what both give in one), the attention inside the blocks (with known
weights, the handout's softmax over the keys of Q K^T / sqrt(D/num_heads) in num_heads heads) (ViT only), dtype and
device of the output, and the full
ViT-B/16 size on the meta device. An edge-case input on which a listed
mistake is invisible (one patch, a module's parameters without its forward)
earns only for code that is also right where the mistake shows; a property
test runs on inputs the submission can take (a square image, float32) when
its failure on the others is charged elsewhere.

What it is not: a comparison of module outputs with the reference (the
student's weights are not ours), or a place that runs student code; every
student call goes through `sub` and comes back as plain data.

Whether a ViT's logits change at all is judged in float64 where the model runs in it
(_vit_precise): a correct model with tiny gains (LayerScale started at 1e-5) changes its
logits by less than float32's rounding threshold, far more than float64's.

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

from checker.judging.compare import as_plain_array
from checker.running.modules import DETACHED_HINT, gradient_failure_text  # noqa: F401 - the gradient tests' message
from checker.judging.edge_gate import only_if_right_elsewhere
from checker.errors import GradingFailure, StudentError
from checker.running.recorded import Answers
from checker.judging.notebook_globals import naming_globals
from checker.judging.portability import check_runs_on_another_device, meta_only
from ._outputs import check_shape, plain_output, shape_before_gradients  # noqa: F401 - the tests' too

LIST_HINT = "per-head layers kept in a plain Python list are not registered: use nn.ModuleList"
DTYPE_HINT = ("a tensor in forward is not in the input's dtype: either weights that did not follow `.to(dtype)` "
              f"({LIST_HINT}), or a tensor made or cast inside forward (`.float()`, `torch.zeros(...)` "
              "without `dtype=x.dtype`)")
DEVICE_HINT = ("a tensor in forward is not on the input's device: either weights that did not follow "
               f"`.to(device)` ({LIST_HINT}), or a tensor made inside forward without `device=x.device`")

def _devices_differ(text):
    """PyTorch's "Input type (torch.cuda.FloatTensor) and weight type (torch.FloatTensor) should be the same"
    (lowercased) is a device mismatch, not a dtype one, when one type is a CUDA tensor and the other is not
    (seen on a real GPU, where the dtype hint sent a student to the wrong fix)."""
    m = re.search(r"input type \((torch\.[\w.]+)\) and weight type \((torch\.[\w.]+)\)", text)
    return bool(m) and ("cuda." in m.group(1)) != ("cuda." in m.group(2))


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
    ("unsupported scalartype bfloat16",
     "numpy has no bfloat16: a round trip through numpy (`.numpy()`, `np.` functions) cannot carry a bfloat16 "
     "tensor, which a GPU run passes in; stay in torch (reshape and permute, or F.unfold)"),
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
        extra = DEVICE_HINT if _devices_differ(text) else next((hint for key, hint in _ERROR_HINTS if key in text),
                                                                  None)
        owner = re.search(r"'(\w+)' object has no attribute", e.message)
        if extra is None and owner and owner.group(1) not in _NOT_MODULES:
            extra = (f"`forward` uses an attribute of `{owner.group(1)}` that `__init__` never created: the "
                     "attribute names in `__init__` and `forward` must be the same")
        if extra is None or extra.lower() in text:
            raise e from None
        end = "" if extra.endswith(("?", ".")) else "."
        raise e.retold(f"{e.message}\nLikely mistake: {extra}{end}") from None


# the answer models (the known patchify mistakes): computed in the full package, replayed in the student kit
A = Answers(__package__ + "._answers")  # this folder's _answers.py (a copy of the folder uses its own)


def randn(rng, shape, dtype="float32", device="cpu"):
    """A random torch tensor made on the trusted side (it is sent to the worker as raw bytes)."""
    t = torch.from_numpy(rng.standard_normal(shape)).to(getattr(torch, dtype))
    return t.to(device) if device != "cpu" else t


def as_np(t):
    """A float64 numpy copy of a trusted-side tensor (exact for every float dtype used here)."""
    return t.detach().to("cpu", torch.float64).numpy()


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


class _NewAsk:
    """`new(sub, cls, *args, **kwargs)` asked of `t`, a Together (checker.running.together) with the test's other asks:
    `get()` gives what `new` gives alone, or raises what it raises (the same hints, the same retry with
    num_encoder_blocks passed by position, asked alone)."""

    def __init__(self, t, sub, cls, args, kwargs):
        self.sub, self.cls, self.args, self.kwargs = sub, cls, list(args), dict(kwargs)
        self.sizes = dict(zip(ARG_NAMES.get(cls, ()), args))
        if "num_encoder_blocks" in kwargs:
            self.sizes["num_encoder_blocks"] = kwargs["num_encoder_blocks"]
        self.kwargs.setdefault("example", example_input(cls, self.sizes))
        self.pending = t.new(cls, *args, **self.kwargs)
        self.alone = False  # made again alone (the retry): its forward asked together is not this module's
        self.made = None

    def get(self):
        if self.made is not None:
            return self.made
        sub, cls, args, kwargs = self.sub, self.cls, self.args, self.kwargs
        with naming_globals(sub, self.sizes, cls), explained():
            try:
                m = self.pending.get()
            except GradingFailure as e:
                if not _blocks_named_otherwise(e, kwargs):
                    raise
                self.alone = True  # as in `new`
                m = sub.new(cls, *args, kwargs["num_encoder_blocks"], **{k: v for k, v in kwargs.items()
                                                                          if k != "num_encoder_blocks"})
        m.sizes = self.sizes
        self.made = m
        return m


def new_asked(t, sub, cls, *args, **kwargs):
    """`new(sub, cls, *args, **kwargs)` asked of the Together `t`: a _NewAsk, whose get() gives the module."""
    return _NewAsk(t, sub, cls, args, kwargs)


class _ForwardAsk:
    """`forward(m, inputs)` (with `plain`: `m.forward(inputs, seed=seed)`, without the hints) asked of a Together,
    `m` a _NewAsk of the same batch or a module made before: `get()` gives (or raises) what that gives alone; call
    the _NewAsk's get() first, as the test asked it first."""

    def __init__(self, t, made, inputs, seed=0, plain=False):
        self.made, self.inputs, self.seed, self.plain = made, list(inputs), seed, plain
        self.pending = t.forward(made.pending if isinstance(made, _NewAsk) else made, self.inputs, seed=seed)

    def get(self):
        m = self.made.get() if isinstance(self.made, _NewAsk) else self.made
        if isinstance(self.made, _NewAsk) and self.made.alone:  # the module made again alone: its forward goes alone
            return m.forward(self.inputs, seed=self.seed) if self.plain else forward(m, self.inputs)
        if self.plain:
            return self.pending.get()
        with naming_globals(m.sub, getattr(m, "sizes", {}), m.cls), explained():
            return self.pending.get()


def forward_asked(t, made, inputs, seed=0, plain=False):
    """`forward(m, inputs)` asked of the Together `t` (see _ForwardAsk)."""
    return _ForwardAsk(t, made, inputs, seed, plain)


def set_then_forward(m, values, inputs):
    """`with explained(): m.set_params(values)`, then `forward(m, inputs)`, in one round trip (each raising as
    alone; the forward asked only where the parameters were set, else alone, at need)."""
    with m.sub.together(chain=True) as t:
        put = t.set_params(m, values)
        ran = forward_asked(t, m, inputs)
    with explained():
        put.get()
    return ran.get()


def new_then_forward(sub, rng, build, inputs):
    """(module, _ForwardAsk): `build(t)` (a _NewAsk) and then its forward on `inputs()` asked in one round trip,
    `inputs` drawn from `rng` before the module is made but as if after it: where the module is not made (the
    failure raised), `rng` is put back as it was, as the test drew nothing before that failure."""
    kept = rng.bit_generator.state if rng is not None else None
    with sub.together(chain=True) as t:
        made = build(t)
        ran = forward_asked(t, made, inputs())
    try:
        m = made.get()
    except BaseException:
        if rng is not None:
            rng.bit_generator.state = kept
        raise
    return m, ran


def with_params_forward(m, values, inputs, restore, judge):
    """What the tests do alone, in one round trip: `with explained(): m.set_params(values)`, then `try: return
    judge(forward(m, inputs)) finally: with explained(): m.set_params(restore)`; each ask raises as alone (the
    forward and the putting back are asked only where the ones before them answered; else alone, at need)."""
    with m.sub.together(chain=True) as t:
        put = t.set_params(m, values)
        ran = forward_asked(t, m, inputs)
        back = t.set_params(m, restore)
    with explained():
        put.get()
    try:
        return judge(ran.get())
    finally:
        with explained():
            back.get()


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


def changed(a, b, scale, rel=1e-4):
    """True when a and b differ by clearly more than rounding, relative to `scale`: `rel` 1e-4 for float32 answers,
    PRECISE_REL for float64 ones (see _vit_precise)."""
    return float(np.max(np.abs(a - b))) > rel * max(scale, 1e-6)


# A float64 model's logits: a change this small relative to their size is rounding (float64 rounds at 1e-16), and a
# real dependence is far above it even where a gain makes it tiny (LayerScale started at 1e-5 scales each block's
# branches by 1e-5, under float32's 1e-4 threshold: a correct model would be told that it ignores the image).
PRECISE_REL = 1e-9


def _vit_precise(sub, seed, img, patch, D, h, out, blocks, inputs):
    """(model, its ForwardResult on `inputs`, rel for `changed`): the ViT built and run in float64 (inputs given as
    float64 tensors), so that "do the logits change at all" is told from rounding by PRECISE_REL whatever the gains
    of the model; where it does not run in float64 or answers in another dtype (a cast inside forward, which
    test_vit_dtype_and_device charges), built and run in float32 as before, with the float32 threshold."""
    try:
        m, ran = _vit_then_forward(sub, None, seed, img, patch, D, h, out, blocks, lambda: inputs, dtype="float64")
        r = ran.get()
        if list(r.dtypes[:1]) == ["float64"] and len(r.outputs) == len(inputs):
            return m, r, PRECISE_REL
    except GradingFailure:
        pass
    m, ran = _vit_then_forward(sub, None, seed, img, patch, D, h, out, blocks, lambda: [x.float() for x in inputs])
    return m, ran.get(), 1e-4


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
        try:
            g = m.grads(x, weight)
        except GradingFailure as e:  # sum(output * weight) fails on an output of another shape: say that
            shape_before_gradients(e, m, x, tuple(weight.shape), what)
    params = g.get("params", []) if isinstance(g, dict) else []
    if not params:
        raise GradingFailure(f"{what} has no registered parameters, so nothing can be trained."
                             f"\nLikely mistake: {LIST_HINT}.")
    # a parameter made with requires_grad=False gets no gradient however it is used: say it is frozen, not unused
    frozen = {p.get("name") for p in m.params if isinstance(p, dict) and p.get("requires_grad") is False}
    unused = [p["name"] for p in params if not p.get("has_grad") and p["name"] not in frozen]
    still = [p["name"] for p in params if not p.get("has_grad") and p["name"] in frozen]
    if still:
        raise GradingFailure(
            f"{what}: these parameters are frozen (requires_grad=False), so they get no gradient and an optimizer "
            f"never updates them: {', '.join(still[:8])}" + (f" and {len(still) - 8} more" if len(still) > 8 else "")
            + "\nLikely mistake: a parameter made with `nn.Parameter(..., requires_grad=False)` (or "
            "`.requires_grad_(False)`, fixed values as in MAE's positions); the handout's weights and embeddings "
            "are learnable: leave requires_grad at its default, True."
            + (f"\n(These parameters take no part in computing the output either: {', '.join(unused[:8])}.)"
               if unused else ""))
    if unused:
        raise GradingFailure(
            f"{what}: these parameters got no gradient, they take no part in computing the output: "
            f"{', '.join(unused[:8])}" + (f" and {len(unused) - 8} more" if len(unused) > 8 else "")
            + "\n(a layer that is created but never used in forward, or a result that is detached)")
    bad = [p["name"] for p in params if p.get("finite") is False]
    if bad:
        raise GradingFailure(f"{what}: the gradients of {', '.join(bad[:8])} contain NaN or Inf")


# ---------------------------------------------------------------- the gradient agrees with the output
# A forward whose values are right can cut part of itself off from autograd (`.detach()` on the attention weights,
# `torch.no_grad()`, `.data`, a numpy round trip): with a fused qkv projection every parameter still gets a gradient
# (the values' rows), so check_in_graph cannot tell. checker.running.modules.ModuleHandle.gradient_check measures
# autograd's slope of sum(output * W) along random directions of the parameters against central finite differences
# of forwards computed here; these word what it found.

def check_gradient_follows(build, x, weight, seed, what, output="output"):
    """The gradient check of the module `build(dtype)` makes, in float64 (where it runs in it and agrees there, done),
    else in float32 too (a part computed in float32 inside, a softmax for stability, is told from a wrong gradient
    by its own precision): a GradingFailure where autograd's gradient and the forwards disagree."""
    check = None
    try:
        with explained():
            check = build("float64").gradient_check(x.double(), weight.double(), seed=seed)
    except GradingFailure as e:
        if isinstance(e, StudentError) and type(e).__name__ in ("StudentTimeout", "WorkerCrashed"):
            raise
    if check is None or not check.agrees():
        with explained():
            m = build("float32")
            try:
                in32 = m.gradient_check(x.float(), weight.float(), seed=seed)
            except GradingFailure as e:  # an output of another shape than the weight's: say that
                shape_before_gradients(e, m, x.float(), tuple(weight.shape), what)
        if check is None or in32.agrees() or in32.no_graph:
            check = in32
    text = gradient_failure_text(check, what + (" built in float64" if check.dtype == "float64" else ""),
                                 output=output)
    if text:
        raise GradingFailure(text)


# ---------------------------------------------------------------- building and shaping a ViT (question vit's files)

def _vit_args(img, patch, D, h, out, blocks):
    return [img, patch, D, h, out], ({} if blocks is None else {"num_encoder_blocks": blocks})


def _vits(sub, seed, img, patch, D, h, out, counts):
    """[_vit(sub, seed, img, patch, D, h, out, n) for n in counts], asked of the worker in one round trip; where one
    of them fails, all are built again one by one through `_vit`, whose failure names the mistake (a notebook global,
    arguments in another order, a renamed num_encoder_blocks passed by position) as it does alone."""
    args, _ = _vit_args(img, patch, D, h, out, None)
    example = example_input("VisionTransformer", {"img_shape": img})
    with sub.together() as t:
        asked = [t.new("VisionTransformer", *args, seed=seed, example=example, num_encoder_blocks=n) for n in counts]
    try:
        models = [a.get() for a in asked]
    except GradingFailure:
        return [_vit(sub, seed, img, patch, D, h, out, n) for n in counts]
    for m, n in zip(models, counts):
        m.sizes = {**dict(zip(ARG_NAMES["VisionTransformer"], args)), "num_encoder_blocks": n}
    return models


def _vit_name(img, patch, D, h, out, blocks):
    extra = "" if blocks is None else f", num_encoder_blocks={blocks}"
    return f"VisionTransformer({img}, {patch!r}, {D}, {h}, {out}{extra})"


def _vit(sub, seed, img, patch, D, h, out, blocks, **kw):
    args, kwargs = _vit_args(img, patch, D, h, out, blocks)
    return new(sub, "VisionTransformer", *args, seed=seed, **kwargs, **kw)


IMAGE_BLIND = ("the logits are the same for two different random images: they do not depend on the image at all, "
               "so what this test changes inside the model cannot reach them (test_vit_depends_on_every_patch "
               "names the likely cause); this test's own check could not be made")


def _same_rows(y):
    """Whether the logits (2, out) of two different images are the same (relative to their size)."""
    y = np.asarray(y, dtype=np.float64)
    return bool(np.max(np.abs(y[0] - y[1])) <= 1e-6 * max(float(np.max(np.abs(y))), 1e-12))


def _image_blind(sub, seed, rng, img, patch, D, h, out, blocks):
    """On a test's failure path: whether a model of this configuration gives the same logits for two different
    random images, so that the test's failure says nothing of its own part (a class token read without the
    patches: the test of dependence on every patch charges that, naming it)."""
    try:
        _, ran = _vit_then_forward(sub, rng, seed, img, patch, D, h, out, blocks, lambda: [randn(rng, (2, *img))])
        return _same_rows(check_shape(ran.get().outputs[0], (2, out), "output"))
    except GradingFailure:
        return False


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


def _positional_param(m, N, D=None):
    """(name, shape, None) of the registered parameter that is the model's positional embedding, of shape
    (N+1, D) or (1, N+1, D), or (None, None, why not) for a test's skip message. Found by the attribute the
    handout names, `positional_embedding`: a parameter of that name, else the registered parameter that the
    attribute is (a @property returning `self.embeddings.position_embeddings`, an alias `self.positional_embedding
    = self.pos`), told by swapping two of its rows through the attribute; where the model has no such attribute,
    the one parameter of that shape (a renamed `pos_embed`, which test_vit_embedding_shapes charges). Never by a
    parameter name alone, so the tests that set it judge every layout."""
    params = {p["name"]: tuple(p["shape"]) for p in m.params
              if isinstance(p, dict) and isinstance(p.get("name"), str) and isinstance(p.get("shape"), list)}

    def fits(s):
        return (len(s) == 2 or (len(s) == 3 and s[0] == 1)) and s[-2] == N + 1 and (D is None or s[-1] == D)

    if fits(params.get("positional_embedding", ())):
        return "positional_embedding", params["positional_embedding"], None
    with explained():
        info = m.attr_shape("positional_embedding")
    shape = info.get("shape") if isinstance(info, dict) else None
    shape = tuple(shape) if isinstance(shape, list) else None
    same = [n for n, s in params.items() if fits(s) and (shape is None or s == shape)]
    if shape is None:
        if len(same) == 1:
            return same[0], params[same[0]], None
        return None, None, ("the model has no attribute `positional_embedding` (test_vit_embedding_shapes charges "
                            f"that) and {'no' if not same else 'more than one'} parameter of shape ({N + 1}, "
                            f"{D if D is not None else 'D'}) or (1, {N + 1}, {D if D is not None else 'D'}) that "
                            "could be it")
    if not fits(shape):
        return None, None, (f"`positional_embedding` has shape {shape}, not N+1 = {N + 1} rows of width "
                            f"{D if D is not None else 'D'} (test_vit_embedding_shapes checks that shape)")
    if len(same) == 1 and (not isinstance(info, dict) or info.get("is_parameter") is not False):
        return same[0], shape, None
    if len(same) > 1:  # which of them the attribute is: swap two of its rows and see which parameter moved
        with explained():
            before = m.get_params(same)
            m.swap_rows("positional_embedding", 0, N)
            try:
                after = m.get_params(same)
            finally:
                m.swap_rows("positional_embedding", 0, N)
        moved = [n for n in same if n in before and n in after
                 and not np.array_equal(np.asarray(before[n]), np.asarray(after[n]))]
        if len(moved) == 1:
            return moved[0], shape, None
    return None, None, ("`positional_embedding` is not one of the model's registered parameters "
                        "(named_parameters()): a plain tensor or buffer, or a parameter kept outside the module "
                        "tree, so this test cannot set it")


def _vit_asked(t, sub, seed, img, patch, D, h, out, blocks, **kw):
    """`_vit(...)` asked of the Together `t` (a _NewAsk)."""
    args, kwargs = _vit_args(img, patch, D, h, out, blocks)
    return new_asked(t, sub, "VisionTransformer", *args, seed=seed, **kwargs, **kw)


def _vit_then_forward(sub, rng, seed, img, patch, D, h, out, blocks, inputs, **kw):
    """`m = _vit(...)` and then `forward(m, inputs())` in one round trip (see new_then_forward): (m, _ForwardAsk)."""
    return new_then_forward(sub, rng, lambda t: _vit_asked(t, sub, seed, img, patch, D, h, out, blocks, **kw), inputs)


def _vit_shape(sub, rng, seed, B, img, patch, D, h, out, blocks):
    m, ran = _vit_then_forward(sub, rng, seed, img, patch, D, h, out, blocks, lambda: [randn(rng, (B, *img))])
    try:
        r = ran.get()
        check_shape(r.outputs[0], (B, out), f"{_vit_name(img, patch, D, h, out, blocks)} on images of shape "
                                            f"{(B, *img)}")
    except GradingFailure as e:
        hint = None if e.hinted else _positions_hint(m, img, patch)
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None


def _vit_structure_earns_if_it_runs(sub, rng, seed):
    """A test of structure (parameters, their count, the embeddings' shapes) passes for a model whose
    forward does not work (returns None, say): it earns only for a model that also gives logits of the
    right shape."""
    only_if_right_elsewhere("VisionTransformer", "the model's parameters, which a forward that does not work "
                            "has as well", "images of shape (2, 3, 8, 8)",
                            lambda: _vit_shape(sub, rng, seed, 2, (3, 8, 8), 4, 16, 2, 10, 1))


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


# every name, underscored helpers included: each question's file starts `from ._common import *`
__all__ = [n for n in dir() if not n.startswith("__")]
