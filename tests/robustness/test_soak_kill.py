"""Soak: SIGKILLs of ``assay run`` at random points lose no finished job, leave no process of
the run alive, and every run is in a final state once the store is next opened.

``make test`` runs a small version (ASSAY_SOAK_KILLS, default 2); ``make soak`` runs 20.
The kill times come from a seeded generator (ASSAY_SOAK_SEED) so a failure can be replayed.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from test_lifecycle import kill_all, processes_of, start, wait_until_gone

from conftest import run_cli

pytestmark = pytest.mark.slow
KILLS = int(os.environ.get("ASSAY_SOAK_KILLS", "2"))
SEED = int(os.environ.get("ASSAY_SOAK_SEED", "20261123"))
FINAL = {"complete", "interrupted", "failed"}


def _records(run_dir: Path) -> list[dict]:
    path = run_dir / "jobs.jsonl"
    if not path.exists():
        return []
    return [
        json.loads(ln) for ln in path.read_text().splitlines(keepends=True) if ln.endswith("\n")
    ]


def test_random_sigkills_lose_no_finished_job(assay_home: Path, tmp_path: Path):
    suite = tmp_path / "soak.toml"
    suite.write_text(
        'name = "soak"\n'
        '[[bench]]\nprobe = "stream"\nparams = { elements = 50000, ntimes = 3 }\n'
        '[[bench]]\nprobe = "p2p"\nmpi = "openmpi"\n'
        'params = { mode = "latency", max_size = 8, iterations = 300, warmup = 10 }\n'
        '[[bench]]\nprobe = "p2p"\nmpi = "mpich"\n'
        'params = { mode = "latency", max_size = 8, iterations = 300, warmup = 10 }\n'
    )
    # one run to the end first: the probes are compiled, so kills land in jobs, not in gcc
    run_cli("run", str(suite), home=assay_home, check=True)
    rng = random.Random(SEED)
    seen: dict[str, set[str]] = {}  # run id -> jobs recorded just before its kill
    try:
        for k in range(KILLS):
            before = set((assay_home / "runs").iterdir())
            # long enough to be killed mid-way on a fast, quiet machine too (~1 s a repetition)
            proc = start(assay_home, "run", str(suite), "--repeat", "40")
            deadline = time.monotonic() + 60
            while not (new := set((assay_home / "runs").iterdir()) - before):
                assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
                time.sleep(0.05)
            time.sleep(rng.uniform(0.0, 6.0))  # a random point of the first ~6 s of the run
            for run_dir in new:
                seen[run_dir.name] = {r["job_id"] for r in _records(run_dir)}
            proc.kill()
            proc.wait(timeout=10)
            left = wait_until_gone(assay_home)
            assert left == [], f"kill {k + 1} (seed {SEED}): processes outlived assay:\n" + (
                "\n".join(left)
            )
    finally:
        kill_all(assay_home)
    assert processes_of(assay_home) == []
    run_cli("runs", home=assay_home, check=True)  # the store is opened: dead runs are closed
    assert list((assay_home / "live").iterdir()) == []
    statuses = Counter()
    for run_dir in sorted((assay_home / "runs").iterdir()):
        info = json.loads((run_dir / "run.json").read_text())
        statuses[info["status"]] += 1
        assert info["status"] in FINAL, f"{run_dir.name} left {info['status']} (seed {SEED})"
        records = _records(run_dir)
        ids = [r["job_id"] for r in records]
        assert len(ids) == len(set(ids)), f"{run_dir.name}: a job recorded twice"
        assert seen.get(run_dir.name, set()) <= set(ids), f"{run_dir.name} lost a finished job"
        samples = run_dir / "samples.jsonl"  # absent when killed before its first job ended
        lines = samples.read_text().splitlines(keepends=True) if samples.exists() else []
        per_job = Counter(json.loads(ln)["job_id"] for ln in lines if ln.endswith("\n"))
        for r in records:  # every sample belongs to a record that counts it
            assert per_job.pop(r["job_id"], 0) == r["n_samples"], (run_dir.name, r["job_id"])
        assert not per_job, f"{run_dir.name}: samples without a job record: {per_job}"
        if info["status"] == "interrupted":
            assert info["notes"], f"{run_dir.name}: interrupted without saying why"
    print(f"soak: {KILLS} SIGKILLs (seed {SEED}): runs {dict(statuses)}")
    assert statuses["interrupted"] >= KILLS // 2  # the kills did land inside runs
