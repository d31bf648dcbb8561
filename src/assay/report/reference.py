"""Tables for comparisons with references and other runs, reference sets, the best-of summary
and histories with change points: built once as ``Section``s, rendered as terminal or Markdown.

Cells are plain text (never rich markup), so a label such as "[/]" prints as written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table as RichTable
from rich.text import Text

from assay.analysis.bestof import Best
from assay.analysis.changepoint import Change
from assay.analysis.verdict import Comparison, Row
from assay.references.model import ReferenceSet
from assay.units import format_value, human_bytes, metric_info


@dataclass
class Section:
    title: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _params(params: Sequence[tuple[str, str]]) -> str:
    shown = []
    for k, v in params:
        if k == "size" and v.isdigit():
            v = human_bytes(int(v))
        shown.append(f"{k}={v}")
    return ", ".join(shown)


def _with_unit(value: float | None, unit: str) -> str:
    return "—" if value is None else f"{format_value(value, unit)} {unit}"


def _sig(row: Row) -> str:
    if row.test is None:
        return row.significance
    return f"{row.significance} (p={row.test.p:.2g}, {row.test.method})"


LEGEND = (
    "ratio > 1: this run is better (a higher rate or a lower time); 'same' is inside the tolerance "
    "band (ReFrame-style lower/upper fractions); significance: Mann-Whitney U over repetitions, "
    "else Welch's t over the tools' own iterations, at p < 0.05 — 'not significant' means the "
    "noise could explain the difference, 'unknown' that one side has no statistics."
)


def reference_comparison(comp: Comparison, ref: ReferenceSet, run_id: str) -> list[Section]:
    s = Section(
        f"Run {run_id} against {ref.name}: {ref.title}",
        [
            "metric",
            "params",
            "reference",
            "published",
            "this run",
            "ratio",
            "verdict",
            "significance",
            "tolerance",
            "note",
        ],
    )
    for r in comp.rows:
        s.rows.append(
            [
                r.metric,
                _params(r.params),
                r.label,
                r.ref_text,
                _with_unit(r.ours, r.unit),
                "—" if r.ratio is None else f"{r.ratio:.3f}",
                r.verdict,
                _sig(r),
                str(r.tolerance),
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


def run_comparison(comp: Comparison, base_id: str, new_id: str) -> list[Section]:
    s = Section(
        f"{new_id} against {base_id}",
        [
            "metric",
            "params",
            "reference",
            "this run",
            "unit",
            "ratio",
            "verdict",
            "significance",
            "tolerance",
        ],
    )
    for r in comp.rows:
        s.rows.append(
            [
                r.metric,
                _params(r.params),
                format_value(r.ref, r.unit),
                "—" if r.ours is None else format_value(r.ours, r.unit),
                r.unit,
                "—" if r.ratio is None else f"{r.ratio:.3f}",
                r.verdict,
                _sig(r),
                str(r.tolerance),
            ]
        )
    s.notes.append(LEGEND)
    for metric, n in comp.unmatched:
        s.notes.append(f"only in {new_id}: {metric} ({n} figure(s))")
    for metric, n in comp.missing:
        s.notes.append(f"only in {base_id}: {metric} ({n} figure(s))")
    return [s]


def reference_list(entries: list[tuple[str, str, str, str]]) -> Section:
    """entries: (name, origin, title, date or error)."""
    s = Section("Reference sets", ["name", "origin", "title", "date"])
    s.rows = [list(e) for e in entries]
    s.notes.append("show one with: assay references NAME; compare: assay compare RUN --ref NAME")
    return s


def reference_set(ref: ReferenceSet) -> list[Section]:
    head = Section(f"{ref.name}: {ref.title}", ["", ""])
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
            Section(
                "Workload summary as published",
                ["workload", "published"],
                [[w, p] for w, p in ref.summary],
            )
        )
    figs = Section(
        "Figures", ["metric", "params", "label", "published", "canonical", "stat", "note"]
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


def summary(bests: list[Best], workload: list[tuple[str, str]], line: str) -> list[Section]:
    table = Section(
        "Best results (the best figure per metric across the selected runs)",
        ["metric", "system", "result", "unit", "note", "run"],
    )
    for b in bests:
        table.rows.append(
            [b.title, b.system, format_value(b.value, b.unit), b.unit, b.note, b.run_id]
        )
    work = Section("Workload summary", ["workload", "result"], [[w, v] for w, v in workload])
    work.notes.append(line)
    return [table, work]


def history(
    title: str, rows: list[list[str]], changes: list[tuple[Change, str, str]], unit: str
) -> list[Section]:
    s = Section(title, ["run", "host", "label", f"value ({unit})", "change"], rows)
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


def to_markdown(sections: list[Section]) -> str:
    out: list[str] = []
    for s in sections:
        out += [f"## {s.title}", ""]
        if s.columns:
            out.append("| " + " | ".join(c or " " for c in s.columns) + " |")
            out.append("|" + "|".join("---" for _ in s.columns) + "|")
            for row in s.rows:
                cells = [c.replace("|", "\\|").replace("\n", " ") for c in row]
                out.append("| " + " | ".join(cells) + " |")
            out.append("")
        out += [f"{n}  " for n in s.notes]
        if s.notes:
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def to_rich(sections: list[Section]) -> list[RichTable | Text]:
    out: list[RichTable | Text] = []
    for s in sections:
        if s.columns:
            t = RichTable(title=Text(s.title), title_justify="left", show_header=any(s.columns))
            for c in s.columns:
                t.add_column(c, overflow="fold")
            for row in s.rows:
                t.add_row(*[Text(c) for c in row])
            out.append(t)
        else:
            out.append(Text(s.title, style="bold"))
        out += [Text(n) for n in s.notes]
    return out
