"""The compute table: Rpeak with its derivation, DGEMM/SGEMM and HPL Rmax with their share.

Every number here beyond the measured rates comes from the derive step
(:mod:`assay.analysis.derive`): one Rpeak per precision, and each rate's share of the peak of
the cores it used, flagged when above 100 %.
"""

from __future__ import annotations

from assay.analysis.derive import Derived
from assay.analysis.stats import Figure
from assay.report.table import Table, count
from assay.units import format_value

COMPUTE_METRICS = ("compute.rpeak", "compute.dgemm", "compute.sgemm", "compute.hpl")


def compute_figures(figures: list[Figure]) -> list[Figure]:
    """Our DGEMM probe's figures and HPL's; HPCC's own DGEMM (inside the hpl probe's run) is
    a different method, left to the generic table."""
    return [
        f
        for f in figures
        if (f.sample.probe == "dgemm" and f.sample.metric in COMPUTE_METRICS)
        or (f.sample.probe == "hpl" and f.sample.metric in ("compute.hpl", "compute.rpeak"))
    ]


def compute_table(figures: list[Figure], derived: Derived) -> Table | None:
    """Rpeak rows (one per precision), then each rate with its share of Rpeak."""
    rows, notes = [], []
    for precision in ("dp", "sp"):
        r = derived.rpeaks.get(precision)
        if r is None or not any(f.sample.probe == r.probe for f in figures):
            continue
        label = precision.upper()
        rows.append([f"Rpeak ({label})", format_value(r.flops, "GFLOP/s"), "", "", ""])
        if r.derivation:
            notes.append(f"Rpeak {label}: {r.derivation}")
    order = {m: i for i, m in enumerate(COMPUTE_METRICS)}
    for f in sorted(figures, key=lambda f: order.get(f.sample.metric, 9)):
        s, p = f.sample, f.sample.params
        if s.metric == "compute.rpeak":
            continue
        if s.metric == "compute.hpl":
            what = "HPL Rmax"
            detail = f"N={p.get('N')} NB={p.get('NB')} P×Q={p.get('P')}×{p.get('Q')}"
            detail += f", {p.get('time_s')} s, residual {p.get('residual')} PASSED"
        else:
            what = s.metric.split(".")[1].upper()
            detail = f"n={p.get('n')}, {p.get('threads', '?')} threads"
        frac = derived.fraction_of(f)
        share = "–"
        if frac is not None and frac.fraction is not None:
            share = f"{100 * frac.fraction:.1f}%"
            if frac.flag:
                # Above 100 % the peak is wrong, not the machine: never shown without a word.
                share += " (Rpeak too low)"
                notes.append(f"{what}: {share.split()[0]} of Rpeak: {frac.flag}")
            if frac.scope:
                detail += f"; % of the Rpeak of {frac.scope}"
        elif frac is not None and frac.note:
            notes.append(f"{what}: no % of Rpeak — {frac.note}")
        rows.append([what, format_value(s.value, "GFLOP/s"), share, count(f), detail])
    if not rows:
        return None
    cols = ["", "GFLOP/s", "% of Rpeak", "n", "details"]
    return Table("compute", "Compute (Rpeak, DGEMM, HPL)", cols, rows, sorted(set(notes)))
