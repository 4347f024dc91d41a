"""How the temperature test sets a one-layer CharTransformer's parameters (trusted side): from their names and
shapes only, the values that make its logits a fixed function of the temperature of its attention
(`_temperature_ways`), and the same with the queries' and keys' projections zero (`_uniform`).

What it is for: test_model_attention_scaled_by_the_head_width (_temperature.py) judges any parameter layout a
student may choose (HOMEWORK: "so is any parameter layout"): square projections, a fused qkv (3D, D) in q, k,
v order or head by head, a fused to_kv (2D, D) beside a to_q, per-head layers numbered by their name (q, k, v
apart, or fused per head as Karpathy's `Head` with one `Linear(n_embd, 3 * head_size)`), stacks (h, D, D/h) /
(h, D/h, D), einsum kernels (D, h, D/h) / (h, D/h, D) (a Keras-style EinsumDense), and their biases, 1-D or
per head (h, D/h); each also as the weight of a Conv1d / Conv2d of kernel size 1, a Linear with trailing
singleton axes ((3D, D, 1) or (3D, D, 1, 1)); and one parameter packing k of the projections (q, k, v and the
output's), flat or of another shape, with their biases after them or not, read through each natural factorisation
of it (checker.judging.packed_layouts: (k, D, D), (k, h, D, D/h), (D, k D), ...), one way each. A layout it cannot
read is said so, by name and shape (`_unread`), so that the test can say why it did not judge the temperature.

What it is not: a test, or code that runs the student's module (it only computes values to set).
"""

import re

import numpy as np

from checker.judging.packed_layouts import MAX_WAYS, combined, packed_readings, projection_sized

_MLP_NAME = re.compile(r"mlp|ffw?d?|feed|fc|dense|linear[12]", re.I)
# a fused projection of the keys and the values (lucidrains' `to_kv`, `kv_proj`, `W_kv`): k first, then v
_KV_NAME = re.compile(r"(^|[._])(to_?|w_?)?kv(_?proj)?([._]|$)", re.I)
# a projection's name that says it makes the queries or the keys (q_proj, query, W_k, to_k, heads.0.key, ...)
_QK_NAME = re.compile(r"(^|[._])(q|k|query|key|queries|keys|w_?q|w_?k|q_?proj|k_?proj|to_?q|to_?k)"
                      r"(_?(weight|proj(_weight)?))?([._]|$)", re.I)


def _module_name(name):
    return name.rsplit(".", 1)[0] if name.endswith((".weight", ".bias")) else name


def _head_index(name, h):
    """The head a per-head parameter belongs to: the last number of its name (`blocks.0.heads.1.qkv.weight`: 1),
    or None where there is none below h (a run of 5,000 digits is none)."""
    head = re.findall(r"(?<!\d)\d{1,6}(?!\d)", name)
    return int(head[-1]) if head and 0 <= int(head[-1]) < h else None


def _temperature_ways(m, cfg, E, P, ones):
    """(ways, why): the ways to set a one-layer CharTransformer so that its output is a fixed function of the
    temperature of its attention, that its parameters' names and shapes allow, each {name: value}: the token
    embedding and the output layer (both (vocab_size, d_model), or the head (d_model, vocab_size) used as
    x @ W) set to `E`, a learned positional embedding (block_size, d_model) to `P`, the attention's projections
    to the identity (the layouts the module's docstring lists), every bias to zero, the norms' weights (`ones`:
    the 1-D parameters that are all ones) to one, and the MLP (its (H, D) and (D, H) layers) to zero, so that it
    adds nothing. A (D, D) layer is read as attention, or, in a second way, as the MLP's where its name says so;
    a (2D, D) one as a fused to_kv where its name says kv, else as the MLP's.

    Each way comes as (values, uniform): `uniform` is the same with the queries' or keys' projections set to
    zero, so that every score is 0 and every position averages the ones it sees evenly, whatever the temperature,
    or None where no projection can be told to be one. `why` is "" where ways were found, else what the grader
    could not read (for the test's skip message); `left` (the third item) lists the parameters left as they are,
    "name (shape)"."""
    ways, why, left, _ = _read(m, cfg, E, P, ones)
    return ways, why, left


def _unread(m, cfg):
    """(why, names): what keeps the grader from knowing the model's attention layout from its parameters' names and
    shapes: `why` where it sets no way at all (else ""), and the parameters that may be the attention's
    projections (projection_sized: a whole number of D x D/h blocks, never a table of positions or a bias) that
    it left as they are or read only from their size (packed), "`name` (shape)"."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    ways, why, left, guessed = _read(m, cfg, np.zeros((V, D), np.float32), np.zeros((bs, D), np.float32), set())
    sized = {f"`{p['name']}` {_without_trailing_ones(p['shape'])}" for p in m.params
             if isinstance(p.get("name"), str) and projection_sized(_without_trailing_ones(p["shape"]), D, h)}
    return why, [n for n in left if n in sized] + guessed


def _read(m, cfg, E, P, ones):
    """_temperature_ways's (ways, why, left), and the parameters read as packed projections (`_packed`), each
    "`name` (shape)", whose layout is a guess from their size."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    dh, eye = D // h, np.eye(D, dtype=np.float32)
    by_head = np.concatenate([eye[i * dh:(i + 1) * dh] for i in range(h) for _ in range(3)])
    values, fused, fused_kv, square_mlp, per_head, left = {}, [], [], [], {}, []
    packed = {}  # name: [(values, copies)], its packed readings (checker.judging.packed_layouts)
    stored = {}  # name: the shape the module holds, where it has trailing singleton axes (read without them)
    for p in m.params:
        name, shape = p.get("name"), tuple(p.get("shape", ()))
        if not isinstance(name, str):
            return [], "a parameter without a name", [], []
        core = _without_trailing_ones(shape)
        if core != shape:
            stored[name], shape = shape, core
        if shape == (V, D):
            values[name] = E
        elif shape == (D, V):
            values[name] = np.ascontiguousarray(E.T)
        elif shape in ((bs, D), (1, bs, D)):
            values[name] = P.reshape(shape)
        elif shape == (D, D):
            values[name] = eye
            if _MLP_NAME.search(_module_name(name)):
                square_mlp.append(name)
        elif shape == (3 * D, D):
            values[name] = np.concatenate([eye, eye, eye])
            fused.append((name, False))
        elif shape == (D, 3 * D):
            values[name] = np.concatenate([eye, eye, eye], axis=1)
            fused.append((name, True))
        elif shape in ((2 * D, D), (D, 2 * D)) and _KV_NAME.search(_module_name(name)):
            values[name] = np.concatenate([eye, eye], axis=0 if shape == (2 * D, D) else 1)
            fused_kv.append(name)
        elif shape == (h, D, dh):
            values[name] = np.stack([eye[:, i * dh:(i + 1) * dh] for i in range(h)])
        elif shape == (h, dh, D):
            values[name] = np.stack([eye[i * dh:(i + 1) * dh] for i in range(h)])
        elif shape == (D, h, dh):  # an einsum kernel "btd,dhk->bhtk": feature i * dh + k is head i's k
            values[name] = eye.reshape(D, h, dh)
        elif shape in ((dh, D), (D, dh), (3 * dh, D), (D, 3 * dh)):
            head = _head_index(name, h)
            if head is None:
                return [], (f"`{name}` {tuple(shape)} looks like one head's projection, but its name holds no head "
                            f"number below num_heads = {h}"), [], []
            per_head.setdefault(head, []).append(name)
            rows = eye[head * dh:(head + 1) * dh]                                       # (dh, D)
            if shape[0] == 3 * dh or shape[1] == 3 * dh:  # one head's fused q, k, v (chunk(3, dim=-1))
                rows = np.concatenate([rows, rows, rows])
            values[name] = rows if shape[0] in (dh, 3 * dh) else np.ascontiguousarray(rows.T)
        elif len(shape) == 1 and _packed(name, shape, D, h):  # q, k, v (and the output's) flat: read from its size
            packed[name] = _packed(name, shape, D, h)
            values[name] = packed[name][0][0]
        elif len(shape) == 1:
            values[name] = (np.ones if name in ones else np.zeros)(shape, dtype=np.float32)
        elif shape in ((h, dh), (3, h, dh), (2, h, dh)):  # biases per head: (heads, head_dim)
            values[name] = np.zeros(shape, dtype=np.float32)
        elif len(shape) == 2 and D in shape and not set(shape) & {V, bs, dh, 3 * D}:
            values[name] = np.zeros(shape, dtype=np.float32)  # the MLP's (H, D) and (D, H) layers
        elif _packed(name, shape, D, h):  # packed in a shape of its own ((4, D, D), (3, h, D, D/h), ...)
            packed[name] = _packed(name, shape, D, h)
            values[name] = packed[name][0][0]
        else:
            left.append(f"`{name}` {tuple(shape)}")
    if per_head and sorted(per_head) != list(range(h)):
        return [], (f"per-head parameters were found for the heads {sorted(per_head)} of {h} (numbered by the last "
                    "number of their names)"), left, []
    picks = combined({n: len(r) for n, r in packed.items()}, MAX_WAYS)  # one way a reading of the packed ones
    ways = [{**values, **{n: packed[n][k][0] for n, k in pick.items()}} for pick in picks]
    copies = [{n: packed[n][k][1] for n, k in pick.items()} for pick in picks]
    if fused and h > 1:
        ways.append({**ways[0], **{n: (np.ascontiguousarray(by_head.T) if rows_last else by_head)
                                   for n, rows_last in fused}})
        copies.append(copies[0])
    if square_mlp:
        ways += [{**w, **{n: np.zeros((D, D), dtype=np.float32) for n in square_mlp}} for w in list(ways)]
        copies += list(copies)
    ways = [(w, _uniform(w, cfg, [n for n, _ in fused], fused_kv, square_mlp, c)) for w, c in zip(ways, copies)]
    return ([tuple(None if w is None else _stored(w, stored) for w in way) for way in ways], "", left,
            [f"`{n}` {tuple(stored.get(n, values[n].shape))}" for n in packed])


def _packed(name, shape, D, h):
    """The packed readings of a parameter ([(values, copies)], checker.judging.packed_layouts.packed_readings), one
    head's where the last number of its name numbers a head and its size is one head's, else the whole width's;
    [] where its size is no such packing."""
    head = _head_index(name, h) if h > 1 else None
    return (packed_readings(shape, D, h, head) if head is not None else []) or packed_readings(shape, D, h)


def _without_trailing_ones(shape):
    """`shape` without the trailing singleton axes beyond its first two: a Conv1d / Conv2d of kernel size 1,
    (d_out, d_in, 1) or (d_out, d_in, 1, 1), is a Linear (d_out, d_in) applied at every position (a fused
    qkv `nn.Conv1d(D, 3D, 1)`, guided-diffusion style), read and set as one."""
    shape = tuple(shape)
    while len(shape) > 2 and shape[-1] == 1:
        shape = shape[:-1]
    return shape


def _stored(values, stored):
    """`values` ({name: array}) in the shapes the module holds (`stored`: those with trailing singleton axes)."""
    return {n: (v.reshape(stored[n]) if n in stored else v) for n, v in values.items()}


def _uniform(values, cfg, fused, fused_kv, square_mlp, packed=None):
    """`values` (a way of _temperature_ways) with the queries' or the keys' projections set to zero (either makes
    every score 0), or None where none can be told: a fused (3D, D) or (D, 3D) one's q and k thirds (head by head
    where its value reads it so), a fused to_kv's k half, one head's fused (3D/h, D) q and k thirds, the
    (D, D), (h, D, D/h), (D, h, D/h), (D/h, D) ... ones whose name says query or key, and of a packed one
    (`packed`: {name: which projection each value belongs to}) its first two projections where it packs three
    or four (q, k, v, the output's), its first where it packs two named kv, all of it where it packs one named
    query or key."""
    D, h = cfg[2], cfg[3]
    dh = D // h
    out, zeroed = dict(values), 0
    for name, v in values.items():
        shape = v.shape
        if name in (packed or {}):
            copies = packed[name]
            k = int(copies.max()) + 1
            zero = ((0, 1) if k >= 3 else (0,) if k == 2 and _KV_NAME.search(_module_name(name))
                    else (0,) if k == 1 and _QK_NAME.search(_module_name(name)) else ())
            if zero:
                out[name] = np.where(np.isin(copies, zero), np.float32(0), v).astype(np.float32)
                zeroed += 1
        elif name in fused or name in fused_kv or shape in ((3 * dh, D), (D, 3 * dh)):
            out_first = shape in ((3 * D, D), (2 * D, D), (3 * dh, D))
            rows = (v if out_first else v.T).copy()                                   # the outputs first
            if name in fused_kv:
                blocks = [(0, D)]                                                             # k, then v
            elif name not in fused:
                blocks = [(0, 2 * dh)]                                                        # one head's q, k, v
            elif np.array_equal(rows[:D], np.eye(D)):
                blocks = [(0, 2 * D)]
            else:
                blocks = [(3 * dh * i, 3 * dh * i + 2 * dh) for i in range(h)]
            for a, b in blocks:
                rows[a:b] = 0
            out[name] = np.ascontiguousarray(rows if out_first else rows.T)
            zeroed += 1
        elif (shape in ((D, D), (h, D, dh), (h, dh, D), (D, h, dh), (dh, D), (D, dh)) and name not in square_mlp
              and _QK_NAME.search(name.rsplit(".", 1)[0] if name.endswith(".weight") else name)):
            out[name] = np.zeros_like(v)
            zeroed += 1
    return out if zeroed else None


__all__ = [n for n in dir() if not n.startswith("__")]
