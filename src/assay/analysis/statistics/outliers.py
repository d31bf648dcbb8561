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

The z-score says how far a value is from the others in units of *their* spread, not whether the
difference matters. When healthy values agree closely (links measured one at a time, nodes of
one model) the MAD is tiny: on the test cluster a node whose median link was 2.6 % off scored
z = 36, and a healthy link 12 % slow (1.14x) in one run z = -6.5. So a value is also called out only
when it is at least ``min_factor`` times worse than the median (statistically *and* practically
apart): 1.25x for links (a healthy link measured alone here was 1.14x below the median of its
run, while the faults worth a call halve a link or worse: a lane down, a lower speed
negotiated), 1.10x for a node's own figure (STREAM, DGEMM: the memory-domain flag's 10 %).
Both, and the z threshold, are the user's to set (``[outliers]`` in the config: a fabric whose
links repeat within 1 % can ask for a smaller factor; a noisy one, or a test machine, more).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Collection, Hashable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from assay.analysis.statistics.select import order_stats
from assay.config.schema import ConfigTable, Factor, Positive, Section, validate_section

THRESHOLD = 3.5
LINK_MIN_FACTOR = 1.25  # a link (or a node's median link) at least 1.25x worse than the median
NODE_MIN_FACTOR = 1.10  # a node's STREAM or DGEMM at least 10 % below the median
MAD_SCALE = 0.6745
MEANAD_SCALE = 1.2533


@dataclass(frozen=True)
class Outlier:
    key: Hashable  # a link (host, host) or a host
    value: float
    z: float
    median: float
    threshold: float
    factor: float  # how many times worse than the median (>= 1)


@dataclass(frozen=True)
class OutlierRule:
    """When a link or node is called out: |z| above ``threshold`` and at least the factor
    times worse than the median (links and a node's median link; a node's own figure)."""

    threshold: float = THRESHOLD
    link_factor: float = LINK_MIN_FACTOR
    node_factor: float = NODE_MIN_FACTOR


class OutliersTable(ConfigTable):
    """``[outliers]``: when a link or a node is called out."""

    threshold: Annotated[Positive, Field(le=1000)] = Field(
        THRESHOLD, description="the robust z-score a value must pass"
    )
    link_factor: Factor = Field(
        LINK_MIN_FACTOR, description="how many times worse than the median a link must be"
    )
    node_factor: Factor = Field(
        NODE_MIN_FACTOR, description="how many times worse than the median a node must be"
    )


SECTION = Section("outliers", OutliersTable)
RULE_KEYS = tuple(OutliersTable.model_fields)


def outlier_rule(config: Mapping[str, Any]) -> OutlierRule:
    """The rule from the config's ``[outliers]`` table (threshold, link_factor, node_factor),
    checked by its declaration; the defaults for what it leaves out."""
    values = validate_section(SECTION, config.get("outliers"), "config")
    return OutlierRule(**{k: float(v) for k, v in values.items()})


@dataclass(frozen=True)
class Centre:
    """Where a set of values sits and how far they spread, robustly: what a value's modified
    z-score is measured against. ``centre`` and the spread are of the scored values (ln x when
    ``log``); ``median`` is the median of the values themselves (what a report quotes, and
    what the factor is taken against). ``spread`` is the MAD, or the mean absolute deviation
    when the MAD is 0 (``by_mad`` False); 0: every value is the median, no z-score."""

    median: float
    centre: float
    spread: float
    by_mad: bool
    log: bool
    n: int  # values it was taken over (NaN, not measured, left out)
    ranked: dict[int, float] = field(default_factory=dict)  # order statistics asked for


def _scored(x: np.ndarray, log: bool) -> np.ndarray:
    return np.log(x) if log else x


def _median(x: np.ndarray, partitioned: bool = False) -> float:
    """The median of a 1-D array it may reorder (np.partition in place: no copy); with
    ``partitioned`` the array already holds its middle order statistics in place."""
    n = x.size
    upper = n // 2
    if not partitioned:
        x.partition(upper if n % 2 else (upper - 1, upper))
    if n % 2:
        return float(x[upper])
    # (a + b) / 2, as statistics.median takes it
    return (float(x[upper - 1]) + float(x[upper])) / 2


def robust_centre(values: np.ndarray, log: bool = True, ranks: Collection[int] = ()) -> Centre:
    """The median and robust spread of ``values`` (a 1-D array; NaN = not measured, left out).

    ``log``: scored on ln x when every value is positive (else on x, as a rate of 0 has no
    log). Works on one copy of the measured values, reordered in place: a 5·10⁷-link matrix
    of float32 needs 200 MB beside it, never a Python object per value. ``ranks``: order
    statistics (0-based ranks among the measured values) to read on the way, from the same
    partition (``Centre.ranked``: the quantiles and the worst links of a matrix). The
    arithmetic is :func:`robust_z`'s (which calls it), in the array's own precision."""
    if values.dtype == np.float32 and values.size > BUCKETED and not (values < 0).any():
        return _centre_bucketed(values, log, ranks)
    if values.dtype.kind != "f":
        valid = values.astype(float)
    elif np.isnan(values).any():
        valid = values[~np.isnan(values)]
    else:
        valid = values.copy()  # a plain copy: 10x faster than a masked one
    n = int(valid.size)
    if n == 0:
        return Centre(math.nan, math.nan, 0.0, True, False, 0)
    middle = {(n - 1) // 2, n // 2}
    kth = sorted(middle | {r for r in ranks if 0 <= r < n})
    valid.partition(kth)
    ranked = {r: float(valid[r]) for r in ranks if 0 <= r < n}
    median = _median(valid, partitioned=True)
    use_log = bool(log and valid.min() > 0)
    if use_log:
        np.log(valid, out=valid)
        centre = _median(valid, partitioned=True)  # ln is monotonic: the partition holds
    else:
        centre = median
    np.subtract(valid, valid.dtype.type(centre), out=valid)
    np.abs(valid, out=valid)
    mad = _median(valid)
    if mad > 0:
        return Centre(median, centre, mad, True, use_log, n, ranked)
    # more than half the values equal: the mean absolute deviation (math.fsum: exact)
    mean_ad = math.fsum(valid.astype(float)) / n if n < 1 << 20 else float(valid.mean(dtype=float))
    return Centre(median, centre, mean_ad, False, use_log, n, ranked)


BUCKETED = 1 << 22  # float32 arrays longer than this: order statistics without a copy


def _centre_bucketed(values: np.ndarray, log: bool, ranks: Collection[int]) -> Centre:
    """:func:`robust_centre` of a large float32 array with no negative value, without copying
    it: each order statistic by radix buckets (``assay.analysis.statistics.select``), the deviations
    from the centre computed a chunk at a time. The same arithmetic, in float32 as there."""

    def chunks() -> Iterator[np.ndarray]:
        for start in range(0, values.size, CHUNK):
            yield values[start : start + CHUNK]

    n = int(values.size - sum(np.count_nonzero(np.isnan(c)) for c in chunks()))
    if n == 0:
        return Centre(math.nan, math.nan, 0.0, True, False, 0)
    middle = sorted({(n - 1) // 2, n // 2})
    asked = sorted({0, *middle, *(r for r in ranks if 0 <= r < n)})
    stats = dict(zip(asked, order_stats(chunks, asked), strict=True))
    ranked = {r: stats[r] for r in ranks if 0 <= r < n}
    median = (stats[middle[0]] + stats[middle[-1]]) / 2
    use_log = bool(log and stats[0] > 0)
    if use_log:
        logs = np.log(np.array([stats[middle[0]], stats[middle[-1]]], np.float32))
        centre = (float(logs[0]) + float(logs[-1])) / 2
    else:
        centre = median
    at = np.float32(centre)

    def deviations() -> Iterator[np.ndarray]:
        for part in chunks():
            yield np.abs((np.log(part) if use_log else part) - at)

    mid = order_stats(deviations, middle)
    mad = (mid[0] + mid[-1]) / 2
    if mad > 0:
        return Centre(median, centre, mad, True, use_log, n, ranked)
    mean_ad = sum(float(np.nansum(d, dtype=float)) for d in deviations()) / n
    return Centre(median, centre, mean_ad, False, use_log, n, ranked)


def z_scores(values: np.ndarray, c: Centre) -> np.ndarray:
    """The modified z-score of each value against ``c`` (0 where the spread is 0; NaN stays
    NaN): 0.6745·(s − centre)/MAD, or (s − centre)/(1.2533·mean AD) when the MAD is 0."""
    if c.n < 3 or c.spread == 0:
        return np.where(np.isnan(values), np.nan, 0.0)
    s = _scored(values.astype(float, copy=False), c.log)
    if c.by_mad:
        return MAD_SCALE * (s - c.centre) / c.spread
    return (s - c.centre) / (MEANAD_SCALE * c.spread)


def worse_factors(values: np.ndarray, median: float, better: str) -> np.ndarray:
    """:func:`worse_factor` of every value (float64), for an array."""
    v = values.astype(float, copy=False)
    with np.errstate(divide="ignore", invalid="ignore"):
        if better == "higher":
            if median <= 0:
                return np.ones_like(v)
            return np.where(v <= 0, math.inf, np.maximum(1.0, median / v))
        if median <= 0:
            return np.where(v <= 0, 1.0, math.inf)
        return np.where(v <= 0, 1.0, np.maximum(1.0, v / median))


CHUNK = 1 << 20  # values scored at a time: 8 MB of float64 temporaries, whatever the matrix


def _candidates_cut(c: Centre, better: str, threshold: float) -> float:
    """A value past which (on the bad side) a z-score cannot pass ``threshold``, loosened by
    a relative 10⁻⁴ so that rounding never drops one: only the values past it are scored."""
    scale = c.spread / MAD_SCALE if c.by_mad else MEANAD_SCALE * c.spread
    edge = c.centre - threshold * scale if better == "higher" else c.centre + threshold * scale
    cut = math.exp(edge) if c.log else edge
    loosen = 1e-4 * abs(cut) + 1e-300
    return cut + loosen if better == "higher" else cut - loosen


def flagged(
    values: np.ndarray,
    c: Centre,
    better: str,
    threshold: float = THRESHOLD,
    min_factor: float = 1.0,
) -> np.ndarray:
    """Indices (int64, ascending) of the values that the rule calls out against ``c``: z
    beyond ``threshold`` on the bad side *and* at least ``min_factor`` times worse than the
    median. A chunk at a time, and only the values past a cut the z-score needs are scored
    (``_candidates_cut``), so a 5·10⁷-value array costs no 5·10⁷ temporaries."""
    if c.n < 3 or c.spread == 0:
        return np.zeros(0, np.int64)
    sign = -1.0 if better == "higher" else 1.0
    try:
        cut = _candidates_cut(c, better, threshold)
    except OverflowError:
        cut = math.inf if better == "higher" else -math.inf
    found = []
    for start in range(0, values.size, CHUNK):
        part = values[start : start + CHUNK]
        with np.errstate(invalid="ignore"):
            idx = np.flatnonzero(part < cut if better == "higher" else part > cut)
            bad = sign * z_scores(part[idx], c) > threshold
        idx = idx[bad]
        if min_factor > 1.0:
            idx = idx[worse_factors(part[idx], c.median, better) >= min_factor]
        found.append(idx + start)
    return np.concatenate(found) if found else np.zeros(0, np.int64)


def robust_z(values: Mapping[Hashable, float]) -> dict[Hashable, float]:
    """The modified z-score of every value (0 for all when the spread is 0)."""
    xs = np.fromiter(values.values(), float, len(values))
    if len(xs) < 3:
        return dict.fromkeys(values, 0.0)
    z = z_scores(xs, robust_centre(xs, log=False))
    return dict(zip(values, (float(v) for v in z), strict=True))


def worse_factor(value: float, median: float, better: Literal["higher", "lower"]) -> float:
    """How many times worse than the median ``value`` is, at least 1: median/value for a rate,
    value/median for a time (a zero rate, or any time against a zero median: inf)."""
    good, bad = (median, value) if better == "higher" else (value, median)
    if good <= 0:
        return 1.0
    return math.inf if bad <= 0 else max(1.0, good / bad)


def outliers_of(
    values: np.ndarray,
    better: Literal["higher", "lower"],
    threshold: float = THRESHOLD,
    log: bool = True,
    min_factor: float = 1.0,
    c: Centre | None = None,
) -> tuple[Centre, np.ndarray, np.ndarray]:
    """The rule on an array: its centre, and the indices of the values called out with their
    z-scores, worst first (ties in index order). NaN is not measured: never an outlier, and
    not counted in the median."""
    c = c or robust_centre(values, log)
    idx = flagged(values, c, better, threshold, min_factor)
    z = z_scores(values[idx], c)
    order = np.argsort(-np.abs(z), kind="stable")
    return c, idx[order], z[order]


def outliers(
    values: Mapping[Hashable, float],
    better: Literal["higher", "lower"],
    threshold: float = THRESHOLD,
    log: bool = True,
    min_factor: float = 1.0,
) -> list[Outlier]:
    """The values beyond ``threshold`` on the bad side and at least ``min_factor`` times worse
    than the median, worst first. Needs 3 values or more. (:func:`outliers_of` on the values
    as an array: one rule for a dict of a few links and a matrix of millions.)"""
    keys = list(values)
    xs = np.fromiter(values.values(), float, len(keys))
    c, idx, z = outliers_of(xs, better, threshold, log, min_factor)
    return [
        Outlier(
            keys[i],
            float(xs[i]),
            float(zi),
            c.median,
            threshold,
            worse_factor(float(xs[i]), c.median, better),
        )
        for i, zi in zip(idx.tolist(), z.tolist(), strict=True)
    ]


def node_values(links: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """Each node's median over its links: a node whose every link is slow stands out even
    when its links are too many of the total to be outliers one by one."""
    per: dict[str, list[float]] = {}
    for (a, b), v in links.items():
        per.setdefault(a, []).append(v)
        per.setdefault(b, []).append(v)
    return {n: statistics.median(vs) for n, vs in per.items()}
