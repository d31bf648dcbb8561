"""Is a difference between two measurements more than noise? Two tests, as asv and pyperf use.

* **Mann–Whitney U** (asv's choice when raw repetitions exist) on the repetitions of each side:
  U = number of pairs (x_i, y_j) with x_i > y_j, ties counting ½. Under H0 (both sides drawn
  from one distribution) U is symmetric about n₁n₂/2. The two-sided p-value is
  min(1, 2·min(P(U ≤ u), P(U ≥ u))), from the exact null distribution when there are no ties
  and n₁, n₂ ≤ 50 (the count of arrangements with U = u follows the recurrence
  c(m, n, u) = c(m−1, n, u−n) + c(m, n−1, u), Mann & Whitney 1947), otherwise from the normal
  approximation with the tie-corrected variance
  σ² = n₁n₂/12 · ((N+1) − Σ(t³−t)/(N(N−1))) and a continuity correction of ½.
  With 3 repetitions a side the smallest possible p is 0.1: such a test can only ever say
  "not significant", which is the honest answer.
* **Welch's t** (pyperf's choice) when each side only has a mean, a standard deviation and a
  count (a tool's own iterations): t = (m₂ − m₁)/√(s₁²/n₁ + s₂²/n₂), with Welch–Satterthwaite
  degrees of freedom ν = (a + b)²/(a²/(n₁−1) + b²/(n₂−1)), a = s₁²/n₁, b = s₂²/n₂, and
  p = I_{ν/(ν+t²)}(ν/2, ½) (the regularised incomplete beta function). Iterations inside one
  run are not independent of that run's conditions, so this p is optimistic; it is labelled.

A result is "significant" at p < ALPHA (0.05).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise

ALPHA = 0.05
EXACT_MAX = 50


@dataclass(frozen=True)
class Test:
    method: str  # "Mann-Whitney U" | "Welch t"
    statistic: float
    p: float

    @property
    def significant(self) -> bool:
        return self.p < ALPHA


def mann_whitney(x: Sequence[float], y: Sequence[float]) -> Test:
    """Two-sided Mann–Whitney U test of x against y (see the module docstring)."""
    m, n = len(x), len(y)
    if m == 0 or n == 0:
        raise ValueError("Mann-Whitney U needs values on both sides")
    u = sum((xi > yj) + 0.5 * (xi == yj) for xi in x for yj in y)
    values = sorted([*x, *y])
    ties = _tie_sizes(values)
    if not any(t > 1 for t in ties) and m <= EXACT_MAX and n <= EXACT_MAX:
        counts = _u_counts(m, n)
        total = sum(counts)
        k = round(u)
        low = sum(counts[: k + 1]) / total
        high = sum(counts[k:]) / total
        p = min(1.0, 2 * min(low, high))
    else:
        big_n = m + n
        mu = m * n / 2
        tie_term = sum(t**3 - t for t in ties) / (big_n * (big_n - 1))
        var = m * n / 12 * ((big_n + 1) - tie_term)
        if var <= 0:  # every value equal
            return Test("Mann-Whitney U", u, 1.0)
        z = (abs(u - mu) - 0.5) / math.sqrt(var)
        p = min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
    return Test("Mann-Whitney U", u, p)


def _tie_sizes(sorted_values: list[float]) -> list[int]:
    sizes, run = [], 1
    for a, b in pairwise(sorted_values):
        if a == b:
            run += 1
        else:
            sizes.append(run)
            run = 1
    sizes.append(run)
    return sizes


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """c[u] = number of orderings of m x's and n y's with U = u (the exact null distribution)."""
    if m == 0 or n == 0:
        return (1,)
    a = _u_counts(m - 1, n)  # the largest value is an x: it beats all n y's
    b = _u_counts(m, n - 1)  # the largest value is a y
    out = [0] * (m * n + 1)
    for u, c in enumerate(a):
        out[u + n] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def welch(m1: float, s1: float, n1: int, m2: float, s2: float, n2: int) -> Test:
    """Two-sided Welch's t test from summary statistics (see the module docstring)."""
    if n1 < 2 or n2 < 2:
        raise ValueError("Welch's t needs n >= 2 on both sides")
    a, b = s1 * s1 / n1, s2 * s2 / n2
    if a + b == 0:
        return Test("Welch t", math.inf if m1 != m2 else 0.0, 0.0 if m1 != m2 else 1.0)
    t = (m2 - m1) / math.sqrt(a + b)
    nu = (a + b) ** 2 / ((a * a / (n1 - 1) if a else 0.0) + (b * b / (n2 - 1) if b else 0.0))
    p = _betai(nu / 2, 0.5, nu / (nu + t * t))
    return Test("Welch t", t, min(1.0, max(0.0, p)))


def _betai(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b), by its continued fraction (Numerical Recipes 6.4)."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    ln_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(ln_front + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1 - x) / b


def _betacf(a: float, b: float, x: float) -> float:
    tiny, eps = 1e-300, 3e-16
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1 + aa * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + aa / c
        c = c if abs(c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1) < eps:
            break
    return h


def t_quantile(q: float, df: float) -> float:
    """The q-quantile (q > 0.5) of Student's t with df degrees of freedom, by bisection on its
    upper tail P(T > t) = ½·I_{df/(df+t²)}(df/2, ½)."""
    tail = 1 - q
    lo, hi = 0.0, 1e3
    for _ in range(200):
        mid = (lo + hi) / 2
        if 0.5 * _betai(df / 2, 0.5, df / (df + mid * mid)) > tail:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def mean_ci_halfwidth(values: Sequence[float], confidence: float = 0.95) -> float | None:
    """Half-width of the Student t confidence interval of the mean: t_{(1+c)/2, n−1} · s/√n.
    None for fewer than two values."""
    n = len(values)
    if n < 2:
        return None
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values) / (n - 1)
    return t_quantile((1 + confidence) / 2, n - 1) * math.sqrt(var / n)
