"""Figures of a whole link matrix, vectorised: each node's median link, the distribution of the
links, the worst links, and medians of blocks of links (node groups: switches, or the cells of
a downsampled heatmap).

Every function reads the condensed array of ``assay.analysis.matrix.linkmatrix`` a block of rows or
a chunk of links at a time, so the temporaries stay a few tens of MB at 10,000 nodes (5·10⁷
links) and nothing is a Python object per link. NaN (not measured) is left out of every figure
and counted.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from assay.analysis.matrix.linkmatrix import CHUNK
from assay.analysis.statistics.outliers import Centre
from assay.condensed import n_links, row_medians, rows_of

ROW_BLOCK = 1 << 22  # links gathered per block of rows (32 MB of indices, 16 MB of float32)
QUANTILES = (1, 5, 25, 75, 95, 99)  # percent; besides min, median and max
HISTOGRAM_BINS = 24


def _rank(sorted_n: int, p: float) -> int:
    """Nearest rank (0-based) of the p-th percentile, as ``assay.analysis.statistics.stats``
    takes it."""
    return max(1, math.ceil(p * sorted_n / 100)) - 1


def measured(values: np.ndarray) -> int:
    return int(values.size - np.count_nonzero(np.isnan(values)))


def link_ranks(m: int, better: str, k: int) -> list[int]:
    """The order statistics a matrix summary reads from the partition that finds its median
    (``robust_centre(ranks=…)``): lowest, highest, the quantiles, and the k-th worst."""
    if m == 0:
        return []
    worst = min(k, m) - 1 if better == "higher" else m - min(k, m)
    return sorted({0, m - 1, worst, *(_rank(m, p) for p in QUANTILES)})


@dataclass
class Distribution:
    """The measured links: how many, how many not measured, quantiles and a histogram."""

    measured: int
    missing: int
    minimum: float
    median: float
    maximum: float
    quantiles: dict[int, float]  # percent -> value (nearest rank)
    edges: list[float]  # histogram bin edges (log-spaced between min and max)
    counts: list[int]


def distribution(values: np.ndarray, c: Centre, bins: int = HISTOGRAM_BINS) -> Distribution:
    """Quantiles (nearest rank; the median the mean of the middle two) from the order
    statistics ``c`` read (:func:`link_ranks`), and a histogram of the measured links with
    log-spaced bins (rates and times are ratio-scale), taken a chunk at a time."""
    m = c.n
    missing = int(values.size - m)
    if m == 0:
        return Distribution(0, missing, math.nan, math.nan, math.nan, {}, [], [])
    lo, hi = c.ranked[0], c.ranked[m - 1]
    quantiles = {p: c.ranked[_rank(m, p)] for p in QUANTILES}
    edges: list[float] = []
    counts = np.zeros(bins, np.int64)
    if lo > 0 and hi > lo:
        span = (math.log10(lo), math.log10(hi))
        edges = np.logspace(*span, bins + 1).tolist()
        width = (span[1] - span[0]) / bins
        for start in range(0, values.size, CHUNK):
            part = values[start : start + CHUNK]
            part = np.log10(part[~np.isnan(part)].astype(float))
            # np.histogram's bins for a range: [lo, lo + w), …, the last one closed
            idx = np.minimum(((part - span[0]) / width).astype(np.int64), bins - 1)
            counts += np.bincount(np.maximum(idx, 0), minlength=bins)
    else:
        edges, counts = [lo, hi], np.array([m])
    return Distribution(m, missing, lo, c.median, hi, quantiles, edges, counts.tolist())


def worst_links(values: np.ndarray, better: str, k: int, c: Centre) -> np.ndarray:
    """The condensed indices of the ``k`` worst measured links (lowest rate, highest time),
    worst first (ties in index order): every link at or past the k-th worst value (read by
    ``c``, :func:`link_ranks`), found a chunk at a time, so no index array per link."""
    if c.n == 0 or k <= 0:
        return np.zeros(0, np.int64)
    cut = c.ranked[min(k, c.n) - 1 if better == "higher" else c.n - min(k, c.n)]
    found = []
    for start in range(0, values.size, CHUNK):
        part = values[start : start + CHUNK]
        hit = part <= cut if better == "higher" else part >= cut
        found.append(np.flatnonzero(hit) + start)
    idx = np.concatenate(found)
    sign = 1.0 if better == "higher" else -1.0
    order = np.lexsort((idx, sign * values[idx].astype(float)))[:k]
    return idx[order]


@dataclass
class Blocks:
    """The links between node groups g and h (g == h: within a group): their median and how
    many were measured, each a G×G symmetric array."""

    median: np.ndarray
    count: np.ndarray


@dataclass
class Rows:
    """What one pass over the matrix's rows gives: each node's median link and how many of its
    N−1 links were measured; with node groups, the blocks between them."""

    medians: np.ndarray  # float64; NaN: a node with no link measured
    counts: np.ndarray
    blocks: Blocks | None = None


def _segment_medians(block: np.ndarray, bounds: np.ndarray, first: int):
    """The median and count of the measured entries of each column segment ``bounds[b]`` to
    ``bounds[b+1]`` of ``block``, for b from ``first`` on: the segments side by side in one
    NaN-padded array, partitioned together wherever they hold as many values (NaN, not
    measured or a node's own place, left out)."""
    g = len(bounds) - 1 - first
    rows = block.shape[0]
    sizes = np.diff(bounds)[first:] * rows
    padded = np.full((g, int(sizes.max(initial=0))), np.nan, block.dtype)
    for s in range(g):
        b = first + s
        padded[s, : sizes[s]] = block[:, bounds[b] : bounds[b + 1]].ravel()
    counts = padded.shape[1] - np.count_nonzero(np.isnan(padded), axis=1)
    medians = np.full(g, np.nan)
    for c in np.unique(counts[counts > 0]).tolist():
        which = np.flatnonzero(counts == c)
        mid = sorted({(c - 1) // 2, c // 2})
        part = np.partition(padded[which], mid, axis=1)  # NaN goes last
        medians[which] = (part[:, mid[0]].astype(float) + part[:, mid[-1]].astype(float)) / 2
    return medians, counts


def row_pass(
    values: np.ndarray,
    n: int,
    groups: Sequence[np.ndarray] | None = None,
    medians: bool = True,
) -> Rows:
    """Each node's median over its measured links (a node whose every link is slow stands out
    even when its links are too many of the total to be outliers one by one) and, with
    ``groups`` (arrays of node indices; a node in none is left out of the blocks), the median
    of the links between every two groups.
    Rows are gathered a block at a time (a group's rows, or ``ROW_BLOCK`` links' worth)."""
    if n_links(n) != values.size:
        raise ValueError("the matrix and its node count disagree")
    if groups is None:
        step = max(1, ROW_BLOCK // max(n, 1))
        chunks = [np.arange(r, min(n, r + step), dtype=np.int64) for r in range(0, n, step)]
        cols = None
    else:
        chunks = [np.asarray(x, np.int64) for x in groups]
        cols = np.concatenate(chunks) if chunks else np.zeros(0, np.int64)
    # a node's median from its group's rows only when the groups hold every node once
    whole_rows = cols is None or (cols.size == n and np.unique(cols).size == n)
    node_med = np.full(n, np.nan)
    node_count = np.zeros(n, np.int64)
    g = len(chunks)
    med = np.full((g, g), np.nan)
    count = np.zeros((g, g), np.int64)
    bounds = np.cumsum([0, *(len(x) for x in chunks)])
    for a, rows in enumerate(chunks):
        block = rows_of(values, n, rows, cols)  # a node's own place NaN: no link
        if whole_rows:
            node_med[rows], node_count[rows] = row_medians(block)
        if groups is None:
            continue
        seg_med, seg_count = _segment_medians(block, bounds, a)
        # within a group each link is there twice ((i, j) and (j, i)): the median of the
        # doubled values is the median of the links; the count is halved
        seg_count[0] //= 2
        med[a, a:] = med[a:, a] = seg_med
        count[a, a:] = count[a:, a] = seg_count
    if not whole_rows:
        alone = row_pass(values, n)
        node_med, node_count = alone.medians, alone.counts
    blocks = Blocks(med, count) if groups is not None else None
    return Rows(node_med, node_count, blocks)


def group_of(n: int, groups: Sequence[np.ndarray]) -> np.ndarray:
    """Each node's group index (−1: in none)."""
    out = np.full(n, -1, np.int64)
    for gi, members in enumerate(groups):
        out[np.asarray(members, np.int64)] = gi
    return out


def block_counts(n: int, groups: Sequence[np.ndarray], i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """How many of the given links (their nodes i, j) fall in each block (G×G, symmetric)."""
    g = len(groups)
    of = group_of(n, groups)
    a, b = of[i], of[j]
    keep = (a >= 0) & (b >= 0)
    lo, hi = np.minimum(a[keep], b[keep]), np.maximum(a[keep], b[keep])
    flat = np.bincount(lo * g + hi, minlength=g * g).reshape(g, g)
    return flat + np.triu(flat, 1).T


def even_groups(n: int, blocks: int) -> list[np.ndarray]:
    """Nodes 0..n−1 in ``blocks`` consecutive groups whose sizes differ by one at most."""
    blocks = max(1, min(blocks, n))
    return [np.asarray(x, np.int64) for x in np.array_split(np.arange(n), blocks)]
