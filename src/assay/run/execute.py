"""Carry out a planned run: build, launch, parse and store each job, one after the other.

Side effects live here and in the CLI. Every job's outcome is written the moment it ends, so a
crash, a timeout, Ctrl-C or a SIGKILL of assay loses at most the job in flight.

Stopping: SIGTERM (``timeout``, ``scancel``, ``kill``) and SIGHUP (the terminal closed) stop a
run exactly as Ctrl-C does: the job in flight is ended with its whole process tree and recorded
"interrupted", every finished job is kept, the run is marked "interrupted" and names the job
cut short; the CLI then exits 128 + the signal (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP). A signal
that arrives while a job's records are being written waits until they are written.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from assay.errors import AssayError, StoreError
from assay.launch import LaunchOutcome, run_process
from assay.launch.registry import here
from assay.model import Job, JobResult, MpiInfo, RunInfo, Sample
from assay.probes import get_probe
from assay.probes.base import Ended
from assay.run.outputs import parse_each_node, read_output, read_stderr, stderr_tail
from assay.run.stopsignals import STOP, stop_reason, stop_received, stop_signals
from assay.store import RunWriter, safefile
from assay.store.rundir import utc_at, utc_now
from assay.toolchain import build_probe

if TYPE_CHECKING:  # (imported when a run starts: its outlier rule's numpy)
    from assay.run.followup import Inside

ENOSPC_TEXT = "No space left on device"


@dataclass
class RunOutcome:
    info: RunInfo
    results: list[JobResult] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    stop_signal: int = 0  # the signal that stopped the run, 0 when none did

    @property
    def failed(self) -> list[JobResult]:
        """Jobs that did not succeed; a skip (nothing to measure here) is not a failure."""
        return [r for r in self.results if r.status not in ("ok", "skipped")]


JobHook = Callable[[int, int, Job], None]
ResultHook = Callable[[int, int, Job, JobResult], None]
# Called about every TICK_S seconds while a job runs, with the seconds it has run so far.
TickHook = Callable[[Job, float], None]
TICK_S = 1.0
# How often a job that may ask for its follow-up is looked at: its launch waits for the answer.
ASK_TICK_S = 0.1


@dataclass(frozen=True)
class Expected:
    """How long a job should take, and whence: "estimate" (its probe's) or "timeout"."""

    seconds: float
    source: str


def expected_duration(job: Job) -> Expected:
    """The probe's own estimate of the job's duration where it has one, else the job's timeout
    (an upper bound, not an expectation: the progress line says which)."""
    try:
        est = get_probe(job.probe).expected_seconds(job)
    except (AssayError, LookupError, ValueError):  # an unknown probe, an odd argv: no estimate
        est = None
    if est is not None and est > 0:
        return Expected(float(est), "estimate")
    return Expected(float(job.timeout), "timeout")


StepArgv = Callable[[Job, list[str], list[str], MpiInfo | None], list[str]]
Resolve = Callable[[Job, str | None], list[str]]


def resolver(step_argv: StepArgv, mpis: list[MpiInfo], hosts: list[str] | None = None) -> Resolve:
    """A job's command: ``{exe}`` replaced by the built probe, put on ``hosts`` by a scheduler's
    ``step_argv``; an MPI job whose MPI is not here is an error naming it."""
    by_name = {m.name: m for m in mpis}

    def resolve(job: Job, exe: str | None) -> list[str]:
        argv = [exe if a == "{exe}" and exe else a for a in job.argv]
        mpi = by_name.get(job.mpi or "")
        if job.spawn == "mpi" and mpi is None:
            raise AssayError(f"job {job.job_id}: MPI {job.mpi!r} is not available")
        return step_argv(job, argv, hosts or [], mpi)

    return resolve


def local_resolver(mpis: list[MpiInfo], cores: int | None) -> Resolve:
    """This node's commands (the local scheduler's)."""
    return resolver(here(cores).step_argv, mpis)


def _concurrent(writer: RunWriter) -> dict[str, str]:
    """Other measuring runs on this node now: run id -> owner."""
    return {rid: owner.describe() for rid, owner in writer.others_running()}


def _enospc(writer: RunWriter, job_dir, texts: list[str]) -> str:
    """Why a job's output may be cut short by a full disk, or '' when it was not."""
    if writer.out_of_space() or any(ENOSPC_TEXT in t for t in texts):
        return (
            f"the disk holding the run directory is full (ENOSPC, {ENOSPC_TEXT}): "
            f"the job's output in {job_dir} was cut short; "
        )
    return ""


def _samples_of(job: Job, job_dir: Path, stdout: str) -> tuple[list[Sample], str]:
    """The samples of a job's output, and the parser's error ("" when none)."""
    try:
        if job.placement is not None and job.placement.each:
            return parse_each_node(job, job_dir)
        if stdout.strip():
            return get_probe(job.probe).parse(stdout, job, job_dir=job_dir), ""
        # it printed nothing: what it wrote as it went, if anything
        return get_probe(job.probe).left_behind(job, job_dir), ""
    except AssayError as exc:
        return [], str(exc)


def run_job(
    writer: RunWriter,
    job: Job,
    mpis: list[MpiInfo],
    cores: int | None,
    resolve: Resolve | None = None,
    on_tick: TickHook | None = None,
    inside: Inside | None = None,
) -> tuple[JobResult, list[Sample]]:
    """One job from build to stored samples. Never raises for a probe's own failure.

    ``resolve`` gives the job's command (default: the local scheduler's; the runner's put it on
    the allocation's hosts);
    ``on_tick(job, elapsed_s)`` is called about every ``TICK_S`` s while the job runs;
    ``inside``: the run answers a job that asks for its follow-up while it runs, and a
    follow-up measured inside another job's launch is recorded from what it left
    (``assay.run.followup.Inside``).
    """
    job_dir = writer.job_dir(job)
    rel = job_dir.relative_to(writer.path)
    result = JobResult(
        job_id=job.job_id,
        status="failed",
        exit_code=None,
        wall_time=0.0,
        argv=list(job.argv),
        stdout_path=str(rel / "stdout"),
        stderr_path=str(rel / "stderr"),
        started=utc_now(),
    )
    if job.skip_reason:
        result.status, result.reason = "skipped", job.skip_reason
        with STOP.deferred():
            writer.save_job(job, list(job.argv))
            writer.record(result, [])
        return result, []
    adopted = inside.adopts(job) if inside else None
    if adopted is not None:
        return _adopted(writer, job, result, adopted)
    try:
        exe = str(build_probe(job.build, mpis)) if job.build else None
        asks = get_probe(job.probe).asks(job) if inside else []
        argv = (resolve or local_resolver(mpis, cores))(replace(job, argv=[*job.argv, *asks]), exe)
    except AssayError as exc:
        result.reason = f"build failed: {exc}"
        with STOP.deferred():
            writer.save_job(job, list(job.argv))
            writer.record(result, [])
        return result, []
    result.argv = argv
    with STOP.deferred():
        prepared(writer, job, argv)
    others = _concurrent(writer)
    tick, tick_s = _ticks(job, job_dir, on_tick, inside if asks else None)
    try:
        outcome = run_process(
            argv,
            env=job.env,
            timeout=job.timeout,
            stdout_path=job_dir / "stdout",
            stderr_path=job_dir / "stderr",
            cwd=job_dir,  # whatever else a probe writes (raw tool output, plots) stays with the run
            on_tick=tick,
            tick_s=tick_s,
        )
    except AssayError as exc:  # the program could not even start: this job fails, the run goes on
        result.reason = str(exc)
        with STOP.deferred():
            writer.record(result, [])
        return result, []
    others.update(_concurrent(writer))  # a run that started while this job ran shares it too
    if inside is not None:  # the launch's end may be a follow-up's it measured after this job
        outcome = inside.split(job, job_dir, outcome)
    return _finish(writer, job, job_dir, result, outcome, others)


def prepared(writer: RunWriter, job: Job, argv: list[str] | None = None) -> Path:
    """``job`` saved in its directory with its inputs (``argv``: its resolved command), as
    before a launch; the directory."""
    job_dir = writer.save_job(job, list(job.argv) if argv is None else argv)
    for name, text in job.inputs.items():
        safefile.write_atomic(job_dir / name, text)
    return job_dir


def _ticks(
    job: Job, job_dir: Path, on_tick: TickHook | None, inside: Inside | None
) -> tuple[Callable[[float], None] | None, float]:
    """What runs between waits on the job, and how often: the progress hook every ``TICK_S``
    s, and for a job that asks for its follow-up a look for its question every
    ``ASK_TICK_S`` s (the whole launch waits for the answer)."""
    if inside is None:
        return ((lambda elapsed: on_tick(job, elapsed)) if on_tick else None), TICK_S
    said = [0.0]

    def tick(elapsed: float) -> None:
        inside.answer(job, job_dir)
        if on_tick and elapsed - said[0] >= TICK_S:
            said[0] = elapsed
            on_tick(job, elapsed)

    return tick, ASK_TICK_S


def _adopted(
    writer: RunWriter, job: Job, result: JobResult, adopted: tuple[LaunchOutcome, float, str]
) -> tuple[JobResult, list[Sample]]:
    """A follow-up that another job's launch measured (``Inside``): recorded from the files it
    left in its directory, as if launched, with how and when it ended there."""
    outcome, began, launch = adopted
    result.started = utc_at(began)
    writer.note(f"{job.job_id} was measured inside the launch of {launch} (a launch saved)")
    return _finish(writer, job, writer.job_dir(job), result, outcome, _concurrent(writer))


def _finish(
    writer: RunWriter,
    job: Job,
    job_dir: Path,
    result: JobResult,
    outcome: LaunchOutcome,
    others: dict[str, str],
) -> tuple[JobResult, list[Sample]]:
    """The launch's outcome and the job's output read, judged and recorded."""
    result.exit_code, result.wall_time, result.hosts = (
        outcome.exit_code,
        round(outcome.wall_time, 3),
        outcome.hosts,
    )
    result_file = job_dir / (job.output_file or "stdout")
    stderr = read_stderr(job_dir / "stderr")
    tail = stderr_tail(stderr, job.probe)
    samples: list[Sample] = []
    try:
        stdout = read_output(result_file)
    except (OSError, AssayError) as exc:  # larger than any tool's output, or not a file
        stdout, parse_error = "", str(exc)
    else:
        samples, parse_error = _samples_of(job, job_dir, stdout)
    if outcome.interrupted:
        result.status, result.reason = "interrupted", stop_reason(outcome.stop_signal)
    elif outcome.timed_out:
        result.status = "timeout"
        result.reason = f"killed after its {job.timeout:g} s timeout"
    elif outcome.exit_code != 0:
        result.reason = f"exit code {outcome.exit_code}"
    elif parse_error:
        result.reason = parse_error
    elif not samples:
        result.reason = "printed no measurement"
    else:
        result.status = "ok"
    if result.status != "ok":
        full = _enospc(writer, job_dir, [stderr, stdout[-4096:]])
        if full:
            writer.disk_full = True  # the run cannot go on: stop after recording this job
            result.reason = full + result.reason
        if samples:
            result.reason += f" ({len(samples)} points measured before it stopped are kept)"
        if parse_error and parse_error not in result.reason and not outcome.interrupted:
            # (a stopped MPI job's output ends in its launcher's banner: not worth a word)
            result.reason += f"; {parse_error}"
        if tail:
            result.reason += f"\n{tail}"
    if others:
        shared = ", ".join(f"{rid} ({who})" for rid, who in sorted(others.items()))
        writer.note(f"job {job.job_id} shared this node with run(s) {shared}: lower figures")
        for s in samples:
            s.params["concurrent_runs"] = ",".join(sorted(others))
    result.n_samples = len(samples)
    with STOP.deferred():
        writer.record(result, samples)
    return result, samples


def _record_cut_short(writer: RunWriter, job: Job, signum: int) -> JobResult:
    """The job in flight when a stop came outside its launch (building, say): recorded too."""
    rel = writer.job_dir(job).relative_to(writer.path)
    result = JobResult(
        job_id=job.job_id, status="interrupted", exit_code=None, wall_time=0.0,
        argv=list(job.argv), stdout_path=str(rel / "stdout"), stderr_path=str(rel / "stderr"),
        reason=f"{stop_reason(signum)} before it ran", started=utc_now(),
    )  # fmt: skip
    with STOP.deferred():
        writer.record(result, [])
    return result


def run_hooked(
    writer: RunWriter,
    job: Job,
    mpis: list[MpiInfo],
    cores: int | None,
    outcome: RunOutcome,
    position: tuple[int, int],
    on_start: JobHook | None,
    on_end: ResultHook | None,
    on_tick: TickHook | None,
    resolve: Resolve | None = None,
    inside: Inside | None = None,
) -> tuple[JobResult, list[Sample]]:
    """One job between its progress hooks (``position``: its number and the count), its
    result and samples added to ``outcome`` (and returned)."""
    if on_start:
        on_start(*position, job)
    result, samples = run_job(writer, job, mpis, cores, resolve, on_tick, inside)
    outcome.results.append(result)
    outcome.samples.extend(samples)
    if on_end:
        on_end(*position, job, result)
    return result, samples


def stopping(writer: RunWriter, outcome: RunOutcome) -> Callable[[], bool]:
    """Whether the run is stopping, asked between a job and its follow-ups: the disk is full,
    or the last job was cut short (Ctrl-C, SIGTERM)."""
    return lambda: writer.disk_full or outcome.results[-1].status == "interrupted"


def execute(
    writer: RunWriter,
    jobs: list[Job],
    mpis: list[MpiInfo],
    *,
    cores: int | None = None,
    step_argv: StepArgv | None = None,
    on_start: JobHook | None = None,
    on_end: ResultHook | None = None,
    on_tick: TickHook | None = None,
) -> RunOutcome:
    """Run ``jobs`` in order, each followed by what its probe's hook leaves to run
    (``assay.run.followup``: a retest of what it flagged, say); the run ends "complete",
    "interrupted" or "failed" (disk full). ``step_argv``: the scheduler's (default: the local
    one's). The hooks report progress: a job's start, a tick while it runs, its end (a
    follow-up shows as the planned job it follows)."""
    from assay.run import followup  # the outlier rule's numpy: not imported by a run refused

    outcome = RunOutcome(info=writer.info)
    cores = cores or os.cpu_count()
    resolve = resolver(step_argv, mpis) if step_argv else None
    ctx = followup.context(writer.note)
    status = "complete"
    with stop_signals():
        in_flight: Job | None = None
        position = (0, len(jobs))

        def run_one(one: Job, inside: Inside | None) -> Ended:
            nonlocal in_flight
            in_flight = one
            result, samples = run_hooked(writer, one, mpis, cores, outcome, position, on_start,
                                         on_end, on_tick, resolve, inside)  # fmt: skip
            return Ended(one, result, samples, result.hosts, writer.job_dir(one))

        try:
            for i, job in enumerate(jobs, start=1):
                position = (i, len(jobs))
                # the job, then what its probe leaves to run (its follow-ups)
                chain = followup.run_followed(job, run_one, ctx, stopping(writer, outcome),
                                              lambda j: prepared(writer, j))  # fmt: skip
                if any(e.result.status == "interrupted" for e in chain):
                    outcome.stop_signal = stop_received()
                    status = "interrupted"
                    break
                if writer.disk_full:
                    raise _disk_full(writer, job, len(jobs) - i)
            in_flight = None
        except KeyboardInterrupt as exc:
            status = "interrupted"
            outcome.stop_signal = getattr(exc, "signum", signal.SIGINT)
            done = {r.job_id for r in outcome.results}
            if in_flight is not None and in_flight.job_id not in done:
                # stopped while building, or just as its records were written
                recorded = writer.recorded.get(in_flight.job_id)
                with contextlib.suppress(StoreError):
                    recorded = recorded or _record_cut_short(writer, in_flight, outcome.stop_signal)
                if recorded:
                    outcome.results.append(recorded)
        except StoreError:
            # The run directory cannot take more (a full disk): what was recorded stays
            # readable; mark the run failed (the reserve makes room for it), and tell the user.
            with contextlib.suppress(StoreError), STOP.deferred():
                writer.finish("failed")
            raise
        done = {r.job_id for r in outcome.results}
        finish_run(writer, outcome, status, sum(j.job_id not in done for j in jobs))
    return outcome


def finish_run(writer: RunWriter, outcome: RunOutcome, status: str, not_run: int = 0) -> None:
    """The run's final state; a stopped run's note says by what, and which jobs were cut."""
    if status == "interrupted":
        cut = [r.job_id for r in outcome.results if r.status == "interrupted"]
        writer.note(
            f"{stop_reason(outcome.stop_signal or signal.SIGINT)}"
            + (f"; cut short: {', '.join(cut)}" if cut else "")
            + (f"; {not_run} job(s) not run" if not_run else "")
        )
    with STOP.deferred():
        writer.finish(status)
    # The report right after the run need not fold a million samples; a stop now only loses
    # the cache (the run is recorded), so it is not deferred.
    from assay.figures.folded import cache_figures  # numpy: not imported by a run refused

    with contextlib.suppress(KeyboardInterrupt):
        cache_figures(writer.path)


def _disk_full(writer: RunWriter, job: Job, left: int) -> StoreError:
    writer.note(
        f"stopped: the disk holding the run directory is full (ENOSPC) after job {job.job_id}; "
        f"{left} job(s) not run"
    )
    return StoreError(
        f"the disk holding {writer.path} is full (ENOSPC, {ENOSPC_TEXT}): "
        f"the run stopped after job {job.job_id}",
        hint="free space (df -h) or set ASSAY_HOME elsewhere; "
        "every job recorded before this one is intact and reportable",
    )
