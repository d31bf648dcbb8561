"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures."""

from assay.launch.local import LOCAL, Capabilities, LaunchOutcome, run_process
from assay.launch.mpi import mpi_argv

__all__ = ["LOCAL", "Capabilities", "LaunchOutcome", "mpi_argv", "run_process"]
