r"""The Hockney model of point-to-point messages: t(n) = α + n/β, with n½ = α·β.

The time to send one message of ``n`` bytes is modelled as

.. math::  t(n) = \alpha + n / \beta

with :math:`\alpha` the zero-byte latency (s) and :math:`\beta` the asymptotic bandwidth (B/s).
The achieved bandwidth is :math:`n / t(n) = \beta / (1 + n_{1/2}/n)`, which reaches half of
:math:`\beta` at the *half-performance message size* :math:`n_{1/2} = \alpha\beta`
(Hockney 1994; ParkBench COMMS1 writes the same model as ``T = (N + NHALF) / RINF``).

Real curves are piecewise linear (protocol switches, :mod:`assay.analysis.derived.protocol`);
:func:`fit_hockney` takes :math:`\alpha` from the regime of the small messages and :math:`\beta`
from the regime of the large ones, each a robust line (:mod:`assay.analysis.statistics.robust`).

References: R. W. Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
Parallel Computing 20(3), 389–398, 1994; ParkBench low-level communication benchmarks (COMMS1),
https://netlib.org/parkbench/
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

from assay.analysis.derived.protocol import SwitchPoint, find_protocol_switch
from assay.analysis.statistics.robust import (
    HUBER_C,
    MIN_POINTS,
    ArrayLike,
    InsufficientDataError,
    as_curve,
    huber_line,
)


@dataclass(frozen=True)
class HockneyFit:
    """``t(n) = α + n/β`` fitted to a message-size curve.

    With a protocol switch, α comes from the small-message regime and β from the large-message
    one (``alpha_range`` / ``beta_range`` say which sizes), and the goodness figures are those of
    the two-piece model, each point judged against the line of its own regime.
    """

    alpha: float  # s, zero-byte latency (intercept)
    beta: float  # B/s, asymptotic bandwidth (1 / slope); inf when the slope is not positive
    n_half: float  # B, α·β: size at which the achieved bandwidth n/t(n) is β/2
    fit_range: tuple[float, float]  # B, smallest and largest size used
    alpha_range: tuple[float, float]  # B, sizes whose line gave α
    beta_range: tuple[float, float]  # B, sizes whose line gave β
    r2: float  # coefficient of determination of the (piecewise) model on t
    max_rel_residual: float  # max |t_i - t̂_i| / t_i over the points used (outliers included)
    n_points: int  # points used
    switch: SwitchPoint | None  # the step the fit was split at, if any
    source: Literal["latency", "bandwidth"]  # what the times were derived from
    method: str
    notes: tuple[str, ...] = ()  # caveats: a regime too short, a non-positive slope...


def fit_hockney(
    sizes: ArrayLike,
    times: ArrayLike,
    *,
    size_range: tuple[float, float] | None = None,
    detect_switch: bool = True,
) -> HockneyFit:
    """Fit the Hockney model ``t(n) = α + n/β`` to message sizes (B) and times per message (s).

    ``times`` are one-way times per message, e.g. OSU ``osu_latency`` (half the ping-pong round
    trip) as ``p2p.latency`` samples. For bandwidth figures use :func:`fit_hockney_bandwidth`.

    Steps:

    1. keep sizes within ``size_range`` (inclusive), if given;
    2. if ``detect_switch``, look for a step (:func:`find_protocol_switch`); if found, fit the
       sizes ≤ ``size_before`` and the sizes ≥ ``size_after`` separately and take α from the
       first, β from the second (the short-message protocol sets the latency, the long-message
       protocol the bandwidth). Otherwise one line over all sizes gives both;
    3. each line is a Huber IRLS fit on relative residuals
       (:mod:`assay.analysis.statistics.robust`), so α is set by the small sizes and β by the large
       ones even within one regime.

    ``n_half = α·β`` is the Hockney model's half-performance size. With a switch it combines the
    two regimes (the small-message latency, the large-message bandwidth), which is the usual
    reading of "how large must a message be to get half the link"; it is not where the measured
    curve crosses β/2 if the step sits below that size.

    A zero-byte size is a valid point (t(0) = α). Raises :class:`InsufficientDataError` for
    fewer than ``MIN_POINTS`` points (after ``size_range``) and ValueError for malformed input.
    """
    return _fit_hockney(sizes, times, size_range, detect_switch, "latency")


def _fit_hockney(
    sizes: ArrayLike,
    times: ArrayLike,
    size_range: tuple[float, float] | None,
    detect_switch: bool,
    source: Literal["latency", "bandwidth"],
) -> HockneyFit:
    n, t = as_curve(sizes, times, "times")
    if size_range is not None:
        lo, hi = size_range
        keep = (n >= lo) & (n <= hi)
        n, t = n[keep], t[keep]
    if n.size < MIN_POINTS or np.unique(n).size < 2:
        raise InsufficientDataError(
            f"need at least {MIN_POINTS} points over 2 distinct sizes, got {n.size}"
        )

    notes: list[str] = []
    switch = find_protocol_switch(n, t) if detect_switch else None
    if switch is not None:
        small = n <= switch.size_before
        large = n >= switch.size_after
        a_line = huber_line(n[small], t[small])
        b_line = huber_line(n[large], t[large])
        alpha_range = (float(n[small].min()), float(n[small].max()))
        beta_range = (float(n[large].min()), float(n[large].max()))
        predicted = np.where(small, a_line(n), b_line(n))
    else:
        a_line = b_line = huber_line(n, t)
        alpha_range = beta_range = (float(n.min()), float(n.max()))
        predicted = np.asarray(a_line(n))

    alpha = a_line.a
    if b_line.b > 0:
        beta = 1.0 / b_line.b
    else:
        beta = math.inf
        notes.append("slope not positive: the sizes do not resolve a bandwidth (beta = inf)")
    if alpha <= 0:
        notes.append("intercept not positive: the sizes used do not resolve a latency")
    n_half = alpha * beta if math.isfinite(beta) else math.inf

    resid = t - predicted
    ss_tot = float(np.sum((t - t.mean()) ** 2))
    r2 = 1.0 - float(np.sum(resid**2)) / ss_tot if ss_tot > 0 else 1.0
    return HockneyFit(
        alpha=alpha,
        beta=beta,
        n_half=n_half,
        fit_range=(float(n.min()), float(n.max())),
        alpha_range=alpha_range,
        beta_range=beta_range,
        r2=r2,
        max_rel_residual=float(np.max(np.abs(resid) / t)),
        n_points=int(n.size),
        switch=switch,
        source=source,
        method=f"huber-irls on relative residuals (c={HUBER_C})"
        + (", split at protocol switch" if switch else ""),
        notes=tuple(notes),
    )


def fit_hockney_bandwidth(
    sizes: ArrayLike,
    bandwidths: ArrayLike,
    *,
    size_range: tuple[float, float] | None = None,
    detect_switch: bool = True,
) -> HockneyFit:
    """Hockney fit to a bandwidth curve (B/s per size), e.g. ``p2p.bandwidth`` samples.

    The bandwidth is first converted to a time per message, ``t(n) = n / bw(n)``, and that curve
    is fitted by :func:`fit_hockney`. Zero-byte sizes are dropped (a bandwidth of a zero-byte
    message is 0 or undefined, and carries no time), and so are sizes whose bandwidth is 0
    (OSU prints ``0.00`` MB/s for a rate below its resolution: no time can be read from it;
    it was a ValueError that took every report of the run down), with a note.

    Caveat on reading α: ``osu_bw`` keeps a window of messages in flight, so ``n / bw`` is the
    *issue interval* of a pipelined stream, not the one-way latency; the intercept is the
    per-message overhead (LogP's gap g), usually well below ``osu_latency``'s figure. β is the
    streaming bandwidth, which is the figure the bandwidth test is meant for.
    """
    n = np.asarray(sizes, dtype=float).ravel()
    bw = np.asarray(bandwidths, dtype=float).ravel()
    if n.shape != bw.shape:
        raise ValueError(f"sizes and bandwidths differ in length: {n.size} vs {bw.size}")
    if not (np.all(np.isfinite(n)) and np.all(np.isfinite(bw))):
        raise ValueError("sizes and bandwidths must be finite")
    if np.any(bw < 0):
        raise ValueError("bandwidths must be >= 0")
    zero = (n > 0) & (bw == 0)
    keep = (n > 0) & (bw > 0)
    fit = _fit_hockney(n[keep], n[keep] / bw[keep], size_range, detect_switch, "bandwidth")
    if zero.any():
        left_out = ", ".join(f"{s:g}" for s in n[zero][:5]) + (" ..." if zero.sum() > 5 else "")
        note = f"{int(zero.sum())} sizes with a bandwidth of 0 left out (size {left_out} B)"
        fit = replace(fit, notes=(*fit.notes, note))
    return fit
