"""The class report's plots: matplotlib histograms as self-contained SVG data URIs.

What it is for: `histogram_uri(scores, max_points, title)` draws a score distribution with
matplotlib's object-oriented API (a `Figure` of its own, no pyplot state, no GUI backend) and
returns it as a `data:image/svg+xml;base64,...` URI for an <img>: vector graphics that print
sharply, need no network, and keep each plot's SVG ids apart from the others'.

What it is not: a place for numbers (`checker.records.classreport.data`) or for the page (`html`).
"""

from __future__ import annotations

import base64
import io

__all__ = ["histogram_uri", "bins_for"]

_BAR = "#4a6fa5"
_MEAN = "#c0392b"
_MEDIAN = "#27ae60"


def bins_for(max_points, n_scores):
    """Bin edges from 0 to max_points: one per point for small questions, else about 20 bins."""
    import numpy as np
    top = float(max_points) if max_points and max_points > 0 else 1.0
    count = int(top) if top <= 20 and float(top).is_integer() else 20
    return np.linspace(0, top, max(count, 1) + 1)


def histogram_uri(scores, max_points, title, *, width=4.2, height=2.4):
    """An SVG data URI of the histogram of `scores` (0..max_points) with mean and median lines."""
    import statistics

    from matplotlib.figure import Figure
    fig = Figure(figsize=(width, height), dpi=100)
    ax = fig.add_subplot()
    edges = bins_for(max_points, len(scores))
    if scores:
        ax.hist(scores, bins=edges, color=_BAR, edgecolor="white")
        mean, median = statistics.fmean(scores), statistics.median(scores)
        ax.axvline(mean, color=_MEAN, linewidth=1.5, label=f"mean {mean:.1f}")
        ax.axvline(median, color=_MEDIAN, linewidth=1.5, linestyle="--", label=f"median {median:.1f}")
        ax.legend(fontsize=7, frameon=False, loc="upper left")
    else:
        ax.text(0.5, 0.5, "no scores", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlim(edges[0], edges[-1])
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("points", fontsize=8)
    ax.set_ylabel("submissions", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.yaxis.get_major_locator().set_params(integer=True)
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="svg", metadata={"Date": None})
    return "data:image/svg+xml;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
