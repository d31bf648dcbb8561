r"""The eager → rendezvous protocol switch: a step in a latency-against-size curve.

MPI libraries switch protocol (short/inline → eager → rendezvous) at fixed sizes, and each
protocol has its own :math:`(\alpha, \beta)`; the switch shows as a *step*. ParkBench's COMMS1
fits each side of such a breakpoint separately; :func:`find_protocol_switch` finds it
automatically (method in its docstring) so :mod:`assay.analysis.derived.hockney` can do the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.analysis.statistics.robust import (
    MIN_POINTS,
    ArrayLike,
    InsufficientDataError,
    as_curve,
    huber_line,
    median_per_size,
)

# A side of a candidate protocol split needs this many distinct sizes: with two, a line passes
# through both points exactly and says nothing about noise; three is the least that can.
MIN_SIDE = 3
# Splits tried: every one of a real sweep (OSU's runs to 4 MiB in 23 sizes, IMB's in 24). Each
# split fits two lines over all the sizes, so trying every split of a curve of 250,000 sizes
# (an imported file can hold one) was O(n²): hours, in every report format. Past this many, the
# splits tried are those at the largest relative rises between consecutive sizes: a step, the
# only thing a split can report, is such a rise.
MAX_SPLITS = 64


@dataclass(frozen=True)
class SwitchPoint:
    """A step in a latency-vs-size curve, e.g. the eager → rendezvous protocol switch.

    ``jump`` is the step beyond the ordinary ``Δn / β`` growth (which ``time_after - time_before``
    also holds): the smaller, in relative terms, of ``t_R(size_before) - time_before`` and
    ``time_after - t_L(size_after)``, t_L and t_R being the robust lines of the two regimes.
    """

    size_before: float  # B, last size of the small-message regime
    size_after: float  # B, first size of the large-message regime
    time_before: float  # s, measured (median) at size_before
    time_after: float  # s, measured (median) at size_after
    jump: float  # s, the step beyond the lines' slope (see above)
    relative_jump: float  # jump relative to the lower time it was measured against
    noise: float  # robust relative scatter: the larger MAD σ of the two lines' residuals


def find_protocol_switch(
    sizes: ArrayLike,
    times: ArrayLike,
    *,
    min_jump: float = 0.10,
    z: float = 5.0,
) -> SwitchPoint | None:
    r"""The most likely protocol switch (a step up) in a latency curve, or None.

    Method: two-segment robust change-point fit (segmented regression).

    A switch shows as a *step*: between two consecutive sizes the time jumps by more than the
    slope of either regime explains. For every split between consecutive sizes :math:`n_k |
    n_{k+1}` (at least ``MIN_SIDE`` sizes on each side) two robust lines are fitted, :math:`\hat
    t_L` to the sizes up to :math:`n_k` and :math:`\hat t_R` to those from :math:`n_{k+1}`. The
    step is looked at from both sides, each measured boundary point against the *other* side's
    line, and the smaller taken:

    .. math::  J = \min\left(\frac{\hat t_R(n_k) - t_k}{t_k},\;
                             \frac{t_{k+1} - \hat t_L(n_{k+1})}{\hat t_L(n_{k+1})}\right)

    Both views are needed. The left line's slope is poorly pinned down when its sizes are tiny
    (0..64 B differ by nanoseconds), so its extrapolation alone fakes steps; the right line,
    back-extrapolated with the slope its large sizes fix, is not fooled. And comparing with the
    *measured* boundary points, not the two lines with each other, means a kink (the regimes'
    lines meeting at the split, or crossing near it, with only the slope changing) gives
    :math:`J \approx 0`: no switch. A split qualifies when :math:`J \ge \max(\text{min\_jump},
    z\,\sigma)`, σ being the larger of the two lines' MAD scales of relative residuals: noisy
    data need larger steps, and an outlier on a short side inflates that side's σ, so one slow
    size does not make a step. Among the qualifying splits, the one whose two lines leave the
    least total :math:`\sum |r_i|` is reported (the change-point estimate of segmented
    regression). One physical constraint keeps noise out of the slopes: each line's slope is
    clamped at ≥ 0 (time never falls with size).

    Assumptions: a switch makes messages *slower* (only steps up are reported); one switch is
    reported (the best-fitting one) even if the curve has several; repetitions of a size are
    reduced to their median first.

    ``min_jump`` (default 10 %): smaller steps are within the run-to-run variation of typical
    MPI latencies and not worth splitting a fit for. ``z`` (default 5): how many noise σ a jump
    must exceed, so noisy curves need proportionally larger steps.

    Raises :class:`InsufficientDataError` for fewer than ``MIN_POINTS`` points. Returns None when
    there is no step, and also when there are fewer than ``2·MIN_SIDE`` distinct sizes, too few
    to tell a step from noise.
    """
    n_all, t_all = as_curve(sizes, times, "times")
    if n_all.size < MIN_POINTS:
        raise InsufficientDataError(f"need at least {MIN_POINTS} points, got {n_all.size}")
    n, t = median_per_size(n_all, t_all)
    if n.size < 2 * MIN_SIDE:
        return None

    best: tuple[float, SwitchPoint] | None = None
    for k in _splits(t):  # left = [0..k], right = [k+1..]
        left = huber_line(n[: k + 1], t[: k + 1])
        right = huber_line(n[k + 1 :], t[k + 1 :])
        # The step, seen from both sides of the interval [n_k, n_k+1]: how far the last measured
        # point of the left side lies below the right line, and how far the first measured
        # point of the right side lies above the left line. Both must be large. Each compares a
        # measured point with the *other* side's line, so a point that belongs to the left
        # regime but was put on the right (a kink, no step) gives no gap, and a badly
        # extrapolated slope on one side alone (tiny sizes) cannot fake one.
        last, first = float(t[k]), float(t[k + 1])
        before = float(right(n[k]))  # right line where the left regime ends
        after = float(left(n[k + 1]))  # left line where the right regime starts
        if after <= 0:
            continue
        gaps = [((before - last) / last, before - last), ((first - after) / after, first - after)]
        relative_jump, jump = min(gaps)
        noise = max(left.scale, right.scale)
        if relative_jump < max(min_jump, z * noise):
            continue
        cost = float(np.abs(left.rel_residuals).sum() + np.abs(right.rel_residuals).sum())
        point = SwitchPoint(
            size_before=float(n[k]),
            size_after=float(n[k + 1]),
            time_before=float(t[k]),
            time_after=float(t[k + 1]),
            jump=jump,
            relative_jump=relative_jump,
            noise=noise,
        )
        if best is None or cost < best[0]:
            best = (cost, point)
    return best[1] if best else None


def _splits(t: np.ndarray) -> list[int]:
    """The splits to try (the last index of the left side): all of them up to ``MAX_SPLITS``,
    else those at the ``MAX_SPLITS`` largest relative rises ``t[k+1] / t[k]``, in order."""
    ks = np.arange(MIN_SIDE - 1, t.size - MIN_SIDE)
    if ks.size <= MAX_SPLITS:
        return [int(k) for k in ks]
    with np.errstate(divide="ignore", invalid="ignore"):
        rise = np.where(t[ks] > 0, t[ks + 1] / t[ks], np.inf)
    top = ks[np.argsort(-rise, kind="stable")[:MAX_SPLITS]]
    return sorted(int(k) for k in top)
