"""Grading tests of `charlm`, question model (see _common.py for what the tests share)."""

import math

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_output_shape(sub, rng, seed, device):
    V, bs = MODEL[0], MODEL[1]
    shapes = [(2, bs), (3, 1), (1, 5)]
    inputs = [_ids(rng, B, T, V, device) for B, T in shapes]
    m, ask = _new_asking(sub, MODEL, seed, inputs, device)
    try:
        r = _forward(m, MODEL, inputs, seed, ask=ask)
    except StudentError as e:
        if "Likely mistake" in e.message or isinstance(e, (StudentTimeout, WorkerCrashed)):
            raise
        for x in inputs:  # each shape on a module of its own: one that runs them all, but not in a row,
            _forward(_new(sub, MODEL, seed, device), MODEL, [x], seed)  # is changed by its own forward
        raise e.retold(f"{e.message}\nLikely mistake: {CHANGED_BY_FORWARD_HINT}.") from None
    for (B, T), out, dt, dev in zip(shapes, r.outputs, r.dtypes, r.devices):
        what = f"{_cfg_text(MODEL)} on ids of shape {_shape((B, T))} ({device})"
        _logits(out, B, T, V, what)
        if dt != "float32":
            _fail(f"{what}: the parameters are float32 but the logits came back as {dt}")
        if not str(dev).startswith(device):
            _fail(f"{what}: the logits came back on {dev}: build tensors in forward on `idx.device`")


@pytest.mark.question("model")
@pytest.mark.weight(6)  # the point of the model: a causal LM that sees the future learns nothing usable
@_sizes_from_arguments
def test_model_causality(sub, close, rng, seed, device):
    _check_causal(sub, close, rng, seed, MODEL, device)


@pytest.mark.question("model")
@pytest.mark.weight(3)  # generation feeds the model fewer than block_size tokens
@_sizes_from_arguments
def test_model_causal_on_shorter_input(sub, close, rng, seed):
    _check_causal(sub, close, rng, seed, MODEL, "cpu", T=MODEL[1] - 3)


@pytest.mark.question("model")
@pytest.mark.weight(2)  # generation calls the model on 1, 2, ... tokens, one module for all of them
@_sizes_from_arguments
def test_model_stays_causal_after_shorter_inputs(sub, close, rng, seed):
    _check_causal(sub, close, rng, seed, MODEL, "cpu", before=[(1, 1), (1, 3)])


@pytest.mark.question("model")
@pytest.mark.weight(3)  # without positions a transformer sees its context as a bag of characters
@pytest.mark.parametrize("cfg", [MODEL[:4] + (1,)], ids=["one-layer"])
@_sizes_from_arguments
def test_model_uses_positions(sub, close, rng, seed, cfg):
    # In a one-layer causal model without position information, the last position attends over the set of
    # the earlier tokens: reversing their order cannot change its logits. With positions (added, learned,
    # sinusoidal, rotary or relative) it does. Parameters that start at exactly zero (a learned positional
    # embedding made with torch.zeros) are given random values first: the check is of the design.
    V, bs = cfg[0], cfg[1]
    m = _new(sub, cfg, seed)
    prefix = np.stack([rng.permutation(V)[:bs - 1] for _ in range(2)])  # distinct tokens: reversing reorders
    idx = torch.tensor(np.concatenate([prefix, prefix[:, :1]], axis=1), dtype=torch.int64)
    rev = idx.clone()
    rev[:, :-1] = idx[:, :-1].flip(1)
    what = f"{_cfg_text(cfg)} on ids {_shape(idx.shape)}"

    def same():
        r = _forward(m, cfg, [idx, rev], seed)
        a, b = (_logits(o, 2, bs, V, what)[:, -1] for o in r.outputs)
        return float(np.abs(a - b).max()) <= 1e-5 * max(1.0, float(np.abs(a).max()))

    if not same():
        return
    values = m.get_params([p["name"] for p in m.params])
    zeros = {n: v for n, v in values.items() if isinstance(v, np.ndarray) and v.size and not v.any()}
    if zeros:
        m.set_params({n: torch.from_numpy(rng.standard_normal(v.shape).astype(np.float32) * 0.5)
                      for n, v in zeros.items()})
        if not same():
            return
    # a model that reads no earlier token at all is blind to their order too: said so (the positions may be
    # right; what is missing is the attention to earlier tokens, as test_model_uses_context says)
    other = idx.clone()
    other[:, 0] = (idx[:, 0] + 1) % V
    r = _forward(m, cfg, [idx, other], seed)
    a, b = (_logits(o, 2, bs, V, what)[:, -1] for o in r.outputs)
    if float(np.abs(a - b).max()) <= 1e-6 * max(1.0, float(np.abs(a).max())):
        _fail(f"{what}: the logits at the last position do not change when the earlier tokens come in reverse "
              "order, nor when one of them is another token: the last position reads no earlier token at all, so "
              "no order of them can show (positions added or not).\nLikely mistake: the model does not attend to "
              "earlier tokens (attention missing, run over the wrong axis, or every earlier key masked): see "
              "test_model_uses_context.")
    _fail(f"{what}: the logits at the last position are the same when the earlier tokens come in reverse order: "
          "the model does not know where a token is.\nLikely mistake: the positions never reach the model: add "
          "them to the token embeddings (`x = self.tok(idx) + self.pos(torch.arange(T, device=idx.device))`, or "
          "your sinusoidal_positions) and use that sum, not the token embeddings alone.")


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_batch_independent(sub, close, rng, seed):
    V, T, B = MODEL[0], 6, 3
    idx = _ids(rng, B, T, V)
    m, r = _new_forward(sub, MODEL, seed, [idx] + [idx[b:b + 1].clone() for b in range(B)])
    what = f"{_cfg_text(MODEL)} on ids {_shape((B, T))}"
    batch = _logits(r.outputs[0], B, T, V, what)
    for b, out in enumerate(r.outputs[1:]):
        out = _logits(out, 1, T, V, f"{what}, row {b} alone")
        try:
            close(batch[b:b + 1], out, dtype="float32", what=f"{what}: logits of sequence {b} in the batch vs alone")
        except GradingFailure as e:
            again = _logits(m.forward([idx], seed=seed + 1).outputs[0], B, T, V, what)
            if np.abs(again - batch).max() > 1e-6:
                raise GradingFailure(f"{e.message}\nLikely mistake: {RANDOM_HINT}.") from None
            raise GradingFailure(
                f"{e.message}\nLikely mistake: the sequences of a batch influence each other (for example "
                "nn.MultiheadAttention without batch_first=True on (B, T, C) input, or a norm over the batch)."
            ) from None


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_parameters_registered(sub, seed):
    m = _new(sub, MODEL, seed)
    if not m.params:
        _fail(f"{_cfg_text(MODEL)} has no parameters: layers must be attributes of the module "
              "(self.x = nn.Linear(...)) or live in nn.ModuleList, created in __init__")
    deeper = MODEL[:4] + (MODEL[4] + 2,)
    m2 = _new(sub, deeper, seed)
    if m2.n_params <= m.n_params:
        _fail(f"{_cfg_text(deeper)} has {m2.n_params} parameters, no more than {m.n_params} with "
              f"num_layers={MODEL[4]}: num_layers is ignored (the number of blocks read from the notebook, such as "
              "`n_layer`, or fixed in the code?), or the blocks' parameters are not registered (a plain Python "
              "list: keep the blocks in nn.ModuleList / nn.Sequential).")
    moved = m.to("meta")
    stuck = [p["name"] for p in moved.get("params", []) + moved.get("buffers", []) if p.get("device") != "meta"]
    if stuck:
        _fail(f"{_cfg_text(MODEL)}.to('meta') left these on their device: {', '.join(stuck[:8])}")


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_every_parameter_gets_a_gradient(sub, rng, seed, device):
    V, bs = MODEL[0], MODEL[1]
    m = _new(sub, MODEL, seed, device)
    if not m.params:
        _fail(f"{_cfg_text(MODEL)} has no parameters to train")
    idx = _ids(rng, 2, bs, V, device)
    # the logits' shape first: backward multiplies them by a (2, block_size, vocab_size) weight
    _logits(m.forward([idx], seed=seed).outputs[0], 2, bs, V, f"{_cfg_text(MODEL)} on ids {_shape((2, bs))}")
    weight = _tensor(rng.standard_normal((2, bs, V)), "float32", device)
    r = m.grads(idx, weight, seed=seed)
    trainable = {p["name"] for p in m.params if p.get("requires_grad")}
    rows = r.get("params", []) if isinstance(r, dict) else []
    none = [p["name"] for p in rows if p.get("name") in trainable and not p.get("has_grad")]
    if none:
        shapes = {p["name"]: tuple(p.get("shape", ())) for p in m.params}
        masks = [n for n in none if len(shapes.get(n, ())) >= 2 and shapes[n][-1] == shapes[n][-2] == bs]
        hint = (f"{'They look' if len(masks) > 1 else 'It looks'} like the causal mask ({bs} x {bs}) kept as "
                "an nn.Parameter: a "
                "parameter is trained and saved as a weight. Keep a mask with "
                "`self.register_buffer('mask', ...)`: a buffer moves with .to(device) but is not trained"
                if masks else "An unused layer, or attribute names that differ between __init__ and forward?")
        _fail(f"{_cfg_text(MODEL)}: after backward these parameters have no gradient (grad is None), so they take "
              f"no part in computing the logits: {', '.join(none[:8])}{' ...' if len(none) > 8 else ''}. " + hint)
    bad = [p["name"] for p in rows if p.get("has_grad") and p.get("finite") is False]
    if bad:
        _fail(f"{_cfg_text(MODEL)}: NaN or Inf gradients in {', '.join(bad[:8])}")


@pytest.mark.question("model")
@pytest.mark.weight(3)  # a model that fails on every GPU
@_sizes_from_arguments
def test_model_runs_on_another_device(sub, seed):
    V, bs = MODEL[0], MODEL[1]
    m = _new(sub, MODEL, seed)
    what = _cfg_text(MODEL)
    shape = check_runs_on_another_device(m, (2, bs), what, vocab=V)
    if isinstance(shape, str):
        pytest.skip(shape)
    if list(shape) != [2, bs, V]:
        _fail(f"{what} on another device returned shape {_shape(shape)}; expected {_shape((2, bs, V))}")


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_float64(sub, rng, seed):
    V, bs = MODEL[0], MODEL[1]
    _, r = _new_forward(sub, MODEL, seed, [_ids(rng, 2, bs, V)], dtype="float64", short_input_hint=False)
    what = f"{_cfg_text(MODEL)} built in float64, on ids {_shape((2, bs))}"
    _logits(r.outputs[0], 2, bs, V, what)
    if r.dtypes[0] != "float64":
        _fail(f"{what}: the logits came back as {r.dtypes[0]}: tensors made in forward should follow the "
              "parameters' dtype (e.g. `dtype=x.dtype`), and every layer must be registered")


@pytest.mark.question("model")
@pytest.mark.parametrize("cfg", MODEL_MORE, ids=["d24-h3-l1", "d8-h4-l3"])
@_sizes_from_arguments
def test_model_more_configs(sub, close, rng, seed, cfg):
    V, bs = cfg[0], cfg[1]
    _, r = _new_forward(sub, cfg, seed, [_ids(rng, 3, bs, V), _ids(rng, 1, 1, V)])
    _logits(r.outputs[0], 3, bs, V, f"{_cfg_text(cfg)} on ids {_shape((3, bs))}")
    _logits(r.outputs[1], 1, 1, V, f"{_cfg_text(cfg)} on ids (1, 1)")
    _check_causal(sub, close, rng, seed, cfg, "cpu")


@pytest.mark.question("model")
@pytest.mark.weight(2)  # the contract: every size comes from the constructor (HOMEWORK: no notebook globals)
@_sizes_from_arguments
def test_model_parameters_grow_with_d_model(sub, seed):
    # The logits' shape shows vocab_size and block_size only: a model that takes its width from the notebook
    # (`n_embd = 64`, as Karpathy's gpt.py has it) answers in the right shape whatever d_model is. Twice the
    # width is more parameters in every layout (embeddings, projections, the MLP): it must show in the count.
    m = _new(sub, MODEL, seed)
    wider = MODEL[:2] + (2 * MODEL[2],) + MODEL[3:]
    m2 = _new(sub, wider, seed)
    if m2.n_params <= m.n_params:
        _fail(f"{_cfg_text(wider)} has {m2.n_params} parameters, no more than {m.n_params} with d_model={MODEL[2]}: "
              "the model's width does not come from its d_model argument (a size read from the notebook, such as "
              "`n_embd`, or fixed in the code?). Build every layer from the constructor's arguments.")


@pytest.mark.question("model")
@pytest.mark.weight(3)  # a mistake seen in real work, and invisible whenever the notebook's sizes match
@pytest.mark.parametrize("cfg", [(23, 37, 20, 4, 1)], ids=["v23-b37"])
@_sizes_from_arguments
def test_model_sizes_come_from_its_arguments(sub, close, rng, seed, cfg):
    # sizes no notebook holds in a global: a model that reads `block_size` or `vocab_size` from the
    # notebook instead of its arguments fails here even when the other tests happen to use the same sizes
    V, bs = cfg[0], cfg[1]
    _, r = _new_forward(sub, cfg, seed, [_ids(rng, 2, bs, V)], short_input_hint=False)
    _logits(r.outputs[0], 2, bs, V, f"{_cfg_text(cfg)} on ids {_shape((2, bs))}")


@pytest.mark.question("model")
@_sizes_from_arguments
def test_model_returns_the_logits_tensor(sub, rng, seed):
    V, bs = MODEL[0], MODEL[1]
    _, r = _new_forward(sub, MODEL, seed, [_ids(rng, 2, bs, V)], short_input_hint=False)
    out = r.outputs[0]
    required = [n for n in r.filled if not n.startswith("@")]
    if "@last_position_only" in r.filled:
        _fail(f"{_cfg_text(MODEL)}: forward(idx) returned the logits of the last position only, (2, 1, {V}) "
              "(nanoGPT's `self.lm_head(x[:, [-1], :])` when targets is None, an inference shortcut); the handout "
              f"asks for the logits of every position, (B, T, vocab_size). The other model tests judged the "
              "logits your forward gives when it is given targets")
    if required:
        _fail(f"{_cfg_text(MODEL)}: forward(idx) cannot run on the token ids alone: it requires "
              f"{', '.join(f'`{n}`' for n in required)}. Generation calls model(idx), so give it a default, e.g. "
              "`def forward(self, idx, targets=None)`, and compute the loss only when targets are given. (The "
              "other model tests filled it in: with None, or with a copy of the ids.)")
    _logits(out, 2, bs, V, _cfg_text(MODEL))  # the logits themselves must be right
    if isinstance(out, dict):
        _fail(f"{_cfg_text(MODEL)}: forward(idx) returned a dict ({', '.join(map(repr, list(out)[:4]))}); the "
              "handout asks for the logits tensor itself (B, T, vocab_size). The other model tests judged its "
              "'logits'")
    if isinstance(out, (tuple, list)):
        _fail(f"{_cfg_text(MODEL)}: forward(idx) returned a {type(out).__name__} of {len(out)} items (nanoGPT's "
              "(logits, loss)?); the handout asks for the logits tensor itself (B, T, vocab_size). The other "
              "model tests judged its first item")


@pytest.mark.question("model")
@pytest.mark.weight(3)  # cross_entropy on probabilities trains badly, and sampling from them is wrong
@_sizes_from_arguments
def test_model_returns_logits_not_probabilities(sub, rng, seed):
    V, bs = MODEL[0], MODEL[1]
    out = _new_forward(sub, MODEL, seed, [_ids(rng, 2, bs, V)], short_input_hint=False)[1].outputs[0]
    what = _cfg_text(MODEL)
    logits = _logits(out, 2, bs, V, what)
    if logits.min() >= 0 and logits.max() <= 1 and np.allclose(logits.sum(-1), 1, atol=1e-4):
        _fail(f"{what}: forward returned probabilities (every row is in [0, 1] and sums to 1), not logits: "
              "return the raw scores of the last linear layer. F.cross_entropy applies the softmax itself, and "
              "generation calls F.softmax on the logits")


@pytest.mark.question("model")
@pytest.mark.weight(6)  # a per-token model (no attention) is not a transformer
@_sizes_from_arguments
def test_model_uses_context(sub, rng, seed):
    V, bs = MODEL[0], MODEL[1]
    m = _new(sub, MODEL, seed)
    idx = _ids(rng, 2, bs, V)
    idx2 = idx.clone()
    idx2[:, 0] = (idx[:, 0] + 1) % V
    r = m.forward([idx, idx2], seed=seed)
    what = f"{_cfg_text(MODEL)} on ids {_shape((2, bs))}"
    a, b = _logits(r.outputs[0], 2, bs, V, what), _logits(r.outputs[1], 2, bs, V, what)
    if np.abs(a[:, -1] - b[:, -1]).max() <= 1e-6:
        _fail(f"{what}: the logits at the last position do not change when the first token changes: the model "
              "does not attend to earlier tokens (attention missing, or every earlier key masked)")


# the temperature of the model's attention ------------------------------------------------------------------

TEMPERATURE_CFG = (17, 7, 12, 2, 1)  # one layer; every shape below tells its part apart (d_model/num_heads = 6)
SCALE_HINTS = (("no scaling: the scores q @ k^T are not divided at all (divide them by sqrt(head_size) = "
                "sqrt(d_model/num_heads): `* k.size(-1) ** -0.5`)", lambda D, dh: 1.0),
               ("the scores are divided by sqrt(d_model), the model's width, not by sqrt(d_model/num_heads), the "
                "width of a head (Karpathy's `wei = q @ k.transpose(-2, -1) * C**-0.5` with C = n_embd, the input's "
                "last size): scale by the keys' own width, `* k.size(-1) ** -0.5`", lambda D, dh: math.sqrt(D)),
               ("the scores are divided by d_model/num_heads, the head width, not by its square root",
                lambda D, dh: float(dh)),
               ("the scores are divided by d_model, not by sqrt(d_model/num_heads)", lambda D, dh: float(D)),
               ("the scores are multiplied by sqrt(d_model/num_heads) instead of divided by it (`* math.sqrt(d_k)` "
                "where `/ math.sqrt(d_k)` was meant)", lambda D, dh: 1.0 / math.sqrt(dh)))
TEMPERATURE_RTOL = 2e-4  # float32 logits against float64 ones, relative to max(1, their largest)
TEMPERATURE_APART = 2e-3  # a right and a wrong temperature's answers nearer than this tell nothing
_MLP_NAME = re.compile(r"mlp|ffw?d?|feed|fc|dense|linear[12]", re.I)


def _temperature_ways(m, cfg, E, P, ones):
    """The ways to set a one-layer CharTransformer so that its output is a fixed function of the temperature of
    its attention, that its parameters' names and shapes allow, each {name: value}: the token embedding and the
    output layer (both (vocab_size, d_model), or the head (d_model, vocab_size) used as x @ W) set to `E`, a
    learned positional embedding (block_size, d_model) to `P`, the attention's projections to the identity
    (square ones, a fused (3D, D) one in q, k, v order or head by head, per-head ones numbered by the last
    number of their name, (h, D, D/h) stacks), every bias to zero, the norms' weights (`ones`: the 1-D
    parameters that are all ones) to one, and the MLP (its (H, D) and (D, H) layers)
    to zero, so that it adds nothing. A (D, D) layer is read as attention, or, in a second way, as the MLP's
    where its name says so. Parameters of any other shape are left as they are."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    dh, eye = D // h, np.eye(D, dtype=np.float32)
    by_head = np.concatenate([eye[i * dh:(i + 1) * dh] for i in range(h) for _ in range(3)])
    values, fused, square_mlp, per_head = {}, [], [], {}
    for p in m.params:
        name, shape = p.get("name"), tuple(p.get("shape", ()))
        if not isinstance(name, str):
            return []
        if shape == (V, D):
            values[name] = E
        elif shape == (D, V):
            values[name] = np.ascontiguousarray(E.T)
        elif shape in ((bs, D), (1, bs, D)):
            values[name] = P.reshape(shape)
        elif shape == (D, D):
            values[name] = eye
            if _MLP_NAME.search(name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name):
                square_mlp.append(name)
        elif shape == (3 * D, D):
            values[name] = np.concatenate([eye, eye, eye])
            fused.append((name, False))
        elif shape == (D, 3 * D):
            values[name] = np.concatenate([eye, eye, eye], axis=1)
            fused.append((name, True))
        elif shape == (h, D, dh):
            values[name] = np.stack([eye[:, i * dh:(i + 1) * dh] for i in range(h)])
        elif shape == (h, dh, D):
            values[name] = np.stack([eye[i * dh:(i + 1) * dh] for i in range(h)])
        elif shape in ((dh, D), (D, dh)):
            head = re.findall(r"\d+", name)
            if not head or not 0 <= int(head[-1]) < h:
                return []
            per_head.setdefault(int(head[-1]), []).append(name)
            rows = eye[int(head[-1]) * dh:(int(head[-1]) + 1) * dh]
            values[name] = rows if shape == (dh, D) else np.ascontiguousarray(rows.T)
        elif len(shape) == 1:
            values[name] = (np.ones if name in ones else np.zeros)(shape, dtype=np.float32)
        elif len(shape) == 2 and D in shape and not set(shape) & {V, bs, dh, 3 * D}:
            values[name] = np.zeros(shape, dtype=np.float32)  # the MLP's (H, D) and (D, H) layers
    if per_head and sorted(per_head) != list(range(h)):
        return []
    ways = [values]
    if fused and h > 1:
        ways.append({**values, **{n: (np.ascontiguousarray(by_head.T) if rows_last else by_head)
                                  for n, rows_last in fused}})
    if square_mlp:
        ways += [{**w, **{n: np.zeros((D, D), dtype=np.float32) for n in square_mlp}} for w in list(ways)]
    return ways


def _temperature_candidates(ref, cfg, E, P, idx, taus):
    """{tau: (n, T, vocab_size) logits}: what a one-layer model set by _temperature_ways gives on the ids `idx`
    (T,) with its scores divided by tau, for each structure a right model may have: pre-norm
    (x + attn(LN(x)), with or without a final LN), post-norm (LN(x + attn(x)), once or twice), no norm;
    positions from the learned `P`, the handout's sinusoids (a buffer) or none; the token embedding times 1 or
    sqrt(d_model); head i on the features i*D/h .. (i+1)*D/h - 1 or on i, i+h, ... (a `view(B, T, D/h, h)`
    split). Computed with torch's layer norm and attention (A: recorded for the kit)."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    dh, T = D // h, len(idx)
    sines = _np64(torch.as_tensor(ref.sinusoidal_positions(bs, D)))[:T]
    tok = E.astype(np.float64)[idx]                                                    # (T, D)
    x0 = np.stack([c * tok + pos for pos in (P.astype(np.float64)[:T], sines, np.zeros((T, D)))
                   for c in (1.0, math.sqrt(D))])                                     # (6, T, D)
    ln0 = _np64(A.torch_layer_norm(torch.from_numpy(x0), 1e-5))
    z = np.stack([ln0, x0])                                                           # (2, 6, T, D): pre, post
    heads = np.stack([z.reshape(z.shape[:-1] + (h, dh)), z.reshape(z.shape[:-1] + (dh, h)).swapaxes(-1, -2)])
    heads = np.ascontiguousarray(np.moveaxis(heads, -2, -3))                          # (2 splits, 2, 6, h, T, dh)
    q = np.stack([heads / tau for tau in taus])                                        # (taus, 2, 2, 6, h, T, dh)
    k = torch.from_numpy(heads[None])
    att = _np64(A.attend(torch.from_numpy(q), k, k, 1.0, torch.ones(T, T, dtype=torch.bool).triu(1), -1))
    att = np.moveaxis(att, -3, -2)                                                    # (..., T, h, dh)
    att = np.stack([att[:, 0].reshape(att.shape[:1] + att.shape[2:-2] + (D,)),
                    att[:, 1].swapaxes(-1, -2).reshape(att.shape[:1] + att.shape[2:-2] + (D,))], axis=1)
    y = x0 + att                                                                      # (taus, 2 splits, 2, 6, T, D)
    ln1 = _np64(A.torch_layer_norm(torch.from_numpy(y), 1e-5))
    ln2 = _np64(A.torch_layer_norm(torch.from_numpy(ln1[:, :, 1]), 1e-5))
    hidden = np.stack([y[:, :, 0], ln1[:, :, 0], ln1[:, :, 1], ln2, y[:, :, 1]], axis=1)  # (taus, 5, 2, 6, T, D)
    logits = hidden.reshape(len(taus), -1, T, D) @ E.astype(np.float64).T
    return dict(zip(taus, logits))


def _telling_candidates(candidates, right):
    """(right_ok, {tau: wrong_ok}): which of the candidate answers (_temperature_candidates) can judge a model:
    the right temperature's answers that lie apart from every wrong temperature's (of any structure), and each
    wrong temperature's that lie apart from every right one, by TEMPERATURE_APART relative to the largest."""
    R = candidates[right]                                                                 # (n, T, V)
    scale = np.maximum(1.0, np.abs(R).max(axis=(1, 2)))
    right_ok, wrong_ok = np.ones(len(R), dtype=bool), {}
    for tau, W in candidates.items():
        if tau == right:
            continue
        apart = np.abs(R[:, None] - W[None]).max(axis=(2, 3)) / scale[:, None] > TEMPERATURE_APART  # (n, n)
        right_ok &= apart.all(axis=1)
        wrong_ok[tau] = apart.all(axis=0)
    return right_ok, wrong_ok


@pytest.mark.question("model")
@pytest.mark.weight(3)  # the temperature of every head: softmax(q k^T / sqrt(d_model/num_heads))
@pytest.mark.parametrize("cfg", [TEMPERATURE_CFG], ids=["one-layer-d12-h2"])
@_sizes_from_arguments
def test_model_attention_scaled_by_the_head_width(sub, ref, rng, seed, cfg):
    # Every other model test holds at any temperature. In one layer whose attention projections are the
    # identity, biases zero and MLP silent (_temperature_ways), with the token embedding and the output layer
    # set to one known matrix, the logits are a fixed function of the ids whose only free choice (beside
    # the structure: pre- or post-norm, a final norm, which positions) is the temperature of the softmax.
    # It must be sqrt(d_model/num_heads); an answer that matches a known wrong scale fails, naming it; one that
    # matches none, or a layout the names and shapes do not tell, skips: the other tests judge it.
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    dh = D // h
    E = (0.5 * rng.standard_normal((V, D))).astype(np.float32)  # scores of O(1): no head's softmax saturates
    P = (0.5 * rng.standard_normal((bs, D))).astype(np.float32)
    ids = rng.integers(0, V, size=bs)
    right = math.sqrt(dh)
    taus = (right,) + tuple(tau(D, dh) for _, tau in SCALE_HINTS)
    candidates = _temperature_candidates(ref, cfg, E, P, ids, taus)
    what = _cfg_text(cfg)
    not_checked = "the temperature of the attention was not checked: "
    try:
        m = _new(sub, cfg, seed)
        flat = [p["name"] for p in m.params if len(p.get("shape", ())) == 1 and isinstance(p.get("name"), str)]
        got_1d = m.get_params(flat) if flat else {}
    except GradingFailure as e:
        pytest.skip(f"{not_checked}judged by the other tests: {e.message.splitlines()[0][:200]}")
    # a norm's weight starts at one (a zero bias was given small random values when the model was made)
    ones = {n for n, v in got_1d.items() if isinstance(v, np.ndarray) and v.size and np.all(v == 1)}
    ways = _temperature_ways(m, cfg, E, P, ones)
    if not ways:
        pytest.skip(f"{not_checked}the grader cannot set this model's attention projections to the identity from "
                    "their names and shapes (the other tests judge it)")
    # a candidate whose answer at the right temperature lies near one at a wrong temperature (a softmax saturated
    # by a large input, where the temperature hardly shows) neither passes nor fails a model
    right_ok, wrong_ok = _telling_candidates(candidates, right)
    idx = torch.tensor(ids[None], dtype=torch.int64)
    for values in ways:
        try:
            m.set_params({n: torch.from_numpy(np.ascontiguousarray(v)) for n, v in values.items()})
            got = _logits(_forward(m, cfg, [idx], seed).outputs[0], 1, bs, V, what)[0].astype(np.float64)
        except GradingFailure as e:
            pytest.skip(f"{not_checked}judged by the other tests: {e.message.splitlines()[0][:200]}")

        def matches(tau, telling):
            want = candidates[tau]                                                        # (n, T, V)
            err = np.abs(want - got).max(axis=(1, 2)) / np.maximum(1.0, np.abs(want).max(axis=(1, 2)))
            return bool(np.any((err <= TEMPERATURE_RTOL) & telling))

        if matches(right, right_ok):
            return
        for hint, tau in SCALE_HINTS:
            if matches(tau(D, dh), wrong_ok[tau(D, dh)]):
                _fail(f"{what}, with its attention's projections set to the identity, its biases to zero, its MLP "
                      "silenced and its token embedding and output layer set to one known matrix, gives the logits "
                      f"of attention whose scores are divided by {tau(D, dh):.4g}, not by sqrt(d_model/num_heads) = "
                      f"sqrt({dh}) = {right:.4g}: each head's softmax is too sharp or too flat, so every position "
                      f"averages the earlier ones with the wrong weights.\nLikely mistake: {hint}.")
    pytest.skip(f"{not_checked}with its projections set to the identity, the model answers as no structure the "
                "grader knows (pre- or post-norm, learned or sinusoidal positions, another head split or extra "
                "layers inside); the other tests judge it")
