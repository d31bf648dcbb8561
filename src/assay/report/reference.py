"""Tables for comparisons with references and other runs, reference sets, the best-of summary
and histories with change points: built as the report's one ``Table`` type and drawn by
``assay.report.render`` (terminal or Markdown), like every other table of assay.

Cells are plain text (never rich markup; escaped for the format written by
``assay.textutil``), so a label such as "[/]" prints as written.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from assay.analysis.compare.bestof import Best
from assay.analysis.compare.verdict import Comparison, Row
from assay.analysis.statistics.changepoint import Change
from assay.references.model import ReferenceSet
from assay.report.render import markdown_table, term_tables
from assay.report.table import Table
from assay.units import format_value, human_bytes, metric_info


def _params(params: Sequence[tuple[str, str]]) -> str:
    shown = []
    for k, v in params:
        if k == "size" and v.isdigit():
            v = human_bytes(int(v))
        shown.append(f"{k}={v}")
    return ", ".join(shown)


def _with_unit(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{format_value(value, unit)} {unit}"


JUDGED = ["ratio", "verdict", "significance", "tolerance"]  # the columns _judged fills


def _judged(row: Row, failed: set[int]) -> list[str]:
    """The ratio, verdict (✗ on a row that fails --fail-below / --fail-on), significance (with
    its p and test) and tolerance cells, alike against a reference and against a run."""
    ratio = "—" if row.ratio is None or not math.isfinite(row.ratio) else f"{row.ratio:.3f}"
    sig = row.significance
    if row.test is not None:
        sig += f" (p={row.test.p:.2g}, {row.test.method})"
    return [ratio, row.verdict + (" ✗" if id(row) in failed else ""), sig, str(row.tolerance)]


LEGEND = (
    "ratio > 1: this run is better (a higher rate or a lower time); 'same' is inside the tolerance "
    "band (ReFrame-style lower/upper fractions); significance: Mann-Whitney U over repetitions, "
    "else Welch's t over the tools' own iterations, at p < 0.05 — 'not significant' means the "
    "noise could explain the difference, 'unknown' that one side has no statistics."
)


def reference_comparison(
    comp: Comparison, ref: ReferenceSet, run_id: str, failing: Iterable[Row] = ()
) -> list[Table]:
    """One row per published point this run meets; its figures the set has no point for, as
    "no reference" rows; the published points it did not measure, in the notes."""
    failed = {id(r) for r in failing}
    s = Table(
        "compare",
        f"Run {run_id} against {ref.name}: {ref.title}",
        ["metric", "params", "reference", "published", "this run", *JUDGED, "note"],
        [],
    )
    for r in comp.rows:
        s.rows.append(
            [
                r.metric,
                _params(r.params),
                r.label,
                r.ref_text,
                _with_unit(r.ours, r.unit),
                *_judged(r, failed),
                r.note,
            ]
        )
    for metric, n in comp.unmatched:
        s.rows.append(
            [
                metric,
                f"{n} figure{'s' if n > 1 else ''}",
                "no reference",
                "—",
                "measured",
                "—",
                "—",
                "—",
                "—",
                f"{ref.name} publishes no figure for these",
            ]
        )
    s.notes.append(LEGEND)
    where = ", ".join(x for x in (ref.publisher, ref.date, ref.url) if x)
    s.notes.append(f"reference: {ref.title} ({where}); system: {ref.system}")
    for what, n in comp.missing:
        s.notes.append(f"not measured by this run: {what}, {n} published figure(s)")
    return [s]


def run_comparison(
    comp: Comparison, base_id: str, new_id: str, failing: Iterable[Row] = ()
) -> list[Table]:
    """One row per figure both runs have (sizes in numeric order: ``verdict.row_order``);
    figures only one run has, and keys it cannot pair, in the notes."""
    failed = {id(r) for r in failing}
    s = Table(
        "compare",
        f"{new_id} against {base_id}",
        ["metric", "params", "reference", "this run", "unit", *JUDGED],
        [],
    )
    for r in comp.rows:
        s.rows.append(
            [
                r.metric,
                _params(r.params),
                format_value(r.ref, r.unit),
                "—" if r.ours is None else format_value(r.ours, r.unit),
                r.unit,
                *_judged(r, failed),
            ]
        )
    s.notes.append(LEGEND)
    for metric, n in comp.unmatched:
        s.notes.append(f"only in {new_id}: {metric} ({n} figure(s))")
    for metric, n in comp.missing:
        s.notes.append(f"only in {base_id}: {metric} ({n} figure(s))")
    for what in comp.ambiguous:
        s.notes.append(f"several figures with {what} in one run: not compared")
    return [s]


def reference_list(entries: list[tuple[str, str, str, str]]) -> Table:
    """entries: (name, origin, title, date or error)."""
    s = Table("references", "Reference sets", ["name", "origin", "title", "date"],
              [list(e) for e in entries])  # fmt: skip
    s.notes.append("show one with: assay references NAME; compare: assay compare RUN --ref NAME")
    return s


def reference_set(ref: ReferenceSet) -> list[Table]:
    # key "system": drawn as a two-column key/value table without a header
    head = Table("system", f"{ref.name}: {ref.title}", ["", ""], [])
    for k in ("publisher", "url", "date", "system", "source"):
        value = getattr(ref, k)
        if value:
            head.rows.append([k, value])
    head.rows.append(["file", f"{ref.path} ({'built-in' if ref.builtin else 'user'})"])
    head.rows.append(
        [
            "tolerance",
            f"default {ref.tolerance}"
            + "".join(f"; {m} {t}" for m, t in sorted(ref.tolerances.items())),
        ]
    )
    head.notes = list(ref.notes)
    out = [head]
    if ref.summary:
        out.append(
            Table(
                "published-summary",
                "Workload summary as published",
                ["workload", "published"],
                [[w, p] for w, p in ref.summary],
            )
        )
    figs = Table(
        "figures",
        "Figures",
        ["metric", "params", "label", "published", "canonical", "stat", "note"],
        [],
    )
    for p in ref.points:
        params = tuple((k, str(v)) for k, v in p.params.items())
        canonical = f"{p.value:.6g} {_canonical(p.metric)}"
        figs.rows.append(
            [
                p.metric,
                _params(params),
                p.label or p.section,
                p.published,
                canonical,
                p.stat,
                p.note,
            ]
        )
    out.append(figs)
    return out


def _canonical(metric: str) -> str:
    return metric_info(metric).unit


def summary(bests: list[Best], workload: list[tuple[str, str]], line: str) -> list[Table]:
    table = Table(
        "best-of",
        "Best results (the best figure per metric across the selected runs)",
        ["metric", "system", "result", "unit", "note", "run"],
        [],
    )
    for b in bests:
        table.rows.append(
            [b.title, b.system, format_value(b.value, b.unit), b.unit, b.note, b.run_id]
        )
    work = Table(
        "workload", "Workload summary", ["workload", "result"], [[w, v] for w, v in workload]
    )
    work.notes.append(line)
    return [table, work]


def history(
    title: str, rows: list[list[str]], changes: list[tuple[Change, str, str]], unit: str
) -> list[Table]:
    s = Table("history", title, ["run", "host", "label", f"value ({unit})", "change"], rows)
    if not changes:
        s.notes.append("no change point (E-divisive, permutation test at p < 0.01)")
    for ch, before, after in changes:
        s.notes.append(
            f"{ch.direction} of {ch.size:+.1%} between {before} and {after}: median "
            f"{format_value(ch.before, unit)} → {format_value(ch.after, unit)} {unit} "
            f"(p={ch.p:.3f}, E-divisive permutation test)"
        )
    return [s]


# -- rendering ----------------------------------------------------------------------------------


def to_markdown(tables: list[Table]) -> str:
    return "\n".join(line for t in tables for line in markdown_table(t)).rstrip() + "\n"


def to_term(tables: list[Table]) -> str:
    return term_tables(tables)
