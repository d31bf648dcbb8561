"""The all-pairs probe's pair figures against p2p.c's (the OSU method, blocking calls), on one
pair of ranks, alternated in one run: medians, spread and the ratio allpairs / p2p.

Both are built from this tree with the MPI's wrapper and launched with 2 ranks, the same
message sizes and iteration counts (latency: 8 bytes, bandwidth: 128 KiB x 64, unless given):
what differs is allpairs' polling (MPI_Test against a deadline) and its lack of a barrier
inside the pair. Each round runs p2p latency, p2p bandwidth, then allpairs (both figures).

    python bench/allpairs_vs_p2p.py --mpi openmpi --rounds 7
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
from pathlib import Path

NATIVE = Path(__file__).resolve().parent.parent / "src" / "assay" / "native"
WRAPPERS = {
    "openmpi": ("mpicc.openmpi", "mpirun.openmpi"),
    "mpich": ("mpicc.mpich", "mpiexec.mpich"),
}


def build(cc: str, source: str, out: Path) -> Path:
    subprocess.run(
        [cc, "-O2", str(NATIVE / source), "-o", str(out), "-lm", "-lpthread"], check=True
    )
    return out


def value(argv: list[str], cwd: Path, metric: str) -> float:
    out = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, check=True).stdout
    return next(o["value"] for o in map(json.loads, out.splitlines()) if o["metric"] == metric)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mpi", choices=sorted(WRAPPERS), default="openmpi")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--lat-iterations", type=int, default=10000)
    ap.add_argument("--bw-iterations", type=int, default=100)
    ap.add_argument("--lat-size", type=int, default=8)
    ap.add_argument("--bw-size", type=int, default=131072)
    args = ap.parse_args()
    cc, launcher = WRAPPERS[args.mpi]
    scratch = Path(tempfile.mkdtemp(prefix="allpairs-vs-p2p-"))
    p2p = build(cc, "p2p.c", scratch / "p2p")
    allpairs = build(cc, "allpairs.c", scratch / "allpairs")
    if args.mpi == "openmpi":
        root = ["--allow-run-as-root"] if os.geteuid() == 0 else []
        launch = [launcher, *root, "-np", "2", "--bind-to", "core"]
    else:
        launch = [launcher, "-n", "2", "-bind-to", "core"]
    lat_args = ["--min-size", str(args.lat_size), "--max-size", str(args.lat_size)]
    rows: dict[str, list[float]] = {k: [] for k in ("p2p lat", "ap lat", "p2p bw", "ap bw")}
    for _ in range(args.rounds):
        lat_argv = [*launch, str(p2p), "--mode", "latency", *lat_args,
                    "--iterations", str(args.lat_iterations), "--warmup", "100"]  # fmt: skip
        rows["p2p lat"].append(value(lat_argv, scratch, "p2p.latency"))
        bw_args = ["--min-size", str(args.bw_size), "--max-size", str(args.bw_size)]
        bw_argv = [*launch, str(p2p), "--mode", "bandwidth", *bw_args,
                   "--iterations-large", str(args.bw_iterations), "--warmup-large", "2",
                   "--iterations", str(args.bw_iterations), "--warmup", "2"]  # fmt: skip
        rows["p2p bw"].append(value(bw_argv, scratch, "p2p.bandwidth"))
        ap_argv = [*launch, str(allpairs), "--lat-size", str(args.lat_size), "--bw-size",
                   str(args.bw_size), "--lat-iterations", str(args.lat_iterations),
                   "--bw-iterations", str(args.bw_iterations)]  # fmt: skip
        out = subprocess.run(ap_argv, cwd=scratch, capture_output=True, text=True, check=True)
        figures = {o["metric"]: o["value"] for o in map(json.loads, out.stdout.splitlines())}
        rows["ap lat"].append(figures["p2p.latency"])
        rows["ap bw"].append(figures["p2p.bandwidth"])
    print(
        f"{args.mpi}, 2 ranks, {args.rounds} rounds alternated; latency {args.lat_size} B x "
        f"{args.lat_iterations}, bandwidth {args.bw_size} B x 64 x {args.bw_iterations}"
    )
    for what, unit, scale in (("lat", "us", 1e6), ("bw", "MB/s", 1e-6)):
        a, p = rows[f"ap {what}"], rows[f"p2p {what}"]
        for name, v in (("p2p.c", p), ("allpairs", a)):
            print(
                f"  {what} {name:>8}: median {statistics.median(v) * scale:9.3f} {unit} "
                f"(min {min(v) * scale:.3f}, max {max(v) * scale:.3f}, n={len(v)})"
            )
        print(f"  {what} allpairs / p2p.c: {statistics.median(a) / statistics.median(p):.3f}")


if __name__ == "__main__":
    main()
