"""Grading tests of `charlm`, question model (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._temperature import *  # noqa: F401,F403 - the temperature test's helpers
from ._prefix import *  # noqa: F401,F403 - the prefix and heads tests' helpers
from ._gradients import *  # noqa: F401,F403 - the gradient test's message
from ._packed import check_temperature_closed  # the temperature test, failing closed on a layout it cannot read
from checker.judging.block_count import describe, wrong_counts


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
        if e.hinted or isinstance(e, (StudentTimeout, WorkerCrashed)):
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
@pytest.mark.weight(2)  # the model learns in model.train(): a layer that mixes positions only there trains on the future
@_sizes_from_arguments
def test_model_causal_in_training_mode(sub, close, rng, seed):
    # The other causality tests run in eval mode. Here the same module runs in training mode (its buffers put
    # back afterwards) on a block and on the block with every token after t changed, each under one seed, so
    # dropout drops the same entries of both: a causal model gives the same logits up to t. A model causal in
    # eval mode only (nn.BatchNorm1d over the features: in training it normalizes with the batch's and every
    # position's statistics) fails; one not causal in eval mode either is judged by test_model_causality.
    V, T, B = MODEL[0], MODEL[1], 2
    m = _new(sub, MODEL, seed)
    idx = _ids(rng, B, T, V)
    t = T // 2
    later = idx.clone()
    later[:, t + 1:] = (idx[:, t + 1:] + torch.tensor(rng.integers(1, V, size=(B, T - t - 1)))) % V
    what = f"{_cfg_text(MODEL)} on ids {_shape(idx.shape)}"
    evaluated = _forward(m, MODEL, [idx, later], seed)
    e0, e1 = (_logits(o, B, T, V, what) for o in evaluated.outputs)
    if np.abs(e1[:, : t + 1] - e0[:, : t + 1]).max() > 1e-4 * max(1.0, float(np.abs(e0).max())):
        pytest.skip("judged by test_model_causality: the logits depend on later tokens in eval mode too")
    trained = m.forward([idx, later], seed=seed, train=True)
    base, out = (_logits(o, B, T, V, what + " in training mode") for o in trained.outputs)
    try:
        close(out[:, : t + 1], base[:, : t + 1], dtype="float32",
              what=f"{what} in training mode (model.train()): logits at positions 0..{t} after changing the "
                   f"tokens after position {t}")
    except GradingFailure as e:
        raise GradingFailure(f"{e.message}\nLikely mistake: {TRAINING_ONLY_CAUSAL_HINT}.") from None


@pytest.mark.question("model")
@pytest.mark.weight(3)  # without positions a transformer sees its context as a bag of characters
@pytest.mark.parametrize("cfg", [MODEL[:4] + (1,)], ids=["one-layer"])
@_sizes_from_arguments
def test_model_uses_positions(sub, close, rng, seed, cfg):
    # In a one-layer causal model without position information, the last position attends over the set of
    # the earlier tokens: reversing their order cannot change its logits. With positions (added, learned,
    # sinusoidal, rotary or relative) it does. Parameters that start at exactly zero (a learned positional
    # embedding made with torch.zeros) are given random values first, and then weights initialised small
    # (nanoGPT's normal_(std=0.02)) are scaled up to unit-variance projections: with scores near zero the
    # attention is near uniform, and a uniform average of LN(token + position) is order-blind up to terms in
    # the square of the small token embeddings (1e-6 with sinusoidal positions, under any threshold). No
    # parameter values make a design without positions order-aware, so neither step can pass one: the check
    # is of the design.
    V, bs = cfg[0], cfg[1]
    m = _new(sub, cfg, seed)
    prefix = np.stack([rng.permutation(V)[:bs - 1] for _ in range(2)])  # distinct tokens: reversing reorders
    idx = torch.tensor(np.concatenate([prefix, prefix[:, :1]], axis=1), dtype=torch.int64)
    rev = idx.clone()
    rev[:, :-1] = idx[:, :-1].flip(1)
    what = f"{_cfg_text(cfg)} on ids {_shape(idx.shape)}"

    def same(changed=False):
        r = _forward(m, cfg, [idx, rev], seed)
        try:
            a, b = (_logits(o, 2, bs, V, what)[:, -1] for o in r.outputs)
        except GradingFailure:
            if not changed:
                raise
            return None  # NaN/Inf only with the values set here: no evidence of order either way
        return float(np.abs(a - b).max()) <= 1e-5 * max(1.0, float(np.abs(a).max()))

    if not same():
        return
    values = m.get_params([p["name"] for p in m.params])
    zeros = {n: v for n, v in values.items() if isinstance(v, np.ndarray) and v.size and not v.any()}
    if zeros:
        m.set_params({n: torch.from_numpy(rng.standard_normal(v.shape).astype(np.float32) * 0.5)
                      for n, v in zeros.items()})
        if same(changed=True) is False:
            return
    values = m.get_params([p["name"] for p in m.params])
    small = _small_weights_scaled_up(values)
    if small:
        m.set_params(small)
        seen = same(changed=True)
        if seen is False:
            return
        if seen is None:  # put them back: the rest of the test judges the model as it was
            m.set_params({n: torch.from_numpy(values[n]) for n in small})
    # a model that reads no earlier token at all is blind to their order too: said so (the positions may be
    # right; what is missing is the attention to earlier tokens, as test_model_uses_context says)
    other = idx.clone()
    other[:, 0] = (idx[:, 0] + 1) % V
    r = _forward(m, cfg, [idx, other], seed)
    a, b = (_logits(o, 2, bs, V, what)[:, -1] for o in r.outputs)
    if float(np.abs(a - b).max()) <= 1e-6 * max(1.0, float(np.abs(a).max())):
        if _reads_earlier_tokens(sub, MODEL, seed, rng):  # with more layers it does: a block is missing
            pytest.skip(f"judged by test_model_builds_num_layers_blocks: {what} reads no earlier token at all, while "
                        f"with num_layers={MODEL[4]} it does: a block seems to be missing, not the positions")
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
@pytest.mark.weight(3)  # generation runs the model on a growing prefix, training on full blocks: the same logits
@_sizes_from_arguments
def test_model_prefix_gives_the_logits_of_a_longer_input(sub, close, rng, seed):
    # A causal model's logits at position t depend on the tokens 0..t only, not on how many tokens follow: the
    # first T tokens alone give the first T positions' logits of a full block that starts with them (eval mode).
    _check_prefix(sub, close, rng, seed)


@pytest.mark.question("model")
@pytest.mark.weight(4)  # each head must attend over tokens: heads cut across tokens are no multi-head attention
@pytest.mark.parametrize("cfg", [MODEL] + [c for c in MODEL_MORE if c[3] > 1], ids=["d20-h2", "d24-h3", "d8-h4"])
@_sizes_from_arguments
def test_model_heads_attend_over_whole_tokens(sub, close, rng, seed, cfg):
    # Each head attends over the tokens: row t of its (B, h, T, C/h) queries, keys and values is token t's. Split
    # by a reshape without the transpose, a head's rows are pieces of several tokens; the model can stay causal,
    # but how the tokens are cut depends on how many there are, so the first T tokens alone no longer give the
    # logits they have at the start of a full block. Judged against the same model with one head, which has no
    # split to get wrong: a model that fails so with one head too (positions, dropout) is judged by the prefix test.
    _check_heads_whole_tokens(sub, close, rng, seed, cfg)


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
def test_model_parameters_registered(sub, rng, seed):
    m = _new(sub, MODEL, seed)
    if not m.params:
        _fail(f"{_cfg_text(MODEL)} has no parameters: layers must be attributes of the module "
              "(self.x = nn.Linear(...)) or live in nn.ModuleList, created in __init__")
    deeper = MODEL[:4] + (MODEL[4] + 2,)
    m2 = _new(sub, deeper, seed)
    idx = _ids(rng, 2, MODEL[1], MODEL[0])  # for _blocks_share_weights' two forwards (on a failure only)
    if m2.n_params <= m.n_params:
        if _blocks_share_weights(sub, m, m2, MODEL, idx, seed):
            _fail(f"{_cfg_text(deeper)} has {m2.n_params} parameters, no more than {m.n_params} with "
                  f"num_layers={MODEL[4]}, and its logits differ from those of num_layers={MODEL[4]} (the same "
                  f"seed): its blocks run more often with no weights of their own.\nLikely mistake: "
                  f"{SHARED_BLOCKS_HINT}.")
        _fail(f"{_cfg_text(deeper)} has {m2.n_params} parameters, no more than {m.n_params} with "
              f"num_layers={MODEL[4]}: num_layers is ignored (the number of blocks read from the notebook, such as "
              "`n_layer`, or fixed in the code?), or the blocks' parameters are not registered (a plain Python "
              "list: keep the blocks in nn.ModuleList / nn.Sequential).")
    moved = m.to("meta")
    stuck = [p["name"] for p in moved.get("params", []) + moved.get("buffers", []) if p.get("device") != "meta"]
    if stuck:
        _fail(f"{_cfg_text(MODEL)}.to('meta') left these on their device: {', '.join(stuck[:8])}")


NUM_LAYERS_HINT = ("the model does not build num_layers blocks: the number of blocks must be num_layers itself, "
                   "`nn.ModuleList([Block(...) for _ in range(num_layers)])` (not range(1, num_layers), "
                   "num_layers - 1, max(num_layers - 1, 1), num_layers + 1, 2 * num_layers or a number of blocks "
                   "fixed in the code)")


def _small_weights_scaled_up(values):
    """{name: value} for the weights (floating, 2-D or more, not all zero) whose root mean square is below
    1/sqrt(fan), fan = size / largest axis (a (d_out, d_in) or (d_in, d_out) matrix: the smaller side; a
    per-head stack (h, D, D/h): D): each scaled by one factor up to that, so that a projection of a
    unit-variance input has outputs of about unit variance and the attention's scores are O(1). The pattern
    the student's initialisation drew is kept (and a tied weight stays one tensor); 0/1 masks and weights at
    PyTorch's default scale are left as they are."""
    out = {}
    for n, v in values.items():
        if not isinstance(v, np.ndarray) or v.ndim < 2 or v.dtype.kind != "f" or not v.any():
            continue
        if not np.isfinite(v).all():
            continue
        target = float(np.sqrt(max(v.shape) / v.size))
        rms = float(np.sqrt(np.mean(np.square(v.astype(np.float64)))))
        if rms < target:
            out[n] = torch.from_numpy((v.astype(np.float64) * (target / rms)).astype(v.dtype))
    return out


def _reads_earlier_tokens(sub, cfg, seed, rng):
    """Whether the logits at the last position of a model built with `cfg` change when its first token changes
    (None where it cannot be built or run): a model with no block reads no earlier token."""
    V, bs = cfg[0], cfg[1]
    idx = _ids(rng, 2, bs, V)
    other = idx.clone()
    other[:, 0] = (idx[:, 0] + 1) % V
    try:
        _, r = _new_forward(sub, cfg, seed, [idx, other], short_input_hint=False)
        a, b = (_logits(o, 2, bs, V, "")[:, -1] for o in r.outputs)
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        return None
    return bool(np.abs(a - b).max() > 1e-6 * max(1.0, float(np.abs(a).max())))


@pytest.mark.question("model")
@pytest.mark.weight(2)  # the handout: `num_layers` decoder blocks, every size from the constructor's arguments
@_sizes_from_arguments
def test_model_builds_num_layers_blocks(sub, rng, seed):
    # Every block has the same layers, so each adds the same number of parameters, b: P(n) = a + b * n for n =
    # 0, 1, 2, 3 blocks, a the embeddings, the final norm and the output layer (a tied weight, or any module shared
    # by every block, is counted once, in a). One block fewer (range(1, num_layers)) shows as P(1) = P(0), a
    # floor on the count (max(num_layers - 1, 1)) as P(2) = P(1). num_layers=0 is asked where the model can be
    # built so; where it cannot, a model with num_layers=1 must read earlier tokens (with no block it reads none).
    # Parameters that do not grow at all (num_layers ignored, shared or unregistered blocks) are judged by
    # test_model_parameters_registered.
    cfgs = [MODEL[:4] + (n,) for n in (0, 1, 2, 3)]
    with sub.together() as t:
        made = [t.new("CharTransformer", *cfg, seed=seed, example=_example(cfg)) for cfg in cfgs]
    try:
        m0 = made[0].get()
        zero = m0.n_params
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        m0, zero = None, None  # a model that refuses num_layers=0 (an assert) is not wrong
    try:
        models = [p.get() for p in made[1:]]
    except GradingFailure as e:
        pytest.skip(f"judged by the other tests: the model cannot be built with 1 to 3 layers: "
                    f"{e.message.splitlines()[0][:200]}")
    P1, P2, P3 = (m.n_params for m in models)
    counts = f"num_layers=1, 2, 3 give {P1}, {P2}, {P3} parameters"
    if P1 == P2 == P3:
        pytest.skip(f"judged by test_model_parameters_registered: {counts}")
    b = P2 - P1
    if b <= 0 or P3 - P2 != b:
        _fail(f"{_cfg_text(cfgs[2])} and the same with other num_layers: {counts}, so the blocks add "
              f"{P2 - P1} from 1 to 2 layers and {P3 - P2} from 2 to 3; blocks that all have the same layers add "
              f"the same number each, and each num_layers builds that many blocks.\nLikely mistake: "
              f"{NUM_LAYERS_HINT}.")
    if zero is not None and P1 - zero != b:
        _fail(f"{_cfg_text(cfgs[1])} has {P1} parameters, {P1 - zero} more than {zero} with num_layers=0, while "
              f"each further layer adds {b} ({counts}): num_layers=1 does not build one block of the same size as "
              f"the others{' (it builds none)' if P1 == zero else ''}.\nLikely mistake: {NUM_LAYERS_HINT}.")
    # the same number of parameters per layer, but two blocks per layer (range(2 * num_layers)) or one block too
    # many (range(num_layers + 1)): the blocks' names say how many copies of one block each model holds
    wrong = wrong_counts({0: m0.params if m0 is not None else None,
                          **{n: m.params for n, m in zip((1, 2, 3), models)}}, large=MODEL[2] ** 2)
    if wrong:
        _fail(f"{describe(wrong, lambda n: _cfg_text(cfgs[n]), 'num_layers')}\nLikely mistake: {NUM_LAYERS_HINT}.")
    if zero is None and _reads_earlier_tokens(sub, cfgs[1], seed, rng) is False \
            and _reads_earlier_tokens(sub, cfgs[2], seed, rng):
        _fail(f"{_cfg_text(cfgs[1])}: the logits at the last position do not change when the first token changes, "
              "while with num_layers=2 they do: with num_layers=1 the model has no attention block at all.\nLikely "
              f"mistake: {NUM_LAYERS_HINT}.")


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
    # a weight made with requires_grad=False is never trained (it gets no gradient however it is used); a fixed
    # table of positions (block_size, d_model), sinusoidal ones kept as a frozen parameter, is no weight
    frozen = [p["name"] for p in m.params if isinstance(p, dict) and p.get("requires_grad") is False
              and tuple(x for x in (p.get("shape") or []) if x != 1)[-2:] != (bs, MODEL[2])]
    if frozen:
        _fail(f"{_cfg_text(MODEL)}: these parameters are frozen (requires_grad=False), so they get no gradient and an "
              f"optimizer never updates them: {', '.join(frozen[:8])}{' ...' if len(frozen) > 8 else ''}.\nLikely "
              "mistake: `.requires_grad_(False)` or `nn.Parameter(..., requires_grad=False)` on a weight (an "
              "embedding, a projection); every weight is learnable: leave requires_grad at its default, True "
              "(a fixed table, such as sinusoidal positions, belongs in a buffer: `self.register_buffer(...)`).")
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
                if masks else "An unused layer, attribute names that differ between __init__ and forward, or a "
                "module run under torch.no_grad() (`@torch.no_grad()` on its forward, or a `with torch.no_grad():` "
                "block), which detaches what it computes from its parameters?")
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
@pytest.mark.parametrize("cfg", [(23, 37, 24, 4, 1), (131, 37, 24, 4, 1)], ids=["v23-b37", "v131-b37"])
@_sizes_from_arguments
def test_model_sizes_come_from_its_arguments(sub, close, rng, seed, cfg):
    # sizes no notebook holds in a global: a model that reads `block_size` or `vocab_size` from the
    # notebook instead of its arguments fails here even when the other tests happen to use the same sizes
    V, bs = cfg[0], cfg[1]
    try:
        _, r = _new_forward(sub, cfg, seed, [_ids(rng, 2, bs, V)], short_input_hint=False)
    except GradingFailure as e:  # ids up to 130: a table of tiny Shakespeare's 65 characters is too short
        if not isinstance(e, StudentError) or "IndexError: index out of range" not in e.message:
            raise
        if e.hinted:  # the positions' table, named by _tables.py: not the token table
            _fail(f"{_cfg_text(cfg)} on token ids up to {V - 1}: {e.message}")
        _fail(f"{_cfg_text(cfg)} on token ids up to {V - 1}: {e.message}\nLikely mistake: an nn.Embedding (or another "
              f"table indexed by the ids) sized by a number fixed in the code, such as 65 (tiny Shakespeare's "
              f"characters), or read from the notebook, not by vocab_size: `nn.Embedding(vocab_size, d_model)`.")
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
        # weights initialised very small (normal_(std=0.002)) make the change tiny in a correct model too: scaled
        # up (_small_weights_scaled_up), it shows; no values make a model that reads no earlier token read one
        small = _small_weights_scaled_up(m.get_params([p["name"] for p in m.params]))
        if small:
            m.set_params(small)
            r = m.forward([idx, idx2], seed=seed)
            try:
                a, b = (_logits(o, 2, bs, V, what) for o in r.outputs)
            except GradingFailure:  # NaN/Inf only with the values set here: no evidence either way
                a = b = np.zeros((2, bs, V))
            if np.abs(a[:, -1] - b[:, -1]).max() > 1e-6 * max(1.0, float(np.abs(a).max())):
                return
        _fail(f"{what}: the logits at the last position do not change when the first token changes: the model "
              "does not attend to earlier tokens (attention missing, or every earlier key masked)")


# the temperature of the model's attention (_temperature.py says how it is found) ---------------------------


@pytest.mark.question("model")
@pytest.mark.weight(3)  # the temperature of every head: softmax(q k^T / sqrt(d_model/num_heads))
@pytest.mark.parametrize("cfg", [TEMPERATURE_CFG], ids=["one-layer-d12-h2"])
@_sizes_from_arguments
def test_model_attention_scaled_by_the_head_width(sub, ref, rng, seed, cfg, note):
    # Every other model test holds at any temperature. In one layer whose attention projections are the
    # identity, biases zero and MLP silent, with the token embedding and the output layer set to one known
    # matrix, the logits are a fixed function of the ids whose only free choices (beside the structure: pre- or
    # post-norm, a final norm, which positions) are the temperature of the softmax and a scale on the output.
    # The temperature must be sqrt(d_model/num_heads) on a full block and on fewer tokens, the output unscaled; an
    # answer that matches a known wrong scale fails naming it, one that a fitted tau and c explain fails with
    # their values; one whose fit shows no output scale (the attention's output alone reaches the next norm: no
    # residual around the attention, a design the handout leaves open) is judged by its temperature alone, and
    # passes with a note where that is right at both lengths. One that nothing explains is asked whether its attention's weights sum to one over the keys
    # (every position holding the same input, it must give the same logits at every position: _temperature.py's
    # _check_weights_sum_to_one), and fails naming a missing softmax only on that evidence; else it skips, except
    # where some parameters were left as built or read only from their size (one flat parameter packing q, k, v):
    # then the layout, not the structure, may be what the grader could not read, and the test fails closed, saying
    # so and that a TA checks the scale by hand (_packed.py: a skip would let a wrong scale lose nothing).
    check_temperature_closed(sub, ref, rng, seed, cfg, note)


GRADIENT_MODEL = (7, 5, 8, 2, 1)  # small (the whole model goes to the worker in one round trip); even head widths (RoPE)


@pytest.mark.question("model")
@pytest.mark.weight(4)  # a model whose gradient is not the logits' (detached attention weights) does not learn
@pytest.mark.parametrize("cfg", [GRADIENT_MODEL], ids=["small"])
@_sizes_from_arguments
def test_model_gradient_follows_the_logits(sub, rng, seed, cfg):
    # test_model_every_parameter_gets_a_gradient asks `grad is not None` only (the key bias rightly gets a zero
    # gradient); with a fused qkv projection a model that detaches its attention weights still gives every
    # parameter a gradient (the values' rows) and the right logits. Here the gradient must agree with the
    # logits: autograd's slope of loss = sum(logits * W) along two random directions of the parameters, against
    # central finite differences of forwards at the parameters moved both ways (checker.running.modules), in
    # float64 where the model runs in it (a step of 1e-6 of each parameter's size), else in float32.
    V, T = cfg[0], cfg[1]
    idx = _ids(rng, 2, T, V)
    weight = rng.standard_normal((2, T, V))
    check = None
    try:
        check = _new(sub, cfg, seed, dtype="float64").gradient_check(idx, _tensor(weight, "float64"), seed=seed)
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        pass
    if check is None or not check.agrees():
        # not in float64, or not agreeing there: in float32 as well, with its larger step (a model that computes a
        # part in float32, as a softmax in float32 for stability, is told from a wrong gradient by its own precision)
        in32 = _new(sub, cfg, seed).gradient_check(idx, _tensor(weight, "float32"), seed=seed)
        if check is None or in32.agrees() or in32.no_graph:
            check = in32
    text = gradient_failure_text(check, _cfg_text(cfg) + (" built in float64" if check.dtype == "float64" else ""))
    if text:
        _fail(text)
