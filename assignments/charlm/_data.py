"""The data question's helpers (trusted side): build_vocab's and make_blocks' checks, and the words for their
answers that are wrong in a known way (a vocabulary in first-appearance order or returned as (itos, stoi),
non-overlapping, chunked or random windows, y holding only the next token).

What it is for: test_charlm_data.py's tests judge through these; split from _common.py by what it is for.

What it is not: a place that runs student code (everything goes through `sub`), nor a reference (the answers
come from _answers.py and the reference through `ref`).
"""

from ._common import *  # noqa: F401,F403 - the handout's data, hint texts and helpers

# data ------------------------------------------------------------------


def _as_index(v):
    """A Python int from an id that came back as an int or numpy int, a 0-d array or a 1-element array."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, np.integer)):  # a numpy integer as well: np.int64(2) indexes as 2 does
        return int(v)
    if isinstance(v, np.ndarray) and v.size == 1 and v.dtype.kind in "iu":
        return int(v.reshape(()))
    return None


def _ids_to_chars(d):
    """Is the dict `d` an id -> character table (the keys exactly 0..V-1, the values one-character strings)?"""
    keys = [_as_index(k) for k in d]
    return (bool(d) and None not in keys and sorted(keys) == list(range(len(d)))
            and all(isinstance(v, str) and len(v) == 1 for v in d.values()))


# text where the vocabulary's usual mistakes show: capitals beside their lower case, characters outside ASCII,
# a tab only at its start and a newline only at its end (text.strip() drops them)
REVEALING = "\tDie Katze, the END: 3 \u00d7 4 = 12 \u20ac f\u00fcr \u00dcber-Fl\u00fc\u00dfe!\n"


def _check_vocab(got, text):
    chars, want, first_seen = A.vocab(text)
    what = f"build_vocab({text[:30]!r}{'...' if len(text) > 30 else ''})"
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        _fail(f"{what}: expected a pair (stoi, itos), got {type(got).__name__}"
              + (f" of length {len(got)}" if isinstance(got, (tuple, list)) else ""))
    stoi, itos = got
    if not isinstance(stoi, dict):
        _fail(f"{what}: stoi should be a dict character -> id, got {type(stoi).__name__}")
    stoi_n = {k: _as_index(v) for k, v in stoi.items()}
    if stoi_n != want and _ids_to_chars(stoi):  # an itos where stoi belongs: say so, not "a global?"
        looks = sorted(stoi.items(), key=lambda kv: _as_index(kv[0]))[:4]
        msg = (f"{what}: stoi has the ids as its keys and the characters as its values "
               f"({', '.join(f'{_as_index(k)}: {v!r}' for k, v in looks)}{', ...' if len(stoi) > 4 else ''}): "
               "that is itos, id -> character")
        if isinstance(itos, dict) and {k: _as_index(v) for k, v in itos.items()} == want:
            msg += ("\nLikely mistake: the pair is returned in the wrong order, (itos, stoi); build_vocab returns "
                    "(stoi, itos), stoi first: `return stoi, itos`, which is how the caller unpacks it "
                    "(`stoi, itos = build_vocab(text)`).")
        else:
            msg += ("\nLikely mistake: stoi is built the wrong way round; stoi maps each character to its id "
                    "({ch: i for i, ch in enumerate(chars)}), and comes first in the pair (stoi, itos).")
        _fail(msg)
    if stoi_n != want:
        missing = [c for c in chars if c not in stoi_n]
        extra = [c for c in stoi_n if c not in want]
        msg = f"{what}: stoi is not the mapping of the sorted unique characters to 0..{len(chars) - 1}"
        if missing or extra:
            msg += f"\nmissing characters: {missing[:10]!r}; characters not in the text: {extra[:10]!r}"
            if missing and all(c != c.lower() for c in missing) and all(c.lower() in stoi_n for c in missing):
                msg += ("\nLikely mistake: the text was changed before its characters were taken (`text.lower()`: "
                        "every missing character is an upper-case letter whose lower case is there); the "
                        "vocabulary is every character of the text as it is.")
            elif missing and not extra and all(not c.isascii() for c in missing):
                msg += ("\nLikely mistake: the characters outside ASCII were left out (a filter such as "
                        "`c.isascii()`, `ord(c) < 128` or `.encode('ascii', 'ignore')`): the vocabulary is every "
                        "character of the text, whatever it is.")
            elif missing and not extra and all(c.isspace() for c in missing) and \
                    all(c not in text.strip() for c in missing):
                msg += ("\nLikely mistake: the text was stripped (`text.strip()`): the white space at its ends is "
                        "part of the text, and its characters are in the vocabulary.")
            else:
                msg += ("\nLikely mistake: the vocabulary is built from something other than the `text` argument "
                        "(a global?).")
        else:
            wrong = [(c, stoi_n[c], want[c]) for c in chars if stoi_n[c] != want[c]][:5]
            msg += "\n" + ", ".join(f"{c!r} -> {g} (expected {w})" for c, g, w in wrong)
            by_id = sorted(stoi_n, key=stoi_n.get)
            if stoi_n == first_seen:
                msg += "\nLikely mistake: ids follow the order of first appearance; sort the characters first."
            elif by_id == list(chars) and all(isinstance(stoi_n[c], int) for c in chars) \
                    and len({stoi_n[c] - want[c] for c in chars}) == 1:
                start = stoi_n[chars[0]]
                msg += (f"\nLikely mistake: the characters are in sorted order, but their ids start at {start}, not 0 "
                        "(`enumerate(chars, start=1)`, or an id kept free for padding): ids are 0 .. V-1, the rows "
                        "of nn.Embedding(vocab_size, d_model).")
            elif [c.lower() for c in by_id] == sorted(c.lower() for c in by_id):
                msg += ("\nLikely mistake: the characters are sorted without regard to case (a key such as "
                        "str.lower or str.casefold); sort the characters themselves, `sorted(set(text))`: by code "
                        "point, every upper-case letter before the lower-case ones.")
            elif sorted(stoi_n.values()) == list(range(len(chars))):
                msg += ("\nLikely mistake: each character has its own id, but not in sorted order: a set has no "
                        "fixed order (list(set(text)) differs between runs); use sorted(set(text)).")
        _fail(msg)
    if isinstance(itos, dict) and any(_as_index(k) is None for k in itos):  # not keyed by ids: say what it is
        _check_itos_keys(itos, chars, want, what)
    if isinstance(itos, dict):
        itos_n = {_as_index(k): v for k, v in itos.items()}
    elif isinstance(itos, (list, tuple, str)):
        itos_n = dict(enumerate(itos))
    else:
        _fail(f"{what}: itos should be a dict id -> character (or a list), got {type(itos).__name__}")
    if itos_n != {i: c for c, i in want.items()}:
        bad = [i for i in range(len(chars)) if itos_n.get(i) != chars[i]][:5]
        _fail(f"{what}: itos is not the inverse of stoi: "
              + ", ".join(f"itos[{i}] = {itos_n.get(i)!r} (expected {chars[i]!r})" for i in bad)
              + (f"; it has {len(itos_n)} entries for {len(chars)} characters" if len(itos_n) != len(chars) else ""))


ITOS_BY_IDS = "itos maps each id 0 .. V-1 to its character, stoi turned round: `{i: ch for i, ch in enumerate(chars)}`"


def _check_itos_keys(itos, chars, want, what):
    """Fails an itos dict some of whose keys are not ids, saying what its keys are: the characters, with the ids
    as values (a copy of stoi, itos mapping characters to ids), or something else (counted as they are)."""
    odd = [k for k in itos if _as_index(k) is None]
    if all(isinstance(k, str) for k in itos) and {k: _as_index(v) for k, v in itos.items()} == want:
        c = chars[0]
        _fail(f"{what}: itos maps the characters to their ids, as stoi does (itos[{c!r}] = {want[c]}, and no "
              f"itos[0]): it is a copy of stoi, not its inverse.\nLikely mistake: the comprehension's pair is "
              f"written the wrong way round (`{{ch: i for i, ch in enumerate(chars)}}`); {ITOS_BY_IDS}.")
    _fail(f"{what}: itos should map the ids 0 .. {len(chars) - 1} to the characters, but {len(odd)} of its "
          f"{len(itos)} keys are not ids: " + ", ".join(f"{k!r}" for k in odd[:5]) + (" ..." if len(odd) > 5 else "")
          + f" ({ITOS_BY_IDS})")


BLOCKS_EVERY_WINDOW = ("make_blocks returns every window, the overlapping ones included: row i of x is "
                       "data[i : i + block_size] for each i = 0 .. L - block_size - 1, so L - block_size rows")
BLOCKS_STRIDE_HINT = ("non-overlapping windows, one every block_size tokens (data[i*block_size : (i+1)*block_size]): "
                      + BLOCKS_EVERY_WINDOW)
BLOCKS_CHUNKED_HINT = ("the data is cut into non-overlapping chunks of block_size + 1 tokens "
                       "(data[:n*(block_size+1)].view(n, block_size+1), x and y taken from each chunk): "
                       + BLOCKS_EVERY_WINDOW)
BLOCKS_RANDOM_HINT = ("the windows start at random positions (torch.randint, as nanoGPT's get_batch samples a "
                      "training batch) or come in a shuffled order: " + BLOCKS_EVERY_WINDOW + ", each once and in "
                      "this order (sample or shuffle batches of these rows later, when training)")
BLOCKS_NEXT_ONLY_HINT = ("y holds only the one token after each window, shape (L - block_size,): y is a whole "
                         "window too, row i of y is data[i + 1 : i + block_size + 1], the next token at every "
                         "position of x (the model predicts one at each position)")
BLOCKS_GATE = "make_blocks(data of length 10, block_size=3)"  # where non-overlapping or random windows show


def _check_blocks(sub, close, rng, L, bs):
    """make_blocks on random data of length L: a test with one window (L = block_size + 1) or block_size 1,
    where non-overlapping or random windows are right too, earns only if the function is right on
    BLOCKS_GATE as well (edge_gate.only_if_right_elsewhere), both asked in one round trip."""
    gated = L - bs == 1 or bs == 1
    with sub.together(chain=True) as t:
        edge = asked(_ask_blocks(t, sub, close, rng, L, bs))
        other = asked(_ask_blocks(t, sub, close, rng, 10, 3)) if gated else None
    edge()
    if other:
        only_if_right_elsewhere("make_blocks", "a single window" if L - bs == 1 else "block_size 1",
                                BLOCKS_GATE, other)


def _window_starts(x, windows):
    """Where each row of `x` starts among `windows` (every window of the data, in order), or None when a
    row is not one of them, or is more than one (a short window's values repeat: block_size 1)."""
    try:
        x = np.asarray(x)
    except (TypeError, ValueError):
        return None
    if x.ndim != 2 or x.shape[1] != windows.shape[1] or not len(x) or x.dtype.kind not in "iuf":
        return None
    hits = (x[:, None, :] == windows[None, :, :]).all(-1)
    return [int(h.argmax()) for h in hits] if (hits.sum(-1) == 1).all() else None


def _windows_hint(got_x, windows, bs):
    """The Likely-mistake words for an x whose rows are all windows of the data but the wrong ones: a stride
    of block_size or block_size + 1, random or shuffled starts; None otherwise."""
    starts = _window_starts(got_x, windows)
    if starts is None or len(starts) < 2:
        return None
    steps = set(np.diff(starts).tolist())
    if starts[0] == 0 and steps == {bs}:
        return BLOCKS_STRIDE_HINT
    if starts[0] == 0 and steps == {bs + 1}:
        return BLOCKS_CHUNKED_HINT
    if min(steps) <= 0:
        return BLOCKS_RANDOM_HINT
    return None


def _ask_blocks(asker, sub, close, rng, L, bs):
    """make_blocks judged on random data, a generator (checker.running.together.asked) over `asker`, the
    handle `sub` or a Together of it."""
    data_np = rng.integers(0, 20, size=L)
    data = torch.tensor(data_np, dtype=torch.int64)
    what = f"make_blocks(data of length {L}, block_size={bs})"
    try:
        got = yield asker.call("make_blocks", data, bs)
    except StudentError as e:
        if "non-empty" not in e.message and "need at least one array" not in e.message:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: no window was made, and L - block_size = {L - bs} windows "
                       "were due: the windows start at 0, 1, ..., L - block_size - 1 "
                       "(range(len(data) - block_size)).") from None
    kinds = list(sub.last_dtypes)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        _fail(f"{what}: expected a pair (x, y), got {type(got).__name__}")
    x_want, y_want, one_too_many = A.blocks(data_np, bs)
    m = A.block_mistakes(data_np, bs)
    try:
        close(got[0], x_want, what=f"{what}: x", hints=[
            ("one window too many: the last window needs a next token for y, so there are L - block_size windows",
             one_too_many),
            ("one window too few: the windows start at 0, 1, ..., L - block_size - 1, so there are L - block_size "
             "of them (range(len(data) - block_size))", x_want[:-1]),
            *[(BLOCKS_STRIDE_HINT, x) for x in m["stride"]], (BLOCKS_CHUNKED_HINT, m["chunked"]),
            ("x and y are swapped: x starts one token ahead; row i of x is data[i : i + block_size] and row i "
             "of y is data[i + 1 : i + block_size + 1], the targets", y_want)])
    except GradingFailure as e:
        hint = None if e.hinted else _windows_hint(got[0], one_too_many, bs)
        if hint is None:
            raise
        raise e.retold(f"{e.message}\nLikely mistake: {hint}.") from None
    close(got[1], y_want, what=f"{what}: y", hints=[
        ("y is x itself: y must be the next token at every position (x shifted one ahead)", x_want),
        (BLOCKS_NEXT_ONLY_HINT, m["next_only"]),
        ("y is x rolled along each row (torch.roll(x, -1, dims=1)): every row's last target wraps around to the "
         "row's own first token; it must be the token after the window, data[i + block_size]: take y from the "
         "data (data[i + 1 : i + block_size + 1]), not from x", np.roll(x_want, -1, axis=1))])
    if any(d != "int64" for d in kinds):  # F.cross_entropy takes int64 targets only: int32 ones raise in training
        _fail(f"{what}: x and y should be LongTensors (int64) of token ids, came back as {kinds}; "
              "F.cross_entropy refuses other targets: make them with dtype=torch.long (or .long())")


# every name, underscored helpers included: test_charlm_data.py starts `from ._data import *`
__all__ = [n for n in dir() if not n.startswith("__")]
