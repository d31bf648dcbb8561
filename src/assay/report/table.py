"""The report's one table type, and the formatting every family of tables shares.

A :class:`Table` is plain data (title, columns, rows of strings, notes, the commands that made
it); :mod:`assay.report.render` draws it as terminal text or Markdown. The helpers here are
public because several families use them; a family's own helpers stay in its module.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from dataclasses import dataclass, field

from assay.analysis.stats import Figure
from assay.model import JobResult


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


def variation(fig: Figure) -> float | None:
    """How much a figure varied: across repetitions when repeated, else across iterations."""
    stats = fig.spread or fig.sample.stats
    return stats.cv() if stats else None


def count(fig: Figure) -> str:
    if fig.repetitions > 1:
        return f"{fig.repetitions} reps"
    # A tool's own iteration count wins: IMB's and OSU's stats.n count ranks, not iterations.
    n = fig.sample.params.get("iterations") or (fig.sample.stats.n if fig.sample.stats else None)
    return f"{n} it." if n else "1"


def best_cells(rows: list[list[float | None]], better: str, offset: int) -> set[tuple[int, int]]:
    """(row, column) of each row's best value, when a row has at least two to choose from."""
    best = set()
    for r, values in enumerate(rows):
        present = [(v, c) for c, v in enumerate(values) if v is not None]
        if len(present) < 2:
            continue
        pick = min(present) if better == "lower" else max(present)
        best.add((r, pick[1] + offset))
    return best


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
