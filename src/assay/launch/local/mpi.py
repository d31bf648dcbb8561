"""The launcher command line for one MPI implementation (argv only, never a shell string)."""

from __future__ import annotations

import os

from assay.model import Job, MpiInfo


def mpi_argv(
    job: Job, mpi: MpiInfo, argv: list[str] | None = None, *, cores: int | None = None
) -> list[str]:
    """``mpirun``/``mpiexec`` + flags + ``argv`` (default: the job's), binding each rank to a
    core.

    Binding is reported by the launcher on stderr (kept in the job's stderr), so where each
    rank ran is recorded with the run.
    """
    program = job.argv if argv is None else argv
    ranks = str(job.ranks)
    oversubscribed = cores is not None and job.ranks > cores * job.nodes
    # More ranks than cores cannot be bound one per core: OpenMPI refuses, so bind none. A
    # threaded rank (HPL's one process on a node, its BLAS on every core) bound to one core
    # would run all its threads there: half the rate on 2 cores, measured.
    bind = "none" if oversubscribed or job.threads > 1 else "core"
    if mpi.flavor == "openmpi":
        cmd = [mpi.launcher, "-np", ranks, "--bind-to", bind, "--report-bindings"]
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
        if oversubscribed:
            cmd.append("--oversubscribe")
        if job.ppn:
            cmd += ["--map-by", f"ppr:{job.ppn}:node"]
    elif mpi.flavor in ("mpich", "mvapich", "intel"):
        cmd = [mpi.launcher, "-n", ranks, "-bind-to", bind]
        if job.ppn:
            cmd += ["-ppn", str(job.ppn)]
    else:
        cmd = [mpi.launcher, "-n", ranks]
    return [*cmd, *mpi.launcher_flags, *program]
