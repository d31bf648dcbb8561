"""Report tables of a cluster run: the all-pairs N x N matrices (per metric and MPI) and the
per-node figures, with the outlier links and nodes named."""

from __future__ import annotations

from assay.analysis.allpairs import PairMatrix, matrices
from assay.analysis.pernode import per_node
from assay.analysis.stats import Figure
from assay.report.table import Table
from assay.units import format_value, metric_info


def _fmt(m: PairMatrix, v: float) -> str:
    return format_value(v, metric_info(m.metric).display)


def matrix_table(m: PairMatrix) -> Table:
    unit = metric_info(m.metric).display
    rows = []
    for a in m.hosts:
        row = [a]
        for b in m.hosts:
            v = None if a == b else m.value(a, b)
            row.append("–" if v is None else _fmt(m, v))
        rows.append(row)
    what = "latency" if m.metric == "p2p.latency" else "bandwidth"
    when = (
        "each pair alone"
        if m.concurrent == 1
        else f"up to {m.concurrent} pairs at the same time, in the rounds of a round-robin "
        "tournament (disjoint nodes)"
    )
    notes = [
        f"{what} at {m.size} B between every pair of nodes, one rank per node, {when}.",
        f"Outliers: robust z-score 0.6745·(ln x − median)/MAD over the {len(m.links)} links and "
        f"over each node's median link, threshold |z| > {m.threshold:g}, bad side only.",
    ]
    if not m.link_outliers and not m.node_outliers:
        notes.append("No outlier link or node.")
    for o in m.link_outliers:
        a, b = o.key  # type: ignore[misc]
        notes.append(
            f"OUTLIER LINK {a}–{b}: {_fmt(m, o.value)} {unit} against a median of "
            f"{_fmt(m, o.median)} {unit} (z = {o.z:.1f})"
        )
    for o in m.node_outliers:
        notes.append(
            f"OUTLIER NODE {o.key}: median link {_fmt(m, o.value)} {unit} against "
            f"{_fmt(m, o.median)} {unit} (z = {o.z:.1f})"
        )
    title = f"All-pairs {what} [{unit}] ({m.mpi})"
    return Table(matrix_key(m), title, ["node", *m.hosts], rows, notes)


def matrix_key(m: PairMatrix) -> str:
    """The matrix table's key (its HTML anchor), which its heatmap sits after."""
    return f"allpairs-{m.metric.split('.')[-1]}-{m.mpi}".replace(" ", "-").lower()


def allpairs_tables(by_host: list[Figure]) -> list[Table]:
    """The N x N matrices, from the figures folded per host (``Folded.by_host``)."""
    return [matrix_table(m) for m in matrices(by_host)]


def pernode_tables(by_host: list[Figure]) -> list[Table]:
    """One table: a row per node, a column per per-node metric; slow nodes named under it."""
    figures = per_node(by_host)
    if not figures:
        return []
    hosts = sorted({h for f in figures for h in f.values})
    units = [metric_info(f.metric).display for f in figures]
    cols = ["node"] + [f"{f.label} [{u}]" for f, u in zip(figures, units, strict=True)]
    rows = [
        [h]
        + [
            format_value(f.values[h], u) if h in f.values else "–"
            for f, u in zip(figures, units, strict=True)
        ]
        for h in hosts
    ]
    notes = [
        "Each node's best figure, every node measured at the same time (one job per node). "
        "Outliers: robust z-score of ln x against the other nodes, |z| > 3.5, bad side only."
    ]
    for f, u in zip(figures, units, strict=True):
        for o in f.outliers:
            notes.append(
                f"SLOW NODE {o.key} ({f.label}): {format_value(o.value, u)} {u} against a "
                f"median of {format_value(o.median, u)} {u} (z = {o.z:.1f})"
            )
    return [Table("per-node", "Per-node figures", cols, rows, notes)]
