"""The link matrix by switch: per-switch and switch-to-switch medians, and a slow uplink named
as one (every link between two parts of the tree slow), not as many slow links.

Nodes are grouped by their leaf switch (``assay.system.topology``: Slurm's tree). A *block* is
every link between two leaf switches (or within one). A block is **slow** when at least
``SLOW_SHARE`` (90 %) of its measured links are flagged by the link rule (robust z and factor,
``assay.analysis.statistics.outliers``): "every link slow", allowing a few that a noisy measurement
let through. A switch X (any level but the root) has a **slow uplink** when every block crossing it
— leaves below X against leaves elsewhere — is slow while a block that does not cross it is
not: the one cable (or port, or switch) all those links share. When the two sides of a
crossing are each one switch's subtree (two leaves, or two halves of a tree), the data cannot
tell which side's uplink it is: that is named a **slow path between X and Y**. Slow blocks no
uplink explains are named as slow switch pairs. The links of named uplinks and pairs, and the
nodes whose median link is slow because their switch's uplink is, are not named again one by
one.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assay.analysis.matrix.matrixstats import Blocks, block_counts
from assay.system.topology import Topology, TopologyError

SLOW_SHARE = 0.9


@dataclass
class SlowPart:
    """A slow uplink (``upper`` None: the uplink of ``switch``), or a slow path between two
    parts of the tree, or a slow switch pair: its links, flagged and measured, and their
    median against the median of every link."""

    kind: str  # "uplink" | "path" | "pair"
    switch: str
    other: str | None
    links: int
    flagged: int
    median: float


@dataclass
class Switches:
    """A matrix seen by switch (the leaves of a Slurm tree), in the topology's order."""

    source: str
    names: list[str]  # leaf switches with nodes in the run
    members: list[np.ndarray]  # each switch's nodes (indices into the matrix's hosts)
    blocks: Blocks  # switch × switch: median and links measured
    flagged: np.ndarray  # switch × switch: links flagged by the rule
    below: dict[str, list[str]] = field(default_factory=dict)  # switch -> its leaves here
    slow: list[SlowPart] = field(default_factory=list)
    unplaced: list[str] = field(default_factory=list)  # run hosts the topology does not name
    outside: int = 0  # topology nodes not in the run

    def slow_leaves(self) -> set[str]:
        """The leaves below a named slow uplink or on either side of a slow path: their
        nodes' median links are slow through it."""
        out: set[str] = set()
        for part in self.slow:
            if part.kind != "pair":
                out |= set(self.below.get(part.switch, []))
            if part.kind == "path" and part.other:
                out |= set(self.below.get(part.other, []))
        return out

    def explained(self, i: np.ndarray, j: np.ndarray) -> np.ndarray:
        """Which links (nodes i, j) lie in a block a named slow part covers."""
        covered = np.zeros(self.blocks.count.shape, bool)
        index = {s: k for k, s in enumerate(self.names)}
        for part in self.slow:
            for a, b in _blocks_of(part, self, index):
                covered[a, b] = covered[b, a] = True
        of = np.full(max(int(i.max(initial=-1)), int(j.max(initial=-1))) + 1, -1)
        for g, members in enumerate(self.members):
            members = members[members < of.size]
            of[members] = g
        a, b = of[i], of[j]
        ok = (a >= 0) & (b >= 0)
        out = np.zeros(i.size, bool)
        out[ok] = covered[a[ok], b[ok]]
        return out


def _blocks_of(part: SlowPart, sw: Switches, index: dict[str, int]) -> list[tuple[int, int]]:
    if part.kind == "pair":
        return [(index[part.switch], index[part.other or part.switch])]
    inside = set(sw.below.get(part.switch, []))
    return [
        (index[a], index[b])
        for a in inside
        for b in sw.names
        if b not in inside and sw.blocks.count[index[a], index[b]]
    ]


@dataclass
class SwitchMembers:
    """The run's hosts by leaf switch: the switches (in the topology's order) and their
    nodes, the hosts in no switch, and how many topology nodes are not in the run."""

    names: list[str]
    members: list[np.ndarray]  # node indices into the run's hosts
    unplaced: np.ndarray  # node indices in no switch
    outside: int

    def groups(self) -> list[np.ndarray]:
        """The node groups of the matrix's row pass: each switch, then the unplaced nodes."""
        return [*self.members, *([self.unplaced] if self.unplaced.size else [])]


def place(hosts: list[str], topo: Topology) -> SwitchMembers:
    """The run's hosts by leaf switch. A topology that names none of the run's hosts is the
    wrong one: a TopologyError says so, with a few names of each."""
    leaf_of = topo.leaf_of()
    names, members = [], []
    index = {h: i for i, h in enumerate(hosts)}
    for leaf in topo.leaves():
        mine = [index[h] for h in leaf.nodes if h in index and leaf_of.get(h) == leaf.name]
        if mine:
            names.append(leaf.name)
            members.append(np.asarray(sorted(set(mine)), np.int64))
    unplaced = np.asarray([i for i, h in enumerate(hosts) if h not in leaf_of], np.int64)
    if not names:
        raise TopologyError(
            f"the topology ({topo.source}) names none of the run's {len(hosts)} nodes: it "
            f"names {', '.join(sorted(leaf_of)[:3])}…, the run has {', '.join(hosts[:3])}…",
            hint="give the topology of the cluster the run was on (scontrol show topology "
            "there), or none",
        )
    return SwitchMembers(names, members, unplaced, len(set(leaf_of) - set(hosts)))


def by_switch(
    hosts: list[str],
    topo: Topology,
    where: SwitchMembers,
    blocks: Blocks,
    link_i: np.ndarray,
    link_j: np.ndarray,
) -> Switches:
    """The matrix by leaf switch, and its slow uplinks, paths and switch pairs (see the
    module): ``blocks`` from the row pass over ``where.groups()``, ``link_i``/``link_j`` the
    nodes of the links the rule flagged."""
    s = len(where.names)
    sub = Blocks(blocks.median[:s, :s], blocks.count[:s, :s])
    flagged = block_counts(len(hosts), where.members, link_i, link_j)
    below = {x: [y for y in topo.below(x) if y in where.names] for x in topo.switches}
    unplaced = [hosts[i] for i in where.unplaced.tolist()]
    sw = Switches(
        topo.source,
        where.names,
        where.members,
        sub,
        flagged,
        below,
        [],
        unplaced,
        where.outside,
    )
    sw.slow = _slow_parts(sw, topo)
    return sw


def _slow_parts(sw: Switches, topo: Topology) -> list[SlowPart]:
    count, bad = sw.blocks.count, sw.flagged
    with np.errstate(invalid="ignore", divide="ignore"):
        slow = (count > 0) & (bad >= SLOW_SHARE * count)
    index = {s: k for k, s in enumerate(sw.names)}
    parts: list[SlowPart] = []
    covered = np.zeros_like(slow)
    seen_sides: list[frozenset[str]] = []
    parent = topo.parent()
    for name in topo.switches:
        if name not in parent and len(topo.switches) > 1 and topo.switches[name].switches:
            continue  # the root: nothing above it
        inside = set(sw.below.get(name, []))
        if not inside or len(inside) == len(sw.names):
            continue
        cross = [
            (index[a], index[b])
            for a in inside
            for b in sw.names
            if b not in inside and count[index[a], index[b]]
        ]
        if not cross or not all(slow[a, b] for a, b in cross):
            continue
        side = frozenset(inside)
        rest = frozenset(sw.names) - side
        if side in seen_sides or rest in seen_sides:
            continue  # the same cut, seen from below another switch
        seen_sides.append(side)
        other = next((s for s in topo.switches if set(sw.below.get(s, [])) == rest), None)
        links = sum(int(count[a, b]) for a, b in cross)
        flagged = sum(int(bad[a, b]) for a, b in cross)
        med = float(np.nanmedian([sw.blocks.median[a, b] for a, b in cross]))
        kind = "path" if other is not None else "uplink"
        parts.append(SlowPart(kind, name, other, links, flagged, med))
        for a, b in cross:
            covered[a, b] = covered[b, a] = True
    for a in range(len(sw.names)):
        for b in range(a, len(sw.names)):
            if slow[a, b] and not covered[a, b]:
                parts.append(
                    SlowPart(
                        "pair",
                        sw.names[a],
                        sw.names[b],
                        int(count[a, b]),
                        int(bad[a, b]),
                        float(sw.blocks.median[a, b]),
                    )
                )
    return parts


__all__ = [
    "SLOW_SHARE",
    "SlowPart",
    "SwitchMembers",
    "Switches",
    "TopologyError",
    "by_switch",
    "place",
]
