"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures.

``contract`` is what every launcher provides, ``registry`` names them (``--on NAME``),
``place`` spreads a run's jobs over an allocation's nodes; ``local/`` and ``slurm/`` are the two
launchers.
"""

from assay.launch.contract import (
    Allocation,
    BatchLauncher,
    BatchState,
    Capabilities,
    Launcher,
    LaunchOptions,
    Submission,
    check_jobs,
)
from assay.launch.local.mpi import mpi_argv
from assay.launch.local.process import LaunchOutcome, run_process
from assay.launch.registry import LAUNCHERS, batch_launcher, configured, launcher_class

__all__ = [
    "LAUNCHERS",
    "Allocation",
    "BatchLauncher",
    "BatchState",
    "Capabilities",
    "LaunchOptions",
    "LaunchOutcome",
    "Launcher",
    "Submission",
    "batch_launcher",
    "check_jobs",
    "configured",
    "launcher_class",
    "mpi_argv",
    "run_process",
]
