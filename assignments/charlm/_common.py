"""What every question of `charlm`'s grading tests shares (trusted side): the handout's data, the hint
texts expected.json quotes, and the helpers (written by hand in _by_hand.py, the position table in _tables.py,
gradients in _gradients.py, the temperature in _temperature.py); the tests themselves are in
test_charlm_<question>.py, one file per question, and the fixtures they share in conftest.py.

Grading tests of the `charlm` assignment (trusted side).

What it is for: checking a student's causal character-level transformer
against HOMEWORK.md: the data pipeline (`build_vocab`, `make_blocks`), the
causal mask and masked attention, layer normalization by hand, sinusoidal
positions, and `CharTransformer`. Functions are compared with the reference
(`ref`) on fresh random inputs of other shapes than the handout's; every
known mistake (wrong triangle, softmax over the queries, no scaling, the
unbiased variance, eps on the std, sin/cos swapped, ...) is computed on the
trusted side with torch by the answer models of `_answers.py` (through `A`,
checker.running.recorded.Answers: the student kit replays their results on the public
inputs and holds no code that computes an answer), and passed to `close` as a
hint so a failing answer that matches it is named. An edge case where some mistakes are
invisible (T = 1, position 0) earns only for a function also right where they
show, and an answer equal to one the function gave earlier for other inputs is
named as a cached answer (checker.judging.edge_gate). Why a model is not causal is
found by experiment where one tells (another seed, a shorter input, one head).

The model is graded by properties any correct design has (no weights are
compared): output shape, causality, batch independence, registered
parameters that all take part in the graph, and dtype following the
parameters. The worker only runs forward on the inputs it is sent (a batch
and its modified copies); every comparison (logits up to t unchanged after
changing the tokens after t, a row alone vs in its batch) is done here, on
the plain arrays it sent back.

Devices and dtypes: float32/float64 everywhere; on CUDA also float16 and
bfloat16, judged by PyTorch's rule for low-precision attention
(`compare_lowp`: error against a float64 golden answer within 5x the
reference's own error at that precision).

What it is not: a place that runs student code (everything goes through
`sub`) or that decides points (the plugin and the scorecard do).
"""

import functools
import re

import numpy as np
import pytest
import torch

from checker.judging.compare import compare_lowp, lowp_blind
from checker.judging.edge_gate import logged_close, only_if_right_elsewhere
from checker.errors import GradingFailure, StudentError, StudentTimeout, WorkerCrashed
from checker.running.recorded import Answers
from checker.running.together import asked
from checker.judging.notebook_globals import naming_globals
from checker.judging.portability import check_call_on_another_device, check_runs_on_another_device
from ._gradients import shape_first
from ._tables import retold_with_table_hint

LOWP = ("float16", "bfloat16")
# vocab_size, block_size, d_model, num_heads, num_layers
MODEL = (11, 9, 20, 2, 2)  # no size a notebook is likely to hold in a global (8, 32, 64, 65, ...)
MODEL_MORE = [(5, 12, 24, 3, 1), (30, 4, 8, 4, 3)]
CAUSAL_HINT = ("logits at position t depend on later tokens: the mask is missing or on the wrong triangle "
               "(key j > query i must be masked), or a layer mixes positions (nn.LayerNorm([block_size, d_model]) "
               "normalizes over time too: build it as nn.LayerNorm(d_model)), or the softmax runs over the "
               "queries (dim=-2) instead of the keys (dim=-1) (or over the heads: dim=1 of (B, H, T, T) scores), "
               "or the future is hidden the wrong way: masked "
               "scores set to 0 (torch.tril(scores)) still count exp(0) = 1, and weights zeroed after the "
               "softmax were normalized with the future keys in (fill the scores with -inf before the "
               "softmax), or a float attn_mask of ones and zeros (torch.tril(torch.ones(T, T))) is added to the "
               "scores and blocks nothing (nn.MultiheadAttention takes a bool mask, True where attention is not "
               "allowed, F.scaled_dot_product_attention one True where it is, or a float mask of -inf where "
               "blocked), or an nn.TransformerDecoderLayer's "
               "cross-attention sees the unmasked `memory`")
SHORT_CAUSAL_HINT = ("the model is causal on a full block but not on this shorter input: for T < block_size the "
                     "mask must be the top-left T x T corner of the block_size mask (self.tril[:T, :T]), or be "
                     "built for T in forward")
SHORT_INPUT_HINT = ("forward works on a full block but not on this shorter input: a language model must run on any "
                    "T <= block_size (generation starts from one token), so index the positions with "
                    "torch.arange(T) / pos_emb[:T] and slice any mask to [:T, :T]")
POSITIONS_BY_IDS_HINT = ("the positional embedding is indexed with the token ids (`self.pos_emb(idx)`): it fails on a "
                         "full block of ids >= block_size too, which a block of zeros hides. Its rows are the "
                         "positions 0..T-1: index it with torch.arange(T, device=idx.device)")
CHANGED_BY_FORWARD_HINT = ("a forward on a shorter input changed the model, and the next call went wrong: "
                           "`self.mask = self.mask[:T, :T]` (or any `self.x = ...` in forward) overwrites the "
                           "registered buffer, so after generation's first one-token call the mask is 1 x 1. Slice "
                           "into a local variable instead: `mask = self.mask[:T, :T]`")
TRAINING_ONLY_CAUSAL_HINT = (
    "the model is causal in eval mode but not in training mode, where it learns: a layer mixes positions only "
    "in model.train(). nn.BatchNorm1d (or F.batch_norm) normalizes each feature with the mean and variance of "
    "the whole batch and every position, so while training each token's logits depend on later tokens (and on "
    "the other sequences): use nn.LayerNorm(d_model), which normalizes each token over its own features")
RANDOM_HINT = ("forward gives different logits for the same input under another random seed, in eval mode: "
               "something drops whatever the mode. F.dropout(x, p) drops even in eval mode (its training= defaults "
               "to True): use F.dropout(x, p, training=self.training); an nn.Dropout(p) created inside forward "
               "(`nn.Dropout(p)(x)`) is a new module on every call, always in training mode, because model.eval() "
               "reaches only the modules made in __init__: create it there once (`self.drop = nn.Dropout(p)`) "
               "and call self.drop(x); and F.scaled_dot_product_attention(..., dropout_p=p) drops whatever the "
               "mode: pass dropout_p=p if self.training else 0.0")
HEADS_MERGE_HINT = ("the model is causal with one head but not with {h}: the heads are split or merged back with a "
                    "view/reshape that skips a transpose, which mixes the positions of different heads. Split with "
                    "`x.view(B, T, h, C // h).transpose(1, 2)` (B, h, T, C/h) and merge back with "
                    "`y.transpose(1, 2).contiguous().view(B, T, C)`, the transpose first. (The mask, its triangle "
                    "and the softmax axis are the same for one head as for {h}, so they are not the cause.)")
DIAGONAL_MASK_HINT = ("the mask also hides the diagonal (torch.triu(..., diagonal=0) or ~tril(-1)): position i "
                      "must see itself, so only j > i is masked (triu with diagonal=1)")
DIAGONAL_HINT = DIAGONAL_MASK_HINT + "; row 0 then has no key left at all, which gives NaN"
# errors of the student's model whose cause their words do not say
KNOWN_ERRORS = [
    (re.compile(r"2D attn_mask is torch\.Size\(\[\d+, \d+\]\), but should be"),
     "nn.MultiheadAttention without batch_first=True reads (B, T, C) input as (T, B, C), so it expects a "
     "(B, B) mask: build it with batch_first=True"),
    (re.compile(r"forward\(\) missing \d+ required (positional|keyword-only) arguments?"),
     "forward must run on the token ids alone (generation calls model(idx)): give its other arguments "
     "defaults, e.g. `def forward(self, idx, targets=None)`, and compute the loss only when targets are given"),
]


# the answer models (the known mistakes, torch's layer norm): computed in the full package, replayed in the kit
A = Answers(__package__ + "._answers")  # this folder's _answers.py (a copy of the folder uses its own)


def _fail(message):
    raise GradingFailure(message)


def _tensor(a, dtype="float64", device="cpu"):
    """A trusted-side torch tensor from numpy data (created on `device`)."""
    return torch.tensor(np.asarray(a), dtype=getattr(torch, dtype), device=device)


def _np64(t):
    """A trusted-side float64 numpy copy of a tensor (any device/dtype)."""
    return t.detach().to("cpu", torch.float64).numpy()


def _shape(s):
    s = tuple(s)
    return "(" + ", ".join(map(str, s)) + ("," if len(s) == 1 else "") + ")"


def _check_values(close, got, *, expected, golden, what, dtype, hints, name=None, recheck=None):
    """`close` against `expected` (the reference in the input's dtype) for float32/float64; for float16/bfloat16,
    PyTorch's low-precision rule: the error against the float64 `golden` answer may be 5x the reference's own.

    A low-precision answer that passes where a listed mistake would pass too (its rounding hides the mistake:
    an eps on the std in bfloat16) earns its points only if `recheck()`, the same function on the same input
    in float64, is right too (edge_gate.only_if_right_elsewhere); without a `recheck` it is skipped."""
    if dtype in LOWP:
        compare_lowp(got, _np64(golden), _np64(expected), what=what, dtype=dtype, hints=hints)
        blind = lowp_blind(_np64(golden), _np64(expected), hints, dtype=dtype)
        if blind:
            only_if_right_elsewhere(name or "function", f"{dtype}, whose rounding hides a listed mistake: "
                                    f"{blind[0][:120]}", "the same input in float64",
                                    recheck or (lambda: _fail("no float64 check was given")))
    else:
        close(got, _np64(expected), what=what, dtype=dtype, hints=hints)


def _check_dtype(info, dtype, what):
    got = (info.get("dtypes") or ["?"])[0]
    if got != dtype:
        _fail(f"{what}: the values are right but came back as {got} for {dtype} inputs. Work in the input's "
              f"dtype: build masks and constants with `dtype=x.dtype, device=x.device` (or use masked_fill).")


# attention --------------------------------------------------------------


NEXT_TOKEN_HINT = ("the mask is off by one: position i also sees key i+1, the next token (tril(..., diagonal=1) "
                   "or triu(..., 2)); True must start right above the diagonal: "
                   "`torch.ones(T, T, dtype=torch.bool).triu(1)`, or `torch.tril(torch.ones(T, T)) == 0`")


def _attention_hints(Q, K, V):
    """Known mistakes of masked_attention, computed in float64 on the trusted side (A: checker.running.recorded.Answers)."""
    m = A.attention_mistakes(Q, K, V)
    hints = [
        ("softmax over the query axis (dim=-2); it must run over the keys, the last axis", m["query_axis"]),
        (DIAGONAL_HINT, m["diagonal"]), (NEXT_TOKEN_HINT, m["next_token"]),
        ("your mask lets position i see j > i (the mask is on the wrong triangle)", m["lower"]),
        ("your mask lets position i see j > i (True must mark the future keys j > i, the ones to hide)",
         m["inverted"]),
        ("no 1/sqrt(d_k) scaling of the scores", m["none"]),
        ("the scores were divided by d_k instead of sqrt(d_k)", m["d_k"]),
        ("no causal mask: every position attends to all keys", m["no_mask"]),
        ("masked scores set to 0 instead of -inf (torch.tril(scores) or scores * mask): exp(0) = 1, so the "
         "future keys still get weight; fill them with float('-inf') before the softmax", m["zero_fill"]),
        ("the weights were masked after the softmax without normalizing again: each row was normalized over "
         "every key, future ones included; mask the scores with -inf before the softmax", m["after_softmax"]),
    ]
    if m["T"] is not None:
        hints.append(("the scores were divided by sqrt(T), the number of tokens, instead of sqrt(d_k), the width "
                      "of the keys (K.shape[-1])", m["T"]))
    if m["d_v"] is not None:
        hints.append(("scaled by 1/sqrt(d_v) instead of 1/sqrt(d_k)", m["d_v"]))
    if m.get("half_d_k") is not None:
        hints.append(("operator precedence: `d_k ** 1/2` is (d_k ** 1) / 2 = d_k / 2, not sqrt(d_k), because `**` "
                      "binds tighter than `/`; write `d_k ** 0.5` or `math.sqrt(d_k)`", m["half_d_k"]))
    if m.get("twice_d_k") is not None:
        hints.append(("operator precedence: `scores / d_k ** 1/2` divides by d_k and then by 2, because `**` binds "
                      "tighter than `/`; write `scores / d_k ** 0.5` or `scores / math.sqrt(d_k)`", m["twice_d_k"]))
    for axis, value in enumerate(m["batch_axes"]):  # a batch or heads axis: softmax(dim=1) written for (B, T, T)
        hints.append((f"softmax over axis {axis} (dim={axis}), a batch or heads axis, instead of the keys (dim=-1): "
                      "the masked -inf scores line up along that axis, and a softmax of only -inf is NaN", value))
    return hints


def _check_attention(sub, ref, close, rng, q_shape, d_v, device, dtype, scale=1.0, same_qk=False):
    """masked_attention on random Q, K, V (numbers drawn in float64, rounded to `dtype` on `device`)."""
    Q = _tensor(scale * rng.standard_normal(q_shape), dtype, device)
    K = Q.clone() if same_qk else _tensor(scale * rng.standard_normal(q_shape), dtype, device)
    V = _tensor(rng.standard_normal(tuple(q_shape[:-1]) + (d_v,)), dtype, device)
    got, info = sub.call_info("masked_attention", Q, K, V)
    what = (f"masked_attention(Q, K, V) with Q, K {_shape(Q.shape)}, V {_shape(V.shape)}, {dtype} on {device}")
    golden = ref.masked_attention(*(t.to("cpu", torch.float64) for t in (Q, K, V)))
    expected = ref.masked_attention(Q, K, V)
    def in_float64():
        Q64, K64, V64 = (t.to(torch.float64) for t in (Q, K, V))
        close(sub.call("masked_attention", Q64, K64, V64), _np64(golden), dtype="float64",
              what=what.replace(dtype, "float64"))

    try:
        _check_values(close, got, expected=expected, golden=golden, what=what, dtype=dtype,
                      hints=_attention_hints(Q, K, V), name="masked_attention", recheck=in_float64)
    except GradingFailure as e:
        hint = None if e.hinted else (_random_attention_hint(sub, Q, K, V)
                                                            or _global_scale_hint(sub, close, got, Q, K, V))
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None
    _check_dtype(info, dtype, what)


RANDOM_ATTENTION_HINT = (
    "masked_attention gives different answers for the same Q, K and V, call after call: it draws random numbers, "
    "as dropout on the attention weights does. F.dropout(att, p) drops even in eval mode (its training= defaults "
    "to True), and the handout's masked_attention has no dropout: return softmax(scores) @ V as it is. Dropout, "
    "if you want it, belongs in the model: an nn.Dropout(p) made in __init__, or F.dropout(x, p, "
    "training=self.training)")


def _random_attention_hint(sub, Q, K, V):
    """RANDOM_ATTENTION_HINT when two more calls of masked_attention on the same Q, K, V answer differently (dropout,
    or any other random draw, as the model test's RANDOM_HINT finds of forward), else None; tried on the test's
    inputs and on (2, 6, 4) ones, where a few weights (one token) could draw the same twice. Nothing is compared
    with an answer here, only the submission's answers with each other."""
    g = torch.Generator().manual_seed(0)
    probe = [torch.randn((2, 6, 4), generator=g, dtype=torch.float64).to(Q.dtype).to(Q.device) for _ in range(3)]
    for args in ((Q, K, V), probe):
        try:
            a, b = (np.asarray(sub.call("masked_attention", *args), dtype=np.float64) for _ in range(2))
        except (GradingFailure, StudentError, TypeError, ValueError):
            continue
        if a.shape != b.shape:
            return RANDOM_ATTENTION_HINT
        finite = np.isfinite(a) & np.isfinite(b)
        if not np.array_equal(np.isnan(a), np.isnan(b)) or not np.array_equal(a[~finite], b[~finite]):
            return RANDOM_ATTENTION_HINT
        if finite.any():
            scale = float(np.max(np.abs(a[finite])))
            if float(np.max(np.abs(a[finite] - b[finite]))) > 1e-3 * max(scale, 1e-3):
                return RANDOM_ATTENTION_HINT
    return None


def _global_scale_hint(sub, close, got, Q, K, V):
    """masked_attention scaled by a notebook global (`head_size = 8`) instead of its keys' width: name it."""
    d_k = Q.shape[-1]
    try:
        tops = sub.top_level_ints()
    except GradingFailure:
        return None
    for name, g in sorted(tops.items()):
        if g <= 0 or g == d_k:
            continue
        try:
            # a student's own global: never on the public tests' path, so the kit has no recorded value (None)
            mistaken = A.maybe.scaled_by(Q, K, V, g)
            if mistaken is None:
                continue
            close(got, mistaken, dtype="float32", what="")
        except GradingFailure:
            continue
        return (f"the scores seem to be scaled by your notebook's `{name}` = {g} (1/sqrt({g})) instead of the "
                f"width of these keys, K.shape[-1] = {d_k}: a function must work from its arguments")
    return None


# positions --------------------------------------------------------------


def _pe_variants(T, d):
    m = A.pe_mistakes(T, d)
    return [
        ("sin and cos swapped: even columns 2i take the sine, odd columns 2i+1 the cosine", m["swapped"]),
        ("the exponent uses i instead of 2i: 10000^(2i/d_model), with 2i the even column index", m["exponent_i"]),
        ("the cosine columns use their own index 2i+1 in the exponent; a pair (2i, 2i+1) shares 10000^(2i/d_model)",
         m["cos_own_index"]),
        ("all the sines first and then all the cosines (torch.cat of two halves); they are interleaved: sin in "
         "the even columns 2i, cos in the odd columns 2i+1", m["halves"]),
        ("the exponent doubles the column index j (10000^(2j/d_model) for column j): the pair index i of columns "
         "2i and 2i+1 goes there, 10000^(2i/d_model), so column j = 2i uses j itself and column 2i+1 uses j - 1",
         m.get("column_doubled")),
        ("the positions are counted from 1 (torch.arange(1, T + 1)): p runs 0 .. T-1, so row 0 is sin(0) = 0 "
         "and cos(0) = 1 (torch.arange(T))", m.get("from_1")),
    ]


ODD_WIDTH_HINT = ("with an odd d_model there is one more sine column than cosine columns ((d_model + 1) // 2 "
                  "even columns, d_model // 2 odd ones), so the cosines take only the first d_model // 2 "
                  "frequencies (`pe[:, 1::2] = torch.cos(position * div_term[: d_model // 2])`); the handout: "
                  "\"If d_model is odd, the last column is a sine column: just follow the formula\"")


def _student_words(message):
    """What the student's exception says, without the file, line and code the message quotes after it."""
    said = message.split(" raised ", 1)[-1]
    return re.split(r" at [^\n]*?, (?:cell \d+, )?line \d+", said, maxsplit=1)[0]


def _check_positions(sub, ref, close, T, d):
    try:
        got = sub.call("sinusoidal_positions", T, d)
    except StudentError as e:
        if d % 2 == 0 or e.hinted or not re.search(
                r"size|shape|broadcast|out of (range|bounds)", _student_words(e.message)):
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {ODD_WIDTH_HINT}.") from None
    expected = ref.sinusoidal_positions(T, d)
    close(got, _np64(expected), what=f"sinusoidal_positions({T}, {d})", dtype="float32",
          hints=_pe_variants(T, d))


# model ------------------------------------------------------------------


def _ids(rng, B, T, V, device="cpu"):
    return torch.tensor(rng.integers(0, V, size=(B, T)), dtype=torch.int64, device=device)


def _logits(out, B, T, V, what):
    """The logits array of one forward output, or a teaching failure.

    A nanoGPT-style `(logits, loss)` or a `{"logits": ...}` dict is judged by its logits here;
    test_model_returns_the_logits_tensor is the one test that costs it points."""
    if isinstance(out, (tuple, list)) and out and isinstance(out[0], np.ndarray):
        out = out[0]
    elif isinstance(out, dict) and isinstance(out.get("logits"), np.ndarray):  # a Hugging Face-style output
        out = out["logits"]
    if isinstance(out, (tuple, list)):
        _fail(f"{what}: forward returned a {type(out).__name__} of {len(out)} items; "
              "it must return only the logits tensor (B, T, vocab_size)")
    if not isinstance(out, np.ndarray):
        _fail(f"{what}: forward returned {type(out).__name__}, not a tensor of logits")
    if out.shape != (B, T, V):
        msg = f"{what}: expected logits of shape {_shape((B, T, V))}, got {_shape(out.shape)}"
        if out.shape == (B * T, V):
            msg += " (flattened: keep the batch and time axes, reshape only inside the loss)"
        elif out.shape == (B, 1, V) and T > 1:
            msg += (" (the last position only: nanoGPT's `self.lm_head(x[:, [-1], :])` when targets is None is "
                    "an inference shortcut; the handout's forward returns the logits of every position)")
        _fail(msg)
    if out.dtype.kind != "f":
        _fail(f"{what}: logits should be floating point, got {out.dtype}")
    if not np.isfinite(out).all():
        _fail(f"{what}: the logits contain NaN or Inf (a row of the attention fully masked, "
              "or a softmax over the wrong axis?)")
    return out


CFG_NAMES = ("vocab_size", "block_size", "d_model", "num_heads", "num_layers")
SHARED_BLOCKS_HINT = ("the blocks share one set of weights: `nn.Sequential(*[block] * num_layers)` or "
                      "`nn.ModuleList([Block(...)] * num_layers)` repeat one module num_layers times (a block run "
                      "again and again, trained as one). Build num_layers modules: "
                      "`nn.ModuleList([Block(...) for _ in range(num_layers)])`")


def _blocks_share_weights(sub, m, deeper_m, cfg, idx, seed):
    """Whether a model whose deeper copy (`deeper_m`, more num_layers than `m`, the same seed) has no more
    parameters than `m` runs its blocks more often all the same: the blocks share one set of weights. False
    where the parameters cannot hold a block (the blocks in a plain list, not registered: `m` holds fewer values
    than the embeddings, the output layer and one attention's Q, K, V and output projections), where the two
    give the same logits on `idx` (num_layers is ignored), or where either forward fails. Asked on a failure
    only: the two forwards in one round trip."""
    V, bs, D = cfg[0], cfg[1], cfg[2]
    if m.n_params < 2 * V * D + bs * D + V + 4 * D + 4 * D * D:
        return False
    with sub.together() as t:
        asks = [t.forward(m, [idx], seed=seed), t.forward(deeper_m, [idx], seed=seed)]
    try:
        a, b = (_logits(p.get().outputs[0], *idx.shape, V, "") for p in asks)
    except GradingFailure:
        return False
    return bool(np.abs(a - b).max() > 1e-4 * max(1.0, float(np.abs(a).max())))


def _sizes_from_arguments(test):
    """A model test whose failure names a constructor taking its sizes in another order than the handout's,
    or a notebook global (`block_size = 8`) that the model seems to read instead of its argument
    (checker.judging.notebook_globals)."""
    @functools.wraps(test)
    def wrapper(*args, **kwargs):
        with naming_globals(kwargs["sub"], dict(zip(CFG_NAMES, kwargs.get("cfg", MODEL))), "CharTransformer"):
            try:
                return test(*args, **kwargs)
            except GradingFailure as e:
                hint = next((h for pattern, h in KNOWN_ERRORS if pattern.search(e.message)), None)
                if hint is None or e.hinted:
                    raise
                raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None
    return wrapper


def _example(cfg):
    # the example input makes lazy layers' parameters (Probes.new); it is not used otherwise
    vocab, block = cfg[0], cfg[1]
    return ({"shape": [2, min(block, 4)], "vocab": vocab}
            if isinstance(vocab, int) and isinstance(block, int) and vocab > 0 and block > 0 else None)


def _new(sub, cfg, seed, device="cpu", dtype="float32"):  # its gradient requests say a wrong logits shape first
    m = sub.new("CharTransformer", *cfg, seed=seed, device=device, dtype=dtype, example=_example(cfg))
    return shape_first(m, lambda out, x: _logits(out, *x.shape, cfg[0], f"{_cfg_text(cfg)} on ids {_shape(x.shape)}"))


def _new_asking(sub, cfg, seed, inputs, device="cpu", dtype="float32"):
    """`_new`, with its forward on `inputs` asked in the same round trip (checker.running.together): (the
    module, the forward's Pending, to give `_forward(..., ask=)` or to `get()`). Raises as `_new` would."""
    with sub.together(chain=True) as t:
        pm = t.new("CharTransformer", *cfg, seed=seed, device=device, dtype=dtype, example=_example(cfg))
        pr = t.forward(pm, inputs, seed=seed)
    return pm.get(), pr


def _new_forward(sub, cfg, seed, inputs, device="cpu", dtype="float32", short_input_hint=True):
    """`_new` and then its forward on `inputs` in one round trip: (the module, forward's result), the forward
    being `_forward`'s (with `short_input_hint`) or a plain one; each raises as it would alone."""
    m, pr = _new_asking(sub, cfg, seed, inputs, device, dtype)
    try:
        return m, (_forward(m, cfg, inputs, seed, ask=pr) if short_input_hint else pr.get())
    except StudentError as e:  # an IndexError from a positions' table shorter than block_size: _tables.py
        raise retold_with_table_hint(sub, m, cfg, seed, e, device) from None


def _cfg_text(cfg):
    return "CharTransformer(vocab_size={}, block_size={}, d_model={}, num_heads={}, num_layers={})".format(*cfg)


def _forward(m, cfg, inputs, seed, ask=None):
    """`m.forward(inputs)` (or `ask.get()`, that forward already asked together); a model that raises on an
    input shorter than block_size but runs on a full block is told to handle any T <= block_size."""
    try:
        return ask.get() if ask is not None else m.forward(inputs, seed=seed)
    except StudentError as e:
        if all(x.shape[-1] >= cfg[1] for x in inputs):
            raise
        try:
            m.forward([torch.zeros((1, cfg[1]), dtype=torch.int64, device=inputs[0].device)], seed=seed)
        except GradingFailure:
            raise e from None
        top = max(int(x.max()) for x in inputs if x.numel())
        if top >= cfg[1]:  # a full block of this input's largest id: fails too where the ids are taken for positions
            try:
                m.forward([torch.full((1, cfg[1]), top, dtype=torch.int64, device=inputs[0].device)], seed=seed)
            except GradingFailure:
                raise e.retold(f"{e.message}\nLikely mistake: {POSITIONS_BY_IDS_HINT}.") from None
        same = [n for n, v in (("num_heads", cfg[3]), ("d_model / num_heads", cfg[2] // max(cfg[3], 1)),
                                ("d_model", cfg[2])) if v == cfg[1]]
        if same:  # the full block may work only because a size read from another axis equals block_size
            raise e.retold(f"{e.message}\nLikely mistake: {SHORT_INPUT_HINT}; or a size read from the wrong axis "
                           f"(T taken from Q.shape[1], the heads' axis of (B, h, T, d_k), say): here block_size = "
                           f"{cfg[1]} = {same[0]}, so a full block alone cannot tell.") from None
        raise e.retold(f"{e.message}\nLikely mistake: {SHORT_INPUT_HINT}.") from None


def _check_causal(sub, close, rng, seed, cfg, device, B=2, T=None, before=()):
    """Changing the tokens after t leaves the logits up to t unchanged, on ids (B, T) (T: block_size).
    `before`: shapes of ids the same module runs on first (generation's growing inputs)."""
    V, T = cfg[0], (cfg[1] if T is None else T)
    m = _new(sub, cfg, seed, device)
    if before:
        try:
            _forward(m, cfg, [_ids(rng, b, t, V, device) for b, t in before], seed)
            _check_causal_of(m, close, rng, seed, cfg, device, B, T)
        except GradingFailure as e:
            if isinstance(e, (StudentTimeout, WorkerCrashed)):
                raise  # a hang or a crash is told as it is (a hang on the short input would only hang again)
            for b, t in before:  # a short input that fails on a fresh module is its own failure
                _forward(_new(sub, cfg, seed, device), cfg, [_ids(rng, b, t, V, device)], seed)
            _check_causal(sub, close, rng, seed, cfg, device, B, T)  # a fresh module: its own failure, if any
            message = e.message.split("\nLikely mistake:")[0]
            raise e.retold(f"{message}\nLikely mistake: {CHANGED_BY_FORWARD_HINT}.") from None
        return
    _check_causal_of(m, close, rng, seed, cfg, device, B, T, sub=sub)


def _causal_hint(m, close, rng, seed, cfg, device, B, T, base, idx, sub):
    """Why a model is not causal, found by experiment rather than listed: logits that change under
    another seed (dropout that drops in eval mode); causal on a full block but not on a shorter input;
    causal with one head but not with several (heads split or merged without a transpose); else the
    list of causes a model cannot tell apart (CAUSAL_HINT)."""
    try:
        again = m.forward([idx], seed=seed + 1).outputs[0]
        if np.abs(_logits(again, B, T, cfg[0], "") - base).max() > 1e-6:
            return RANDOM_HINT
    except GradingFailure:
        pass
    if sub is None:
        return CAUSAL_HINT
    if T < cfg[1]:
        try:
            _check_causal(sub, close, rng, seed, cfg, device, B)
            return SHORT_CAUSAL_HINT
        except GradingFailure:
            pass
    if cfg[3] > 1:
        one_head = cfg[:3] + (1,) + cfg[4:]
        try:
            _check_causal(sub, close, rng, seed, one_head, device, B, T)
            return HEADS_MERGE_HINT.format(h=cfg[3])
        except GradingFailure:
            pass
    if _sees_the_next_token_only(sub, rng, seed, cfg, device, B, T):
        return (f"{NEXT_TOKEN_HINT}; through the model's {cfg[4]} layers position t then sees {cfg[4]} tokens "
                "ahead (with one layer its logits depend on token t+1 and on no token after it)")
    return CAUSAL_HINT


def _sees_the_next_token_only(sub, rng, seed, cfg, device, B, T):
    """Whether a one-layer model of `cfg` is off by one: position 0's logits change with token 1 but with no
    token after it, and position T//2's with no token after T//2 + 1 (a mask that also shows key i+1)."""
    if T < 4:
        return False
    one = cfg[:4] + (1,) + cfg[5:]
    V, t = cfg[0], T // 2
    try:
        m = _new(sub, one, seed, device)
        idx = _ids(rng, B, T, V, device)
        asked = [idx]
        for first in (1, 2, t + 2):  # change token 1 alone; every token from 2; every token from t + 2
            other = idx.clone()
            last = first + 1 if first == 1 else T
            other[:, first:last] = (idx[:, first:last] + 1) % V
            asked.append(other)
        base, next_one, after_next, after_t = (_logits(o, B, T, V, "") for o in _forward(m, one, asked, seed).outputs)
    except GradingFailure:
        return False
    scale = 1e-5 * max(1.0, float(np.abs(base).max()))

    def moved(a, upto):
        return float(np.abs(a[:, :upto + 1] - base[:, :upto + 1]).max()) > scale
    return moved(next_one, 0) and not moved(after_next, 0) and not moved(after_t, t)


def _check_causal_of(m, close, rng, seed, cfg, device, B, T, sub=None):
    V = cfg[0]
    idx = _ids(rng, B, T, V, device)
    ts = sorted({0, T // 2, T - 2}) if T > 1 else []
    variants = []
    for t in ts:
        idx2 = idx.clone()
        shift = torch.tensor(rng.integers(1, V, size=(B, T - t - 1)), dtype=torch.int64, device=device)
        idx2[:, t + 1:] = (idx[:, t + 1:] + shift) % V  # every later token is different
        variants.append(idx2)
    r = _forward(m, cfg, [idx] + variants, seed)
    what = f"{_cfg_text(cfg)} on ids {_shape(idx.shape)}"
    base = _logits(r.outputs[0], B, T, V, what)
    for t, out in zip(ts, r.outputs[1:]):
        out = _logits(out, B, T, V, what)
        try:
            close(out[:, : t + 1], base[:, : t + 1], dtype="float32",
                  what=f"{what}: logits at positions 0..{t} after changing the tokens after position {t}")
        except GradingFailure as e:
            hint = _causal_hint(m, close, rng, seed, cfg, device, B, T, base, idx, sub)
            raise GradingFailure(f"{e.message}\nLikely mistake: {hint}.") from None
        if np.abs(out[:, t + 1] - base[:, t + 1]).max() <= 1e-6:
            _fail(f"{what}: the logits at position {t + 1} did not change when the token at position {t + 1} "
                  "changed: does forward use its `idx` argument?")


# every name, underscored helpers included: each question's file starts `from ._common import *`
__all__ = [n for n in dir() if not n.startswith("__")]
