"""Which of several figures of one row (one message size, one column per MPI) is best, when the
difference is more than noise.

The figure with the best value is the row's best only when, against every other figure of the row,
the test ``assay compare`` uses (:func:`assay.analysis.compare.verdict.significance`: Mann–Whitney U
over repetitions, else Welch's t over the tools' own iterations) finds a difference at p < 0.05
**and** that difference points the same way as the values. The second condition matters where the
test and the figure come from different data: assay's p2p probe reports OSU's figure (one timer
around the whole loop) and, from a second pass, each iteration's time; when a hiccup hit one pass
and not the other, the figure can say one MPI is faster while its iterations say, significantly, the
other. Then no best is marked: the evidence disagrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from assay.analysis.compare.verdict import Measured, measured_one, significance
from assay.analysis.statistics.significance import Test
from assay.analysis.statistics.stats import Figure

Outcome = Literal["best", "not significant", "contradicted", "untestable", "alone"]


@dataclass(frozen=True)
class RowBest:
    index: int | None  # the best figure's position in the row; None unless outcome is "best"
    # "best"; "not significant" (the noise could explain a difference), "contradicted" (the test
    # points the other way), "untestable" (a side has no repetitions and no statistics with a
    # standard deviation), "alone" (fewer than two figures)
    outcome: Outcome


def row_best(figures: Sequence[Figure | None], better: str) -> RowBest:
    """The row's best figure when it is significantly better than each other one (see the
    module docstring), or why there is none."""
    present = [(i, f) for i, f in enumerate(figures) if f is not None]
    if len(present) < 2:
        return RowBest(None, "alone")
    pick = min if better == "lower" else max
    best_i, best = pick(present, key=lambda p: p[1].sample.value)
    a = measured_one(best)
    for i, other in present:
        if i == best_i:
            continue
        b = measured_one(other)
        test = significance(a, b)
        if test is None:
            return RowBest(None, "untestable")
        if not test.significant:
            return RowBest(None, "not significant")
        if not _points_to_a(test, a, b, better):
            return RowBest(None, "contradicted")
    return RowBest(best_i, "best")


def significant_best(figures: Sequence[Figure | None], better: str) -> int | None:
    """The index of :func:`row_best`'s best figure, None when there is none."""
    return row_best(figures, better).index


def _points_to_a(test: Test, a: Measured, b: Measured, better: str) -> bool:
    """Whether the test's difference says ``a`` is the better side."""
    if test.method == "Mann-Whitney U":  # U counts pairs with a's value above b's
        half = len(a.values) * len(b.values) / 2
        return test.statistic < half if better == "lower" else test.statistic > half
    if test.method == "Welch t":  # t = (mean_b - mean_a) / standard error
        return test.statistic > 0 if better == "lower" else test.statistic < 0
    return False
