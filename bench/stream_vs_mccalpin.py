"""assay's STREAM against John McCalpin's stream.c, alternated in one run: medians and spread.

The reference is not shipped with assay: give its source (``--reference path/to/stream.c``,
from https://www.cs.virginia.edu/stream/FTP/Code/stream.c or github.com/jeffhammond/STREAM)
or a binary already built with the same STREAM_ARRAY_SIZE (``--reference-binary``).

Both run the same arrays (STREAM_ARRAY_SIZE = assay's --elements), the same NTIMES, on all
cores with the same OpenMP binding (the environment assay's plan gives its node job), one after
the other, ``--rounds`` times, so a slow minute of the machine hits both alike. Each side's
figure per round is STREAM's own: bytes / best time, first iteration dropped. Printed: per
kernel the median and range (min-max) over the rounds, and the ratio of medians, assay /
McCalpin. ``--json FILE`` keeps every round.

    python bench/stream_vs_mccalpin.py --reference build/ref/stream.c --rounds 5
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
# McCalpin's own suggestion for an OpenMP build ("gcc -O -fopenmp"); -O2 is what most
# published runs use. --reference-flags changes it.
REFERENCE_FLAGS = "-O2 -fopenmp"


def compile_reference(source: Path, flags: str, elements: int, ntimes: int, out: Path) -> Path:
    argv = ["gcc", *shlex.split(flags), f"-DSTREAM_ARRAY_SIZE={elements}", f"-DNTIMES={ntimes}"]
    if 3 * elements * 8 >= 2**31:
        argv.append("-mcmodel=medium")  # static arrays past 2 GiB (stream.c's own advice)
    argv += [str(source), "-o", str(out)]
    subprocess.run(argv, check=True)
    return out


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
    ap.add_argument("--reference", type=Path, help="McCalpin's stream.c")
    ap.add_argument("--reference-binary", type=Path, help="a stream binary built already")
    ap.add_argument("--reference-flags", default=REFERENCE_FLAGS)
    ap.add_argument("--assay-flags", help="override assay's STREAM compile flags (diagnosis)")
    ap.add_argument("--elements", type=int, help="per array; default: assay's own rule")
    ap.add_argument("--ntimes", type=int, default=10)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json", type=Path, help="write every round here")
    args = ap.parse_args()
    if not (args.reference or args.reference_binary):
        ap.error("give --reference stream.c (or --reference-binary)")

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
    ref = args.reference_binary or compile_reference(
        args.reference, args.reference_flags, elements, args.ntimes, work / "stream-mccalpin"
    )

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
    print(f"assay: {' '.join(build.flags)}; McCalpin: {args.reference_flags}")
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
