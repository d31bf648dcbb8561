"""Why is this figure low? The likely causes of a figure far below its physical peak, from facts
the run already holds (its params, the system record): never a guess dressed as a finding.

A figure gets a "why" line when it is under ``LOW_SHARE`` of its peak, or when the peak cannot
be reached by construction (a BLAS fallback kernel):

- **DGEMM/SGEMM, HPL** (share of Rpeak, from the derive step): the BLAS and the kernels it ran
  (:func:`kernel_of`: below the CPU's ISA → "BLAS fallback kernel: not the CPU's peak"), a BLAS
  not identified, threads against cores and SMT siblings, the clock Rpeak uses (a max or
  current clock), the AVX-512 frequency licence of the micro-architecture, HPL's N against
  memory, another run measuring the node at the same time;
- **STREAM Triad** against the theoretical DRAM bandwidth (``System.dram``: DIMMs × MT/s × 8 B,
  or why it is unknown — under a hypervisor it is), with threads, binding and NUMA nodes;
- **p2p bandwidth between hosts** against the fastest link of the node (``System.nics``:
  ``/sys/class/net/*/speed``, ``/sys/class/infiniband/*/ports/*/rate``): faster than the link
  means the "nodes" shared memory (one kernel: namespaces, containers), not the network.

A rate above Rpeak keeps its flag (:func:`assay.system.peak.rpeak_flag`), and
:func:`needed_clock` adds the clock that would make it possible.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from assay.analysis.statistics.stats import Figure
from assay.model import Sample, System
from assay.system.blaskernel import below_isa
from assay.system.flopstable import load_table

LOW_SHARE = 0.5  # under half its physical peak, a figure carries its likely causes
FALLBACK = "BLAS fallback kernel: not the CPU's peak"
_GHZ = re.compile(r"× ([\d.]+) GHz")


@dataclass(frozen=True)
class Kernel:
    """The BLAS a figure ran on, how its kernels were chosen, and the fallback flag."""

    label: str  # "OpenBLAS 0.3.21, SkylakeX kernels"
    how: str  # "chosen by assay: ...", "set by the user ...", "OpenBLAS's own pick"
    fallback: str | None = None  # FALLBACK + why, when the kernels are below the CPU's ISA


@dataclass(frozen=True)
class Why:
    """A figure's share of its physical peak and the likely causes of its shortfall."""

    what: str  # "DGEMM", "HPL Rmax (OpenMPI 4.1.4)", "STREAM Triad", "p2p bandwidth (MPICH)"
    peak: str  # "Rpeak", "the theoretical DRAM bandwidth", "the link rate"
    share: float | None  # None: the peak is unknown (the first cause says why)
    causes: tuple[str, ...]

    def text(self) -> str:
        if self.share is None:
            return f"{self.what}: % of {self.peak} unknown — {'; '.join(self.causes)}"
        return f"why {self.what} is {100 * self.share:.1f}% of {self.peak}: " + "; ".join(
            self.causes
        )


def kernel_of(sample: Sample, system: System | None) -> Kernel | None:
    """The kernel note of a BLAS figure; None for a figure that records no BLAS."""
    p = sample.params
    lib, core = p.get("blas_lib"), p.get("blas_core")
    detected, asked = p.get("blas_core_detected"), p.get("blas_core_asked")
    if not lib and not detected:
        return None
    ran = core or asked or detected  # hpcc cannot report its core: the plan's is all we know
    if lib:
        version = f" {p['blas_version']}" if p.get("blas_version") else ""
        label = f"{lib}{version}, {ran} kernels" if ran else f"{lib}{version}"
        if lib == "unknown":
            label = f"BLAS not identified ({p.get('blas_path') or 'no dgemm_ found'})"
    else:
        label = f"OpenBLAS, {ran} kernels (the plan's; this tool cannot report its own)"
    choice = str(p.get("blas_kernel_choice") or "")
    reason = str(p.get("blas_kernel_reason") or "")
    how = f"chosen by assay: {reason}" if choice == "assay" else reason or "OpenBLAS's own pick"
    if choice == "OpenBLAS":
        how = f"OpenBLAS's own pick: {reason}"
    if p.get("blas_fallback_simulated"):
        how += f"; OpenBLAS's own pick was simulated ({p['blas_fallback_simulated']})"
    if p.get("blas_kernel_verified"):
        how += f"; {p['blas_kernel_verified']}"
    if p.get("blas_kernel_mismatch"):
        how += f"; {p['blas_kernel_mismatch']}"
    below = below_isa(ran, system.isa if system else None)
    origin = {"user": "the user's setting", "assay": "assay's choice"}.get(
        choice,
        "OpenBLAS's own pick"
        + ("; no better core computed right" if "no better" in reason else ""),
    )
    fallback = f"{FALLBACK} ({below}: {origin})" if below else None
    return Kernel(label, how, fallback)


def rate_name(sample: Sample) -> str:
    """What a why-line calls a rate: 'DGEMM', 'HPL Rmax (OpenMPI 4.1.4)', 'HPL Rmax (inside
    HPCC)', 'DGEMM (inside HPCC, star)'."""
    p = sample.params
    if sample.metric == "compute.hpl":
        where = "inside HPCC" if sample.probe == "hpcc" else p.get("mpi_label") or p.get("mpi")
        return f"HPL Rmax ({where})" if where else "HPL Rmax"
    name = sample.metric.split(".")[1].upper()
    if sample.probe == "hpcc":
        return f"{name} (inside HPCC, {p.get('variant', 'per process')})"
    return name


def needed_clock(fraction: float, derivation: str) -> str | None:
    """For a rate above Rpeak: the clock that would make it possible, from the derivation's
    "× 2.60 GHz" (every other factor held): 'it needs at least 3.36 GHz on every core'."""
    m = _GHZ.search(derivation)
    if not m or not fraction > 1:
        return None
    return (
        f"the figure needs a clock of at least {float(m.group(1)) * fraction:.2f} GHz on every "
        f"core used (Rpeak's {m.group(1)} GHz × {fraction:.3f})"
    )


def _threads_causes(used: int | None, system: System | None, scoped: bool) -> list[str]:
    """SMT siblings, or fewer cores than the node's (not a cause when the share is already of
    the cores used: ``scoped``, DGEMM's)."""
    if not system or not used or not system.cores:
        return []
    out = []
    if used > system.cores and (system.threads or 0) > system.cores:
        out.append(
            f"{used} threads on {system.cores} cores: SMT siblings share each core's FMA units "
            "(the peak is one thread a core)"
        )
    elif used < system.cores and not scoped:
        out.append(f"it ran on {used} of {system.cores} cores")
    return out


def _clock_causes(p: dict, system: System | None) -> list[str]:
    out = []
    clock = p.get("rpeak_clock") or p.get("clock_kind")
    if clock == "max":
        out.append("Rpeak uses the max (boost) clock, an upper bound no all-core FMA load holds")
    elif clock == "current":
        out.append(
            "Rpeak uses the CURRENT clock (no stable clock found), which moves with load and, "
            "in a VM, is the hypervisor's figure: set [peak] clock_ghz"
        )
    uarch = p.get("rpeak_uarch") or (system.microarchitecture if system else None)
    entry = load_table().get(str(uarch)) if uarch else None
    if entry and entry.licence and clock in ("base", "max"):
        out.append(f"AVX-512 frequency licence: {entry.licence}")
    return out


def compute_why(
    sample: Sample, what: str, fraction: float | None, kernel: Kernel | None, system: System | None
) -> Why | None:
    """The causes of a DGEMM/HPL rate under ``LOW_SHARE`` of Rpeak (or on fallback kernels)."""
    low = fraction is not None and fraction < LOW_SHARE
    if not low and not (kernel and kernel.fallback):
        return None
    p = sample.params
    causes: list[str] = []
    if kernel and kernel.fallback:
        causes.append(kernel.fallback)
    elif kernel and p.get("blas_lib") == "unknown":
        causes.append(
            f"{kernel.label}: not OpenBLAS, MKL or BLIS; a reference (netlib) BLAS reaches a few "
            "% of peak"
        )
    threads = p.get("threads") if isinstance(p.get("threads"), int) else None
    ranks = p.get("ranks") if isinstance(p.get("ranks"), int) else 1
    used = threads * ranks if sample.metric == "compute.hpl" and threads else threads
    scoped = sample.metric != "compute.hpl" and bool(p.get("rpeak_cores"))
    causes += _threads_causes(used, system, scoped)
    placement = str(p.get("memory_placement") or "")
    if placement.startswith("first touch") and system and len(system.numa_nodes or []) > 1:
        causes.append(
            f"memory by {placement} over {len(system.numa_nodes or [])} NUMA nodes: one "
            "thread wrote the matrix, so one node's memory serves every core"
        )
    causes += _clock_causes(p, system)
    n, memory = p.get("N"), system.memory_bytes if system else None
    nodes = p.get("sized_for_nodes") if isinstance(p.get("sized_for_nodes"), int) else 1
    if sample.metric == "compute.hpl" and isinstance(n, int) and memory:
        share = 8 * n * n / (memory * nodes)
        if share < 0.2:
            causes.append(
                f"N={n} fills {100 * share:.1f}% of memory: HPL's efficiency grows with N "
                "(the HPL FAQ sizes N to about 80%); a time budget bounds it here"
            )
    if p.get("concurrent_runs"):
        causes.append(f"another assay run measured this node meanwhile ({p['concurrent_runs']})")
    if not causes:
        causes.append(
            "none found among the BLAS kernel, threads against cores, SMT, the clock source "
            "and the frequency licence"
        )
    return Why(what, "Rpeak", fraction, tuple(causes))


def memory_why(triad: Figure, system: System | None) -> Why | None:
    """STREAM Triad against the theoretical DRAM bandwidth, or why that is unknown."""
    dram = (system.dram if system else None) or {}
    peak = dram.get("bytes_per_s")
    if not isinstance(peak, int | float) or peak <= 0:
        reason = dram.get("reason") or "not collected (a system record from before it was)"
        return Why("STREAM Triad", "the theoretical DRAM bandwidth", None, (str(reason),))
    share = triad.sample.value / peak
    if share >= LOW_SHARE:
        return None
    p = triad.sample.params
    causes = [f"peak {dram.get('derivation', '')} ({dram.get('source', '')})"]
    threads = p.get("threads") if isinstance(p.get("threads"), int) else None
    if system and system.cores and threads and threads < system.cores:
        causes.append(f"{threads} threads on {system.cores} cores: too few to fill the channels")
    if not p.get("bind") or p.get("bind") in ("false", "none"):
        causes.append("threads not bound (OMP_PROC_BIND): they may crowd one socket")
    nodes = [n for n in (system.numa_nodes or []) if n.get("cpus")] if system else []
    if len(nodes) > 1:
        causes.append(
            f"{len(nodes)} NUMA nodes: first-touch placement must match the threads' binding"
        )
    if p.get("concurrent_runs"):
        causes.append(f"another assay run measured this node meanwhile ({p['concurrent_runs']})")
    return Why("STREAM Triad", "the theoretical DRAM bandwidth", share, tuple(causes))


def fastest_link(system: System | None) -> tuple[float, str] | None:
    """(Gb/s, where it was read) of the node's fastest link that is up, if any is known."""
    best: tuple[float, str] | None = None
    for nic in (system.nics if system else None) or []:
        if nic.get("kind") == "rdma":
            for port in nic.get("ports") or []:
                rate = port.get("rate_gbps")
                if rate and port.get("state") == "ACTIVE" and (not best or rate > best[0]):
                    best = (float(rate), f"{nic['name']} port {port.get('port')} rate")
        elif nic.get("speed_mbps") and nic.get("state") == "up" and not nic.get("virtual"):
            rate = nic["speed_mbps"] / 1000
            if not best or rate > best[0]:
                best = (rate, f"{nic['name']} speed")
    return best


def p2p_why(figures: Sequence[Figure], system: System | None) -> list[tuple[Figure, Why]]:
    """Each series' bandwidth at its largest size between two hosts, against the link rate."""
    largest: dict[str, Figure] = {}
    for f in figures:
        p = f.sample.params
        hosts = p.get("hosts")
        if f.sample.metric != "p2p.bandwidth" or not isinstance(hosts, list):
            continue
        if len(set(hosts)) < 2 or not isinstance(p.get("size"), int):
            continue
        series = str(p.get("mpi_label") or p.get("mpi") or f.sample.probe)
        if series not in largest or p["size"] > largest[series].sample.params["size"]:
            largest[series] = f
    out: list[tuple[Figure, Why]] = []
    link = fastest_link(system)
    for series, f in sorted(largest.items()):
        what = f"p2p bandwidth ({series}, {f.sample.params['size']} B)"
        if link is None:
            out.append((f, Why(what, "the link rate", None, ("no NIC reports a speed",))))
            continue
        gbps, where = link
        share = f.sample.value * 8 / 1e9 / gbps
        if share > 1:
            cause = (
                f"faster than the node's fastest link ({gbps:g} Gb/s, {where}): the ranks "
                "shared memory (nodes on one kernel: namespaces or containers), not the network"
            )
            out.append((f, Why(what, "the link rate", share, (cause,))))
        elif share < LOW_SHARE:
            cause = (
                f"{gbps:g} Gb/s link ({where}): check the MPI's transport (TCP or RDMA) and "
                "the link's MTU"
            )
            out.append((f, Why(what, "the link rate", share, (cause,))))
    return out
