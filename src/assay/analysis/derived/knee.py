r"""The knee of a response-time curve: the last point before latency rises sharply.

Vdbench ``iorate=curve`` (and any load sweep) gives points (achieved IOPS, mean latency) at rising
offered load. Latency grows slowly, then sharply as the device nears saturation (M/M/1:
:math:`W = s/(1-\rho)`). The knee is the useful operating point. Default method: Kneedle
(Satopää et al. 2011), see :func:`find_knee`.

Reference: V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a Haystack:
Detecting Knee Points in System Behavior", ICDCS Workshops 2011.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from assay.analysis.statistics.robust import (
    MAD_TO_SIGMA,
    MIN_POINTS,
    ArrayLike,
    InsufficientDataError,
)

# How many noise σ the bend of a response-time curve must exceed to be a knee (see find_knee).
KNEE_NOISE_Z = 4.0


@dataclass(frozen=True)
class Knee:
    """The knee of a response-time curve: the last point before latency rises sharply."""

    index: int  # into the input arrays
    iops: float  # op/s at the knee
    latency_s: float  # s at the knee
    method: str  # e.g. "kneedle(S=1, min_bend=0.1, min_rise=1.5)"
    score: float  # kneedle: difference-curve value D at the knee; slope: slope ratio there


def find_knee(
    iops: ArrayLike,
    latency_s: ArrayLike,
    *,
    method: Literal["kneedle", "slope"] = "kneedle",
    sensitivity: float = 1.0,
    min_bend: float = 0.1,
    min_rise: float = 1.5,
    slope_factor: float = 10.0,
) -> Knee | None:
    r"""The knee of an (achieved IOPS, mean latency) curve taken at increasing offered load.

    Points are used in the order given (increasing offered load); achieved IOPS need not be
    monotonic (an overloaded device can deliver less). Fewer than 3 points raise
    :class:`InsufficientDataError`; a curve with no knee gives None.

    Two preconditions, both answering "did the sweep reach saturation at all?" (None if not):

    - the latency must rise: :math:`y_{max}/y_{min} \ge` ``min_rise`` (default 1.5). For M/M/1
      that is reached at ρ = 1/3; a sweep whose latency never grew by half never left the flat
      part, and on such a curve the normalisation below would blow the noise up to the full
      range and make a knee of it;
    - the curve must bend: normalise :math:`x_n = (x - x_{min})/(x_{max} - x_{min})` and likewise
      :math:`y_n`; the difference curve :math:`D_i = x_{n,i} - y_{n,i}` is how far the curve lies
      below the diagonal of its bounding box (a convex increasing curve lies below it, a straight
      line has D ≡ 0); :math:`\max D` must reach ``min_bend`` (default 0.1 of the range), and
      also ``KNEE_NOISE_Z`` (4) times the noise in normalised units,
      :math:`\sigma_D = \sigma_{rel}\, y_{max}/(y_{max} - y_{min})`, where
      :math:`\sigma_{rel} = 1.4826\,\mathrm{median}|\Delta^2 \ln y| / \sqrt 6` (second
      differences of independent noise have variance 6σ²; the median ignores the few large
      second differences of the knee itself). With uneven load steps (Vdbench's 10, 50, 70, 80,
      90, 100 %) part of the curve's own curvature counts as noise, which errs towards None.

    ``method="kneedle"`` (Satopää et al. 2011, offline): the knee candidates are the local maxima
    of D. For a local maximum at i, :math:`T_i = D_i - S \cdot \overline{\Delta x_n}` with
    :math:`\overline{\Delta x_n} = 1/(N-1)` (the mean spacing of x over [0, 1]); i is a knee if D
    drops below :math:`T_i` before the next local maximum. ``sensitivity`` is S: larger is more
    conservative (noise bumps smaller than S mean spacings are ignored). Of the knees found, the
    one with the largest D (the most pronounced bend) is returned, where the paper's offline
    variant returns the first; ``score`` = D there. Kneedle's knee is where the curve's slope
    equals the slope of the chord of the whole curve, so it depends on how far into saturation
    the sweep went: for M/M/1, :math:`W = s/(1-\rho)` sampled over ρ ∈ [0.05, 0.95] it lies at
    ρ ≈ 0.78; pushing to ρ = 0.98 moves it to ρ ≈ 0.86.

    ``method="slope"``: the knee is the first point i whose following segment's slope
    :math:`(y_{i+1}-y_i)/(x_{i+1}-x_i)` exceeds ``slope_factor`` (k, default 10) times the
    initial slope (least-squares slope of the first ``max(3, N//4)`` points), the segment after it
    exceeding k too (or i being the last segment), so a single noisy segment does not count.
    ``score`` = that segment's slope / initial slope. For M/M/1, :math:`dW/d\lambda \propto
    1/(1-\rho)^2`, so k = 10 puts the knee near ρ ≈ 0.7 whatever the sweep's range — but it needs
    a positive initial slope (None otherwise) and is more sensitive to noise than Kneedle.
    """
    x = np.asarray(iops, dtype=float).ravel()
    y = np.asarray(latency_s, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"iops and latency_s differ in length: {x.size} vs {y.size}")
    if x.size < MIN_POINTS:
        raise InsufficientDataError(f"need at least {MIN_POINTS} points, got {x.size}")
    if not (np.all(np.isfinite(x)) and np.all(np.isfinite(y))):
        raise ValueError("iops and latency_s must be finite")
    if np.any(x < 0) or np.any(y <= 0):
        raise ValueError("iops must be >= 0 and latency_s > 0")
    if method not in ("kneedle", "slope"):
        raise ValueError(f"unknown method {method!r}")

    x_span, y_span = float(np.ptp(x)), float(np.ptp(y))
    if x_span == 0 or y_span == 0 or float(y.max() / y.min()) < min_rise:
        return None
    diff = (x - x.min()) / x_span - (y - y.min()) / y_span
    sigma_rel = MAD_TO_SIGMA * float(np.median(np.abs(np.diff(np.log(y), 2)))) / math.sqrt(6)
    noise_floor = KNEE_NOISE_Z * sigma_rel * float(y.max()) / y_span
    if float(diff.max()) < max(min_bend, noise_floor):
        return None

    if method == "kneedle":
        i = _kneedle(diff, sensitivity, max(min_bend, noise_floor))
        if i is None:
            return None
        label = f"kneedle(S={sensitivity:g}, min_bend={min_bend:g}, min_rise={min_rise:g})"
        return Knee(i, float(x[i]), float(y[i]), label, float(diff[i]))

    found = _slope_knee(x, y, slope_factor)
    if found is None:
        return None
    i, ratio = found
    label = f"slope(k={slope_factor:g}, min_bend={min_bend:g}, min_rise={min_rise:g})"
    return Knee(i, float(x[i]), float(y[i]), label, ratio)


def _kneedle(diff: np.ndarray, sensitivity: float, min_bend: float) -> int | None:
    """Kneedle's knee test on the difference curve D; the knee with the largest D, or None."""
    size = diff.size
    maxima = [i for i in range(1, size - 1) if diff[i] > diff[i - 1] and diff[i] >= diff[i + 1]]
    step = 1.0 / (size - 1)  # mean spacing of the normalised x
    knees: list[int] = []
    for pos, i in enumerate(maxima):
        threshold = diff[i] - sensitivity * step
        stop = maxima[pos + 1] if pos + 1 < len(maxima) else size
        if diff[i] >= min_bend and float(diff[i + 1 : stop].min()) < threshold:
            knees.append(i)
    if not knees:
        return None
    return max(knees, key=lambda i: diff[i])


def _slope_knee(x: np.ndarray, y: np.ndarray, k: float) -> tuple[int, float] | None:
    """First point whose next segment (and the one after) is k times steeper than the start."""
    head = max(3, x.size // 4)
    if np.ptp(x[:head]) == 0:
        return None
    initial = float(np.polyfit(x[:head], y[:head], 1)[0])
    if initial <= 0:
        return None
    dx = np.diff(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        slopes = np.where(dx > 0, np.diff(y) / dx, np.inf)  # IOPS fell or stalled: saturated
    ratios = slopes / initial
    last = ratios.size - 1
    for i in range(ratios.size):
        if ratios[i] > k and (i == last or ratios[i + 1] > k):
            return i, float(ratios[i])
    return None
