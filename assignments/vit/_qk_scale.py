"""Scores that grow with the input's scale as q . k / sqrt(d_k) does (vit, question mhsa): what
test_mhsa_scales_the_scores_by_the_head_width asks of a module that answers as attention at no temperature.

What it is for: with the identity for W^Q, W^K, W^V and W^O and no biases, the scores of a right head are
q_i . k_j / sqrt(d_k) with q = k = the head's features of x, so scaling the input x by c scales every score by c^2:
in each row of the head's attention weights (recovered from its output, which is an average of the head's values:
_recovered_weights) every difference of two log weights is multiplied by exactly c^2, whatever the temperature, a
mask, or which keys a query sees. A module whose q and k are normalised before their dot product (timm's
`qk_norm=True`: a LayerNorm or RMSNorm on each head's q and k; Swin-V2's cosine attention, `F.normalize` and a
logit scale) gives weights that do not change with c at all; one that passes q or k through another function
(a nonlinearity) or clamps the scores gives differences that do not scale by c^2. `qk_scale_failure` reads the
weights at x and at c x in every way the module was set and every head split, and names what was seen where no
reading scales as c^2 and one at least shows it (weights that differ enough to measure). `gain_ways` gives the
extra ways that make a norm inside the module visible: the existing ways zero every small parameter, a norm's
gain too, which makes q = k = 0 and the weights even (nothing to measure).

What it is not: the temperature's fit (test_vit_mhsa_temperature.py: a module right at one scale is right at
every scale, and a wrong temperature keeps the c^2 law), or a test of its own.
"""

import numpy as np

QK_SCALE = 0.5       # the input halved: every q . k a quarter of itself, every log-weight difference too
QK_FLOOR = 5e-3      # weights compared only where at least this at both scales (their log read to ~1e-3)
QK_SIGNAL = 0.5      # a reading shows the law only where its centred log weights at x reach this (root sum square)
QK_MISFIT = 0.2      # ... and follows it where ||l(c x) - c^2 l(x)|| <= this * ||c^2 l(x)||
QK_UNCHANGED = 0.05  # weights whose log differences at c x are within this of those at x (relative) did not change

# the last part of a small parameter's name that makes it a gain (a norm's weight), set to one in gain_ways
_GAIN_NAMES = ("weight", "gamma", "gain", "scale", "g", "w", "alpha")
_BIAS_NAMES = ("bias", "beta", "b", "shift", "offset")


def _is_gain(name):
    last = name.rsplit(".", 1)[-1].lower().strip("_")
    words = [w for w in last.split("_") if w]
    return bool(words) and not any(w in _BIAS_NAMES for w in words) and any(w in _GAIN_NAMES for w in words)


def gain_ways(ways):
    """Each of `ways` (test_vit_mhsa_temperature._identity_weights: {name: value}) with the zeroed parameters
    whose names call them a gain (`q_norm.weight`, `gamma`: _GAIN_NAMES, never a bias) set to one instead, where
    there are such; [] where there are none (a right module has none: no extra forward)."""
    out = []
    for way in ways:
        gains = {n: np.ones_like(v) for n, v in way.items()
                 if isinstance(n, str) and _is_gain(n) and v.size and not np.any(v)}
        if gains:
            out.append({**way, **gains})
    return out


def _centred_logs(a1, a2):
    """The pairs (l1, l2) of centred log weights of the rows of a1 and a2 (h, N, N), over the keys whose weights
    are at least QK_FLOOR in both: l2 = c^2 l1 for attention scaled by c."""
    l1s, l2s = [], []
    for w1, w2 in zip(a1.reshape(-1, a1.shape[-1]), a2.reshape(-1, a2.shape[-1])):
        keep = (w1 >= QK_FLOOR) & (w2 >= QK_FLOOR)
        if keep.sum() < 2:
            continue
        l1, l2 = np.log(w1[keep]), np.log(w2[keep])
        l1s.append(l1 - l1.mean())
        l2s.append(l2 - l2.mean())
    if not l1s:
        return np.zeros(0), np.zeros(0)
    return np.concatenate(l1s), np.concatenate(l2s)


def _reading(a1, a2, c=QK_SCALE):
    """(informative, follows, r) for the weights a1 at x and a2 at c x: whether they show the law at all, whether
    they follow it, and the factor r with l(c x) ~ r l(x) (least squares; c^2 for a right head)."""
    l1, l2 = _centred_logs(a1, a2)
    signal = float(np.sqrt((l1 ** 2).sum()))
    if signal < QK_SIGNAL:
        return False, False, None
    r = float((l1 * l2).sum() / (l1 ** 2).sum())
    misfit = float(np.sqrt(((l2 - c * c * l1) ** 2).sum())) / (c * c * signal)
    return True, misfit <= QK_MISFIT, r


def qk_scale_failure(readings, what, dh, c=QK_SCALE):
    """The failure's message where the weights of a module (readings: (a at x, a at c x), each (h, N, N), one per
    way and head split that recovered both) do not scale as q . k / sqrt(d_k)'s in any reading that shows the law,
    and at least one does, with whether the weights hardly changed (q and k normalised, not a subtler mistake);
    else None."""
    judged = [_reading(a1, a2, c) for a1, a2 in readings]
    shown = [(follows, r) for informative, follows, r in judged if informative]
    if not shown or any(follows for follows, _ in shown):
        return None
    r = min((r for _, r in shown), key=lambda v: abs(v - 1.0))
    k = 1.0 / (c * c)
    unchanged = abs(r - 1.0) <= QK_UNCHANGED
    if unchanged:
        seen = (f"here they stayed as they were (divided by {1.0 / r:.3g}): the weights hardly changed, as if q and k "
                "had no length")
    else:
        seen = f"here they were divided by {1.0 / r:.3g}" if r > 1e-3 else f"here they were multiplied by {r:.3g}"
    return (f"{what}, with its projections set to the identity and its biases to zero, answers as an average of each "
            f"head's values whose weights do not grow with the inputs' scale as softmax(q . k / sqrt(d_k)) does: "
            f"with the input multiplied by {c:g}, every q . k is multiplied by {c * c:g}, so every difference of two "
            f"log weights of a query must be divided by {k:g}, at any temperature; {seen}.\nLikely mistake: the "
            f"scores are not the plain dot product of query and key divided by sqrt(D/num_heads) = sqrt({dh}): q and "
            "k normalised before it (qk-norm: a LayerNorm or RMSNorm on each head's q and k; cosine attention: "
            "`F.normalize` on q and k and a logit scale, as in Swin-V2), or passed through another function (a "
            "nonlinearity, a clamp of the scores) on the way to the softmax. Take the scores as "
            "`q @ k.transpose(-2, -1) / math.sqrt(d_k)` of the projected q and k themselves"), unchanged


__all__ = ["QK_SCALE", "gain_ways", "qk_scale_failure"]
