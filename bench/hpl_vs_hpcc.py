"""assay's HPL (``native/hpl_lu.c``) against the HPL inside Debian's hpcc.

Both solve the same problem (same N, on the node's cores, OpenMPI, the MPI Debian's hpcc is
linked with, and OpenBLAS) and both count HPL's 2/3 N³ + 3/2 N² operations over the timed
factor + solve, so the ratio of the rates is the inverse ratio of the times. hpcc runs HPL's
way: NB, a P×Q grid, one single-threaded rank per core. assay runs as it does by default on
one node (``--assay-layout threads``: one process, every core a BLAS thread, LAPACK's LU), or
with hpcc's ranks and grid (``--assay-layout ranks``: ScaLAPACK's pdgetrf, the multi-node
method). The runs alternate (assay, hpcc, assay, hpcc, ...) in one assay run, so that drift in
the machine's load hits both alike; the medians are compared.

Goal (issue 13): assay / hpcc ≥ 0.98. Where they differ: HPL factors with its own panel
algorithms (hpccinf.txt: right-looking Crout recursion, NBMIN 4, lookahead 1, "mix" swapping)
where ScaLAPACK's pdgetrf uses its own and LAPACK's getrf is OpenBLAS's recursive, threaded
one; the generators of A differ (same distribution).

    python bench/hpl_vs_hpcc.py [--n 8000] [--nb 192] [--pairs 3] [--assay-layout ranks]
"""

from __future__ import annotations

import argparse
import os
import statistics

from _common import assay, latest_samples, scratch_home, write_suite

from assay.probes.hplsize import process_grid

CORES = os.cpu_count() or 1


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=8000)
    ap.add_argument("--nb", type=int, default=192)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--ranks", type=int, default=CORES)
    ap.add_argument("--assay-layout", choices=("threads", "ranks"), default="threads")
    args = ap.parse_args()
    p, q = process_grid(args.ranks)
    common = f"n = {args.n}, nb = {args.nb}, p = {p}, q = {q}, ranks = {args.ranks}"
    ours_params = common if args.assay_layout == "ranks" else f"n = {args.n}, nb = {args.nb}"
    # A given N runs as given (no pilot) and may take longer than any budget: allow an hour.
    budget = "time_budget = 3600"
    pair = (
        f'[[bench]]\nprobe = "hpl"\nmpi = "openmpi"\ntimeout = 3600\n'
        f"params = {{ {ours_params}, {budget} }}\n"
        f'[[bench]]\nprobe = "hpcc"\ntimeout = 3600\nparams = {{ {common}, {budget} }}\n'
    )
    home = scratch_home()
    suite = write_suite(home, 'name = "bench-hpl"\n' + pair * args.pairs)
    assay("run", str(suite), home=home)
    rates: dict[str, list[float]] = {"hpl": [], "hpcc": []}
    times: dict[str, list[float]] = {"hpl": [], "hpcc": []}
    for s in latest_samples(home):
        if s["metric"] == "compute.hpl" and s["probe"] in rates:
            assert (s["params"]["N"], s["params"]["NB"]) == (args.n, args.nb), s["params"]
            rates[s["probe"]].append(s["value"])
            times[s["probe"]].append(float(s["params"]["time_s"]))
    ours, theirs = statistics.median(rates["hpl"]), statistics.median(rates["hpcc"])
    print(f"N={args.n} NB={args.nb} P×Q={p}×{q}, {args.pairs} alternating pairs, OpenMPI")
    ours_label = "assay LU (ScaLAPACK)" if args.assay_layout == "ranks" else "assay LU (LAPACK)"
    for name, label in (("hpl", ours_label), ("hpcc", "HPL in hpcc")):
        each = ", ".join(f"{r / 1e9:.2f}" for r in rates[name])
        print(
            f"{label:22s}: median {statistics.median(rates[name]) / 1e9:7.2f} GFLOP/s "
            f"[{each}], times {', '.join(f'{t:.1f}' for t in times[name])} s"
        )
    print(f"ratio assay / hpcc    : {ours / theirs:7.3f}   (goal ≥ 0.98)")


if __name__ == "__main__":
    main()
