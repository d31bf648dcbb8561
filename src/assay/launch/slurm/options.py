"""What a Slurm run asks for: the allocation, and how each MPI starts inside it.

Defaults come from the ``[slurm]`` table of ``config.toml``; command-line options win::

    [slurm]
    partition = "batch"
    account = "proj42"
    time = "00:30:00"
    nodes = 2
    max_wait = 3600           # seconds an allocation may stay pending before it is cancelled
    sbatch_args = ["--exclusive"]
    heartbeat_timeout = 120   # the allocation cancels itself when assay stops polling this long
    fio_network = "10.0.0.0/16"  # multi-client fio: servers listen on the node's address in
                              # it (default: the address the node's host name resolves to)
    fio_port = 8765
    pairs_at_once = 0         # --all-pairs: most pairs measured at once (0: a whole round)

    [slurm.mpi.mpich]         # how one MPI starts inside the allocation
    launcher = "srun"         # "srun" (srun --mpi=PLUGIN) or "mpirun" (the MPI's own launcher)
    srun_mpi = "pmi2"
    args = []                 # extra launcher arguments
    env = { UCX_TLS = "tcp,self" }

By default MPICH-family MPIs start with ``srun --mpi=pmi2`` and OpenMPI with its own ``mpirun``
(Debian's OpenMPI fails under pmi2, and ``--mpi=pmix`` can wedge a node's step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from assay.errors import ConfigError
from assay.model import MpiInfo

DEFAULT_MAX_WAIT_S = 24 * 3600.0
DEFAULT_HEARTBEAT_S = 120.0


@dataclass(frozen=True)
class MpiLaunch:
    """How one MPI's ranks start inside an allocation."""

    launcher: str  # "srun" or "mpirun"
    srun_mpi: str = "pmi2"
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class SlurmOptions:
    nodes: int = 2
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    time: str | None = None
    sbatch_args: list[str] = field(default_factory=list)
    max_wait: float = DEFAULT_MAX_WAIT_S
    detach: bool = False
    all_pairs: bool = False
    pairs_at_once: int = 0  # all-pairs: most pairs measured at once; 0 = every pair of a round
    per_node: bool = False  # all-pairs: the suite's per-node benches too
    intra_node: bool = False
    poll_s: float = 2.0
    heartbeat_timeout: float = DEFAULT_HEARTBEAT_S
    fio_network: str | None = None
    fio_port: int = 8765
    mpi: dict[str, MpiLaunch] = field(default_factory=dict)

    def launch_for(self, mpi: MpiInfo) -> MpiLaunch:
        if mpi.name in self.mpi:
            return self.mpi[mpi.name]
        if mpi.flavor == "openmpi":
            return MpiLaunch(launcher="mpirun")
        return MpiLaunch(launcher="srun", srun_mpi="pmi2")


def _mpi_launch(name: str, table: Any) -> MpiLaunch:
    if not isinstance(table, dict):
        raise ConfigError(f"config [slurm.mpi.{name}]: expected a table")
    launcher = table.get("launcher", "srun")
    if launcher not in ("srun", "mpirun"):
        raise ConfigError(
            f"config [slurm.mpi.{name}] launcher = {launcher!r}: expected 'srun' or 'mpirun'"
        )
    if str(table.get("srun_mpi", "pmi2")) == "pmix":
        raise ConfigError(
            f"config [slurm.mpi.{name}] srun_mpi = 'pmix': refused, its steps can hang and "
            "leave the node unusable with this Slurm; use pmi2 or launcher = 'mpirun'"
        )
    env = table.get("env", {})
    args = table.get("args", [])
    if not isinstance(env, dict) or not isinstance(args, list):
        raise ConfigError(f"config [slurm.mpi.{name}]: env must be a table, args a list")
    return MpiLaunch(
        launcher=launcher,
        srun_mpi=str(table.get("srun_mpi", "pmi2")),
        args=tuple(str(a) for a in args),
        env=tuple((str(k), str(v)) for k, v in env.items()),
    )


def options_from_config(config: dict[str, Any], **given: Any) -> SlurmOptions:
    """The ``[slurm]`` table, overridden by every option given that is not None."""
    table = config.get("slurm", {}) or {}
    if not isinstance(table, dict):
        raise ConfigError("config [slurm]: expected a table")
    known = set(SlurmOptions.__dataclass_fields__) - {"mpi", "detach", "all_pairs", "per_node"}
    unknown = set(table) - known - {"mpi"}
    if unknown:
        raise ConfigError(
            f"config [slurm]: unknown key(s) {', '.join(sorted(unknown))}",
            hint=f"keys: {', '.join(sorted(known | {'mpi'}))}",
        )
    values: dict[str, Any] = {k: table[k] for k in known if k in table}
    values["mpi"] = {n: _mpi_launch(n, t) for n, t in (table.get("mpi") or {}).items()}
    for key, value in given.items():
        if value is None or (key == "sbatch_args" and not value):
            continue
        values[key] = value
    opts = SlurmOptions(**values)
    if int(opts.nodes) < 1:
        raise ConfigError(f"--nodes {opts.nodes}: need at least 1 node")
    if opts.all_pairs and int(opts.nodes) < 2:
        raise ConfigError("--all-pairs needs --nodes 2 or more")
    opts.nodes = int(opts.nodes)
    if type(opts.pairs_at_once) is not int or opts.pairs_at_once < 0:
        raise ConfigError(
            f"pairs_at_once = {opts.pairs_at_once!r}: expected a count (1, 2, ...) or 0 "
            "for every pair of a round"
        )
    return opts
