"""assay's STREAM against HPCC's STREAM, side by side in one run; prints the Triad ratio.

Goal (issue 3): assay ≥ hpcc. HPCC's StarSTREAM runs one STREAM per MPI process at once
(here one per core), so its node figure is the per-process rate × processes; assay's runs one
OpenMP STREAM over all cores. Both use arrays far beyond the caches: assay by STREAM's 4×LLC
rule, hpcc from the memory its HPL N implies (N is chosen so the arrays are of similar size).
"""

from __future__ import annotations

import os

from _common import assay, latest_samples, scratch_home, write_suite

CORES = os.cpu_count() or 1


def main() -> None:
    home = scratch_home()
    # HPCC sizes STREAM's vectors from HPL's matrix memory (8·N² bytes shared by the processes):
    # N = 20000 gives each of 2 processes vectors of ~ 0.6 GiB, like assay's 1.9 GiB per array
    # spread over 2 threads on this machine.
    suite = write_suite(
        home,
        'name = "bench-stream"\n'
        '[[bench]]\nprobe = "stream"\n'
        '[[bench]]\nprobe = "hpcc"\n'
        f"params = {{ n = 20000, nb = 192, ranks = {CORES}, time_budget = 3600 }}\n",
    )
    assay("run", str(suite), home=home)
    samples = latest_samples(home)
    ours = next(s for s in samples if s["probe"] == "stream" and s["metric"] == "memory.triad")
    star = next(
        s
        for s in samples
        if s["probe"] == "hpcc"
        and s["metric"] == "memory.triad"
        and s["params"].get("variant") == "star"
    )
    procs = int(star["params"].get("procs", CORES))
    hpcc_node = star["value"] * procs
    threads = ours["params"]["threads"]
    print(f"assay STREAM Triad : {ours['value'] / 1e9:8.2f} GB/s ({threads} threads)")
    print(f"hpcc StarSTREAM    : {hpcc_node / 1e9:8.2f} GB/s ({procs} × {star['value'] / 1e9:.2f})")
    print(f"ratio assay / hpcc : {ours['value'] / hpcc_node:8.3f}   (goal ≥ 1)")


if __name__ == "__main__":
    main()
