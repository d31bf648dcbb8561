"""Where each planned job runs inside a Slurm allocation, and the command that puts it there.

Pure: jobs in, jobs out. Node names are not known until the allocation starts, so placement
names allocation *indices* (``job.placement["nodes"]``); the runner maps them to host names
and records them with every sample (params ``hosts``).

The published method decides the placement:

- p2p (OSU latency/bandwidth): two nodes, one rank per node ("inter-node"). With
  ``intra_node`` a second, labelled measurement runs both ranks on one node ("intra-node").
- all-pairs: p2p latency and bandwidth for every node pair, in the rounds of a round-robin
  tournament; the pairs of one round run at the same time (disjoint nodes), or at most
  ``pairs_at_once`` of them (1: every link measured alone, so that links sharing a switch
  uplink, or test "nodes" sharing cores, do not disturb each other's figure).
- collectives: every node of the allocation x ppn ranks (ppn from the suite, default 1).
- rdma (perftest): server on one node, client on another (nodes 0 and 1); the runner starts
  the server as its own srun step and the client names the server's node (``rdma_pair``).
- fio with ``clients = "nodes"`` (multi-client, Vdbench's "many hosts, one volume"): one job
  on every node, a fio server per node, the driver as the client (``assay.launch.slurm.fio``).
- fio with ``node = i`` (a Vdbench file's ``hd=`` host i, ``assay run --vdbench``): on node i;
  the jobs of one ``node_group`` (one Vdbench run, one repetition) run at the same time, as
  Vdbench drives every host of a run at once.
- everything else (STREAM, DGEMM, HPL, fio, ...): once per node, all nodes at the same time,
  so a slow node shows up beside its peers.
"""

from __future__ import annotations

import dataclasses
import json
import os

from assay.errors import ConfigError
from assay.launch.slurm.options import MpiLaunch, SlurmOptions
from assay.launch.tournament import rounds
from assay.model import Job, MpiInfo
from assay.plan.bounds import MAX_JOBS

CROSS_NODE_PROBES = {"p2p", "coll"}
ALL_PAIRS_MODES = ("latency", "bandwidth")


def _with(job: Job, suffix: str, idx: list[int], group: str = "", **params) -> Job:
    new = dataclasses.replace(
        job,
        job_id=f"{job.job_id}-{suffix}" if suffix else job.job_id,
        params={**job.params, **params},
        env=dict(job.env),
        placement={"nodes": idx, **({"group": group} if group else {})},
    )
    new.nodes = len(idx)
    return new


def _batches(pairs: list[tuple[int, int]], at_once: int) -> list[list[tuple[int, int]]]:
    """A round's pairs in batches of at most ``at_once`` (0: the whole round at once)."""
    k = at_once or len(pairs) or 1
    return [pairs[i : i + k] for i in range(0, len(pairs), k)]


def _mpi_env(job: Job, opts: SlurmOptions, mpis: list[MpiInfo]) -> None:
    mpi = next((m for m in mpis if m.name == job.mpi), None)
    if mpi is not None:
        job.env = {**dict(opts.launch_for(mpi).env), **job.env}


def place(jobs: list[Job], opts: SlurmOptions, mpis: list[MpiInfo]) -> list[Job]:
    """Every job with its nodes; some become several (per node, per pair)."""
    n = opts.nodes
    out: list[Job] = []
    for job in [*jobs, None]:
        if len(out) > MAX_JOBS:  # each job adds at most MAX_JOBS more (the options' bounds)
            raise ConfigError(f"placed on {n} nodes, the plan holds more than {MAX_JOBS} jobs")
        if job is None:
            break
        if job.probe == "rdma" and n >= 2:
            # placed even when skipped (no device here): the plan shows where it would run
            out.append(_with(job, "", [0, 1], placement="inter-node", nodes=2))
        elif job.skip_reason:
            out.append(_with(job, "", [0]))
        elif job.probe == "p2p" and opts.all_pairs:
            if job.params.get("mode") not in ALL_PAIRS_MODES:
                continue  # the matrix is latency and bandwidth; bibw stays a two-node figure
            for r, pairs in enumerate(rounds(n), start=1):
                for c, batch in enumerate(_batches(pairs, opts.pairs_at_once), start=1):
                    group = f"{job.job_id}-round{r}" + (f".{c}" if len(batch) < len(pairs) else "")
                    for a, b in batch:
                        j = _with(
                            job, f"p{a}-{b}", [a, b], group=group, placement="all-pairs",
                            round=r, concurrent_pairs=len(batch), ranks=2, ppn=1, nodes=2,
                        )  # fmt: skip
                        j.ranks, j.ppn = 2, 1
                        out.append(j)
        elif job.probe == "p2p":
            if n >= 2:
                j = _with(job, "", [0, 1], placement="inter-node", ranks=2, ppn=1, nodes=2)
                j.ranks, j.ppn = 2, 1
                out.append(j)
            if opts.intra_node or n < 2:
                j = _with(job, "intra", [0], placement="intra-node", ranks=2, ppn=2, nodes=1)
                j.ranks, j.ppn = 2, 2
                out.append(j)
        elif job.probe == "fio" and job.params.get("node") is not None:
            i = int(job.params["node"])
            if i >= n:
                raise ConfigError(
                    f"{job.job_id} runs on node {i + 1} of the allocation "
                    f"({job.params.get('host') or 'a Vdbench host'}), but --nodes is {n}",
                    hint=f"allocate a node per Vdbench host: --nodes {i + 1} or more",
                )
            group = f"{job.params.get('node_group') or job.job_id}-r{job.repetition}"
            out.append(_with(job, "", [i], group=group, placement="node"))
        elif job.probe == "fio" and job.params.get("clients") == "nodes":
            j = _with(job, "", list(range(n)), placement="multi-client", nodes=n)
            j.placement["fio_servers"] = {"port": opts.fio_port, "network": opts.fio_network}
            out.append(j)
        elif job.probe in CROSS_NODE_PROBES:
            ppn = job.ppn or 1
            j = _with(job, "", list(range(n)), placement="multi-node", nodes=n, ppn=ppn,
                      ranks=n * ppn)  # fmt: skip
            j.ranks, j.ppn = n * ppn, ppn
            out.append(j)
        else:
            for i in range(n):
                out.append(
                    _with(
                        job, f"n{i}" if n > 1 else "", [i], group=job.job_id, placement="per-node"
                    )
                )
    for job in out:
        _mpi_env(job, opts, mpis)
    return _gathered(out)


def _gathered(jobs: list[Job]) -> list[Job]:
    """The jobs with each placement group's members next to each other (the runner runs a
    group's *consecutive* jobs together), in the order each group first appears: a Vdbench
    run's per-host benches repeated (--repeat) come out host1-r1, host1-r2, host2-r1, ..."""
    order: dict[str, list[Job]] = {}
    for i, job in enumerate(jobs):
        order.setdefault(job.placement.get("group") or f"\0{i}", []).append(job)
    return [job for members in order.values() for job in members]


def node_list(hosts: list[str]) -> str:
    return ",".join(hosts)


def step_argv(
    job: Job,
    argv: list[str],
    hosts: list[str],
    mpi: MpiInfo | None,
    launch: MpiLaunch | None,
    cpus_per_node: int | None = None,
) -> list[str]:
    """The command that runs ``argv`` (the probe's, ``{exe}`` resolved) on ``hosts``.

    srun steps name their nodes (``--nodelist``) and rank layout exactly, so the pairs of one
    all-pairs round can run side by side; ``--kill-on-bad-exit`` ends a step whose rank died.
    """
    if job.probe == "rdma" and len(hosts) == 2:
        return pair_argv(job, argv, hosts)
    ppn = job.ppn or 1
    srun = [
        "srun", f"--job-name={job.job_id}", f"--nodes={len(hosts)}",
        f"--nodelist={node_list(hosts)}", "--kill-on-bad-exit=1",
    ]  # fmt: skip
    if job.launcher != "mpi" or mpi is None or launch is None:
        step = [*srun, "--ntasks=1", "--mpi=none"]
        if cpus_per_node:
            step.append(f"--cpus-per-task={cpus_per_node}")
        return [*step, *argv]
    ranks = str(job.ranks)
    if launch.launcher == "srun":
        threaded = [f"--cpus-per-task={job.threads}"] if job.threads > 1 else []
        return [
            *srun, f"--ntasks={ranks}", f"--ntasks-per-node={ppn}", *threaded,
            f"--mpi={launch.srun_mpi}", *launch.args, *argv,
        ]  # fmt: skip
    if mpi.flavor == "openmpi":
        cmd = [
            mpi.launcher, "-np", ranks, "--host", ",".join(f"{h}:{ppn}" for h in hosts),
            "--map-by", f"ppr:{ppn}:node", "--bind-to", "none",
        ]  # fmt: skip
        if os.geteuid() == 0:
            cmd.append("--allow-run-as-root")
    else:  # MPICH's hydra and its relatives
        cmd = [mpi.launcher, "-n", ranks, "-ppn", str(ppn), "-hosts", node_list(hosts)]
    return [*cmd, *launch.args, *mpi.launcher_flags, *argv]


def pair_argv(job: Job, argv: list[str], hosts: list[str]) -> list[str]:
    """perftest across two nodes: ``assay.drivers.pair`` runs on the runner's node and starts
    each end as its own one-task srun step, the server on ``hosts[1]``, the client on
    ``hosts[0]`` naming the server's node where it named ``localhost`` (perftest's client takes
    the server's name as its last argument). ``--overlap``: both steps share the nodes' CPUs
    with whatever else of the job's group runs there."""
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
