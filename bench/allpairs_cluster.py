"""The whole all-pairs ``assay run`` on the namespace Slurm cluster, at several node counts.

Brings the namespace cluster (scripts/testcluster) up with the largest count, throttles one
link (anode2-anode3, 100 Mbit/s) and runs ``assay run network --on slurm --nodes N --all-pairs``
with default options for each N, ``--repeat`` times, alternating the counts. Per run: the wall
time of the command, the Slurm steps the runner launched (slurmd's "launch task StepId=J.S"
lines, the step that tells each node's kernel apart included), the files and bytes the run left
in the store, the jobs and whether the throttled link was named (confirmed) in every matrix.

    python bench/allpairs_cluster.py --nodes 16 32 64 --repeat 3 [--mpi openmpi] [--out runs.jsonl]
    python bench/scale_model.py --fit runs.jsonl      # the model from the measured constants

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
from dataclasses import asdict
from pathlib import Path

from _common import ROOT, assay, scratch_home
from scale_model import Measured, calibrate, measured_sweep, table

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


# The probe's stderr (allpairs.c, say_start and after): seconds after the job's first rank began.
START = re.compile(
    r"start: \d+ ranks began within (?P<spread>\S+) s; the last MPI_Init returned at "
    r"(?P<init>\S+) s, the host names were gathered at (?P<gathered>\S+) s"
)
PILOT, DONE = re.compile(r"pilot done at (\S+) s"), re.compile(r"allpairs: done at (\S+) s")
PLAN = re.compile(r"allpairs: plan read at (\S+) s")  # a retest measured inside the sweep's launch


def launch_parts(job: dict, run: Path, rounds_s: float) -> dict:
    """Where a job's time went besides its rounds (issue 27: the launch taken apart), one
    span after another so that they add up to the job's wall time: the ranks' start spread
    (first to last rank in main), MPI_Init's wire-up (from the last rank's start to the last
    return), the host gather, the pilot, the rounds, and what lies outside the probe (the
    launcher before the first rank began, MPI_Finalize and the teardown after it: the job's
    wall time less the probe's)."""
    text = (run / job["stderr_path"]).read_text(errors="replace")
    start, pilot, done = START.search(text), PILOT.search(text), DONE.search(text)
    if not (start and done):
        return {}
    t = {k: float(v) for k, v in start.groupdict().items()}
    t_pilot = float(pilot[1]) if pilot else t["gathered"]
    t_done = float(done[1])
    plan = PLAN.search(text)
    t_plan = float(plan[1]) if plan else t_done  # (the job's wall time leaves its retest out)
    return {
        "ranks_spread_s": t["spread"], "mpi_init_s": t["init"] - t["spread"],
        "host_gather_s": t["gathered"] - t["init"], "pilot_s": t_pilot - t["gathered"],
        "rounds_s": rounds_s, "between_s": t_done - t_pilot - rounds_s,
        "plan_wait_s": t_plan - t_done, "outside_probe_s": job["wall_time"] - t_plan,
    }  # fmt: skip


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
    sweeps, parts = [], {}  # per sweep job: its wall, the model's point (bench/scale_model.py)
    for job in jobs:
        matrix = run / "jobs" / job["job_id"] / "allpairs.bin"
        if job["status"] != "ok" or not matrix.exists():
            continue  # (a failed job: its rc and reason are in the run, not a point)
        m = read_matrix_file(matrix)
        parts[job["job_id"]] = launch_parts(job, run, m.rounds[-1].t_start + m.rounds[-1].wall_s)
        if "-retest" in job["job_id"]:
            continue
        point = measured_sweep(nodes, job["wall_time"], str(matrix))
        sweeps.append({"job": job["job_id"], "wall_s": job["wall_time"], "point": asdict(point),
                       "rounds": len(m.rounds)})  # fmt: skip
    report = assay("report", rid.group(1), "-f", "md", home=home, check=False).stdout
    sections = report.split("\n## ")
    bandwidth = [s for s in sections if s.startswith("All-pairs bandwidth")]
    named = [s.count("OUTLIER LINK anode2–anode3") == 1 and s.count("OUTLIER") == 1
             for s in bandwidth]  # fmt: skip
    flagged = [line for s in sections if s.startswith("All-pairs")
               for line in re.findall(r"^OUTLIER .*$", s, re.M)]  # fmt: skip
    return {
        "nodes": nodes, "rc": proc.returncode, "wall_s": wall,
        "steps": len(steps_launched(STATE, logs)[0]), "jobs": len(jobs),
        "job_status": {j["job_id"]: j["status"] for j in jobs},
        "files": len(files), "bytes": sum(p.stat().st_size for p in files),
        "link_named": all(named) and bool(named), "flagged": flagged,
        "first_node_flagged": any(re.search(r"\banode1\b", line) for line in flagged),
        "sweeps": sweeps, "launch_parts": parts,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, nargs="+", default=[4, 8, 16])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--mpi", action="append", default=[], help="only these MPIs (default: all)")
    ap.add_argument("--out", type=Path, help="append each run as a JSON line here (the "
                    "points bench/scale_model.py --fit refits its constants to)")  # fmt: skip
    args = ap.parse_args()
    home = scratch_home()
    (home / "config.toml").write_text(CONFIG)
    os.environ["ASSAY_CONFIG"] = str(home / "config.toml")
    os.environ["SLURM_CONF"] = f"{STATE}/slurm.conf"
    most = max(args.nodes)
    testcluster(most, "down")
    testcluster(most, "up")  # (it raises the shared neighbour table for `most` nodes)
    testcluster(most, "throttle", "2", "3", "100mbit")
    mpi = ["--mpi", ",".join(args.mpi)] if args.mpi else []
    rows: list[dict] = []
    try:
        for k in range(args.repeat):
            for n in args.nodes:
                row = one_run(home, n, mpi)
                rows.append(row)
                print(json.dumps({"round": k + 1, **row}), flush=True)
                if args.out:
                    with args.out.open("a", encoding="utf-8") as f:
                        f.write(json.dumps({"round": k + 1, **row}) + "\n")
    finally:
        testcluster(most, "down")
    print_table(args.nodes, rows)
    print_parts(args.nodes, rows)
    for name in ("openmpi", "mpich"):  # the scale model refitted to each MPI's sweeps
        points = [Measured(**sw["point"]) for r in rows for sw in r["sweeps"]
                  if name in sw["job"]]  # fmt: skip
        if points:
            fitted = calibrate(points)
            print(f"\n{name} sweeps, the scale model refitted: {fitted}\n")
            print(table(c=fitted))


def print_table(nodes: list[int], rows: list[dict]) -> None:
    print("\n| nodes | whole `assay run`, median (range) | Slurm steps | jobs | files | store KiB "
          "| throttled link named, no other | first node flagged |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for n in nodes:
        mine = [r for r in rows if r["nodes"] == n]
        walls = [r["wall_s"] for r in mine]
        print(
            f"| {n} | {statistics.median(walls):.1f} s ({min(walls):.1f}–{max(walls):.1f}) "
            f"| {'/'.join(str(r['steps']) for r in mine)} | {mine[0]['jobs']} "
            f"| {mine[0]['files']} | {statistics.median(r['bytes'] for r in mine) / 1024:.0f} "
            f"| {sum(r['link_named'] for r in mine)} of {len(mine)} "
            f"| {sum(r['first_node_flagged'] for r in mine)} of {len(mine)} |"
        )


PARTS = ("ranks_spread_s", "mpi_init_s", "host_gather_s", "pilot_s", "rounds_s", "between_s",
         "plan_wait_s", "outside_probe_s")  # fmt: skip


def print_parts(nodes: list[int], rows: list[dict]) -> None:
    """Each all-pairs job's time taken apart (launch_parts), medians over the runs."""
    print("\n| nodes | job | n | ranks began within | MPI_Init after | host gather | pilot "
          "| rounds | after the rounds | waiting for the retest's plan | outside the probe |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for n in nodes:
        jobs: dict[str, list[dict]] = {}
        for r in (r for r in rows if r["nodes"] == n):
            for job, parts in r["launch_parts"].items():
                if parts:
                    jobs.setdefault(job, []).append(parts)
        for job, runs in jobs.items():
            cells = " | ".join(f"{statistics.median(p[k] for p in runs):.2f} s" for k in PARTS)
            print(f"| {n} | {job} | {len(runs)} | {cells} |")


if __name__ == "__main__":
    main()
