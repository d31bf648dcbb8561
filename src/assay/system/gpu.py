"""GPU inventory: NVIDIA GPUs (nvidia-smi), driver, CUDA version and the nvcc that builds probes.

Same contract as the other collectors: ``f(ctx) -> fact | None``, never raises, reasons go to
``ctx.note``. No GPU is a fact (``[]``), not a failure.
"""

from __future__ import annotations

import csv
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from assay.model import System
from assay.system import software
from assay.system._context import Context

# Fields of `nvidia-smi --query-gpu` (compute_cap needs driver >= 510; older ones fall back).
GPU_FIELDS = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "memory.total",
    "driver_version",
    "clocks.max.sm",
    "clocks.max.memory",
    "power.max_limit",
    "compute_cap",
)
NVCC_DEFAULT = "/usr/local/cuda/bin/nvcc"


def nvcc_candidates(environ: Mapping[str, str], which: Callable[[str], str | None]) -> list[str]:
    """Where nvcc is looked for, in order: $CUDA_HOME/bin, PATH, /usr/local/cuda/bin."""
    found = []
    if home := environ.get("CUDA_HOME") or environ.get("CUDA_PATH"):
        found.append(os.path.join(home, "bin", "nvcc"))
    if on_path := which("nvcc"):
        found.append(on_path)
    found.append(NVCC_DEFAULT)
    return found


def find_nvcc(
    environ: Mapping[str, str] | None = None,
    which: Callable[[str], str | None] | None = None,
    exists: Callable[[str], bool] = os.path.exists,
) -> str | None:
    """The first nvcc that exists, or None."""
    import shutil

    env = os.environ if environ is None else environ
    for path in nvcc_candidates(env, which or shutil.which):
        if exists(path):
            return path
    return None


def _na(value: str) -> str | None:
    return None if value in ("", "[N/A]", "N/A", "[Not Supported]") else value


def _num(value: str) -> float | None:
    try:
        return float(value) if _na(value) else None
    except ValueError:
        return None


def parse_gpu_rows(text: str) -> list[dict[str, Any]]:
    """Rows of ``nvidia-smi --query-gpu=<GPU_FIELDS> --format=csv,noheader,nounits``."""
    found = []
    for row in csv.reader(text.splitlines(), skipinitialspace=True):
        if len(row) != len(GPU_FIELDS):
            continue
        f = dict(zip(GPU_FIELDS, (v.strip() for v in row), strict=True))
        memory, sm = _num(f["memory.total"]), _num(f["clocks.max.sm"])
        mem = _num(f["clocks.max.memory"])
        power = _num(f["power.max_limit"])
        index = _num(f["index"])
        found.append(
            {
                "index": int(index) if index is not None else len(found),
                "name": f["name"],
                "uuid": _na(f["uuid"]),
                "pci_bus_id": _na(f["pci.bus_id"]),
                "memory_bytes": int(memory * 2**20) if memory is not None else None,
                "driver_version": _na(f["driver_version"]),
                "clock_max_hz": sm * 1e6 if sm is not None else None,
                "memory_clock_max_hz": mem * 1e6 if mem is not None else None,
                "power_limit_w": power,
                "compute_cap": _na(f["compute_cap"]),
            }
        )
    return found


def gpus(ctx: Context) -> list[dict[str, Any]] | None:
    """NVIDIA GPUs, one dict each; [] when nvidia-smi is absent.

    A driver that does not know one of ``GPU_FIELDS`` (compute_cap before 510) refuses the
    whole query: the inventory then falls back on the basic one (name, memory, driver, clock),
    and the probes' build asks nvcc for the architecture (``-arch=native``).
    """
    path = ctx.which("nvidia-smi")
    if not path:
        return []
    out = ctx.run([path, f"--query-gpu={','.join(GPU_FIELDS)}", "--format=csv,noheader,nounits"])
    found = parse_gpu_rows(out or "")
    return found if found else software.gpus(ctx)


def nvcc_version(text: str | None) -> str | None:
    """'13.0.88' from nvcc --version ("Cuda compilation tools, release 13.0, V13.0.88")."""
    if text and (m := re.search(r"\bV(\d+\.\d+(?:\.\d+)?)", text)):
        return m.group(1)
    if text and (m := re.search(r"release (\d+\.\d+)", text)):
        return m.group(1)
    return None


def cuda(ctx: Context) -> dict[str, str]:
    """Driver and CUDA versions (nvidia-smi) and the nvcc probes are built with."""
    found: dict[str, str] = {}
    smi = ctx.which("nvidia-smi")
    text = ctx.run([smi, "-q"]) if smi else None
    if text:
        if m := re.search(r"Driver Version\s*:\s*(\S+)", text):
            found["driver"] = m.group(1)
        if m := re.search(r"CUDA Version\s*:\s*(\S+)", text):
            found["cuda_version"] = m.group(1)
    environ = os.environ if ctx.live else {}
    nvcc = next((p for p in nvcc_candidates(environ, ctx.which) if ctx.path(p).exists()), None)
    if nvcc:
        found["nvcc"] = nvcc
        version = nvcc_version(ctx.run([nvcc, "--version"]))
        if version:
            found["nvcc_version"] = version
        else:
            ctx.note(f"cuda: {nvcc} --version failed")
    return found


def requirement(system: System) -> tuple[str, bool, str]:
    """The doctor's GPU row, (what, found, detail): each card with its compute capability,
    driver and CUDA version."""
    if system.gpus:
        cards = "; ".join(
            f"{g.get('index', i)}: {g.get('name')}"
            + (f" (sm_{str(g['compute_cap']).replace('.', '')})" if g.get("compute_cap") else "")
            for i, g in enumerate(system.gpus)
        )
        cuda_facts = system.cuda or {}
        versions = ", ".join(
            f"{label} {cuda_facts[key]}"
            for label, key in (("driver", "driver"), ("CUDA", "cuda_version"))
            if cuda_facts.get(key)
        )
        return ("GPU", True, cards + (f"; {versions}" if versions else ""))
    if "nvidia-smi" in system.tools:
        return ("GPU", False, "nvidia-smi found no usable GPU (driver loaded?): GPU probes skipped")
    return ("GPU", False, "no NVIDIA GPU (nvidia-smi not found): GPU probes will be skipped")


def nvcc_requirement(system: System) -> tuple[str, bool, str]:
    """The doctor's nvcc row (a (what, found, detail) tuple, as requirements.Requirement)."""
    facts = system.cuda or {}
    if facts.get("nvcc"):
        version = facts.get("nvcc_version", "version unknown")
        return ("CUDA compiler", True, f"nvcc {version} ({facts['nvcc']})")
    return (
        "CUDA compiler",
        False,
        "nvcc not found ($CUDA_HOME/bin, PATH, /usr/local/cuda/bin): the GPU probes cannot be "
        "built; install the CUDA toolkit",
    )
