"""Launching jobs: where and how a job's argv runs. Knows nothing of what a probe measures.

``contract`` is what every scheduler backend provides (``admin`` its node administration),
``registry`` names them (``--on NAME``), ``place`` spreads a run's jobs over an allocation's
nodes, ``parallel`` writes the argv of one step's ranks (mpirun, mpiexec, srun, flux run),
``process`` runs a command under the guard; ``local/`` and ``slurm/`` are the two backends,
and nothing outside a backend's folder imports it.
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
from assay.launch.process import LaunchOutcome, run_process
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
    "run_process",
]
