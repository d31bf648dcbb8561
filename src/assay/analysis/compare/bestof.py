"""The best figure per metric across runs (the Charmed HPC results table) and the one-line
workload summary the Azure HB/HC pages open with, filled from measured figures.

"Best" is the highest rate or the lowest time among the folded figures (each the median of its
repetitions), as the Charmed HPC page reports "the best performance achieved by the
corresponding metric across all tests"; the note says which test (size, MPI, threads,
workload) gave it and the run it came from. Storage figures are split by direction and tool,
because a best read and a best write answer different questions.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from assay.analysis.compare.refcompare import param
from assay.analysis.compare.verdict import Measured
from assay.analysis.derived.derive import precision_of
from assay.units import format_value, human_bytes, metric_info

# The metrics a best-of table shows, in the order a reader expects (memory, compute, network,
# storage). Derived figures (Rpeak) and ladders whose best is not a headline (memory latency,
# whose best is the L1 cache) are left out.
HEADLINE = (
    "memory.triad", "compute.dgemm", "compute.sgemm", "compute.hpl", "gpu.flops", "gpu.sgemm",
    "gpu.dgemm",
    "p2p.latency", "p2p.bandwidth", "p2p.bibw", "rdma.latency", "rdma.bandwidth",
    "storage.bandwidth", "storage.iops", "storage.latency",
)  # fmt: skip


@dataclass(frozen=True)
class Source:
    """A run's figures with where they came from."""

    run_id: str
    host: str
    figures: list[Measured]


@dataclass(frozen=True)
class Best:
    metric: str
    title: str
    system: str
    value: float  # canonical
    unit: str  # display
    note: str
    run_id: str


# A GPU's rows as the Charmed HPC page names them ("Tesla T4 single precision"): the card, then
# the precision in words. gpu_burn's own -d / plain / -tc imports are fp64 / fp32 / fp32 on
# tensor cores.
PRECISION_WORDS = {
    "fp64": "double precision", "fp32": "single precision", "tf32": "TF32 (tensor cores)",
    "fp16": "FP16 (tensor cores)", "bf16": "BF16 (tensor cores)",
}  # fmt: skip
GPU_GEMM = ("gpu.flops", "gpu.sgemm", "gpu.dgemm")
# the page lists single precision before double (report.gpu orders by the probe: fp64 first)
SEED_ORDER = ("fp32", "fp64", "tf32", "fp16", "bf16")


def _gpu_card(fig: Measured) -> str:
    """The card's name: assay's probe says ``name``, an imported gpu_burn file ``gpu_name``."""
    return str(fig.params.get("name") or fig.params.get("gpu_name") or "GPU")


def _gpu_precision(fig: Measured) -> str:
    """fp64, fp32, ...: the probe's own, an imported gpu.dgemm's fp64, else fp32."""
    return str(fig.params.get("precision") or ("fp64" if fig.metric == "gpu.dgemm" else "fp32"))


def _gpu_row(fig: Measured) -> str:
    """'NVIDIA H100 80GB HBM3 single precision' for a GPU GEMM figure."""
    p = fig.params
    precision = _gpu_precision(fig)
    words = PRECISION_WORDS.get(precision, precision)
    if fig.metric != "gpu.flops" and p.get("tensor_cores"):
        words += " (tensor cores)"
    return f"{_gpu_card(fig)} {words}"


def _split(fig: Measured) -> str:
    if fig.metric in GPU_GEMM:
        return _gpu_row(fig)
    if fig.metric.startswith("memory.") and fig.metric != "memory.latency":
        scope = param(fig.params, "scope")
        return "per L3 domain" if scope == "l3" else str(scope)
    if not fig.metric.startswith("storage."):
        return ""
    direction = fig.params.get("direction") or fig.params.get("operation") or ""
    latency = fig.params.get("latency", "")
    return " ".join(str(p) for p in (fig.probe, direction, latency) if p)


def _note(fig: Measured) -> str:
    p = fig.params
    parts = []
    sized = fig.metric.split(".")[0] in ("p2p", "rdma", "coll")
    if sized and isinstance(p.get("size"), int | float):
        parts.append(f"{human_bytes(p['size'])} transfer size")
    if "mpi_label" in p or "mpi" in p:
        parts.append(str(p.get("mpi_label") or p["mpi"]))
    if "benchmark" in p:
        parts.append(str(p["benchmark"]))
    elif "test" in p and fig.metric.startswith("rdma"):
        parts.append(f"ib_{p['test']}")
    for key, fmt in (("threads", "{} threads"), ("n", "N={}"),
                     ("workload", "{}"), ("rw", "rw={}"), ("iodepth", "iodepth {}")):  # fmt: skip
        if key in p and not (key == "n" and not fig.metric.startswith("compute")):
            parts.append(fmt.format(p[key]))
    if "bs" in p and isinstance(p["bs"], int):
        parts.append(f"bs {human_bytes(p['bs'])}")
    if fig.metric in GPU_GEMM:
        parts += _gpu_note(p)
    return ", ".join(parts)


def _gpu_note(p: dict) -> list[str]:
    """How a GPU GEMM figure was made: its order and seconds (assay's probe), or the tool."""
    parts = [f"{p['n']}×{p['n']} GEMM"] if isinstance(p.get("n"), int) else []
    if isinstance(p.get("duration_s"), int | float):
        parts.append(f"{p['duration_s']:g} s")
    if p.get("tool"):
        parts.append(str(p["tool"]))
    return parts


def _order(metric: str, split: str, fig: Measured) -> tuple:
    """Rows by headline, then split; a card's GPU rows single, double, then tensor cores."""
    if metric in GPU_GEMM:
        precision = _gpu_precision(fig)
        rank = SEED_ORDER.index(precision) if precision in SEED_ORDER else 9
        return (HEADLINE.index(metric), _gpu_card(fig), rank, split)
    return (HEADLINE.index(metric), "", 0, split)


def best_of(sources: Iterable[Source]) -> list[Best]:
    best: dict[tuple[str, str], tuple[Measured, Source]] = {}
    for src in sources:
        for fig in src.figures:
            if fig.metric not in HEADLINE or fig.value <= 0:
                continue
            key = (fig.metric, _split(fig))
            held = best.get(key)
            higher = metric_info(fig.metric).better == "higher"
            if held is None or (fig.value > held[0].value if higher else fig.value < held[0].value):
                best[key] = (fig, src)
    out = []
    for (metric, split), (fig, src) in sorted(
        best.items(), key=lambda kv: _order(kv[0][0], kv[0][1], kv[1][0])
    ):
        info = metric_info(metric)
        title = split if metric in GPU_GEMM else info.title + (f" ({split})" if split else "")
        nodes = fig.params.get("nodes", 1)
        out.append(
            Best(
                metric,
                title,
                f"{nodes}x {src.host}",
                fig.value,
                info.display,
                _note(fig),
                src.run_id,
            )
        )
    return out


# -- the one-line workload summary --------------------------------------------------------------


def _all(sources: Iterable[Source]) -> list[Measured]:
    return [f for s in sources for f in s.figures]


def _pick(figs: list[Measured], metric: str, probe: str | None = None, **where: object):
    """The best figure of ``metric`` (of ``probe``, when given) whose params match ``where``."""
    cands = [
        f
        for f in figs
        if f.metric == metric
        and f.value > 0
        and (probe is None or f.probe == probe)
        and all(str(param(f.params, k)) == str(v) for k, v in where.items())
    ]
    if not cands:
        return None
    higher = metric_info(metric).better == "higher"
    return (max if higher else min)(cands, key=lambda f: f.value)


def _v(fig: Measured | None, unit: str) -> str:
    return f"{format_value(fig.value, unit)} {unit}" if fig else ""


def workload_summary(sources: list[Source]) -> list[tuple[str, str]]:
    """(workload, figures) rows in the HB/HC pages' layout; "not measured" where nothing was."""
    figs = _all(sources)
    rows = []
    triad = _pick(figs, "memory.triad", scope="node")
    per_l3 = [f for f in figs if f.metric == "memory.triad" and f.params.get("scope") == "l3"]
    text = _v(triad, "GB/s") or "not measured"
    if per_l3:
        lo, hi = min(f.value for f in per_l3), max(f.value for f in per_l3)
        span = _v(per_l3[0], "GB/s") if lo == hi else (
            f"{format_value(lo, 'GB/s', 1)}-{format_value(hi, 'GB/s', 1)} GB/s"
        )  # fmt: skip
        text += f" ({span} per CCX / L3 domain)"
    rows.append(("STREAM Triad", text))
    # double precision, however it is spelled ("d" stored by probes, "dp" by the derive step)
    double = [f for f in figs if precision_of(f.params.get("precision")) == "dp"]
    rpeak = _pick(double, "compute.rpeak")
    hpl = _pick(figs, "compute.hpl")
    parts = []
    if rpeak:
        parts.append(f"{_v(rpeak, 'GFLOP/s')} (Rpeak)")
    parts.append(f"{_v(hpl, 'GFLOP/s')} (Rmax)" if hpl else "Rmax not measured")
    rows.append(("High-Performance Linpack (HPL)", ", ".join(parts)))
    lat = _pick(figs, "rdma.latency")
    bw = _pick(figs, "rdma.bandwidth")
    rows.append(
        ("RDMA latency & bandwidth",
         ", ".join(x for x in (_v(lat, "us"), _v(bw, "Gb/s")) if x) or "not measured")
    )  # fmt: skip
    mlat = _pick(figs, "p2p.latency")
    mbw = _pick(figs, "p2p.bandwidth")
    if mlat or mbw:
        rows.append(
            ("MPI latency & bandwidth (OSU method)",
             ", ".join(x for x in (_v(mlat, "us"), _v(mbw, "Gb/s")) if x))
        )  # fmt: skip
    for tool, title, key in (("fio", "FIO", "direction"), ("ior", "IOR", "operation")):
        rd = _pick(figs, "storage.bandwidth", probe=tool, **{key: "read"})
        wr = _pick(figs, "storage.bandwidth", probe=tool, **{key: "write"})
        cells = [f"{_v(rd, 'GB/s')} reads" if rd else "", f"{_v(wr, 'GB/s')} writes" if wr else ""]
        rows.append((title, ", ".join(c for c in cells if c) or "not measured"))
    return rows


def one_line(rows: list[tuple[str, str]]) -> str:
    """The summary as one pasteable line: "STREAM Triad …; HPL …; RDMA …; FIO …; IOR …"."""
    short = {"High-Performance Linpack (HPL)": "HPL"}
    return "; ".join(f"{short.get(w, w)} {v}" for w, v in rows)
