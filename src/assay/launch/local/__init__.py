"""The local launcher: jobs run on this node under the guard; MPI jobs through mpirun/mpiexec."""

from assay.launch.local.mpi import mpi_argv
from assay.launch.local.process import LaunchOutcome, run_process

__all__ = ["LaunchOutcome", "mpi_argv", "run_process"]
