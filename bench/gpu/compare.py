"""assay's GPU figures beside the references measured on the same card, as ratios.

Reads what ``bench/gpu/card.sh`` and ``bench/gpu/rounds.sh`` left (kept in
``bench/gpu/results/<date>-<card>/``) and assay's own run on that card
(``tests/fixtures/gpu/<card dir>/run-gpu``), and prints the Markdown tables of
docs/benchmarks.md ("GPU on a real card"). Nothing is measured here: the card is gone.

    PYTHONPATH=src python bench/gpu/compare.py [results dir] [fixture dir]

Ratios are assay / reference (above 1: assay reads higher). GEMM: assay's ``gpu.flops`` (the
GEMMs' own time, CUDA events) and its wall-clock rate (the same GEMMs over each interval's
wall time, the check kernels in it, as gpu_burn counts), both from its ``gpu.trace``;
gpu_burn's figure is assay's gpu-burn importer's (the median of its intervals, the first left
out). n = runs; each cell is the median over them.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from assay.parsers.gpu_burn import parse as parse_gpu_burn
from assay.parsers.nccl import parse as parse_nccl

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench/gpu/results/2026-11-27-h100"
FIXTURE = ROOT / "tests/fixtures/gpu/h100-2026-11-27"
NCCL_TESTS = ROOT / "tests/fixtures/real/nccl/assay_lease_h100_1gpu_all_reduce.txt"
BURN = ("fp64", "fp32", "tf32")
TERA, GIGA = 1e12, 1e9


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def burn_rates(rows: list[dict]) -> dict[str, tuple[float, float]]:
    """Per precision: (gpu.flops, the median wall-clock rate of the measured intervals)."""
    out = {}
    for f in (r for r in rows if r["metric"] == "gpu.flops"):
        prec = f["params"]["precision"]
        trace = [r for r in rows if r["metric"] == "gpu.trace" and r["params"]["precision"] == prec]
        per_interval = f["params"]["gemms"] / len(trace)  # every interval does as many GEMMs
        flop = 2.0 * f["params"]["n"] ** 3
        wall = [
            per_interval * flop / r["params"]["interval_s"]
            for r in trace
            if r["params"]["phase"] == "measured"
        ]
        out[prec] = (f["value"], statistics.median(wall))
    return out


def gpu_burn_rate(path: Path) -> float:
    (sample,) = parse_gpu_burn(path.read_text()).samples
    return sample.value


def assay_burns(results: Path, fixture: Path) -> list[dict[str, tuple[float, float]]]:
    first = next((fixture / "run-gpu/jobs").glob("001-gpu_burn*/stdout"))
    return [burn_rates(jsonl(p)) for p in (first, *sorted(results.glob("assay-burn-10s-r*.jsonl")))]


def gemm_vs_gpu_burn(results: Path, fixture: Path) -> list[str]:
    ours = assay_burns(results, fixture)
    lines = [
        "| precision | assay gpu.flops | assay wall-clock | gpu_burn | ratio | ratio, wall-clock |",
        "|---|---|---|---|---|---|",
    ]
    for prec in BURN:
        flops = statistics.median(r[prec][0] for r in ours)
        wall = statistics.median(r[prec][1] for r in ours)
        theirs = [gpu_burn_rate(p) for p in sorted(results.glob(f"gpuburn-{prec}-*.txt"))]
        ref = statistics.median(theirs)
        lines.append(
            f"| {prec} | {flops / TERA:.1f} | {wall / TERA:.1f} | {ref / TERA:.1f} (n = "
            f"{len(theirs)}) | {flops / ref:.3f} | {wall / ref:.3f} |"
        )
    return lines


def gemm_vs_torch(results: Path, fixture: Path) -> list[str]:
    rows = jsonl(next((fixture / "run-gpu/jobs").glob("001-gpu_burn*/stdout")))
    torch = {r["precision"]: r for r in jsonl(results / "torch-ref.jsonl") if "precision" in r}
    lines = [
        "| precision | assay 30 s (SM MHz) | assay first interval | PyTorch, 20 products | ratio |",
        "|---|---|---|---|---|",
    ]
    for f in (r for r in rows if r["metric"] == "gpu.flops"):
        prec = f["params"]["precision"]
        clock = next(
            r["value"] for r in rows
            if r["metric"] == "gpu.sm_clock" and r["params"]["precision"] == prec
        )  # fmt: skip
        first = next(
            r["value"] for r in rows
            if r["metric"] == "gpu.trace" and r["params"]["precision"] == prec
        )  # fmt: skip
        ref = torch[prec]
        lines.append(
            f"| {prec} | {f['value'] / TERA:.1f} ({clock / 1e6:.0f}) | {first / TERA:.1f} | "
            f"{ref['median'] / TERA:.1f} ({ref['min'] / TERA:.1f}–{ref['max'] / TERA:.1f}) | "
            f"{f['value'] / ref['median']:.3f} |"
        )
    return lines


def babelstream(results: Path) -> dict[str, float]:
    """BabelStream's table: function -> bytes/s (its MB/s = 1e6 B/s, from the fastest run)."""
    out = {}
    for line in (results / "babelstream.txt").read_text().splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] in ("Copy", "Mul", "Add", "Triad"):
            out[parts[0]] = float(parts[1]) * 1e6
    return out


def memory(results: Path, fixture: Path) -> list[str]:
    rows = jsonl(next((fixture / "run-gpu/jobs").glob("002-gpu_mem*/stdout")))
    babel = babelstream(results)
    torch = {r["what"]: r for r in jsonl(results / "torch-ref.jsonl")}
    names = {"copy": ("Copy", "d2d_copy"), "scale": ("Mul", None), "add": ("Add", None),
             "triad": ("Triad", "d2d_triad")}  # fmt: skip
    lines = [
        "| kernel | assay (best of 19) | BabelStream (best) | ratio | PyTorch (best) | ratio |",
        "|---|---|---|---|---|---|",
    ]
    for r in (r for r in rows if r["metric"] == "gpu.bandwidth"):
        babel_name, torch_name = names[r["params"]["kernel"]]
        ref = babel[babel_name]
        cells = [f"{r['value'] / GIGA:.1f}", f"{ref / GIGA:.1f}", f"{r['value'] / ref:.3f}"]
        if torch_name:
            best = torch[torch_name]["best"]
            cells += [f"{best / GIGA:.1f}", f"{r['value'] / best:.3f}"]
        else:
            cells += ["–", "–"]
        lines.append(f"| {r['params']['kernel']} | " + " | ".join(cells) + " |")
    return lines


def transfers(results: Path, fixture: Path) -> list[str]:
    rows = jsonl(next((fixture / "run-gpu/jobs").glob("002-gpu_mem*/stdout")))
    torch = {
        (r["direction"], r["memory"], r["size_bytes"]): r
        for r in jsonl(results / "torch-ref.jsonl")
        if "direction" in r
    }
    lines = [
        "| copy | assay median (min–max) | PyTorch median (min–max) | ratio |",
        "|---|---|---|---|",
    ]
    for r in (r for r in rows if r["metric"] in ("gpu.h2d", "gpu.d2h")):
        p, st = r["params"], r["stats"]
        ref = torch[(r["metric"][4:], p["memory"], p["size"])]
        lines.append(
            f"| {r['metric'][4:]} {p['memory']} {p['size'] >> 20} MiB | {r['value'] / GIGA:.1f} "
            f"({st['min'] / GIGA:.1f}–{st['max'] / GIGA:.1f}) | {ref['median'] / GIGA:.1f} "
            f"({ref['min'] / GIGA:.1f}–{ref['max'] / GIGA:.1f}) | "
            f"{r['value'] / ref['median']:.3f} |"
        )
    return lines


def nccl(fixture: Path) -> list[str]:
    def times(rows: list[dict]) -> dict[int, float]:
        return {
            r["params"]["size"]: r["value"]
            for r in rows
            if r["metric"] == "gpu.nccl.all_reduce.time"
            and r["params"]["buffers"] == "out-of-place"
        }

    ours = times(jsonl(fixture / "ncclbench-1gpu.jsonl"))
    imported = parse_nccl(NCCL_TESTS.read_text()).samples
    theirs = times([{"metric": s.metric, "value": s.value, "params": s.params} for s in imported])
    small = [theirs[s] / ours[s] for s in ours if s <= 16 << 20]
    big = [theirs[s] / ours[s] for s in ours if s >= 32 << 20]
    return [
        "| sizes | assay time / nccl-tests time: median (min–max), n |",
        "|---|---|",
        f"| 8 B – 16 MiB | {statistics.median(1 / x for x in small):.3f} "
        f"({min(1 / x for x in small):.3f}–{max(1 / x for x in small):.3f}), {len(small)} |",
        f"| 32 MiB – 1 GiB | {statistics.median(1 / x for x in big):.3f} "
        f"({min(1 / x for x in big):.3f}–{max(1 / x for x in big):.3f}), {len(big)} |",
    ]


def main(argv: list[str]) -> int:
    results = Path(argv[1]) if len(argv) > 1 else RESULTS
    fixture = Path(argv[2]) if len(argv) > 2 else FIXTURE
    sections = {
        "GEMM: assay beside gpu_burn (3 runs each)": gemm_vs_gpu_burn(results, fixture),
        "GEMM: assay's 30 s beside PyTorch's burst": gemm_vs_torch(results, fixture),
        "Device memory": memory(results, fixture),
        "Host↔device": transfers(results, fixture),
        "NCCL all_reduce, one GPU, out of place": nccl(fixture),
    }
    for title, lines in sections.items():
        print(f"#### {title}\n")
        print("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
