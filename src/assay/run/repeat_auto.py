"""``assay run --repeat auto``: repeat each job until its figures are known to ±2%.

Each planned job runs as repetition 1, 2, 3, … (job ids ``…-r1``, ``…-r2``; samples carry
``params["repetition"]`` like ``--repeat N``'s, so reports fold them the same way). After at
least ``MIN_REPS`` repetitions, the job stops when, for **every** figure it measures, the 95%
confidence interval of the mean over repetitions, t_{0.975, n−1}·s/√n, is within ``TARGET``
(±2%) of that mean — the strictest reading of "its headline figure", and the figure that held it
back is reported. It also stops at ``MAX_REPS``, when the next repetition would pass the job's
time budget (``BUDGET_S``, counted from its first start), or when a repetition does not succeed.
Every repetition is stored as it finishes, exactly as in a fixed-count run. After the last
repetition its probe's follow-ups run once, as after any job (``assay.run.followup``: the
all-pairs retest of the links the last repetition flagged, ``…-rK-retest1``).
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import time
from collections.abc import Callable
from dataclasses import dataclass

from assay.analysis.statistics.significance import mean_ci_halfwidth
from assay.analysis.statistics.stats import group_key
from assay.errors import StoreError
from assay.model import Job, JobResult, MpiInfo, Sample
from assay.probes.base import Ended
from assay.run import followup
from assay.run.execute import (
    RunOutcome,
    StepArgv,
    TickHook,
    finish_run,
    resolver,
    run_hooked,
    stop_received,
    stop_signals,
    stopping,
)
from assay.store.rundir import RunWriter

TARGET = 0.02
BUDGET_S = 60.0
MIN_REPS = 3
MAX_REPS = 30


@dataclass(frozen=True)
class AutoResult:
    job_id: str
    repetitions: int
    converged: bool
    widest: float | None  # the largest relative CI half-width among the job's figures
    limiting: str  # the figure with that width
    reason: str  # why it stopped


def widest_interval(repetitions: list[list[Sample]]) -> tuple[float | None, str]:
    """(largest relative CI half-width over the job's figures, which figure), pure."""
    groups: dict[tuple, list[Sample]] = {}
    for samples in repetitions:
        for s in samples:
            groups.setdefault(group_key(s), []).append(s)
    worst: float | None = None
    label = ""
    for members in groups.values():
        values = [m.value for m in members]
        half = mean_ci_halfwidth(values)
        mean = sum(values) / len(values)
        if half is None or mean == 0:
            continue
        rel = half / abs(mean)
        if worst is None or rel > worst:
            first = members[0]
            shown = ", ".join(
                f"{k}={v}"
                for k, v in first.params.items()
                if k in ("size", "mpi", "threads", "scope")
            )
            worst, label = rel, f"{first.metric}" + (f" ({shown})" if shown else "")
    return worst, label


def execute_auto(*args, **kwargs) -> tuple[RunOutcome, list[AutoResult]]:
    """``_execute_auto`` with SIGTERM and SIGHUP stopping the run as Ctrl-C does."""
    with stop_signals():
        return _execute_auto(*args, **kwargs)


def _execute_auto(
    writer: RunWriter,
    jobs: list[Job],
    mpis: list[MpiInfo],
    *,
    cores: int | None = None,
    step_argv: StepArgv | None = None,
    on_start: Callable[[int, int, Job], None] | None = None,
    on_end: Callable[[int, int, Job, JobResult], None] | None = None,
    on_tick: TickHook | None = None,
    target: float = TARGET,
    budget_s: float = BUDGET_S,
    min_reps: int = MIN_REPS,
    max_reps: int = MAX_REPS,
) -> tuple[RunOutcome, list[AutoResult]]:
    """Run each job until its figures are within ``target`` (see the module docstring), then
    what its probe leaves to run after the last repetition (``assay.run.followup``: the
    all-pairs retest of the links it flagged), once."""
    outcome = RunOutcome(info=writer.info)
    cores = cores or os.cpu_count()
    resolve = resolver(step_argv, mpis) if step_argv else None
    report: list[AutoResult] = []
    ctx = followup.context(writer.note)
    rule = _Rule(target, budget_s, min_reps, max_reps)
    status = "complete"
    try:
        for i, job in enumerate(jobs, start=1):
            # (no follow-up inside a launch here: the planned job runs several times)
            def run_one(one: Job, _inside, planned: Job = job, position=(i, len(jobs))) -> Ended:
                def hooked(j: Job) -> tuple[JobResult, list[Sample]]:
                    return run_hooked(writer, j, mpis, cores, outcome, position, on_start, on_end,
                                      on_tick, resolve)  # fmt: skip

                if one is planned:  # its repetitions; the chain follows the last one
                    one, result, samples, auto = _repetitions(one, rule, hooked)
                    report.append(auto)
                else:  # a follow-up: once
                    result, samples = hooked(one)
                return Ended(one, result, samples, result.hosts, writer.job_dir(one))

            followup.run_followed(job, run_one, ctx, stopping(writer, outcome))
            if outcome.results[-1].status == "interrupted":
                status = "interrupted"
                outcome.stop_signal = stop_received()
                break
    except KeyboardInterrupt as exc:
        status = "interrupted"
        outcome.stop_signal = getattr(exc, "signum", 2)  # 2: SIGINT (Ctrl-C)
    except StoreError:
        with contextlib.suppress(StoreError):
            writer.finish("failed")
        raise
    finish_run(writer, outcome, status)  # a stopped run names the job cut short
    return outcome, report


@dataclass(frozen=True)
class _Rule:
    target: float
    budget_s: float
    min_reps: int
    max_reps: int


def _repetitions(
    job: Job,
    rule: _Rule,
    run: Callable[[Job], tuple[JobResult, list[Sample]]],
) -> tuple[Job, JobResult, list[Sample], AutoResult]:
    """``job`` as repetition 1, 2, ... until ``rule`` stops it: the last repetition run (its
    result and samples), and why it stopped."""
    reps: list[list[Sample]] = []
    started = time.monotonic()
    reason, width, limiting, converged = "", None, "", False
    while True:
        k = len(reps) + 1
        rep = dataclasses.replace(
            job, job_id=f"{job.job_id}-r{k}", params={**job.params, "repetition": k},
            repetition=k,
        )  # fmt: skip
        result, samples = run(rep)
        if result.status != "ok":
            reason = f"repetition {k} {result.status}"
            break
        reps.append(samples)
        width, limiting = widest_interval(reps)
        if k >= rule.min_reps and width is not None and width <= rule.target:
            converged, reason = True, f"within ±{rule.target:.0%}"
            break
        if k >= rule.max_reps:
            reason = f"{rule.max_reps} repetitions"
            break
        elapsed = time.monotonic() - started
        if elapsed + elapsed / k > rule.budget_s:  # the next one would not fit
            reason = f"time budget {rule.budget_s:g} s"
            break
    return rep, result, samples, AutoResult(job.job_id, len(reps), converged, width, limiting,
                                            reason)  # fmt: skip
