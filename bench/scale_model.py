"""The scale model of an all-pairs sweep as one MPI job per MPI (issue 20's design), so that
recalibrating it from measured points is one call.

One sweep of N nodes with one MPI is one launch; inside it the circle-method tournament runs
R rounds (N − 1 for N even, N for N odd) of up to N/2 disjoint pairs at once (``pairs_at_once``
k splits each round into ⌈(N/2)/k⌉ steps), each step one pair budget long (the probe sizes its
iterations to fit it: latency at one small size and bandwidth at one large size) and closed by
a barrier. Then ``retest_rounds`` rounds re-measure the flagged links.

    wall     = launch(N) + (R·⌈(N/2)/k⌉ + retest_rounds) · (pair_budget + barrier(N))  per MPI
    launch   = launch_s + launch_per_node_s · N
    barrier  = barrier_s + barrier_per_doubling_s · log2 N
    bytes    = 32 + Σ(2 + len(host)) (padded to 8) + R_blocks · 40 + N(N−1)/2 · 12 + 16
               (allpairs.bin: header, one 40-byte head per round block, 12 bytes a pair, end)
    report   = report_start_s + matrices · links · report_s_per_link    (CPU, the first report)
    memory   = report_base_mib + links · 4 B    (a worker: one float32 matrix; two at once)

The defaults are estimates, not measurements (marked so in docs/cluster.md), except the pair
budget, the probe's default (0.1 s: latency a quarter of it, bandwidth three quarters): 5 ms +
0.5 ms per doubling of N of barriers (two a round: after latency, after bandwidth) and skew per
round (12 ms at 10,000), a launch of 2 s + 5 ms a node; the report's constants are this
machine's (docs/benchmarks.md, bench/allpairs_report.py). :func:`calibrate` refits them to
measured sweeps.

    python bench/scale_model.py            # the table for 4, 16, 1,000 and 10,000 nodes
    python bench/scale_model.py --fit runs.jsonl [--mpi mpich]
                                           # the same from constants fitted to measured sweeps
                                           # (bench/allpairs_cluster.py --out runs.jsonl)
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Constants:
    pair_budget_s: float = 0.1  # the probe's default
    barrier_s: float = 0.005  # a round's cost beyond the pair budget: barrier, skew …
    barrier_per_doubling_s: float = 0.0005  # … growing with log2 N (dissemination barrier)
    launch_s: float = 2.0
    launch_per_node_s: float = 0.005
    pairs_at_once: int | None = None  # None: a whole round at once
    retest_rounds: int = 2
    host_name_bytes: int = 12
    report_start_s: float = 1.0
    report_s_per_link: float = 1.3e-7  # CPU: read + analyse, one metric (measured here)
    report_base_mib: float = 130.0  # a report worker beyond its matrix (measured: 326 MiB)


@dataclass(frozen=True)
class Sweep:
    nodes: int
    rounds: int
    steps: int  # barrier-separated steps (rounds × steps per round, plus retests)
    pairs: int
    launches: int
    wall_s: float
    file_bytes: int
    index_rows: int  # per-node samples: the index never holds a link
    report_s: float
    report_mib: float


def rounds_of(n: int) -> int:
    return 0 if n < 2 else (n - 1 if n % 2 == 0 else n)


def file_bytes(n: int, round_blocks: int, host_name_bytes: int = 12) -> int:
    """The size of ``allpairs.bin`` (docs/cluster.md's format) with every pair measured once
    and ``round_blocks`` round blocks (retest blocks add 12 bytes a retested pair besides)."""
    header = 32 + n * (2 + host_name_bytes)
    header += (-header) % 8
    return header + round_blocks * 40 + n * (n - 1) // 2 * 12 + 16


def model(n: int, mpis: int = 1, c: Constants = Constants()) -> Sweep:
    """One all-pairs sweep of ``n`` nodes with each of ``mpis`` MPIs (one launch each)."""
    r = rounds_of(n)
    per_round = n // 2
    k = c.pairs_at_once or per_round
    steps = r * math.ceil(per_round / k) + c.retest_rounds if n >= 2 else 0
    launch = c.launch_s + c.launch_per_node_s * n
    barrier = c.barrier_s + c.barrier_per_doubling_s * math.log2(max(n, 1))
    wall = mpis * (launch + steps * (c.pair_budget_s + barrier))
    links = n * (n - 1) // 2
    matrices = 2 * mpis  # latency and bandwidth
    return Sweep(
        nodes=n,
        rounds=r,
        steps=steps,
        pairs=links,
        launches=mpis,
        wall_s=wall,
        file_bytes=mpis * file_bytes(n, steps, c.host_name_bytes),
        index_rows=matrices * n,
        report_s=c.report_start_s + matrices * links * c.report_s_per_link,
        report_mib=c.report_base_mib + links * 4 / 2**20,
    )


@dataclass(frozen=True)
class Measured:
    """One measured sweep: its nodes, its launch (the job's wall time less its rounds') and
    the median time of a round, start to start (``allpairs.bin`` records where each round's
    pairs start and how long they took; between two rounds lies rank 0's gathering and
    writing), with the pair budget the sweep's pilot chose (the file's header; None: the
    constants')."""

    nodes: int
    launch_s: float
    round_s: float
    pair_budget_s: float | None = None


def measured_sweep(nodes: int, job_wall_s: float, matrix: str) -> Measured:
    """A sweep's point from its job's wall time and its ``allpairs.bin``."""
    import statistics

    from assay.parsers.allpairs_file import read_matrix_file

    m = read_matrix_file(matrix)
    starts = [r.t_start for r in m.rounds]
    periods = [b - a for a, b in itertools.pairwise(starts)] or [m.rounds[0].wall_s]
    inside = m.rounds[-1].t_start + m.rounds[-1].wall_s  # first barrier to the last round's end
    return Measured(nodes, job_wall_s - inside, statistics.median(periods), m.pair_budget_s)


def line_at_least_zero(x: list[float], y: list[float]) -> tuple[float, float]:
    """y ≈ a + b·x by least squares with a, b ≥ 0 (each is a cost): the free line if both come
    out so, else the better of the two lines with one term 0. A free line through this VM's
    points (launch 2.4 s at 16 nodes, 12.4 s at 64) gave a negative intercept, and the model
    a negative wall time at 4 nodes."""
    import numpy as np

    xs, ys = np.asarray(x, float), np.asarray(y, float)
    flat = (max(float(ys.mean()), 0.0), 0.0)
    if len(xs) == 1 or np.ptp(xs) == 0:
        return flat
    (a, b), *_ = np.linalg.lstsq(np.c_[np.ones_like(xs), xs], ys, rcond=None)
    if a >= 0 and b >= 0:
        return float(a), float(b)
    through_zero = (0.0, max(float(xs @ ys / (xs @ xs)), 0.0))
    return min(flat, through_zero, key=lambda ab: float(np.sum((ys - ab[0] - ab[1] * xs) ** 2)))


def calibrate(points: list[Measured], c: Constants = Constants()) -> Constants:
    """The constants refitted to measured sweeps (the pair budget stays the probe's setting):
    launch = launch_s + launch_per_node_s·N and the round's cost beyond the pair budget
    = barrier_s + barrier_per_doubling_s·log2 N, each by least squares with every constant
    ≥ 0 (one node count: the per-node and per-doubling terms are 0)."""
    l0, l1 = line_at_least_zero([p.nodes for p in points], [p.launch_s for p in points])
    b0, b1 = line_at_least_zero(
        [math.log2(p.nodes) for p in points],
        [p.round_s - (p.pair_budget_s or c.pair_budget_s) for p in points],
    )
    fitted = {"launch_s": l0, "launch_per_node_s": l1, "barrier_s": b0,
              "barrier_per_doubling_s": b1}  # fmt: skip
    return Constants(**{**asdict(c), **fitted})


def table(nodes: tuple[int, ...] = (4, 16, 1_000, 10_000), mpis: int = 1,
          c: Constants = Constants()) -> str:  # fmt: skip
    """The model as a Markdown table (docs/cluster.md)."""
    out = [
        "| N | rounds | steps | pairs | launches | wall | allpairs.bin | index rows | "
        "first report, CPU | memory a worker |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for n in nodes:
        s = model(n, mpis, c)
        wall = f"{s.wall_s:.0f} s" if s.wall_s < 120 else f"{s.wall_s / 60:.0f} min"
        size = f"{s.file_bytes / 1e6:.3g} MB" if s.file_bytes >= 1e6 else f"{s.file_bytes} B"
        out.append(
            f"| {n:,} | {s.rounds:,} | {s.steps:,} | {s.pairs:,} | {s.launches} | {wall} | "
            f"{size} | {s.index_rows:,} | {s.report_s:.3g} s | {s.report_mib:,.0f} MiB |"
        )
    return "\n".join(out)


def fitted_from(paths: list[str], mpi: str) -> tuple[list[Measured], Constants]:
    """The points of ``bench/allpairs_cluster.py --out`` files (one JSON object a run, each
    sweep with its nodes, job wall time and ``point``), one MPI's, and the constants fitted to
    them."""
    import json

    points = [
        Measured(**sweep["point"])
        for path in paths
        for line in open(path, encoding="utf-8")  # noqa: SIM115 (a bench script)
        if line.strip()
        for sweep in json.loads(line)["sweeps"]
        if mpi in sweep["job"]
    ]
    if not points:
        raise SystemExit(f"no {mpi} sweep in {', '.join(paths)}")
    return points, calibrate(points)


def main() -> None:
    import argparse

    ap = argparse.ArgumentParser(description="the all-pairs scale model (docs/cluster.md)")
    ap.add_argument("--fit", nargs="+", metavar="RUNS.jsonl",
                    help="refit to bench/allpairs_cluster.py --out files")  # fmt: skip
    ap.add_argument("--mpi", default="openmpi", help="whose sweeps to fit (default openmpi)")
    args = ap.parse_args()
    c = Constants()
    if args.fit:
        points, c = fitted_from(args.fit, args.mpi)
        print(f"{len(points)} {args.mpi} sweeps at {sorted({p.nodes for p in points})} nodes")
        print("fitted: " + ", ".join(
            f"{k} = {getattr(c, k):.4g}" for k in
            ("launch_s", "launch_per_node_s", "barrier_s", "barrier_per_doubling_s")))  # fmt: skip
        print(f"(pair budget {c.pair_budget_s} s: the probe's default, kept)\n")
    print(table(c=c))


if __name__ == "__main__":
    main()
