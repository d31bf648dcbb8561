"""Per-domain bandwidth: the vendor's one-line summary, and the domain that lags its peers.

A seed page says "STREAM Triad ~260 GB/s (32-33 GB/s per CCX)": the whole-node figure, then the
range over the L3 domains. The range alone hides *which* domain is low; a domain well below its
peers usually means a missing or slower DIMM, a channel in a lower-speed mode, or memory
allocated on the wrong node, so it is named. Pure functions over plain numbers, and a run's
per-domain STREAM figures derived once (``stream_domains``) for the report's table and plot.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.analysis.statistics.stats import Figure
from assay.vocab import DOMAIN_SCOPES

SLOW_THRESHOLD = 0.10  # a domain more than 10% below its peers' median is flagged

# What one domain of a scope is called in a summary line.
DOMAIN_WORDS = {"l3": "L3 domain", "numa": "NUMA node"}


@dataclass(frozen=True)
class SlowDomain:
    """A domain whose figure is more than ``threshold`` below the median of the others."""

    domain: Hashable
    value: float
    peers_median: float
    shortfall: float  # 1 - value / peers_median: 0.15 means 15% below

    def describe(self) -> str:
        return f"{100 * self.shortfall:.1f}% below the median of its peers"


@dataclass(frozen=True)
class DomainSummary:
    """One scope's figures: the whole node (if measured), the range per domain, the laggards."""

    scope: str
    node: float | None
    low: float
    high: float
    count: int
    slow: list[SlowDomain] = field(default_factory=list)


def slow_domains(
    values: Mapping[Hashable, float], threshold: float = SLOW_THRESHOLD
) -> list[SlowDomain]:
    """Domains more than ``threshold`` below the median of their peers, worst first.

    Each domain is compared with the median of the *others*: with two NUMA nodes at 100 and
    85, the median of all (92.5) would hide the 15% gap; the median of the peer (100) shows
    it. A domain with no peers is never flagged. Higher is better (bandwidth).
    """
    flagged = []
    for domain, value in values.items():
        peers = [v for d, v in values.items() if d != domain]
        if not peers:
            continue
        median = statistics.median(peers)
        if median <= 0:
            continue
        shortfall = 1.0 - value / median
        if shortfall > threshold:
            flagged.append(SlowDomain(domain, value, median, shortfall))
    return sorted(flagged, key=lambda s: -s.shortfall)


def summarize_domains(
    values: Mapping[Hashable, float],
    node: float | None = None,
    scope: str = "l3",
    threshold: float = SLOW_THRESHOLD,
) -> DomainSummary:
    """The node figure, the min-max over the domains and the slow ones, for one scope."""
    if not values:
        raise ValueError("summarize_domains: no per-domain values")
    return DomainSummary(
        scope=scope,
        node=node,
        low=min(values.values()),
        high=max(values.values()),
        count=len(values),
        slow=slow_domains(values, threshold),
    )


def format_gbs(bytes_per_s: float) -> str:
    """Three significant figures in GB/s (10^9 B/s, as STREAM's MB): 260, 32.4, 9.87."""
    gbs = bytes_per_s / 1e9
    if gbs >= 100:
        return f"{gbs:.0f}"
    return f"{gbs:.3g}"


def summary_line(summary: DomainSummary, kernel: str = "Triad", word: str | None = None) -> str:
    """The seed's line: "Triad 260 GB/s (32.1–33.0 GB/s per CCX)".

    ``word`` names one domain ("CCX" on AMD); by default "L3 domain" or "NUMA node". Without a
    whole-node figure the line starts with the range. A single domain gives one value.
    """
    word = word or DOMAIN_WORDS.get(summary.scope, summary.scope)
    low, high = format_gbs(summary.low), format_gbs(summary.high)
    span = low if low == high else f"{low}–{high}"
    per = f"{span} GB/s per {word}"
    if summary.node is None:
        return f"{kernel} {per} ({summary.count} × {word})"
    return f"{kernel} {format_gbs(summary.node)} GB/s ({per})"


# ------------------------------------------------------------------ STREAM per domain, derived


def is_domain_sample(params: Mapping[str, Any]) -> bool:
    """A per-domain STREAM sample; a sample with no scope is a node-wide one (older runs)."""
    return params.get("scope", "node") in DOMAIN_SCOPES


def median_figure(figures: list[Figure]) -> Figure:
    """One figure for one cell. Repetitions normally arrive folded, but params a probe
    measures per run (``loads``, STREAM's ``min_time``) keep the fold from grouping them; then
    the cell shows the median repetition rather than whichever came last."""
    ordered = sorted(figures, key=lambda f: f.sample.value)
    return ordered[(len(ordered) - 1) // 2]


def node_triad(figures: list[Figure]) -> float | None:
    """The whole-node STREAM Triad: of the node-scope runs, the one with the most threads."""
    node = [
        f
        for f in figures
        if f.sample.probe == "stream"
        and f.sample.metric == "memory.triad"
        and not is_domain_sample(f.sample.params)
    ]
    if not node:
        return None
    best = max(node, key=lambda f: (int(f.sample.params.get("threads") or 0), f.sample.value))
    return best.sample.value


@dataclass
class StreamDomains:
    """STREAM per L3 domain / NUMA node, derived once for the report's table and its plot:
    each domain's kernels (the median repetition of each), each scope's summary with the
    slow domains (Triad ``threshold`` below the median of its peers)."""

    kernels: dict[tuple[str, int], dict[str, Figure]]  # (scope, domain) -> kernel -> figure
    summaries: dict[str, DomainSummary]  # scope -> summary (node Triad, range, slow ones)
    threshold: float = SLOW_THRESHOLD

    def slow(self, scope: str, domain: int) -> SlowDomain | None:
        summary = self.summaries.get(scope)
        return next((s for s in summary.slow if s.domain == domain), None) if summary else None

    def triads(self, scope: str) -> dict[int, float]:
        return {
            d: k["triad"].sample.value
            for (s, d), k in self.kernels.items()
            if s == scope and "triad" in k
        }


def stream_domains(
    figures: list[Figure], threshold: float = SLOW_THRESHOLD
) -> StreamDomains | None:
    """The per-domain STREAM figures of a run and their summaries, or None without any."""
    found: dict[tuple[str, int, str], list[Figure]] = defaultdict(list)
    for f in figures:
        p = f.sample.params
        if f.sample.probe == "stream" and is_domain_sample(p) and "domain" in p:
            found[(str(p["scope"]), int(p["domain"]), f.sample.metric.split(".", 1)[1])].append(f)
    if not found:
        return None
    kernels: dict[tuple[str, int], dict[str, Figure]] = defaultdict(dict)
    for (scope, domain, kernel), figs in found.items():
        kernels[(scope, domain)][kernel] = median_figure(figs)
    result = StreamDomains(dict(kernels), {}, threshold)
    node = node_triad(figures)
    for scope in DOMAIN_SCOPES:
        triads = result.triads(scope)
        if triads:
            result.summaries[scope] = summarize_domains(triads, node, scope, threshold)
    return result
