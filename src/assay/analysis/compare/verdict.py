"""A run against a published reference set, or against another run: one row per figure both
sides have, with a direction-aware verdict, a tolerance and an honest significance.

**Figures.** A run's samples are folded per measurement
(``analysis.statistics.stats.fold_repetitions``): the figure is the median of its repetitions, and
the repetitions' values are kept for the test. The derived figures (Rpeak and its share, Hockney
α/β: ``analysis.derived.derive.with_derived``) are figures too, so a comparison judges the numbers
the report shows.

**Matching.** Run against run: the metric and every param that says *what* was measured
(``IDENTITY``: size, MPI, ranks, threads, workload, IOR's operation, HPCC's RandomAccess variant
and generator, fio's completion or total latency, ...) must be equal; how the run went (hosts,
timings, repetition) is not compared. When one run has several figures under one key, which
pair is meant is unknown: they are not compared, and named. Rows are sorted with numbers as
numbers (size 2 < 16 < 128). Run against a published reference: ``analysis.compare.refcompare``.

**Verdict** (ReFrame's reference bands, made direction-aware). With the reference r (or the
range [lo, hi] a page gives; an open end for "over 300,000 IOPS") and a tolerance
(lower ≤ 0 ≤ upper), the figure x is "same" when lo·(1+lower) ≤ x ≤ hi·(1+upper); above the
band it is "better" for a higher-is-better metric and "worse" for a lower-is-better one, and
the other way round below it.

**Ratio** is goodness: x/r for higher-is-better metrics and r/x for lower-is-better ones, so
> 1 always means this run is better; against a range, r is the nearest end (1 inside it).

**Significance**: ``analysis.statistics.significance`` — Mann–Whitney U on repetitions when both
sides have at least two, else Welch's t on the tools' own statistics (mean, stddev, n), else
"unknown". It is independent of the verdict: "worse / not significant" means the figure is
outside the band but the noise could explain it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.analysis.derived.derive import with_derived
from assay.analysis.statistics.significance import Test, mann_whitney, welch
from assay.analysis.statistics.stats import Figure, fold_repetitions, summarize
from assay.model import Sample, Stats
from assay.references.model import Tolerance
from assay.units import metric_info

Verdict = Literal["better", "worse", "same", "not comparable"]


@dataclass(frozen=True)
class Measured:
    """One figure of a run: a measurement's repetitions folded into their median."""

    probe: str
    metric: str
    params: dict[str, Any]
    value: float
    values: tuple[float, ...]  # one per repetition
    stats: Stats | None  # the tool's own statistics (iterations) of the first repetition
    unit: str
    better: str
    run_id: str = ""

    def key(self) -> tuple:
        return (self.metric, identity(self.params))

    def stat(self, which: str) -> float | None:
        """The figure itself ("value"), or one of its statistics (min, max, mean, median)."""
        if which == "value":
            return self.value
        if self.stats is not None and getattr(self.stats, which, None) is not None:
            return getattr(self.stats, which)
        if len(self.values) > 1:  # over repetitions
            return getattr(summarize(self.values), which)
        return None


# Every param that tells two figures of one metric apart (what was measured, not how the run
# went): IOR's read vs write, HPCC's RandomAccess variant and generator, fio's completion vs total
# latency, perftest's test, collectives' element count, HPL's grid, the figure a derived one was
# taken of.
IDENTITY = (
    "size", "mpi", "ranks", "nodes", "ppn", "threads", "mode", "op", "scope", "domain",
    "precision", "n", "N", "NB", "workload", "job", "direction", "rw", "bs", "iodepth",
    "numjobs", "curve_pct", "test", "working_set_bytes", "stat", "variant", "operation",
    "latency", "generator", "per", "pattern", "benchmark", "api", "host", "group",
    "transfer_size", "block_size", "file_per_proc", "huge_pages", "cpu", "of", "source",
    "datatype", "device", "bidirectional", "rwmixread", "tasks", "count", "P", "Q", "procs",
    "summary", "node", "rank", "kind",  # all-pairs: a node's figure or the matrix's, and which
    # IOR and mdtest: what tells two tests (or two runs) of one imported file apart
    "run", "iteration", "collective", "segments", "fsync", "fsync_per_write", "random_offset",
    "direct_io", "reorder_tasks", "reorder_random", "unique_dir", "items_per_rank",
    "items_per_dir", "depth", "branching", "files_only", "dirs_only", "shared_file",
    "stonewall_s",
    # GPUs: which card, STREAM kernel, host memory, peer pair, NCCL's buffers
    "gpu", "kernel", "memory", "src", "dst", "buffers",
)  # fmt: skip
# Not identity: ``mpi_label`` (a probe's MPI version string, or an import's file name: two runs
# before and after an MPI upgrade, or two imported files, must still pair) and ``source_file``.


def identity(params: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """The params that say what a figure measured (not how the run went), as strings."""
    return tuple((k, str(params[k])) for k in IDENTITY if k in params)


def measured(samples: Iterable[Sample]) -> list[Measured]:
    """A run's figures: repetitions folded into their median, and the derived figures."""
    return measured_figures(fold_repetitions(samples))


def measured_figures(figures: list[Figure]) -> list[Measured]:
    """As :func:`measured`, from figures already folded (a run's cache); the points of a
    series over time (``MetricInfo.series``) are not figures to judge."""
    return [
        measured_one(f) for f in with_derived(figures) if not metric_info(f.sample.metric).series
    ]


def measured_one(fig: Figure) -> Measured:
    """One folded figure as compared: its median, its repetitions' values, its statistics."""
    s = fig.sample
    values = fig.values or (s.value,)
    return Measured(s.probe, s.metric, dict(s.params), float(s.value), values, s.stats, s.unit,
                    s.better, s.run_id)  # fmt: skip


@dataclass(frozen=True)
class Row:
    metric: str
    params: tuple[tuple[str, str], ...]
    label: str  # the reference's column/row name, or the other run's id
    ref: float  # canonical; the nearest end of a range
    ref_text: str  # as published ("~260 GB/s"), or the other run's value
    ours: float | None
    stat: str
    unit: str  # display unit
    better: str
    ratio: float | None  # goodness: > 1 this run is better
    verdict: Verdict
    significance: str  # "significant", "not significant" or "unknown"
    test: Test | None
    tolerance: Tolerance
    note: str = ""


@dataclass
class Comparison:
    rows: list[Row] = field(default_factory=list)
    # figures of this run that nothing matched: (metric, count)
    unmatched: list[tuple[str, int]] = field(default_factory=list)
    # reference points (or figures of the other run) this run did not measure: (what, count)
    missing: list[tuple[str, int]] = field(default_factory=list)
    # keys several figures of one run share, so never compared: "metric {params}"
    ambiguous: list[str] = field(default_factory=list)


# -- the verdict itself -----------------------------------------------------------------------


def judge(
    ours: float, low: float | None, high: float | None, better: str, tol: Tolerance
) -> tuple[Verdict, float]:
    """(verdict, goodness ratio) of ``ours`` against [low, high] (see the module docstring)."""
    if low is not None and ours < low * (1 + tol.lower):
        worse = better == "higher"
        return ("worse" if worse else "better"), _goodness(ours, low, better)
    if high is not None and ours > high * (1 + tol.upper):
        return ("better" if better == "higher" else "worse"), _goodness(ours, high, better)
    if low is not None and ours < low:
        return "same", _goodness(ours, low, better)
    if high is not None and ours > high:
        return "same", _goodness(ours, high, better)
    return "same", 1.0


def _goodness(ours: float, ref: float, better: str) -> float:
    """ours/ref (higher is better) or ref/ours (lower is better); a rate of 0 against a
    positive reference is 0 (as bad as it gets, so --fail-below catches it), else NaN."""
    if ref > 0 and ours == 0 and better == "higher":
        return 0.0
    if ours <= 0 or ref <= 0:
        return math.nan
    return ours / ref if better == "higher" else ref / ours


def significance(a: Measured | None, b: Measured, ref_stats: Stats | None = None) -> Test | None:
    """Mann–Whitney U on repetitions, else Welch's t on summary statistics, else None.

    Two sides holding the very same values (a run compared with itself) differ by nothing, so
    the answer is "not significant" (p = 1) without a test, whatever statistics they carry."""
    if a is not None and a.values == b.values and a.stats == b.stats:
        return Test("identical values", 0.0, 1.0)
    if a is not None and len(a.values) > 1 and len(b.values) > 1:
        return mann_whitney(a.values, b.values)
    sa = ref_stats if a is None else (a.stats if len(a.values) == 1 else summarize(a.values))
    sb = b.stats if len(b.values) == 1 else summarize(b.values)
    if sa is None or sb is None:
        return None
    if None in (sa.mean, sa.stddev, sb.mean, sb.stddev) or sa.n < 2 or sb.n < 2:
        return None
    return welch(sa.mean, sa.stddev, sa.n, sb.mean, sb.stddev, sb.n)  # type: ignore[arg-type]


def sig_text(test: Test | None) -> str:
    if test is None:
        return "unknown"
    return "significant" if test.significant else "not significant"


def row_order(row: Row) -> tuple:
    def num(v: str) -> tuple[int, float, str]:
        try:
            return (0, float(v), "")
        except ValueError:
            return (1, 0.0, v)

    return (row.metric, row.label, [(k, num(v)) for k, v in row.params])


# -- a run against another run -----------------------------------------------------------------


def compare_runs(
    base: list[Measured],
    new: list[Measured],
    *,
    tolerances: Mapping[str, Tolerance] | None = None,
) -> Comparison:
    """``new`` judged against ``base`` figure by figure (identity params equal)."""
    tolerances = tolerances or {}
    default = tolerances.get("default", Tolerance())
    base_by, base_several = _index(base)
    new_by, new_several = _index(new)
    several = base_several | new_several
    out = Comparison(ambiguous=sorted(f"{k[0]} {dict(k[1])}" for k in several))
    for key in (set(base_by) & set(new_by)) - several:
        a, b = base_by[key], new_by[key]
        tol = tolerances.get(key[0], default)
        verdict, ratio = judge(b.value, a.value, a.value, a.better, tol)
        test = significance(a, b)
        out.rows.append(
            Row(
                key[0],
                key[1],
                a.run_id,
                a.value,
                "",
                b.value,
                "value",
                metric_info(key[0]).display if a.unit == metric_info(key[0]).unit else a.unit,
                a.better,
                ratio,
                verdict,
                sig_text(test),
                test,
                tol,
            )
        )
    out.rows.sort(key=row_order)
    only_new: dict[str, int] = {}
    for k in set(new_by) - set(base_by):
        only_new[k[0]] = only_new.get(k[0], 0) + 1
    only_base: dict[str, int] = {}
    for k in set(base_by) - set(new_by):
        only_base[k[0]] = only_base.get(k[0], 0) + 1
    out.unmatched = sorted(only_new.items())
    out.missing = sorted(only_base.items())
    return out


def _index(figures: list[Measured]) -> tuple[dict[tuple, Measured], set[tuple]]:
    """Figures by match key, and the keys several figures share (never compared)."""
    by: dict[tuple, Measured] = {}
    several: set[tuple] = set()
    for f in figures:
        key = f.key()
        if key in by:
            several.add(key)
        by[key] = f
    return by, several


def failing(
    rows: Iterable[Row], *, fail_below: float | None = None, fail_on_worse: bool = False
) -> list[Row]:
    """Rows that should fail a CI or health check. A row fails unless the noise could explain it
    ("not significant"): a published figure has no repetitions, so "unknown" still fails."""
    out = []
    for r in rows:
        if r.verdict == "not comparable" or r.significance == "not significant" or r.ratio is None:
            continue
        if (fail_on_worse and r.verdict == "worse") or (
            fail_below is not None and r.ratio < fail_below
        ):
            out.append(r)
    return out
