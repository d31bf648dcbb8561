"""assay's p2p latency against OSU's osu_latency, alternated in one run: medians and spread.

OSU Micro-Benchmarks are not shipped with assay and Debian has no package: give the path of
an ``osu_latency`` you built with the MPI you compare (``--mpi``). Both programs run with
the same launcher command line (assay's: same binding, same flags), one after the other,
``--rounds`` times; each round's figure is each tool's own average for the size (OSU's
``(t_end - t_start) / (2 * iterations)``; assay's headline is the same formula since issue 13).
Printed per size: the median and range over the rounds and the ratio of medians, assay / OSU.

    python bench/latency_vs_osu.py --osu-latency build/ref/osu/osu_latency_openmpi \\
        --mpi openmpi --rounds 5
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from assay.launch.local.mpi import mpi_argv
from assay.parsers import osu
from assay.plan import plan
from assay.probes import PlanContext
from assay.suite import load_suite
from assay.system import collect_plan_facts, collect_system
from assay.toolchain import build_probe, discover_mpis

SIZES = (0, 1, 8, 64, 1024, 8192)


def run(argv: list[str]) -> str:
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--osu-latency", type=Path, required=True, help="an osu_latency binary")
    ap.add_argument("--osu-args", default="", help='extra osu_latency options, e.g. "-m 0:8192"')
    ap.add_argument("--mpi", help="the MPI osu_latency was built with; default: the first found")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--max-size", type=int, default=max(SIZES))
    ap.add_argument("--json", type=Path, help="write every round here")
    args = ap.parse_args()

    mpis = discover_mpis()
    system = collect_system(mpis)
    suite = load_suite(
        'name = "bench-latency"\n[[bench]]\nprobe = "p2p"\n'
        f'params = {{ mode = "latency", max_size = {args.max_size} }}\n'
        + (f'mpi = "{args.mpi}"\n' if args.mpi else "")
    )
    job = plan(suite, PlanContext(system=system, mpis=mpis, facts=collect_plan_facts()))[0]
    mpi = next(m for m in mpis if m.name == job.mpi)
    exe = build_probe(job.build, mpis, cache_dir=Path(tempfile.mkdtemp(prefix="p2p-bench-")))
    ours = mpi_argv(replace(job, argv=[str(exe) if a == "{exe}" else a for a in job.argv]), mpi)
    theirs = mpi_argv(replace(job, argv=[str(args.osu_latency), *shlex.split(args.osu_args)]), mpi)

    rounds: list[dict[str, dict[int, float]]] = []
    for r in range(args.rounds):
        got: dict[str, dict[int, float]] = {}
        # alternate who goes first, so neither always runs on the quieter machine
        for side in ("assay", "osu") if r % 2 == 0 else ("osu", "assay"):
            if side == "assay":
                lines = [json.loads(line) for line in run(ours).splitlines()]
                got[side] = {o["params"]["size"]: o["value"] for o in lines}
            else:
                parsed = osu.parse(run(theirs), source=str(args.osu_latency))
                got[side] = {
                    s.params["size"]: s.value for s in parsed.samples if s.metric == "p2p.latency"
                }
        rounds.append(got)

    print(f"{system.cpu_model}, {mpi.label}, 2 ranks on {system.hostname}, {args.rounds} rounds")
    print(f"assay: {' '.join(ours)}")
    print(f"OSU:   {' '.join(theirs)}")
    print("| size B | assay us median (range) | osu_latency us median (range) | ratio |")
    print("|---|---|---|---|")
    for size in (s for s in SIZES if s <= args.max_size):
        a = [g["assay"][size] * 1e6 for g in rounds]
        o = [g["osu"][size] * 1e6 for g in rounds if size in g["osu"]]
        if not o:
            continue
        ratio = statistics.median(a) / statistics.median(o)
        print(
            f"| {size} | {statistics.median(a):.3f} ({min(a):.3f}-{max(a):.3f}) "
            f"| {statistics.median(o):.3f} ({min(o):.3f}-{max(o):.3f}) | {ratio:.3f} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"mpi": mpi.label, "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
