"""STREAM (Copy, Scale, Add, Triad) on the native OpenMP probe, by McCalpin's rules.

``scope`` chooses where it runs: ``node`` (every core, the classic figure), ``l3`` (one
instance per L3 domain - a CCX on AMD - pinned to its cores, memory on its NUMA node),
``numa`` (one instance per NUMA node, memory bound to it) or ``all`` (the three). The
per-domain figures are what a vendor's "260 GB/s (32-33 GB/s per CCX)" is made of, and what
shows one slow memory channel or a CCX with a bad DIMM behind it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field

from assay.errors import SuiteError
from assay.model import Build, Job, MpiInfo, Sample, System
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.system.cpulist import format_cpulist
from assay.system.facts import PlanFacts, cpu_numa_nodes, l3_instance_bytes

STREAM_DEFAULT_ELEMENTS = 10_000_000  # stream.c's STREAM_ARRAY_SIZE
ARRAYS = 3
ELEMENT_BYTES = 8
# McCalpin's own Makefile flags. `-O3 -march=native` (used before) read 20 % lower Scale, Add
# and Triad on this project's Zen 4 VM: triad median 45.8 against 56.2 GB/s with -O2 over
# 10 alternated rounds (docs/benchmarks.md); the reference's build is the one to match.
STREAM_BUILD = Build("stream.c", "cc", ("-O2", "-fopenmp"), ("-lm",))

Scope = Literal["node", "l3", "numa", "all"]
DomainScope = Literal["l3", "numa"]


class StreamParams(ProbeParams):
    elements: int | None = Field(default=None, ge=1000, description="per array; default: auto")
    ntimes: int = Field(default=10, ge=2, description="iterations; the first is not counted")
    offset: int = Field(
        default=0, ge=0, le=1 << 20, description="STREAM's OFFSET: padding elements per array"
    )
    threads: int | Literal["all"] = "all"
    bind: str = Field(default="spread", description="OMP_PROC_BIND")
    places: str = Field(default="cores", description="OMP_PLACES")
    scope: Scope = Field(
        default="node",
        description="node (all cores), l3 (one run per L3 domain), numa (per NUMA node), all",
    )


def stream_elements(l3_bytes: int | None, memory_bytes: int | None) -> int:
    """STREAM's rule: each array at least 4x the sum of all last-level caches.

    Never below stream.c's default, and never more than half the memory for the three arrays.
    """
    wanted = STREAM_DEFAULT_ELEMENTS
    if l3_bytes:
        wanted = max(wanted, math.ceil(4 * l3_bytes / ELEMENT_BYTES))
    if memory_bytes:
        wanted = min(wanted, memory_bytes // 2 // (ARRAYS * ELEMENT_BYTES))
    return int(wanted)


def one_cpu_per_core(cpus: list[int], core_of: dict[int, int]) -> list[int]:
    """The first hardware thread of each core among ``cpus``; ``core_of`` maps a CPU to the
    first CPU of its core (``PlanFacts.core_of``), and a CPU it does not know counts as a core
    of its own. STREAM runs one thread per core: a second hardware thread adds no memory
    bandwidth and only shares the core's load/store queues."""
    seen: set[int] = set()
    chosen = []
    for c in sorted(cpus):
        core = core_of.get(c, c)
        if core not in seen:
            seen.add(core)
            chosen.append(c)
    return chosen


@dataclass(frozen=True)
class Domain:
    """Where one per-domain STREAM instance runs and what it may use."""

    scope: DomainScope
    id: int
    cpus: list[int]  # one per core: the CPUs the threads are pinned to
    membind: list[int] | None  # NUMA nodes the arrays live on; None: local allocation
    l3_bytes: int | None  # the last-level cache this instance can fill
    memory_bytes: int | None  # memory of the nodes it allocates from


def _nodes_memory(nodes: list[dict], system: System) -> int | None:
    sizes = [n.get("memory_bytes") for n in nodes]
    if nodes and all(sizes):
        return sum(s for s in sizes if s)
    return system.memory_bytes


def l3_domains(system: System, core_of: dict[int, int]) -> list[Domain]:
    """One domain per L3 instance, its memory on the NUMA node(s) holding its CPUs."""
    per_l3 = l3_instance_bytes(system)
    out = []
    for i, cpus in enumerate(system.l3_domains or []):
        nodes = [n for n in cpu_numa_nodes(system) if set(n["cpus"]) & set(cpus)]
        membind = [int(n["id"]) for n in nodes] or None
        memory = _nodes_memory(nodes, system)
        out.append(Domain("l3", i, one_cpu_per_core(cpus, core_of), membind, per_l3, memory))
    return out


def numa_domains(system: System, core_of: dict[int, int]) -> list[Domain]:
    """One domain per NUMA node with CPUs; its L3 is that of the L3 domains it holds."""
    per_l3 = l3_instance_bytes(system)
    out = []
    for node in cpu_numa_nodes(system):
        cpus = list(node["cpus"])
        l3 = None
        if per_l3:
            inside = [d for d in system.l3_domains or [] if set(d) & set(cpus)]
            l3 = per_l3 * len(inside) if inside else None
        if l3 is None and system.l3_bytes:
            l3 = system.l3_bytes // max(1, len(cpu_numa_nodes(system)))
        memory = _nodes_memory([node], system)
        out.append(
            Domain("numa", int(node["id"]), one_cpu_per_core(cpus, core_of), [int(node["id"])],
                   l3, memory)
        )  # fmt: skip
    return out


def offset_argv(offset: int) -> list[str]:
    """``--offset`` only when set, so default command lines read as they always did."""
    return ["--offset", str(offset)] if offset else []


def domain_argv(domain: Domain, elements: int, ntimes: int, offset: int = 0) -> list[str]:
    """numactl pins the instance to the domain's cores and its arrays to the domain's memory,
    so first touch cannot place a page elsewhere."""
    mem = f"--membind={format_cpulist(domain.membind)}" if domain.membind else "--localalloc"
    return [
        "numactl", mem, f"--physcpubind={format_cpulist(domain.cpus)}",
        "{exe}", "--elements", str(elements), "--ntimes", str(ntimes), *offset_argv(offset),
    ]  # fmt: skip


def domain_draft(domain: Domain, params: StreamParams) -> JobDraft:
    """One STREAM instance on one domain. STREAM's array rule applies to the caches this
    instance can use: each array >= 4x the domain's L3, at most half the domain's memory."""
    elements = params.elements or stream_elements(domain.l3_bytes, domain.memory_bytes)
    threads = len(domain.cpus)
    # An explicit place per pinned CPU: the threads cannot leave the domain, one per core.
    places = ",".join(f"{{{c}}}" for c in domain.cpus)
    return JobDraft(
        argv=domain_argv(domain, elements, params.ntimes, params.offset),
        params={
            "scope": domain.scope,
            "domain": domain.id,
            "cpus": format_cpulist(domain.cpus),
            "membind": format_cpulist(domain.membind) if domain.membind else "local",
            "threads": threads,
            "bind": params.bind,
            "places": places,
            "domain_l3_bytes": domain.l3_bytes,
        },
        env={"OMP_NUM_THREADS": str(threads), "OMP_PROC_BIND": params.bind, "OMP_PLACES": places},
        build=STREAM_BUILD,
        label=f"{domain.scope} {domain.id}",
    )


def domains_for(scope: Scope, system: System, core_of: dict[int, int]) -> list[Domain]:
    """The domains a scope covers. An explicit l3/numa scope on a system whose domains are
    unknown is an error; ``all`` measures whichever of them are known."""
    out: list[Domain] = []
    if scope in ("l3", "all"):
        if not system.l3_domains and scope == "l3":
            raise SuiteError(
                "stream scope 'l3': this system's L3 domains are unknown",
                hint="'assay system' shows what could not be read; use scope = 'node'",
            )
        out += l3_domains(system, core_of)
    if scope in ("numa", "all"):
        if not cpu_numa_nodes(system) and scope == "numa":
            raise SuiteError(
                "stream scope 'numa': this system's NUMA nodes (with CPUs) are unknown",
                hint="'assay system' shows what could not be read; use scope = 'node'",
            )
        out += numa_domains(system, core_of)
    return out


def require_numactl(facts: PlanFacts) -> None:
    if facts.which("numactl") is None:
        raise SuiteError(
            "stream per-domain scopes pin each instance with numactl, which is not installed",
            hint="apt-get install numactl (Debian/Ubuntu) or dnf install numactl",
        )


class StreamProbe(Probe):
    name = "stream"
    summary = "memory bandwidth: STREAM Copy/Scale/Add/Triad (OpenMP, validated), per domain"
    Params = StreamParams
    default_timeout = 600.0
    stdout_only = True  # per node, one step runs it on every node

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, StreamParams)
        drafts = []
        if params.scope in ("node", "all"):
            drafts.append(self._node_draft(params, ctx.system))
        if params.scope != "node":
            domains = domains_for(params.scope, ctx.system, ctx.facts.core_of)
            if domains:
                require_numactl(ctx.facts)
            drafts += [domain_draft(d, params) for d in domains]
        return drafts

    @staticmethod
    def _node_draft(params: StreamParams, system: System) -> JobDraft:
        elements = params.elements or stream_elements(system.l3_bytes, system.memory_bytes)
        threads = system.cores or system.threads or 1
        if params.threads != "all":
            threads = params.threads
        env = {
            "OMP_NUM_THREADS": str(threads),
            "OMP_PROC_BIND": params.bind,
            "OMP_PLACES": params.places,
        }
        argv = ["{exe}", "--elements", str(elements), "--ntimes", str(params.ntimes)]
        return JobDraft(
            argv=argv + offset_argv(params.offset),
            params={
                "scope": "node",
                "threads": threads,
                "bind": params.bind,
                "places": params.places,
            },
            env=env,
            build=STREAM_BUILD,
            label=f"{threads} threads",
        )

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
