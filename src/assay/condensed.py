"""The all-pairs matrix's layout in memory, the one every stage shares (the probe file's reader
in parsers/, the probe's per-node samples, the analysis): a condensed upper triangle in scipy's
``squareform`` order. For N nodes the N(N-1)/2 links (i < j) are one 1-D array, link (i, j) at

    k(i, j) = N·i − i(i+1)/2 + (j − i − 1)        for 0 ≤ i < j < N

NaN = not measured. 10,000 nodes are 5·10⁷ links: these functions take and give numpy arrays
of indices, never a Python object per link.
"""

from __future__ import annotations

import math

import numpy as np


def n_links(n: int) -> int:
    return n * (n - 1) // 2


def n_nodes(links: int) -> int:
    """N from N(N-1)/2 (a ValueError when ``links`` is not such a number)."""
    n = (1 + math.isqrt(1 + 8 * links)) // 2
    if n_links(n) != links:
        raise ValueError(f"{links} is not N(N-1)/2 for any N")
    return max(n, 1)


def link_index(n: int, i: np.ndarray | int, j: np.ndarray | int) -> np.ndarray | int:
    """k(i, j) of the condensed order (arrays or ints; i > j is swapped; i == j is no link and
    gives a meaningless index). Ints give an int, arrays an int64 array.

    The arrays' formula is k = i(2N − 1 − i)/2 + j − i − 1 (the same k; i(2N − 1 − i) is
    always even), computed in place: the file reader takes it of a million records at a time,
    where the five temporaries of the plain expression cost more than the arithmetic."""
    if np.ndim(i) == 0 and np.ndim(j) == 0:
        a, b = (int(i), int(j)) if int(i) < int(j) else (int(j), int(i))
        return n * a - a * (a + 1) // 2 + (b - a - 1)
    a = np.minimum(i, j).astype(np.int64)
    k = (2 * n - 1) - a
    k *= a
    k //= 2
    k += np.maximum(i, j)
    k -= a
    k -= 1
    return k


def link_nodes(n: int, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The inverse of :func:`link_index`: (i, j) with i < j of each condensed index."""
    k = np.asarray(k, np.int64)
    # row i starts at s(i) = N·i − i(i+1)/2; solve s(i) <= k for the largest i (then correct
    # the float estimate by one either way)
    b = 2 * n - 1
    i = np.floor((b - np.sqrt(np.maximum(b * b - 8.0 * k, 0.0))) / 2).astype(np.int64)
    i = np.clip(i, 0, max(n - 2, 0))
    start = n * i - i * (i + 1) // 2
    i = np.where(start > k, i - 1, i)
    start = n * i - i * (i + 1) // 2
    nxt = start + (n - i - 1)
    i = np.where(k >= nxt, i + 1, i)
    start = n * i - i * (i + 1) // 2
    return i, k - start + i + 1


def node_links(n: int, i: int) -> np.ndarray:
    """The condensed indices of node i's N−1 links, in the order of the other node (0..i−1,
    then i+1..N−1): ``values[node_links(n, i)]`` is node i's row of the square matrix."""
    lower = np.arange(i, dtype=np.int64)
    before = n * lower - lower * (lower + 1) // 2 + (i - lower - 1)
    first = n * i - i * (i + 1) // 2
    return np.concatenate([before, np.arange(first, first + n - i - 1, dtype=np.int64)])


def _bases(n: int) -> np.ndarray:
    """base[i] = k(i, i+1) − (i+1): then k(i, j) = base[i] + j for i < j (a row's links are
    consecutive), and k(j, i) = base[j] + i for j < i."""
    i = np.arange(n, dtype=np.int64)
    return n * i - i * (i + 1) // 2 - i - 1


def rows_of(
    values: np.ndarray,
    n: int,
    rows: np.ndarray,
    cols: np.ndarray | None = None,
    diagonal: float = math.nan,
) -> np.ndarray:
    """The dense block ``rows`` × ``cols`` (default: every node, in order) of the symmetric
    matrix, gathered from the condensed ``values``; ``diagonal`` where a row meets itself."""
    base = _bases(n)
    if cols is None or 2 * np.size(cols) >= n:  # most columns: whole rows, then those columns
        block = _whole_rows(values, n, base, np.asarray(rows, np.int64), diagonal)
        return block if cols is None else block.take(np.asarray(cols, np.int64), axis=1)
    cols = np.asarray(cols, np.int64)
    r = np.asarray(rows, np.int64)[:, None]
    c = cols[None, :]
    k = np.where(c < r, base[c] + r, base[r] + c)
    own = c == r
    out = values[np.where(own, 0, k)]
    out[np.broadcast_to(own, out.shape)] = diagonal
    return out


def _whole_rows(
    values: np.ndarray, n: int, base: np.ndarray, rows: np.ndarray, diagonal: float
) -> np.ndarray:
    """Whole rows, row by row: the links to the nodes after a row's node are one slice of
    ``values``, those to the nodes before it one gather. A third of the time of computing
    every link's index (10,000 nodes: 2.2 to 0.7 s; in a permuted column order, 3.4 to
    1.9 s), the same block."""
    out = np.empty((rows.size, n), values.dtype)
    for i, r in enumerate(rows.tolist()):
        out[i, :r] = values[base[:r] + r]
        out[i, r] = diagonal
        out[i, r + 1 :] = values[base[r] + r + 1 : base[r] + n]
    return out


def row_medians(block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each row's median over its measured entries — NaN (not measured, and a node's own place
    from :func:`rows_of`) left out, an even count the mean of the middle two (jsonl.h's and
    numpy's convention) — and how many there were; NaN where none. One np.partition of the
    whole block at the ranks the rows' counts need (a handful: rows differ only where links
    were not measured; NaN sorts last, as in np.sort), never a Python step per row. This is a
    node's median link wherever one is computed: the probe's per-node samples and the report's
    node medians agree."""
    counts = block.shape[1] - np.count_nonzero(np.isnan(block), axis=1)
    low, high = np.maximum((counts - 1) // 2, 0), counts // 2
    width = block.shape[1]
    ranks = np.unique(np.minimum(np.concatenate([low, high]), max(width - 1, 0)))
    if width == 0:
        return np.full(block.shape[0], np.nan), counts
    part = np.partition(block, ranks, axis=1)  # NaN sorts last, past every count's ranks
    lo = np.take_along_axis(part, np.minimum(low, width - 1)[:, None], 1)[:, 0]
    hi = np.take_along_axis(part, np.minimum(high, width - 1)[:, None], 1)[:, 0]
    mid = 0.5 * (lo.astype(np.float64) + hi.astype(np.float64))
    return np.where(counts > 0, mid, np.nan), counts
