"""Change points (E-divisive with a permutation test) and 'assay history' / 'assay label'."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from assay.analysis.statistics.changepoint import change_points
from assay.model import JobResult, Sample, Stats, System
from assay.store import RunStore
from conftest import run_cli

NOISE = 0.015  # 1.5% run-to-run noise, typical of STREAM or OSU on a shared node


def _history(rng: np.random.Generator, n: int, step_at: int | None, step: float) -> np.ndarray:
    x = 100 * (1 + NOISE * rng.standard_normal(n))
    if step_at is not None:
        x[step_at:] *= 1 + step
    return x


def test_a_planted_5_percent_regression_is_found_where_it_is():
    found = 0
    for trial in range(50):
        x = _history(np.random.default_rng(trial), 30, 20, -0.05)
        changes = change_points(x, "higher", seed=trial)
        hits = [c for c in changes if abs(c.index - 20) <= 1 and c.direction == "regression"]
        if hits:
            found += 1
            assert -0.08 < hits[0].size < -0.02
            assert hits[0].p < 0.01
    assert found >= 48, f"found in {found}/50 histories"


def test_a_latency_that_grows_is_a_regression_and_one_that_shrinks_an_improvement():
    rng = np.random.default_rng(7)
    up = _history(rng, 24, 12, +0.05)
    (c,) = change_points(up, "lower")
    assert c.direction == "regression" and c.index == 12 and c.size > 0
    (c,) = change_points(up, "higher")
    assert c.direction == "improvement"


def test_two_steps_are_both_found():
    rng = np.random.default_rng(3)
    x = np.r_[_history(rng, 15, None, 0), 0.94 * _history(rng, 15, None, 0),
              1.02 * _history(rng, 15, None, 0)]  # fmt: skip
    assert [c.index for c in change_points(x, "higher")] == [15, 30]


@pytest.mark.parametrize("kind", ["normal", "heavy-tailed"])
def test_a_flat_noisy_history_raises_no_change_point(kind: str):
    """A/A: 300 seeded flat histories; the test runs at alpha = 0.01, so about 1% of them may
    raise a false alarm; more than 3% would mean the method is not what it claims."""
    alarms = 0
    for trial in range(300):
        rng = np.random.default_rng(10_000 + trial)
        if kind == "normal":
            x = 100 * (1 + NOISE * rng.standard_normal(30))
        else:  # Student t with 3 degrees of freedom: the odd slow run
            x = 100 * (1 + NOISE * rng.standard_t(3, 30))
        alarms += bool(change_points(x, "higher", seed=trial))
    assert alarms / 300 <= 0.03, f"{alarms}/300 false alarms"


def test_too_short_or_constant_histories_have_no_change():
    assert change_points([1.0, 2.0, 1.0], "higher") == []
    assert change_points([5.0] * 20, "higher") == []


def test_min_change_drops_immaterial_shifts():
    rng = np.random.default_rng(11)
    x = np.r_[100 + 0.01 * rng.standard_normal(20), 100.5 + 0.01 * rng.standard_normal(20)]
    assert change_points(x, "higher")  # significant: the noise is tiny
    assert change_points(x, "higher", min_change=0.01) == []  # but only 0.5%


# -- the CLI -----------------------------------------------------------------------------------


def _run(store: RunStore, host: str, triad: float, threads: int = 2) -> str:
    w = store.create(suite="memory", suite_text="", system=System(hostname=host), argv=[])
    s = Sample.make("stream", "memory.triad", triad, {"threads": threads, "scope": "node"},
                    Stats(n=9, mean=triad, stddev=triad * 0.01))  # fmt: skip
    w.record(JobResult(job_id="001", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    return w.info.run_id


def test_history_shows_the_change_with_the_runs_around_it_and_labels(assay_home: Path):
    store = RunStore(assay_home)
    rng = np.random.default_rng(5)
    values = _history(rng, 16, 10, -0.05) * 1e9
    ids = [_run(store, "node1", v) for v in values]
    _run(store, "node2", 50e9)  # another host: its own series, filtered out below
    label = run_cli("label", ids[10], "driver 550.54 [new]", home=assay_home, check=True)
    assert "labelled" in label.stderr
    out = run_cli("history", "memory.triad", "--system", "node1", "-f", "md",
                  home=assay_home, check=True).stdout  # fmt: skip
    assert "memory.triad on node1 (threads=2, scope=node)" in out
    assert f"| {ids[10]} | node1 | driver 550.54 [new] |" in out
    assert "▼ -" in out  # the change is marked on the first run after it
    assert "regression of -" in out and f"between {ids[9]} and {ids[10]}" in out
    assert "node2" not in out
    # by label (globs work), and a flat history says so
    labelled = run_cli("history", "memory.triad", "--system", "driver*", "-f", "md",
                       home=assay_home, check=True).stdout  # fmt: skip
    assert ids[10] in labelled and ids[9] not in labelled
    flat = run_cli("history", "memory.triad", "--system", "node2", home=assay_home, check=True)
    assert "no change point" in flat.stdout
    missing = run_cli("history", "memory.triad", "--params", "threads=64", home=assay_home)
    assert missing.returncode == 3 and "no samples" in missing.stderr
    bad = run_cli("history", "memory.triad", "--params", "threads", home=assay_home)
    assert bad.returncode == 2 and "expected key=value" in bad.stderr


# -- the O(n log n) statistic ---------------------------------------------------------------------


def _matrix_change_points(values, better="higher", seed=0, alpha=0.01, permutations=499):
    """The method as first written, from the n × n distance matrix (O(n²) per shuffle), with
    ties counted as the definition of p says: the reference the fast method must equal."""
    x = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)

    def q_all(d):
        n = d.shape[0]
        taus = np.arange(3, n - 3 + 1)
        s = np.zeros((n + 1, n + 1))
        s[1:, 1:] = d.cumsum(0).cumsum(1)
        m = taus.astype(float)
        k = n - m
        cross = s[taus, n] - s[taus, taus]
        wx = s[taus, taus] / 2
        wy = (s[n, n] - s[taus, n] - s[n, taus] + s[taus, taus]) / 2
        e = 2 * cross / (m * k) - wx / (m * (m - 1) / 2) - wy / (k * (k - 1) / 2)
        q = m * k / (m + k) * e
        return int(taus[np.argmax(q)]), float(q.max())

    def test(seg):
        d = np.abs(seg[:, None] - seg[None, :])
        tau, q = q_all(d)
        if q <= 0:
            return tau, q, 1.0
        exceed, limit = 0, alpha * (permutations + 1)
        for i in range(permutations):
            perm = rng.permutation(seg.size)
            if q_all(d[np.ix_(perm, perm)])[1] >= q * (1 - 1e-9):
                exceed += 1
                if exceed + 1 > limit:
                    return tau, q, (exceed + 1) / (i + 2)
        return tau, q, (exceed + 1) / (permutations + 1)

    cuts, pending = [], [(0, x.size)]
    while pending:
        a, b = pending.pop()
        if b - a < 6:
            continue
        tau, q, p = test(x[a:b])
        if p >= alpha:
            continue
        cuts.append((a + tau, p, q))
        pending += [(a, a + tau), (a + tau, b)]
    return sorted(cuts)


@pytest.mark.slow
def test_the_fast_statistic_finds_what_the_distance_matrix_finds():
    """Same change points, same p-values (the same seeded shuffles), the same Q up to
    rounding, on steps, two steps, flat noise and rounded values (ties)."""
    for trial in range(40):
        rng = np.random.default_rng(trial)
        n = int(rng.integers(6, 70))
        x = _history(rng, n, int(rng.integers(1, n)) if trial % 2 else None, -0.05)
        if trial % 3 == 0:
            x[int(rng.integers(1, n)) :] *= 1.04
        if trial % 5 == 0:
            x = np.round(x)  # equal values: ties between shuffles
        fast = [(c.index, c.p, c.q) for c in change_points(x, "higher", seed=trial)]
        slow = _matrix_change_points(x, seed=trial)
        assert [(i, p) for i, p, _ in fast] == [(i, p) for i, p, _ in slow], trial
        assert [q for *_, q in fast] == pytest.approx([q for *_, q in slow], rel=1e-9)


LONG = """
import resource, sys
import numpy as np
resource.setrlimit(resource.RLIMIT_AS, (512 << 20, 512 << 20))  # no n x n matrix fits
from assay.analysis.statistics.changepoint import change_points
x = 100 + np.random.default_rng(1).standard_normal(10_000)
x[6_000:] += 1.0
print([c.index for c in change_points(x, "higher", permutations=99, alpha=0.05)])
"""


@pytest.mark.slow
def test_a_long_history_needs_no_n_by_n_matrix():
    """10,000 points: the distance matrix alone would be 800 MB; this answers in 512 MiB."""
    import subprocess
    import sys

    proc = subprocess.run([sys.executable, "-c", LONG], capture_output=True, text=True,
                          timeout=300)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    (found,) = json.loads(proc.stdout)
    assert abs(found - 6000) <= 10
