"""A store of years of runs: ``assay runs`` over 5,000 runs, ``assay history`` over a 1,000-run
series, and the change-point search alone on 365 to 5,000 points.

- 5,000 small runs (the files a real run writes, one STREAM sample each, one series): the
  first ``assay runs`` indexes them; then ``runs`` (the newest 20), ``runs --limit 200``
  and ``runs --all`` (every run drawn), each the median of 3.
- ``history memory.triad`` over the first 1,000 of them (the others moved aside), with two
  planted steps, once.
- ``change_points`` on 365, 1,000, 2,000 and 5,000 points with two steps, in-process: wall and
  CPU seconds (CPU time is less disturbed by a shared machine).

With ``--baseline SRC`` (an ``src`` directory of another assay checkout) every CLI figure is
also measured for that tree, alternated with this one, so both see the same machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from _common import ROOT, scratch_home

N_RUNS = 5000
SERIES = 1000


def write_runs(home: Path, n: int) -> list[str]:
    """``n`` complete runs, one STREAM triad sample each: 100 GB/s with noise, -5 % from a
    third of the way, +3 % from two thirds."""
    rng = np.random.default_rng(1)
    ids = []
    for i in range(n):
        run_id = f"2026{i // 1440 // 28 + 1:02d}{i // 1440 % 28 + 1:02d}-{i % 1440 // 60:02d}"
        run_id += f"{i % 60:02d}00-000{i:06x}"
        run = home / "runs" / run_id
        (run / "jobs").mkdir(parents=True)
        (run / "run.json").write_text(json.dumps({
            "run_id": run_id, "created": "2026-01-01T00:00:00Z", "suite": "nightly",
            "status": "complete", "n_jobs": 1, "label": f"night {i}",
        }))  # fmt: skip
        (run / "system.json").write_text(json.dumps({"hostname": "node1"}))
        value = 100e9 * (1 + 0.01 * rng.standard_normal())
        value *= 0.95 if i % SERIES >= SERIES // 3 else 1.0
        value *= 1.03 if i % SERIES >= 2 * SERIES // 3 else 1.0
        (run / "samples.jsonl").write_text(json.dumps({
            "run_id": run_id, "job_id": "001-stream", "probe": "stream",
            "metric": "memory.triad", "value": value, "unit": "B/s", "better": "higher",
            "params": {"threads": 2, "scope": "node"},
        }) + "\n")  # fmt: skip
        (run / "jobs.jsonl").write_text(json.dumps({
            "job_id": "001-stream", "status": "ok", "exit_code": 0, "wall_time": 1.0,
            "argv": [], "n_samples": 1,
        }) + "\n")  # fmt: skip
        ids.append(run_id)
    return ids


def timed(src: Path, home: Path, *args: str) -> float:
    """Seconds of one ``assay ARGS`` of the tree ``src`` on the store at ``home``."""
    env = {**os.environ, "ASSAY_HOME": str(home), "PYTHONPATH": str(src), "COLUMNS": "120"}
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "assay", *args], env=env, capture_output=True,
                   check=True)  # fmt: skip
    return time.perf_counter() - t


def compare(trees: dict[str, tuple[Path, Path]], label: str, *args: str, repeat: int = 3) -> None:
    """Median of ``repeat`` runs of each tree (its src, its store), alternated."""
    times: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(repeat):
        for name, (src, home) in trees.items():
            times[name].append(timed(src, home, *args))
    shown = ", ".join(
        f"{name} {statistics.median(t):6.2f} s (range {min(t):.2f}-{max(t):.2f})"
        for name, t in times.items()
    )
    print(f"{label:34}: {shown}", flush=True)


def change_point_times() -> None:
    sys.path.insert(0, str(ROOT / "src"))
    from assay.analysis.statistics.changepoint import change_points

    for n in (365, 1000, 2000, 5000):
        rng = np.random.default_rng(1)
        x = 100 * (1 + 0.015 * rng.standard_normal(n))
        x[n // 4 :] *= 1.03
        x[n // 2 :] *= 0.95
        wall, cpu = time.perf_counter(), time.process_time()
        found = [c.index for c in change_points(x, "higher")]
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        print(f"change_points, {n:5} points        : {wall:6.2f} s wall, {cpu:6.2f} s CPU; "
              f"changes at {found}", flush=True)  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--baseline", type=Path, help="src/ of another assay checkout to compare")
    args = ap.parse_args()
    sources = {"this": ROOT / "src"}
    if args.baseline:
        sources["baseline"] = args.baseline.resolve()
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    change_point_times()
    first = scratch_home()
    write_runs(first, N_RUNS)
    trees = {}  # each tree its own copy of the store: the index schemas may differ
    for name, src in sources.items():
        home = first if not trees else scratch_home()
        if trees:
            shutil.copytree(first / "runs", home / "runs")
        trees[name] = (src, home)
        print(f"runs, first (indexes {N_RUNS:,} runs), {name}: {timed(src, home, 'runs'):6.2f} s")
    compare(trees, f"runs ({N_RUNS:,} runs stored)", "runs")
    this = {"this": trees["this"]}  # the baseline may have neither option
    compare(this, "runs --limit 200", "runs", "--limit", "200")
    compare(this, "runs --all (every run drawn)", "runs", "--all")
    for _, home in trees.values():
        moved = home / "moved"
        moved.mkdir()
        for run in sorted((home / "runs").iterdir())[SERIES:]:
            run.rename(moved / run.name)
    # once: the matrix method took minutes here
    compare(trees, f"history ({SERIES:,}-run series)", "history", "memory.triad", repeat=1)
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
