"""Performance models on synthetic curves whose answers are known by construction."""

from __future__ import annotations

import math

import numpy as np
import pytest

from assay.analysis.derived.hockney import HockneyFit, fit_hockney, fit_hockney_bandwidth
from assay.analysis.derived.knee import find_knee
from assay.analysis.derived.protocol import find_protocol_switch
from assay.analysis.derived.queueing import littles_law_check, threads_needed
from assay.analysis.statistics.robust import InsufficientDataError

ALPHA = 1.5e-6  # s
BETA = 12e9  # B/s
# OSU's default sweep: 0 B, then 1 B .. 4 MiB in powers of two.
SIZES = np.array([0.0] + [2.0**k for k in range(23)])


def hockney(sizes: np.ndarray = SIZES, alpha: float = ALPHA, beta: float = BETA) -> np.ndarray:
    return alpha + sizes / beta


def with_step(
    step: float = 2e-6, at: float = 16384, beta_after: float = BETA, sizes: np.ndarray = SIZES
) -> np.ndarray:
    """Eager up to ``at`` (exclusive), rendezvous from ``at``: ``step`` more latency there."""
    return np.where(sizes >= at, ALPHA + step + sizes / beta_after, hockney(sizes))


def noisy(t: np.ndarray, rel: float, seed: int) -> np.ndarray:
    """Multiplicative Gaussian noise: timing jitter scales with the time measured."""
    return t * (1 + rel * np.random.default_rng(seed).standard_normal(t.size))


# ---------------------------------------------------------------------------------------------
# Hockney
# ---------------------------------------------------------------------------------------------


def test_hockney_exact_curve_recovers_parameters() -> None:
    fit = fit_hockney(SIZES, hockney())
    assert isinstance(fit, HockneyFit)
    assert fit.alpha == pytest.approx(ALPHA, rel=1e-9)
    assert fit.beta == pytest.approx(BETA, rel=1e-9)
    assert fit.n_half == pytest.approx(ALPHA * BETA, rel=1e-9)  # 18 000 B
    assert fit.switch is None
    assert fit.fit_range == (0.0, 2.0**22)
    assert fit.alpha_range == fit.beta_range == fit.fit_range
    assert fit.n_points == SIZES.size
    assert fit.r2 == pytest.approx(1.0)
    assert fit.max_rel_residual < 1e-9
    assert fit.source == "latency"
    assert fit.notes == ()


def test_n_half_is_where_the_model_reaches_half_bandwidth() -> None:
    fit = fit_hockney(SIZES, hockney())
    n = fit.n_half
    assert n / (fit.alpha + n / fit.beta) == pytest.approx(fit.beta / 2)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hockney_with_noise_within_2_percent(seed: int) -> None:
    fit = fit_hockney(SIZES, noisy(hockney(), 0.01, seed))
    assert fit.alpha == pytest.approx(ALPHA, rel=0.02)
    assert fit.beta == pytest.approx(BETA, rel=0.02)
    assert fit.n_half == pytest.approx(fit.alpha * fit.beta)
    assert fit.switch is None
    assert 0.005 < fit.max_rel_residual < 0.05  # the noise shows in the goodness figure


# Five small sizes (1, 4, 16, 128, 1024 B) 3x slow: noisy-neighbour iterations.
OUTLIERS = [1, 3, 5, 8, 11]


def with_outliers(t: np.ndarray) -> np.ndarray:
    dirty = t.copy()
    dirty[OUTLIERS] *= 3.0
    return dirty


def test_hockney_alpha_robust_to_outliers() -> None:
    clean = noisy(hockney(), 0.01, seed=3)
    ref, fit = fit_hockney(SIZES, clean), fit_hockney(SIZES, with_outliers(clean))
    assert abs(fit.alpha / ref.alpha - 1) < 0.10
    assert fit.alpha == pytest.approx(ALPHA, rel=0.02)
    assert fit.beta == pytest.approx(BETA, rel=0.02)
    assert fit.switch is None  # single slow sizes are not a protocol switch
    assert fit.max_rel_residual > 0.6  # but the goodness figure shows them: (3t - t) / 3t


def test_plain_least_squares_would_fail_the_outlier_test() -> None:
    """Guard for the test above: the outliers move α by > 10 % without the Huber weights."""
    dirty = with_outliers(noisy(hockney(), 0.01, seed=3))
    w = 1 / dirty  # the same relative weighting, no Huber
    a, _ = np.linalg.lstsq(np.column_stack([w, w * SIZES]), w * dirty, rcond=None)[0]
    assert abs(a / ALPHA - 1) > 0.10


def test_hockney_splits_at_protocol_switch() -> None:
    t = noisy(with_step(step=2e-6, at=16384, beta_after=20e9), 0.01, seed=4)
    fit = fit_hockney(SIZES, t)
    assert fit.switch is not None
    assert (fit.switch.size_before, fit.switch.size_after) == (8192, 16384)
    assert fit.alpha_range == (0.0, 8192.0)
    assert fit.beta_range == (16384.0, 2.0**22)
    assert fit.alpha == pytest.approx(ALPHA, rel=0.02)  # eager latency, not eager + step
    assert fit.beta == pytest.approx(20e9, rel=0.02)  # rendezvous bandwidth
    assert fit.n_half == pytest.approx(fit.alpha * fit.beta)
    assert "split" in fit.method


def test_hockney_single_line_across_step_would_be_biased() -> None:
    """Without the split, the step leaks into α: the reason the split exists."""
    t = with_step(step=2e-6, at=16384)
    split = fit_hockney(SIZES, t)
    joined = fit_hockney(SIZES, t, detect_switch=False)
    assert split.alpha == pytest.approx(ALPHA, rel=1e-6)
    assert joined.switch is None
    assert abs(joined.alpha / ALPHA - 1) > 0.05 or joined.max_rel_residual > 0.2


def test_hockney_size_range_restricts_fit() -> None:
    t = with_step(step=2e-6, at=16384)
    fit = fit_hockney(SIZES, t, size_range=(32768, 2.0**22))
    assert fit.fit_range == (32768.0, 2.0**22)
    assert fit.switch is None
    assert fit.alpha == pytest.approx(ALPHA + 2e-6, rel=1e-6)  # rendezvous intercept
    assert fit.beta == pytest.approx(BETA, rel=1e-6)


def test_hockney_without_zero_size_and_unsorted_input() -> None:
    sizes = SIZES[1:][::-1]
    fit = fit_hockney(sizes, hockney(sizes))
    assert fit.alpha == pytest.approx(ALPHA, rel=1e-9)
    assert fit.fit_range == (1.0, 2.0**22)


def test_hockney_from_bandwidth_curve() -> None:
    bw = SIZES / hockney()  # bw(0) = 0: the zero-byte point must be dropped, not divided by
    fit = fit_hockney_bandwidth(SIZES, bw)
    assert fit.source == "bandwidth"
    assert fit.fit_range == (1.0, 2.0**22)
    assert fit.alpha == pytest.approx(ALPHA, rel=1e-9)
    assert fit.beta == pytest.approx(BETA, rel=1e-9)


def test_hockney_flat_curve_reports_infinite_bandwidth() -> None:
    sizes = np.array([0.0, 1, 2, 4, 8])
    fit = fit_hockney(sizes, np.full(sizes.size, ALPHA))
    assert fit.alpha == pytest.approx(ALPHA)
    assert math.isinf(fit.beta) and math.isinf(fit.n_half)
    assert any("bandwidth" in note for note in fit.notes)


def test_hockney_slope_never_negative() -> None:
    """Tiny sizes whose noise happens to fall with size: α is their level, not a tilted line."""
    sizes = np.arange(0.0, 65, 8)
    t = ALPHA * (1 + np.linspace(0.02, -0.02, sizes.size))  # ±2 %, falling with size
    fit = fit_hockney(sizes, t)
    assert math.isinf(fit.beta)
    assert any("bandwidth" in note for note in fit.notes)
    assert fit.alpha == pytest.approx(ALPHA, rel=0.005)  # an unconstrained line gives +2 %


@pytest.mark.parametrize("count", [0, 1, 2])
def test_hockney_too_few_points_is_a_typed_error(count: int) -> None:
    with pytest.raises(InsufficientDataError):
        fit_hockney(SIZES[:count], hockney()[:count])


def test_hockney_too_few_points_after_range() -> None:
    with pytest.raises(InsufficientDataError):
        fit_hockney(SIZES, hockney(), size_range=(2.0**21, 2.0**30))


def test_hockney_one_distinct_size_is_insufficient() -> None:
    with pytest.raises(InsufficientDataError):
        fit_hockney([8, 8, 8], [1e-6, 1.1e-6, 0.9e-6])


@pytest.mark.parametrize(
    ("sizes", "times"),
    [([1, 2], [1e-6]), ([1, 2, 4], [1e-6, 0.0, 1e-6]), ([-1, 2, 4], [1e-6] * 3)],
)
def test_hockney_malformed_input(sizes: list[float], times: list[float]) -> None:
    with pytest.raises(ValueError):
        fit_hockney(sizes, times)


def test_insufficient_data_is_a_value_error() -> None:
    assert issubclass(InsufficientDataError, ValueError)


# ---------------------------------------------------------------------------------------------
# Protocol switch
# ---------------------------------------------------------------------------------------------


def test_switch_found_at_known_step() -> None:
    sw = find_protocol_switch(SIZES, with_step(step=2e-6, at=16384))
    assert sw is not None
    assert (sw.size_before, sw.size_after) == (8192, 16384)
    assert sw.jump == pytest.approx(2e-6, rel=1e-6)
    assert sw.time_before == pytest.approx(hockney(np.array([8192.0]))[0])
    assert sw.time_after == pytest.approx(ALPHA + 2e-6 + 16384 / BETA)
    # Seen from the right: 2 us over what the eager line predicts at 16 KiB.
    assert sw.relative_jump == pytest.approx(2e-6 / (ALPHA + 16384 / BETA), rel=1e-6)


def test_no_switch_on_a_straight_curve() -> None:
    assert find_protocol_switch(SIZES, hockney()) is None


@pytest.mark.parametrize("seed", range(10))
def test_no_switch_in_noise(seed: int) -> None:
    assert find_protocol_switch(SIZES, noisy(hockney(), 0.02, seed)) is None


@pytest.mark.parametrize("seed", range(5))
def test_switch_found_through_noise(seed: int) -> None:
    sw = find_protocol_switch(SIZES, noisy(with_step(), 0.02, seed))
    assert sw is not None
    assert sw.size_after == 16384
    assert sw.jump == pytest.approx(2e-6, rel=0.25)
    assert 0 < sw.noise < 0.05


def test_slope_change_without_step_is_not_a_switch() -> None:
    """Eager and rendezvous lines that meet at the switch: a kink, not a step."""
    t_cross = hockney(np.array([16384.0]))[0]
    rendezvous = t_cross + (SIZES - 16384.0) / 20e9
    t = np.where(SIZES >= 16384.0, rendezvous, hockney())
    assert find_protocol_switch(SIZES, t) is None


def test_switch_found_when_rendezvous_has_more_bandwidth() -> None:
    # Eager at 6 GB/s (copies), rendezvous at 12 GB/s + 2 us handshake: the lines cross at
    # 24 KB, just above the 16 KiB switch, so the step is small (15 %) but real.
    t = np.where(SIZES >= 16384, ALPHA + 2e-6 + SIZES / 12e9, ALPHA + SIZES / 6e9)
    sw = find_protocol_switch(SIZES, t)
    assert sw is not None and sw.size_after == 16384
    assert 0.10 < sw.relative_jump < 0.2


def test_small_message_step_is_found() -> None:
    t = hockney() + np.where(SIZES >= 128, 0.3e-6, 0.0)  # inline → eager, +20 %
    sw = find_protocol_switch(SIZES, t)
    assert sw is not None and (sw.size_before, sw.size_after) == (64, 128)


def test_step_below_min_jump_is_ignored() -> None:
    t = hockney() + np.where(SIZES >= 128, 0.05 * ALPHA, 0.0)
    assert find_protocol_switch(SIZES, t) is None
    assert find_protocol_switch(SIZES, t, min_jump=0.02) is not None


def test_repetitions_of_a_size_are_pooled() -> None:
    sizes = np.repeat(SIZES, 3)
    t = noisy(np.repeat(with_step(), 3), 0.01, seed=7)
    sw = find_protocol_switch(sizes, t)
    assert sw is not None and sw.size_after == 16384


def test_switch_needs_enough_sizes() -> None:
    assert find_protocol_switch([1, 2, 4, 8, 16], [1e-6, 1e-6, 1e-6, 5e-6, 5e-6]) is None
    with pytest.raises(InsufficientDataError):
        find_protocol_switch([1, 2], [1e-6, 2e-6])


# ---------------------------------------------------------------------------------------------
# Little's law
# ---------------------------------------------------------------------------------------------


def test_threads_needed_seed_example() -> None:
    # 5000 IOPS at 1.3 ms: 6.5 outstanding I/Os → 7 threads; over 2 hosts 3.25 → 4 each.
    assert threads_needed(5000, 1.3e-3) == 7
    assert threads_needed(5000, 1.3e-3, hosts=2) == 4


def test_threads_needed_exact_product_is_not_rounded_up() -> None:
    assert threads_needed(4000, 1e-3) == 4
    assert threads_needed(3000, 0.1e-3 * 3) == 1  # 0.9 → 1
    assert threads_needed(0, 1e-3) == 0
    # 6 x 0.1 ms is 0.6000000000000001 ms in binary floating point: still 3 threads, not 4.
    assert threads_needed(5000, 6 * 0.1 * 1e-3) == 3


@pytest.mark.parametrize(("iops", "lat", "hosts"), [(-1, 1e-3, 1), (1, 0, 1), (1, 1e-3, 0)])
def test_threads_needed_rejects_bad_input(iops: float, lat: float, hosts: int) -> None:
    with pytest.raises(ValueError):
        threads_needed(iops, lat, hosts)


def test_littles_law_full_queue() -> None:
    check = littles_law_check(5000, 1.3e-3, configured_concurrency=7)
    assert check.measured_concurrency == pytest.approx(6.5)
    assert check.ratio == pytest.approx(6.5 / 7)
    assert check.expected_iops == pytest.approx(7 / 1.3e-3)
    assert not check.queue_not_full
    assert not check.exceeds_configured


def test_littles_law_flags_queue_not_kept_full() -> None:
    # 4 jobs x iodepth 32 = 128 slots, but 20 000 IOPS at 2 ms is only 40 in flight.
    check = littles_law_check(20_000, 2e-3, configured_concurrency=4 * 32)
    assert check.measured_concurrency == pytest.approx(40)
    assert check.ratio == pytest.approx(40 / 128)
    assert check.queue_not_full
    assert check.min_ratio == 0.8


def test_littles_law_threshold_boundary() -> None:
    assert not littles_law_check(8000, 1e-3, 10).queue_not_full  # ratio 0.8 exactly
    assert littles_law_check(7900, 1e-3, 10).queue_not_full
    assert not littles_law_check(7900, 1e-3, 10, min_ratio=0.7).queue_not_full


def test_littles_law_flags_inconsistent_inputs() -> None:
    # Latency given in ms by mistake: 1000x too many I/Os "in flight".
    check = littles_law_check(5000, 1.3, configured_concurrency=8)
    assert check.exceeds_configured
    assert not check.queue_not_full


@pytest.mark.parametrize(("iops", "lat", "conf"), [(-1, 1e-3, 1), (1, 0, 1), (1, 1e-3, 0)])
def test_littles_law_rejects_bad_input(iops: float, lat: float, conf: float) -> None:
    with pytest.raises(ValueError):
        littles_law_check(iops, lat, conf)


# ---------------------------------------------------------------------------------------------
# Knee
# ---------------------------------------------------------------------------------------------

SERVICE = 0.5e-3  # s per I/O: the device saturates at 2000 IOPS
RHO = np.round(np.arange(0.05, 0.951, 0.05), 2)  # utilisation of each load step


def mm1(rho: np.ndarray = RHO) -> tuple[np.ndarray, np.ndarray]:
    """M/M/1: throughput λ = ρ/s, mean response time W = s / (1 - ρ)."""
    return rho / SERVICE, SERVICE / (1 - rho)


def test_kneedle_on_mm1_curve() -> None:
    iops, lat = mm1()
    knee = find_knee(iops, lat)
    assert knee is not None
    # Chord slope from ρ=0.05 to 0.95 is met at ρ ≈ 0.78; on this grid that is ρ = 0.8.
    assert 0.7 <= RHO[knee.index] <= 0.8
    assert knee.iops == iops[knee.index] and knee.latency_s == lat[knee.index]
    assert knee.method.startswith("kneedle(")
    assert 0.5 < knee.score < 0.7


def test_slope_method_on_mm1_curve() -> None:
    iops, lat = mm1()
    knee = find_knee(iops, lat, method="slope")
    assert knee is not None
    # dW/dλ ∝ 1/(1-ρ)^2: 10x the initial slope near ρ ≈ 0.7.
    assert 0.65 <= RHO[knee.index] <= 0.8
    assert knee.method.startswith("slope(k=10")
    assert knee.score > 10


def test_kneedle_on_vdbench_curve_points() -> None:
    # iorate=curve: 10, 50, 70, 80, 90, 100 % of the maximum, which ran at ρ = 0.97.
    rho = np.array([0.1, 0.5, 0.7, 0.8, 0.9, 1.0]) * 0.97
    knee = find_knee(*mm1(rho))
    assert knee is not None
    assert knee.index == 4  # the 90 % step; the 100 % step quadruples the latency


def test_knee_depends_on_how_far_the_sweep_went() -> None:
    rho = np.array([0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98])
    knee = find_knee(*mm1(rho))
    assert knee is not None and rho[knee.index] == 0.85


@pytest.mark.parametrize("seed", range(5))
def test_kneedle_on_noisy_mm1_curve(seed: int) -> None:
    rng = np.random.default_rng(seed)
    iops, lat = mm1()
    iops = iops * (1 + 0.01 * rng.standard_normal(iops.size))
    lat = lat * (1 + 0.03 * rng.standard_normal(lat.size))
    knee = find_knee(iops, lat)
    assert knee is not None
    assert 0.65 <= RHO[knee.index] <= 0.85


@pytest.mark.parametrize("method", ["kneedle", "slope"])
def test_no_knee_on_linear_curve(method: str) -> None:
    iops = RHO / SERVICE
    assert find_knee(iops, 1e-3 + iops * 5e-6, method=method) is None  # 1 ms → 10.5 ms


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("method", ["kneedle", "slope"])
def test_no_knee_on_noisy_linear_curves(method: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    iops = RHO / SERVICE
    steep = (1e-3 + iops * 5e-6) * (1 + 0.03 * rng.standard_normal(iops.size))
    flat = (1e-3 + iops * 1e-7) * (1 + 0.03 * rng.standard_normal(iops.size))
    assert find_knee(iops, steep, method=method) is None
    assert find_knee(iops, flat, method=method) is None  # noise must not become a knee


def test_false_knee_rate_on_noisy_lines_is_low() -> None:
    """Over many noisy straight lines (3 % noise), knees must be rare: the noise floor's job."""
    iops = RHO / SERVICE
    found = 0
    for seed in range(1000):
        rng = np.random.default_rng(1000 + seed)
        lat = (1e-3 + iops * 5e-6) * (1 + 0.03 * rng.standard_normal(iops.size))
        found += find_knee(iops, lat) is not None
    assert found <= 8  # 3 with the noise floor, 21 without


def test_no_knee_when_latency_never_rises() -> None:
    # A sharp bend, but latency only grows by 30 % over the sweep: not saturation.
    iops = RHO / SERVICE
    lat = 1e-3 * (1 + 0.3 * RHO**8 / RHO[-1] ** 8)
    assert find_knee(iops, lat) is None
    assert find_knee(iops, lat, min_rise=1.2) is not None


def test_knee_with_iops_falling_after_saturation() -> None:
    iops, lat = mm1()
    iops = np.append(iops, iops[-1] * 0.9)  # overloaded: less delivered, much slower
    lat = np.append(lat, lat[-1] * 3)
    knee = find_knee(iops, lat)
    assert knee is not None and knee.index < iops.size - 1


def test_knee_flat_curve_and_errors() -> None:
    assert find_knee([100, 200, 300], [1e-3, 1e-3, 1e-3]) is None
    with pytest.raises(InsufficientDataError):
        find_knee([100, 200], [1e-3, 2e-3])
    with pytest.raises(ValueError):
        find_knee([100, 200, 300], [1e-3, 0.0, 2e-3])
    with pytest.raises(ValueError):
        find_knee([100, 200, 300], [1e-3, 2e-3, 3e-3], method="elbow")  # type: ignore[arg-type]


def test_a_bandwidth_of_zero_is_left_out_of_the_fit_not_an_error():
    """OSU prints 0.00 MB/s for a rate below its resolution: the fit raised ValueError, and
    every report of the run died with it."""
    bw = SIZES / hockney()
    bw[3] = 0.0
    fit = fit_hockney_bandwidth(SIZES, bw)
    assert fit.beta == pytest.approx(BETA, rel=0.02)
    assert fit.n_points == SIZES.size - 2  # the zero-byte size and the 0.00 row
    assert any("1 sizes with a bandwidth of 0 left out (size 4 B)" in n for n in fit.notes)


def test_the_switch_search_of_a_long_curve_is_not_quadratic():
    """Every split tried fits two lines over all the sizes: 4,000 sizes took 33 s, 250,000
    (an imported file) hours, in every report format. Past 64 splits, those at the largest
    rises are tried: the step is still found, in seconds."""
    import time

    sizes = np.arange(1, 250_001, dtype=float) * 8
    t = noisy(ALPHA + sizes / 1e12, 0.002, 1)
    t[sizes > 1_000_000] += 3e-6
    started = time.perf_counter()
    sw = find_protocol_switch(sizes, t)
    assert time.perf_counter() - started < 60  # about 10 s on the loaded 2-core VM
    assert sw is not None and sw.size_before == 1_000_000
