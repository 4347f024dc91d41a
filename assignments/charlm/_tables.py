"""Which of a CharTransformer's tables an IndexError of its forward comes from (trusted side).

What it is for: a forward that raises `IndexError: index out of range` (an nn.Embedding asked for a row it does
not have) on ids that the token table holds may come from the table indexed by the POSITIONS, sized by another
number than block_size (`nn.Embedding(vocab_size, d_model)` for the positions: right whenever vocab_size >=
block_size, as with tiny Shakespeare's 65 characters and a block of 32). Asked of the same module: a full block
of token 0 (a row every token table has) fails too, and fewer tokens run; the longest input that runs is the
number of rows the positions' table has, named where it is one of the model's sizes or a notebook global.

What it is not: a test, or a judge of the token table (test_model_sizes_come_from_its_arguments names that one
where this finds nothing).
"""

import torch

from checker.errors import GradingFailure, StudentError, StudentTimeout, WorkerCrashed

INDEX_ERROR = "IndexError: index out of range"


def _runs(m, T, seed, device):
    """Whether the module's forward runs on a (1, T) block of token 0."""
    try:
        m.forward([torch.zeros((1, T), dtype=torch.int64, device=device)], seed=seed)
        return True
    except (StudentTimeout, WorkerCrashed):
        raise
    except GradingFailure:
        return False


def positions_table_hint(sub, m, cfg, seed, device="cpu"):
    """The likely mistake where a forward of the module `m` (of cfg) raised an IndexError that comes from a table
    indexed by the positions with fewer than block_size rows, else None: a full block of token 0 fails, one token
    runs, and the longest block of token 0 that runs (found by bisection) is the table's number of rows."""
    V, bs, D, h = cfg[0], cfg[1], cfg[2], cfg[3]
    if bs < 2 or _runs(m, bs, seed, device) or not _runs(m, 1, seed, device):
        return None
    lo, hi = 1, bs  # runs on lo tokens, not on hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if _runs(m, mid, seed, device) else (lo, mid)
    named = [n for n, v in (("vocab_size", V), ("d_model", D), ("num_heads", h)) if v == lo]
    if not named:
        try:
            named = [f"your notebook's `{n}`" for n, v in sorted(sub.top_level_ints().items()) if v == lo]
        except GradingFailure:
            named = []
    rows = f"{lo} rows ({' or '.join(named)})" if named else f"{lo} rows"
    return (f"the table indexed by the positions (the learned position embedding) has {rows}, fewer than "
            f"block_size = {bs}: a block of token 0 runs on up to {lo} tokens and fails on {lo + 1}, whatever the "
            "ids. It needs one row per position 0..block_size-1: `nn.Embedding(block_size, d_model)`, indexed with "
            "`torch.arange(T, device=idx.device)` (the token table is the one sized by vocab_size)")


def retold_with_table_hint(sub, m, cfg, seed, e, device="cpu"):
    """`e`, a failure of m's forward, with positions_table_hint added where it is an IndexError that carries no
    hint yet and the hint fits; else `e` itself."""
    if (not isinstance(e, StudentError) or INDEX_ERROR not in (e.message or "")
            or e.hinted):
        return e
    hint = positions_table_hint(sub, m, cfg, seed, device)
    return e if hint is None else e.retold(f"{e.message}\nLikely mistake: {hint}.")


__all__ = ["INDEX_ERROR", "positions_table_hint", "retold_with_table_hint"]
