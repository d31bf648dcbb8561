"""Comparing two runs figure by figure, with honest "not significant" verdicts (pyperf's way).

Figures are matched on their metric and every param that says *what* was measured (size, MPI,
ranks, threads, workload, IOR's operation, HPCC's RandomAccess variant and generator, fio's
completion or total latency, ...), not on how the run went (hosts, timings, repetition). When
one run has several figures under one key, they are not compared (which pair is meant is
unknown) and are named instead.

A ratio is reported as **goodness**: new/old for higher-is-better metrics and old/new for
lower-is-better ones, so > 1 always means the new run is better.

Significance: when both figures carry a mean, a standard deviation and n ≥ 2 (repetitions, or
the iterations of one job), Welch's t statistic t = (m₂ − m₁) / √(s₁²/n₁ + s₂²/n₂) is computed;
|t| < 2 (about the 95% level for the sample sizes involved) is "not significant". Without
statistics on both sides the verdict is "unknown", never a guess.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from assay.analysis.stats import Figure
from assay.model import Stats

IDENTITY_PARAMS = (
    "size", "mpi", "ranks", "nodes", "ppn", "threads", "mode", "op", "scope", "domain",
    "precision", "n", "N", "NB", "workload", "job", "direction", "rw", "bs", "iodepth",
    "numjobs", "curve_pct", "test", "working_set_bytes", "stat", "variant",
    # what else tells two figures of one metric apart
    "operation", "latency", "generator", "per", "pattern", "benchmark", "api", "host",
    "group", "transfer_size", "block_size", "file_per_proc", "huge_pages", "cpu", "of",
    "source", "datatype", "device",
)  # fmt: skip

Verdict = Literal["better", "worse", "not significant", "unknown"]


def match_key(fig: Figure) -> tuple:
    p = fig.sample.params
    return (fig.sample.metric, tuple((k, str(p[k])) for k in IDENTITY_PARAMS if k in p))


def _natural(text: str) -> tuple[int, float, str]:
    """Numbers sort as numbers (size 2 < 16 < 128), other text after them, as text."""
    try:
        return (0, float(text), "")
    except ValueError:
        return (1, 0.0, text)


def sort_key(key: tuple) -> tuple:
    metric, params = key
    return (metric, tuple((k, _natural(v)) for k, v in params))


def _index(figures: list[Figure]) -> tuple[dict[tuple, Figure], set[tuple]]:
    """Figures by match key, and the keys several figures share (never compared)."""
    by: dict[tuple, Figure] = {}
    several: set[tuple] = set()
    for f in figures:
        key = match_key(f)
        if key in by:
            several.add(key)
        by[key] = f
    return by, several


@dataclass(frozen=True)
class Comparison:
    metric: str
    params: tuple[tuple[str, str], ...]
    old: float
    new: float
    unit: str
    better: str
    goodness: float  # > 1: the new run is better
    t: float | None
    verdict: Verdict


def _welch_t(a: Stats | None, b: Stats | None) -> float | None:
    if a is None or b is None:
        return None
    if None in (a.mean, b.mean, a.stddev, b.stddev) or a.n < 2 or b.n < 2:
        return None
    se = math.sqrt(a.stddev**2 / a.n + b.stddev**2 / b.n)  # type: ignore[operator]
    if se == 0:
        return math.inf if a.mean != b.mean else 0.0
    return (b.mean - a.mean) / se  # type: ignore[operator]


def _stats(fig: Figure) -> Stats | None:
    return fig.spread or fig.sample.stats


def compare(old: list[Figure], new: list[Figure]) -> tuple[list[Comparison], list[str]]:
    """Every figure present in both runs, and the keys found in only one of them."""
    old_by, old_several = _index(old)
    new_by, new_several = _index(new)
    ambiguous = old_several | new_several
    out: list[Comparison] = []
    for key in sorted((set(old_by) & set(new_by)) - ambiguous, key=sort_key):
        a, b = old_by[key], new_by[key]
        va, vb = a.sample.value, b.sample.value
        if va <= 0 or vb <= 0:
            continue
        lower = a.sample.better == "lower"
        goodness = va / vb if lower else vb / va
        t = _welch_t(_stats(a), _stats(b))
        verdict: Verdict
        if t is None:
            verdict = "unknown"
        elif abs(t) < 2:
            verdict = "not significant"
        else:
            verdict = "better" if goodness > 1 else "worse"
        out.append(
            Comparison(key[0], key[1], va, vb, a.sample.unit, a.sample.better, goodness, t, verdict)
        )
    only = [f"only in the first run: {k[0]} {dict(k[1])}" for k in set(old_by) - set(new_by)]
    only += [f"only in the second run: {k[0]} {dict(k[1])}" for k in set(new_by) - set(old_by)]
    only += [
        f"several figures with {k[0]} {dict(k[1])} in one run: not compared" for k in ambiguous
    ]
    return out, sorted(only)
