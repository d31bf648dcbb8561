"""assay's STREAM against John McCalpin's stream.c, alternated in one run: medians and spread.

The reference is neither shipped nor built by assay: give a McCalpin ``stream`` binary you
built (``--reference-binary``) with STREAM_ARRAY_SIZE equal to ``--elements`` and NTIMES equal
to ``--ntimes`` (the script checks the array size it prints).

Both run the same arrays (STREAM_ARRAY_SIZE = assay's --elements), the same NTIMES, on all
cores with the same OpenMP binding (the environment assay's plan gives its node job), one after
the other, ``--rounds`` times, so a slow minute of the machine hits both alike. Each side's
figure per round is STREAM's own: bytes / best time, first iteration dropped. Printed: per
kernel the median and range (min-max) over the rounds, and the ratio of medians, assay /
McCalpin. ``--json FILE`` keeps every round.

    python bench/stream_vs_mccalpin.py --reference-binary ~/stream_c.exe --elements 80000000
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import subprocess
import tempfile
from pathlib import Path

from assay.model import Build
from assay.parsers import stream as stream_parser
from assay.probes import PlanContext
from assay.probes.stream import STREAM_BUILD, StreamParams, StreamProbe
from assay.system import collect_plan_facts, collect_system
from assay.toolchain import build_probe

KERNELS = ("copy", "scale", "add", "triad")


def run_assay(exe: Path, argv: list[str], env: dict[str, str]) -> dict[str, float]:
    cmd = [str(exe) if a == "{exe}" else a for a in argv]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
    rates = {}
    for line in proc.stdout.splitlines():
        obj = json.loads(line)
        rates[obj["metric"].split(".")[1]] = float(obj["value"])
    return rates


def run_reference(exe: Path, env: dict[str, str]) -> dict[str, float]:
    proc = subprocess.run([str(exe)], capture_output=True, text=True, env=env, check=True)
    parsed = stream_parser.parse(proc.stdout, source=str(exe))
    return {s.metric.split(".")[1]: s.value for s in parsed.samples}


def summary(values: list[float]) -> dict[str, float]:
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--reference-binary", type=Path, required=True,
        help="McCalpin's stream, built with STREAM_ARRAY_SIZE = --elements, NTIMES = --ntimes",
    )  # fmt: skip
    ap.add_argument("--assay-flags", help="override assay's STREAM compile flags (diagnosis)")
    ap.add_argument("--elements", type=int, help="per array; default: assay's own rule")
    ap.add_argument("--ntimes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write every round here")
    args = ap.parse_args()

    system = collect_system()
    ctx = PlanContext(system=system, facts=collect_plan_facts())
    params = StreamParams(elements=args.elements, ntimes=args.ntimes)
    (draft,) = StreamProbe().drafts(params, ctx, mpis=[], ranks=None)
    elements = int(draft.argv[draft.argv.index("--elements") + 1])
    env = {**os.environ, **draft.env}
    build = STREAM_BUILD
    if args.assay_flags:
        build = Build(build.source, build.toolchain, tuple(shlex.split(args.assay_flags)),
                      build.libs)  # fmt: skip
    work = Path(tempfile.mkdtemp(prefix="stream-bench-"))
    ours = build_probe(build, [], cache_dir=work / "cache")
    ref = args.reference_binary

    rounds: list[dict[str, dict[str, float]]] = []
    for r in range(args.rounds):
        # alternate who goes first, so neither always runs on a warmer (or hotter) machine
        first, second = ("assay", "mccalpin") if r % 2 == 0 else ("mccalpin", "assay")
        got: dict[str, dict[str, float]] = {}
        for side in (first, second):
            got[side] = (
                run_assay(ours, draft.argv, env) if side == "assay" else run_reference(ref, env)
            )
        rounds.append(got)

    threads = draft.env["OMP_NUM_THREADS"]
    print(f"{system.cpu_model}, {threads} threads, {elements} elements/array, "
          f"ntimes {args.ntimes}, {args.rounds} rounds alternated")  # fmt: skip
    print(f"assay: {' '.join(build.flags)}; McCalpin: {ref}")
    print("| kernel | assay GB/s median (range) | McCalpin GB/s median (range) | ratio |")
    print("|---|---|---|---|")
    result = {"system": system.cpu_model, "threads": threads, "elements": elements, "kernels": {}}
    for k in KERNELS:
        a = summary([g["assay"][k] for g in rounds])
        m = summary([g["mccalpin"][k] for g in rounds])
        ratio = a["median"] / m["median"]
        result["kernels"][k] = {"assay": a, "mccalpin": m, "ratio": ratio}
        print(
            f"| {k} | {a['median'] / 1e9:.2f} ({a['min'] / 1e9:.2f}-{a['max'] / 1e9:.2f}) "
            f"| {m['median'] / 1e9:.2f} ({m['min'] / 1e9:.2f}-{m['max'] / 1e9:.2f}) "
            f"| {ratio:.3f} |"
        )
    if args.json:
        args.json.write_text(json.dumps({**result, "rounds": rounds}, indent=1))


if __name__ == "__main__":
    main()
