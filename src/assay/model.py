"""The data model: samples, jobs, job results, runs and the system record.

Plain data classes with ``to_dict``/``from_dict`` so that every record round-trips
through JSON (the run directory) and SQLite (the index) unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from assay.units import Better, metric_info

JobStatus = Literal["ok", "failed", "timeout", "skipped", "interrupted"]
RunStatus = Literal["running", "complete", "interrupted", "failed"]


@dataclass(frozen=True)
class Stats:
    """How a repeated measurement varied. Fields a tool did not report are None."""

    n: int
    min: float | None = None
    max: float | None = None
    mean: float | None = None
    median: float | None = None
    stddev: float | None = None
    p99: float | None = None
    p999: float | None = None

    def to_dict(self) -> dict[str, Any]:
        # the fields in their order, read directly: dataclasses.asdict deep-copies each number
        # (a third of the backstop's time on every parse)
        return {k: v for k in _STATS_ORDER if (v := getattr(self, k)) is not None}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Stats:
        # Field names looked up once: dataclasses.fields() per call costs seconds per million.
        return cls(**{k: v for k, v in data.items() if k in _STATS_FIELDS})

    def cv(self) -> float | None:
        """Coefficient of variation (stddev / mean). Reports do not show it: one stray iteration
        dominates it (they show ``analysis.statistics.spread.robust_spread``)."""
        if self.stddev is None or not self.mean:
            return None
        return self.stddev / self.mean


_STATS_ORDER = tuple(f.name for f in dataclasses.fields(Stats))
_STATS_FIELDS = frozenset(_STATS_ORDER)


# Params a stored point may still carry under an older name, each (metric prefix, old key, new
# key, the old key's values that move): NCCL's "in-place"/"out-of-place" was ``placement``, the
# word for a figure's node layout, before it was ``buffers``. Runs, exports, the index and
# reference sets written before are read under today's names (``current_params``).
RENAMED_PARAMS: tuple[tuple[str, str, str, frozenset[str]], ...] = (
    ("gpu.nccl.", "placement", "buffers", frozenset({"in-place", "out-of-place"})),
)


def current_params(metric: str, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` of a point of ``metric`` under today's names (``RENAMED_PARAMS``), in their
    order; the same dict when nothing was renamed."""
    for prefix, old, new, values in RENAMED_PARAMS:
        if metric.startswith(prefix) and params.get(old) in values and new not in params:
            params = {(new if k == old else k): v for k, v in params.items()}
    return params


@dataclass
class Sample:
    """One measured point, in canonical SI units."""

    probe: str
    metric: str
    value: float
    unit: str
    better: Better
    params: dict[str, Any] = field(default_factory=dict)
    stats: Stats | None = None
    run_id: str = ""
    job_id: str = ""

    @classmethod
    def make(
        cls,
        probe: str,
        metric: str,
        value: float,
        params: dict[str, Any] | None = None,
        stats: Stats | None = None,
        unit: str | None = None,
    ) -> Sample:
        """A sample whose unit and direction come from the metric table unless given."""
        info = metric_info(metric)
        return cls(
            probe=probe,
            metric=metric,
            value=float(value),
            unit=unit or info.unit,
            better=info.better,
            params=dict(params or {}),
            stats=stats,
        )

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "run_id": self.run_id,
            "job_id": self.job_id,
            "probe": self.probe,
            "metric": self.metric,
            "value": self.value,
            "unit": self.unit,
            "better": self.better,
            "params": self.params,
        }
        if self.stats is not None:
            d["stats"] = self.stats.to_dict()
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Sample:
        stats = data.get("stats")
        return cls(
            probe=data["probe"],
            metric=data["metric"],
            value=float(data["value"]),
            unit=data["unit"],
            better=data["better"],
            params=current_params(data["metric"], dict(data.get("params") or {})),
            stats=Stats.from_dict(stats) if stats else None,
            run_id=data.get("run_id", ""),
            job_id=data.get("job_id", ""),
        )


@dataclass(frozen=True)
class Build:
    """What must be compiled before a job can start: a native source, by one toolchain."""

    source: str  # file name under assay/native/
    toolchain: str  # "cc" (the C compiler), "nvcc" (CUDA), else an MPI toolchain name
    flags: tuple[str, ...] = ()
    libs: tuple[str, ...] = ()


# How a job's work spreads over a cluster's nodes: what its probe declares (``Spread``), and
# where a scheduler puts it (``Placement``). A scheduler reads the spread, never the probe's name.
SpreadKind = Literal[
    "per-node", "pair", "all-nodes", "all-pairs", "server-client", "on-node", "clients"
]
SPREAD_KINDS: tuple[str, ...] = (
    "per-node",  # once on every node, all at the same time (STREAM, DGEMM, HPL, fio)
    "pair",  # two nodes, one rank each (OSU p2p)
    "all-nodes",  # one job over every node x ppn ranks (collectives)
    "all-pairs",  # one job, one rank per node, measuring every node pair itself (the matrix)
    "server-client",  # a server on one node, its client on another (perftest)
    "on-node",  # on one given node (a Vdbench hd= host); a group's jobs start together
    "clients",  # a server on every node, the job as their client (multi-client fio)
)
# The spreads whose job goes on without a node it lost (the all-pairs sweep resumes over the
# others: ``assay.run.followup``): a batch scheduler keeps their allocation when a node dies.
GOES_ON_WITHOUT_A_NODE: frozenset[str] = frozenset({"all-pairs"})


@dataclass(frozen=True)
class Spread:
    """How a probe's job spreads over nodes (the probe declares it; ``assay.launch`` places it).

    ``node``: for "on-node", the allocation node (0-based). ``group``: jobs of one group start
    together ("on-node": the hosts of one Vdbench run). ``shared_step``: for "per-node", the
    nodes' runs may be one step sharing one job directory (the probe writes nothing but its
    output), each node's output apart."""

    kind: SpreadKind = "per-node"
    node: int | None = None
    group: str = ""
    shared_step: bool = False


@dataclass
class Placement:
    """Where a scheduler put a job: the allocation's node indices (host names are known only
    once the allocation starts: the runner maps them), and the group whose jobs start together
    (an all-pairs round, a per-node pass). ``servers``: for "clients", the servers' port and
    network. ``each``: one step runs the job once on each of its nodes, each node's stdout and
    stderr in its own file of the job directory (``node_output``)."""

    indices: list[int]
    group: str = ""
    servers: dict[str, Any] | None = None
    each: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Placement:
        indices = data.get("indices", data.get("nodes", [0]))  # "nodes": plans before 0.2
        servers = data.get("servers", data.get("fio_servers"))
        return cls(list(indices), str(data.get("group", "")), servers, bool(data.get("each")))


def node_output(host: str, stream: str = "stdout") -> str:
    """The file, in a job directory, of one node's stdout or stderr when one step ran the job
    on each of its nodes (``Placement.each``)."""
    return f"node-{host}.{stream}"


@dataclass
class Job:
    """One concrete thing to launch. ``argv[0] == "{exe}"`` means the built probe binary."""

    job_id: str
    probe: str
    argv: list[str]
    params: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)
    # How the argv starts: "exec" as it is, or "mpi": as ``ranks`` ranks of ``mpi``, through
    # that MPI's launcher (mpirun/mpiexec, or srun on a cluster).
    spawn: Literal["exec", "mpi"] = "exec"
    mpi: str | None = None
    ranks: int = 1
    nodes: int = 1  # how many nodes the job spans (the plan's, then its placement's)
    ppn: int | None = None
    threads: int = 1  # per rank: a rank that runs threaded BLAS (HPL on one node) needs cores
    timeout: float = 300.0
    build: Build | None = None
    repetition: int = 1
    # Files written into the job directory before launch (name -> text), e.g. HPL.dat.
    inputs: dict[str, str] = field(default_factory=dict)
    # The file (in the job directory) holding the result, for tools that do not use stdout.
    output_file: str | None = None
    # Set when the plan already knows this job cannot run here (no RDMA device, no GPU):
    # it is recorded as skipped with this reason, never launched, never a failure.
    skip_reason: str | None = None
    spread: Spread = field(default_factory=Spread)  # what its probe declared
    placement: Placement | None = None  # set by a multi-node scheduler

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        if self.build is not None:
            d["build"] = {**dataclasses.asdict(self.build)}
        return d

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Job:
        data = dict(data)
        build = data.pop("build", None)
        spread = data.pop("spread", None)
        placement = data.pop("placement", None)
        if "launcher" in data and "spawn" not in data:  # jobs stored before 0.2
            data["spawn"] = "mpi" if data.pop("launcher") == "mpi" else "exec"
        names = {f.name for f in dataclasses.fields(cls)}
        job = cls(**{k: v for k, v in data.items() if k in names})
        if build:
            job.build = Build(
                source=build["source"],
                toolchain=build["toolchain"],
                flags=tuple(build.get("flags", ())),
                libs=tuple(build.get("libs", ())),
            )
        if spread:
            job.spread = Spread(**{k: v for k, v in spread.items() if k in _SPREAD_FIELDS})
        if placement:
            job.placement = Placement.from_dict(placement)
        return job


_SPREAD_FIELDS = frozenset(f.name for f in dataclasses.fields(Spread))


@dataclass
class JobResult:
    """What happened when a job ran. Paths are relative to the run directory."""

    job_id: str
    status: JobStatus
    exit_code: int | None
    wall_time: float
    argv: list[str]
    hosts: list[str] = field(default_factory=list)
    stdout_path: str = ""
    stderr_path: str = ""
    reason: str = ""  # for a failed job: what went wrong, with the stderr tail
    n_samples: int = 0
    started: str = ""
    scheduler_state: str = ""  # on Slurm: COMPLETED, FAILED, TIMEOUT, NODE_FAIL, CANCELLED, ...

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> JobResult:
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class RunInfo:
    """A run's identity and outcome; ``run.json`` in the run directory."""

    run_id: str
    created: str  # ISO 8601, UTC
    suite: str
    status: RunStatus = "running"
    label: str = ""
    finished: str = ""
    assay_version: str = ""
    argv: list[str] = field(default_factory=list)
    source: str = "assay"  # "assay", or "import:<format>" for imported third-party output
    n_jobs: int = 0
    # The process that writes the run (pid, host, boot_id, start): how a dead run is told from
    # a live one. None once it ended, or for a run no local process owns (a detached job).
    owner: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)  # what the reader must know (cut short, ...)
    # A batch run (Slurm): {"launcher", "job_id", "state", "reason", "hosts", "detached"}; the
    # job id is written before anything waits, so any later assay (or its runner's watchdog)
    # can cancel it.
    batch: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunInfo:
        data = dict(data)
        if "slurm" in data and "batch" not in data:  # runs stored before 0.2
            old = dict(data.pop("slurm") or {})
            if old:
                old.setdefault("launcher", "slurm")
                if "nodes" in old:
                    old["hosts"] = old.pop("nodes")
            data["batch"] = old
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass
class MpiInfo:
    name: str  # "openmpi", "mpich", or a name from config.toml
    version: str = "unknown"
    mpicc: str = ""
    launcher: str = ""
    flavor: str = (
        "unknown"  # "openmpi" | "mpich" | "intel" | "mvapich" | "unknown": launcher syntax
    )
    launcher_flags: list[str] = field(default_factory=list)
    source: str = ""  # "alternatives", "path", "config"

    @property
    def label(self) -> str:
        pretty = {
            "openmpi": "OpenMPI",
            "mpich": "MPICH",
            "intel": "Intel MPI",
            "mvapich": "MVAPICH2",
        }
        return f"{pretty.get(self.name, self.name)} {self.version}".strip()


@dataclass
class System:
    """Where a run ran. ``None`` means the fact could not be read ("unknown")."""

    hostname: str | None = None
    cpu_model: str | None = None
    architecture: str | None = None
    vendor: str | None = None
    microarchitecture: str | None = None
    sockets: int | None = None
    cores: int | None = None  # physical cores, all sockets
    threads: int | None = None  # logical CPUs
    l3_bytes: int | None = None  # total last-level cache, all domains
    l3_domains: list[list[int]] | None = None  # CPUs of each L3 (CCX) domain
    numa_nodes: list[dict[str, Any]] | None = None  # {"id", "cpus", "memory_bytes"}
    memory_bytes: int | None = None
    isa: list[str] | None = None  # avx2, avx512f, fma, sve, ...
    freq_max_hz: float | None = None
    freq_base_hz: float | None = None
    # every clock the node states, with its source (assay.system.clock); Rpeak picks one
    clocks: list[dict[str, Any]] = field(default_factory=list)
    # theoretical DRAM bandwidth (assay.system.dram): bytes_per_s + derivation, or a reason
    dram: dict[str, Any] = field(default_factory=dict)
    os: str | None = None
    kernel: str | None = None
    compilers: dict[str, str] = field(default_factory=dict)  # name -> version
    mpis: list[MpiInfo] = field(default_factory=list)
    gpus: list[dict[str, Any]] = field(default_factory=list)
    cuda: dict[str, str] = field(default_factory=dict)  # driver, cuda_version, nvcc, nvcc_version
    nics: list[dict[str, Any]] = field(default_factory=list)
    # kernel limits a big run over TCP meets (assay.system.fabric): neighbour table, open
    # files, ephemeral ports, listen backlog
    fabric: dict[str, int] = field(default_factory=dict)
    tools: dict[str, str] = field(default_factory=dict)  # fio, hpcc, slurm, ... -> version/path
    hosts: list[str] = field(default_factory=list)  # hosts a run used (filled by the runner)
    notes: list[str] = field(default_factory=list)  # what a collector could not read, and why

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> System:
        data = dict(data)
        mpis = [MpiInfo(**m) for m in data.pop("mpis", [])]
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(mpis=mpis, **{k: v for k, v in data.items() if k in names})
