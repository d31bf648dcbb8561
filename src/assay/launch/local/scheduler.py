"""The local scheduler: every job on this node, one after the other, in assay's own process
(``assay.run.execute``), each under the guard (``assay.launch.process``); MPI jobs through the
MPI's own ``mpirun``/``mpiexec`` (``mpi``, its line written by ``assay.launch.parallel``)."""

from __future__ import annotations

import os
from typing import Any

from assay.launch.contract import Capabilities, LaunchOptions, Scheduler
from assay.launch.local.mpi import mpi_argv
from assay.model import Job, MpiInfo


class LocalScheduler(Scheduler):
    # One node: a job asking for two "nodes" is refused, never run as two ranks here and
    # stored as nodes=2.
    caps = Capabilities("local", max_nodes=1)

    def __init__(self, cores: int | None = None) -> None:
        self.cores = cores or os.cpu_count()

    @classmethod
    def configured(cls, config: dict[str, Any], options: LaunchOptions) -> LocalScheduler:
        return cls()

    def place(self, jobs: list[Job], mpis: list[MpiInfo]) -> list[Job]:
        return jobs  # this node is the whole "allocation": every job runs here as planned

    def step_argv(
        self, job: Job, argv: list[str], hosts: list[str], mpi: MpiInfo | None
    ) -> list[str]:
        if job.spawn != "mpi" or mpi is None:
            return argv
        return mpi_argv(job, mpi, argv, cores=self.cores)
