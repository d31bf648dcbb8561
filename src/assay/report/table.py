"""The report's one table type, and the formatting every family of tables shares.

A :class:`Table` is plain data (title, columns, rows of strings, notes, the commands that made
it); :mod:`assay.report.render` draws it as terminal text or Markdown. The helpers here are
public because several families use them; a family's own helpers stay in its module.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from assay.analysis.statistics.spread import FORMULA, RobustSpread, robust_spread
from assay.model import JobResult

if TYPE_CHECKING:  # the comparison (numpy, pydantic) is imported when used: 'assay doctor'
    # draws the System table from this module and took 0.3 s of CPU more to start with it
    from assay.analysis.statistics.stats import Figure


@dataclass
class Table:
    key: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    best: set[tuple[int, int]] = field(default_factory=set)  # (row, column) of a row's best


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def spread_of(fig: Figure) -> RobustSpread | None:
    """How much a figure varied (:mod:`assay.analysis.statistics.spread`): across its repetitions
    when repeated, else across the iterations its tool timed."""
    stats = fig.spread or fig.sample.stats
    return robust_spread(stats) if stats else None


RANGE_MARK = "†"  # in a column that mixes both measures: this cell is a range

SPREAD_WORDS = {
    "p99": "(p99 − median)/median over the iterations (at least 100, p99 by nearest rank): "
    "fewer than 1 % stray iterations cannot move it",
    "range": "(max − min)/median (or mean) over the repetitions, or over the iterations where "
    "fewer than 100 were timed or the tool gave no p99: every value counts, a stray one too",
}


def spread_column(figures: Sequence[Figure | None]) -> tuple[list[str], str | None]:
    """A spread column's cells ("12.3%") and the note that says which measure they are; in a
    column with both measures the ranges are marked "†". No note when no cell has a spread."""
    spreads = [spread_of(f) if f is not None else None for f in figures]
    kinds = {s.kind for s in spreads if s is not None}
    mixed = len(kinds) > 1
    cells = [
        "–" if s is None else pct(s.value) + (RANGE_MARK if mixed and s.kind == "range" else "")
        for s in spreads
    ]
    if not kinds:
        return cells, None
    if mixed:
        note = f"spread = {SPREAD_WORDS['p99']}; {RANGE_MARK}: {SPREAD_WORDS['range']}."
    else:
        note = f"spread = {SPREAD_WORDS[kinds.pop()]}."
    return cells, note


def spread_span(by_size: dict[int, Figure]) -> str | None:
    """The spreads of a series (one MPI over its message sizes), per measure: "(p99 −
    median)/median 13.0%–401.6%, median 31.7% over 24 sizes, highest at 131072 B"; None when no
    figure has one."""
    by_kind: dict[str, list[tuple[float, int]]] = {}
    for size, fig in sorted(by_size.items()):
        s = spread_of(fig)
        if s is not None:
            by_kind.setdefault(s.kind, []).append((s.value, size))
    if not by_kind:
        return None
    parts = []
    for kind, found in sorted(by_kind.items()):
        values = sorted(v for v, _ in found)
        text = f"{FORMULA[kind]} {pct(values[0])}–{pct(values[-1])}"
        if len(found) > 2:
            top = max(found)[1]
            mid = values[(len(values) - 1) // 2]  # the lower median: a value that was shown
            text += f", median {pct(mid)} over {len(found)} sizes, highest at {top} B"
        parts.append(text)
    return "; ".join(parts)


def count(fig: Figure) -> str:
    if fig.repetitions > 1:
        return f"{fig.repetitions} reps"
    if fig.sample.params.get("summary") in ("node", "matrix"):
        # an all-pairs figure: a node's median link, or the matrix's; its stats are over links
        links = fig.sample.stats.n if fig.sample.stats else None
        return f"{links} links" if links else "1"
    # A tool's own iteration count wins: IMB's and OSU's stats.n count ranks, not iterations.
    n = fig.sample.params.get("iterations") or (fig.sample.stats.n if fig.sample.stats else None)
    return f"{n} it." if n else "1"


@dataclass
class BestMarks:
    """Each row's best cell, where one is significantly best, and a note saying how it was
    chosen (:mod:`assay.analysis.compare.significant_best`)."""

    cells: set[tuple[int, int]]  # (row, index of the figure in the row)
    note: str | None  # None when no row has two figures to choose from


def best_marks(rows: Sequence[Sequence[Figure | None]], better: str) -> BestMarks:
    from assay.analysis.compare.significant_best import row_best

    outcomes = []
    cells = set()
    for r, figures in enumerate(rows):
        found = row_best(figures, better)
        outcomes.append(found.outcome)
        if found.index is not None:
            cells.add((r, found.index))
    counts = Counter(o for o in outcomes if o != "alone")
    if not counts:
        return BestMarks(cells, None)
    why = [
        f"{counts[k]} {text}"
        for k, text in (
            ("not significant", "within the noise"),
            ("contradicted", "where the iterations contradict the figures"),
            ("untestable", "with nothing to test (no repetitions, no per-iteration statistics)"),
        )
        if counts[k]
    ]
    note = (
        "Best per row (bold; * on a terminal): marked only where it is better than every other "
        "column by the test 'assay compare' uses (Mann-Whitney U over repetitions, else Welch's "
        "t over the iterations; significant at p < 0.05) and the test points the same way as "
        "the figures; "
        f"marked in {counts['best']} of {sum(counts.values())} rows"
        + (f" ({', '.join(why)})" if why else "")
        + "."
    )
    return BestMarks(cells, note)


def slug_key(text: str) -> str:
    return "".join(c if c.isalnum() or c == "." else "-" for c in text.lower()).strip("-")


def format_size(n: int) -> str:
    """A working set: 4 KiB, 5.5 KiB, 1.5 MiB, 2 GiB (3 significant figures)."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{n} B"


def commands_of(results: list[JobResult], probe_prefix: str) -> list[str]:
    """One command per distinct launcher among a probe's jobs, as the seed pages show one per
    table."""
    jobs = [r for r in results if r.job_id.split("-", 2)[1:2] == [probe_prefix]]
    return _one_per_launcher(jobs)


def commands_of_jobs(results: list[JobResult], job_ids: Iterable[str]) -> list[str]:
    """The commands of the jobs that made a table's figures, one per distinct launcher (one per
    MPI): a table shows how *its* figures were measured, not a sibling table's."""
    wanted = set(job_ids)
    return _one_per_launcher([r for r in results if r.job_id in wanted])


def _one_per_launcher(results: list[JobResult]) -> list[str]:
    seen, out = set(), []
    for r in results:
        if r.argv and r.argv[0] not in seen:
            seen.add(r.argv[0])
            out.append(shlex.join(r.argv))
    return out
