"""Summaries of repeated measurements, and folding repetitions of a job into one figure.

Percentiles use the nearest-rank method (the value below which p% of the points lie,
taking the next point up), as perftest and OSU -f report them, so p99 of 1000 points is
the 990th smallest, a measured value and never an interpolation.
"""

from __future__ import annotations

import itertools
import math
import sys
from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
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
    """The planned params of a sample, as a sortable, hashable key: names and values in turn,
    sorted by name (one flat tuple, not a pair per param: a fold keeps a key per figure, and
    a run of 250,000 distinct sizes keeps 250,000 of them).

    Float params are things a tool measured or derived alongside (min_time, bw_peak, p90) and
    differ between repetitions, so they never split a group; planned params are ints/strings.
    Called once per stored sample (a million in a large run), hence the plain loop.
    """
    names = sorted(k for k, v in params.items() if k not in PER_REPETITION and type(v) is not float)
    flat: list[object] = []
    for k in names:
        v = params[k]
        flat += (k, _frozen(v) if isinstance(v, _CONTAINERS) else v)
    return tuple(flat)


def group_key(sample: Sample) -> tuple:
    """What identifies a measurement across repetitions: its probe, metric and planned params."""
    return (sample.probe, sample.metric, *param_key(sample.params))


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


class _Groups:
    """Members grouped by key, in the order each key first came: each group's number
    (``ids``) and its first member's reference (``first``); each member's group, value and
    reference, in stored order. Arrays of 8-byte numbers: no object per member, none per group
    but its key, and no member's record kept (it is fetched again by reference when the fold
    finishes: a fold of 250,000 one-row figures kept each row's decoded line, 2 KB a row)."""

    def __init__(self) -> None:
        self.ids: dict[tuple, int] = {}
        self.first = array("q")
        self.group = array("q")
        self.values = array("d")
        self.refs = array("q")

    def add(self, key: tuple, value: float, ref: int) -> None:
        gid = self.ids.get(key)
        if gid is None:
            # a decoded line's strings are its own: interned, every group's key shares them
            key = tuple(sys.intern(v) if type(v) is str else v for v in key)
            gid = self.ids[key] = len(self.first)
            self.first.append(ref)
        self.group.append(gid)
        self.values.append(value)
        self.refs.append(ref)

    def merge(self, later: _Groups) -> None:
        """Append the members ``later`` grouped (stored after this one's)."""
        mine = np.empty(len(later.first), dtype=np.int64)
        for key, gid in later.ids.items():
            have = self.ids.get(key)
            if have is None:
                have = self.ids[key] = len(self.first)
                self.first.append(later.first[gid])
            mine[gid] = have
        self.group.frombytes(mine[np.asarray(later.group, dtype=np.int64)].tobytes())
        self.values.extend(later.values)
        self.refs.extend(later.refs)

    def spans(self) -> Iterator[tuple[int, list[float], list[int]]]:
        """Each group in order: its first member's reference, and its members' values and
        references in stored order."""
        gids = np.asarray(self.group, dtype=np.int64)
        order = np.argsort(gids, kind="stable")
        ends = np.cumsum(np.bincount(gids, minlength=len(self.first))).tolist()
        values = np.asarray(self.values, dtype=float)[order].tolist()
        refs = np.asarray(self.refs, dtype=np.int64)[order].tolist()
        del gids, order
        start = 0
        for g, end in enumerate(ends):
            yield self.first[g], values[start:end], refs[start:end]
            start = end


def _median_ref(values: list[float], refs: list[int]) -> int:
    """The reference of the median member: the lower one of an even count, by value, in
    stored order among equal values (a stable sort)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    return refs[order[(len(order) - 1) // 2]]


# The members at some references (list indices, file offsets), fetched when a fold finishes.
Fetch = Callable[[list[int]], Mapping[int, Member]]
FETCH_BATCH = 4096  # groups whose members are fetched at once


def _figures(groups: _Groups, fetch: Fetch, medians: bool) -> Iterator[Figure]:
    """The figures of ``groups`` in order, their members fetched a batch of groups at a time."""
    spans = groups.spans()
    while chunk := list(itertools.islice(spans, FETCH_BATCH)):
        median_refs = [
            _median_ref(values, refs) if medians and len(values) > 1 else None
            for _, values, refs in chunk
        ]
        wanted = [first for first, _, _ in chunk] + [r for r in median_refs if r is not None]
        members = fetch(wanted)
        for (first, values, _), median in zip(chunk, median_refs, strict=True):
            yield _figure(members[first], values, None if median is None else members[median])


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


class Folder:
    """Folds samples one at a time, keeping only their values and references (list index,
    file offset) per group, never the samples: a million stored lines fold in one pass
    without a million objects. ``figures`` and ``finish`` fetch, by reference, the members
    whose whole record a figure keeps (a group's first, its median)."""

    def __init__(self) -> None:
        self._groups = _Groups()
        self._hosts = _Groups()
        self._matrices: dict[str, dict[str, str]] = {}
        self.n = 0

    def add(self, ref: int, member: Member) -> None:
        probe, metric, params, value = _fields(member)
        key = (probe, metric, *param_key(params))
        self.n += 1
        self._groups.add(key, value, ref)
        matrix = params.get("matrix")
        # the all-pairs probe's figures name their node already (``node``): not per host again
        if params.get("placement") in HOST_PLACEMENTS and matrix is None:
            hosts = params.get("hosts")
            if isinstance(hosts, list):
                self._hosts.add((*key, _frozen(hosts)), value, ref)
        if matrix is not None and str(matrix) not in self._matrices:
            job = member.job_id if isinstance(member, Sample) else member.get("job_id")
            found = {k: str(params[k]) for k in MATRIX_PARAMS if params.get(k) is not None}
            self._matrices[str(matrix)] = {**found, "job": str(job or "")}

    def merge(self, later: Folder) -> None:
        """Add what ``later`` folded from the samples stored after this one's: groups and
        their values keep the order one pass over all the samples would have given them."""
        self._groups.merge(later._groups)
        self._hosts.merge(later._hosts)
        for path, said in later._matrices.items():
            self._matrices.setdefault(path, said)
        self.n += later.n

    @property
    def matrices(self) -> list[dict[str, str]]:
        return list(self._matrices.values())

    def figures(self, fetch: Fetch) -> Iterator[Figure]:
        """One figure per measurement, in the order they were first stored."""
        return _figures(self._groups, fetch, medians=True)

    def host_figures(self, fetch: Fetch) -> Iterator[Figure]:
        """One figure per measurement and host (``Folded.by_host``)."""
        return _figures(self._hosts, fetch, medians=False)

    def finish(self, fetch: Fetch) -> Folded:
        """The figures, all of them at once (a report's)."""
        figures = list(self.figures(fetch))
        return Folded(figures, list(self.host_figures(fetch)), self.n, self.matrices)


def _figure(first_member: Member, values: list[float], median: Member | None) -> Figure:
    first = _as_sample(first_member)
    if len(values) == 1:
        return Figure(first, 1, None, tuple(values))
    spread = summarize(values)
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
    kept = None if median is None else _as_sample(median)
    return Figure(rep, len(values), spread, tuple(values), kept)


def fold_samples(samples: Iterable[Sample]) -> Folded:
    """Group repetitions of one measurement; the figure is their median, and how they varied.

    The median, not the best: a report states what the system does, and the spread says how
    steadily. A single repetition keeps its own in-run statistics (iterations) in ``sample``.
    """
    kept = list(samples)
    folder = Folder()
    for i, s in enumerate(kept):
        folder.add(i, s)
    return folder.finish(lambda refs: {r: kept[r] for r in refs})


def fold_repetitions(samples: Iterable[Sample]) -> list[Figure]:
    """The figures of :func:`fold_samples`."""
    return fold_samples(samples).figures
