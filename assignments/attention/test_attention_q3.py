"""Grading tests of `attention`, question Q3 (see _common.py for what the tests share)."""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers
from ._carried import *  # noqa: F401,F403 - carried-forward credit for the student's own softmax
from ._by_hand import *  # noqa: F401,F403 - the by-hand tests' library calls and check


def _check_blocks(sub, ref, close, W, h, dtype, label):
    asked(_ask_blocks(sub, ref, close, W, h, dtype, label))()


def _ask_blocks(sub, ref, close, W, h, dtype, label):
    """_check_blocks as a generator (checker.running.together.asked) over a handle or a Together."""
    got = yield sub.call("split_heads", W, h)
    what = f"split_heads({label}, {h})"
    if isinstance(got, (list, tuple)) and len(got) != h:
        raise GradingFailure(f"{what}: expected a list of {h} arrays (one per head), got {len(got)} items")
    got = _blocks_as_one_array(got, np.shape(W), h, what)  # a list is the contract: never the tuple hint
    Wf = _f64(W)
    m = A.split_mistakes(Wf, h)
    close(got, np.stack(ref.split_heads(Wf, h)), what=what, dtype=dtype,
          hints=[(SPLIT_ROWS, m["rows"]),
                 ("head i must get the i-th block of contiguous columns, not every num_heads-th column",
                  m["interleaved"]),
                 ("each block came back transposed (d/num_heads x d) instead of (d x d/num_heads)",
                  np.stack([b.T for b in ref.split_heads(Wf, h)]))])


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,width,h", [(4, 4, 2), (3, 6, 3), (5, 10, 5), (2, 6, 1), (4, 6, 6)])
def test_split_heads_blocks(sub, ref, close, d, width, h):
    with sub.together(chain=True) as t:
        edge = asked(_check_arange_blocks(t, ref, close, d, width, h))
        other = asked(_check_arange_blocks(t, ref, close, 3, 6, 3)) if h in (1, width) else None
    edge()
    if other:  # one head (the whole W) or one column a head: every way of cutting agrees
        only_if_right_elsewhere("split_heads", f"{h} head{'s' if h > 1 else ''} of width {width // h}",
                                "W of shape (3, 6) in 3 heads", other)


def _check_arange_blocks(sub, ref, close, d, width, h):
    """A generator (checker.running.together.asked) over a handle or a Together."""
    W = np.arange(d * width, dtype=np.float64).reshape(d, width) / 10  # every entry tells where it came from
    yield from _ask_blocks(sub, ref, close, W, h, "float64", f"W of shape ({d}, {width}) with W[r, c] = r*{width/10:g} + c/10")


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,width,h", [(4, 6, 4), (3, 5, 2), (4, 4, 3), (2, 8, 16)])
def test_split_heads_not_divisible(sub, ref, close, d, width, h):
    W = np.ones((d, width))
    with sub.together() as t:  # both asked whatever the first answers (a ValueError): one round trip
        ask = t.call("split_heads", W, h)
        other = asked(_check_arange_blocks(t, ref, close, 3, 6, 3))
    _expect_value_error(ask.get, f"split_heads(W of shape ({d}, {width}), {h})")
    # a split_heads that raises ValueError whatever it is given earns nothing here
    only_if_right_elsewhere("split_heads", f"W of shape ({d}, {width}) in {h} heads, where it must raise",
                            "W of shape (3, 6) in 3 heads", other)


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("d,width,h", [(7, 12, 4), (1, 9, 3), (6, 5, 5)])
def test_split_heads_random(sub, ref, close, rng, d, width, h, dtype):
    W = _rand(rng, (d, width), dtype)
    _check_blocks(sub, ref, close, W, h, dtype, f"random W of shape ({d}, {width}), {dtype}")


SHAPE_CASES = [(3, 4, 2), (7, 6, 3), (1, 10, 5), (128, 512, 8), (5, 64, 1)]  # (T, d_model, num_heads)
WEIGHT_CASES = [(d, h) for _, d, h in SHAPE_CASES]  # (d_model, num_heads)


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,h", WEIGHT_CASES)
def test_head_weight_shape(sub, ref, close, d, h):
    with sub.together(chain=True) as t:
        first = t.call("head_weight_shape", d, h)
        other = t.call("head_weight_shape", 6, 3) if h == 1 else None
    got = first.get()
    # a head's output shape (t, d/h) for any t the student may have used (a notebook T, X.shape[0], ...)
    hints = [(HEAD_WEIGHT_IS_OUTPUT, (t, d // h)) for t in range(1, 1025) if t not in (d, h)]
    hints.append(("the first dimension is the number of features a head's weight takes in, d_model, not the "
                  "number of heads: (d_model, d_model // num_heads)", (h, d // h) if h != d else None))
    hints.append(("the shape is transposed: with row vectors (X @ W) a weight is (d_in, d_out) = "
                  "(d_model, d_model // num_heads)", (d // h, d) if h > 1 else None))
    _close_shape(close, got, ref.head_weight_shape(d, h), what=f"head_weight_shape(d_model={d}, num_heads={h})",
                 hints=hints, sub=sub, fn=ref.head_weight_shape, args={"d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("head_weight_shape", "num_heads=1", "head_weight_shape(d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "head_weight_shape", 6, 3, ask=other))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("T,d,h", SHAPE_CASES)
def test_head_output_shape(sub, ref, close, T, d, h):
    with sub.together(chain=True) as t:
        first = t.call("head_output_shape", T, d, h)
        other = t.call("head_output_shape", 7, 6, 3) if h == 1 else None
    got = first.get()
    _close_shape(close, got, ref.head_output_shape(T, d, h),
                 what=f"head_output_shape(seq_len={T}, d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's weight (d_model, d_model // num_heads), not of its output",
                         (d, d // h) if T != d else None),
                        ("the shape is transposed: one row per token, (seq_len, d_model // num_heads)",
                         (d // h, T) if T != d // h else None)],
                 sub=sub, fn=ref.head_output_shape, args={"seq_len": T, "d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("head_output_shape", "num_heads=1", "head_output_shape(seq_len=7, d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "head_output_shape", 7, 6, 3, ask=other))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("T,d,h", SHAPE_CASES)
def test_concat_shape(sub, ref, close, T, d, h):
    with sub.together(chain=True) as t:
        first = t.call("concat_shape", T, d, h)
        other = t.call("concat_shape", 7, 6, 3) if h == 1 else None
    got = first.get()
    _close_shape(close, got, ref.concat_shape(T, d, h), what=f"concat_shape(seq_len={T}, d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's output; the concatenation puts all num_heads heads side by side",
                         (T, d // h) if h > 1 else None)],
                 sub=sub, fn=ref.concat_shape, args={"seq_len": T, "d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("concat_shape", "num_heads=1", "concat_shape(seq_len=7, d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "concat_shape", 7, 6, 3, ask=other))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("d,h", WEIGHT_CASES)
def test_w_o_shape(sub, ref, close, d, h):
    with sub.together(chain=True) as t:
        first = t.call("w_o_shape", d, h)
        other = t.call("w_o_shape", 6, 3) if h == 1 else None
    got = first.get()
    _close_shape(close, got, ref.w_o_shape(d, h), what=f"w_o_shape(d_model={d}, num_heads={h})",
                 hints=[("that is the shape of one head's weight; W^O maps the concatenated heads "
                         "(num_heads * d_model // num_heads features) back to d_model",
                         (d, d // h) if h > 1 else None)],
                 sub=sub, fn=ref.w_o_shape, args={"d_model": d, "num_heads": h})
    if h == 1:  # one head: an answer that leaves num_heads out is right here
        only_if_right_elsewhere("w_o_shape", "num_heads=1", "w_o_shape(d_model=6, num_heads=3)",
                                lambda: _shape_right(sub, ref, "w_o_shape", 6, 3, ask=other))


@pytest.mark.question("Q3")
def test_q3_functions_leave_their_arguments_unchanged(sub, ref, close):
    mha = {"X": X_HANDOUT, "W_Q": W_Q, "W_K": W_K, "W_V": W_V, "W_O": np.eye(4), "num_heads": 2}
    _check_arguments_unchanged(sub, close, [
        ("split_heads", {"W": W_Q, "num_heads": 2}, np.stack(ref.split_heads(W_Q, 2))),
        ("multi_head_attention", mha, ref.multi_head_attention(*mha.values()))])


INDIVISIBLE = [(3, 10, 3), (5, 7, 2), (2, 6, 4)]  # (T, d_model, num_heads): num_heads does not divide d_model


@pytest.mark.question("Q3")
@pytest.mark.parametrize("name", ["head_weight_shape", "head_output_shape", "w_o_shape"])
def test_shapes_when_num_heads_does_not_divide(sub, ref, close, name):
    """The handout's formulas round d_model / num_heads down (`//`); a ValueError, as split_heads raises,
    is accepted too."""
    def params_of(T, d, h):
        return {"seq_len": T, "d_model": d, "num_heads": h} if name == "head_output_shape" else \
            {"d_model": d, "num_heads": h}
    divides = params_of(7, 6, 3)  # where the function must answer: a ValueError earns nothing unless it does
    with sub.together() as t:  # every ask whatever the others answer (a ValueError): one round trip
        asks = [t.call(name, *params_of(T, d, h).values()) for T, d, h in INDIVISIBLE]
        other = t.call(name, *divides.values())
    raised = False
    for (T, d, h), ask in zip(INDIVISIBLE, asks):
        params = params_of(T, d, h)
        what = f"{name}({', '.join(f'{k}={v}' for k, v in params.items())})"
        try:
            got = ask.get()
        except StudentError as e:
            if "ValueError" in e.exc_types:
                raised = True
                continue
            raise
        up = -(-d // h)  # d_model / num_heads rounded up
        rounded_up = ("d_model / num_heads was rounded up; the handout's formula rounds it down: "
                      "d_model // num_heads")
        hints = {"head_weight_shape": [(rounded_up, (d, up))],
                 "head_output_shape": [(rounded_up, (T, up))],
                 "w_o_shape": [("W^O takes the concatenated heads, num_heads * (d_model // num_heads) features, "
                                "which is fewer than d_model when num_heads does not divide it: the handout's "
                                "formula is (num_heads * (d_model // num_heads), d_model)", (d, d)),
                               (rounded_up, (h * up, d)),
                               ("the shape is transposed: with row vectors (concat @ W^O) W^O takes the concatenated "
                                "heads in and gives d_model out: (num_heads * (d_model // num_heads), d_model)",
                                (d, h * (d // h)))]}[name]
        _close_shape(close, got, getattr(ref, name)(*params.values()), what=what, hints=hints, sub=sub,
                     fn=getattr(ref, name), args=params)
    if raised:
        shown = f"{name}({', '.join(f'{k}={v}' for k, v in divides.items())})"
        only_if_right_elsewhere(name, "num_heads that does not divide d_model, where a ValueError is accepted", shown,
                                lambda: _close_shape(close, other.get(), getattr(ref, name)(*divides.values()),
                                                     what=shown, sub=sub, fn=getattr(ref, name), args=divides))


def _mha_case(rng, T, d, dtype):
    X, *Ws = _tokens_and_projections(rng, T, d, (d, d, d, d), dtype)
    return X, Ws


def _check_mha(sub, ref, close, note, X, Ws, h, dtype, label, ask=None):
    args = [_f64(a) for a in (X, *Ws)]
    blocks = [ref.split_heads(W, h) for W in args[1:4]]  # asked up front, so that the kit has them recorded
    try:
        got = ask.get() if ask is not None else sub.call("multi_head_attention", X, *Ws, h)
    except StudentError as error:  # an error that the student's own self_attention may have caused (Q2's)
        carry.close_raised(sub, note, error, name="multi_head_attention", by="self_attention", question="Q2",
                           compose=[_composed(X, blocks, args[4]), _composed(X, blocks, args[4], axis=1)],
                           vary=_other_tokens)
        return
    _close_mha(sub, ref, close, note, got, X, Ws, h, what=f"multi_head_attention({label}, num_heads={h})",
               dtype=dtype, hints=_mha_hints(*args, h), blocks=blocks)


def _composed(X, blocks, W_O, axis=-1):
    """compose(ask) for checker.running.carry: the handout's multi-head attention built from A's answers,
    `ask`, to each head's (X, W_Q_i, W_K_i, W_V_i), the blocks cut by the handout's split, the heads joined
    along their last axis, the features (`axis=1`, the same for the (T, d_v) heads the handout's
    self_attention gives, is another faithful way, which heads of one axis fewer make raise)."""
    Xs = np.asarray(X)

    def compose(ask):
        heads = ask([(Xs, *(np.asarray(b, dtype=Xs.dtype) for b in bs)) for bs in zip(*blocks)])
        return np.concatenate(heads, axis=axis) @ W_O
    return compose


def _close_mha(sub, ref, close, note, got, X, Ws, h, blocks=None, **kw):
    """close() for multi_head_attention with both mistakes of earlier questions carried forward: the
    student's softmax (Q1, _close_own_softmax) and their self_attention (Q2, checker.running.carry).

    The handout's multi-head attention is self-attention per head: head i is self_attention(X, W_Q_i,
    W_K_i, W_V_i) with the i-th column blocks (HOMEWORK.md, Q3), the heads concatenated in order and
    multiplied by W_O. Where the student's self_attention lost points in Q2, an answer equal to that
    composition with their own self_attention (asked of a fresh worker; the blocks cut here, by the
    handout's split, not by their split_heads) passes with a note naming self_attention; so does an error
    of theirs that the composition raises too (_check_mha: a head of the wrong shape)."""
    args = [_f64(a) for a in (X, *Ws)]
    if blocks is None:
        blocks = [ref.split_heads(W, h) for W in args[1:4]]  # asked up front, so that the kit has them recorded
    right = ref.multi_head_attention(*args, h)
    one = ref.self_attention(*args[:4]) @ args[4]  # (alike, below: up front too, for the kit's recording)
    try:
        _close_own_softmax(sub, close, note, "multi_head_attention", got, right, own=_own_mha(sub, *args, h), **kw)
    except GradingFailure as failure:
        Xs = np.asarray(X)

        def alike(ask):
            """One head of the full width, what a multi_head_attention that splits nothing gives, where the
            handout's answer differs from it (one head, num_heads=1, is the whole: nothing to tell apart)."""
            if np.max(np.abs(right - one)) <= 1e-3 * max(float(np.max(np.abs(right))), 1e-300):
                return []
            whole = ask([(Xs, *(np.asarray(a, dtype=Xs.dtype) for a in args[1:4]))])[0]
            return [("one head of the full width (self_attention on the whole W_Q, W_K, W_V, times W_O)",
                     np.asarray(whole, dtype=np.float64) @ args[4])]

        carry.close_carried(sub, close, note, failure, got, name="multi_head_attention", by="self_attention",
                            question="Q2", compose=_composed(X, blocks, args[4]), vary=_other_tokens,
                            dtype=kw.get("dtype"), alike=alike)


def _other_tokens(args):
    """self_attention's arguments with the tokens in reverse order: its answer changes (its rows do)."""
    X, *Ws = args
    return (np.ascontiguousarray(np.asarray(X)[::-1]), *Ws)


@pytest.mark.question("Q3")
def test_multi_head_attention_handout(sub, ref, close, note, rng):
    Wo = np.eye(4)
    # d = 4 in 2 heads: sqrt(num_heads) = sqrt(d_k), so the gate asks for a case where they differ
    gate = _mha_gate(sub, ref, close, rng, np.shape(X_HANDOUT)[0], 4, 2, "float64")
    with sub.together(chain=True) as t:
        first = t.call("multi_head_attention", X_HANDOUT, W_Q, W_K, W_V, Wo, 2)
        other = gate(t)
    _check_mha(sub, ref, close, note, X_HANDOUT, [W_Q, W_K, W_V, Wo], 2, "float64",
               "handout X, W_Q, W_K, W_V, W_O = identity (4 x 4)", ask=first)
    other()


@pytest.mark.question("Q3")
def test_multi_head_attention_by_hand(sub, ref, close, note):
    Ws = [W_Q, W_K, W_V, np.eye(4)]
    _check_by_hand(sub, close, ref.multi_head_attention(X_HANDOUT, *Ws, 2), ATTENTION_CALLS,
                   "multi_head_attention(handout X, W_Q, W_K, W_V, W_O = identity, 2)", "multi_head_attention",
                   X_HANDOUT, *Ws, 2, judge=lambda got, what: _close_mha(sub, ref, close, note, got, X_HANDOUT, Ws,
                                                                        2, what=what))


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,d,h", [(3, 4, 2), (5, 6, 3), (2, 10, 5), (1, 8, 4)])
def test_multi_head_attention(sub, ref, close, note, rng, T, d, h, dtype):
    X, Ws = _mha_case(rng, T, d, dtype)
    gate = _mha_gate(sub, ref, close, rng, T, d, h, dtype)
    with sub.together(chain=True) as t:
        first = t.call("multi_head_attention", X, *Ws, h)
        other = gate(t)
    _check_mha(sub, ref, close, note, X, Ws, h, dtype, f"random X ({T} x {d}), W_Q, W_K, W_V, W_O ({d} x {d}), {dtype}",
               ask=first)
    other()


def _mha_gate(sub, ref, close, rng, T, d, h, dtype):
    """An edge case of multi_head_attention (one token, one head, heads of width 1) earns only for a
    function also right on 5 tokens, d = 6 in 3 heads (checker.judging.edge_gate). Its input is drawn now; it
    returns ask(t): that call added to the asks `t` (checker.running.together), returning the gate to run once the
    edge case passed."""
    edge = [w for w, hit in [(ONE_TOKEN, T == 1), ("a single head, which any split and concatenation keeps whole",
                                                    h == 1), ("heads of width 1, where sqrt(d_k) = 1", d // h == 1),
                                   ("as many heads as each head is wide, where sqrt(num_heads) = sqrt(d_k)",
                                    h > 1 and h * h == d)]
            if hit]
    if not edge:
        return lambda t: (lambda: None)
    X, Ws = _mha_case(rng, 5, 6, dtype)

    def ask(t):
        other = t.call("multi_head_attention", X, *Ws, 3)
        return lambda: only_if_right_elsewhere(
            "multi_head_attention", "; ".join(edge), "5 tokens, d = 6, 3 heads",
            lambda: _check_mha(sub, ref, close, _QUIET, X, Ws, 3, dtype, f"random X (5 x 6), {dtype}", ask=other))
    return ask


@pytest.mark.question("Q3")
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("T,d,h", [(7, 9, 3), (4, 12, 4), (6, 5, 5), (3, 6, 1), (1, 3, 3)])
def test_multi_head_attention_random(sub, ref, close, note, rng, T, d, h, dtype):
    X, Ws = _mha_case(rng, T, d, dtype)
    gate = _mha_gate(sub, ref, close, rng, T, d, h, dtype)
    with sub.together(chain=True) as t:
        first = t.call("multi_head_attention", X, *Ws, h)
        other = gate(t)
    _check_mha(sub, ref, close, note, X, Ws, h, dtype, f"random X ({T} x {d}), W_Q, W_K, W_V, W_O ({d} x {d}), {dtype}",
               ask=first)
    other()
