r"""Performance models fitted to measured curves: Hockney, protocol switches, Little's law, knees.

Pure functions on numpy arrays; every formula is written out where it is implemented, with the
assumptions it rests on. Units are canonical SI throughout (sizes in bytes, times in seconds,
bandwidths in B/s, rates in op/s), as in :mod:`assay.units`.

Hockney model (point-to-point messages)
---------------------------------------
The time to send one message of ``n`` bytes is modelled as

.. math::  t(n) = \alpha + n / \beta

with :math:`\alpha` the zero-byte latency (s) and :math:`\beta` the asymptotic bandwidth (B/s).
The achieved bandwidth is :math:`n / t(n) = \beta / (1 + n_{1/2}/n)`, which reaches half of
:math:`\beta` at the *half-performance message size* :math:`n_{1/2} = \alpha\beta`
(Hockney 1994; ParkBench COMMS1 writes the same model as ``T = (N + NHALF) / RINF``).

Real curves are piecewise linear: MPI libraries switch protocol (short/inline → eager → rendezvous)
at fixed sizes, and each protocol has its own :math:`(\alpha, \beta)`. ParkBench's COMMS1 fits each
side of such a breakpoint separately; :func:`fit_hockney` does the same, automatically: it looks
for the eager → rendezvous step (:func:`find_protocol_switch`) and, when there is one, takes
:math:`\alpha` from the regime of the small messages (what a zero-byte message costs) and
:math:`\beta` from the regime of the large ones (what the link sustains), so that neither figure
is biased by a line drawn across the step.

Fitting: robust weighted least squares on *relative* residuals. Timing noise is roughly
proportional to the time measured (a 1 % jitter on 300 µs is 3 µs, twice the latency of a small
message), so an unweighted fit on :math:`(n, t)` lets the largest messages set the intercept. We
minimise instead

.. math::  \sum_i \rho_c\!\left(\frac{r_i}{\sigma}\right),\qquad
           r_i = \frac{t_i - (a + b\,n_i)}{t_i}

where :math:`\rho_c` is Huber's loss (quadratic for :math:`|u| \le c`, linear beyond; c = 1.345,
95 % efficiency for Gaussian noise) and :math:`\sigma = 1.4826\,\mathrm{median}|r_i|` (MAD, re-
estimated each iteration). It is solved by iteratively reweighted least squares (IRLS): weights
:math:`w_i = \min(1, c\sigma/|r_i|)/t_i^2`. Huber's loss is convex, so IRLS converges to the single
minimum whatever the start; a few bad sizes (a noisy neighbour, a page fault) get bounded
influence. Theil–Sen was not chosen: it is unweighted in :math:`t`, so its intercept (the median of
:math:`t_i - b n_i`) inherits the absolute noise of the large messages.

Protocol switch
---------------
A switch shows as a *step*: between two consecutive sizes the time jumps by more than the slope of
either regime explains. For every split between consecutive sizes :math:`n_k | n_{k+1}` (at least
``MIN_SIDE`` sizes on each side) two robust lines are fitted, :math:`\hat t_L` to the sizes up to
:math:`n_k` and :math:`\hat t_R` to those from :math:`n_{k+1}`. The step is looked at from both
sides, each measured boundary point against the *other* side's line, and the smaller taken:

.. math::  J = \min\left(\frac{\hat t_R(n_k) - t_k}{t_k},\;
                         \frac{t_{k+1} - \hat t_L(n_{k+1})}{\hat t_L(n_{k+1})}\right)

Both views are needed. The left line's slope is poorly pinned down when its sizes are tiny
(0..64 B differ by nanoseconds), so its extrapolation alone fakes steps; the right line,
back-extrapolated with the slope its large sizes fix, is not fooled. And comparing with the
*measured* boundary points, not the two lines with each other, means a kink (the regimes' lines
meeting at the split, or crossing near it, with only the slope changing) gives
:math:`J \approx 0`: no switch. A split qualifies when
:math:`J \ge \max(\text{min\_jump}, z\,\sigma)`, σ being the larger of the two lines' MAD scales
of relative residuals: noisy data need larger steps, and an outlier on a short side inflates that
side's σ, so one slow size does not make a step. Among the qualifying splits, the one whose two
lines leave the least total :math:`\sum |r_i|` is reported (the change-point estimate of segmented
regression). One physical constraint keeps noise out of the slopes: each line's slope is clamped
at ≥ 0 (time never falls with size).

Little's law (storage)
----------------------
In steady state the mean number of I/Os in the system equals the arrival rate times the mean time
each spends there, :math:`L = \lambda W` (Little 1961), whatever the distributions. With a closed
load generator (fio, Vdbench, each thread re-issuing on completion) :math:`\lambda` is the measured
IOPS and :math:`W` the mean latency, so :math:`\lambda W` is the concurrency the storage actually
saw; comparing it to the configured one (threads × iodepth × hosts) tells whether the clients kept
the queue full. The NetApp knowledge base uses the same check (concurrency = ops × wait time) to
tell a storage limit from a client/network one.

Knee of a response-time curve
-----------------------------
Vdbench ``iorate=curve`` (and any load sweep) gives points (achieved IOPS, mean latency) at rising
offered load. Latency grows slowly, then sharply as the device nears saturation (M/M/1:
:math:`W = s/(1-\rho)`). The knee is the last point before the sharp rise — the useful operating
point. Default method: Kneedle (Satopää et al. 2011), see :func:`find_knee`.

References
----------
- R. W. Hockney, "The communication challenge for MPP: Intel Paragon and Meiko CS-2",
  Parallel Computing 20(3), 389–398, 1994.
- ParkBench low-level communication benchmarks (COMMS1), https://netlib.org/parkbench/
- P. J. Huber, "Robust estimation of a location parameter", Ann. Math. Statist. 35(1), 1964;
  P. W. Holland, R. E. Welsch, "Robust regression using iteratively reweighted least-squares",
  Comm. Statist. 6(9), 1977.
- J. D. C. Little, "A proof for the queuing formula L = λW", Operations Research 9(3), 1961.
- NetApp KB, "How concurrency can impact throughput performance" (N = ops × W).
- V. Satopää, J. Albrecht, D. Irwin, B. Raghavan, "Finding a 'Kneedle' in a Haystack: Detecting
  Knee Points in System Behavior", ICDCS Workshops 2011.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

# Huber's tuning constant: 95 % asymptotic efficiency when the noise is Gaussian.
HUBER_C = 1.345
# MAD → standard deviation for Gaussian noise.
MAD_TO_SIGMA = 1.4826
# Floor for the relative noise scale: exact (synthetic or quantised) data has MAD = 0, and a zero
# scale would make every residual an "outlier". 1e-9 relative is far below any timer's resolution.
SCALE_FLOOR = 1e-9
# A side of a candidate protocol split needs this many distinct sizes: with two, a line passes
# through both points exactly and says nothing about noise; three is the least that can.
MIN_SIDE = 3
# Points needed for any fit here: a line has two parameters, a third is needed to judge it.
MIN_POINTS = 3

ArrayLike = Sequence[float] | np.ndarray


class InsufficientDataError(ValueError):
    """Too few usable points for the model (fewer than :data:`MIN_POINTS`)."""


# ---------------------------------------------------------------------------------------------
# Robust line fit (shared by the Hockney fit and the switch detector)
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    a: float  # intercept, s
    b: float  # slope, s/B
    rel_residuals: np.ndarray  # (t - (a + b n)) / t, for every input point
    scale: float  # MAD scale of rel_residuals (floored at SCALE_FLOOR)

    def __call__(self, n: np.ndarray | float) -> np.ndarray | float:
        return self.a + self.b * n


def _mad_scale(r: np.ndarray) -> float:
    """σ ≈ 1.4826 · median|r|: residuals about a fitted line are centred, so MAD about zero."""
    return max(MAD_TO_SIGMA * float(np.median(np.abs(r))), SCALE_FLOOR)


def _huber_line(n: np.ndarray, t: np.ndarray, max_iter: int = 50) -> _Line:
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
    for _ in range(max_iter):
        w = h / t**2
        x_bar = float(np.sum(w * x) / np.sum(w))
        t_bar = float(np.sum(w * t) / np.sum(w))
        sxx = float(np.sum(w * (x - x_bar) ** 2))
        slope = float(np.sum(w * (x - x_bar) * (t - t_bar)) / sxx) if sxx > 0 else 0.0
        new = (t_bar - slope * x_bar, slope)
        r = (t - (new[0] + new[1] * x)) / t
        h = np.minimum(1.0, HUBER_C * _mad_scale(r) / np.maximum(np.abs(r), 1e-300))
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
        a = _huber_level(t, max_iter)
    r = (t - (a + b * n)) / t
    return _Line(a=a, b=b, rel_residuals=r, scale=_mad_scale(r))


def _huber_level(t: np.ndarray, max_iter: int) -> float:
    """Huber IRLS for ``t = a`` with weights ``h_i / t_i^2`` (the b = 0 case of the line)."""
    a = float(np.median(t))
    for _ in range(max_iter):
        r = (t - a) / t
        h = np.minimum(1.0, HUBER_C * _mad_scale(r) / np.maximum(np.abs(r), 1e-300))
        w = h / t**2
        new = float(np.sum(w * t) / np.sum(w))
        if math.isclose(new, a, rel_tol=1e-12):
            return new
        a = new
    return a


def _as_curve(sizes: ArrayLike, times: ArrayLike, what: str) -> tuple[np.ndarray, np.ndarray]:
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


def _median_per_size(n: np.ndarray, t: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One point per distinct size (median of repetitions), so splits fall between sizes."""
    uniq = np.unique(n)
    if uniq.size == n.size:
        return n, t
    return uniq, np.array([float(np.median(t[n == u])) for u in uniq])


# ---------------------------------------------------------------------------------------------
# Protocol switch
# ---------------------------------------------------------------------------------------------


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
    """The most likely protocol switch (a step up) in a latency curve, or None.

    Method (module docstring, "Protocol switch"): two-segment robust change-point fit over every
    split between consecutive distinct sizes with at least ``MIN_SIDE`` sizes on each side. A
    split qualifies when the last size before it lies below the right regime's line, and the
    first size after it above the left regime's line, both by at least ``max(min_jump, z·σ)``
    relative; of the qualifying splits, the one with the least total ``Σ|r_i|`` (relative
    residuals) is returned.

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
    n_all, t_all = _as_curve(sizes, times, "times")
    if n_all.size < MIN_POINTS:
        raise InsufficientDataError(f"need at least {MIN_POINTS} points, got {n_all.size}")
    n, t = _median_per_size(n_all, t_all)
    if n.size < 2 * MIN_SIDE:
        return None

    best: tuple[float, SwitchPoint] | None = None
    for k in range(MIN_SIDE - 1, n.size - MIN_SIDE):  # left = [0..k], right = [k+1..]
        left = _huber_line(n[: k + 1], t[: k + 1])
        right = _huber_line(n[k + 1 :], t[k + 1 :])
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


# ---------------------------------------------------------------------------------------------
# Hockney fit
# ---------------------------------------------------------------------------------------------


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
    3. each line is a Huber IRLS fit on relative residuals (module docstring), so α is set by
       the small sizes and β by the large ones even within one regime.

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
    n, t = _as_curve(sizes, times, "times")
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
        a_line = _huber_line(n[small], t[small])
        b_line = _huber_line(n[large], t[large])
        alpha_range = (float(n[small].min()), float(n[small].max()))
        beta_range = (float(n[large].min()), float(n[large].max()))
        predicted = np.where(small, a_line(n), b_line(n))
    else:
        a_line = b_line = _huber_line(n, t)
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
    message is 0 or undefined, and carries no time).

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
    if np.any(bw[n > 0] <= 0):
        raise ValueError("bandwidths must be > 0 for sizes > 0")
    keep = n > 0
    return _fit_hockney(n[keep], n[keep] / bw[keep], size_range, detect_switch, "bandwidth")


# ---------------------------------------------------------------------------------------------
# Little's law
# ---------------------------------------------------------------------------------------------

# Measured / configured concurrency below which the queue is called "not kept full". A client
# that re-issues at once keeps the ratio near 1; what it loses is the time each I/O spends in the
# client rather than at the device (submission, reaping completions, the CPU in between), which
# fio's completion latency does not count. Below 0.8 more than a fifth of the configured slots
# were empty on average: the generator, not the storage, set the pace (CPU-bound client, a
# synchronous ioengine where iodepth > 1 has no effect, think time, batching).
NOT_FULL_RATIO = 0.8
# Above this, more I/Os were "in flight" than could be: the inputs disagree (latency in the wrong
# unit or a percentile rather than the mean, IOPS summed over more hosts than counted).
OVER_FULL_RATIO = 1.2


@dataclass(frozen=True)
class LittleCheck:
    """Little's law ``L = λ·W`` applied to a storage run."""

    iops: float  # λ, op/s (all hosts together)
    mean_latency_s: float  # W, s
    configured_concurrency: float  # what the job asked for: threads × iodepth × hosts
    measured_concurrency: float  # L = λ·W, outstanding I/Os on average
    ratio: float  # measured / configured
    expected_iops: float  # configured / W: the IOPS a full queue would give at this latency
    queue_not_full: bool  # ratio < min_ratio
    exceeds_configured: bool  # ratio > max_ratio: the inputs are inconsistent
    min_ratio: float
    max_ratio: float


def littles_law_check(
    iops: float,
    mean_latency_s: float,
    configured_concurrency: float,
    *,
    min_ratio: float = NOT_FULL_RATIO,
    max_ratio: float = OVER_FULL_RATIO,
) -> LittleCheck:
    """Compare the concurrency implied by IOPS × mean latency with the configured one.

    ``L = λ W`` holds for time averages in any stable system (Little 1961); the measured
    concurrency is therefore what the storage actually had outstanding. ``configured_concurrency``
    counts every I/O slot the load generator had (fio: numjobs × iodepth × hosts, with iodepth
    taken as 1 for synchronous engines). Use the *mean* latency over the same I/Os as the IOPS
    (fio ``lat``/``clat`` mean, not a percentile).

    Flags: ``queue_not_full`` when ``ratio < min_ratio`` (default 0.8, see
    :data:`NOT_FULL_RATIO`), ``exceeds_configured`` when ``ratio > max_ratio`` (default 1.2).
    """
    if not (math.isfinite(iops) and iops >= 0):
        raise ValueError("iops must be finite and >= 0")
    if not (math.isfinite(mean_latency_s) and mean_latency_s > 0):
        raise ValueError("mean_latency_s must be finite and > 0")
    if not (math.isfinite(configured_concurrency) and configured_concurrency > 0):
        raise ValueError("configured_concurrency must be finite and > 0")
    measured = iops * mean_latency_s
    ratio = measured / configured_concurrency
    return LittleCheck(
        iops=iops,
        mean_latency_s=mean_latency_s,
        configured_concurrency=configured_concurrency,
        measured_concurrency=measured,
        ratio=ratio,
        expected_iops=configured_concurrency / mean_latency_s,
        queue_not_full=ratio < min_ratio,
        exceeds_configured=ratio > max_ratio,
        min_ratio=min_ratio,
        max_ratio=max_ratio,
    )


def threads_needed(target_iops: float, latency_s: float, hosts: int = 1) -> int:
    """Outstanding I/Os per host needed for ``target_iops`` at ``latency_s``: ``⌈λ·W / hosts⌉``.

    Little's law read the other way: to complete λ I/Os per second when each takes W seconds,
    λ·W must be in flight. E.g. 5000 IOPS at 1.3 ms → 6.5 → 7 threads; over 2 hosts → 3.25 → 4
    each. "Threads" means I/O slots: threads × iodepth for an asynchronous engine. Assumes the
    latency stays W at that load (it grows near saturation; see :func:`find_knee`).

    λ·W is rounded to 9 significant digits before the ceiling so that floating-point noise
    (4.000000000000001) does not ask for an extra thread.
    """
    if not (math.isfinite(target_iops) and target_iops >= 0):
        raise ValueError("target_iops must be finite and >= 0")
    if not (math.isfinite(latency_s) and latency_s > 0):
        raise ValueError("latency_s must be finite and > 0")
    if hosts < 1:
        raise ValueError("hosts must be >= 1")
    per_host = target_iops * latency_s / hosts
    return math.ceil(float(f"{per_host:.9g}"))


# ---------------------------------------------------------------------------------------------
# Knee of an IOPS–latency curve
# ---------------------------------------------------------------------------------------------


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
