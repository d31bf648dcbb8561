"""The whole all-pairs ``assay run`` on the namespace Slurm cluster, at several node counts.

Brings the namespace cluster (scripts/testcluster) up with the largest count, throttles one
link (anode2-anode3, 100 Mbit/s) and runs ``assay run network --on slurm --nodes N --all-pairs``
with default options for each N, ``--repeat`` times, alternating the counts. Per run: the wall
time of the command, the Slurm steps the runner launched (slurmd's "launch task StepId=J.S"
lines, the step that tells each node's kernel apart included), the files and bytes the run left
in the store, the jobs and whether the throttled link was named (confirmed) in every matrix.

    python bench/allpairs_cluster.py --nodes 4 8 16 --repeat 3 [--mpi openmpi]

Run it as root on a quiet machine; the cluster is left down (as it is brought down first).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, assay, scratch_home
from scale_model import Measured, calibrate, model

from assay.parsers.allpairs_file import read_matrix_file

sys.path.insert(0, str(ROOT / "tests"))  # the cluster's config and logs, shared with its tests
from nscluster import MPI_TABLES, steps_launched

TESTCLUSTER = ROOT / "scripts" / "testcluster"
STATE = "/tmp/assay-bench-cluster"
CONFIG = f"""
[slurm]
poll_s = 0.5
max_wait = 120
{MPI_TABLES}"""


def testcluster(nodes: int, *args: str) -> None:
    env = {**os.environ, "ASSAY_TESTCLUSTER_DIR": STATE, "ASSAY_TESTCLUSTER_NODES": str(nodes)}
    subprocess.run([str(TESTCLUSTER), *args], env=env, check=True, capture_output=True)


def one_run(home: Path, nodes: int, mpi: list[str]) -> dict:
    _, logs = steps_launched(STATE)
    t0 = time.monotonic()
    proc = assay("run", "network", "--on", "slurm", "--nodes", str(nodes), "--all-pairs",
                 *mpi, home=home, check=False)  # fmt: skip
    wall = time.monotonic() - t0
    time.sleep(1)  # slurmd's log lines of the last step
    rid = re.search(r"run (\d{8}-\d{6}-\w+):", proc.stderr)
    if not rid:
        raise SystemExit(f"no run started at {nodes} nodes:\n{proc.stderr}")
    run = home / "runs" / rid.group(1)
    files = [p for p in run.rglob("*") if p.is_file()]
    jobs = [json.loads(line) for line in (run / "jobs.jsonl").read_text().splitlines()]
    sweeps = []  # per sweep job: its wall, its rounds' (barrier to barrier), the median round
    for job in jobs:
        matrix = run / "jobs" / job["job_id"] / "allpairs.bin"
        if "-retest" in job["job_id"] or job["status"] != "ok" or not matrix.exists():
            continue  # (a failed job: its rc and reason are in the run, not a point)
        rounds = [r.wall_s for r in read_matrix_file(matrix).rounds]
        sweeps.append({"job": job["job_id"], "wall_s": job["wall_time"],
                       "rounds_s": sum(rounds), "round_s": statistics.median(rounds)})  # fmt: skip
    report = assay("report", rid.group(1), "-f", "md", home=home, check=False).stdout
    bandwidth = [s for s in report.split("\n## ") if s.startswith("All-pairs bandwidth")]
    named = [s.count("OUTLIER LINK anode2–anode3") == 1 and s.count("OUTLIER") == 1
             for s in bandwidth]  # fmt: skip
    latency_named = sum(s.count("OUTLIER") for s in report.split("\n## ")
                        if s.startswith("All-pairs latency"))  # fmt: skip
    return {
        "nodes": nodes, "rc": proc.returncode, "wall_s": wall,
        "steps": len(steps_launched(STATE, logs)[0]), "jobs": len(jobs),
        "files": len(files), "bytes": sum(p.stat().st_size for p in files),
        "link_named": all(named) and bool(named), "latency_outliers": latency_named,
        "sweeps": sweeps,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mpi", action="append", default=[], help="only these MPIs (default: all)")
    args = ap.parse_args()
    home = scratch_home()
    (home / "config.toml").write_text(CONFIG)
    os.environ["ASSAY_CONFIG"] = str(home / "config.toml")
    os.environ["SLURM_CONF"] = f"{STATE}/slurm.conf"
    most = max(args.nodes)
    testcluster(most, "down")
    testcluster(most, "up")
    testcluster(most, "throttle", "2", "3", "100mbit")
    mpi = ["--mpi", ",".join(args.mpi)] if args.mpi else []
    rows: list[dict] = []
    try:
        for k in range(args.repeat):
            for n in args.nodes:
                row = one_run(home, n, mpi)
                rows.append(row)
                print(json.dumps({"round": k + 1, **row}), flush=True)
    finally:
        testcluster(most, "down")
    print("\n| nodes | wall s, median (range) | Slurm steps | jobs | files | store KiB | "
          "throttled link named, no other |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for n in args.nodes:
        mine = [r for r in rows if r["nodes"] == n]
        walls = [r["wall_s"] for r in mine]
        print(
            f"| {n} | {statistics.median(walls):.1f} ({min(walls):.1f}–{max(walls):.1f}) "
            f"| {'/'.join(str(r['steps']) for r in mine)} | {mine[0]['jobs']} "
            f"| {mine[0]['files']} | {statistics.median(r['bytes'] for r in mine) / 1024:.0f} "
            f"| {sum(r['link_named'] for r in mine)} of {len(mine)} "
            f"(latency outliers named: {sum(r['latency_outliers'] for r in mine)}) |"
        )
    # The scale model refitted to the sweeps (launch = the job's wall less its rounds')
    points = [Measured(r["nodes"], sw["wall_s"] - sw["rounds_s"], sw["round_s"])
              for r in rows for sw in r["sweeps"] if "openmpi" in sw["job"]]  # fmt: skip
    if points:
        fitted = calibrate(points)
        print(f"\nOpen MPI sweeps, the model refitted: {fitted}")
        for n in (16, 1000, 10000):
            m = model(n, 1, fitted)
            print(
                f"  {n} nodes: {m.wall_s / 60:.1f} min, {m.file_bytes / 1e6:.1f} MB, "
                f"{m.launches} launch(es)"
            )


if __name__ == "__main__":
    main()
