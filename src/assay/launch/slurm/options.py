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

# Above the largest machine (Fugaku: 158,976 nodes). An all-pairs run is one job whatever the
# node count (the probe runs the tournament), so its pairs are bounded by this alone; what a
# plan places on the allocation is held to the plan's bound on jobs (``assay.launch.place``).
MAX_NODES = 200_000
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


# Options of a run given on the command line only, never a [slurm] key of config.toml: every
# other field is one (``assay.config.schema.SlurmTable``; a test holds the two to each other).
COMMAND_LINE_ONLY = frozenset({"detach", "all_pairs", "per_node"})

# The command-line option of each [slurm] key, to name a bad value where it was given.
OPTION_NAMES = {
    "nodes": "--nodes", "partition": "--partition", "account": "--account", "qos": "--qos",
    "constraint": "--constraint", "time": "--time", "sbatch_args": "--sbatch-arg",
    "max_wait": "--max-wait", "pairs_at_once": "--pairs-at-once", "intra_node": "--intra-node",
}  # fmt: skip


def _mpi_launch(name: str, table: dict[str, Any]) -> MpiLaunch:
    """One [slurm.mpi.NAME] table, already checked by the config schema."""
    if table.get("srun_mpi") == "pmix":
        raise ConfigError(
            f"config [slurm.mpi.{name}] srun_mpi = 'pmix': refused, its steps can hang and "
            "leave the node unusable with this Slurm; use pmi2 or launcher = 'mpirun'"
        )
    return MpiLaunch(
        launcher=table.get("launcher", "srun"),
        srun_mpi=table.get("srun_mpi", "pmi2"),
        args=tuple(table.get("args", ())),
        env=tuple(table.get("env", {}).items()),
    )


def options_from_config(config: dict[str, Any], **given: Any) -> SlurmOptions:
    """The ``[slurm]`` table, overridden by every option given that is not None. Both are
    checked by the config's schema (``assay.config.schema``): a value of the wrong type, or a
    control character in one that reaches sbatch's command line or the batch script, is a
    ConfigError naming the key or the option."""
    from assay.config.schema import validate_section

    table = validate_section("slurm", config.get("slurm"), "config")
    given = {k: v for k, v in given.items() if v is not None and not (k == "sbatch_args" and not v)}
    validate_section(
        "slurm",
        {k: v for k, v in given.items() if k in OPTION_NAMES},
        "command line",
        options=OPTION_NAMES,
    )
    values: dict[str, Any] = {k: v for k, v in table.items() if k != "mpi"}
    values["mpi"] = {n: _mpi_launch(n, t) for n, t in (table.get("mpi") or {}).items()}
    values.update(given)
    opts = SlurmOptions(**values)
    nodes = "--nodes" if "nodes" in given else "config [slurm] nodes ="
    if opts.nodes > MAX_NODES:
        raise ConfigError(
            f"{nodes} {opts.nodes}: at most {MAX_NODES} nodes (more than any machine)"
        )
    if opts.all_pairs and opts.nodes < 2:
        raise ConfigError("--all-pairs needs --nodes 2 or more")
    return opts
