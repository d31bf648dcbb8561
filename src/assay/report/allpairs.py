"""Report tables of a cluster run: the all-pairs matrices (per metric and MPI) and the per-node
figures, with the outlier links and nodes named.

Up to ``FULL`` (64) nodes a matrix is printed whole (N × N). Beyond, the report shows what can
be read at 10,000 nodes (``assay.report.allpairs_large``): the distribution of the links, the
worst links, each node's median link worst first, per-switch blocks when the topology is
known, and a heatmap of block medians.
"""

from __future__ import annotations

from collections.abc import Sequence

from assay.analysis.derived.pernode import per_node
from assay.analysis.matrix.allpairs import FULL, PairMatrix
from assay.analysis.statistics.outliers import OutlierRule
from assay.analysis.statistics.stats import Figure
from assay.report.allpairs_large import large_tables, switch_tables
from assay.report.allpairs_notes import (
    SHARED_CELL,
    finding_notes,
    fmt,
    matrix_key,
    method_notes,
    times,
    what,
)
from assay.report.table import Table
from assay.units import format_value, metric_info

__all__ = ["allpairs_tables", "matrix_key", "matrix_table", "pernode_tables"]


def matrix_table(m: PairMatrix) -> Table:
    """The whole N × N matrix (N ≤ FULL), with its notes."""
    unit = metric_info(m.metric).display
    shared = {frozenset(p) for p in m.shared_pairs}  # shared memory: never a link's figure
    rows = []
    for a in m.hosts:
        row = [a]
        for b in m.hosts:
            v = None if a == b else m.value(a, b)
            cell = SHARED_CELL if frozenset((a, b)) in shared else "–"
            row.append(cell if v is None else fmt(m, v))
        rows.append(row)
    notes = [*method_notes(m), *finding_notes(m)]
    title = f"All-pairs {what(m)} [{unit}] ({m.mpi})"
    return Table(matrix_key(m), title, ["node", *m.hosts], rows, notes)


def allpairs_tables(pair_matrices: list[PairMatrix], problems: Sequence[str] = ()) -> list[Table]:
    """Each matrix (``assay.analysis.matrix.allpairs``) as tables: whole up to FULL nodes, else its
    distribution, worst links and nodes; its switches when the topology is known. What could
    not be shown (``problems``) comes first, in words."""
    out = []
    if problems:
        rows = [[p] for p in problems]
        out.append(Table("allpairs-problems", "All-pairs: not shown", ["what and why"], rows))
    for m in pair_matrices:
        out += [matrix_table(m)] if m.n <= FULL else large_tables(m)
        if m.switches is not None:
            out += switch_tables(m)
    return out


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
                f"median of {format_value(o.median, u)} {u} ({times(o.factor)} worse, "
                f"z = {o.z:.1f})"
            )
    return [Table("per-node", "Per-node figures", cols, rows, notes)]
