"""Outliers by robust z-score: which links or nodes stand apart from the rest.

The modified z-score of Iglewicz and Hoaglin (1993):

    M_i = 0.6745 * (x_i - median(x)) / MAD,   MAD = median(|x_i - median(x)|)

0.6745 is the 0.75 quantile of the standard normal, so M is on the scale of an ordinary z for
normal data, but one slow link cannot drag the median and MAD the way it drags a mean and a
standard deviation. A point is an outlier when |M_i| > 3.5 (their recommended threshold), and
only on the bad side: a low bandwidth, a high latency. When more than half the values are
equal the MAD is 0; then the mean absolute deviation is used, scaled by 1.2533 (sqrt(pi/2),
which makes it estimate sigma for normal data). When that is 0 too every value is the median
and nothing is an outlier.

Rates and times are ratio-scale (a link at half speed is as far off as one at double), and
their spread grows with their size, so by default the score is taken on log(x): a link is
judged by how many times slower it is, not by how many MB/s it lacks. On a noisy cluster the
linear score can miss a link 50x slower when the healthy links vary by 30%; the log score
does not. ``log=False`` gives the textbook linear score.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Literal

THRESHOLD = 3.5
MAD_SCALE = 0.6745
MEANAD_SCALE = 1.2533


@dataclass(frozen=True)
class Outlier:
    key: Hashable  # a link (host, host) or a host
    value: float
    z: float
    median: float
    threshold: float


def robust_z(values: Mapping[Hashable, float]) -> dict[Hashable, float]:
    """The modified z-score of every value (0 for all when the spread is 0)."""
    xs = list(values.values())
    if len(xs) < 3:
        return dict.fromkeys(values, 0.0)
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    if mad > 0:
        return {k: MAD_SCALE * (v - med) / mad for k, v in values.items()}
    mean_ad = statistics.fmean(abs(x - med) for x in xs)
    if mean_ad == 0:
        return dict.fromkeys(values, 0.0)
    return {k: (v - med) / (MEANAD_SCALE * mean_ad) for k, v in values.items()}


def outliers(
    values: Mapping[Hashable, float],
    better: Literal["higher", "lower"],
    threshold: float = THRESHOLD,
    log: bool = True,
) -> list[Outlier]:
    """The values beyond ``threshold`` on the bad side, worst first. Needs 3 values or more."""
    if log and values and all(v > 0 for v in values.values()):
        z = robust_z({k: math.log(v) for k, v in values.items()})
    else:
        z = robust_z(values)
    med = statistics.median(values.values()) if values else 0.0
    sign = -1.0 if better == "higher" else 1.0
    bad = [Outlier(k, values[k], z[k], med, threshold) for k in values if sign * z[k] > threshold]
    return sorted(bad, key=lambda o: -abs(o.z))


def node_values(links: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """Each node's median over its links: a node whose every link is slow stands out even
    when its links are too many of the total to be outliers one by one."""
    per: dict[str, list[float]] = {}
    for (a, b), v in links.items():
        per.setdefault(a, []).append(v)
        per.setdefault(b, []).append(v)
    return {n: statistics.median(vs) for n, vs in per.items()}
