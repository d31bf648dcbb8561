"""A matrix too large to draw link by link (more than 64 nodes), downsampled for its heatmap:
at most ``HEAT_BLOCKS`` cells a side, each the **median** of the links it covers — the typical
link of a block, so a block reads as healthy or not; a single slow link is invisible in a median
(and would make every block look bad as a worst-of-block), so the blocks holding a named
outlier link are boxed and the cells holding a named node marked instead.

The cells follow the node groups of the matrix's one row pass: the leaf switches when the
topology is known, else consecutive nodes in host order. Past 64 switches a few are joined a
cell, and a cell is the *worst* of the switch-pair medians it covers: each of those is already
the median of some thousand links (no noise to pick), and a median of them would hide a slow
uplink (one switch of four) that the worst shows as a stripe.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from assay.analysis.matrix.matrixstats import Blocks

HEAT_BLOCKS = 64


@dataclass
class Heat:
    """The heatmap of a large matrix: a label and node count per cell, the cells' medians
    (G×G), the blocks holding a named link, the cells holding a named node, and what a cell
    is, in words."""

    labels: list[str]
    sizes: list[int]
    median: np.ndarray
    flagged: list[tuple[int, int]]
    nodes: list[int]
    cells: str


def _range(labels: list[str]) -> str:
    return labels[0] if len(labels) == 1 else f"{labels[0]}–{labels[-1]}"


def heat_of(
    hosts: list[str],
    groups: list[np.ndarray],
    names: list[str] | None,
    blocks: Blocks,
    *,
    named_i: np.ndarray,
    named_j: np.ndarray,
    named_nodes: list[int],
    better: str = "higher",
) -> Heat:
    """The heatmap from the row pass's node ``groups`` and their ``blocks``: ``names`` the
    groups' names (switches; None: consecutive hosts), ``named_i``/``named_j`` the nodes of
    the named links, ``named_nodes`` the named nodes."""
    g = len(groups)
    per = max(1, math.ceil(g / HEAT_BLOCKS))  # groups a cell
    cells = [list(range(s, min(g, s + per))) for s in range(0, g, per)]
    if per == 1:
        median = blocks.median
    else:
        median = np.full((len(cells), len(cells)), np.nan)
        for a, ga in enumerate(cells):
            for b, gb in enumerate(cells[a:], start=a):
                covered = blocks.median[np.ix_(ga, gb)]
                covered = covered[~np.isnan(covered)]
                if covered.size:
                    worst = covered.min() if better == "higher" else covered.max()
                    median[a, b] = median[b, a] = float(worst)
    cell_of = np.full(len(hosts), -1, np.int64)
    for c, members in enumerate(cells):
        for gi in members:
            cell_of[groups[gi]] = c
    a, b = cell_of[named_i], cell_of[named_j]
    ok = (a >= 0) & (b >= 0)
    flagged = sorted({(int(min(x, y)), int(max(x, y))) for x, y in zip(a[ok], b[ok], strict=True)})
    if names is None:
        ends = [(hosts[int(groups[c[0]][0])], hosts[int(groups[c[-1]][-1])]) for c in cells]
        labels = [first if first == last else f"{first}–{last}" for first, last in ends]
        what = "consecutive nodes in host order; each cell the median of its block of links"
    elif per == 1:
        labels = list(names)
        what = "leaf switches; each cell the median link between two switches (within one)"
    else:
        labels = [_range([names[gi] for gi in cell]) for cell in cells]
        what = (
            f"{per} leaf switches a cell; each cell the worst of the switch-pair medians it covers"
        )
    sizes = [int(sum(len(groups[gi]) for gi in cell)) for cell in cells]
    nodes = sorted({int(cell_of[x]) for x in named_nodes if cell_of[x] >= 0})
    return Heat(labels, sizes, median, flagged, nodes, what)
