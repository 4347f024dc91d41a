"""The first tokens of a block alone vs at the start of the full block (trusted side): the helpers of
test_model_prefix_gives_the_logits_of_a_longer_input and test_model_heads_attend_over_whole_tokens in
test_charlm_model.py.

What it is for: a causal model's logits at position t depend on the tokens 0..t only, not on how many tokens
follow, so the first T tokens alone give the logits they have at the start of a full block (eval mode). Where
they do not, why is found by experiment: dropout in eval mode, a model that is not causal (the causality tests
judge it), the positions counted from the end, attention that depends on the length, or heads split or merged
without a transpose (the same model with one head, which has no split to get wrong, keeps the property).

What it is not: a test (the test functions are in test_charlm_model.py).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers

POSITIONS_FROM_END_HINT = ("the positions are counted from the end of the input (right-aligned: "
                           "`self.pos_emb(torch.arange(block_size - T, block_size))`, `pe[-T:]`), so the first token "
                           "of a shorter input gets position block_size - T instead of 0, and every logit depends on "
                           "how many tokens follow it: count them from the start, `torch.arange(T, device=idx.device)` "
                           "or `pe[:T]`")
LENGTH_IN_ATTENTION_HINT = ("position 0, which attends only to itself, gives the same logits alone as at the start of "
                            "the full block, but the later positions do not: the attention depends on how many tokens "
                            "the input has, such as a scale computed from T, the number of tokens (`* T ** -0.5` with "
                            "`B, T, C = x.shape`), instead of the keys' width (`* k.size(-1) ** -0.5`)")
HEADS_SPLIT_HINT = ("with one head the first tokens alone give the logits they have at the start of the full block, "
                    "but not with {h} heads: the heads are split or merged back with a reshape or view that skips the "
                    "transpose (`q.reshape(B, h, T, C // h)` of a (B, T, C) tensor, `y.reshape(B, T, C)` of a "
                    "(B, h, T, C/h) one), so each head's rows are pieces of several tokens and each head attends over "
                    "those pieces, cut differently for every number of tokens. Split with "
                    "`q.view(B, T, h, C // h).transpose(1, 2)` (B, h, T, C/h) and merge back with "
                    "`y.transpose(1, 2).contiguous().view(B, T, C)`, the transpose first")


def _one_head(cfg):
    return cfg[:3] + (1,) + cfg[4:]


def _prefix_logits(sub, cfg, seed, x, what, forward_seed=None):
    """The logits of a fresh module (the same weights: the same seed) on `x`, its forward run under
    `forward_seed` (default: `seed`): a forward that changes its module (a mask sliced into self.mask) must not
    change the next run."""
    if forward_seed is None:
        r = _new_forward(sub, cfg, seed, [x], short_input_hint=False)[1]
    else:
        r = _new(sub, cfg, seed).forward([x], seed=forward_seed)
    return _logits(r.outputs[0], x.shape[0], x.shape[1], cfg[0], what)


def _alone_vs_full(close, alone, full, T, what):
    close(alone, full[:, :T], dtype="float32",
          what=f"{what}: the logits of its first {T} token{'s' if T > 1 else ''} alone vs at the start of the full "
               "block")


def _prefix_mismatch(sub, close, cfg, seed, idx, Ts):
    """None where the first T tokens of `idx` alone give the logits they have at the start of `idx`, for every T
    in Ts, each run on a fresh module of `cfg`; else (T, the failure: what differs, or what went wrong)."""
    what = f"{_cfg_text(cfg)} on ids {_shape(idx.shape)}"
    full = _prefix_logits(sub, cfg, seed, idx, what)
    for T in Ts:
        try:
            alone = _prefix_logits(sub, cfg, seed, idx[:, :T].clone(), f"{_cfg_text(cfg)} on ids {_shape((2, T))}")
            _alone_vs_full(close, alone, full, T, what)
        except GradingFailure as e:
            return T, e
    return None


def _shorter_input_failed(sub, rng, seed, e, T):
    """The shorter input of T tokens failed (`e`): skipped where the model also fails on the shorter input
    test_model_causal_on_shorter_input gives it (that test judges it), else failed: a forward that fails only on
    this test's input would turn its failure into a skip."""
    if isinstance(e, (StudentTimeout, WorkerCrashed)):
        raise e
    V, bs = MODEL[0], MODEL[1]
    try:
        _prefix_logits(sub, MODEL, seed, _ids(rng, 2, bs - 3, V), f"{_cfg_text(MODEL)} on ids {_shape((2, bs - 3))}")
    except GradingFailure as other:
        pytest.skip(f"judged by test_model_causal_on_shorter_input: {other.message.splitlines()[0][:200]}")
    raise e.retold(f"{e.message}\nLikely mistake: the model runs on {bs - 3} tokens but not on these {T}: "
                   f"{SHORT_INPUT_HINT}.") from None


def _prefix_hint(sub, close, rng, seed, idx, T, full, alone, what):
    """Why the first T tokens alone give other logits than at the start of a full block, by experiment: a model that
    drops in eval mode (RANDOM_HINT); one that is not causal, on the full block or on the T tokens, where the
    causality test that looks there fails too (skipped here: that test judges it); heads split without a transpose
    (the same model with one head keeps the property); else the positions counted from the end (position 0
    differs, and it attends only to itself) or attention that depends on the length (only the later positions
    differ)."""
    V, bs, h = MODEL[0], MODEL[1], MODEL[3]
    if np.abs(_prefix_logits(sub, MODEL, seed, idx, what, forward_seed=seed + 1) - full).max() > 1e-6:
        return RANDOM_HINT
    later = idx.clone()
    later[:, T:] = (idx[:, T:] + torch.tensor(rng.integers(1, V, size=(2, idx.shape[1] - T)))) % V
    next_ = idx[:, :T].clone()
    next_[:, 1:] = (next_[:, 1:] + 1) % V
    for x, upto, base, test, shorter in ((later, T, full, "test_model_causality", None),
                                         (next_, 1, alone, "test_model_causal_on_shorter_input", bs - 3)):
        if x.shape[1] > upto and np.abs(_prefix_logits(sub, MODEL, seed, x, what)[:, :upto]
                                        - base[:, :upto]).max() > 1e-5:
            try:  # skipped only where that test fails: a model causal where it looks is judged here
                _check_causal(sub, close, rng, seed, MODEL, "cpu", T=shorter)
            except GradingFailure:
                pytest.skip(f"judged by {test}: the logits of the first tokens depend on the tokens after them, so "
                            "they differ with the tokens that follow whatever the positions")
            return CAUSAL_HINT
    if h > 1 and _prefix_mismatch(sub, close, _one_head(MODEL), seed, idx, (T,)) is None:
        return HEADS_SPLIT_HINT.format(h=h)
    return POSITIONS_FROM_END_HINT if np.abs(alone[:, 0] - full[:, 0]).max() > 1e-4 else LENGTH_IN_ATTENTION_HINT


def _check_prefix(sub, close, rng, seed):
    """test_model_prefix_gives_the_logits_of_a_longer_input (each run on a module of its own, so that a forward
    that changes the module is not judged here)."""
    V, bs = MODEL[0], MODEL[1]
    idx = _ids(rng, 2, bs, V)
    what = f"{_cfg_text(MODEL)} on ids {_shape(idx.shape)}"
    full = _prefix_logits(sub, MODEL, seed, idx, what)
    for T in (1, 4):
        try:
            alone = _prefix_logits(sub, MODEL, seed, idx[:, :T].clone(), f"{_cfg_text(MODEL)} on ids {_shape((2, T))}")
        except GradingFailure as e:
            _shorter_input_failed(sub, rng, seed, e, T)
        try:
            _alone_vs_full(close, alone, full, T, what)
        except GradingFailure as e:
            raise GradingFailure(f"{e.message}\nLikely mistake: "
                                 f"{_prefix_hint(sub, close, rng, seed, idx, T, full, alone, what)}.") from None


def _prefixes_agree_on_one_module(sub, close, cfg, seed, idx, Ts):
    """The quick look of test_model_heads_attend_over_whole_tokens: one module of `cfg`, asked in one forward the
    prefixes of `idx` (shortest first) and then `idx` itself; True where each prefix gives the logits of the
    block's start. Anything else (a mismatch, an error, a forward that changes its module from one input to
    the next) is looked at again with a fresh module per input (`_prefix_mismatch`), which decides."""
    V, bs = cfg[0], idx.shape[1]
    what = f"{_cfg_text(cfg)} on ids {_shape(idx.shape)}"
    try:
        r = _new_forward(sub, cfg, seed, [idx[:, :T].clone() for T in Ts] + [idx], short_input_hint=False)[1]
        full = _logits(r.outputs[-1], 2, bs, V, what)
        for T, out in zip(Ts, r.outputs):
            _alone_vs_full(close, _logits(out, 2, T, V, f"{_cfg_text(cfg)} on ids {_shape((2, T))}"), full, T, what)
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        return False
    return True


def _check_heads_whole_tokens(sub, close, rng, seed, cfg):
    """test_model_heads_attend_over_whole_tokens: with cfg's num_heads, the first T tokens alone give the logits
    they have at the start of a full block, for several T, wherever the same model with one head does; a model
    that fails so with one head too (positions, dropout, a mask: not the heads) is judged by
    test_model_prefix_gives_the_logits_of_a_longer_input and the causality tests, and skips here."""
    V, bs, h = cfg[0], cfg[1], cfg[3]
    idx = _ids(rng, 2, bs, V)
    Ts = sorted({1, 2, bs // 2, bs - 1} - {0, bs})
    if _prefixes_agree_on_one_module(sub, close, cfg, seed, idx, Ts):
        return
    bad = _prefix_mismatch(sub, close, cfg, seed, idx, Ts)
    if bad is None:
        return
    T, e = bad
    if isinstance(e, (StudentTimeout, WorkerCrashed)):
        raise e
    one = _one_head(cfg)
    try:
        other = _prefix_mismatch(sub, close, one, seed, idx, Ts)
    except GradingFailure as e1:
        other = (None, e1)
    if other is not None:
        pytest.skip(f"judged by test_model_prefix_gives_the_logits_of_a_longer_input: with one head as well, "
                    f"{other[1].message.splitlines()[0][:200]}")
    raise e.retold(f"{e.message}\nLikely mistake: {HEADS_SPLIT_HINT.format(h=h)}.") from None


__all__ = [n for n in dir() if not n.startswith("__")]
