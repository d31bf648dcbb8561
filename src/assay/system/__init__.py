"""The system inventory: where a run ran, kept with every result.

``collect_system()`` runs one small collector per ``System`` field (pyperf-style). A collector
that cannot read its fact leaves it None ("unknown") and says why in ``System.notes``; one that
raises is caught here, so no machine, container or VM can stop the inventory.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from assay.model import MpiInfo, System
from assay.system import clock, collectors, dram, fabric, gpu, software
from assay.system._context import Context, run_command
from assay.system.facts import PlanFacts, collect_plan_facts
from assay.system.requirements import Requirement, missing_tools, requirements_report

__all__ = [
    "COLLECTORS",
    "Context",
    "PlanFacts",
    "Requirement",
    "collect_plan_facts",
    "collect_system",
    "missing_tools",
    "requirements_report",
    "run_command",
]

Collector = Callable[[Context], Any]

# System field -> the collector that fills it. Fields not listed (mpis, hosts, notes) come
# from the caller or from this module.
COLLECTORS: tuple[tuple[str, Collector], ...] = (
    ("hostname", collectors.hostname),
    ("cpu_model", collectors.cpu_model),
    ("architecture", collectors.architecture),
    ("vendor", collectors.vendor),
    ("microarchitecture", collectors.microarchitecture),
    ("sockets", collectors.sockets),
    ("cores", collectors.cores),
    ("threads", collectors.threads),
    ("l3_bytes", collectors.l3_bytes),
    ("l3_domains", collectors.l3_domains),
    ("numa_nodes", collectors.numa_nodes),
    ("memory_bytes", collectors.memory_bytes),
    ("isa", collectors.isa),
    ("freq_max_hz", collectors.freq_max_hz),
    ("freq_base_hz", collectors.freq_base_hz),
    ("clocks", clock.clock_candidates),
    ("dram", dram.dram_peak),
    ("os", software.os_name),
    ("kernel", collectors.kernel),
    ("compilers", software.compilers),
    ("gpus", gpu.gpus),
    ("cuda", gpu.cuda),
    ("nics", collectors.nics),
    ("fabric", fabric.fabric_limits),
    ("tools", software.tools),
)


def _guarded(field: str, collector: Collector, ctx: Context) -> Any:
    try:
        return collector(ctx)
    except Exception as exc:  # any bug or odd machine: this fact is unknown, the rest stands
        ctx.note(f"{field}: unknown, collector failed: {type(exc).__name__}: {exc}")
        return None


def _check_numa_memory(system: System, ctx: Context) -> None:
    """Say so when the NUMA nodes' memory does not add up to MemTotal.

    Seen in VMs with hot-plugged memory, where node meminfo counts only the boot memory;
    per-node figures (STREAM per node, memory binding) are then suspect.
    """
    if not system.numa_nodes or not system.memory_bytes:
        return
    sizes = [node.get("memory_bytes") for node in system.numa_nodes]
    if any(size is None for size in sizes):
        return
    total = sum(size for size in sizes if size is not None)
    if abs(total - system.memory_bytes) > 0.1 * system.memory_bytes:
        ctx.note(
            f"numa_nodes: the nodes' memory adds up to {total / 2**30:.1f} GiB "
            f"but /proc/meminfo MemTotal is {system.memory_bytes / 2**30:.1f} GiB"
        )


def collect_system(
    mpis: list[MpiInfo] | None = None,
    *,
    root: Path = Path("/"),
    ctx: Context | None = None,
) -> System:
    """Inventory this machine (or the tree under ``root``, or what ``ctx`` points at).

    ``mpis`` are the MPI implementations the caller discovered; they are stored as given.
    """
    ctx = ctx if ctx is not None else Context(root=root)
    system = System(mpis=list(mpis or []))
    for field, collector in COLLECTORS:
        value = _guarded(field, collector, ctx)
        # None keeps the dataclass default: None for facts, {} / [] for collections.
        if value is not None:
            setattr(system, field, value)
    _guarded("numa_nodes", lambda c: _check_numa_memory(system, c), ctx)
    system.notes = list(ctx.notes)
    return system
