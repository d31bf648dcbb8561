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
"""

from __future__ import annotations

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


def _block_sums(d: np.ndarray) -> np.ndarray:
    """Zero-padded 2-D prefix sums: s[r, c] = Σ d[:r, :c]."""
    s = np.zeros((d.shape[0] + 1, d.shape[1] + 1))
    s[1:, 1:] = d.cumsum(0).cumsum(1)
    return s


def _q_all(d: np.ndarray, min_size: int) -> tuple[int, float]:
    """(τ, Q(τ)) maximising Q over every admissible split of the segment whose distances are d."""
    n = d.shape[0]
    taus = np.arange(min_size, n - min_size + 1)
    if taus.size == 0:
        return -1, 0.0
    s = _block_sums(d)
    m = taus.astype(float)
    k = n - m
    cross = s[taus, n] - s[taus, taus]  # Σ_{i<τ, j≥τ} |xi − xj|  (rows :τ, columns τ:)
    within_x = s[taus, taus] / 2  # each pair counted twice in the full block
    within_y = (s[n, n] - s[taus, n] - s[n, taus] + s[taus, taus]) / 2
    e = 2 * cross / (m * k) - within_x / (m * (m - 1) / 2) - within_y / (k * (k - 1) / 2)
    q = m * k / (m + k) * e
    best = int(np.argmax(q))
    return int(taus[best]), float(q[best])


def _test(
    x: np.ndarray, min_size: int, alpha: float, permutations: int, rng: np.random.Generator
) -> tuple[int, float, float]:
    """Best split of x, its Q and its permutation p-value (stopping early once p ≥ α is sure)."""
    d = np.abs(x[:, None] - x[None, :])
    tau, q = _q_all(d, min_size)
    if tau < 0 or q <= 0:
        return tau, q, 1.0
    exceed = 0
    limit = alpha * (permutations + 1)  # more exceedances than this: p ≥ α whatever follows
    for i in range(permutations):
        perm = rng.permutation(x.size)
        if _q_all(d[np.ix_(perm, perm)], min_size)[1] >= q:
            exceed += 1
            if exceed + 1 > limit:
                return tau, q, (exceed + 1) / (i + 2)
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
