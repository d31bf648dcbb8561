"""CLI start-up time, and ingest + report time at a million samples.

- start-up: `assay --version` and `assay --help`, best of 10 runs.
- a million samples: a synthetic run directory (the same files a real run writes) with
  1,000,000 p2p.latency samples over 1000 jobs; then `assay runs` (index ingest) and
  `assay report -f json|md|html` on it. The synthetic run has no folded-figure cache (a real
  run writes it as it ends), so the first Markdown and HTML reports fold the samples and write
  it; both are measured, first (folding) and again (from the cache, whose stamp is checked
  by a digest of samples.jsonl: measured alone at the end).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time

from _common import ROOT, scratch_home

sys.path.insert(0, str(ROOT / "src"))
from assay.store.cache import digest

N_SAMPLES = 1_000_000
N_JOBS = 1000


def timed(args: list[str], env: dict[str, str], repeat: int = 1) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run(args, env=env, capture_output=True, check=True)
        best = min(best, time.perf_counter() - t)
    return best


def synthetic_run(home) -> None:
    run = home / "runs" / "20260101-000000-00000"
    (run / "jobs").mkdir(parents=True)
    (run / "run.json").write_text(json.dumps({
        "run_id": run.name, "created": "2026-01-01T00:00:00Z", "suite": "synthetic",
        "status": "complete", "n_jobs": N_JOBS,
    }))  # fmt: skip
    (run / "system.json").write_text(json.dumps({"hostname": "synthetic"}))
    per_job = N_SAMPLES // N_JOBS
    with open(run / "samples.jsonl", "w") as f, open(run / "jobs.jsonl", "w") as j:
        for job in range(N_JOBS):
            job_id = f"{job:04d}-p2p"
            for k in range(per_job):
                f.write(json.dumps({
                    "run_id": run.name, "job_id": job_id, "probe": "p2p",
                    "metric": "p2p.latency", "value": 1e-6 * (1 + k / per_job), "unit": "s",
                    "better": "lower",
                    "params": {"size": k, "mpi": f"mpi{job % 4}", "mpi_label": f"MPI {job % 4}",
                               "repetition": job // 4 + 1},
                    "stats": {"n": 1000, "min": 1e-6, "max": 2e-6, "mean": 1.5e-6},
                }) + "\n")  # fmt: skip
            j.write(json.dumps({
                "job_id": job_id, "status": "ok", "exit_code": 0, "wall_time": 1.0,
                "argv": [], "n_samples": per_job,
            }) + "\n")  # fmt: skip


def timed_rss(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds and peak resident memory (MiB) of one run of ``args``; its CPU seconds (with
    the processes it forked and waited for) go to ``CPU`` (less disturbed by a shared machine
    than wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode})")
    secs = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    CPU[0] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return secs, usage.ru_maxrss / 1024  # Linux: ru_maxrss in KiB


CPU = [0.0]  # CPU seconds of the last timed_rss


def main() -> None:
    home = scratch_home()
    env = {**os.environ, "ASSAY_HOME": str(home)}
    cli = [sys.executable, "-m", "assay"]
    print(f"start-up  assay --version : {timed([*cli, '--version'], env, 10) * 1e3:7.0f} ms")
    print(f"start-up  assay --help    : {timed([*cli, '--help'], env, 10) * 1e3:7.0f} ms")
    t = time.perf_counter()
    synthetic_run(home)
    print(f"write {N_SAMPLES:,} samples      : {time.perf_counter() - t:7.1f} s")
    print(f"index ingest (assay runs) : {timed([*cli, 'runs'], env):7.1f} s")
    secs, mib = timed_rss([*cli, "report", "-f", "json", "-o", os.devnull], env)
    print(f"report -f json            : {secs:7.1f} s ({CPU[0]:.1f} s CPU), peak {mib:,.0f} MiB")
    cache = next((home / "runs").glob("*/figures.cache.json"), None)
    if cache is not None:
        cache.unlink()  # `assay runs` does not fold; this run was never reported: no cache
    for fmt in ("md", "html"):
        for when in ("first (folds)", "again (cache)"):
            secs, mib = timed_rss([*cli, "report", "-f", fmt, "-o", os.devnull], env)
            print(f"report -f {fmt:4} {when:13}: {secs:7.1f} s ({CPU[0]:.1f} s CPU), "
                  f"peak {mib:,.0f} MiB")  # fmt: skip
        if fmt == "md":  # with the cache, the JSON report skips damaged lines by position
            secs, mib = timed_rss([*cli, "report", "-f", "json", "-o", os.devnull], env)
            print(f"report -f json (cache)    : {secs:7.1f} s ({CPU[0]:.1f} s CPU), "
                  f"peak {mib:,.0f} MiB")  # fmt: skip
        next((home / "runs").glob("*/figures.cache.json")).unlink()  # html folds afresh too
    samples = next((home / "runs").glob("*/samples.jsonl"))
    t = time.perf_counter()
    digest(samples)  # what every cached report pays to know the cache still holds
    print(f"digest of samples.jsonl   : {time.perf_counter() - t:7.2f} s "
          f"({samples.stat().st_size / 1e6:,.0f} MB)")  # fmt: skip
    print(
        f"history p2p.latency size=5: "
        f"{timed([*cli, 'history', 'p2p.latency', '--params', 'size=5'], env):7.1f} s"
    )


if __name__ == "__main__":
    main()
