"""The all-pairs matrix: one figure per node pair, and the links and nodes that stand out.

Each pair's figure is the one the published tables lead with: p2p latency at the smallest
message size measured (OSU's 0 or 1 byte; what a small MPI message costs), and p2p bandwidth
at the largest size (what a link carries when it is full). Samples of one pair measured with
several MPIs are kept apart (one matrix per MPI).

Outliers: robust z-score (``assay.analysis.outliers``) over every link, and over every node's
median link, on the bad side only (low bandwidth, high latency), and at least
``rule.link_factor`` times worse than the median. A pair measured several times (``--repeat``)
counts by its median, so one disturbed repetition does not make a link an outlier; the largest
spread of a link's repetitions is kept beside, to compare with the differences between links.
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

from assay.analysis.outliers import Outlier, OutlierRule, node_values, outliers
from assay.analysis.stats import Figure
from assay.model import Sample

METRICS = ("p2p.latency", "p2p.bandwidth")


@dataclass
class PairMatrix:
    metric: str
    mpi: str
    size: int  # message size (bytes) the figure is taken at
    better: str
    hosts: list[str]
    links: dict[tuple[str, str], float]  # (a, b) with a < b
    link_outliers: list[Outlier] = field(default_factory=list)
    node_outliers: list[Outlier] = field(default_factory=list)
    rule: OutlierRule = field(default_factory=OutlierRule)
    concurrent: int = 1  # most pairs measured at the same time as one of these (a round's worth)
    repetitions: tuple[int, int] = (1, 1)  # fewest, most measurements of a link (it: their median)
    # the link whose repetitions spread most, and that spread (max/min)
    widest: tuple[tuple[str, str], float] | None = None

    def value(self, a: str, b: str) -> float | None:
        return self.links.get((min(a, b), max(a, b)))


def _pair(sample: Sample) -> tuple[str, str] | None:
    hosts = sample.params.get("hosts")
    if not isinstance(hosts, list) or len(hosts) != 2 or hosts[0] == hosts[1]:
        return None
    a, b = sorted(str(h) for h in hosts)
    return a, b


def _concurrent(group: list[Figure]) -> int:
    """Most pairs measured at once: recorded per sample (``concurrent_pairs``); runs stored
    before it was recorded measured a whole round at once, so their rounds' sizes tell."""
    params = [f.sample.params for f in group]
    recorded = [int(p["concurrent_pairs"]) for p in params if "concurrent_pairs" in p]
    if recorded:
        return max(recorded)
    per_round: dict[object, set[tuple[str, str]]] = defaultdict(set)
    for f in group:
        pair = _pair(f.sample)
        if pair:
            per_round[f.sample.params.get("round")].add(pair)
    return max((len(p) for p in per_round.values()), default=1)


def _named(values: dict, better: str, rule: OutlierRule) -> list[Outlier]:
    """Links (or nodes by their median link) that are outliers and ``rule.link_factor`` worse."""
    return outliers(values, better, rule.threshold, min_factor=rule.link_factor)  # type: ignore[arg-type]


def matrices(figures: list[Figure], rule: OutlierRule | None = None) -> list[PairMatrix]:
    """One matrix per (metric, MPI) from the figures of an all-pairs run, folded per pair
    (``Folded.by_host``: each figure holds the values of one pair's repetitions)."""
    chosen = [
        f
        for f in figures
        if f.sample.params.get("placement") == "all-pairs"
        and f.sample.metric in METRICS
        and "size" in f.sample.params
    ]
    by_key: dict[tuple[str, str], list[Figure]] = defaultdict(list)
    for f in chosen:
        p = f.sample.params
        by_key[(f.sample.metric, str(p.get("mpi_label") or p.get("mpi") or "MPI"))].append(f)
    rule = rule or OutlierRule()
    out = []
    for (metric, mpi), group in sorted(by_key.items()):
        sizes = {int(f.sample.params["size"]) for f in group}
        size = min(sizes) if metric == "p2p.latency" else max(sizes)
        per_pair: dict[tuple[str, str], list[float]] = defaultdict(list)
        for f in group:
            pair = _pair(f.sample)
            if pair and int(f.sample.params["size"]) == size:
                per_pair[pair].extend(f.values or (f.sample.value,))
        # Repetitions of a pair: their median, as the report folds repetitions.
        links = {p: statistics.median(v) for p, v in per_pair.items()}
        if not links:
            continue
        spreads = {p: max(v) / min(v) for p, v in per_pair.items() if len(v) > 1 and min(v) > 0}
        widest = max(spreads.items(), key=lambda kv: kv[1]) if spreads else None
        better = group[0].sample.better
        out.append(
            PairMatrix(
                metric=metric,
                mpi=mpi,
                size=size,
                better=better,
                hosts=sorted({h for p in links for h in p}),
                links=links,
                link_outliers=_named(links, better, rule),
                node_outliers=_named(node_values(links), better, rule),
                rule=rule,
                concurrent=_concurrent(group),
                repetitions=(
                    min(len(v) for v in per_pair.values()),
                    max(len(v) for v in per_pair.values()),
                ),
                widest=widest,
            )
        )
    return out
