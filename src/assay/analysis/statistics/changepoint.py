"""Change points in a history of one figure: E-divisive with a permutation test.

Method (Matteson & James 2014, "A nonparametric approach for multiple change point analysis of
multivariate data"; the variant MongoDB runs on its performance history, Daly et al. 2020).

For a series x₁..xₙ split at τ into X = x₁..x_τ (m points) and Y = x_{τ+1}..xₙ (k points),
the energy distance between the two parts is

    Ê(X, Y) = 2/(mk) Σᵢⱼ |Xᵢ − Yⱼ| − 1/C(m,2) Σ_{i<j} |Xᵢ − Xⱼ| − 1/C(k,2) Σ_{i<j} |Yᵢ − Yⱼ|

and the statistic is Q(τ) = mk/(m+k) · Ê. The best split is the τ maximising Q (each part at
least ``min_size`` points). Whether it is real is decided by a permutation test: the segment's
points are shuffled R times (a fixed seed, so the answer is reproducible), the best Q of each
shuffle is computed, and p = (1 + #{Q_perm ≥ Q_obs}) / (R + 1). A split with p < α is kept and
both halves are searched again (binary segmentation); the search stops at the first split that
is not significant. Under no change each test is wrong with probability α, so a flat history
raises a false alarm at a rate near α (tested with many seeded flat histories).

No assumption of normality is made, and a single outlier barely moves Q (it is one point of m).
Each change is reported with the medians of the segments on either side, its relative size
(after/before − 1), its direction for the metric (a regression or an improvement) and the
indices of the points around it.

Cost. Computed from the n × n matrix of distances, one Q scan is O(n²) and a test O(R·n²): a
year of nightly runs (365 points) took 8 s, 5,000 points minutes. Here every Q(τ) of a series
comes from running sums over its points in rank order (the derivation is at ``_below``), in
O(n log n), for a batch of shuffles at once: the same statistic, the same shuffles drawn from
the same seeded generator in the same order, so the same change points and p-values. One
difference, on purpose: a shuffle whose best Q equals the observed one (a shuffle that only
moves equal values, or keeps both parts' sets) counts as an exceedance, as the definition of p
says; computed from the matrix such a tie counted only when the rounding happened to agree
(``TIE``). Measured (docs/benchmarks.md): 365 points with two changes 0.2 s of CPU, 5,000
points 3.6 s.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

ALPHA = 0.01
PERMUTATIONS = 499
MIN_SIZE = 3


@dataclass(frozen=True)
class Change:
    index: int  # the first point after the change
    before: float  # median of the segment before
    after: float  # median of the segment after
    size: float  # after / before − 1
    direction: str  # "regression" | "improvement"
    p: float
    q: float


# -- Q(τ) for every τ in O(n log n) ------------------------------------------------------------
#
# The pair sums are never formed as an n × n matrix (n² memory and time: a 5,000-run history is
# 25 million distances, and the permutation test needs them 499 times). Instead, for a series
# y₀..y_{n−1} whose points have ranks r_t (a permutation of 0..n−1; equal values in any order):
#
#   S_t = Σ_{i<t} |y_t − y_i| = y_t·(2c_t − t) + P_t − 2s_t      (distance to earlier points)
#   D_t = Σ_i |y_t − y_i| = y_t·(2r_t − n + 1) + Z_n − Z_{r_t} − Z_{r_t+1}   (to all points)
#
# where c_t = #{i < t : r_i < r_t}, s_t = Σ_{i<t, r_i<r_t} y_i, P_t = Σ_{i<t} y_i, and Z_k is
# the sum of the k smallest values (an equal pair adds 0 whichever way it is ranked). Then
#
#   W_L(τ) = Σ_{i<j<τ} |y_i − y_j| = Σ_{t<τ} S_t
#   W_R(τ) = Σ_{τ≤i<j} |y_i − y_j| = Σ_{t≥τ} (D_t − S_t)        (distance to later points)
#   cross(τ) = Σ_{i<τ≤j} |y_i − y_j| = W_L(n) − W_L(τ) − W_R(τ)  (every pair: left, right or across)
#
# c_t and s_t, "how many earlier points rank lower, and their sum", are dominance counts. A pair
# i < t with r_i < r_t is counted at the highest bit where r_i and r_t differ (r_i has a 0 there,
# r_t a 1, and they agree above it). So, bit by bit from the top, the points are kept in order
# of (their rank's higher bits, time); within each such group a point whose bit is 1 gains the
# count and the value sum of the earlier points of its group whose bit is 0 (running sums), and
# each group is then split stably by the bit (a counting sort) for the next bit. Ranks are a
# permutation of 0..n−1, so the group of rank prefix g starts at position g·2^(b+1), and after
# the last bit position p holds rank p. log₂ n passes of O(n) array work, on every permutation
# of a batch at once: O(R·n·log n) for R permutations, against O(R·n²) for the matrix. The
# figures are those of the matrix method up to rounding (the sums are taken in another order).


def _below(ranks: np.ndarray, ranked: np.ndarray) -> np.ndarray:
    """For each row of ``ranks`` (a permutation of 0..n−1: each point's rank, in time order),
    with ``ranked`` the values in rank order: A[t] = Σ (y_t − y_i) over the earlier points i
    that rank below t (c_t·y_t − s_t)."""
    rows, n = ranks.shape
    idx = np.int32 if rows * (n + 1) < 2**31 else np.int64  # half the memory traffic of int64
    pos = np.tile(np.arange(n, dtype=idx), rows)
    base = np.repeat(np.arange(rows, dtype=idx) * n, n)  # where each row starts, flat
    base1 = base + np.repeat(np.arange(rows, dtype=idx), n)  # the same, rows n + 1 wide
    rank = ranks.astype(idx).ravel()  # each point's rank, in the current order
    below = np.zeros(rows * n)
    zeros = np.zeros((rows, n + 1), dtype=idx)  # zeros[:, p]: 0 bits before position p
    sums = np.zeros((rows, n + 1))  # and the sum of their values
    flat_zeros, flat_sums = zeros.ravel(), sums.ravel()
    for b in range((n - 1).bit_length() - 1, -1, -1):
        one = (rank >> b) & 1
        zero = one ^ 1
        value = ranked[rank]
        np.cumsum(zero.reshape(rows, n), axis=1, out=zeros[:, 1:])
        np.cumsum((value * zero).reshape(rows, n), axis=1, out=sums[:, 1:])
        start = (rank >> (b + 1)) << (b + 1)  # where the point's group starts
        at_start = base1 + start
        zeros_before = zeros[:, :n].ravel() - flat_zeros[at_start]
        sums_before = sums[:, :n].ravel() - flat_sums[at_start]
        below += one * (zeros_before * value - sums_before)
        group_zeros = flat_zeros[base1 + np.minimum(start + (2 << b), n)] - flat_zeros[at_start]
        to = base + np.where(one == 1, pos + group_zeros - zeros_before, start + zeros_before)
        moved_rank, moved_below = np.empty_like(rank), np.empty_like(below)
        moved_rank[to], moved_below[to] = rank, below
        rank, below = moved_rank, moved_below
    # position p of a row now holds the point of rank p: back to time order by rank
    return np.take_along_axis(below.reshape(rows, n), ranks, 1)


def _q_rows(ranks: np.ndarray, ranked: np.ndarray, min_size: int) -> tuple[np.ndarray, np.ndarray]:
    """(τ, Q(τ)) maximising Q for each row of ``ranks`` (each point's rank, in time order) of
    the series whose values in rank order are ``ranked``."""
    rows, n = ranks.shape
    y = ranked[ranks]
    before = np.cumsum(y, axis=1) - y  # P_t: the sum of the points before t
    to_earlier = 2 * _below(ranks, ranked) + before - np.arange(n) * y  # S_t
    z = np.concatenate(([0.0], np.cumsum(ranked)))
    r = np.arange(n)
    to_all = ranked * (2 * r - n + 1) + z[n] - z[r] - z[r + 1]  # D by rank
    left = np.zeros((rows, n + 1))
    np.cumsum(to_earlier, axis=1, out=left[:, 1:])  # W_L(τ), τ = 0..n
    right = np.zeros((rows, n + 1))
    np.cumsum((to_all[ranks] - to_earlier)[:, ::-1], axis=1, out=right[:, 1:])
    right = right[:, ::-1]  # W_R(τ): the points τ..n−1
    taus = np.arange(min_size, n - min_size + 1)
    m = taus.astype(float)
    k = n - m
    within_x, within_y = left[:, taus], right[:, taus]
    cross = left[:, n : n + 1] - within_x - within_y
    e = 2 * cross / (m * k) - within_x / (m * (m - 1) / 2) - within_y / (k * (k - 1) / 2)
    q = m * k / (m + k) * e
    best = np.argmax(q, axis=1)
    return taus[best], q[np.arange(rows), best]


# Exceedances within this relative distance of the observed Q are ties (the same statistic in
# exact arithmetic, e.g. a shuffle that only swaps equal values), and count as the definition
# of p says (Q_perm ≥ Q_obs); the matrix method counted them only when rounding agreed.
TIE = 1e-9
BATCHES = (16, 64)  # permutations tried first: a segment with no change stops within these
MAX_CELLS = 2**19  # permutations × points computed at once (~16 arrays of these: 64 MiB)


def _test(
    x: np.ndarray, min_size: int, alpha: float, permutations: int, rng: np.random.Generator
) -> tuple[int, float, float]:
    """Best split of x, its Q and its permutation p-value (stopping early once p ≥ α is sure).

    The permutations are drawn from ``rng`` one at a time, exactly as many as the sequential
    test uses, so the answer does not depend on how they are batched."""
    n = x.size
    if n < 2 * min_size:
        return -1, 0.0, 1.0
    y = x - np.median(x)  # |xᵢ − xⱼ| is unchanged; sums of centred values lose less to rounding
    by_rank = np.argsort(y, kind="stable")
    ranked = y[by_rank]
    rank = np.empty(n, dtype=np.int64)
    rank[by_rank] = np.arange(n)
    tau_a, q_a = _q_rows(rank[None, :], ranked, min_size)
    tau, q = int(tau_a[0]), float(q_a[0])
    if q <= 0:
        return tau, q, 1.0
    exceed = 0
    limit = alpha * (permutations + 1)  # more exceedances than this: p ≥ α whatever follows
    done = 0
    most = max(1, MAX_CELLS // n)
    sizes = itertools.chain(BATCHES, itertools.repeat(most))
    while done < permutations:
        size = min(next(sizes), most, permutations - done)
        state = rng.bit_generator.state
        perms = np.stack([rng.permutation(n) for _ in range(size)])
        _, q_perm = _q_rows(rank[perms], ranked, min_size)
        for j, hit in enumerate(q_perm >= q * (1 - TIE)):
            if hit:
                exceed += 1
                if exceed + 1 > limit:
                    rng.bit_generator.state = state  # draw only what the sequential test drew
                    for _ in range(j + 1):
                        rng.permutation(n)
                    return tau, q, (exceed + 1) / (done + j + 2)
        done += size
    return tau, q, (exceed + 1) / (permutations + 1)


def change_points(
    values: Sequence[float],
    better: str = "higher",
    *,
    alpha: float = ALPHA,
    permutations: int = PERMUTATIONS,
    min_size: int = MIN_SIZE,
    min_change: float = 0.0,
    seed: int = 0,
) -> list[Change]:
    """Change points of ``values`` (oldest first), in index order (see the module docstring).

    ``min_change`` drops significant changes smaller than that relative size (0.01: 1%), for a
    history so steady that a real but immaterial shift would otherwise be reported.
    """
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    cuts: list[tuple[int, float, float]] = []
    pending = [(0, x.size)]
    while pending:
        a, b = pending.pop()
        if b - a < 2 * min_size:
            continue
        tau, q, p = _test(x[a:b], min_size, alpha, permutations, rng)
        if tau < 0 or p >= alpha:
            continue
        cuts.append((a + tau, p, q))
        pending += [(a, a + tau), (a + tau, b)]
    cuts.sort()
    bounds = [0, *(c[0] for c in cuts), x.size]
    out = []
    for i, (index, p, q) in enumerate(cuts):
        before = float(np.median(x[bounds[i] : index]))
        after = float(np.median(x[index : bounds[i + 2]]))
        size = after / before - 1 if before else float("inf")
        if abs(size) < min_change:
            continue
        improved = (size > 0) == (better == "higher")
        out.append(
            Change(index, before, after, size, "improvement" if improved else "regression", p, q)
        )
    return out
