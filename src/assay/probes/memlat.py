"""Memory load latency by pointer chasing (native ``memlat.c``), Intel MLC's idle-latency method.

One thread, pinned to one CPU with its memory on that CPU's NUMA node, walks a random cyclic
chain of cache lines whose working set grows from an L1 to beyond the last-level cache: the
ladder of latencies (L1, L2, L3, DRAM) that MLC's ``--idle_latency`` and lmbench's
``lat_mem_rd`` print. With 4 KiB pages the large sets include TLB misses, as MLC's do.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from assay.errors import SuiteError
from assay.model import Build, Job, MpiInfo, Sample, System
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.system.cpulist import format_cpulist
from assay.system.facts import PlanFacts, l3_instance_bytes

MIN_MAX_BYTES = 1 << 20  # a default ladder always reaches past a small L2
FALLBACK_MAX_BYTES = 1 << 30  # when the system's L3 is unknown: past any LLC of today
LEVELS = ("L1", "L2", "L3")


class MemlatParams(ProbeParams):
    min_bytes: int = Field(default=4096, ge=128, description="smallest working set (an L1)")
    max_bytes: int | None = Field(
        default=None, ge=4096, description="largest working set; default 4x the L3, <= memory/4"
    )
    steps_per_doubling: int = Field(default=2, ge=1, le=16)
    stride: int = Field(default=64, ge=8, description="bytes per element (a cache line)")
    min_time: float = Field(default=0.1, gt=0, le=60, description="seconds per timed pass")
    repeats: int = Field(default=5, ge=1, le=1000, description="timed passes per working set")
    cpu: int = Field(default=0, ge=0, description="the CPU the chase runs on")
    hugepages: bool = Field(default=False, description="2 MiB transparent huge pages")

    @model_validator(mode="after")
    def _sizes_ordered(self) -> MemlatParams:
        if self.max_bytes is not None and self.max_bytes < self.min_bytes:
            raise ValueError(f"max_bytes {self.max_bytes} is below min_bytes {self.min_bytes}")
        if self.stride % 8:
            raise ValueError(f"stride {self.stride} is not a multiple of 8 (a pointer)")
        return self


def default_max_bytes(system: System, stride: int = 64) -> int:
    """4x all of the L3 (so every cache is left far behind, as STREAM's rule for its arrays),
    at least 1 MiB, never more than a quarter of memory; a whole number of strides."""
    wanted = 4 * system.l3_bytes if system.l3_bytes else FALLBACK_MAX_BYTES
    wanted = max(wanted, MIN_MAX_BYTES)
    if system.memory_bytes:
        wanted = min(wanted, system.memory_bytes // 4)
    return max(stride * 2, wanted // stride * stride)


def level_of(working_set: int, caches: dict[str, int]) -> str:
    """The smallest cache level the working set fits in, else DRAM; "?" if sizes are unknown.

    "Fits" means size <= cache size: at exactly the size, conflict misses and the line
    competing with page tables already show, which the ladder makes visible on its own.
    """
    if not caches:
        return "?"
    for level in LEVELS:
        size = caches.get(level)
        if size and working_set <= size:
            return level
    if "L3" in caches:
        return "DRAM"
    return f"beyond L{max(int(level[1]) for level in caches)}"


def known_cpus(system: System) -> set[int]:
    """Every CPU the system record lists (NUMA nodes, else L3 domains); empty if unknown."""
    found = {c for node in system.numa_nodes or [] for c in node.get("cpus") or []}
    return found or {c for domain in system.l3_domains or [] for c in domain}


def pin_argv(cpu: int, facts: PlanFacts) -> tuple[list[str], str]:
    """The command prefix that pins to ``cpu`` with memory on its own node, and its name.

    numactl --localalloc puts the pages on the CPU's node (the local latency MLC reports by
    default); taskset relies on first-touch, which is the same for one pinned thread.
    """
    if facts.which("numactl"):
        return ["numactl", f"--physcpubind={cpu}", "--localalloc"], "numactl"
    if facts.which("taskset"):
        return ["taskset", "-c", str(cpu)], "taskset"
    raise SuiteError(
        "memlat must be pinned to one CPU, and neither numactl nor taskset was found",
        hint="apt-get install numactl (or util-linux for taskset)",
    )


class MemlatProbe(Probe):
    name = "memlat"
    summary = "memory load latency ladder L1 -> DRAM (pointer chasing, MLC idle-latency method)"
    Params = MemlatParams
    default_timeout = 1800.0
    stdout_only = True  # per node, one step runs it on every node

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, MemlatParams)
        system = ctx.system
        known = known_cpus(system)
        if known and params.cpu not in known:
            raise SuiteError(
                f"memlat: cpu {params.cpu} is not one of this system's CPUs",
                hint=f"its CPUs: {format_cpulist(sorted(known))}",
            )
        max_bytes = params.max_bytes or default_max_bytes(system, params.stride)
        caches = dict(ctx.facts.caches.get(params.cpu, {}))
        if "L3" not in caches and (l3 := l3_instance_bytes(system)):
            caches["L3"] = l3
        prefix, pinned_by = pin_argv(params.cpu, ctx.facts)
        argv = [
            *prefix,
            "{exe}",
            "--min-bytes", str(params.min_bytes),
            "--max-bytes", str(max_bytes),
            "--steps-per-doubling", str(params.steps_per_doubling),
            "--stride", str(params.stride),
            "--min-time", f"{params.min_time:g}",
            "--repeats", str(params.repeats),
        ]  # fmt: skip
        if params.hugepages:
            argv.append("--hugepages")
        return [
            JobDraft(
                argv=argv,
                params={
                    "cpu": params.cpu,
                    "pinned_by": pinned_by,
                    "min_time": params.min_time,
                    "cache_bytes": caches,
                },
                build=Build("memlat.c", "cc", ("-O2",), ("-lm",)),
                label=f"cpu {params.cpu}" + (" huge pages" if params.hugepages else ""),
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        samples = parse_jsonl(stdout, self.name, job.params)
        caches = job.params.get("cache_bytes") or {}
        for s in samples:
            ws = s.params.get("working_set_bytes")
            if isinstance(ws, int):
                s.params["level"] = level_of(ws, caches)
        return samples
