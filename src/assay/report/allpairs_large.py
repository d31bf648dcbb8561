"""An all-pairs matrix too large to print (more than 64 nodes; 10,000 is 5·10⁷ links), as what
can be read: the distribution of its links, the worst links, each node's median link worst
first, and its switches when Slurm's topology is known (``assay.analysis.matrix.allpairs`` computed
them all; nothing here touches a link array)."""

from __future__ import annotations

import math

import numpy as np

from assay.analysis.matrix.allpairs import FULL, PairMatrix
from assay.analysis.statistics.outliers import worse_factor, z_scores
from assay.report.allpairs_notes import (
    finding_notes,
    fmt,
    matrix_key,
    method_notes,
    times,
    what,
)
from assay.report.table import Table
from assay.units import metric_info

HISTOGRAM_ROWS = 12  # the distribution's bins, shown as rows (the heatmap has the picture)


def _status(m: PairMatrix, key: object) -> str:
    """The rule's verdict on a link (a pair of hosts) or a node, in words."""
    named = {o.key for o in m.link_outliers} | {o.key for o in m.node_outliers}
    if key in named:
        c = m.confirmations.get(key)
        return "OUTLIER" + (f" ({c.words()})" if c else "")
    if any(o.key == key for o in m.not_reproduced):
        return "not reproduced on retest"
    if not isinstance(key, tuple):
        return "slow through its switch's uplink" if key in m.explained_nodes else ""
    a, b = key
    nodes = {o.key for o in m.node_outliers}
    if m.n > FULL and (a in nodes or b in nodes):
        return "named as its node"
    if m.switches is not None and m.switches.slow:
        i, j = np.array([m.hosts.index(a)]), np.array([m.hosts.index(b)])
        if m.switches.explained(i, j)[0]:
            return "on a slow uplink"
    return ""


def distribution_table(m: PairMatrix) -> Table:
    """One row: how many links, how many not measured, and the quantiles (nearest rank)."""
    d = m.distribution
    assert d is not None
    unit = metric_info(m.metric).display
    cols = ["links", "not measured", "min", "p1", "p5", "p25", "median", "p75", "p95", "p99", "max"]
    cells = (
        [
            d.minimum,
            *(d.quantiles[p] for p in (1, 5, 25)),
            d.median,
            *(d.quantiles[p] for p in (75, 95, 99)),
            d.maximum,
        ]
        if d.measured
        else []
    )
    row = [str(d.measured), str(d.missing), *(fmt(m, v) for v in cells)]
    row += ["–"] * (len(cols) - len(row))
    heat = m.heat
    notes = [
        *method_notes(m),
        f"{m.n} nodes, {m.n * (m.n - 1) // 2} links: more than {FULL} nodes, so no N × N table;"
        " below, the worst links and each node's median link, worst first.",
        *finding_notes(m),
    ]
    if heat is not None:
        side = max(heat.sizes)
        notes.append(
            f"The heatmap: {len(heat.sizes)} × {len(heat.sizes)} cells of up to {side} nodes a "
            f"side ({heat.cells}); a cell holding a named outlier link is boxed, one holding a "
            "named node marked on both axes."
        )
    title = f"All-pairs {what(m)} [{unit}] ({m.mpi}): {m.n} nodes"
    return Table(matrix_key(m), title, cols, [row], notes)


def histogram_table(m: PairMatrix) -> Table | None:
    d = m.distribution
    if d is None or len(d.edges) < 3:
        return None
    unit = metric_info(m.metric).display
    # the analysis's bins, merged to at most HISTOGRAM_ROWS rows
    step = math.ceil(len(d.counts) / HISTOGRAM_ROWS)
    rows = []
    for s in range(0, len(d.counts), step):
        lo, hi = d.edges[s], d.edges[min(s + step, len(d.counts))]
        n = sum(d.counts[s : s + step])
        bar = "#" * round(40 * n / max(d.measured, 1)) if n else ""
        rows.append([fmt(m, lo), fmt(m, hi), str(n), f"{100 * n / d.measured:.2f}%", bar])
    return Table(
        f"{matrix_key(m)}-histogram",
        f"All-pairs {what(m)} ({m.mpi}): the links by value",
        [f"from [{unit}]", f"to [{unit}]", "links", "share", ""],
        rows,
        [
            "Log-spaced bins from the lowest to the highest link (each bin includes its lower "
            "edge; the last, both)."
        ],
    )


def worst_table(m: PairMatrix) -> Table:
    unit = metric_info(m.metric).display
    rows = []
    for rank, o in enumerate(m.worst, start=1):
        a, b = o.key  # type: ignore[misc]
        rows.append(
            [
                str(rank),
                f"{a}–{b}",
                fmt(m, o.value),
                times(o.factor),
                f"{o.z:.1f}",
                _status(m, o.key),
            ]
        )
    side = "lowest" if m.better == "higher" else "highest"
    return Table(
        f"{matrix_key(m)}-worst",
        f"All-pairs {what(m)} ({m.mpi}): the {len(rows)} worst links",
        ["rank", "link", f"{what(m)} [{unit}]", "worse than median", "z", "named"],
        rows,
        [
            f"The {len(rows)} links with the {side} {what(m)} of {m.links}, worst first, named or "
            "not: the rule's verdict is the last column."
        ],
    )


def nodes_table(m: PairMatrix, top: int) -> Table:
    """Each node's median link, worst first: the ``top`` worst, and how many there are."""
    unit = metric_info(m.metric).display
    med = m.node_medians
    sign = 1.0 if m.better == "higher" else -1.0
    key = np.where(np.isnan(med), np.inf, sign * med)
    order = np.argsort(key, kind="stable")[:top]
    c = m.node_centre
    z = z_scores(med[order], c) if c is not None else np.zeros(order.size)
    leaf = {}
    if m.switches is not None:
        leaf = {
            int(x): s
            for s, mem in zip(m.switches.names, m.switches.members, strict=True)
            for x in mem
        }
    rows = []
    for rank, (k, zk) in enumerate(zip(order.tolist(), z.tolist(), strict=True), start=1):
        v = float(med[k])
        host = m.hosts[k]
        factor = worse_factor(v, c.median, m.better) if c and not math.isnan(v) else math.nan  # type: ignore[arg-type]
        row = [
            str(rank),
            host,
            "–" if math.isnan(v) else fmt(m, v),
            "–" if math.isnan(factor) else times(factor),
            "–" if math.isnan(zk) else f"{zk:.1f}",
            str(int(m.node_counts[k])),
        ]
        if leaf:
            row.append(leaf.get(k, "–"))
        row.append(_status(m, host))
        rows.append(row)
    cols = ["rank", "node", f"median link [{unit}]", "worse than median", "z", "links measured"]
    cols += ["switch"] if leaf else []
    notes = [
        f"{m.n} nodes; the {len(rows)} with the worst median link shown, worst first "
        f"(median of the node medians {fmt(m, c.median) if c else '–'} {unit}).",
    ]
    return Table(
        f"{matrix_key(m)}-nodes",
        f"All-pairs {what(m)} ({m.mpi}): per node",
        [*cols, "named"],
        rows,
        notes,
    )


def large_tables(m: PairMatrix, top: int = 20) -> list[Table]:
    hist = histogram_table(m)
    return [distribution_table(m), *([hist] if hist else []), worst_table(m), nodes_table(m, top)]


def switch_tables(m: PairMatrix) -> list[Table]:
    """Per switch: its nodes, the median link within it and to the switch it reaches worst;
    and the switch × switch medians when there are few enough switches to print them."""
    sw = m.switches
    assert sw is not None
    unit = metric_info(m.metric).display
    b = sw.blocks
    rows = []
    sign = 1.0 if m.better == "higher" else -1.0
    for g, name in enumerate(sw.names):
        within = b.median[g, g]
        others = np.where(np.arange(len(sw.names)) == g, np.nan, sign * b.median[g])
        worst = int(np.nanargmin(others)) if np.isfinite(others).any() else -1
        rows.append(
            [
                name,
                str(len(sw.members[g])),
                "–" if math.isnan(within) else fmt(m, within),
                "–" if worst < 0 else f"{fmt(m, b.median[g, worst])} ({sw.names[worst]})",
                str(int(sw.flagged[g].sum())),
            ]
        )
    notes = [
        f"Switches from {sw.source} (the leaves: the switches nodes attach to). A link "
        "within a switch crosses only it; a link to another switch crosses the uplinks "
        "between them.",
    ]
    if sw.unplaced:
        notes.append(
            f"{len(sw.unplaced)} node(s) of the run are in no switch of the topology: "
            f"{', '.join(sw.unplaced[:10])}" + (" …" if len(sw.unplaced) > 10 else "")
        )
    if sw.outside:
        notes.append(f"{sw.outside} node(s) of the topology are not in this run (left out).")
    tables = [
        Table(
            f"{matrix_key(m)}-switches",
            f"All-pairs {what(m)} ({m.mpi}): per switch",
            ["switch", "nodes", f"within [{unit}]", f"worst switch pair [{unit}]", "links flagged"],
            rows,
            notes,
        )
    ]
    if 1 < len(sw.names) <= FULL:
        grid = [
            [a] + ["–" if math.isnan(v) else fmt(m, v) for v in b.median[i].tolist()]
            for i, a in enumerate(sw.names)
        ]
        tables.append(
            Table(
                f"{matrix_key(m)}-switch-pairs",
                f"All-pairs {what(m)} [{unit}] ({m.mpi}): median link between switches",
                ["switch", *sw.names],
                grid,
                [
                    "Each cell: the median of every link between a node of one switch and a "
                    "node of the other (the diagonal: within the switch)."
                ],
            )
        )
    return tables
