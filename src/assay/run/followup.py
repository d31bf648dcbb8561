"""The follow-ups of any job, through its probe's hook (``Probe.follow_up``): after a job's
records are written, its probe says what to run next (a resume after a lost node or refused
connects, a retest of the links it flagged), and the run runs it, here
(``run.execute``) or inside an allocation (``run.runner``), without knowing which probe it is.

The run gives the hook what only the run knows (``FollowUpContext``): which hosts still
answer (the scheduler's), whether a job's MPI could not connect (``launch.connectfail``, with
the likely cause noted), what the user's outlier rule (``[outliers]``) flags, and the notes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import numpy as np

from assay.analysis.statistics.outliers import OutlierRule, outlier_rule, outliers_of
from assay.errors import AssayError
from assay.inputfile import read_bounded
from assay.launch.connectfail import (
    connect_failures,
    describe,
    kernel_clock,
    neighbour_overflows,
    overflowed,
)
from assay.model import Job
from assay.probes import get_probe
from assay.probes.base import Ended, FollowUpContext
from assay.run.configfile import load_config
from assay.system._context import Context, run_command
from assay.system.fabric import Run, fabric_limits, shortfalls

STDERR_LIMIT = 16 << 20  # bytes of a job's stderr read for the libraries' words


def user_rule() -> OutlierRule:
    """The outlier rule of the user's config (``[outliers]``), the default when it is bad:
    a config error must not stop a run that is under way (the command checked it)."""
    try:
        return outlier_rule(load_config())
    except AssayError:
        return OutlierRule()


def flagger(rule: OutlierRule) -> Callable[[np.ndarray, Literal["higher", "lower"]], np.ndarray]:
    """The rule on links (or nodes' median links): the indices it calls out."""

    def flag(values: np.ndarray, better: Literal["higher", "lower"]) -> np.ndarray:
        return outliers_of(values, better, rule.threshold, min_factor=rule.link_factor)[1]

    return flag


def connects_refused(note: Callable[[str], None]) -> Callable[[Ended], bool]:
    """Whether an ended job's MPI could not connect (``assay.launch.connectfail``): noted with
    the likely cause (the kernel's neighbour table, a fabric limit of this node) when it did."""

    def refused(ended: Ended) -> bool:
        try:
            stderr = read_bounded(ended.job_dir / "stderr", STDERR_LIMIT, "stderr")
        except (AssayError, OSError):
            return False
        failures = connect_failures(stderr.decode(errors="replace"))
        if not failures:
            return False
        job = ended.job
        run = Run(len(ended.hosts), shared_kernel=bool(job.params.get("shared_kernel")))
        limits = [s.message(run) for s in shortfalls(fabric_limits(Context()) or {}, run)]
        overflows = neighbour_overflows(run_command(["dmesg"]) or "", since=ended.since)
        note(f"{job.job_id}: {describe(failures, overflows, limits)}")
        return True

    return refused


def context(
    note: Callable[[str], None], responsive: Callable[[list[str]], list[str]] | None = None
) -> FollowUpContext:
    """What the hook may ask of this run: ``responsive`` the scheduler's (default: every host
    answers, as this node does)."""
    return FollowUpContext(
        flag=flagger(user_rule()),
        responsive=responsive or list,
        connects_refused=connects_refused(note),
        note=note,
    )


def run_followed(
    job: Job,
    run_one: Callable[[Job], Ended | None],
    ctx: FollowUpContext,
    stopped: Callable[[], bool],
) -> list[Ended]:
    """``job``, then what its probe's hook returns, until it returns nothing or the run is
    stopping (``stopped``); ``run_one`` runs a job and says how it ended (None: not recorded).
    A skipped job has no follow-up. The chain of jobs that ran, in order."""
    run_one = _marked(run_one, ctx.note)
    first = run_one(job)
    if first is None:
        return []
    chain = [first]
    if first.result.status == "skipped":
        return chain
    probe = get_probe(job.probe)
    while not stopped():
        more = probe.follow_up(chain, ctx)
        if not more:
            break
        for nxt in more:
            if stopped():
                return chain
            ended = run_one(nxt)
            if ended is None:
                return chain
            chain.append(ended)
    return chain


def _marked(run_one: Callable[[Job], Ended | None], note: Callable[[str], None]):
    """``run_one`` with the kernel's clock taken before each job (``Ended.since``: dmesg's
    lines after it are the job's, not an earlier run's), and a note when the kernel's
    neighbour table overflowed while a job over several hosts ran -- even when every connect
    went through in the end (Open MPI retries), links measured then may read slow, and a node
    inside a network namespace cannot read the table's limits beforehand."""

    def run(job: Job) -> Ended | None:
        since = kernel_clock(run_command(["dmesg"]) or "")
        ended = run_one(job)
        if ended is None:
            return None
        ended.since = since
        if len(set(ended.hosts)) > 1:
            overflows = neighbour_overflows(run_command(["dmesg"]) or "", since=since)
            if overflows:
                run = Run(
                    len(set(ended.hosts)), shared_kernel=bool(job.params.get("shared_kernel"))
                )
                note(f"{job.job_id}: {overflowed(overflows, run)}")
        return ended

    return run
