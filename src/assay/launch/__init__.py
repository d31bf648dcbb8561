"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures."""

from assay.launch.local import LaunchOutcome, run_process
from assay.launch.mpi import mpi_argv

__all__ = ["LaunchOutcome", "mpi_argv", "run_process"]
