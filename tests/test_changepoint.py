"""Change points (E-divisive with a permutation test) and 'assay history' / 'assay label'."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from assay.analysis.changepoint import change_points
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
