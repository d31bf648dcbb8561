"""Carry out a planned run: build, launch, parse and store each job, one after the other.

Side effects live here and in the CLI. Every job's outcome is written the moment it ends, so a
crash, a timeout, Ctrl-C or a SIGKILL of assay loses at most the job in flight.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from assay.errors import AssayError, StoreError
from assay.launch import mpi_argv, run_process
from assay.model import Job, JobResult, MpiInfo, RunInfo, Sample
from assay.probes import get_probe
from assay.store import RunWriter
from assay.store.rundir import utc_now
from assay.toolchain import build_probe

STDERR_TAIL_LINES = 15


@dataclass
class RunOutcome:
    info: RunInfo
    results: list[JobResult] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)

    @property
    def failed(self) -> list[JobResult]:
        """Jobs that did not succeed; a skip (nothing to measure here) is not a failure."""
        return [r for r in self.results if r.status not in ("ok", "skipped")]


JobHook = Callable[[int, int, Job], None]
ResultHook = Callable[[int, int, Job, JobResult], None]


def stderr_tail(text: str, probe: str = "", lines: int = STDERR_TAIL_LINES) -> str:
    """The end of stderr, without launcher rulers, and always the probe's own diagnostics.

    Our probes prefix what they say with their name ("p2p: ..."); an MPI launcher may bury
    that line under its own boilerplate, so it is brought forward.
    """
    kept = [ln for ln in text.splitlines() if ln.strip() and set(ln.strip()) != {"-"}]
    own = [ln for ln in kept if probe and ln.startswith(f"{probe}:")]
    tail = kept[-lines:]
    return "\n".join([ln for ln in own if ln not in tail] + tail)


def _resolve_argv(job: Job, exe: str | None, mpis: list[MpiInfo], cores: int | None) -> list[str]:
    argv = [exe if a == "{exe}" and exe else a for a in job.argv]
    if job.launcher == "mpi":
        mpi = next((m for m in mpis if m.name == job.mpi), None)
        if mpi is None:
            raise AssayError(f"job {job.job_id}: MPI {job.mpi!r} is not available")
        return mpi_argv(dataclasses.replace(job, argv=argv), mpi, cores=cores)
    return argv


def run_job(
    writer: RunWriter,
    job: Job,
    mpis: list[MpiInfo],
    cores: int | None,
    resolve: Callable[[Job, str | None], list[str]] | None = None,
) -> tuple[JobResult, list[Sample]]:
    """One job from build to stored samples. Never raises for a probe's own failure.

    ``resolve`` replaces the local launcher's command line (the Slurm runner's srun steps).
    """
    started = utc_now()
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
        started=started,
    )
    if job.skip_reason:
        result.status, result.reason = "skipped", job.skip_reason
        writer.save_job(job, list(job.argv))
        writer.record(result, [])
        return result, []
    try:
        exe = str(build_probe(job.build, mpis)) if job.build else None
        argv = resolve(job, exe) if resolve else _resolve_argv(job, exe, mpis, cores)
    except AssayError as exc:
        result.reason = f"build failed: {exc}"
        writer.save_job(job, list(job.argv))
        writer.record(result, [])
        return result, []
    result.argv = argv
    writer.save_job(job, argv)
    for name, text in job.inputs.items():
        (job_dir / name).write_text(text)
    try:
        outcome = run_process(
            argv,
            env=job.env,
            timeout=job.timeout,
            stdout_path=job_dir / "stdout",
            stderr_path=job_dir / "stderr",
            cwd=job_dir,  # whatever else a probe writes (raw tool output, plots) stays with the run
        )
    except AssayError as exc:  # the program could not even start: this job fails, the run goes on
        result.reason = str(exc)
        writer.record(result, [])
        return result, []
    result.exit_code, result.wall_time, result.hosts = (
        outcome.exit_code,
        round(outcome.wall_time, 3),
        outcome.hosts,
    )
    result_file = job_dir / (job.output_file or "stdout")
    stdout = result_file.read_text(errors="replace") if result_file.exists() else ""
    tail = stderr_tail((job_dir / "stderr").read_text(errors="replace"), job.probe)
    samples: list[Sample] = []
    parse_error = ""
    if stdout.strip():
        try:
            samples = get_probe(job.probe).parse(stdout, job)
        except AssayError as exc:
            parse_error = str(exc)
    if outcome.interrupted:
        result.status, result.reason = "interrupted", "stopped by Ctrl-C"
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
        if samples:
            result.reason += f" ({len(samples)} points measured before it stopped are kept)"
        if parse_error and parse_error not in result.reason:
            result.reason += f"; {parse_error}"
        if tail:
            result.reason += f"\n{tail}"
    result.n_samples = len(samples)
    writer.record(result, samples)
    return result, samples


def execute(
    writer: RunWriter,
    jobs: list[Job],
    mpis: list[MpiInfo],
    *,
    cores: int | None = None,
    on_start: JobHook | None = None,
    on_end: ResultHook | None = None,
) -> RunOutcome:
    outcome = RunOutcome(info=writer.info)
    cores = cores or os.cpu_count()
    status = "complete"
    try:
        for i, job in enumerate(jobs, start=1):
            if on_start:
                on_start(i, len(jobs), job)
            result, samples = run_job(writer, job, mpis, cores)
            outcome.results.append(result)
            outcome.samples.extend(samples)
            if on_end:
                on_end(i, len(jobs), job, result)
            if result.status == "interrupted":
                status = "interrupted"
                break
    except KeyboardInterrupt:
        status = "interrupted"
    except StoreError:
        # The run directory cannot take more (a full disk): what was recorded stays readable;
        # try to mark the run failed, and let the caller tell the user.
        with contextlib.suppress(StoreError):
            writer.finish("failed")
        raise
    writer.finish(status)
    return outcome
