"""Parallel launchers (ReFrame's ``JobLauncher``): the argv that starts one step's ranks.

A scheduler backend (``assay.launch.<name>``) says where a step runs and how many ranks it has
(a :class:`Step`); the parallel launcher it picks writes the command line: Open MPI's
``mpirun``, Hydra's ``mpiexec`` (MPICH, MVAPICH, Intel MPI), the MPI standard's plain
``mpiexec -n``, Slurm's ``srun``, Flux's ``flux run``. Each is one module here and one line in
:data:`PARALLEL`; each command line is written once, whichever backend asks for it.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

from assay.errors import ConfigError


@dataclass(frozen=True)
class Step:
    """One step's ranks as a backend asks for them; a launcher writes what it was given."""

    program: str  # the launcher's command: an MPI's mpirun or mpiexec, "srun", "flux"
    ranks: int
    ppn: int | None = None  # ranks per node; None: the launcher's own mapping
    hosts: tuple[str, ...] = ()  # the step's nodes; empty: this node
    bind: str | None = None  # "core" or "none"; None: the launcher's own binding
    report_bindings: bool = False  # where each rank ran, on stderr (kept with the job)
    oversubscribe: bool = False  # more ranks than cores
    threads: int = 1  # per rank
    overlap: bool = False  # share the CPUs a step before it may still hold (Slurm)
    name: str = ""  # the step's name, where the launcher takes one (srun --job-name)
    plugin: str = ""  # the process-management interface (srun --mpi=pmi2)
    args: tuple[str, ...] = ()  # the backend's extra launcher arguments, then the MPI's own


class ParallelLauncher(ABC):
    """The command line that starts a :class:`Step`'s ranks of ``program``."""

    name: ClassVar[str]

    @abstractmethod
    def argv(self, step: Step, program: list[str]) -> list[str]:
        """The launcher's argv, ending in ``program`` (never a shell line)."""


PARALLEL: dict[str, str] = {
    "mpirun": "assay.launch.parallel.mpirun:OpenMpiRun",
    "mpiexec": "assay.launch.parallel.hydra:HydraExec",
    "standard": "assay.launch.parallel.standard:StandardExec",
    "srun": "assay.launch.parallel.srun:Srun",
    "flux": "assay.launch.parallel.flux:FluxRun",
}

# The MPI's own launcher by its flavour (``MpiInfo.flavor``); another flavour gets the
# standard's ``mpiexec -n``.
BY_FLAVOR: dict[str, str] = {
    "openmpi": "mpirun", "mpich": "mpiexec", "mvapich": "mpiexec", "intel": "mpiexec",
}  # fmt: skip


def parallel_launcher(name: str) -> ParallelLauncher:
    """The parallel launcher registered as ``name``."""
    where = PARALLEL.get(name)
    if where is None:
        raise ConfigError(
            f"no parallel launcher {name!r}", hint=f"known: {', '.join(sorted(PARALLEL))}"
        )
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)()


def for_flavor(flavor: str, default: str = "standard") -> ParallelLauncher:
    """The MPI's own launcher (``mpirun`` for Open MPI, Hydra's ``mpiexec`` for MPICH, ...)."""
    return parallel_launcher(BY_FLAVOR.get(flavor, default))
