"""The namespace Slurm cluster (scripts/testcluster) as its tests and bench/allpairs_cluster.py
use it: how each MPI starts there, and the steps its slurmds launched."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

# [slurm.mpi.*] for the namespace cluster: Open MPI kept to the bridge's subnet (the host's
# other interfaces lead nowhere from a namespace); nothing about shared memory, which assay
# keeps off itself for nodes of one kernel (``assay.launch.transports``)
MPI_TABLES = """
[slurm.mpi.mpich]
launcher = "srun"
srun_mpi = "pmi2"

[slurm.mpi.openmpi]
launcher = "mpirun"
args = ["--mca", "btl_tcp_if_include", "10.213.0.0/24",
        "--mca", "oob_tcp_if_include", "10.213.0.0/24"]
"""


def steps_launched(
    state_dir: str | Path, since: dict[str, int] | None = None
) -> tuple[set[str], dict[str, int]]:
    """The job steps (J.S) the cluster's slurmds launched after ``since`` (each log's size
    then), and each log's size now. Each slurmd logs a line for its own tasks of a step (a step
    over 16 nodes is 16 lines, one step); job ids start again at 1 when the cluster does."""
    steps: set[str] = set()
    sizes: dict[str, int] = {}
    for log in Path(state_dir, "log").glob("slurmd-*.log"):
        data = log.read_bytes()
        sizes[str(log)] = len(data)
        new = data[(since or {}).get(str(log), 0) :].decode(errors="replace")
        steps |= set(re.findall(r"launch task StepId=(\d+\.\d+)", new))
    return steps, sizes


def node_count(state_dir: str | Path) -> int:
    """The nodes of the cluster up now (0 when none is). A test module that needs another
    size brings it down and up again: `testcluster up` with another count would rewrite
    slurm.conf under the running slurmctld, which the next reconfigure kills."""
    env = {**os.environ, "SLURM_CONF": f"{state_dir}/slurm.conf"}
    out = subprocess.run(["sinfo", "-h", "-N", "-o", "%N"], capture_output=True, text=True,
                         env=env, check=False)  # fmt: skip
    return len(set(out.stdout.split())) if out.returncode == 0 else 0
