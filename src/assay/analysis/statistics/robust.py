r"""Robust straight-line fits on relative residuals: the numerical core of the curve models.

Timing noise is roughly proportional to the time measured (a 1 % jitter on 300 µs is 3 µs, twice
the latency of a small message), so an unweighted least-squares fit on :math:`(n, t)` lets the
largest messages set the intercept. :func:`huber_line` minimises instead

.. math::  \sum_i \rho_c\!\left(\frac{r_i}{\sigma}\right),\qquad
           r_i = \frac{t_i - (a + b\,n_i)}{t_i}

where :math:`\rho_c` is Huber's loss (quadratic for :math:`|u| \le c`, linear beyond; c = 1.345,
95 % efficiency for Gaussian noise) and :math:`\sigma = 1.4826\,\mathrm{median}|r_i|` (MAD, re-
estimated each iteration). It is solved by iteratively reweighted least squares (IRLS): weights
:math:`w_i = \min(1, c\sigma/|r_i|)/t_i^2`. Huber's loss is convex, so IRLS converges to the
single minimum whatever the start; a few bad sizes (a noisy neighbour, a page fault) get bounded
influence. Theil–Sen was not chosen: it is unweighted in :math:`t`, so its intercept (the median
of :math:`t_i - b n_i`) inherits the absolute noise of the large messages.

References: P. J. Huber, "Robust estimation of a location parameter", Ann. Math. Statist. 35(1),
1964; P. W. Holland, R. E. Welsch, "Robust regression using iteratively reweighted
least-squares", Comm. Statist. 6(9), 1977.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

# Huber's tuning constant: 95 % asymptotic efficiency when the noise is Gaussian.
HUBER_C = 1.345
# MAD → standard deviation for Gaussian noise.
MAD_TO_SIGMA = 1.4826
# Floor for the relative noise scale: exact (synthetic or quantised) data has MAD = 0, and a zero
# scale would make every residual an "outlier". 1e-9 relative is far below any timer's resolution.
SCALE_FLOOR = 1e-9
# Points needed for any fit here: a line has two parameters, a third is needed to judge it.
MIN_POINTS = 3

ArrayLike = Sequence[float] | np.ndarray


class InsufficientDataError(ValueError):
    """Too few usable points for the model (fewer than :data:`MIN_POINTS`)."""


@dataclass(frozen=True)
class LineFit:
    a: float  # intercept, s
    b: float  # slope, s/B
    rel_residuals: np.ndarray  # (t - (a + b n)) / t, for every input point
    scale: float  # MAD scale of rel_residuals (floored at SCALE_FLOOR)

    def __call__(self, n: np.ndarray | float) -> np.ndarray | float:
        return self.a + self.b * n


def median_of(a: np.ndarray) -> float:
    """``float(np.median(a))`` of a 1-D float array, the same value (the same order
    statistics, the middle two's sum halved, NaN when one is NaN) without np.median's generic
    layers: a line fit takes it once an iteration, and a protocol-switch search fits thousands
    of lines of twenty-odd points, where those layers were most of the time."""
    half = a.size // 2
    even = a.size % 2 == 0
    # a sorted copy holds the same order statistics; below a few hundred values it is the
    # quicker of the two
    part = (
        np.sort(a)
        if a.size <= 256
        else np.partition(a, [half - 1, half, -1] if even else [half, -1])
    )
    if np.isnan(part[-1]):
        return math.nan
    return float((part[half - 1] + part[half]) / 2) if even else float(part[half])


def mad_scale(r: np.ndarray) -> float:
    """σ ≈ 1.4826 · median|r|: residuals about a fitted line are centred, so MAD about zero."""
    return max(MAD_TO_SIGMA * median_of(np.abs(r)), SCALE_FLOOR)


def huber_line(n: np.ndarray, t: np.ndarray, max_iter: int = 50) -> LineFit:
    """Huber IRLS fit of ``t = a + b n`` on relative residuals ``r = (t - a - b n) / t``.

    Each iteration solves the weighted least-squares problem ``min Σ w_i (t_i - a - b n_i)^2``
    with ``w_i = h_i / t_i^2`` and Huber weights ``h_i = min(1, c σ / |r_i|)``, σ re-estimated
    from the previous residuals. The weighted problem has the closed form
    ``b = Σ w (x - x̄)(t - t̄) / Σ w (x - x̄)^2``, ``a = t̄ - b x̄`` (weighted means), computed on
    ``x = n / max(n)`` so that sizes spanning 0..4 MiB stay well conditioned.
    """
    n_scale = float(n.max()) or 1.0
    x = n / n_scale
    h = np.ones_like(t)
    coef = (math.nan, math.nan)
    for _ in range(max_iter):  # ndarray.sum, not np.sum: the same sums, a wrapper less
        w = h / t**2
        w_sum = w.sum()
        x_bar = float((w * x).sum() / w_sum)
        t_bar = float((w * t).sum() / w_sum)
        dx = x - x_bar
        sxx = float((w * dx**2).sum())
        slope = float((w * dx * (t - t_bar)).sum() / sxx) if sxx > 0 else 0.0
        new = (t_bar - slope * x_bar, slope)
        r = (t - (new[0] + new[1] * x)) / t
        h = np.minimum(1.0, HUBER_C * mad_scale(r) / np.maximum(np.abs(r), 1e-300))
        # Converged when neither parameter moved by more than 1e-9 of the line's size (both
        # are in seconds on the scaled x): far below any timer's resolution.
        tol = 1e-9 * (abs(new[0]) + abs(new[1]))
        done = abs(new[0] - coef[0]) <= tol and abs(new[1] - coef[1]) <= tol
        coef = new
        if done:
            break
    a, b = float(coef[0]), float(coef[1] / n_scale)
    if b < 0:
        # A message cannot take less time for being larger: a negative slope is noise over a
        # narrow size range (0..64 B, say). Left in, it tilts the intercept (α) upwards and,
        # extrapolated, suggests steps. Clamp to b = 0 and refit the intercept alone (Huber
        # location on relative residuals).
        b = 0.0
        a = huber_level(t, max_iter)
    r = (t - (a + b * n)) / t
    return LineFit(a=a, b=b, rel_residuals=r, scale=mad_scale(r))


def huber_level(t: np.ndarray, max_iter: int) -> float:
    """Huber IRLS for ``t = a`` with weights ``h_i / t_i^2`` (the b = 0 case of the line)."""
    a = median_of(t)
    for _ in range(max_iter):
        r = (t - a) / t
        h = np.minimum(1.0, HUBER_C * mad_scale(r) / np.maximum(np.abs(r), 1e-300))
        w = h / t**2
        new = float((w * t).sum() / w.sum())
        if math.isclose(new, a, rel_tol=1e-12):
            return new
        a = new
    return a


def as_curve(sizes: ArrayLike, times: ArrayLike, what: str) -> tuple[np.ndarray, np.ndarray]:
    """Validated float arrays sorted by size. Sizes must be ≥ 0 and times > 0, all finite."""
    n = np.asarray(sizes, dtype=float).ravel()
    t = np.asarray(times, dtype=float).ravel()
    if n.shape != t.shape:
        raise ValueError(f"sizes and {what} differ in length: {n.size} vs {t.size}")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(t))):
        raise ValueError(f"sizes and {what} must be finite")
    if np.any(n < 0):
        raise ValueError("sizes must be >= 0 bytes")
    if np.any(t <= 0):
        raise ValueError(f"{what} must be > 0")
    order = np.argsort(n, kind="stable")
    return n[order], t[order]


def median_per_size(n: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One point per distinct size (median of repetitions), so splits fall between sizes."""
    uniq = np.unique(n)
    if uniq.size == n.size:
        return n, t
    return uniq, np.array([float(np.median(t[n == u])) for u in uniq])
