"""What an all-pairs job leaves to measure inside the same allocation, as ClusterKit does:

- **resume**: a sweep cut short by a lost node (it died, or its rank stopped answering: the
  probe's exit code 4 names it) is continued without that node in a new launch, measuring only
  the pairs never measured; the finished rounds are kept. The lost node is the one the probe
  named, else each host the scheduler finds not answering.
- **retest** (confirm before naming): the links the outlier rule flags, and a few links of each
  flagged node, are measured again ``RETESTS`` times in retest rounds, with the sweep's
  iterations, so the report names only what was confirmed ("confirmed k of k").

- **after a refused connect** (every node answering, its MPI could not connect: the kernel's
  neighbour table, a fabric limit): the pairs never measured, on every node.

The probe's follow-up hook (:func:`next_jobs`, ``AllPairsProbe.follow_up``): the sweep and the
jobs that continued it are read back from their files each time, so the plan is a function of
what is stored; :func:`plan_follow_up` is the pure planning on those matrices. The run that
calls the hook (here or inside an allocation) says who answers, whether connects were refused
and what the user's outlier rule flags, and runs the jobs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from assay.condensed import link_index, link_nodes, n_links
from assay.errors import AssayError
from assay.parsers.allpairs_file import MatrixFile, node_stats, read_matrix_file
from assay.probes.base import Ended, FollowUpContext

# the user's outlier rule on an array: the indices it calls out (``FollowUpContext.flag``)
Flag = Callable[[np.ndarray, Literal["higher", "lower"]], np.ndarray]

RETESTS = 3  # each flagged link measured again this many times: "confirmed k of 3"
NODE_LINKS = 3  # links of a flagged node retested: to its 3 best partners
MAX_RETEST_LINKS = 512  # a fabric flagging more is broken beyond what retests tell
MAX_RESUMES = 2  # a third loss in one sweep: the allocation itself is failing
EXIT_UNRESPONSIVE = 4  # the probe's: a partner stopped answering (native/allpairs.c)


@dataclass
class Sweep:
    """One all-pairs measurement and its follow-ups so far, by host name: the links measured
    (latency and bandwidth, the sweep's layout), the nodes lost, the rounds used."""

    hosts: list[str]
    latency: np.ndarray
    bandwidth: np.ndarray
    iterations: tuple[int, int]
    next_round: int
    # what the sweep's pilot chose (the file's header): its follow-ups measure the same way
    fitted: dict[str, str] = field(default_factory=dict)
    lost: list[str] = field(default_factory=list)
    resumes: int = 0
    retested: bool = False

    @classmethod
    def of(cls, m: MatrixFile) -> Sweep:
        last = m.rounds[-1] if m.rounds else None
        iterations = (last.lat_iterations, last.bw_iterations) if last else (1, 1)
        return cls(
            list(m.hosts), m.latency.astype(np.float32, copy=True),
            m.bandwidth.astype(np.float32, copy=True), iterations,
            (last.number + 1) if last else 1,
            {"--window": str(m.window), "--pair-budget": f"{m.pair_budget_s:.6g}"},
        )  # fmt: skip

    def add(self, m: MatrixFile) -> None:
        """A resume's links (its hosts a subset of the sweep's) into the sweep's layout."""
        index = {h: i for i, h in enumerate(self.hosts)}
        n, k = m.n, n_links(m.n)
        a, b = link_nodes(n, np.arange(k))
        target = link_index(len(self.hosts), np.array([index[m.hosts[i]] for i in a.tolist()]),
                            np.array([index[m.hosts[j]] for j in b.tolist()]))  # fmt: skip
        for mine, theirs in (
            (self.latency, m.latency),
            (self.bandwidth, m.bandwidth),
        ):
            got = ~np.isnan(theirs)
            mine[np.asarray(target)[got]] = theirs[got]
        if m.rounds:
            self.next_round = max(self.next_round, m.rounds[-1].number + 1)


@dataclass(frozen=True)
class FollowUp:
    """A job to run next: ``hosts`` (rank order), ``pairs`` by rank, and why."""

    kind: Literal["resume", "retest"]
    hosts: list[str]
    pairs: list[tuple[int, int]]
    first_round: int
    iterations: tuple[int, int]
    why: str


def lost_ranks(summary_params: list[dict]) -> list[int]:
    """The ranks the probe said stopped answering (its summary's ``unresponsive``)."""
    out: set[int] = set()
    for p in summary_params:
        ranks = p.get("unresponsive")
        if isinstance(ranks, list):
            out |= {int(r) for r in ranks if isinstance(r, int)}
    return sorted(out)


def resume(sweep: Sweep, lost: list[str]) -> FollowUp | None:
    """The pairs never measured, among the nodes still there, as a new job on those nodes."""
    sweep.lost = sorted(set(sweep.lost) | set(lost))
    alive = [h for h in sweep.hosts if h not in sweep.lost]
    if len(alive) < 2 or sweep.resumes >= MAX_RESUMES:
        return None
    index = {h: i for i, h in enumerate(sweep.hosts)}
    missing = np.flatnonzero(np.isnan(sweep.latency) | np.isnan(sweep.bandwidth))
    a, b = link_nodes(len(sweep.hosts), missing)
    rank = {index[h]: r for r, h in enumerate(alive)}
    pairs = [(rank[i], rank[j]) for i, j in zip(a.tolist(), b.tolist(), strict=True)
             if i in rank and j in rank]  # fmt: skip
    if not pairs:
        return None
    sweep.resumes += 1
    why = (f"{', '.join(sweep.lost)} lost: the {len(pairs)} pairs never measured, "
           f"on the {len(alive)} nodes left")  # fmt: skip
    if not sweep.lost:
        why = f"connects refused: the {len(pairs)} pairs never measured, on every node"
    return FollowUp("resume", alive, pairs, sweep.next_round, sweep.iterations, why)


def _flagged_links(values: np.ndarray, better: Literal["higher", "lower"], flag: Flag,
                   n: int) -> tuple[set[int], set[int]]:  # fmt: skip
    """Condensed indices of the links the rule flags, and the nodes flagged by their median."""
    links: set[int] = set()
    if np.count_nonzero(~np.isnan(values)) >= 3:
        links = set(flag(values, better).tolist())
    medians = node_stats(values, n).median
    nodes: set[int] = set()
    if np.count_nonzero(~np.isnan(medians)) >= 3:
        nodes = set(flag(medians, better).tolist())
    return links, nodes


def retest(sweep: Sweep, flag: Flag) -> FollowUp | None:
    """The flagged links, and ``NODE_LINKS`` links of each flagged node (to its best partners:
    a slow node shows on any link), each ``RETESTS`` times, on the sweep's nodes."""
    if sweep.retested:
        return None
    sweep.retested = True
    n = len(sweep.hosts)
    links: set[int] = set()
    nodes: set[int] = set()
    for values, better in ((sweep.latency, "lower"), (sweep.bandwidth, "higher")):
        got_links, got_nodes = _flagged_links(values, better, flag, n)  # type: ignore[arg-type]
        links |= got_links
        nodes |= got_nodes
    lost = {i for i, h in enumerate(sweep.hosts) if h in sweep.lost}
    for i in sorted(nodes - lost):
        others = np.array([j for j in range(n) if j != i and j not in lost], np.int64)
        if len(others) == 0:
            continue
        k = link_index(n, np.full(len(others), i), others)
        best = others[np.argsort(-np.nan_to_num(sweep.bandwidth[k], nan=-1.0))[:NODE_LINKS]]
        links |= set(np.asarray(link_index(n, np.full(len(best), i), best)).tolist())
    if not links:
        return None
    chosen = sorted(links)[:MAX_RETEST_LINKS]
    a, b = link_nodes(n, np.array(chosen, np.int64))
    once = [(i, j) for i, j in zip(a.tolist(), b.tolist(), strict=True)
            if i not in lost and j not in lost]  # fmt: skip
    if not once:
        return None
    keep = [i for i, h in enumerate(sweep.hosts) if i not in lost]
    rank = {i: r for r, i in enumerate(keep)}
    pairs = [(rank[i], rank[j]) for _ in range(RETESTS) for i, j in once]
    why = (f"{len(once)} flagged link(s) ({len(nodes)} flagged node(s) among them) measured "
           f"{RETESTS} more times")  # fmt: skip
    hosts = [sweep.hosts[i] for i in keep]
    return FollowUp("retest", hosts, pairs, sweep.next_round, sweep.iterations, why)


def plan_follow_up(
    sweep: Sweep, lost: list[str], flag: Flag, *, refused: bool = False
) -> FollowUp | None:
    """The next job: a resume while pairs are missing and nodes were lost, or connects were
    refused with every node still answering (the pairs they took, on every node), else a
    retest of what the rule flags (once), else nothing."""
    if lost or refused:
        return resume(sweep, lost)
    return retest(sweep, flag)


def sweep_so_far(chain: list[Ended], matrix: str) -> Sweep | None:
    """The sweep (the chain's first job) with the resumes that continued it, read back from
    their files (``matrix``: the file's name in a job's directory); None when there is no
    matrix to continue (the job's record says why) or a retest ran (it ends the follow-ups)."""
    try:
        sweep = Sweep.of(read_matrix_file(chain[0].job_dir / matrix))
        for done in chain[1:]:
            if done.job.params.get("kind") == "retest":
                return None
            sweep.resumes += 1
            sweep.lost = list(done.job.params.get("lost_nodes", sweep.lost))
            sweep.add(read_matrix_file(done.job_dir / matrix))
    except (AssayError, OSError):
        return None
    return sweep


def lost_nodes(last: Ended, ctx: FollowUpContext) -> tuple[list[str], bool] | None:
    """What the last job's end leaves to resume: the nodes lost (the ranks the probe named,
    else the hosts the scheduler finds not answering) and whether connects were refused (no node
    lost: every pair they took is measured again); ([], False) after a job that ended well,
    None after a failure a resume would not fix."""
    if last.result.status in ("ok", "skipped"):
        return [], False
    now = last.hosts
    lost = [now[r] for r in lost_ranks([s.params for s in last.samples]) if r < len(now)]
    refused = ctx.connects_refused(last)
    if refused or not lost:  # a refused connect loses no node; a dead launch: ask
        asked = lost or now
        answering = set(ctx.responsive(asked))
        lost = [h for h in asked if h not in answering]
    if not lost and not refused:
        return None
    return lost, refused
