"""What a Slurm run asks for: the allocation, and how each MPI starts inside it.

Defaults come from the ``[slurm]`` table of ``config.toml``, declared here (``SlurmTable``: its
keys, types, ranges, defaults and help, written once); command-line options win::

    [slurm]
    partition = "batch"
    account = "proj42"
    time = "00:30:00"
    nodes = 2
    max_wait = 3600           # seconds an allocation may stay pending before it is cancelled
    sbatch_args = ["--exclusive"]
    heartbeat_timeout = 120   # the allocation cancels itself when assay stops polling this long
    fio_network = "10.0.0.0/16"  # fio's keys (``FioServers``): a serving probe adds its own
    fio_port = 8765           # to every scheduler's table (``assay.launch.serving``)

    [slurm.mpi.mpich]         # how one MPI starts inside the allocation
    launcher = "srun"         # "srun" (srun --mpi=PLUGIN) or "mpirun" (the MPI's own launcher)
    srun_mpi = "pmi2"
    args = []                 # extra launcher arguments
    env = { UCX_TLS = "tcp,self" }

By default MPICH-family MPIs start with ``srun --mpi=pmi2`` and OpenMPI with its own ``mpirun``
(Debian's OpenMPI fails under pmi2, and ``--mpi=pmix`` can wedge a node's step).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar, Literal

from pydantic import Field

from assay.config.schema import (
    DAY_S,
    ConfigTable,
    EnvName,
    Name,
    Seconds,
    Section,
    SlurmTime,
    Text,
    table_defaults,
    validate_section,
)
from assay.errors import ConfigError
from assay.launch.serving import scheduler_table
from assay.model import MpiInfo

# Above the largest machine (Fugaku: 158,976 nodes). An all-pairs run is one job whatever the
# node count (the probe runs the tournament), so its pairs are bounded by this alone; what a
# plan places on the allocation is held to the plan's bound on jobs (``assay.launch.place``).
MAX_NODES = 200_000


class MpiLaunchTable(ConfigTable):
    """``[slurm.mpi.NAME]``: how one MPI starts inside an allocation."""

    launcher: Literal["srun", "mpirun"] = Field(
        "srun", description="srun (srun --mpi=PLUGIN) or mpirun (the MPI's own launcher)"
    )
    srun_mpi: Name = Field("pmi2", description="srun's --mpi plugin (pmix is refused)")
    args: list[Text] = Field([], description="extra launcher arguments")
    env: dict[EnvName, Text] = Field({}, description="the MPI's environment in the allocation")


class SlurmTable(ConfigTable):
    """``[slurm]``: defaults of a Slurm run (command-line options win)."""

    MOVED: ClassVar[dict[str, str]] = {
        "pairs_at_once": "it is the all-pairs probe's: --all-pairs --pairs-at-once N, or "
        "--set allpairs.pairs_at_once=N in a suite or check",
    }
    # its upper bound is the scheduler's (MAX_NODES below: one message for --nodes too)
    nodes: Annotated[int, Field(ge=1)] = Field(2, description="nodes of the allocation")
    partition: Name | None = Field(None, description="sbatch --partition")
    account: Name | None = Field(None, description="sbatch --account")
    qos: Name | None = Field(None, description="sbatch --qos")
    constraint: Name | None = Field(None, description="sbatch --constraint")
    time: SlurmTime | None = Field(None, description='sbatch --time ("HH:MM:SS", minutes)')
    sbatch_args: list[Text] = Field([], description="more sbatch arguments")
    max_wait: Seconds = Field(
        24 * 3600.0, description="seconds pending before the allocation is cancelled"
    )
    heartbeat_timeout: Annotated[float, Field(ge=0, le=366 * DAY_S)] = Field(
        120.0, description="the allocation cancels itself when assay stops polling this long "
        "(0: no watchdog)",
    )  # fmt: skip
    poll_s: Annotated[float, Field(ge=0.1, le=3600)] = Field(
        2.0, description="seconds between polls (squeue not hammered, nor forgotten)"
    )
    intra_node: bool = Field(False, description="p2p also within a node")
    mpi: dict[Name, MpiLaunchTable] = Field({}, description="a table per MPI: [slurm.mpi.NAME]")


@functools.cache
def section() -> Section:
    """``[slurm]`` as the schema knows it: this scheduler's keys and those of every probe it
    starts servers for (``assay.launch.serving``)."""
    return Section("slurm", scheduler_table(SlurmTable))


_DEFAULT = table_defaults(SlurmTable)
_MPI_DEFAULT = table_defaults(MpiLaunchTable)


@dataclass(frozen=True)
class MpiLaunch:
    """How one MPI's ranks start inside an allocation."""

    launcher: str  # "srun" or "mpirun"
    srun_mpi: str = "pmi2"
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()


@dataclass
class SlurmOptions:
    """A Slurm run's settings: ``SlurmTable``'s keys (its defaults), then what only the command
    line gives."""

    nodes: int = _DEFAULT["nodes"]
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    time: str | None = None
    sbatch_args: list[str] = field(default_factory=list)
    max_wait: float = _DEFAULT["max_wait"]
    detach: bool = False
    # the allocation outlives a node it loses (sbatch --no-kill): set for the jobs that go on
    # without one (the all-pairs sweep, ``assay.run.followup``), kept in the plan for the poll
    no_kill: bool = False
    intra_node: bool = _DEFAULT["intra_node"]
    poll_s: float = _DEFAULT["poll_s"]
    heartbeat_timeout: float = _DEFAULT["heartbeat_timeout"]
    mpi: dict[str, MpiLaunch] = field(default_factory=dict)

    def launch_for(self, mpi: MpiInfo) -> MpiLaunch:
        if mpi.name in self.mpi:
            return self.mpi[mpi.name]
        if mpi.flavor == "openmpi":
            return MpiLaunch(launcher="mpirun")
        return MpiLaunch(launcher="srun", srun_mpi="pmi2")


# A run's settings that are never a [slurm] key of config.toml (--detach, given on the command
# line; no_kill, decided by the jobs): every other field is one (``SlurmTable``; a test holds
# the two to each other).
NOT_CONFIG_KEYS = frozenset({"detach", "no_kill"})

# The command-line option of each [slurm] key, to name a bad value where it was given.
OPTION_NAMES = {
    "nodes": "--nodes", "partition": "--partition", "account": "--account", "qos": "--qos",
    "constraint": "--constraint", "time": "--time", "sbatch_args": "--sbatch-arg",
    "max_wait": "--max-wait", "intra_node": "--intra-node",
}  # fmt: skip


def _mpi_launch(name: str, table: dict[str, Any]) -> MpiLaunch:
    """One [slurm.mpi.NAME] table, already checked by the config schema."""
    if table.get("srun_mpi") == "pmix":
        raise ConfigError(
            f"config [slurm.mpi.{name}] srun_mpi = 'pmix': refused, its steps can hang and "
            "leave the node unusable with this Slurm; use pmi2 or launcher = 'mpirun'"
        )
    table = {**_MPI_DEFAULT, **table}
    return MpiLaunch(
        launcher=table["launcher"],
        srun_mpi=table["srun_mpi"],
        args=tuple(table.get("args", ())),
        env=tuple(table.get("env", {}).items()),
    )


def options_from_config(config: dict[str, Any], **given: Any) -> SlurmOptions:
    """The ``[slurm]`` table, overridden by every option given that is not None. Both are
    checked by the table's declaration: a value of the wrong type, or a control character in
    one that reaches sbatch's command line or the batch script, is a ConfigError naming the key
    or the option. The keys a serving probe adds are its own (``launch.serving``)."""
    table = validate_section(section(), config.get("slurm"), "config")
    given = {k: v for k, v in given.items() if v is not None and not (k == "sbatch_args" and not v)}
    validate_section(
        section(),
        {k: v for k, v in given.items() if k in OPTION_NAMES},
        "command line",
        options=OPTION_NAMES,
    )
    own = set(SlurmTable.model_fields) - {"mpi"}  # not the keys a serving probe adds
    values: dict[str, Any] = {k: v for k, v in table.items() if k in own}
    values["mpi"] = {n: _mpi_launch(n, t) for n, t in (table.get("mpi") or {}).items()}
    values.update(given)
    opts = SlurmOptions(**values)
    nodes = "--nodes" if "nodes" in given else "config [slurm] nodes ="
    if opts.nodes > MAX_NODES:
        raise ConfigError(
            f"{nodes} {opts.nodes}: at most {MAX_NODES} nodes (more than any machine)"
        )
    return opts
