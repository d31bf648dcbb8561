"""Canonical SI units, display units and metric metadata.

Values are stored in canonical SI units (s, B/s, flop/s, op/s, B). Display units are
chosen at report time. Every tool of the field means something different by "MB":
OSU and IMB mean 1e6 B, perftest's MiB is 2**20 B and its Gb is 1e9 bit, STREAM's MB is 1e6 B.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Better = Literal["higher", "lower"]

CANONICAL = ("s", "B/s", "flop/s", "op/s", "B", "1", "Hz", "W", "C")

# display unit -> (canonical unit, factor such that display = canonical / factor)
DISPLAY: dict[str, tuple[str, float]] = {
    "s": ("s", 1.0),
    "ms": ("s", 1e-3),
    "us": ("s", 1e-6),
    "ns": ("s", 1e-9),
    "B/s": ("B/s", 1.0),
    "kB/s": ("B/s", 1e3),
    "MB/s": ("B/s", 1e6),
    "GB/s": ("B/s", 1e9),
    "TB/s": ("B/s", 1e12),
    "KiB/s": ("B/s", 2**10),
    "MiB/s": ("B/s", 2**20),
    "GiB/s": ("B/s", 2**30),
    "Mb/s": ("B/s", 1e6 / 8),
    "Gb/s": ("B/s", 1e9 / 8),
    "flop/s": ("flop/s", 1.0),
    "MFLOP/s": ("flop/s", 1e6),
    "GFLOP/s": ("flop/s", 1e9),
    "TFLOP/s": ("flop/s", 1e12),
    "op/s": ("op/s", 1.0),
    "GUP/s": ("op/s", 1e9),
    "IOPS": ("op/s", 1.0),
    "kIOPS": ("op/s", 1e3),
    "B": ("B", 1.0),
    "KiB": ("B", 2**10),
    "MiB": ("B", 2**20),
    "GiB": ("B", 2**30),
    "kB": ("B", 1e3),
    "MB": ("B", 1e6),
    "GB": ("B", 1e9),
    "1": ("1", 1.0),
    "Hz": ("Hz", 1.0),
    "MHz": ("Hz", 1e6),
    "W": ("W", 1.0),
    "C": ("C", 1.0),
    "%": ("1", 1e-2),
}


def to_display(value: float, unit: str) -> float:
    """Convert a canonical value to the display unit ``unit``."""
    return value / DISPLAY[unit][1]


def from_display(value: float, unit: str) -> float:
    """Convert a value given in ``unit`` (as a tool printed it) to canonical SI."""
    return value * DISPLAY[unit][1]


def canonical_of(unit: str) -> str:
    return DISPLAY[unit][0]


@dataclass(frozen=True)
class MetricInfo:
    unit: str  # canonical
    better: Better
    display: str  # default display unit
    title: str
    # one point of a series over time (a burn's intervals): drawn, never judged or compared
    series: bool = False


# Dotted metric names. A name not listed here falls back on its family (text before the dot).
METRICS: dict[str, MetricInfo] = {
    "memory.copy": MetricInfo("B/s", "higher", "GB/s", "STREAM Copy"),
    "memory.scale": MetricInfo("B/s", "higher", "GB/s", "STREAM Scale"),
    "memory.add": MetricInfo("B/s", "higher", "GB/s", "STREAM Add"),
    "memory.triad": MetricInfo("B/s", "higher", "GB/s", "STREAM Triad"),
    "memory.latency": MetricInfo("s", "lower", "ns", "Memory load latency"),
    "compute.dgemm": MetricInfo("flop/s", "higher", "GFLOP/s", "DGEMM"),
    "compute.sgemm": MetricInfo("flop/s", "higher", "GFLOP/s", "SGEMM"),
    "compute.hpl": MetricInfo("flop/s", "higher", "GFLOP/s", "HPL Rmax"),
    "compute.rpeak": MetricInfo("flop/s", "higher", "GFLOP/s", "Rpeak"),
    # Derived (assay.analysis.derived.derive), never stored: what compare judges beside the
    # measured.
    "compute.rpeak_fraction": MetricInfo("1", "higher", "%", "share of Rpeak"),
    "p2p.hockney.alpha": MetricInfo("s", "lower", "us", "Hockney α (zero-byte latency)"),
    "p2p.hockney.beta": MetricInfo("B/s", "higher", "MB/s", "Hockney β (asymptotic bandwidth)"),
    "compute.fft": MetricInfo("flop/s", "higher", "GFLOP/s", "FFT"),
    "memory.ptrans": MetricInfo("B/s", "higher", "GB/s", "PTRANS"),
    "memory.randomaccess": MetricInfo("op/s", "higher", "GUP/s", "RandomAccess"),
    "gpu.sgemm": MetricInfo("flop/s", "higher", "GFLOP/s", "GPU SGEMM"),
    "gpu.dgemm": MetricInfo("flop/s", "higher", "GFLOP/s", "GPU DGEMM"),
    "gpu.flops": MetricInfo("flop/s", "higher", "TFLOP/s", "GPU sustained GEMM"),
    "gpu.errors": MetricInfo("1", "lower", "1", "GPU GEMM errors"),
    # one interval of the burn (params: t_s, and the telemetry's means over it)
    "gpu.trace": MetricInfo("flop/s", "higher", "TFLOP/s", "GPU GEMM rate per interval", True),
    "gpu.sm_clock": MetricInfo("Hz", "higher", "MHz", "GPU SM clock"),
    "gpu.mem_clock": MetricInfo("Hz", "higher", "MHz", "GPU memory clock"),
    "gpu.power": MetricInfo("W", "lower", "W", "GPU power"),
    "gpu.temperature": MetricInfo("C", "lower", "C", "GPU temperature"),
    "gpu.bandwidth": MetricInfo("B/s", "higher", "GB/s", "GPU memory bandwidth"),
    "gpu.h2d": MetricInfo("B/s", "higher", "GB/s", "Host to GPU"),
    "gpu.d2h": MetricInfo("B/s", "higher", "GB/s", "GPU to host"),
    "gpu.d2d": MetricInfo("B/s", "higher", "GB/s", "GPU to GPU"),
    "p2p.latency": MetricInfo("s", "lower", "us", "MPI latency"),
    "p2p.bandwidth": MetricInfo("B/s", "higher", "MB/s", "MPI bandwidth"),
    "p2p.bibw": MetricInfo("B/s", "higher", "MB/s", "MPI bi-directional bandwidth"),
    "p2p.ring.latency": MetricInfo("s", "lower", "us", "MPI ring latency"),
    "p2p.ring.bandwidth": MetricInfo("B/s", "higher", "MB/s", "MPI ring bandwidth"),
    "rdma.latency": MetricInfo("s", "lower", "us", "RDMA latency"),
    "rdma.bandwidth": MetricInfo("B/s", "higher", "MB/s", "RDMA bandwidth"),
    "storage.iops": MetricInfo("op/s", "higher", "IOPS", "IOPS"),
    "storage.bandwidth": MetricInfo("B/s", "higher", "MiB/s", "Storage bandwidth"),
    "storage.latency": MetricInfo("s", "lower", "ms", "Storage latency"),
    # What a node has (assay.drivers.inventory), judged by 'assay check' against its baseline.
    "inventory.cores": MetricInfo("1", "higher", "1", "physical cores"),
    "inventory.threads": MetricInfo("1", "higher", "1", "logical CPUs"),
    "inventory.memory": MetricInfo("B", "higher", "GiB", "memory (MemTotal)"),
    "inventory.gpus": MetricInfo("1", "higher", "1", "GPUs"),
    "inventory.link_speed": MetricInfo("B/s", "higher", "Gb/s", "link speed"),
    "inventory.node": MetricInfo("1", "higher", "1", "node facts"),
    "inventory.fabric": MetricInfo("1", "higher", "1", "kernel limit a big run meets"),
}

FAMILY_DEFAULTS: dict[str, MetricInfo] = {
    "coll": MetricInfo("s", "lower", "us", "MPI collective"),
    "memory": MetricInfo("B/s", "higher", "GB/s", "Memory"),
    "compute": MetricInfo("flop/s", "higher", "GFLOP/s", "Compute"),
    "gpu": MetricInfo("flop/s", "higher", "GFLOP/s", "GPU"),
}


# By the last part of the name: p2p.pingping.latency, gpu.nccl.allreduce.busbw, ...
SUFFIX_DEFAULTS: dict[str, MetricInfo] = {
    "latency": MetricInfo("s", "lower", "us", "latency"),
    "time": MetricInfo("s", "lower", "us", "time"),
    "bandwidth": MetricInfo("B/s", "higher", "MB/s", "bandwidth"),
    "bibw": MetricInfo("B/s", "higher", "MB/s", "bi-directional bandwidth"),
    "busbw": MetricInfo("B/s", "higher", "GB/s", "bus bandwidth"),
    "algbw": MetricInfo("B/s", "higher", "GB/s", "algorithm bandwidth"),
    "message_rate": MetricInfo("op/s", "higher", "op/s", "message rate"),
    "iops": MetricInfo("op/s", "higher", "IOPS", "IOPS"),
}


def metric_info(metric: str) -> MetricInfo:
    """Metadata for a dotted metric name; unknown names get their suffix's or family's defaults."""
    if metric in METRICS:
        return METRICS[metric]
    if metric.startswith("storage.metadata."):
        return MetricInfo("op/s", "higher", "op/s", "metadata operations")
    suffix = metric.rsplit(".", 1)[-1]
    if suffix in SUFFIX_DEFAULTS:
        return SUFFIX_DEFAULTS[suffix]
    family = metric.split(".", 1)[0]
    if family in FAMILY_DEFAULTS:
        return FAMILY_DEFAULTS[family]
    return MetricInfo("1", "higher", "1", metric)


def human_bytes(n: float) -> str:
    """Message or block size the way OSU/fio users read it: 8 KiB, 4 MiB."""
    for unit, factor in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= factor and n % factor == 0:
            return f"{int(n // factor)} {unit}"
    return f"{int(n)} B"


def format_value(value: float, unit: str, digits: int = 2) -> str:
    """A display value with sensible precision: 2.44, 12061.33, 0.03."""
    shown = to_display(value, unit)
    if shown != 0 and abs(shown) < 0.01:
        return f"{shown:.3g}"
    return f"{shown:,.{digits}f}".replace(",", "")
