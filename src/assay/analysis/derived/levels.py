"""Memory levels read from a measured latency ladder, and where they disagree with sizes.

memlat labels each working set by size: the smallest cache it fits in (``level`` in the
sample's params, from the cache sizes ``/sys`` reports). That is a guess: a VM may report the
host's L3 while it gets a slice of it, an inclusive L2 holds less than its size, an L3 may be
partitioned. The curve says what the hardware did. Here the ladder is cut into plateaus where
the latency jumps; each plateau is one level as measured; a working set whose size label
differs from the level its plateau gets is a disagreement, said in words (issue 13: "a 4 MiB
set at 228 ns is labelled L3").

Pure: the stored points in, plateaus and verdicts out. The report decides how to show them.
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

# A step between neighbouring working sets at least this large starts a new level: caches
# differ by 3x or more in latency (L1 ~1 ns, L2 ~4 ns, L3 ~10-40 ns, DRAM ~80-130 ns),
# while noise and the slow rise inside a level (TLB reach, prefetch) move a few per cent a step.
# 1.6 and 2.5 were chosen on a clean ladder and on a noisy one measured on a shared 2-core VM
# (tests/derive/test_levels.py holds both): lower values split that VM's DRAM plateau in two.
JUMP = 1.6
# And a level never spans more than this from its fastest point, so that a transition spread
# over several small steps (an L2 of 1 MiB shading into the L3) still cuts the ladder.
SPAN = 2.5
# A plateau needs this many working sets; fewer are a transition between levels.
MIN_POINTS = 2


@dataclass(frozen=True)
class LadderPoint:
    """One working set of the ladder: its size, its latency (s) and its label by size."""

    working_set: int
    latency: float
    size_level: str


@dataclass(frozen=True)
class Plateau:
    """A run of working sets at about one latency: one memory level as measured."""

    name: str  # "L1" ... "DRAM"; "L2 or L3" when the curve has fewer levels than the sizes
    first_bytes: int
    last_bytes: int
    latency: float  # median of its points, seconds
    points: int


@dataclass(frozen=True)
class Disagreement:
    """A working set whose size label is not the level its latency puts it in."""

    working_set: int
    latency: float
    size_level: str
    measured_level: str

    def describe(self) -> str:
        return (
            f"{_bytes(self.working_set)} at {self.latency * 1e9:.1f} ns: sized for "
            f"{self.size_level}, measures as {self.measured_level}"
        )


@dataclass(frozen=True)
class LevelReading:
    plateaus: list[Plateau]
    transitions: list[int]  # working sets between plateaus (a one-point run)
    disagreements: list[Disagreement]
    note: str | None  # why levels could not be matched to size labels, if so


def _bytes(n: int) -> str:
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor:
            return f"{n / factor:.3g} {unit}"
    return f"{n} B"


def segment(latencies: Sequence[float], jump: float = JUMP, span: float = SPAN) -> list[range]:
    """Cut a ladder (latencies in working-set order, all > 0) into runs of one level.

    Point i joins the run of point i-1 when both hold:
      latency[i] / latency[i-1] < jump       (no step up between neighbours), and
      latency[i] / min(run)     < span       (the run has not drifted a level's worth);
    otherwise it starts a new run. A step down (a faster point after a slower one, i.e.
    noise) never cuts. Returns the runs as index ranges, in order, covering every point.
    """
    runs: list[range] = []
    start = 0
    low = math.inf
    for i, value in enumerate(latencies):
        if value <= 0 or not math.isfinite(value):
            raise ValueError(f"latency {value!r} at point {i} is not a positive number")
        if i > start and (value / latencies[i - 1] >= jump or value / low >= span):
            runs.append(range(start, i))
            start, low = i, math.inf
        low = min(low, value)
    if latencies:
        runs.append(range(start, len(latencies)))
    return runs


def merge_close(latencies: Sequence[float], runs: list[range], jump: float = JUMP) -> list[range]:
    """Join neighbouring runs whose medians differ by less than ``jump`` (a ratio), the
    closest pair first, until none is left: one noisy point (an interrupt, a page walk) can
    cut a level in two, but both halves then sit at one latency, which no two levels do."""
    runs = list(runs)
    while len(runs) > 1:
        medians = [statistics.median(latencies[i] for i in r) for r in runs]
        ratios = [max(a, b) / min(a, b) for a, b in itertools.pairwise(medians)]
        k = min(range(len(ratios)), key=ratios.__getitem__)
        if ratios[k] >= jump:
            break
        runs[k : k + 2] = [range(runs[k].start, runs[k + 1].stop)]
    return runs


def _candidates(count: int, expected: list[str]) -> list[tuple[str, ...]]:
    """The size labels each of ``count`` plateaus may be, in ladder order (see read_levels)."""
    if count == len(expected):
        return [(name,) for name in expected]
    if count == 0 or len(expected) < 2:
        return [() for _ in range(count)]
    if count == 1:
        return [tuple(expected)]
    middle = tuple(expected[1:-1])
    return [(expected[0],), *([middle] * (count - 2)), (expected[-1],)]


def read_levels(
    points: Sequence[LadderPoint],
    *,
    jump: float = JUMP,
    span: float = SPAN,
    min_points: int = MIN_POINTS,
) -> LevelReading:
    """The levels a ladder shows, and every working set where size and measurement disagree.

    1. Points are sorted by working set, cut by ``segment`` and joined again by
       ``merge_close``; runs of at least
       ``min_points`` are plateaus (levels), shorter ones are transitions (not judged).
    2. The size labels in ladder order, without repeats (e.g. L1, L2, L3, DRAM), are the
       levels the sizes expect. With as many plateaus, the k-th plateau is the k-th label.
       Otherwise the ends still anchor - the smallest sets are the first level, the largest
       (4x the LLC by default) the last - and each plateau between may be any of the labels
       between ("L2 or L3"); ``note`` says how many levels the curve shows against how many
       the sizes expect.
    3. A point disagrees when its size label is not one its plateau may be: the issue's
       "4 MiB set at 228 ns labelled L3" sits in the DRAM plateau, so it reads "sized for
       L3, measures as DRAM".
    """
    ordered = sorted(points, key=lambda p: p.working_set)
    if not ordered:
        return LevelReading([], [], [], None)
    latencies = [p.latency for p in ordered]
    runs = merge_close(latencies, segment(latencies, jump, span), jump)
    kept = [r for r in runs if len(r) >= min_points]
    transitions = [ordered[i].working_set for r in runs if len(r) < min_points for i in r]
    expected: list[str] = []
    for p in ordered:
        if p.size_level not in expected and p.size_level != "?":
            expected.append(p.size_level)
    note = None
    if len(kept) != len(expected):
        note = (
            f"the latency curve shows {len(kept)} level(s) where the cache sizes expect "
            f"{len(expected)} ({', '.join(expected) or 'none known'})"
        )
    plateaus, disagreements = [], []
    for k, (run, may_be) in enumerate(zip(kept, _candidates(len(kept), expected), strict=True)):
        name = " or ".join(may_be) if may_be else f"level {k + 1}"
        members = [ordered[i] for i in run]
        plateaus.append(
            Plateau(
                name=name,
                first_bytes=members[0].working_set,
                last_bytes=members[-1].working_set,
                latency=statistics.median(p.latency for p in members),
                points=len(members),
            )
        )
        disagreements += [
            Disagreement(p.working_set, p.latency, p.size_level, name)
            for p in members
            if may_be and p.size_level != "?" and p.size_level not in may_be
        ]
    return LevelReading(plateaus, transitions, disagreements, note)


def reading_notes(reading: LevelReading, label: str) -> list[str]:
    """What a report says of a reading, one line each: the levels measured, then where size
    and measurement disagree ("cpu 0: measured levels: L1 4 KiB-32 KiB 1.2 ns, ..."), then
    the note on unmatched counts. No lines when nothing was read."""
    if not reading.plateaus:
        return []
    levels = ", ".join(
        f"{p.name} {_bytes(p.first_bytes)}-{_bytes(p.last_bytes)} {p.latency * 1e9:.1f} ns"
        for p in reading.plateaus
    )
    lines = [f"{label}: levels measured from the curve: {levels}"]
    if reading.disagreements:
        said = "; ".join(d.describe() for d in reading.disagreements)
        lines.append(f"{label}: size and measurement disagree: {said}")
    if reading.note:
        lines.append(f"{label}: {reading.note}")
    return lines
