"""An MPI job's command on this node: the MPI's own launcher (``assay.launch.parallel``), each
rank bound to a core."""

from __future__ import annotations

from assay.launch.parallel import Step, for_flavor
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
    oversubscribed = cores is not None and job.ranks > cores * job.nodes
    # More ranks than cores cannot be bound one per core: OpenMPI refuses, so bind none. A
    # threaded rank (HPL's one process on a node, its BLAS on every core) bound to one core
    # would run all its threads there: half the rate on 2 cores, measured.
    bind = "none" if oversubscribed or job.threads > 1 else "core"
    step = Step(mpi.launcher, job.ranks, ppn=job.ppn or None, bind=bind, report_bindings=True,
                oversubscribe=oversubscribed, args=tuple(mpi.launcher_flags))  # fmt: skip
    return for_flavor(mpi.flavor).argv(step, program)
