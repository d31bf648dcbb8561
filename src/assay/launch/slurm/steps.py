"""The command of one job step inside a Slurm allocation: srun steps (``assay.launch.parallel``
writes the rank lines, srun's and each MPI's own launcher's)."""

from __future__ import annotations

import json

from assay.launch.parallel import Step, for_flavor, parallel_launcher
from assay.launch.parallel.srun import srun_head
from assay.launch.slurm.options import MpiLaunch
from assay.model import Job, MpiInfo, node_output


def step_argv(
    job: Job,
    argv: list[str],
    hosts: list[str],
    mpi: MpiInfo | None,
    launch: MpiLaunch | None,
    cpus_per_node: int | None = None,
) -> list[str]:
    """The command that runs ``argv`` (the probe's, ``{exe}`` resolved) on ``hosts``: a
    server-client job's two ends as two one-task steps (``pair_argv``), an MPI job through
    srun or the MPI's own launcher (``launch``), anything else as one task."""
    if job.spread.kind == "server-client" and len(hosts) == 2:
        return pair_argv(job, argv, hosts)
    ppn = job.ppn or 1
    srun = srun_head(job.job_id, hosts)
    if job.placement is not None and job.placement.each and job.spawn != "mpi":
        # once on each node, in one step; one node's failure leaves the others running, and
        # each node's output goes to its own file (%N: the node's name)
        step = [
            *srun[:-1], "--kill-on-bad-exit=0", f"--ntasks={len(hosts)}", "--ntasks-per-node=1",
            "--mpi=none", f"--output={node_output('%N')}",
            f"--error={node_output('%N', 'stderr')}",
        ]  # fmt: skip
        if cpus_per_node:
            step.append(f"--cpus-per-task={cpus_per_node}")
        return [*step, *argv]
    if job.spawn != "mpi" or mpi is None or launch is None:
        step = [*srun, "--ntasks=1", "--mpi=none"]
        if cpus_per_node:
            step.append(f"--cpus-per-task={cpus_per_node}")
        return [*step, *argv]
    # An all-pairs step after a lost node: the step before it may hold its CPUs until Slurm
    # gives up on that node (measured here: the resume waited 50 s for it). All-pairs steps run
    # one at a time, so sharing the CPUs with a dying step costs nothing.
    overlap = job.spread.kind == "all-pairs"
    if launch.launcher == "srun":
        ranks = Step(
            "srun",
            job.ranks,
            ppn=ppn,
            hosts=tuple(hosts),
            threads=job.threads,
            overlap=overlap,
            name=job.job_id,
            plugin=launch.srun_mpi,
            args=launch.args,
        )
        return parallel_launcher("srun").argv(ranks, argv)
    # The MPI's own launcher: Open MPI's mpirun, else Hydra's mpiexec (MPICH and its
    # relatives); Open MPI with --bind-to none inside an allocation.
    ranks = Step(mpi.launcher, job.ranks, ppn=ppn, hosts=tuple(hosts),
                 bind="none" if mpi.flavor == "openmpi" else None, overlap=overlap,
                 args=(*launch.args, *mpi.launcher_flags))  # fmt: skip
    return for_flavor(mpi.flavor, default="mpiexec").argv(ranks, argv)


def pair_argv(job: Job, argv: list[str], hosts: list[str]) -> list[str]:
    """A server-client job across two nodes (perftest): its driver (``assay.drivers.pair``)
    runs on the runner's node and starts each end as its own one-task srun step, the server
    on ``hosts[1]``, the client on ``hosts[0]`` naming the server's node where it named
    ``localhost`` (perftest's client takes the server's name as its last argument).
    ``--overlap``: both steps share the nodes' CPUs with whatever else of the job's group runs
    there."""
    out = list(argv)
    server_i, client_i = out.index("--server") + 1, out.index("--client") + 1
    server, client = json.loads(out[server_i]), json.loads(out[client_i])
    if client and client[-1] == "localhost":
        client[-1] = hosts[1]
    for i, cmd, host, end in (
        (server_i, server, hosts[1], "server"),
        (client_i, client, hosts[0], "client"),
    ):
        step = [
            "srun", f"--job-name={job.job_id}-{end}", "--nodes=1", f"--nodelist={host}",
            "--ntasks=1", "--overlap", "--kill-on-bad-exit=1", "--mpi=none",
        ]  # fmt: skip
        out[i] = json.dumps([*step, *cmd])
    return out
