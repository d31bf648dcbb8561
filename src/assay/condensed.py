"""The all-pairs matrix's layout in memory, shared by the probe file's reader (store) and the
analysis: a condensed upper triangle in scipy's ``squareform`` order. For N nodes the
N(N-1)/2 links (i < j) are one 1-D array, link (i, j) at

    k(i, j) = N·i − i(i+1)/2 + (j − i − 1)        for 0 ≤ i < j < N
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
    """k(i, j) of the condensed order, for i < j (arrays or ints; i > j is swapped)."""
    a = np.minimum(i, j)
    b = np.maximum(i, j)
    k = n * a - a * (a + 1) // 2 + (b - a - 1)
    return int(k) if np.ndim(k) == 0 else np.asarray(k, np.int64)


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
    """The condensed indices of node i's N−1 links, in the order of the other node."""
    lower = np.arange(i, dtype=np.int64)
    before = n * lower - lower * (lower + 1) // 2 + (i - lower - 1)
    first = n * i - i * (i + 1) // 2
    return np.concatenate([before, np.arange(first, first + n - i - 1, dtype=np.int64)])
