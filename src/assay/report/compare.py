"""The comparison of two runs as a table: one row per figure both runs have."""

from __future__ import annotations

from assay.analysis.compare import Comparison
from assay.report.table import Table
from assay.units import format_value, metric_info

COMPARE_NOTE = (
    "ratio > 1: this run is better (higher rate or lower latency); significance: Welch's t "
    "over repetitions or iterations, |t| < 2 is not significant"
)


def display_unit(c: Comparison) -> str:
    info = metric_info(c.metric)
    return info.display if c.unit == info.unit else c.unit


def compare_table(
    rows: list[Comparison], failing: list[Comparison], title: str, only: list[str]
) -> Table:
    """Reference, this run, their ratio as goodness and the verdict; ✗ marks a failing row.
    Figures found in one run only are listed in the notes (the first 20)."""
    header = ["metric", "params", "reference", "this run", "unit", "ratio", "verdict"]
    table_rows = []
    for r in rows:
        unit = display_unit(r)
        table_rows.append(
            [
                r.metric,
                ", ".join(f"{k}={v}" for k, v in r.params),
                format_value(r.old, unit),
                format_value(r.new, unit),
                unit,
                f"{r.goodness:.3f}",
                r.verdict + (" ✗" if r in failing else ""),
            ]
        )
    notes = [COMPARE_NOTE, *only[:20]]
    if len(only) > 20:
        notes.append(f"... and {len(only) - 20} more found in one run only")
    return Table("compare", title, header, table_rows, notes)
