"""The follow-ups of any job, through its probe's hook (``Probe.follow_up``): after a job's
records are written, its probe says what to run next (a resume after a lost node or refused
connects, a retest of the links it flagged), and the run runs it, here
(``run.execute``) or inside an allocation (``run.runner``), without knowing which probe it is.

The run gives the hook what only the run knows (``FollowUpContext``): which hosts still
answer (the scheduler's), whether a job's MPI could not connect (``launch.connectfail``, with
the likely cause noted), what the user's outlier rule (``[outliers]``) flags, and the notes.
"""

from __future__ import annotations

import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np

from assay.analysis.statistics.outliers import OutlierRule, outlier_rule, outliers_of
from assay.errors import AssayError
from assay.inputfile import read_bounded, read_side_text
from assay.launch import LaunchOutcome
from assay.launch.connectfail import (
    connect_failures,
    describe,
    kernel_clock,
    neighbour_overflows,
    overflowed,
)
from assay.model import Job, JobResult
from assay.probes import get_probe
from assay.probes.base import ASK_FILE, DONE_FILE, PLAN_FILE, Ended, FollowUpContext
from assay.run.configfile import load_config
from assay.store import safefile
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


@dataclass
class Inside:
    """The follow-up of a job planned while the job still runs, for the job to measure it in
    its own launch (``assay.probes.base``: ``ASK_FILE``, ``PLAN_FILE``, ``DONE_FILE``). The
    plan is the probe's hook on the chain so far and the running job as if it ended well (it
    asks only once its own work is written), so the same hook, asked again after the job
    ends, returns the same job: that one is then recorded from what the launch left in its
    directory (``adopts``) instead of launched. ``prepare`` saves a job and its inputs where
    it would run (its directory)."""

    ctx: FollowUpContext
    prepare: Callable[[Job], Path]
    chain: list[Ended] = field(default_factory=list)
    asked: set[str] = field(default_factory=set)  # the jobs answered
    # follow-up's id -> the id of the job whose launch measures it, and the follow-up's directory
    handed: dict[str, tuple[str, Path]] = field(default_factory=dict)
    # follow-up's id -> how it ended inside the launch, and when it began (``split``)
    tails: dict[str, tuple[LaunchOutcome, float]] = field(default_factory=dict)

    def answer(self, job: Job, job_dir: Path) -> None:
        """Called while ``job`` runs: once it asks, write its plan (once)."""
        if job.job_id in self.asked or not (job_dir / ASK_FILE).exists():
            return
        self.asked.add(job.job_id)
        plan = ["none"]
        try:
            plan = self._plan(job, job_dir)
        except (AssayError, OSError) as exc:  # the job ends as it would have; the run goes on
            self.ctx.note(f"{job.job_id}: its follow-up could not be planned inside: {exc}")
        safefile.write_atomic(job_dir / PLAN_FILE, "\n".join(plan) + "\n")

    def _plan(self, job: Job, job_dir: Path) -> list[str]:
        probe = get_probe(job.probe)
        result = JobResult(job_id=job.job_id, status="ok", exit_code=0, wall_time=0.0,
                           argv=list(job.argv))  # fmt: skip
        more = probe.follow_up([*self.chain, Ended(job, result, [], [], job_dir)], self.ctx)
        words = probe.inside(job, more[0]) if len(more) == 1 else None
        if words is None:
            return ["none"]
        where = self.prepare(more[0])
        self.handed[more[0].job_id] = (job.job_id, where)
        return ["run", os.path.relpath(where, job_dir), *words]

    def split(self, job: Job, job_dir: Path, outcome: LaunchOutcome) -> LaunchOutcome:
        """How ``job``'s own part of its launch ended. When the launch went on to measure the
        follow-up handed to it (it made its stdout there), the launch's end is the
        follow-up's, kept for ``adopts``: ``DONE_FILE``'s status and seconds, or, cut short
        (Ctrl-C, the timeout, a crash), the launch's own end from when the plan was written;
        ``job``'s part, finished before the plan, then ended well, those seconds less."""
        for follow, (launch, where) in self.handed.items():
            if launch != job.job_id or not (where / "stdout").exists():
                continue
            try:
                began = (job_dir / PLAN_FILE).stat().st_mtime
            except OSError:  # (removed meanwhile: the follow-up's time is not known)
                began = time.time()
            done = read_done(where / DONE_FILE)
            tail = dataclasses.replace(outcome, wall_time=max(0.0, time.time() - began))
            if done is not None:  # (a stop during the launch's finalize stays a stop)
                tail.exit_code, tail.wall_time, tail.timed_out = done[0], done[1], False
            self.tails[follow] = (tail, began)
            return LaunchOutcome(0, max(0.0, outcome.wall_time - tail.wall_time),
                                 hosts=outcome.hosts)  # fmt: skip
        return outcome

    def holds(self, job: Job) -> bool:
        """Whether ``job`` was measured inside another job's launch, not yet recorded."""
        return job.job_id in self.tails

    def adopts(self, job: Job) -> tuple[LaunchOutcome, float, str] | None:
        """``job`` was measured inside another job's launch: how it ended there, when it
        began (POSIX time) and that launch's job, given once (to record it); None: it gets a
        launch of its own (no plan handed it over, or the launch ended before it began)."""
        if job.job_id not in self.tails:
            return None
        tail, began = self.tails.pop(job.job_id)
        return tail, began, self.handed[job.job_id][0]


RunOne = Callable[[Job, "Inside | None"], "Ended | None"]


def read_done(path: Path) -> tuple[int, float] | None:
    """``DONE_FILE``: the follow-up's exit status and seconds; None when absent or unreadable."""
    try:
        text = read_side_text(path, "follow-up's end", limit=4096)
        words = dict(line.split(None, 1) for line in text.splitlines() if line)
        return int(words["exit"]), float(words["seconds"])
    except (AssayError, OSError, ValueError, KeyError):
        return None


def run_followed(
    job: Job,
    run_one: RunOne,
    ctx: FollowUpContext,
    stopped: Callable[[], bool],
    prepare: Callable[[Job], Path] | None = None,
) -> list[Ended]:
    """``job``, then what its probe's hook returns, until it returns nothing or the run is
    stopping (``stopped``); ``run_one`` runs a job and says how it ended (None: not recorded).
    With ``prepare`` (how a job is saved where it would run), a job whose probe asks gets its
    follow-up planned while it runs, to measure it in the same launch (``Inside``). A skipped
    job has no follow-up. The chain of jobs that ran, in order."""
    run_one = _marked(run_one, ctx.note)
    inside = Inside(ctx, prepare) if prepare else None
    first = run_one(job, inside)
    if first is None:
        return []
    chain = [first]
    if first.result.status == "skipped":
        return chain
    probe = get_probe(job.probe)
    while not stopped() or (inside and inside.tails):
        if inside:
            inside.chain = list(chain)
        more = probe.follow_up(chain, ctx)
        if not more:
            break
        for nxt in more:
            if stopped() and not (inside and inside.holds(nxt)):  # (measured: recorded)
                return chain
            ended = run_one(nxt, inside)
            if ended is None:
                return chain
            chain.append(ended)
    return chain


def _marked(run_one: RunOne, note: Callable[[str], None]) -> RunOne:
    """``run_one`` with the kernel's clock taken before each job (``Ended.since``: dmesg's
    lines after it are the job's, not an earlier run's), and a note when the kernel's
    neighbour table overflowed while a job over several hosts ran -- even when every connect
    went through in the end (Open MPI retries), links measured then may read slow, and a node
    inside a network namespace cannot read the table's limits beforehand."""

    def run(job: Job, inside: Inside | None) -> Ended | None:
        since = kernel_clock(run_command(["dmesg"]) or "")
        ended = run_one(job, inside)
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
