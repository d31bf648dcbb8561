"""Report tables of a cluster run: the all-pairs N x N matrices (per metric and MPI) and the
per-node figures, with the outlier links and nodes named."""

from __future__ import annotations

from assay.analysis.allpairs import PairMatrix
from assay.analysis.outliers import OutlierRule
from assay.analysis.pernode import per_node
from assay.analysis.stats import Figure
from assay.report.table import Table
from assay.units import format_value, metric_info


def _fmt(m: PairMatrix, v: float) -> str:
    return format_value(v, metric_info(m.metric).display)


def _times(factor: float) -> str:
    return "infinitely" if factor == float("inf") else f"{factor:.3g}×"


def _repetitions_note(m: PairMatrix) -> list[str]:
    """n and spread of the links measured more than once (--repeat)."""
    fewest, most = m.repetitions
    if most < 2:
        return ["Each link measured once (--repeat N: each link the median of N)."]
    n = f"{fewest}" if fewest == most else f"{fewest} to {most}"
    note = f"Each link: the median of its repetitions (n = {n})"
    if m.widest:
        (a, b), ratio = m.widest
        note += f"; the widest spread, max/min, {ratio:.3g}× ({a}–{b})"
    return [note + "."]


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
        *_repetitions_note(m),
        f"Outliers: robust z-score 0.6745·(ln x − median)/MAD over the {len(m.links)} links and "
        f"over each node's median link, threshold |z| > {m.rule.threshold:g}, bad side only, and "
        f"at least {m.rule.link_factor:g}× worse than the median ([outliers] in the config).",
    ]
    if not m.link_outliers and not m.node_outliers:
        notes.append("No outlier link or node.")
    for o in m.link_outliers:
        a, b = o.key  # type: ignore[misc]
        notes.append(
            f"OUTLIER LINK {a}–{b}: {_fmt(m, o.value)} {unit} against a median of "
            f"{_fmt(m, o.median)} {unit} ({_times(o.factor)} worse, z = {o.z:.1f})"
        )
    for o in m.node_outliers:
        notes.append(
            f"OUTLIER NODE {o.key}: median link {_fmt(m, o.value)} {unit} against "
            f"{_fmt(m, o.median)} {unit} ({_times(o.factor)} worse, z = {o.z:.1f})"
        )
    title = f"All-pairs {what} [{unit}] ({m.mpi})"
    return Table(matrix_key(m), title, ["node", *m.hosts], rows, notes)


def matrix_key(m: PairMatrix) -> str:
    """The matrix table's key (its HTML anchor), which its heatmap sits after."""
    return f"allpairs-{m.metric.split('.')[-1]}-{m.mpi}".replace(" ", "-").lower()


def allpairs_tables(pair_matrices: list[PairMatrix]) -> list[Table]:
    """The N x N matrices (``assay.analysis.allpairs.matrices``) as tables."""
    return [matrix_table(m) for m in pair_matrices]


def pernode_tables(by_host: list[Figure], rule: OutlierRule) -> list[Table]:
    """One table: a row per node, a column per per-node metric; slow nodes named under it."""
    figures = per_node(by_host, rule)
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
        f"Outliers: robust z-score of ln x against the other nodes, |z| > {rule.threshold:g}, "
        f"bad side only, and at least {rule.node_factor:g}× worse than the median node."
    ]
    for f, u in zip(figures, units, strict=True):
        for o in f.outliers:
            notes.append(
                f"SLOW NODE {o.key} ({f.label}): {format_value(o.value, u)} {u} against a "
                f"median of {format_value(o.median, u)} {u} ({_times(o.factor)} worse, "
                f"z = {o.z:.1f})"
            )
    return [Table("per-node", "Per-node figures", cols, rows, notes)]
