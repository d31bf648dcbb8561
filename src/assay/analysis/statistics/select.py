"""Exact order statistics of a large float32 array without copying it: radix buckets.

The k-th smallest of 5·10⁷ links by ``np.partition`` needs a 200 MB copy (the matrix is not
to be reordered) and a pass that moves every value. For non-negative float32 the bit pattern,
read as an unsigned integer, sorts as the value does; so one pass counts the values per bucket
of the pattern's top ``BITS`` bits (a bucket spans a factor of 2^(1/2048), 0.03 %), the counts
say which bucket holds each wanted rank and where in it, and a second pass collects just those
buckets' values — a few hundred thousand for a healthy matrix — to sort. The same values as a
partition would give, read a chunk at a time from any function of the array (the MAD's
deviations are computed per chunk, never stored).

NaN (not measured) sorts past every number in this order, so ranks below the count of
measured values never reach it. A negative value would sort after the positives: callers use
this only for arrays with none (``robust_centre`` checks).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np

BITS = 20
SHIFT = 32 - BITS


def order_stats(chunks: Callable[[], Iterator[np.ndarray]], ranks: Sequence[int]) -> list[float]:
    """The values at 0-based ``ranks`` (ascending order) of the float32 values ``chunks()``
    yields (called twice: the same values in the same order each time, none negative)."""
    hist = np.zeros(1 << BITS, np.int64)
    for part in chunks():
        hist += np.bincount(part.view(np.uint32) >> SHIFT, minlength=1 << BITS)
    ends = np.cumsum(hist)
    buckets = np.searchsorted(ends, np.asarray(ranks), side="right")
    starts = ends[buckets] - hist[buckets]
    wanted = np.zeros(1 << BITS, bool)
    wanted[buckets] = True
    found: dict[int, list[np.ndarray]] = {int(b): [] for b in np.unique(buckets)}
    for part in chunks():
        bits = part.view(np.uint32) >> SHIFT
        pick = wanted[bits]
        values, owner = part[pick], bits[pick]
        for b in found:
            found[b].append(values[owner == b])
    ordered = {b: np.sort(np.concatenate(v)) for b, v in found.items()}
    return [
        float(ordered[int(b)][r - int(s)]) for b, s, r in zip(buckets, starts, ranks, strict=True)
    ]
