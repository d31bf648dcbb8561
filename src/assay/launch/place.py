"""Where each planned job runs inside an allocation of N nodes, by the spread its probe
declared (``assay.model.Spread``), for any scheduler that allocates nodes.

Pure: jobs in, jobs out. Host names are not known until the allocation starts, so a placement
names allocation *indices* (``Job.placement.indices``); the runner maps them to host names and
records them with every sample (params ``hosts``). The published method decides:

- **pair** (OSU p2p): two nodes, one rank per node ("inter-node"). With ``intra_node``, or on
  one node, a second, labelled measurement runs both ranks on one node ("intra-node").
- **all-nodes** (collectives): every node of the allocation x ppn ranks (ppn from the suite).
- **all-pairs** (the matrix): one job, one rank on every node; the probe runs the rounds of
  the tournament itself (one launch, whatever the node count).
- **server-client** (perftest): server on node 1, client on node 0, placed even when skipped,
  so the plan shows where it would run.
- **on-node** (a Vdbench hd= host): on the node it names; the jobs of one group start together.
- **clients** (multi-client fio): one job over every node: a server per node, the job their
  client (``servers``: their port and network, the probe's keys of the scheduler's table).
- **per-node** (STREAM, DGEMM, HPL, fio, ...): once per node, all nodes at the same time, so
  a slow node shows up beside its peers: one step over every node when the probe writes only
  its output (``shared_step``: STREAM, DGEMM, the latency ladder), else one step per node.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from assay.errors import ConfigError
from assay.model import Job, Placement
from assay.plan.bounds import MAX_JOBS


@dataclass(frozen=True)
class NodeOptions:
    """How a run spreads over an allocation: its size, and whether p2p also runs within a
    node."""

    nodes: int
    intra_node: bool = False
    # "clients": where each serving probe's servers listen, by probe (``launch.serving``)
    servers: dict[str, dict[str, Any]] | None = None


def _with(
    job: Job, suffix: str, idx: list[int], group: str = "", *, ranks: int | None = None,
    ppn: int | None = None, servers: dict[str, Any] | None = None, each: bool = False,
    **params: Any,
) -> Job:  # fmt: skip
    """A copy of ``job`` on allocation nodes ``idx``; ``params`` (and the ranks and ppn set
    here) recorded with its samples."""
    params.update({k: v for k, v in (("ranks", ranks), ("ppn", ppn)) if v is not None})
    new = dataclasses.replace(
        job,
        job_id=f"{job.job_id}-{suffix}" if suffix else job.job_id,
        params={**job.params, **params},
        env=dict(job.env),
        placement=Placement(list(idx), group, servers, each),
    )
    new.nodes = len(idx)
    if ranks is not None:
        new.ranks = ranks
    if ppn is not None:
        new.ppn = ppn
    return new


def _pair(job: Job, opts: NodeOptions) -> list[Job]:
    out = []
    if opts.nodes >= 2:
        out.append(_with(job, "", [0, 1], ranks=2, ppn=1, placement="inter-node", nodes=2))
    if opts.intra_node or opts.nodes < 2:
        out.append(_with(job, "intra", [0], ranks=2, ppn=2, placement="intra-node", nodes=1))
    return out


def _one(job: Job, opts: NodeOptions) -> list[Job]:
    """The placements of one job, by its spread."""
    n, spread = opts.nodes, job.spread
    if spread.kind == "server-client" and n >= 2:
        return [_with(job, "", [0, 1], placement="inter-node", nodes=2)]
    if job.skip_reason:
        return [_with(job, "", [0])]
    if spread.kind == "pair":
        return _pair(job, opts)
    if spread.kind == "on-node":
        i = int(spread.node or 0)
        if i >= n:
            raise ConfigError(
                f"{job.job_id} runs on node {i + 1} of the allocation "
                f"({job.params.get('vdbench_host') or 'a Vdbench host'}), but --nodes is {n}",
                hint=f"allocate a node per Vdbench host: --nodes {i + 1} or more",
            )
        return [_with(job, "", [i], spread.group, placement="node")]
    if spread.kind == "clients":
        idx = list(range(n))
        servers = (opts.servers or {}).get(job.probe)
        return [_with(job, "", idx, servers=servers, placement="multi-client", nodes=n)]
    if spread.kind == "all-nodes":
        ppn = job.ppn or 1
        idx = list(range(n))
        return [
            _with(job, "", idx, ranks=n * ppn, ppn=ppn, placement="multi-node", nodes=n)
        ]  # fmt: skip
    if spread.kind == "all-pairs":
        idx = list(range(n))
        return [_with(job, "", idx, ranks=n, ppn=1, placement="all-pairs", nodes=n)]
    if spread.shared_step and job.spawn == "exec" and n > 1:
        # one step over every node, each node's output apart: a launch per pass, not per node
        return [_with(job, "", list(range(n)), each=True, placement="per-node")]
    return [
        _with(job, f"n{i}" if n > 1 else "", [i], job.job_id, placement="per-node")
        for i in range(n)
    ]


def place(jobs: list[Job], opts: NodeOptions) -> list[Job]:
    """Every job with its nodes; some become several (per node, per pair). The placed plan is
    held to the plan's bound on jobs, checked as it grows: each job adds at most one per node
    (and the scheduler's bound on nodes holds those), so a plan of per-node jobs over a huge
    allocation is refused by its count, never built first."""
    out: list[Job] = []
    for job in jobs:
        out += _one(job, opts)
        if len(out) > MAX_JOBS:
            raise ConfigError(
                f"placed on {opts.nodes} nodes, the plan holds more than {MAX_JOBS} jobs",
                hint="fewer nodes, or fewer benches or repetitions per run",
            )
    return gathered(out)


def gathered(jobs: list[Job]) -> list[Job]:
    """The jobs with each placement group's members next to each other (the runner runs a
    group's *consecutive* jobs together), in the order each group first appears: a Vdbench
    run's per-host benches repeated (--repeat) come out host1-r1, host1-r2, host2-r1, ..."""
    order: dict[str, list[Job]] = {}
    for i, job in enumerate(jobs):
        group = job.placement.group if job.placement else ""
        order.setdefault(group or f"\0{i}", []).append(job)
    return [job for members in order.values() for job in members]


def groups(jobs: list[Job]) -> list[list[Job]]:
    """Consecutive jobs of one placement group run together; the others one by one."""
    out: list[list[Job]] = []
    for job in jobs:
        g = job.placement.group if job.placement else ""
        prev = out[-1][0].placement if out else None
        if g and prev is not None and prev.group == g:
            out[-1].append(job)
        else:
            out.append([job])
    return out
