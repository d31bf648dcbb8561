"""Summaries of repeated measurements, and folding repetitions of a job into one figure.

Percentiles use the nearest-rank method (the value below which p% of the points lie,
taking the next point up), as perftest and OSU -f report them, so p99 of 1000 points is
the 990th smallest, a measured value and never an interpolation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from assay.model import Sample, Stats

# Params that differ between repetitions of the same measurement and so never split a group.
PER_REPETITION = frozenset(
    {"repetition", "hosts", "wtick", "timer_resolution", "loads", "littles_flag",
     # all-pairs: each repetition's own matrix file, and the iterations its pilot chose
     "matrix", "timed_iterations"}
)  # fmt: skip


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


_CONTAINERS = (list, tuple, dict)  # a tuple of types: isinstance checks it faster than a union


def param_key(params: Mapping[str, Any]) -> tuple:
    """The planned params of a sample, as a sortable, hashable key.

    Float params are things a tool measured or derived alongside (min_time, bw_peak, p90) and
    differ between repetitions, so they never split a group; planned params are ints/strings.
    Called once per stored sample (a million in a large run), hence the plain loop.
    """
    items = [
        (k, _frozen(v) if isinstance(v, _CONTAINERS) else v)
        for k, v in params.items()
        if k not in PER_REPETITION and type(v) is not float
    ]
    items.sort()
    return tuple(items)


def group_key(sample: Sample) -> tuple:
    """What identifies a measurement across repetitions: its probe, metric and planned params."""
    return (sample.probe, sample.metric, param_key(sample.params))


@dataclass
class Figure:
    """One reported figure: repetitions of a sample folded together."""

    sample: Sample  # the representative: value = median over repetitions, params of the first
    repetitions: int
    spread: Stats | None  # over repetitions; None for a single one
    values: tuple[float, ...] = field(default=(), repr=False)  # every repetition's value
    median: Sample | None = field(default=None, repr=False)  # see median_member

    def median_member(self) -> Sample:
        """The repetition whose value is the median (the lower one of an even count).

        A table that shows several columns of one measurement (STREAM's rate beside its
        min/avg/max times) takes them all from this one repetition, so they agree with each
        other; for an odd count its value is ``sample.value`` itself.
        """
        return self.median or self.sample

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"sample": self.sample.to_dict(), "repetitions": self.repetitions}
        if self.spread is not None:
            d["spread"] = self.spread.to_dict()
        if self.values:
            d["values"] = list(self.values)
        if self.median is not None:
            d["median"] = self.median.to_dict()
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Figure:
        return cls(
            Sample.from_dict(d["sample"]),
            int(d["repetitions"]),
            Stats.from_dict(d["spread"]) if "spread" in d else None,
            tuple(float(v) for v in d.get("values", ())),
            Sample.from_dict(d["median"]) if "median" in d else None,
        )


# A stored sample is folded either as a Sample (a run in memory) or as the dict of its stored
# line (a run read from disk, where a million Sample objects would cost seconds).
Member = Sample | Mapping[str, Any]


def _as_sample(member: Member) -> Sample:
    return member if isinstance(member, Sample) else Sample.from_dict(member)


def _fields(member: Member) -> tuple[str, str, Mapping[str, Any], float]:
    if isinstance(member, Sample):
        return member.probe, member.metric, member.params, member.value
    return member["probe"], member["metric"], member.get("params") or {}, float(member["value"])


@dataclass
class _Group:
    first: Member
    values: list[float] = field(default_factory=list)
    refs: list[int] = field(default_factory=list)  # where each member is (index, file offset)

    def median_ref(self) -> int:
        """The reference of the median member: the lower one of an even count, by value, in
        stored order among equal values (a stable sort)."""
        order = sorted(range(len(self.values)), key=self.values.__getitem__)
        return self.refs[order[(len(order) - 1) // 2]]


# Placements whose samples differ by host: an all-pairs link, a node of a per-node pass. Their
# figures fold repetitions per host too (``Folded.by_host``), for the N x N and per-node tables.
HOST_PLACEMENTS = frozenset({"all-pairs", "per-node"})


# What the all-pairs probe's samples say of their matrix file (``params.matrix``, relative to
# the run directory): its job's kind (sweep, retest, resume), the sweep job a follow-up
# continues, the MPI. The figures fold a file's samples with its repetitions' (each keeps the
# first one's params), so the files are kept apart, once each, as they are folded.
MATRIX_PARAMS = ("matrix", "kind", "sweep_job", "mpi_label", "mpi")


@dataclass
class Folded:
    """A run's samples folded: one figure per measurement, and one per measurement and host
    for the placements that name hosts; ``matrices``: every all-pairs matrix file its samples
    name, in stored order (``MATRIX_PARAMS`` and ``job``, the job id)."""

    figures: list[Figure]
    by_host: list[Figure]
    n_samples: int
    matrices: list[dict[str, str]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "n_samples": self.n_samples,
            "figures": [f.to_dict() for f in self.figures],
            "by_host": [f.to_dict() for f in self.by_host],
            "matrices": self.matrices,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Folded:
        return cls(
            [Figure.from_dict(f) for f in d["figures"]],
            [Figure.from_dict(f) for f in d["by_host"]],
            int(d["n_samples"]),
            [dict(m) for m in d.get("matrices", [])],
        )


def _append(
    groups: dict[tuple, _Group], key: tuple, member: Member, value: float, ref: int
) -> None:
    group = groups.get(key)
    if group is None:
        group = groups[key] = _Group(member)
    group.values.append(value)
    group.refs.append(ref)


class Folder:
    """Folds samples one at a time, keeping only their values (not the samples) per group:
    a million stored lines fold in one pass without a million objects. ``add`` takes a
    reference (list index, file offset) for each member; ``median_refs`` names the members
    whose whole record a figure keeps, and ``finish`` gets them by reference."""

    def __init__(self) -> None:
        self._groups: dict[tuple, _Group] = {}
        self._hosts: dict[tuple, _Group] = {}
        self._matrices: dict[str, dict[str, str]] = {}
        self.n = 0

    def add(self, ref: int, member: Member) -> None:
        probe, metric, params, value = _fields(member)
        key = (probe, metric, param_key(params))
        self.n += 1
        _append(self._groups, key, member, value, ref)
        matrix = params.get("matrix")
        # the all-pairs probe's figures name their node already (``node``): not per host again
        if params.get("placement") in HOST_PLACEMENTS and matrix is None:
            hosts = params.get("hosts")
            if isinstance(hosts, list):
                _append(self._hosts, (*key, _frozen(hosts)), member, value, ref)
        if matrix is not None and str(matrix) not in self._matrices:
            job = member.job_id if isinstance(member, Sample) else member.get("job_id")
            found = {k: str(params[k]) for k in MATRIX_PARAMS if params.get(k) is not None}
            self._matrices[str(matrix)] = {**found, "job": str(job or "")}

    def merge(self, later: Folder) -> None:
        """Add what ``later`` folded from the samples stored after this one's: groups and
        their values keep the order one pass over all the samples would have given them."""
        for mine, theirs in ((self._groups, later._groups), (self._hosts, later._hosts)):
            for key, group in theirs.items():
                have = mine.get(key)
                if have is None:
                    mine[key] = group
                else:
                    have.values += group.values
                    have.refs += group.refs
        for path, said in later._matrices.items():
            self._matrices.setdefault(path, said)
        self.n += later.n

    def median_refs(self) -> set[int]:
        return {g.median_ref() for g in self._groups.values() if len(g.values) > 1}

    def finish(self, members: Mapping[int, Member]) -> Folded:
        """The figures; ``members`` holds (at least) the members ``median_refs`` named."""
        figures = [_figure(g, members) for g in self._groups.values()]
        by_host = [_figure(g, None) for g in self._hosts.values()]
        return Folded(figures, by_host, self.n, list(self._matrices.values()))


def _figure(group: _Group, members: Mapping[int, Member] | None) -> Figure:
    first = _as_sample(group.first)
    if len(group.values) == 1:
        return Figure(first, 1, None, tuple(group.values))
    spread = summarize(group.values)
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
    median = None if members is None else _as_sample(members[group.median_ref()])
    return Figure(rep, len(group.values), spread, tuple(group.values), median)


def fold_samples(samples: Iterable[Sample]) -> Folded:
    """Group repetitions of one measurement; the figure is their median, and how they varied.

    The median, not the best: a report states what the system does, and the spread says how
    steadily. A single repetition keeps its own in-run statistics (iterations) in ``sample``.
    """
    kept = list(samples)
    folder = Folder()
    for i, s in enumerate(kept):
        folder.add(i, s)
    return folder.finish(dict(enumerate(kept)))


def fold_repetitions(samples: Iterable[Sample]) -> list[Figure]:
    """The figures of :func:`fold_samples`."""
    return fold_samples(samples).figures
