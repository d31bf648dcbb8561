"""The all-pairs matrix: one figure per node pair, and the links and nodes that stand out.

Each pair's figure is the one the published tables lead with: p2p latency at the smallest
message size measured (OSU's 0 or 1 byte; what a small MPI message costs), and p2p bandwidth
at the largest size (what a link carries when it is full). Samples of one pair measured with
several MPIs are kept apart (one matrix per MPI).

A matrix comes either from the all-pairs probe's files (``allpairs.bin``: a sweep and the jobs
that continue it, ``assay.figures.allpairs``) or, for runs made before it, from per-pair
samples (``assay.analysis.matrix.perpair``); both are analysed by :func:`analyse`, on the condensed
array of ``assay.analysis.matrix.linkmatrix`` — 10,000 nodes are 5·10⁷ links and nothing here is a
Python object per link. Links measured through shared memory are not links
(``assay.analysis.derived.shared_memory``): left out of every figure, and said.

Outliers: robust z-score (``assay.analysis.statistics.outliers``) over every link, and over every
node's median link, on the bad side only (low bandwidth, high latency), and at least
``rule.link_factor`` times worse than the median. A pair measured several times (``--repeat``)
counts by its median, so one disturbed repetition does not make a link an outlier; the largest
spread of a link's repetitions is kept beside, to compare with the differences between links.
Flagged links and nodes that were retested are named only when the retests confirm them
(``assay.analysis.matrix.confirm``); with a topology, the links of a slow uplink are named as the
uplink (``assay.analysis.matrix.topology``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assay.analysis.derived.shared_memory import shared_links
from assay.analysis.matrix.confirm import Confirmation, confirm_links, confirm_nodes, sweep_retests
from assay.analysis.matrix.heat import HEAT_BLOCKS, Heat, heat_of
from assay.analysis.matrix.linkmatrix import LinkMatrix
from assay.analysis.matrix.matrixstats import (
    Blocks,
    Distribution,
    Rows,
    distribution,
    even_groups,
    link_ranks,
    measured,
    row_pass,
    worst_links,
)
from assay.analysis.matrix.topology import Switches, SwitchMembers, by_switch, place
from assay.analysis.statistics.outliers import (
    Centre,
    Outlier,
    OutlierRule,
    outliers_of,
    robust_centre,
    worse_factor,
    z_scores,
)
from assay.condensed import link_nodes, node_links
from assay.system.topology import Topology

METRICS = ("p2p.latency", "p2p.bandwidth")
FULL = 64  # up to this many nodes the report prints the whole matrix
TOP = 20  # links and nodes listed worst first beyond that (with a count of the rest)


@dataclass
class LostNode:
    """A node the sweep lost, and the pairs it was never measured in."""

    host: str
    never: int  # of its links, how many were never measured
    partners: list[str]  # the first few of the nodes it was never measured with
    resumed_in: str  # the job that measured the pairs left without it


@dataclass(kw_only=True)
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
    # named: flagged (and confirmed, if retested), worst first
    link_outliers: list[Outlier] = field(default_factory=list)
    n_link_outliers: int = 0  # how many are named (link_outliers holds at most TOP beyond FULL)
    node_outliers: list[Outlier] = field(default_factory=list)
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
    shared: int = 0  # links measured through shared memory: not link figures, not in `links`
    shared_pairs: list[tuple[str, str]] = field(default_factory=list)  # all up to FULL, else TOP
    lost: list[LostNode] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # the probe's files it was read from

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
    factor = worse_factor(value, c.median, better)  # type: ignore[arg-type]
    return Outlier(key, value, z, c.median, rule.threshold, factor)  # type: ignore[arg-type]


def _row_pass(
    values: np.ndarray, lm: LinkMatrix, topology: Topology | None
) -> tuple[Rows, SwitchMembers | None, list]:
    """The matrix's one pass over its rows: node medians and, grouped by leaf switch (a
    topology) or in consecutive blocks (beyond FULL nodes), the block medians."""
    if topology is not None:
        where = place(lm.hosts, topology)
        groups = where.groups()
        return row_pass(values, lm.n, groups), where, groups
    groups = even_groups(lm.n, HEAT_BLOCKS) if lm.n > FULL else None
    return row_pass(values, lm.n, groups), None, groups or []


def _links_only(lm: LinkMatrix, top: int) -> tuple[np.ndarray, int, list[tuple[str, str]]]:
    """The matrix's link figures: the links measured through shared memory (given, and for a
    latency matrix those below the network floor) taken out (a copy, only when there are
    any); how many there were, and their pairs (all up to FULL nodes, else the first ``top``)."""
    shared = lm.shared
    if lm.metric == "p2p.latency":
        shared = np.union1d(shared, shared_links(lm.values))
    if not shared.size:
        return lm.values, 0, []
    values = lm.values.copy()
    count = int(np.count_nonzero(~np.isnan(values[shared])))
    values[shared] = np.nan
    pairs = shared if lm.n <= FULL else shared[:top]
    return values, count, [lm.pair(k) for k in pairs.tolist()]


def _lost(lm: LinkMatrix) -> list[LostNode]:
    """Each node the sweep lost, with the links of it never measured (sweep and resume)."""
    out = []
    for lost in lm.lost:
        k = node_links(lm.n, lost.node)
        never = np.flatnonzero(np.isnan(lm.values[k]))
        others = np.delete(np.arange(lm.n), lost.node)[never[:10]]
        partners = [lm.hosts[i] for i in others.tolist()]
        out.append(LostNode(lm.hosts[lost.node], int(never.size), partners, lost.resumed_in))
    return out


@dataclass
class _Named:
    """The links and nodes the rule flagged, and which of them stay named as each step of
    :func:`analyse` explains some away (retests that did not confirm, a slow uplink, a named
    node's links)."""

    links: np.ndarray  # condensed indices of the flagged links, worst first
    z: np.ndarray  # their z-scores
    fi: np.ndarray  # each flagged link's two nodes
    fj: np.ndarray
    nodes: np.ndarray  # indices of the flagged nodes, worst first
    node_z: np.ndarray
    keep: np.ndarray = field(init=False)  # of links: still named
    keep_nodes: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        self.keep = np.ones(self.links.size, bool)
        self.keep_nodes = np.ones(self.nodes.size, bool)


def analyse(
    lm: LinkMatrix,
    rule: OutlierRule | None = None,
    *,
    topology: Topology | None = None,
    top: int = TOP,
    sweeps: list[np.ndarray] | None = None,
) -> PairMatrix:
    """Everything the report shows of one matrix (see the module), from its condensed array
    in one copy (the links' centre) and one pass over its rows.

    Named links: flagged by the rule, confirmed by their retests when the matrix has retests
    (else flagged alone), not part of a slow uplink or switch pair, and beyond FULL nodes not
    a link of a named node. Named nodes the same, by their median link. ``sweeps``: the sweeps
    a ``--repeat`` matrix was folded from, which confirm when it has no retest rounds."""
    rule = rule or OutlierRule()
    better, factor = lm.better, rule.link_factor
    values, n_shared, shared_pairs = _links_only(lm, top)
    m = measured(values)
    c = robust_centre(values, True, link_ranks(m, better, top))
    c, flagged, z = outliers_of(values, better, rule.threshold, min_factor=factor, c=c)  # type: ignore[arg-type]
    rows, where, groups = _row_pass(values, lm, topology)
    nc, node_idx, node_z = outliers_of(rows.medians, better, rule.threshold, min_factor=factor)  # type: ignore[arg-type]
    pm = PairMatrix(
        metric=lm.metric,
        mpi=lm.mpi,
        size=lm.size,
        better=better,
        hosts=lm.hosts,
        links=m,
        missing=int(values.size - m - n_shared),
        centre=c,
        rule=rule,
        concurrent=lm.concurrent,
        repetitions=lm.repetitions,
        node_medians=rows.medians,
        node_counts=rows.counts,
        node_centre=nc,
        notes=list(lm.notes),
        shared=n_shared,
        shared_pairs=shared_pairs,
        lost=_lost(lm),
    )
    if lm.spread is not None:
        pm.widest = (lm.pair(lm.spread.widest), lm.spread.widest_ratio)
        pm.spread_median = lm.spread.median_ratio
    named = _Named(flagged, z, *link_nodes(lm.n, flagged), node_idx, node_z)
    _confirm(pm, lm, values, named, sweeps)
    if where is not None and topology is not None and rows.blocks is not None:
        _by_switch(pm, topology, where, rows.blocks, named)
    if lm.n > FULL and named.keep_nodes.any():
        # beyond the whole table, a named node's links are the node, not N−1 slow links
        on_node = np.isin(named.fi, named.nodes[named.keep_nodes])
        on_node |= np.isin(named.fj, named.nodes[named.keep_nodes])
        pm.node_links = int((named.keep & on_node).sum())
        named.keep &= ~on_node
    _name(pm, lm, values, named, top)
    if lm.n <= FULL:
        pm.values = values
    elif rows.blocks is not None:
        names = where.names + (["no switch"] if where.unplaced.size else []) if where else None
        pm.heat = heat_of(
            lm.hosts,
            groups,
            names,
            rows.blocks,
            named_i=named.fi[named.keep],
            named_j=named.fj[named.keep],
            named_nodes=named.nodes[named.keep_nodes].tolist(),
            better=better,
        )
    return pm


def _confirm(
    pm: PairMatrix,
    lm: LinkMatrix,
    values: np.ndarray,
    named: _Named,
    sweeps: list[np.ndarray] | None,
) -> None:
    """Keep named only the flagged links and nodes their retests confirmed (when the matrix
    has retests, or sweeps to serve as retests); the others are "not reproduced"."""
    retests, n = lm.retests, lm.n
    if not len(retests) and sweeps is not None and len(sweeps) > 1:
        # --repeat without retest rounds: each sweep's own value is a retest
        needed = [named.links, *(node_links(n, k) for k in named.nodes.tolist())]
        retests = sweep_retests(sweeps, np.unique(np.concatenate(needed)))
    if not len(retests):
        return
    c, nc, rule, better = pm.centre, pm.node_centre, pm.rule, pm.better
    pm.retested = True
    links = confirm_links(named.links, retests, c, better, rule)
    nodes = confirm_nodes(named.nodes, n, retests, nc, better, rule)
    pm.confirmations = {lm.pair(k): v for k, v in links.items()}
    pm.confirmations |= {lm.hosts[k]: v for k, v in nodes.items()}
    named.keep = np.array([links[k].status == "confirmed" for k in named.links.tolist()], bool)
    named.keep_nodes = np.array(
        [nodes[k].status == "confirmed" for k in named.nodes.tolist()], bool
    )
    lost_links = zip(named.links[~named.keep].tolist(), named.z[~named.keep].tolist(), strict=True)
    lost_nodes = zip(
        named.nodes[~named.keep_nodes].tolist(),
        named.node_z[~named.keep_nodes].tolist(),
        strict=True,
    )
    pm.not_reproduced = [
        _outlier(lm.pair(k), float(values[k]), zk, c, rule, better) for k, zk in lost_links
    ] + [
        _outlier(lm.hosts[k], float(pm.node_medians[k]), zk, nc, rule, better)
        for k, zk in lost_nodes
    ]


def _by_switch(
    pm: PairMatrix, topology: Topology, where: SwitchMembers, blocks: Blocks, named: _Named
) -> None:
    """Name a slow uplink or switch pair as one, not as its many slow links, and the named
    nodes under a slow leaf switch as the switch."""
    keep = named.keep
    pm.switches = by_switch(pm.hosts, topology, where, blocks, named.fi[keep], named.fj[keep])
    inside = pm.switches.explained(named.fi, named.fj) & keep
    pm.explained = int(inside.sum())
    named.keep = keep & ~inside
    slow = pm.switches.slow_leaves()
    leaf_of = {
        int(x): s for s, mem in zip(where.names, where.members, strict=True) for x in mem.tolist()
    }
    on_slow = np.array([leaf_of.get(k) in slow for k in named.nodes.tolist()], bool)
    pm.explained_nodes = [pm.hosts[k] for k in named.nodes[on_slow & named.keep_nodes].tolist()]
    named.keep_nodes &= ~on_slow


def _name(pm: PairMatrix, lm: LinkMatrix, values: np.ndarray, named: _Named, top: int) -> None:
    """The named links and nodes (beyond FULL nodes the first ``top`` links), the ``top``
    worst links whether flagged or not, and the links' distribution."""
    c, nc, rule, better = pm.centre, pm.node_centre, pm.rule, pm.better
    links, links_z = named.links[named.keep], named.z[named.keep]
    pm.n_link_outliers = int(links.size)
    limit = links.size if lm.n <= FULL else top
    pm.link_outliers = [
        _outlier(lm.pair(k), float(values[k]), zk, c, rule, better)
        for k, zk in zip(links[:limit].tolist(), links_z[:limit].tolist(), strict=True)
    ]
    nodes = zip(
        named.nodes[named.keep_nodes].tolist(),
        named.node_z[named.keep_nodes].tolist(),
        strict=True,
    )
    pm.node_outliers = [
        _outlier(lm.hosts[k], float(pm.node_medians[k]), zk, nc, rule, better) for k, zk in nodes
    ]
    worst = worst_links(values, better, top, c)
    pm.worst = [
        _outlier(lm.pair(k), float(values[k]), zk, c, rule, better)
        for k, zk in zip(worst.tolist(), z_scores(values[worst], c).tolist(), strict=True)
    ]
    pm.distribution = distribution(values, c)
