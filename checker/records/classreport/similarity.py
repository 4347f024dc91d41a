"""Code similarity between submissions, the handout's given code left out: copydetect's winnowing.

What it is for: `rank_pairs(codes, given)` ranks the pairs of submissions by how much of their code
they share, and `side_by_side(code_a, code_b, given)` marks the shared passages of one pair (excerpts: a few lines
around each, at most MAX_SHOWN_CHARS a side).

How: copydetect (Lingenfelter's implementation of MOSS's winnowing, Schleimer et al. 2003) turns
each submission's code into pygments tokens with names, strings and comments abstracted away (so
renamed variables and reformatted lines still match), hashes its 25-token k-grams, keeps every
k-gram (window 1, copydetect's default) and drops those that also occur in the given code (the
starter notebook, the README's code: what every student starts from). A pair's `score` is the mean
of the two shares of each file's fingerprinted tokens found in the other (copydetect's two
"similarity" numbers): 1 for two copies, lower for a copy padded with extra code, near 0 for code
that shares only the given parts.

Speed: copydetect compares one pair at a time in Python; 300 submissions are 44,850 pairs. The
pairs are therefore first scored by the number of fingerprints they share (one sparse matrix
product over all submissions, scipy), and only the `top` best of those are compared exactly with
copydetect. The ranking's score is copydetect's for every pair it lists.

What it is not: a reader of submissions (`checker.records.classreport.sources`), nor a verdict: a high
score is a reason for a TA to look, not a finding.
"""

from __future__ import annotations

import io
import logging

__all__ = ["NOISE_TOKENS", "CONTEXT_LINES", "MAX_SHOWN_CHARS", "fingerprint", "given_hashes", "rank_pairs", "side_by_side"]

NOISE_TOKENS = 25
CONTEXT_LINES = 5          # lines shown around each shared passage in the report's side-by-side view
MAX_SHOWN_CHARS = 20_000   # of each side shown (a homework's code is some 10-50 kB: its shared parts fit)
_NAME = "submission.py"  # the name only picks pygments' Python lexer


def _quiet():
    logging.getLogger().setLevel(max(logging.getLogger().level, logging.ERROR))


def fingerprint(code, given=None):
    """copydetect's CodeFingerprint of a text, with `given` hashes (see given_hashes) left out."""
    from copydetect import CodeFingerprint
    return CodeFingerprint(_NAME, NOISE_TOKENS, 1, boilerplate=given, fp=io.StringIO(code))


def given_hashes(texts):
    """The k-gram hashes of the given code (every k-gram, as copydetect's boilerplate)."""
    import numpy as np
    hashes = []
    for text in texts:
        hashes.extend(fingerprint(text).hashes)
    return np.unique(np.array(hashes, dtype=np.int64)) if hashes else np.array([], dtype=np.int64)


def _pair(fa, fb):
    from copydetect import compare_files
    overlap, (sa, sb), slices = compare_files(fa, fb)
    return float(sa), float(sb), int(overlap), slices


def rank_pairs(codes, given_texts=(), *, top=50, progress=None):
    """[{a, b, score, share_a, share_b, shared_tokens}] most similar first (at most `top` pairs).

    codes: {id: code}. Pairs sharing no fingerprint are not listed. progress: a wrapper around an
    iterable (tqdm) or None.
    """
    import numpy as np
    from scipy import sparse
    _quiet()
    given = given_hashes(given_texts)
    ids = sorted(codes)
    wrap = progress or (lambda it, **kw: it)
    prints = {sid: fingerprint(codes[sid], given) for sid in wrap(ids, desc="fingerprints")}
    ids = [sid for sid in ids if prints[sid].hashes]
    if len(ids) < 2:
        return []
    vocab = {}
    rows, cols = [], []
    for i, sid in enumerate(ids):
        for h in prints[sid].hashes:
            rows.append(i)
            cols.append(vocab.setdefault(h, len(vocab)))
    m = sparse.csr_matrix((np.ones(len(rows), dtype=np.float32), (rows, cols)), shape=(len(ids), len(vocab)))
    shared = (m @ m.T).toarray()
    sizes = np.diag(shared).copy()
    estimate = 0.5 * (shared / sizes[:, None] + shared / sizes[None, :])
    iu, ju = np.triu_indices(len(ids), k=1)
    keep = shared[iu, ju] > 0
    iu, ju, est = iu[keep], ju[keep], estimate[iu[keep], ju[keep]]
    order = np.argsort(-est, kind="stable")[: max(int(top), 0) * 2]  # a margin over top: the estimate is rough
    out = []
    for k in wrap(order, desc="pairs"):
        a, b = ids[iu[k]], ids[ju[k]]
        sa, sb, overlap, _slices = _pair(prints[a], prints[b])
        if sa <= 0 and sb <= 0:
            continue
        out.append({"a": a, "b": b, "score": round((sa + sb) / 2, 4), "share_a": round(sa, 4),
                    "share_b": round(sb, 4), "shared_tokens": overlap})
    out.sort(key=lambda r: (-r["score"], r["a"], r["b"]))
    return out[: max(int(top), 0)]


def _shortened(html, max_chars):
    """`html` (escaped text with <mark> tags) cut to about `max_chars` at a line's end, its tags balanced."""
    if len(html) <= max_chars:
        return html
    head = html[:max_chars]
    end = head.rfind("\n")
    head = head[:end] if end > 0 else head
    if head.rfind("<") > head.rfind(">"):  # never half a tag, nor half an entity (no newline is in either)
        head = head[:head.rfind("<")]
    if head.rfind("&") > head.rfind(";"):
        head = head[:head.rfind("&")]
    if head.count("<mark>") > head.count("</mark>"):
        head += "</mark>"
    return head + "\n\n... (the rest of this code is not shown here)"


def side_by_side(code_a, code_b, given_texts=(), *, context_lines=CONTEXT_LINES, max_chars=MAX_SHOWN_CHARS):
    """(html_a, html_b): each code escaped for HTML with the passages it shares with the other in <mark>.

    Excerpts, not whole files: `context_lines` lines around the marked passages (the rest is "..."; -1 shows
    everything) and about `max_chars` characters of each side at most, said where cut, so that a large
    submission does not make a large report. Control and bidi characters in the code are shown as escapes
    (checker.render.escape.for_terminal): a Trojan Source override cannot make the code a TA reads differ from
    the code that was compared.
    """
    from copydetect.utils import highlight_overlap
    from markupsafe import escape

    from checker.render.escape import for_terminal
    _quiet()
    given = given_hashes(given_texts)
    fa, fb = fingerprint(code_a, given), fingerprint(code_b, given)
    _sa, _sb, _overlap, (slices_a, slices_b) = _pair(fa, fb)
    out = []
    for code, slices in ((code_a, slices_a), (code_b, slices_b)):
        if len(slices) == 0 or slices.shape[-1] == 0:
            out.append(_shortened(for_terminal(str(escape(code[:max_chars + 1]))), max_chars))
            continue
        text, _share = highlight_overlap(code, slices.astype(int), "<mark>", "</mark>",
                                         truncate=context_lines, escape_html=True)
        out.append(_shortened(for_terminal(text), max_chars))
    return out[0], out[1]
