"""Name the notebook global that a student's class reads instead of its constructor argument.

What it is for: a mistake seen in real student work (HOMEWORK.md) is code that
reads a notebook global (`block_size = 8`, `vocab_size = 65`) instead of its
argument. It passes every check built with the same sizes as the notebook and
fails, with an error about sizes, when the grader builds other ones. Given
that failure's text, the sizes the grader used and the submission's
top-level ints (`SubmissionHandle.top_level_ints`), `globals_hint` finds the
globals whose value appears in the text but is none of the sizes used, and
words a hint; `naming_globals` adds it to a failing test's message.

The same failures come from a constructor whose arguments are in another order
than the handout's (`__init__(self, vocab_size, d_model, ..., block_size)`):
`order_hint` names that, from the parameter names (`SubmissionHandle.parameters`).

What it is not: proof. The hint is worded as a question, and it is only
added to a failure that has no other "Likely mistake".
"""

import contextlib
import re

from checker.errors import GradingFailure, StudentTimeout, WorkerCrashed

__all__ = ["globals_hint", "order_hint", "naming_globals"]

_NUMBER = re.compile(r"(?<![\w.])\d+(?![\w.])")
_SHAPES = re.compile(r"(\d)x(?=\d)")
# names of the sizes a model is built with, as notebooks spell them (nanoGPT's n_embd, n_head, ...)
_SIZE_WORDS = re.compile(r"block|vocab|embd|embed|model|head|layer|ctx|context|seq|dim|hidden|patch|img|image"
                         r"|class|token|width|depth", re.IGNORECASE)


def globals_hint(top_level, message, sizes):
    """The hint for `message`, or None. `top_level` {name: int} are the submission's globals, `sizes`
    {argument: value} what the grader built the class with."""
    used = {v for v in _ints(sizes.values())}
    # the grader's own arguments as the message names them (`num_layers=4`) are not the student's numbers
    message = re.sub(r"\b[A-Za-z_]\w*=-?\d+", " ", message)
    seen = {int(x) for x in _NUMBER.findall(_SHAPES.sub(r"\1 x ", message))}  # "(64x10 and 20x60)"
    # the value itself, or its square (a (block_size, block_size) mask shows up as "input of size 1024"),
    # or its square times a few channels (a patch of side `PATCH = 4` flattens to 3 * 4 * 4 = 48 numbers)
    channels = {c for c in used if 1 <= c <= 4}
    suspects = [(n, v) for n, v in sorted(top_level.items())
                if v >= 3 and (v in seen or v * v in seen or any(c * v * v in seen for c in channels))
                and v not in used]
    why = "that number (or its square, as in a v x v mask or patch) appears in this error"
    if not suspects and "index out of range" in message and used:
        # an embedding table sized by a smaller global (block_size = 32) indexed with the grader's 37 positions
        suspects = [(n, v) for n, v in sorted(top_level.items())
                    if _SIZE_WORDS.search(n) and 3 <= v < max(used) and v not in used]
        why = "an index ran past the end of a table, which a table of that size would do"
    if not suspects:
        return None
    sizes_like = [(n, v) for n, v in suspects if _SIZE_WORDS.search(n)]
    suspects = sizes_like or suspects  # `block_size = 32` before `batch_size = 32`
    shown = ", ".join(f"`{n} = {v}`" for n, v in suspects[:4])
    built = ", ".join(f"{k}={v}" for k, v in sizes.items())
    return (f"your submission defines {shown} at the top level, and {why}, though the grader built the model "
            f"with {built}: does the class read the notebook's "
            "global instead of its own argument? Keep the argument in __init__ (e.g. `self.block_size = "
            "block_size`) and use that")


def _ints(values):
    """The ints among `values`, and inside tuples and lists among them ((3, 8, 8) gives 3 and 8)."""
    for v in values:
        if type(v) is int:
            yield v
        elif isinstance(v, (tuple, list)):
            yield from _ints(v)


# what students call each size (nanoGPT's n_embd, n_head, n_layer; max_len, ctx_len, depth, ...)
_MEANS = {"vocab_size": r"vocab", "block_size": r"block|ctx|context|seq|len", "d_model": r"model|embd|embed|emb|dim|hidden|width",
          "num_heads": r"head", "num_layers": r"layer|depth|blocks",
          # the vit assignment's names
          "hidden_dim": r"hidden|model|embd|embed|emb|width|^d$|^dim$", "img_shape": r"img|image|shape|size",
          "patch_dims": r"patch", "out_dim": r"out|class|label", "num_encoder_blocks": r"block|layer|depth"}


def order_hint(params, sizes, cls):
    """The hint when the parameter names `params` of `cls` name the arguments of `sizes` (in the handout's
    order) in another order, or None."""
    expected = list(sizes)
    params = [p for p in params or [] if p != "self"][:len(expected)]
    if len(params) < len(expected):
        return None
    meant = []
    for p in params:
        exact = [e for e in expected if e == p]
        fuzzy = [e for e in expected if e in _MEANS and re.search(_MEANS[e], p, re.IGNORECASE)]
        names = exact or fuzzy
        if len(names) != 1:
            return None
        meant.append(names[0])
    if len(set(meant)) != len(expected) or meant == expected:
        return None
    i = next(i for i, (m, e) in enumerate(zip(meant, expected)) if m != e)
    return (f"{cls}.__init__ takes ({', '.join(params)}), but the grader passes the sizes positionally in the "
            f"handout's order, {cls}({', '.join(expected)}): your `{params[i]}` received {expected[i]}="
            f"{sizes[expected[i]]}. Put the arguments in the handout's order")


@contextlib.contextmanager
def naming_globals(sub, sizes, cls=None):
    """Re-raise a failure inside the block with order_hint (for `cls`) or globals_hint added, when
    there is one."""
    try:
        yield
    except GradingFailure as e:
        if isinstance(e, (StudentTimeout, WorkerCrashed)) or e.hinted:
            raise
        hint = None
        if cls is not None:
            try:
                hint = order_hint(sub.parameters(cls), sizes, cls)
            except GradingFailure:
                pass
        if hint is None:
            try:
                top = sub.top_level_ints()
            except GradingFailure:
                top = {}
            hint = globals_hint(top, e.message, sizes)
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None
