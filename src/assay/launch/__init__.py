"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures."""

from assay.launch.capabilities import LOCAL, Capabilities, check_jobs
from assay.launch.local.mpi import mpi_argv
from assay.launch.local.process import LaunchOutcome, run_process

__all__ = ["LOCAL", "Capabilities", "LaunchOutcome", "check_jobs", "mpi_argv", "run_process"]
