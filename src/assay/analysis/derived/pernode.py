"""Per-node figures of a cluster run (STREAM triad, DGEMM) and the nodes that stand apart.

On Slurm, STREAM and DGEMM run once per node (``placement = per-node``), each sample carrying
its host. A node's figure is its best sample of the metric (STREAM's own convention: the best
rate over its repetitions; DGEMM's largest matrix reaches the highest rate); slow nodes are
named by the same robust z-score as the all-pairs links (``assay.analysis.statistics.outliers``),
when also at least ``rule.node_factor`` worse than the median node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from assay.analysis.statistics.outliers import Outlier, OutlierRule, outliers
from assay.analysis.statistics.stats import Figure

METRICS = {"memory.triad": "STREAM triad", "compute.dgemm": "DGEMM"}


@dataclass
class PerNode:
    metric: str
    label: str
    better: str
    values: dict[str, float]  # host -> figure
    outliers: list[Outlier] = field(default_factory=list)


def slow_nodes(values: dict[str, float], better: str, rule: OutlierRule) -> list[Outlier]:
    """The nodes whose figure is an outlier and at least ``rule.node_factor`` worse."""
    return outliers(values, better, rule.threshold, min_factor=rule.node_factor)  # type: ignore[arg-type]


def per_node(figures: list[Figure], rule: OutlierRule | None = None) -> list[PerNode]:
    """From the figures folded per host (``Folded.by_host``): each holds one node's values."""
    out = []
    for metric, label in METRICS.items():
        values: dict[str, float] = {}
        better = "higher"
        for f in figures:
            s = f.sample
            hosts = s.params.get("hosts")
            if (
                s.metric != metric
                or s.params.get("placement") != "per-node"
                or s.params.get("scope", "node") != "node"
                or not isinstance(hosts, list)
                or len(hosts) != 1
            ):
                continue
            better = s.better
            host = str(hosts[0])
            pick = max if better == "higher" else min
            best = pick(f.values or (s.value,))
            values[host] = pick(values.get(host, best), best)
        if len(values) >= 2:
            out.append(
                PerNode(
                    metric, label, better, values, slow_nodes(values, better, rule or OutlierRule())
                )
            )
    return out
