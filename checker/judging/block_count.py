"""How many blocks a model builds for each number of layers it is asked for, read from its parameters' names.

What it is for: a model asked for n layers (charlm's `num_layers`, vit's `num_encoder_blocks`) must build n
blocks. Counting parameters cannot see two blocks per layer (`range(2 * n)`: every layer adds the same number,
twice a block's) or a block too many (`range(n + 1)`: with n = 0 the count is not 0, but where a model of 0
layers is no different in kind that goes unseen). The names can: blocks kept in an `nn.ModuleList` or
`nn.Sequential` are named `<list>.<i>.<rest>` (`blocks.0.attn.qkv.weight`, `encoder.layers.2.linear1.bias`), so
a model of n layers holds, under one list, `i` = 0 .. n - 1, each with the same rests and shapes. `copies`
reads, for each list whose indices change with n, how many of its entries are copies of the same large module
(its parameters at least `large` values: an attention's projections, never a LayerNorm); `wrong_counts` says
for which n that number is not n.

Lists that do not change with n (the heads inside a block, `blocks.1.heads.0`), entries of other kinds in the
same list (a flat `[attention, mlp] * n` list, a final LayerNorm at index n of an `nn.Sequential`), blocks kept
as attributes with names of their own (`block_0`) and shared modules (named once) say nothing here: other
tests judge them (each block's own weights, the parameter counts).

What it is not: a reading of the model's code, or of what a block computes; it is pure (it judges the plain
data the worker sends back: names and shapes) and names no mistake of its own.
"""

import math
import re

__all__ = ["copies", "describe", "wrong_counts"]

_INDEX = re.compile(r"^\d+$")


def _lists(params):
    """{list prefix: {index: ((rest, shape), ...)}} of one model's parameters ([{"name", "shape"}, ...])."""
    out = {}
    for p in params:
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            continue
        parts = p["name"].split(".")
        shape = tuple(p.get("shape") or ())
        for i, part in enumerate(parts):
            if _INDEX.match(part) and i + 1 < len(parts):
                entry = out.setdefault(".".join(parts[:i]), {}).setdefault(int(part), [])
                entry.append((".".join(parts[i + 1:]), shape))
    return {k: {i: tuple(sorted(v)) for i, v in idx.items()} for k, idx in out.items()}


def _size(signature):
    return sum(math.prod(shape) for _, shape in signature)


def copies(params_by_n, large):
    """{n: (the largest number of copies of one large module in a list whose indices change with n, that list's
    prefix)}, for each n whose parameters are given ({n: [{"name", "shape"}, ...] or None}); {} where no list
    changes with n."""
    lists = {n: _lists(p) for n, p in params_by_n.items() if p is not None}
    growing = set()
    for prefix in {k for got in lists.values() for k in got}:
        seen = [set(got[prefix]) for got in lists.values() if prefix in got]
        if len(seen) >= 2 and any(s != seen[0] for s in seen):
            growing.add(prefix)
    if not growing:
        return {}
    out = {}
    for n, got in lists.items():
        best = (0, None)
        for prefix in sorted(growing):
            counts = {}
            for sig in got.get(prefix, {}).values():
                if _size(sig) >= large:
                    counts[sig] = counts.get(sig, 0) + 1
            if counts and max(counts.values()) > best[0]:
                best = (max(counts.values()), prefix)
        out[n] = best
    return out


def wrong_counts(params_by_n, large):
    """[(n, blocks, list prefix)] for each n whose model holds another number of copies of its block than n, in
    order of n; [] where every n holds n (or where the names show no list of blocks)."""
    got = copies(params_by_n, large)
    if not any(b for b, _ in got.values()):
        return []
    prefix = next(p for b, p in got.values() if p is not None)
    return [(n, b, p or prefix) for n, (b, p) in sorted(got.items()) if b != n]


def describe(wrong, model_name, arg):
    """The failure's first lines for wrong_counts' [(n, blocks, list)]: `model_name(n)` names the model built
    with n (`CharTransformer(..., num_layers=1)`), `arg` the argument (`num_layers`)."""
    n, b, prefix = wrong[0]
    if b == 0:
        held = f"holds no block (no {prefix}.<i> of the same layers as with more {arg} in its parameters' names)"
    else:
        names = f"{prefix}.0 to {prefix}.{b - 1}" if b > 1 else f"{prefix}.0"
        held = f"holds {b} block{'s' if b != 1 else ''} of the same layers ({names} in its parameters' names)"
    others = "".join(f"; with {arg}={k} it holds {c}" for k, c, _ in wrong[1:3])
    return f"{model_name(n)} {held}, not {n}{others}: {arg} is the number of blocks itself."
