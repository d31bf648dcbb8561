"""The all-pairs matrix in one MPI job: p2p latency and bandwidth of every node pair, the
round-robin tournament run inside the job (native/allpairs.c: method, defaults and exit codes).

One job per MPI, one rank per node. The matrix itself (N(N-1)/2 links) stays in the job's
directory (``allpairs.bin``, read by ``assay.parsers.allpairs_file``); the samples are
N-sized, never N²:

- per node (``summary = "node"``): the node's median link (value) over its links, stats over
  them (n = links of the node measured). ``node`` is the node's host name (``hosts`` = [it],
  not the job's N), ``rank`` its index in the matrix (= its MPI rank; test "nodes" on one
  machine share a host name);
- the whole matrix (``summary = "matrix"``): the median link, stats over every link measured
  (the probe's own summary line).

Both carry ``size`` (the message size of the figure), ``kind`` (sweep, retest, resume),
``node_count``, ``timed_iterations`` and ``warmup`` (per pair; the pilot's choice unless
given), ``pair_budget``, ``concurrent_pairs`` and ``matrix`` (the file, relative to the run),
and the job's params: a follow-up job (a retest, a resume) has ``sweep_job``, the sweep it
continues, by which the report puts their files together (``assay.figures.allpairs_jobs``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path
from typing import Any, Literal

import numpy as np
from pydantic import Field, model_validator

from assay.condensed import link_index, n_links
from assay.errors import ProbeError
from assay.model import Build, Job, MpiInfo, Sample, Stats
from assay.parsers.allpairs_file import COLUMN, MatrixFile, nan_array, node_stats, read_matrix_file
from assay.probes._allpairs_followup import lost_nodes, plan_follow_up, sweep_so_far
from assay.probes.base import (
    Ended,
    FollowUpContext,
    JobDraft,
    PlanContext,
    Probe,
    ProbeParams,
    parse_jsonl,
)

DEFAULT_RANKS = 2  # one machine: two ranks; on a cluster the scheduler gives one per node
MATRIX_FILE = "allpairs.bin"
PAIRS_FILE = "pairs.txt"
PILOT_S = 1.0  # the pilot and the start, about


class AllPairsParams(ProbeParams):
    """The C probe's defaults, stated here too (``--help`` prints the same)."""

    lat_size: int = Field(default=8, ge=0, le=2**31 - 1)  # bytes: one double, flat latency
    bw_size: int = Field(default=131072, ge=1, le=2**31 - 1)  # bytes: the rendezvous path
    window: int = Field(default=64, ge=1, le=65536)  # osu_bw's
    # seconds per pair; from 1 ms bandwidth's 3/4 share holds one default window (64 x 128 KiB)
    # at 100 Gbit/s (0.7 ms); less is refused before anything runs
    pair_budget: float = Field(default=0.1, ge=0.001, le=3600.0)
    # seconds the whole sweep may take when one window does not fit the pair budget (a slow
    # or busy fabric): the pilot grows the budget to fit, or else shrinks the window
    sweep_target: float = Field(default=300.0, ge=0.001, le=1e7)
    pairs_at_once: int = Field(default=0, ge=0, le=100_000)  # 0: a whole round at once
    lat_iterations: int | None = Field(default=None, ge=1)  # None: the pilot sizes them
    bw_iterations: int | None = Field(default=None, ge=1)
    stall_factor: float = Field(default=50.0, ge=1.0)  # x pair budget, at least 2 s
    # ranks whose pairs to measure instead of the tournament (a retest, a resume)
    pairs: list[tuple[int, int]] | None = None
    kind: Literal["sweep", "retest", "resume"] = "sweep"
    first_round: int = Field(default=1, ge=1)
    # ranks sharing cores (one machine, test namespaces): poll with sched_yield (and Open MPI's
    # mpi_yield_when_idle), or busy-polling ranks starve the ones measuring
    yield_when_idle: bool = False

    @model_validator(mode="after")
    def _consistent(self) -> AllPairsParams:
        if (self.lat_iterations is None) != (self.bw_iterations is None):
            raise ValueError("lat_iterations and bw_iterations go together (or neither)")
        if self.pairs is not None and self.kind == "sweep":
            raise ValueError("a list of pairs is a retest or a resume: set kind")
        if self.pairs is None and self.kind != "sweep":
            raise ValueError(f"kind {self.kind!r} needs pairs")
        if self.pairs is not None and any(a == b or min(a, b) < 0 for a, b in self.pairs):
            raise ValueError("pairs: two different ranks each, >= 0")
        return self


def probe_argv(p: AllPairsParams) -> list[str]:
    argv = [
        "--lat-size", str(p.lat_size), "--bw-size", str(p.bw_size),
        "--window", str(p.window), "--pair-budget", repr(p.pair_budget),
        "--sweep-target", repr(p.sweep_target),
        "--pairs-at-once", str(p.pairs_at_once), "--stall-factor", repr(p.stall_factor),
        "--output", MATRIX_FILE,
    ]  # fmt: skip
    if p.lat_iterations is not None and p.bw_iterations is not None:
        argv += ["--lat-iterations", str(p.lat_iterations), "--bw-iterations", str(p.bw_iterations)]
    if p.pairs is not None:
        argv += ["--pairs", PAIRS_FILE, "--kind", p.kind, "--first-round", str(p.first_round)]
    if p.yield_when_idle:
        argv.append("--yield")
    return argv


def rounds_of(nodes: int, pairs: list[tuple[int, int]] | None) -> list[int]:
    """Pairs per round: the tournament's, or the probe's schedule of a list (each pair in the
    earliest round after both its nodes' previous pairs)."""
    if pairs is None:
        return [nodes // 2] * (nodes - 1 + nodes % 2) if nodes >= 2 else []
    next_free: dict[int, int] = {}
    per_round: list[int] = []
    for a, b in pairs:
        r = max(next_free.get(a, 0), next_free.get(b, 0))
        next_free[a] = next_free[b] = r + 1
        per_round += [0] * (r + 1 - len(per_round))
        per_round[r] += 1
    return per_round


def estimate_seconds(nodes: int, p: AllPairsParams) -> float:
    """Rounds x groups of pairs x the pair budget, plus the pilot: what a healthy fabric takes
    (a slow link takes longer, its round waits for it)."""
    k = p.pairs_at_once
    groups = sum(math.ceil(n / k) if k else 1 for n in rounds_of(nodes, p.pairs) if n)
    return PILOT_S + groups * p.pair_budget


class AllPairsProbe(Probe):
    name = "allpairs"
    summary = "MPI all-pairs: p2p latency and bandwidth of every node pair, one job (OSU method)"
    Params = AllPairsParams
    uses_mpi = True
    default_timeout = 3600.0
    # One rank on every node of the allocation: the probe runs the tournament's rounds itself.
    spread_kind = "all-pairs"
    suite = "allpairs"  # what ``assay run SUITE --all-pairs`` runs when SUITE has no matrix

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, AllPairsParams)
        nodes = ranks or DEFAULT_RANKS
        if params.pairs is not None and any(b >= nodes for pair in params.pairs for b in pair):
            raise ProbeError(f"allpairs: pairs name a rank beyond the job's {nodes} ranks")
        inputs = {}
        if params.pairs is not None:
            inputs[PAIRS_FILE] = "".join(f"{a} {b}\n" for a, b in params.pairs)
        env = {"OMPI_MCA_mpi_yield_when_idle": "1"} if params.yield_when_idle else {}
        # a stalled partner ends the job by itself; the timeout is for what the probe cannot
        # see (a rank stuck between its pairs): generous, several times the estimate
        timeout = 120.0 + 5.0 * max(estimate_seconds(nodes, params), params.sweep_target)
        return [
            JobDraft(
                argv=["{exe}", *probe_argv(params)],
                params={"mpi": mpi.name, "mpi_label": mpi.label},
                env=dict(env),
                spawn="mpi",
                mpi=mpi.name,
                ranks=nodes,
                build=Build("allpairs.c", mpi.name, ("-O2",), ("-lm", "-lpthread")),
                label=f"all-pairs {mpi.label}",
                inputs=dict(inputs),
                timeout=timeout,
            )
            for mpi in mpis
        ]

    def pairs_job(
        self, job: Job, pairs: list[tuple[int, int]], kind: str, first_round: int,
        iterations: tuple[int, int], suffix: str, fitted: dict[str, str] | None = None,
    ) -> Job:  # fmt: skip
        """The sweep's job measuring ``pairs`` only (a retest, a resume): its options kept, the
        list, kind, first round and iterations replaced, and ``fitted``: what the sweep's pilot
        chose (``--window``, ``--pair-budget``), so that the figures compare."""
        fitted = fitted or {}
        fixed = ("--pairs", "--kind", "--first-round", "--lat-iterations", "--bw-iterations",
                 *fitted)  # fmt: skip
        argv, skip = [], False
        for a in job.argv:
            if skip:
                skip = False
            elif a in fixed:
                skip = True
            else:
                argv.append(a)
        lat, bw = iterations
        argv += [word for option, value in fitted.items() for word in (option, value)]
        argv += ["--lat-iterations", str(lat), "--bw-iterations", str(bw), "--pairs",
                 PAIRS_FILE, "--kind", kind, "--first-round", str(first_round)]  # fmt: skip
        params = AllPairsParams.model_construct(
            pair_budget=float(argv[argv.index("--pair-budget") + 1]),
            pairs_at_once=int(argv[argv.index("--pairs-at-once") + 1]), pairs=pairs,
        )  # fmt: skip
        nodes = 1 + max(max(p) for p in pairs) if pairs else 2
        return dataclasses.replace(
            job,
            job_id=f"{job.job_id}-{suffix}",
            argv=argv,
            params={**job.params, "kind": kind, "sweep_job": job.job_id},
            env=dict(job.env),
            inputs={**job.inputs, PAIRS_FILE: "".join(f"{a} {b}\n" for a, b in pairs)},
            timeout=120.0 + 5.0 * estimate_seconds(nodes, params),
        )

    def follow_up(self, chain: list[Ended], ctx: FollowUpContext) -> list[Job]:
        """A resume after a lost node or refused connects, else a retest of what the user's
        outlier rule flags, once (``assay.probes._allpairs_followup``); the jobs run on the
        same allocation, each a job of its own naming its sweep (``sweep_job``)."""
        sweep = sweep_so_far(chain, MATRIX_FILE)
        gone = lost_nodes(chain[-1], ctx) if sweep is not None else None
        if sweep is None or gone is None:
            return []
        lost, refused = gone
        follow = plan_follow_up(sweep, lost, ctx.flag, refused=refused and not lost)
        if follow is None:
            return []
        origin = chain[0].job
        suffix = f"{follow.kind}{len(chain)}"  # resume1, retest2: the follow-ups numbered
        nxt = self.pairs_job(origin, follow.pairs, follow.kind, follow.first_round,
                             follow.iterations, suffix, sweep.fitted)  # fmt: skip
        # a rank per host; the hosts of ranks on one machine (a local run) are one node
        nxt.ranks, nxt.nodes = len(follow.hosts), len(set(follow.hosts))
        nxt.params["hosts"] = list(follow.hosts)
        if sweep.lost:
            nxt.params["lost_nodes"] = list(sweep.lost)
        ctx.note(f"{origin.job_id}: {follow.why} ({nxt.job_id})")
        return [nxt]

    def asks(self, job: Job) -> list[str]:
        """A sweep or a resume asks for its retest (the runner's rule flags the links from
        the finished file), and measures it in its own launch: at 64 nodes here a launch
        (the launcher, MPI_Init) was 9-10 s of a retest's 16. It waits for the plan at most
        30 s, and 10 ms a node more (the runner reads N²/2 links first)."""
        if job.params.get("kind", "sweep") == "retest":
            return []
        return ["--ask-follow-up", f"{30.0 + 0.01 * job.ranks:g}"]

    def inside(self, job: Job, nxt: Job) -> list[str] | None:
        """A retest on the running job's ranks, in its rank order (a retest keeps every node
        the sweep or resume did not lose, in the sweep's order) and with its build, expected
        to take at most a minute more than the job itself (whose timeout, 120 s + 5 times
        its own estimate, then still covers both)."""
        same = (nxt.params.get("kind") == "retest" and nxt.probe == job.probe
                and nxt.build == job.build and nxt.mpi == job.mpi
                and (nxt.ranks, nxt.nodes) == (job.ranks, job.nodes))  # fmt: skip
        named = job.params.get("hosts")
        if not same or (isinstance(named, list) and named != nxt.params.get("hosts", named)):
            return None
        own, more = self.expected_seconds(job), self.expected_seconds(nxt)
        if own is None or more is None or more > own + 60.0:
            return None  # a long retest keeps a launch, and a timeout, of its own
        return nxt.argv[1:]

    def expected_seconds(self, job: Job) -> float | None:
        """From the job's command line and its pairs file, as the probe will run it."""
        argv = job.argv
        try:
            budget = float(argv[argv.index("--pair-budget") + 1])
            at_once = int(argv[argv.index("--pairs-at-once") + 1])
            listed = job.inputs.get(PAIRS_FILE)
            pairs = None
            if listed is not None:
                pairs = [(int(a), int(b)) for a, b in (ln.split() for ln in listed.splitlines())]
        except (ValueError, IndexError):
            return None
        params = AllPairsParams.model_construct(
            pair_budget=budget, pairs_at_once=at_once, pairs=pairs
        )
        return estimate_seconds(job.ranks, params)

    def left_behind(self, job: Job, job_dir: Path) -> list[Sample]:
        """A job stopped before its summary (a node died, a rank hung): the rounds its file
        holds, as the samples a finished job gives, each saying it is ``partial``."""
        path = job_dir / MATRIX_FILE
        if not path.exists():
            return []
        matrix = read_matrix_file(path)
        kind = str(job.params.get("kind", "sweep"))
        lines = summary_lines(matrix, kind) if matrix.rounds else ""
        return self.parse(lines, job, job_dir=job_dir) if lines else []

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        """The probe's summary lines, and, from the matrix file in ``job_dir``, a sample per
        node and metric."""
        summary = parse_jsonl(stdout, self.name, job.params)
        if job_dir is None:
            return summary
        path = job_dir / MATRIX_FILE
        if not path.exists():
            raise ProbeError(f"allpairs: {path} is missing: the probe wrote no matrix")
        matrix = read_matrix_file(path)
        # the run's layout is <run>/jobs/<job id>/: the path a report opens from the run
        rel = f"{job_dir.parent.name}/{job_dir.name}/{MATRIX_FILE}"
        for s in summary:
            s.params["matrix"] = rel
        return summary + per_node(matrix, summary)


def summary_lines(matrix: MatrixFile, kind: str) -> str:
    """The probe's two summary lines (the whole matrix, per metric) made from its file: what
    a job stopped before it printed them measured, in the same words, ``partial`` saying where
    it stopped."""
    lines = []
    for metric, size in (("p2p.latency", matrix.lat_size), ("p2p.bandwidth", matrix.bw_size)):
        values = _links(matrix, metric, kind)
        values = values[np.isfinite(values)].astype(np.float64)
        if not values.size:
            continue
        last = matrix.rounds[-1] if matrix.rounds else None
        stats = {
            "n": int(values.size), "min": float(values.min()), "max": float(values.max()),
            "mean": float(values.mean()), "median": float(np.median(values)),
            "stddev": float(values.std(ddof=1)) if values.size > 1 else 0.0,
        }  # fmt: skip
        params: dict[str, Any] = {
            "size": size, "summary": "matrix", "kind": kind, "node_count": matrix.n,
            "rounds": len(matrix.rounds), "pair_budget": matrix.pair_budget_s,
            "matrix": MATRIX_FILE, "partial": matrix.note or "the job printed no summary",
        }  # fmt: skip
        if last is not None:
            params["timed_iterations"] = (
                last.lat_iterations if metric == "p2p.latency" else last.bw_iterations
            )
        if metric == "p2p.bandwidth":
            params["window"] = matrix.window
        lines.append(json.dumps({"metric": metric, "value": stats["median"], "params": params,
                                 "stats": stats}))  # fmt: skip
    return "\n".join(lines)


def _links(matrix: MatrixFile, metric: str, kind: str) -> np.ndarray:
    """The links this job measured: a retest's own records, else the sweep/resume matrix."""
    if kind != "retest":
        return matrix.column(metric)
    values = nan_array(n_links(matrix.n))
    rec = matrix.retests
    values[link_index(matrix.n, rec["a"], rec["b"])] = rec[COLUMN[metric]]  # a later retest wins
    return values


def per_node(matrix: MatrixFile, summary: list[Sample]) -> list[Sample]:
    """Each node's median link, per metric (numpy over blocks of nodes, nothing per link)."""
    out: list[Sample] = []
    for whole in summary:
        if whole.params.get("summary") != "matrix":
            continue
        values = _links(matrix, whole.metric, str(whole.params.get("kind", "sweep")))
        st = node_stats(values, matrix.n)
        for i in np.flatnonzero(st.count > 0).tolist():
            stats = Stats(
                n=int(st.count[i]), min=float(st.min[i]), max=float(st.max[i]),
                mean=float(st.mean[i]), median=float(st.median[i]), stddev=float(st.stddev[i]),
            )  # fmt: skip
            # ``hosts``: the node's own, not the job's N (N samples of N names would be N²)
            host = matrix.hosts[i]
            params: dict[str, Any] = {
                **whole.params, "summary": "node", "node": host, "rank": i, "hosts": [host]
            }  # fmt: skip
            out.append(Sample.make(whole.probe, whole.metric, float(st.median[i]), params, stats,
                                   whole.unit))  # fmt: skip
    return out
