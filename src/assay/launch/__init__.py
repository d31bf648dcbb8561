"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures.

``contract`` is what every scheduler backend provides (``admin`` its node administration),
``registry`` names them (``--on NAME``), ``place`` spreads a run's jobs over an allocation's
nodes, ``parallel`` writes the argv of one step's ranks (mpirun, mpiexec, srun, flux run),
``process`` runs a command under the guard; ``local/`` and ``slurm/`` are the two backends,
and nothing outside a backend's folder imports it.
"""

from assay.launch.contract import (
    Allocation,
    BatchScheduler,
    BatchState,
    Capabilities,
    LaunchOptions,
    Scheduler,
    Submission,
    check_jobs,
)
from assay.launch.process import LaunchOutcome, run_process
from assay.launch.registry import SCHEDULERS, batch_scheduler, configured, scheduler_class

__all__ = [
    "SCHEDULERS",
    "Allocation",
    "BatchScheduler",
    "BatchState",
    "Capabilities",
    "LaunchOptions",
    "LaunchOutcome",
    "Scheduler",
    "Submission",
    "batch_scheduler",
    "check_jobs",
    "configured",
    "run_process",
    "scheduler_class",
]
