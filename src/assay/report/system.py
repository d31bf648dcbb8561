"""The system table: what the figures were measured on."""

from __future__ import annotations

from assay.model import System
from assay.report.table import Table
from assay.system.dram import describe_dram
from assay.system.hostlist import compress_hostlist


def system_table(system: System, hosts: list[str]) -> Table:
    def mb(x: int | None) -> str:
        return "unknown" if x is None else f"{x / 2**20:.0f} MiB"

    def gib(x: int | None) -> str:
        return "unknown" if x is None else f"{x / 2**30:.1f} GiB"

    freq = "unknown"
    if system.freq_max_hz:
        freq = f"{system.freq_max_hz / 1e9:.2f} GHz max"
        if system.freq_base_hz:
            freq += f", {system.freq_base_hz / 1e9:.2f} GHz base"
    rows = [
        ["Host", compress_hostlist(hosts) or system.hostname or "unknown"],
        ["CPU", system.cpu_model or "unknown"],
        ["Micro-architecture", system.microarchitecture or "unknown"],
        [
            "Sockets / cores / threads",
            f"{system.sockets or '?'} / {system.cores or '?'} / {system.threads or '?'}",
        ],
        [
            "L3 (CCX) domains",
            f"{len(system.l3_domains)} × {mb((system.l3_bytes or 0) // len(system.l3_domains))}"
            if system.l3_domains
            else mb(system.l3_bytes),
        ],
        ["NUMA nodes", str(len(system.numa_nodes)) if system.numa_nodes else "unknown"],
        ["Memory", gib(system.memory_bytes)],
        ["DRAM bandwidth (theoretical)", describe_dram(system.dram)],
        ["Frequency", freq],
        ["ISA", " ".join(system.isa) if system.isa else "unknown"],
        ["OS / kernel", f"{system.os or 'unknown'} / {system.kernel or 'unknown'}"],
        ["Compilers", ", ".join(system.compilers.values()) or "unknown"],
        ["MPI", ", ".join(m.label for m in system.mpis) or "none found"],
    ]
    if system.gpus:
        rows.append(["GPUs", ", ".join(str(g.get("name", "?")) for g in system.gpus)])
    return Table("system", "System", ["", ""], rows)
