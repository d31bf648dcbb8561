"""The all-pairs matrix: one figure per node pair, and the links and nodes that stand out.

Each pair's figure is the one the published tables lead with: p2p latency at the smallest
message size measured (OSU's 0 or 1 byte; what a small MPI message costs), and p2p bandwidth
at the largest size (what a link carries when it is full). Samples of one pair measured with
several MPIs are kept apart (one matrix per MPI).

A matrix comes either from the all-pairs probe's file (``allpairs.bin``, one per MPI and
sweep, read into a ``LinkMatrix``) or, for runs made before it, from per-pair samples
(:func:`matrices`); both are analysed by :func:`analyse`, on the condensed array of
``assay.analysis.linkmatrix`` — 10,000 nodes are 5·10⁷ links and nothing here is a Python
object per link.

Outliers: robust z-score (``assay.analysis.outliers``) over every link, and over every node's
median link, on the bad side only (low bandwidth, high latency), and at least
``rule.link_factor`` times worse than the median. A pair measured several times (``--repeat``)
counts by its median, so one disturbed repetition does not make a link an outlier; the largest
spread of a link's repetitions is kept beside, to compare with the differences between links.
Flagged links and nodes that were retested are named only when the retests confirm them
(``assay.analysis.confirm``); with a topology, the links of a slow uplink are named as the
uplink (``assay.analysis.topology``).
"""

from __future__ import annotations

import statistics
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

from assay.analysis.confirm import Confirmation, confirm_links, confirm_nodes, sweep_retests
from assay.analysis.linkmatrix import (
    LinkMatrix,
    Retests,
    Spread,
    from_pairs,
    link_index,
    link_nodes,
    node_links,
)
from assay.analysis.matrixstats import (
    Blocks,
    Distribution,
    block_counts,
    distribution,
    even_groups,
    link_ranks,
    measured,
    row_pass,
    worst_links,
)
from assay.analysis.outliers import (
    Centre,
    Outlier,
    OutlierRule,
    outliers_of,
    robust_centre,
    worse_factor,
    z_scores,
)
from assay.analysis.stats import Figure
from assay.analysis.topology import Switches, by_switch
from assay.model import Sample
from assay.system.topology import Topology

METRICS = ("p2p.latency", "p2p.bandwidth")
FULL = 64  # up to this many nodes the report prints the whole matrix
TOP = 20  # links and nodes listed worst first beyond that (with a count of the rest)
HEAT_BLOCKS = 64  # a larger matrix's heatmap: at most this many blocks a side


@dataclass
class Heat:
    """A matrix downsampled for its heatmap: node groups (consecutive hosts), the median
    link of each block, and the blocks holding a named outlier link or a named node."""

    labels: list[str]  # "first–last" host of each group
    sizes: list[int]
    blocks: Blocks
    flagged: list[tuple[int, int]]  # blocks with a named link
    nodes: list[int]  # groups with a named node


@dataclass
class PairMatrix:
    """An analysed all-pairs matrix: what the report shows of it, never its 5·10⁷ links
    (``values`` is kept only up to ``FULL`` nodes, for the whole table and heatmap)."""

    metric: str
    mpi: str
    size: int  # message size (bytes) the figure is taken at
    better: str
    hosts: list[str]
    links: int  # links measured
    missing: int  # links not measured (NaN)
    centre: Centre  # of every measured link
    link_outliers: list[Outlier]  # named: flagged (and confirmed, if retested), worst first
    n_link_outliers: int  # how many are named (link_outliers holds at most TOP beyond FULL)
    node_outliers: list[Outlier]
    rule: OutlierRule = field(default_factory=OutlierRule)
    concurrent: int = 1  # most pairs measured at the same time as one of these (a round's worth)
    repetitions: tuple[int, int] = (1, 1)  # fewest, most measurements of a link (it: their median)
    # the link whose repetitions spread most, and that spread (max/min)
    widest: tuple[tuple[str, str], float] | None = None
    spread_median: float | None = None  # median max/min over the repeated links
    node_medians: np.ndarray = field(default_factory=lambda: np.zeros(0))
    node_counts: np.ndarray = field(default_factory=lambda: np.zeros(0, int))
    node_centre: Centre | None = None
    worst: list[Outlier] = field(default_factory=list)  # the TOP worst links, flagged or not
    distribution: Distribution | None = None
    heat: Heat | None = None
    switches: Switches | None = None
    retested: bool = False  # retest measurements were there to confirm by
    confirmations: dict[object, Confirmation] = field(default_factory=dict)  # by link / host
    not_reproduced: list[Outlier] = field(default_factory=list)  # flagged, not confirmed
    explained: int = 0  # flagged links named as part of a slow uplink instead
    explained_nodes: list[str] = field(default_factory=list)
    node_links: int = 0  # flagged links of a named node, named as the node (beyond FULL)
    notes: list[str] = field(default_factory=list)
    values: np.ndarray | None = None  # condensed; kept up to FULL nodes

    def value(self, a: str, b: str) -> float | None:
        if self.values is None or a == b:
            return None
        lm = LinkMatrix(self.hosts, self.metric, self.better, self.size, self.mpi, self.values)
        return lm.value(a, b)

    @property
    def n(self) -> int:
        return len(self.hosts)


def _outlier(
    key: object, value: float, z: float, c: Centre, rule: OutlierRule, better: str
) -> Outlier:
    return Outlier(key, value, z, c.median, rule.threshold, worse_factor(value, c.median, better))  # type: ignore[arg-type]


def _heat(
    lm: LinkMatrix,
    rows_blocks: Blocks,
    groups: list[np.ndarray],
    named: np.ndarray,
    nodes: list[int],
) -> Heat:
    i, j = link_nodes(lm.n, named)
    counts = block_counts(named, lm.n, groups, i, j)
    flagged = [(int(a), int(b)) for a, b in zip(*np.nonzero(counts), strict=True)]
    of = np.zeros(lm.n, np.int64)
    for g, members in enumerate(groups):
        of[members] = g
    labels = [
        lm.hosts[int(m[0])] if len(m) == 1 else f"{lm.hosts[int(m[0])]}–{lm.hosts[int(m[-1])]}"
        for m in groups
    ]
    return Heat(
        labels, [len(m) for m in groups], rows_blocks, flagged, sorted({int(of[x]) for x in nodes})
    )


def analyse(
    lm: LinkMatrix,
    rule: OutlierRule | None = None,
    topology: Topology | None = None,
    top: int = TOP,
    sweeps: list[np.ndarray] | None = None,
) -> PairMatrix:
    """Everything the report shows of one matrix (see the module), from its condensed array.

    Named links: flagged by the rule, confirmed by their retests when the matrix has retests
    (else flagged alone), not part of a slow uplink or switch pair. Named nodes the same, by
    their median link. ``sweeps``: the sweeps a ``--repeat`` matrix was folded from, which
    confirm its flagged links and nodes when it has no retest rounds."""
    rule = rule or OutlierRule()
    n, values, better = lm.n, lm.values, lm.better
    m = measured(values)
    c, flagged, z = outliers_of(
        values,
        better,
        rule.threshold,
        min_factor=rule.link_factor,  # type: ignore[arg-type]
        c=_centre(values, better, m, top),
    )
    fi, fj = link_nodes(n, flagged)
    groups = even_groups(n, HEAT_BLOCKS) if n > FULL else None
    rows = row_pass(values, n, groups)
    assert rows.medians is not None and rows.counts is not None
    nc, node_idx, node_z = outliers_of(
        rows.medians,
        better,
        rule.threshold,
        min_factor=rule.link_factor,  # type: ignore[arg-type]
    )
    pm = PairMatrix(
        lm.metric,
        lm.mpi,
        lm.size,
        better,
        lm.hosts,
        m,
        int(values.size - m),
        c,
        [],
        0,
        [],
        rule,
        lm.concurrent,
        lm.repetitions,
        None,
        None,
        rows.medians,
        rows.counts,
        nc,
        notes=list(lm.notes),
    )
    if lm.spread is not None:
        pm.widest = (lm.pair(lm.spread.widest), lm.spread.widest_ratio)
        pm.spread_median = lm.spread.median_ratio

    keep = np.ones(flagged.size, bool)
    keep_nodes = np.ones(node_idx.size, bool)
    if not len(lm.retests) and sweeps is not None and len(sweeps) > 1:
        # --repeat without retest rounds: each sweep's own value is a retest
        needed = [flagged, *(node_links(n, k) for k in node_idx.tolist())]
        retests = sweep_retests(sweeps, np.unique(np.concatenate(needed)))
    else:
        retests = lm.retests
    if len(retests):
        pm.retested = True
        links = confirm_links(flagged, retests, c, better, rule)
        nodes = confirm_nodes(node_idx, n, retests, nc, better, rule)
        pm.confirmations = {lm.pair(k): v for k, v in links.items()}
        pm.confirmations |= {lm.hosts[k]: v for k, v in nodes.items()}
        keep = np.array([links[k].status == "confirmed" for k in flagged.tolist()], bool)
        keep_nodes = np.array([nodes[k].status == "confirmed" for k in node_idx.tolist()], bool)
        pm.not_reproduced = [
            _outlier(lm.pair(k), float(values[k]), float(zk), c, rule, better)
            for k, zk, ok in zip(flagged.tolist(), z.tolist(), keep.tolist(), strict=True)
            if not ok
        ] + [
            _outlier(lm.hosts[k], float(rows.medians[k]), float(zk), nc, rule, better)
            for k, zk, ok in zip(
                node_idx.tolist(), node_z.tolist(), keep_nodes.tolist(), strict=True
            )
            if not ok
        ]
    if topology is not None:
        pm.switches = by_switch(values, lm.hosts, topology, flagged[keep], fi[keep], fj[keep])
        inside = pm.switches.explained(fi, fj) & keep
        pm.explained = int(inside.sum())
        keep &= ~inside
        slow_leaves = {
            leaf
            for part in pm.switches.slow
            if part.kind != "pair"
            for leaf in pm.switches.below.get(part.switch, [])
        } | {
            s
            for part in pm.switches.slow
            if part.kind == "path" and part.other
            for s in pm.switches.below.get(part.other, [])
        }
        leaf_of = {
            int(x): s
            for s, mem in zip(pm.switches.names, pm.switches.members, strict=True)
            for x in mem
        }
        on_slow = np.array([leaf_of.get(k) in slow_leaves for k in node_idx.tolist()], bool)
        pm.explained_nodes = [lm.hosts[k] for k in node_idx[on_slow & keep_nodes].tolist()]
        keep_nodes &= ~on_slow

    if n > FULL and keep_nodes.any():
        # beyond the whole table, a named node's links are the node, not N−1 slow links
        on_node = np.isin(fi, node_idx[keep_nodes]) | np.isin(fj, node_idx[keep_nodes])
        pm.node_links = int((keep & on_node).sum())
        keep &= ~on_node
    named, named_z = flagged[keep], z[keep]
    pm.n_link_outliers = int(named.size)
    limit = named.size if n <= FULL else top
    pm.link_outliers = [
        _outlier(lm.pair(k), float(values[k]), float(zk), c, rule, better)
        for k, zk in zip(named[:limit].tolist(), named_z[:limit].tolist(), strict=True)
    ]
    pm.node_outliers = [
        _outlier(lm.hosts[k], float(rows.medians[k]), float(zk), nc, rule, better)
        for k, zk in zip(node_idx[keep_nodes].tolist(), node_z[keep_nodes].tolist(), strict=True)
    ]
    worst = worst_links(values, better, top, c)
    wz = z_scores(values[worst], c)
    pm.worst = [
        _outlier(lm.pair(k), float(values[k]), float(zk), c, rule, better)
        for k, zk in zip(worst.tolist(), wz.tolist(), strict=True)
    ]
    pm.distribution = distribution(values, c)
    if groups is not None and rows.blocks is not None:
        pm.heat = _heat(lm, rows.blocks, groups, named, node_idx[keep_nodes].tolist())
    else:
        pm.values = values
    return pm


def _centre(values: np.ndarray, better: str, m: int, top: int) -> Centre:
    """The links' centre, reading on the way the order statistics the summary needs."""
    return robust_centre(values, True, link_ranks(m, better, top))


# ---- runs made before the all-pairs probe: one sample (or figure) per pair ----


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


def link_matrices(figures: list[Figure]) -> list[LinkMatrix]:
    """One LinkMatrix per (metric, MPI) from the per-pair figures of an all-pairs run made
    before the probe, folded per pair (``Folded.by_host``: each figure holds the values of one
    pair's repetitions). Hosts in sorted order, float64 values."""
    chosen = [
        f
        for f in figures
        if f.sample.params.get("placement") == "all-pairs"
        and f.sample.metric in METRICS
        and "size" in f.sample.params
        and "matrix" not in f.sample.params
    ]
    by_key: dict[tuple[str, str], list[Figure]] = defaultdict(list)
    for f in chosen:
        p = f.sample.params
        by_key[(f.sample.metric, str(p.get("mpi_label") or p.get("mpi") or "MPI"))].append(f)
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
        hosts = sorted({h for p in links for h in p})
        spreads = {p: max(v) / min(v) for p, v in per_pair.items() if len(v) > 1 and min(v) > 0}
        spread = None
        if spreads:
            (wa, wb), ratio = max(spreads.items(), key=lambda kv: kv[1])
            k = link_index(len(hosts), hosts.index(wa), hosts.index(wb))
            spread = Spread(int(k), ratio, statistics.median(spreads.values()))
        out.append(
            LinkMatrix(
                hosts,
                metric,
                group[0].sample.better,
                size,
                mpi,
                from_pairs(hosts, links),
                (min(len(v) for v in per_pair.values()), max(len(v) for v in per_pair.values())),
                spread,
                _concurrent(group),
                Retests.none(),
            )
        )
    return out


def matrices(figures: list[Figure], rule: OutlierRule | None = None) -> list[PairMatrix]:
    """One analysed matrix per (metric, MPI) from the per-pair figures of an all-pairs run
    made before the probe (:func:`link_matrices`, then :func:`analyse`)."""
    return [analyse(lm, rule) for lm in link_matrices(figures)]
