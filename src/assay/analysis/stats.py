"""Summaries of repeated measurements, and folding repetitions of a job into one figure.

Percentiles use the nearest-rank method (the value below which p% of the points lie,
taking the next point up), as perftest and OSU -f report them, so p99 of 1000 points is
the 990th smallest, a measured value and never an interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from assay.model import Sample, Stats

# Params that differ between repetitions of the same measurement and so never split a group.
PER_REPETITION = frozenset(
    {"repetition", "hosts", "wtick", "timer_resolution", "loads", "littles_flag"}
)


def nearest_rank(sorted_values: Sequence[float], p: float) -> float:
    # Fraction arithmetic: in floats 99.9 / 100 * 1000 is 999.0000000000001, whose ceil is 1000.
    k = max(1, math.ceil(Fraction(str(p)) * len(sorted_values) / 100))
    return float(sorted_values[k - 1])


def summarize(values: Iterable[float]) -> Stats:
    data = np.sort(np.asarray(list(values), dtype=float))
    if data.size == 0:
        return Stats(n=0)
    return Stats(
        n=int(data.size),
        min=float(data[0]),
        max=float(data[-1]),
        mean=float(data.mean()),
        median=float(np.median(data)),
        stddev=float(data.std(ddof=1)) if data.size > 1 else 0.0,
        p99=nearest_rank(data, 99),
        p999=nearest_rank(data, 99.9),
    )


def _frozen(value: object) -> object:
    if isinstance(value, list | tuple):
        return tuple(_frozen(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _frozen(v)) for k, v in value.items()))
    return value


def group_key(sample: Sample) -> tuple:
    """What identifies a measurement across repetitions: its probe, metric and planned params.

    Float params are things a tool measured or derived alongside (min_time, bw_peak, p90) and
    differ between repetitions, so they never split a group; planned params are ints/strings.
    """
    params = tuple(
        sorted(
            (k, _frozen(v))
            for k, v in sample.params.items()
            if k not in PER_REPETITION and not isinstance(v, float)
        )
    )
    return (sample.probe, sample.metric, params)


@dataclass
class Figure:
    """One reported figure: repetitions of a sample folded together."""

    sample: Sample  # the representative: value = median over repetitions, params of the first
    repetitions: int
    spread: Stats | None  # over repetitions; None for a single one
    members: tuple[Sample, ...] = field(default=(), repr=False)  # the repetitions, as stored

    def median_member(self) -> Sample:
        """The repetition whose value is the median (the lower one of an even count).

        A table that shows several columns of one measurement (STREAM's rate beside its
        min/avg/max times) takes them all from this one repetition, so they agree with each
        other; for an odd count its value is ``sample.value`` itself.
        """
        if not self.members:
            return self.sample
        ordered = sorted(self.members, key=lambda s: s.value)
        return ordered[(len(ordered) - 1) // 2]


def fold_repetitions(samples: Iterable[Sample]) -> list[Figure]:
    """Group repetitions of one measurement; the figure is their median, and how they varied.

    The median, not the best: a report states what the system does, and the spread says how
    steadily. A single repetition keeps its own in-run statistics (iterations) in ``sample``.
    """
    groups: dict[tuple, list[Sample]] = {}
    for s in samples:
        groups.setdefault(group_key(s), []).append(s)
    figures = []
    for members in groups.values():
        if len(members) == 1:
            figures.append(Figure(members[0], 1, None, (members[0],)))
            continue
        spread = summarize(m.value for m in members)
        first = members[0]
        rep = Sample(
            probe=first.probe,
            metric=first.metric,
            value=spread.median if spread.median is not None else first.value,
            unit=first.unit,
            better=first.better,
            params={k: v for k, v in first.params.items() if k != "repetition"},
            stats=first.stats,
            run_id=first.run_id,
            job_id=first.job_id,
        )
        figures.append(Figure(rep, len(members), spread, tuple(members)))
    return figures
