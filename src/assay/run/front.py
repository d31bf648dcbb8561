"""The front end of a batch run (any ``BatchScheduler``): prepare, submit one allocation,
follow it, close the run.

    prepare()   build every probe here (the cache is on the shared file system), write the
                plan and the batch script into the run directory (``<run>/<scheduler>/``)
    submit()    the scheduler's submission; its handle goes into run.json at once, so a later
                assay can cancel it
    follow()    poll the scheduler gently, report each job as the runner records it, touch the
                heartbeat the runner's watchdog checks, cancel on Ctrl-C / SIGTERM and when
                the allocation stays pending past ``max_wait``
    finish()    every planned job that has no result gets one carrying the allocation's final
                state; the run's status follows the allocation's

Nothing here reads the samples: the runner wrote them, the index picks them up. Nothing here
names a scheduler: each one's own words (Slurm's states) come through the contract.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from assay.errors import AssayError, LaunchError
from assay.figures.folded import cache_figures
from assay.inputfile import read_side
from assay.launch import BatchScheduler, BatchState, Submission, batch_scheduler
from assay.model import Job, JobResult, MpiInfo, RunInfo
from assay.store import RunWriter, safefile
from assay.store.rundir import read_jsonl, utc_now
from assay.toolchain import build_probe

# Environment the runner needs on the compute node, when the front end has it set (and the
# scheduler's own: ``BatchScheduler.carried_env``).
CARRIED_ENV = ("PYTHONPATH", "ASSAY_HOME", "ASSAY_CONFIG", "PATH")
PLAN = "plan.json"

StateHook = Callable[[BatchState, float], None]
ResultHook = Callable[[JobResult], None]


RUNNER_NOTES = "notes.txt"  # the runner's notes, one a line, in the batch directory


def batch_dir(run_dir: Path, scheduler: str) -> Path:
    """Where a batch run keeps its plan, script, heartbeat and runner files."""
    return run_dir / scheduler


def prepare(
    run_dir: Path,
    run_id: str,
    jobs: list[Job],
    mpis: list[MpiInfo],
    scheduler: BatchScheduler,
    *,
    build: bool = True,
) -> Submission:
    """The submission; with ``build`` also compiles the probes and writes plan and script."""
    if build:
        built = set()
        for job in jobs:
            if job.build and not job.skip_reason and job.build not in built:
                build_probe(job.build, mpis)  # a compiler error stops us before submitting
                built.add(job.build)
    env = {k: os.environ[k] for k in (*CARRIED_ENV, *scheduler.carried_env) if os.environ.get(k)}
    if "PYTHONPATH" in env:  # the batch script runs elsewhere: relative entries would break
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    submission = scheduler.submission(run_dir, run_id, jobs, env, sys.executable)
    if build:
        where = batch_dir(run_dir, scheduler.caps.name)
        where.mkdir(parents=True, exist_ok=True)
        plan = {
            "launcher": scheduler.caps.name,
            "jobs": [j.to_dict() for j in jobs],
            "mpis": [asdict(m) for m in mpis],
            **scheduler.to_plan(mpis),
        }
        safefile.write_atomic(where / PLAN, json.dumps(plan, indent=1) + "\n")
        safefile.write_atomic(where / "batch.sh", submission.script)
        (where / "heartbeat").touch()
        if any(j.spread.kind == "all-pairs" for j in jobs) and (tree := scheduler.topology()):
            safefile.write_atomic(where / "topology.txt", tree)  # per-switch figures in the report
    return submission


PLAN_LIMIT = 1 << 30  # an all-pairs plan of thousands of nodes is tens of MB, never a GiB


def read_plan(run_dir: Path, name: str) -> tuple[list[Job], list[MpiInfo], BatchScheduler]:
    """The jobs, MPIs and scheduler a batch run was submitted with (``prepare``); an
    AssayError saying what is wrong when the plan is missing or damaged."""
    plan_file = batch_dir(run_dir, name) / PLAN
    try:
        data: dict[str, Any] = json.loads(read_side(plan_file, "plan", PLAN_LIMIT))
        jobs = [Job.from_dict(j) for j in data["jobs"]]
        mpis = [MpiInfo(**m) for m in data["mpis"]]
        if not all(isinstance(j.job_id, str) and isinstance(j.argv, list) for j in jobs):
            raise ValueError("a job without its id or command")
        scheduler = batch_scheduler(data.get("launcher", name), data)
    except FileNotFoundError:
        why = "it is missing"
    except OSError as exc:
        why = exc.strerror or str(exc)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        why = f"it is damaged ({type(exc).__name__}: {exc})"
    else:
        return jobs, mpis, scheduler
    raise AssayError(
        f"run {run_dir.name}: {plan_file} cannot be read: {why}; without it the jobs the "
        "allocation was to run cannot be told from those it never reached",
        hint=f"the job results recorded are kept: 'assay report {run_dir.name}'; restore "
        "the file to collect the run",
    )


def submit_run(writer: RunWriter, submission: Submission, scheduler: BatchScheduler) -> str:
    handle = scheduler.submit(submission)
    writer.info.batch = {
        "launcher": scheduler.caps.name,
        "job_id": handle,
        "state": "PENDING",
        "detached": scheduler.detach,
        "submitted": utc_now(),
    }
    writer.save_info()
    return handle


class _Stop(Exception):
    """SIGTERM, handled like Ctrl-C."""


def follow(
    writer: RunWriter,
    scheduler: BatchScheduler,
    *,
    on_state: StateHook | None = None,
    on_result: ResultHook | None = None,
) -> BatchState:
    """Wait for the allocation to end; cancel it if we are stopped or it never starts."""
    handle = str(writer.info.batch["job_id"])
    beat = batch_dir(writer.path, scheduler.caps.name) / "heartbeat"
    seen = 0
    start = time.monotonic()
    old_term = signal.getsignal(signal.SIGTERM)

    def _term(signum, frame):
        raise _Stop()

    with contextlib.suppress(ValueError):  # not the main thread: no handler, Ctrl-C still works
        signal.signal(signal.SIGTERM, _term)
    try:
        while True:
            beat.touch()
            state = scheduler.poll(handle)
            for n, data in enumerate(read_jsonl(writer.path / "jobs.jsonl")):
                if n >= seen:
                    seen = n + 1
                    if on_result:
                        on_result(JobResult.from_dict(data))
            elapsed = time.monotonic() - start
            if on_state:
                on_state(state, elapsed)
            if state.final:
                return state
            if state.pending and elapsed > scheduler.max_wait:
                scheduler.cancel(handle)
                waited = f"did not start within --max-wait {scheduler.max_wait:g} s"
                _note(writer, "CANCELLED", waited)
                raise LaunchError(
                    f"{scheduler.caps.name} job {handle} did not start within "
                    f"{scheduler.max_wait:g} s (its reason: {state.reason or 'none given'}); "
                    "it was cancelled",
                    hint="raise --max-wait, or ask for fewer nodes / another partition",
                )
            time.sleep(scheduler.poll_s)
    except (KeyboardInterrupt, _Stop):
        scheduler.cancel(handle)
        _note(writer, "CANCELLED", "stopped by the user (Ctrl-C or SIGTERM)")
        raise KeyboardInterrupt from None
    finally:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, old_term)


def _note(writer: RunWriter, state: str, reason: str) -> None:
    writer.info.batch = {**writer.info.batch, "state": state, "reason": reason}
    writer.save_info()


STATUS_OF_STATE = {"TIMEOUT": "timeout", "CANCELLED": "interrupted"}


# What the runner leaves in the batch directory is a line or a few: more than this is not its.
MAX_RUNNER_TEXT = 2**20


def _side_text(path: Path, what: str) -> str:
    """A text file the runner wrote, or "" when it is missing or damaged: what it would add
    to the run is a note, and a damaged one must not stop the run being closed."""
    try:
        return read_side(path, what, MAX_RUNNER_TEXT).decode(errors="replace")
    except (OSError, ValueError):
        return ""


def _runner_hosts(where: Path) -> list[str] | None:
    """The hosts ``runner.json`` names, or None when it is missing, damaged, or names none."""
    try:
        doc = json.loads(read_side(where / "runner.json", "runner.json", MAX_RUNNER_TEXT))
    except (OSError, ValueError):
        return None
    hosts = doc.get("hosts") if isinstance(doc, dict) else None
    if isinstance(hosts, list) and hosts and all(type(h) is str for h in hosts):
        return hosts
    return None


def finish(
    writer: RunWriter, jobs: list[Job], state: BatchState | None, scheduler: BatchScheduler
) -> list[JobResult]:
    """Close the run: the allocation's final state into run.json, and a result for every job
    the allocation did not get to (so a lost node or a time limit shows, job by job)."""
    batch = dict(writer.info.batch)
    where = batch_dir(writer.path, scheduler.caps.name)
    if state is not None:
        batch["state"] = state.state if state.state != "UNKNOWN" else batch.get("state", "")
        batch["reason"] = state.reason or batch.get("reason", "")
        if state.nodelist:
            batch["hosts"] = scheduler.hostnames(state.nodelist)
        batch["exit_code"] = state.exit_code
    final = batch.get("state", "UNKNOWN")
    recorded = {r["job_id"] for r in read_jsonl(writer.path / "jobs.jsonl")}
    batch["hosts"] = _runner_hosts(where) or batch.get("hosts")
    for line in _side_text(where / RUNNER_NOTES, "runner's notes").splitlines():
        if line.strip():  # the runner's notes (shared memory, follow-up jobs)
            writer.note(line.strip())
    watchdog = _side_text(where / "watchdog.txt", "watchdog note").strip()
    if watchdog:
        batch["reason"] = "runner watchdog: " + watchdog
    missing = []
    for job in jobs:
        if job.job_id in recorded:
            continue
        why = f"{scheduler.caps.name.capitalize()} job {batch.get('job_id')} ended {final}"
        if batch.get("reason"):
            why += f" ({batch['reason']})"
        result = JobResult(
            job_id=job.job_id,
            status=STATUS_OF_STATE.get(final, "failed"),  # type: ignore[arg-type]
            exit_code=None,
            wall_time=0.0,
            argv=list(job.argv),
            reason=why + " before this job finished; the jobs recorded before it are kept",
            scheduler_state=final,
        )
        missing.append(result)
        writer.record(result, [])
    writer.info.batch = batch
    if final == "COMPLETED" and not missing:
        status = "complete"
    elif final == "CANCELLED":
        status = "interrupted"
    else:
        status = "failed"
    writer.finish(status)
    cache_figures(writer.path)
    return missing


def batch_job_of(info: RunInfo) -> tuple[str, str]:
    """(scheduler name, handle) of a batch run; an AssayError for a run that was not one."""
    job_id = info.batch.get("job_id")
    if not job_id:
        raise AssayError(
            "this run was not submitted to a batch scheduler",
            hint="assay collect is for runs made with --on slurm (or another batch scheduler)",
        )
    return str(info.batch.get("launcher") or "slurm"), str(job_id)
