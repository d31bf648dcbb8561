"""The all-pairs probe at scale: the tournament on this machine, and the matrix file at N nodes.

``local``: native/allpairs.c with Open MPI, N ranks on this one machine (``--oversubscribe``,
``--mca mpi_yield_when_idle 1`` and the probe's ``--yield``: more ranks than cores), default
options unless given; per run the launch-to-exit wall time, the rounds' wall times (from the
file, barrier to barrier), the pilot and start (the rest) and the file's size.

``file``: a synthetic sweep of N nodes written by the Python writer (the probe's format), then
read back and reduced to per-node figures: seconds for each step, the file's size and the peak
resident memory of this process.

    python bench/allpairs_scale.py local --ranks 4 8 16 --repeat 3
    python bench/allpairs_scale.py file --nodes 10000
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from assay.condensed import n_links
from assay.parsers.allpairs_file import node_stats, read_matrix_file, write_sweep

NATIVE = Path(__file__).resolve().parent.parent / "src" / "assay" / "native"


def build(cc: str, out: Path) -> Path:
    cmd = [cc, "-O2", str(NATIVE / "allpairs.c"), "-o", str(out), "-lm", "-lpthread"]
    subprocess.run(cmd, check=True)
    return out


def local(args: argparse.Namespace) -> None:
    scratch = Path(tempfile.mkdtemp(prefix="allpairs-bench-"))
    exe = build("mpicc.openmpi", scratch / "allpairs")
    root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
    print(
        f"{'ranks':>5} {'rounds':>6} {'wall s':>7} {'rounds s':>8} {'round median':>12} "
        f"{'min':>6} {'max':>6} {'pilot+start s':>13} {'file B':>8}  lat/bw iterations"
    )
    for ranks in args.ranks:
        for _ in range(args.repeat):
            cwd = scratch / f"r{ranks}"
            cwd.mkdir(exist_ok=True)
            argv = ["mpirun.openmpi", *root, "--oversubscribe", "-np", str(ranks), "--mca",
                    "mpi_yield_when_idle", "1", str(exe), "--yield", *args.probe_args]  # fmt: skip
            t0 = time.perf_counter()
            proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=False)
            wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise SystemExit(f"exit {proc.returncode}:\n{proc.stderr}")
            m = read_matrix_file(cwd / "allpairs.bin")
            walls = [r.wall_s for r in m.rounds]
            iters = {(r.lat_iterations, r.bw_iterations) for r in m.rounds}
            print(
                f"{ranks:>5} {len(walls):>6} {wall:>7.2f} {sum(walls):>8.2f} "
                f"{statistics.median(walls):>12.3f} {min(walls):>6.3f} {max(walls):>6.3f} "
                f"{wall - sum(walls):>13.2f} {m.path.stat().st_size:>8}  {sorted(iters)}"
            )


def file(args: argparse.Namespace) -> None:
    n = args.nodes
    rng = np.random.default_rng(0)
    lat = rng.uniform(1e-6, 5e-6, n_links(n)).astype(np.float32)
    bw = rng.uniform(1e9, 1.2e10, n_links(n)).astype(np.float32)
    path = Path(args.dir or tempfile.mkdtemp(prefix="allpairs-file-")) / "allpairs.bin"
    t0 = time.perf_counter()
    write_sweep(path, [f"node{i:05d}" for i in range(n)], lat, bw)
    t_write = time.perf_counter() - t0
    del lat, bw
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    times, cpu = [], []  # wall, and this process's CPU time (what a quiet machine would take)
    for _ in range(args.repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        m = read_matrix_file(path)
        t_read, c_read = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        node_stats(m.latency, n)
        times.append((t_read, time.perf_counter() - t0))
        cpu.append((c_read, time.process_time() - c0))
        assert m.complete and len(m.rounds) == n - 1 + n % 2
        del m
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    size = path.stat().st_size
    path.unlink()
    reads = [t for t, _ in times]
    nodes = [t for _, t in times]
    print(f"{n} nodes, {n_links(n)} links: file {size / 1e6:.1f} MB written in {t_write:.1f} s")
    print(
        f"read: median {statistics.median(reads):.2f} s (min {min(reads):.2f}, max "
        f"{max(reads):.2f}, n={len(reads)}); per-node stats of one metric: median "
        f"{statistics.median(nodes):.2f} s (min {min(nodes):.2f}, max {max(nodes):.2f})"
    )
    print(
        f"CPU seconds: read median {statistics.median(c for c, _ in cpu):.2f}, per-node stats "
        f"median {statistics.median(c for _, c in cpu):.2f}"
    )
    print(f"peak resident memory: {rss:.0f} MiB (before reading: {rss0:.0f} MiB, the writer's)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    lo = sub.add_parser("local", help="the probe over N ranks on this machine")
    lo.add_argument("--ranks", type=int, nargs="+", default=[4, 8, 16])
    lo.add_argument("--repeat", type=int, default=3)
    lo.add_argument("probe_args", nargs="*", help="after --: options for the probe")
    fi = sub.add_parser("file", help="a synthetic matrix file of N nodes, read back")
    fi.add_argument("--nodes", type=int, default=10000)
    fi.add_argument("--repeat", type=int, default=3)
    fi.add_argument("--dir", help="where to write it (default: a temporary directory)")
    args = ap.parse_args()
    local(args) if args.what == "local" else file(args)


if __name__ == "__main__":
    main()
