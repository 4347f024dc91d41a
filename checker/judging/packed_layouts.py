"""The values that make an attention module's projections the identity, read from its parameters' names and shapes
only, packed layouts included (pure numpy: no module is run here).

What it is for: the tests that judge the temperature of a student's attention (vit's
test_mhsa_scales_the_scores_by_the_head_width and test_vit_block_attention_is_the_handouts, charlm's
test_model_attention_scaled_by_the_head_width) set its projections to the identity, in whatever layout the student
chose (HOMEWORK: "so is any parameter layout"). Besides the layouts with one axis of the model's width D
(`axis_readings`: nn.Linear's (out, in), `x @ W`'s (in, out), fused (3D, D) / (D, 3D), stacks (h, D, D/h), per-head
(3D/h, D), ...), a student may pack several projections into one parameter, flat or of any shape, and `view` it
in forward: `nn.Parameter(torch.randn(4 * D * D))` viewed as (4, D, D), `(3 * h * D * d_k)` viewed as
(3, h, D, d_k), `(D * D + D)` split into a weight and its bias. `packed_readings` reads a parameter whose number of
elements is k * D * D (k = 1 .. MAX_COPIES: q, k, v and the output projection) or, for one head's parameter,
k * D * D/h, possibly followed by the k * D (k * D/h) values of their biases, through each natural factorisation
of it (PACKED_ORDERS: (k, D, D), (k, h, D, d_k), (D, k * D), (h, k, d_k, D), (D, h, k, d_k)), in that order, so
that the first ways tried are the likeliest; `identity_weights` turns every parameter's readings into at most
`max_ways` ways to set the module, as vit's temperature test did before (its docstring says how).

The packed readings are guesses from a size: where no way makes a module attention at any temperature the grader
knows, a test cannot tell a wrong scale from a layout it misread. `unread_message` is what such a test says when it
fails closed instead of skipping (a skip would spread its points over the question's other tests, so that a wrong
scale behind an unreadable layout would cost nothing): that the grader could not read the projections (naming
them), that the scale was not checked, and that a TA should check it by hand. It starts with UNREAD_MARK, which
a gradebook's note can look for.

What it is not: a test, a judge of any answer, or a reading of the student's code (which view its forward
applies is not known: every distinct reading is a candidate, tried in turn by the test).
"""

import re

import numpy as np

__all__ = ["MAX_COPIES", "PACKED_ORDERS", "UNREAD_MARK", "axis_readings", "head_index", "identity_readings",
           "combined", "identity_weights", "packed_readings", "projection_sized", "unread_message",
           "unread_projections"]

MAX_COPIES = 4  # q, k, v and the output projection in one parameter
MAX_WAYS = 4  # readings of the layout tried by default, each one set_params and one forward
UNREAD_MARK = "The grader could not read the layout of"
# a parameter's name that says it is the output projection: a part `o`, `wo`, `out`, `proj`, `out_proj`, `to_out`
_OUT_NAME = re.compile(r"(^|[._])(w_?o|o|out|output|proj|o_?proj|out_?proj|to_?out|c_?proj)([._]|$)", re.I)

# The memory orders of a packed parameter, major axis first: c the copy (q, k, v, o), d the input feature, o the
# output feature, or i (head) and j (feature of the head) with o = i * D/h + j. Whole-width first, then the ones
# only a parameter of several heads has; one head's parameter (`head`) reads those without i and j.
PACKED_ORDERS = (("c", "o", "d"),        # (k, D_out, D_in): nn.Linear weights stacked, (k * D, D), F.linear
                 ("c", "d", "o"),        # (k, D_in, D_out): x @ W[c] (the same as above for a whole width)
                 ("c", "i", "d", "j"),   # (k, h, D, d_k): per-head stacks, einsum("bnd,hdk->bhnk", x, W[c])
                 ("d", "c", "o"),        # (D, k * D): x @ W, then chunk(k, dim=-1)
                 ("i", "c", "j", "d"),   # (h, k, d_k, D): timm's fused qkv read as reshape(B, N, h, 3, d_k)
                 ("d", "i", "c", "j"))   # (D, h, k, d_k): x @ W, then view(B, N, h, k, d_k)


def head_index(name, h, last=False):
    """The head a per-head parameter's name numbers (`heads.2.query.weight`, `W_Q.2`): its first number (its
    last, `last`: `blocks.0.heads.1.qkv.weight`), or None where that is not below h (a run of 5,000 digits is
    none)."""
    found = re.findall(r"(?<!\d)\d{1,6}(?!\d)", name)
    if not found:
        return None
    n = int(found[-1] if last else found[0])
    return n if 0 <= n < h else None


def axis_readings(shape, D, h, head=None):
    """The values that make a projection of `shape` the identity, in each way its shape can be read with one axis
    of size D holding the input features; the other axes, flattened in order, hold k = 1, 2 or 3 copies (Q; K and
    V; Q, K and V) of the output features: of all D of them, or, for a per-head parameter (`head`), of that head's
    D/h. Output feature j of copy c is input feature j: as a layer's weight (D last) or used as `x @ W` (D first),
    a fused (3D, D), to_kv's (2D, D), the heads' stacks (h, D, D/h) and (h, D/h, D) (W_O's too), Keras'
    EinsumDense kernels (D, h, D/h), a per-head fused qkv (3D/h, D). The copies of a whole-width one may also be
    interleaved head by head, (h, k, D/h) (timm's `reshape(B, N, h, 3, D/h)`). The last axis is read as the input
    first (nn.Linear's (out, in))."""
    dh = D // h
    width, first = (D, 0) if head is None else (dh, head * dh)
    found = []
    for a in reversed(range(len(shape))):
        if shape[a] != D:
            continue
        rest = tuple(shape[:a]) + tuple(shape[a + 1:])
        n = int(np.prod(rest))
        if n % width or not 1 <= n // width <= 3:
            continue
        k, o = n // width, np.arange(n)
        features = [first + o % width]                                  # copy after copy: q | k | v
        if head is None and k > 1 and h > 1:
            features.append((o // (k * dh)) * dh + o % dh)              # head after head: (h, k, D/h)
        for f in features:
            v = (np.arange(D)[:, None] == f[None, :]).astype(np.float32).reshape((D,) + rest)   # input first
            v = np.ascontiguousarray(np.moveaxis(v, 0, a))
            if not any(np.array_equal(v, w) for w in found):
                found.append(v)
    return found


def _packed_counts(size, D, h, head=None):
    """[(k, with_bias)]: how a parameter of `size` values can hold k projections of D inputs (and, `with_bias`,
    their biases after them), whole-width or (`head`) one head's. One head's are read only where `size` is
    beyond 4 D, the size of an MLP's hidden bias: a small vector is a bias or a norm's weight."""
    width = D if head is None else D // h
    if head is not None and size <= 4 * D:
        return []
    return [(k, bias) for k in range(1, MAX_COPIES + 1) for bias in (False, True)
            if size == k * D * width + (k * width if bias else 0)]


def packed_readings(shape, D, h, head=None):
    """[(values, copies)]: each natural factorisation (PACKED_ORDERS) of a parameter of `shape` read as k packed
    projections (`_packed_counts`), as the values that make each of them the identity, in `shape`, and `copies`
    (ints, in `shape`): which projection each value belongs to, 0 .. k - 1 in the order packed (q, k, v, o for
    a whole-width parameter), -1 for a bias. Distinct readings only, the likeliest first."""
    shape = tuple(int(s) for s in shape)
    size, dh = int(np.prod(shape)) if shape else 1, D // h
    found = []
    for k, bias in _packed_counts(size, D, h, head):
        width, first = (D, 0) if head is None else (dh, head * dh)
        for order in PACKED_ORDERS:
            if head is not None and ("i" in order or "j" in order):
                continue
            sizes = {"c": k, "d": D, "o": width, "i": h, "j": dh}
            grid = dict(zip(order, np.indices([sizes[a] for a in order])))
            out = grid["o"] if "o" in grid else grid["i"] * dh + grid["j"]
            value = (grid["d"] == first + out).astype(np.float32).ravel()
            copies = grid["c"].ravel()
            if bias:
                value = np.concatenate([value, np.zeros(k * width, np.float32)])
                copies = np.concatenate([copies, np.full(k * width, -1)])
            value, copies = value.reshape(shape), copies.reshape(shape)
            if not any(np.array_equal(value, v) for v, _ in found):
                found.append((value, copies))
    return found


def identity_readings(shape, D, h, head=None):
    """The values that make a projection of `shape` the identity: its axis readings (`axis_readings`), or, where
    there are none, its packed ones (`packed_readings`, without their copies)."""
    return axis_readings(shape, D, h, head) or [v for v, _ in packed_readings(shape, D, h, head)]


def combined(counts, max_ways=MAX_WAYS):
    """[{name: reading index}]: at most `max_ways` ways to set a module whose parameters have counts[name] readings
    each, the likeliest first. Way i takes each parameter's i-th reading (or its first: a parameter of one reading
    has it in every way), except that the readings of a parameter named as the output projection (`blob_o`, `W_o`,
    `out_proj`, `to_out`) vary in ways of their own, after, the others' first readings beside them: its likeliest
    reading is the identity whichever the packed q, k, v's is (a (3, h, D, d_k) blob beside a flat (D, D) W_o)."""
    out = {n for n, c in counts.items() if c > 1 and _OUT_NAME.search(n)}
    inner = max((c for n, c in counts.items() if n not in out), default=1)
    outer = max((counts[n] for n in out), default=1)
    picks = [(i, 0) for i in range(inner)] + [(0, j) for j in range(1, outer)]
    return [{n: (j if n in out else i) if (j if n in out else i) < c else 0 for n, c in counts.items()}
            for i, j in picks[:max_ways]]


def identity_weights(m, D, h, max_ways=MAX_WAYS, guessed=None):
    """(ways, unknown): the ways to make the module's projections the identity and its biases zero that its names
    and shapes allow, each {name: value} (`identity_readings`: every reading of every projection's layout; way i
    takes each parameter's i-th reading, or its first), and the parameters no reading explains (`name` (shape)),
    with no way then. A per-head parameter (`heads.2.qkv.weight`, `W_Q.2`: the first number of its name gives its
    head; read so only where the numbers cover every head) may also read as a whole-width one (a (D, D) named
    `proj.0` is either). A bias is any other parameter with at most 3D values (q, k and v's biases, in any shape:
    (D,), (3D,), (h, D/h), (1, 1, D)), set to zero: no projection of D features fits in so few (it holds at least
    D * D/h). A learnable scalar or one a head ((h,): a gain, a temperature) is left as the module made it, and in
    a second way set to 1. `guessed`, a list, gets the names read only through their packed readings (a size, no
    axis of D): where no way makes the module attention, their layout may be one the grader does not know."""
    dh = D // h
    readings, heads, scalars, unknown, biases = {}, {}, [], [], {}
    for p in m.params:
        name, shape = p.get("name"), tuple(p.get("shape", ()))
        if not isinstance(name, str) or not all(type(n) is int and n >= 0 for n in shape):
            return [], [repr(name)[:60]]
        head = head_index(name, h) if h > 1 else None
        size = int(np.prod(shape))
        per_head = identity_readings(shape, D, h, head) if head is not None else []
        whole = identity_readings(shape, D, h)
        if per_head or whole:
            readings[name] = (per_head, whole)
            if per_head:
                heads.setdefault(head, []).append(name)
            if guessed is not None and not axis_readings(shape, D, h) and not (
                    head is not None and axis_readings(shape, D, h, head)):
                guessed.append(name)
        elif size == 1 or (size == h and h > 1):  # a learnable scalar or one per head: as built, or 1
            scalars.append((name, shape))
        elif size <= 3 * D:
            biases[name] = np.zeros(shape, dtype=np.float32)
        else:
            unknown.append(f"`{name[:60]}` {shape}")
    by_head = sorted(heads) == list(range(h))  # per-head readings only where every head has its parameters
    chosen = {}
    for name, (per_head, whole) in readings.items():
        chosen[name] = (per_head if by_head else []) + whole
        if not chosen[name]:
            unknown.append(f"`{name[:60]}` {tuple(per_head[0].shape)}")
    if unknown:
        return [], unknown
    ways = [{**biases, **{n: chosen[n][k] for n, k in pick.items()}}
            for pick in combined({n: len(r) for n, r in chosen.items()}, max_ways)]
    if scalars:  # each way with its scalars as the module made them, then set to 1 (a gain that starts elsewhere)
        ways += [{**way, **{n: np.ones(shape, dtype=np.float32) for n, shape in scalars}} for way in list(ways)]
    return ways, []


def projection_sized(shape, D, h):
    """Whether a parameter of `shape` holds a whole number of D x D/h blocks (one head's projection, or k of them,
    or a whole one): what an attention projection the grader cannot read holds, where a table of positions, a
    bias or a norm's weight does not."""
    size, block = int(np.prod(shape)) if len(shape) else 1, D * (D // h)
    return size >= block and size % block == 0


def unread_projections(params, D, h, guessed=()):
    """["`name` (shape)"]: the parameters of an attention module (`params`, [{"name", "shape"}]) that keep a test
    from judging its scale and may be its projections: projection-sized ones (`projection_sized`) that no reading
    explains or that were read only from their size (`guessed`, names). [] where there are none, or where the
    module's projection-sized parameters hold more than the handout's attention does (MAX_COPIES projections of D x
    D, their biases beside them): heads of the wrong width or extra layers, a mistake the other tests judge (the
    test keeps its skip there, so that one mistake is not charged twice)."""
    sized = [(p["name"], tuple(p.get("shape", ()))) for p in params if isinstance(p.get("name"), str)
             and (p["name"] in guessed or projection_sized(tuple(p.get("shape", ())), D, h))]
    if sum(int(np.prod(s)) for _, s in sized) > MAX_COPIES * (D * D + D):
        return []
    return [f"`{n}` {s}" for n, s in sized
            if n in guessed or not (identity_readings(s, D, h) or identity_readings(s, D, h, head_index(n, h)))]


def unread_message(what, names, judged="the scale of the attention's scores (softmax(Q K^T / sqrt(d_k)), d_k the "
                                        "width of a head)"):
    """What a test that fails closed says: the grader could not read the layout of `names` (["`name` (shape)"])
    of `what` (the model, in words), so `judged` was not checked, and a TA checks it by hand. No "Likely
    mistake" line: nothing wrong was seen."""
    shown = ", ".join(names[:6]) + (" ..." if len(names) > 6 else "")
    return (f"{UNREAD_MARK} {what}'s attention projections ({shown}) from their names and shapes (it sets them to "
            f"known values to see the temperature of the attention), so {judged} was not checked. This test is "
            "counted as failed until a TA checks the scale by hand: if your attention divides each head's scores "
            "by sqrt(d_k) before the softmax, ask your TA to restore these points. (Layouts the grader reads: "
            "nn.Linear or nn.MultiheadAttention layers, fused qkv weights, per-head stacks, and one parameter "
            "packing k projections of D x D, flat or not, viewed as (k, D, D), (k, h, D, d_k), (D, k*D) or "
            "(h, k, d_k, D), with their biases after them.)")
