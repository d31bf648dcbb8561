"""How much a figure varied, told robustly where the data allow it, and named.

The coefficient of variation (stddev / mean) is not robust: one stray iteration of 6 ms among
10,000 of 0.4 µs makes it 5,000 % although 99 % of the iterations lie within 30 % of the
median. Two measures replace it:

* **p99 spread** = (p99 − median) / median, over the iterations a tool timed, where it stored a
  99th percentile of at least 100 of them (assay's p2p and memory-latency probes, perftest,
  fio). Fewer than 1 % stray iterations cannot move it. For a time it is the slow tail; for a
  rate, the fast one (no low percentile is stored), which still tells how tightly the
  iterations sat around the median.
* **range** = (max − min) / median (the mean where no median is given), everywhere else: over
  a figure's repetitions when it was repeated, over a handful of iterations (STREAM's 9 timed
  ones: of fewer than 100 values p99 *is* the maximum, by nearest rank), or from tools that
  give only min / max / mean (IMB, OSU ``-f``, IOR). Every value counts, so a stray one shows
  in full: with few values no tail can be told from a stray, and the reader is told which
  measure it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from assay.model import Stats

SpreadKind = Literal["p99", "range"]

# Iterations needed before p99 is not simply the largest value (nearest rank: ceil(0.99 n) < n).
P99_MIN_N = 100

# How each kind is computed, as the report's notes name it.
FORMULA: dict[str, str] = {
    "p99": "(p99 − median)/median",
    "range": "(max − min)/median",
}


@dataclass(frozen=True)
class RobustSpread:
    value: float  # a fraction: 0.12 is 12 %
    kind: SpreadKind


def robust_spread(stats: Stats) -> RobustSpread | None:
    """The p99 spread of ``stats`` where it is defined (see the module docstring), else the
    range; None when neither can be read."""
    if stats.median and stats.p99 is not None and stats.n >= P99_MIN_N:
        return RobustSpread(abs(stats.p99 - stats.median) / abs(stats.median), "p99")
    centre = stats.median or stats.mean
    if stats.min is None or stats.max is None or not centre:
        return None
    return RobustSpread(abs(stats.max - stats.min) / abs(centre), "range")
