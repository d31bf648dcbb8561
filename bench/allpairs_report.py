"""The report of an all-pairs run at N nodes (default 10,000): time and peak memory.

A synthetic run directory as the all-pairs probe leaves it: one ``allpairs.bin`` (the probe's
format: 9,999 sweep rounds of 5,000 pairs, latency and bandwidth per pair, written here by the
format's one writer, ``assay.parsers.allpairs_file.write_sweep``), one sample per node and
metric naming it (``matrix``, ``node``, ``kind``), and a Slurm tree (``slurm/topology.txt``, 40
nodes a leaf switch, as ``scontrol show topology`` prints it). Planted: one slow link, one slow
node, one leaf switch whose uplink is slow. Then, each timed with its CPU time and peak
resident memory (``wait4``):

- the run's end (``assay.figures.folded.cache_figures``, what ``assay run`` calls last): the
  samples folded and the matrices analysed into their caches, one matrix at a time;
- ``assay report -f md`` and ``-f html`` right after it (from the caches: what a user gets);
- the same with ``allpairs.cache.json`` removed first (reading and analysing the file in the
  report, two matrices at once), for comparison;

and what the report named.

    python bench/allpairs_report.py [--nodes 10000] [--keep]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

from _common import ROOT, scratch_home

sys.path.insert(0, str(ROOT / "tests"))  # the synthetic matrices of the tests

from assay.parsers.allpairs_file import write_sweep
from matrixgen import BASE, hosts_of, synthetic

PER_SWITCH = 40


def plant(n: int) -> dict:
    return {
        "slow_links": [(3, n // 2, 4.0)],
        "slow_nodes": [(n // 3, 3.0)],
        "slow_groups": [(range(PER_SWITCH * 5, PER_SWITCH * 6), 2.0)],  # switch leaf6
    }


def write_run(home: Path, n: int) -> Path:
    run = home / "runs" / "20260101-000000-00000"
    job = run / "jobs" / "001-allpairs-openmpi"
    job.mkdir(parents=True)
    (run / "slurm").mkdir()
    (run / "run.json").write_text(
        json.dumps(
            {
                "run_id": run.name,
                "created": "2026-01-01T00:00:00Z",
                "suite": "network",
                "status": "complete",
                "n_jobs": 1,
            }
        )
    )
    (run / "system.json").write_text(json.dumps({"hostname": "synthetic"}))
    hosts = hosts_of(n)
    faults = plant(n)
    lat = synthetic(n, "p2p.latency", seed=1, **faults)
    bw = synthetic(n, "p2p.bandwidth", seed=2, **faults)

    write_sweep(job / "allpairs.bin", hosts, lat.values, bw.values, bw_size=1 << 20)
    del lat, bw
    with open(run / "samples.jsonl", "w") as f:
        for metric, unit, better, size in (
            ("p2p.latency", "s", "lower", 8),
            ("p2p.bandwidth", "B/s", "higher", 1 << 20),
        ):
            for rank, h in enumerate(hosts):
                params = {"matrix": f"jobs/{job.name}/allpairs.bin", "summary": "node",
                          "node": h, "rank": rank, "hosts": [h], "kind": "sweep", "size": size,
                          "mpi": "openmpi", "placement": "all-pairs"}  # fmt: skip
                record = {"run_id": run.name, "job_id": job.name, "probe": "allpairs",
                          "metric": metric, "value": BASE[metric], "unit": unit, "better": better,
                          "params": params}  # fmt: skip
                f.write(json.dumps(record) + "\n")
    (run / "jobs.jsonl").write_text(
        json.dumps(
            {
                "job_id": job.name,
                "status": "ok",
                "exit_code": 0,
                "wall_time": 1.0,
                "argv": [],
                "n_samples": 2 * n,
            }
        )
        + "\n"
    )
    leaves = [hosts[i : i + PER_SWITCH] for i in range(0, n, PER_SWITCH)]
    lines = [
        f"SwitchName=leaf{s + 1} Level=0 LinkSpeed=1 Nodes={','.join(h)}"
        for s, h in enumerate(leaves)
    ]
    lines.append(
        f"SwitchName=spine Level=1 LinkSpeed=1 Nodes={','.join(hosts)} "
        f"Switches={','.join(f'leaf{s + 1}' for s in range(len(leaves)))}"
    )
    (run / "slurm" / "topology.txt").write_text("\n".join(lines) + "\n")
    return run


def timed_rss(args: list[str], env: dict[str, str], out: Path) -> tuple[float, float, float]:
    """Wall seconds, peak resident MiB and CPU seconds (user + system) of one command."""
    t = time.perf_counter()
    with open(out, "w") as f:
        proc = subprocess.Popen(args, env=env, stdout=f, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(proc.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(args)} failed: {proc.stderr.read().decode()}")  # type: ignore[union-attr]
    return time.perf_counter() - t, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=10_000)
    ap.add_argument("--keep", action="store_true", help="keep the scratch ASSAY_HOME")
    ap.add_argument("--write-into", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.write_into:  # the child that writes the run (see below)
        write_run(args.write_into, args.nodes)
        return
    home = scratch_home()
    env = {**os.environ, "ASSAY_HOME": str(home)}
    t = time.perf_counter()
    # Written by a child process: this one stays small, so the reports it starts do not
    # inherit its size in their peak resident memory (Linux counts a child's ru_maxrss from
    # the fork, before the exec).
    here = [sys.executable, __file__, "--nodes", str(args.nodes), "--write-into", str(home)]
    subprocess.run(here, check=True)
    run = next((home / "runs").iterdir())
    size = (run / "jobs" / "001-allpairs-openmpi" / "allpairs.bin").stat().st_size
    print(
        f"{args.nodes} nodes: run written in {time.perf_counter() - t:.1f} s "
        f"(allpairs.bin {size / 2**20:,.0f} MiB)"
    )
    cli = [sys.executable, "-m", "assay", "report"]
    cache = run / "allpairs.cache.json"
    print(f"load average before: {os.getloadavg()[0]:.1f} (2-vCPU VM shared with other work)")
    end = [sys.executable, "-c", "import sys; from pathlib import Path; from assay.figures."
           "folded import cache_figures; cache_figures(Path(sys.argv[1]))", str(run)]  # fmt: skip
    secs, mib, cpu = timed_rss(end, env, home / "stdout")
    if not cache.exists():
        raise SystemExit("the run's end left no allpairs.cache.json")
    print(
        f"the run's end (cache_figures): {secs:6.1f} s wall, {cpu:5.1f} s CPU, peak {mib:,.0f} MiB"
    )
    for fmt, when in (("md", "cached"), ("html", "cached"), ("md", "first"), ("html", "first")):
        if when == "first" and cache.exists():
            cache.unlink()
        out = home / f"report.{fmt}"
        secs, mib, cpu = timed_rss([*cli, "-f", fmt, "-o", str(out)], env, home / "stdout")
        print(
            f"report -f {fmt:4} {when:6}: {secs:6.1f} s wall, {cpu:5.1f} s CPU, "
            f"peak {mib:,.0f} MiB, {out.stat().st_size:,} B"
        )
    print(f"allpairs.cache.json: {cache.stat().st_size / 2**20:.1f} MiB")
    text = (home / "report.md").read_text()
    for line in text.splitlines():
        if re.match(r"(OUTLIER|SLOW|Not reproduced|\d+ node\(s\) slow)", line):
            print("  " + line.rstrip())
    print(f"home: {home}" if args.keep else "")
    if not args.keep:
        shutil.rmtree(home)


if __name__ == "__main__":
    main()
