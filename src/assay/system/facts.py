"""Facts planning needs beyond the ``System`` record, read once here so that planning is pure.

Probes plan from ``PlanContext`` alone: which CPU shares a core with which (STREAM runs one
thread a core), the caches one core sees (memlat labels its working sets), and which programs
a job would launch (numactl, taskset, hpcc, fio, perftest...). ``collect_plan_facts`` reads
them from ``/sys`` and ``PATH`` through a ``Context``, so tests point it at a fake tree, or
build a ``PlanFacts`` by hand with the facts they want.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from assay.model import System
from assay.system._context import Context, Which, parse_size
from assay.system.blas import OpenBlasFacts, read_openblas
from assay.system.cpulist import parse_cpulist

CPU_DIR = "/sys/devices/system/cpu"
CACHE_LEVELS = ("L1", "L2", "L3")

# Programs a probe's job may launch. Planning asks ``PlanFacts.which`` instead of PATH, so a
# probe that needs one more program adds it here.
PLAN_PROGRAMS: tuple[str, ...] = (
    "numactl",
    "taskset",
    "hpcc",
    "xhpl",
    "fio",
    "ior",
    "mdtest",
    "ib_send_lat",
    "ib_send_bw",
    "ib_write_lat",
    "ib_write_bw",
    "ib_read_lat",
    "ib_read_bw",
)


@dataclass
class PlanFacts:
    """What planning may know of this machine besides the System record.

    ``core_of``: CPU -> the first CPU of its core (from ``thread_siblings_list``); a CPU not
    listed counts as a core of its own. ``caches``: CPU -> its data/unified cache sizes per
    level ("L1", "L2", "L3"), per instance (not summed). ``programs``: program name -> path,
    for the programs in ``PLAN_PROGRAMS`` found on PATH.
    """

    core_of: dict[int, int] = field(default_factory=dict)
    caches: dict[int, dict[str, int]] = field(default_factory=dict)
    programs: dict[str, str] = field(default_factory=dict)
    # Any other program or path a suite names (a user's xhpl, ior, osu_latency): looked up
    # through the collecting Context when asked; None (facts built by hand) finds nothing.
    lookup: Which | None = field(default=None, repr=False, compare=False)
    # The OpenBLAS jobs will load: the core it picks by itself, the better cores checked
    # (assay.system.blas). Read on first use, by the BLAS probes only: it loads the library in
    # a child process, which a plan without them need not pay for.
    blas: OpenBlasFacts | None = None
    blas_reader: Callable[[System], OpenBlasFacts | None] | None = field(
        default=None, repr=False, compare=False
    )

    def which(self, program: str) -> str | None:
        """Where ``program`` (a name on PATH, or a path) is: from the facts collected for the
        programs in ``PLAN_PROGRAMS``, else through ``lookup``; None if it is not found."""
        if program in self.programs or program in PLAN_PROGRAMS or self.lookup is None:
            return self.programs.get(program)
        return self.lookup(program)

    def openblas(self, system: System) -> OpenBlasFacts | None:
        """The OpenBLAS facts (read once, through ``blas_reader``); None: no OpenBLAS, or not
        known (facts built by hand without them)."""
        if self.blas is None and self.blas_reader is not None:
            reader, self.blas_reader = self.blas_reader, None
            try:
                self.blas = reader(system)
            except Exception:  # a broken reader costs this fact, never the plan
                self.blas = None
        return self.blas


def _cpus(ctx: Context) -> list[int]:
    found = []
    for entry in ctx.path(CPU_DIR).glob("cpu[0-9]*"):
        if entry.name[3:].isdigit():
            found.append(int(entry.name[3:]))
    return sorted(found)


def core_of(ctx: Context) -> dict[int, int]:
    """CPU -> the first CPU of its core, from sysfs; empty when sysfs does not say.

    STREAM runs one thread per core: a second hardware thread adds no memory bandwidth and
    only shares the core's load/store queues.
    """
    first: dict[int, int] = {}
    for cpu in _cpus(ctx):
        text = ctx.read(f"{CPU_DIR}/cpu{cpu}/topology/thread_siblings_list")
        try:
            siblings = parse_cpulist(text) if text else []
        except ValueError:
            continue
        if siblings:
            first[cpu] = min(siblings)
    return first


def cache_sizes(ctx: Context, cpu: int) -> dict[str, int]:
    """Data/unified cache sizes as one core sees them: {"L1": ..., "L2": ..., "L3": ...}.

    Per instance, not summed: a core can hold only its own L3 (CCX) slice's worth. Any file
    that is missing or unreadable just leaves that level out.
    """
    sizes: dict[str, int] = {}
    base = f"{CPU_DIR}/cpu{cpu}/cache"
    for index in sorted(ctx.path(base).glob("index*")):
        here = f"{base}/{index.name}"
        level_text, kind = ctx.read(f"{here}/level"), ctx.read(f"{here}/type")
        size = parse_size(ctx.read(f"{here}/size") or "")
        if not level_text or not level_text.isdigit() or kind in (None, "Instruction"):
            continue
        level = int(level_text)
        if size and 1 <= level <= len(CACHE_LEVELS):
            sizes[f"L{level}"] = size
    return sizes


def l3_instance_bytes(system: System) -> int | None:
    """One L3 instance's size from the System record: ``l3_bytes`` is the sum over the L3
    domains, and the collector reads equal instances on real parts. None when unknown."""
    if not system.l3_bytes:
        return None
    return system.l3_bytes // max(1, len(system.l3_domains or [None]))


def cpu_numa_nodes(system: System) -> list[dict]:
    """NUMA nodes that have CPUs; a memory-only node (HBM, CXL) has no cores to run on."""
    return [n for n in system.numa_nodes or [] if n.get("cpus")]


def collect_plan_facts(ctx: Context | None = None) -> PlanFacts:
    """Read the plan facts of this machine (or of the tree and PATH ``ctx`` stands for)."""
    ctx = ctx if ctx is not None else Context()
    caches = {cpu: sizes for cpu in _cpus(ctx) if (sizes := cache_sizes(ctx, cpu))}
    programs = {name: path for name in PLAN_PROGRAMS if (path := ctx.which(name))}
    return PlanFacts(
        core_of=core_of(ctx),
        caches=caches,
        programs=programs,
        lookup=ctx.which,
        blas_reader=lambda system: read_openblas(system.isa, system.vendor),
    )
