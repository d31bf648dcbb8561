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
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from assay.errors import ConfigError

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


RULE_KEYS = {"threshold": "a positive number", "link_factor": "a factor of 1 or more",
             "node_factor": "a factor of 1 or more"}  # fmt: skip
RULE_HINT = (
    "e.g. [outliers] threshold = 3.5, link_factor = 1.25 (a link 1.25x worse than the median), "
    "node_factor = 1.1"
)


def outlier_rule(config: Mapping[str, Any]) -> OutlierRule:
    """The rule from the config's ``[outliers]`` table (threshold, link_factor, node_factor);
    the defaults for what it leaves out."""
    table = config.get("outliers") or {}
    if not isinstance(table, Mapping):
        raise ConfigError("[outliers] in the config must be a table", hint=RULE_HINT)
    unknown = sorted(set(table) - set(RULE_KEYS))
    if unknown:
        raise ConfigError(f"[outliers] has unknown key(s): {', '.join(unknown)}", hint=RULE_HINT)
    values = {}
    for key, value in table.items():
        number = not isinstance(value, bool) and isinstance(value, int | float)
        low = 0.0 if key == "threshold" else 1.0
        if not number or not low <= value < math.inf or value == 0:
            raise ConfigError(
                f"[outliers] {key} = {value!r}: expected {RULE_KEYS[key]}", hint=RULE_HINT
            )
        values[key] = float(value)
    return OutlierRule(**values)


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


def worse_factor(value: float, median: float, better: Literal["higher", "lower"]) -> float:
    """How many times worse than the median ``value`` is, at least 1: median/value for a rate,
    value/median for a time (a zero rate, or any time against a zero median: inf)."""
    good, bad = (median, value) if better == "higher" else (value, median)
    if good <= 0:
        return 1.0
    return math.inf if bad <= 0 else max(1.0, good / bad)


def outliers(
    values: Mapping[Hashable, float],
    better: Literal["higher", "lower"],
    threshold: float = THRESHOLD,
    log: bool = True,
    min_factor: float = 1.0,
) -> list[Outlier]:
    """The values beyond ``threshold`` on the bad side and at least ``min_factor`` times worse
    than the median, worst first. Needs 3 values or more."""
    if log and values and all(v > 0 for v in values.values()):
        z = robust_z({k: math.log(v) for k, v in values.items()})
    else:
        z = robust_z(values)
    med = statistics.median(values.values()) if values else 0.0
    sign = -1.0 if better == "higher" else 1.0
    bad = [
        Outlier(k, values[k], z[k], med, threshold, worse_factor(values[k], med, better))
        for k in values
        if sign * z[k] > threshold
    ]
    return sorted((o for o in bad if o.factor >= min_factor), key=lambda o: -abs(o.z))


def node_values(links: Mapping[tuple[str, str], float]) -> dict[str, float]:
    """Each node's median over its links: a node whose every link is slow stands out even
    when its links are too many of the total to be outliers one by one."""
    per: dict[str, list[float]] = {}
    for (a, b), v in links.items():
        per.setdefault(a, []).append(v)
        per.setdefault(b, []).append(v)
    return {n: statistics.median(vs) for n, vs in per.items()}
