"""The front end of a Slurm run: prepare, submit one allocation, follow it, close the run.

    prepare()   build every probe here (the cache is on the shared file system), write the
                plan and the batch script into the run directory
    submit()    sbatch; the job id goes into run.json at once, so a later assay can cancel it
    follow()    poll ``scontrol show job`` gently, report each job as the runner records it,
                touch the heartbeat the runner's watchdog checks, cancel on Ctrl-C / SIGTERM
                and when the allocation stays pending past ``max_wait``
    finish()    every planned job that has no result gets one carrying Slurm's final state;
                the run's status follows the allocation's

Nothing here reads the samples: the runner wrote them, the index picks them up.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from assay.errors import AssayError, LaunchError
from assay.figures.folded import cache_figures
from assay.launch.slurm.options import SlurmOptions
from assay.launch.slurm.script import batch_script, sbatch_argv
from assay.launch.slurm.state import JobState, cancel, expand_nodes, query, submit
from assay.model import Job, JobResult, MpiInfo
from assay.store import RunWriter
from assay.store.lines import read_small
from assay.store.rundir import read_jsonl, utc_now
from assay.toolchain import build_probe

# Environment the runner needs on the compute node, when the front end has it set.
CARRIED_ENV = ("PYTHONPATH", "ASSAY_HOME", "ASSAY_CONFIG", "SLURM_CONF", "PATH")

StateHook = Callable[[JobState, float], None]
ResultHook = Callable[[JobResult], None]


@dataclass
class Prepared:
    sbatch: list[str]
    script: str


def prepare(
    run_dir: Path,
    run_id: str,
    jobs: list[Job],
    mpis: list[MpiInfo],
    opts: SlurmOptions,
    *,
    build: bool = True,
) -> Prepared:
    """The sbatch argv and script; with ``build`` also compiles and writes them to the run."""
    if build:
        built = set()
        for job in jobs:
            if job.build and not job.skip_reason and job.build not in built:
                build_probe(job.build, mpis)  # a compiler error stops us before submitting
                built.add(job.build)
    ppn = max((j.ppn or 1 for j in jobs), default=1)
    slurm_dir = run_dir / "slurm"
    argv = sbatch_argv(opts, run_dir, run_id, ppn)
    env = {k: os.environ[k] for k in CARRIED_ENV if os.environ.get(k)}
    if "PYTHONPATH" in env:  # the batch script runs elsewhere: relative entries would break
        env["PYTHONPATH"] = os.pathsep.join(
            str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p
        )
    script = batch_script(
        run_dir=run_dir,
        python=sys.executable,
        sbatch=argv,
        env=env,
        heartbeat_timeout=None if opts.detach else opts.heartbeat_timeout,
    )
    if build:
        slurm_dir.mkdir(parents=True, exist_ok=True)
        launch = {m.name: asdict(opts.launch_for(m)) for m in mpis}
        plan = {
            "jobs": [j.to_dict() for j in jobs],
            "mpis": [asdict(m) for m in mpis],
            "launch": launch,
        }
        (slurm_dir / "plan.json").write_text(json.dumps(plan, indent=1) + "\n")
        (slurm_dir / "batch.sh").write_text(script)
        (slurm_dir / "heartbeat").touch()
    return Prepared(argv, script)


def submit_run(writer: RunWriter, prepared: Prepared, opts: SlurmOptions) -> str:
    job_id = submit(prepared.sbatch)
    writer.info.slurm = {
        "job_id": job_id,
        "state": "PENDING",
        "detached": opts.detach,
        "submitted": utc_now(),
    }
    writer.save_info()
    return job_id


class _Stop(Exception):
    """SIGTERM, handled like Ctrl-C."""


def follow(
    writer: RunWriter,
    opts: SlurmOptions,
    *,
    on_state: StateHook | None = None,
    on_result: ResultHook | None = None,
) -> JobState:
    """Wait for the allocation to end; cancel it if we are stopped or it never starts."""
    job_id = writer.info.slurm["job_id"]
    beat = writer.path / "slurm" / "heartbeat"
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
            state = query(job_id)
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
            if state.state == "PENDING" and elapsed > opts.max_wait:
                cancel(job_id)
                _note(writer, "CANCELLED", f"did not start within --max-wait {opts.max_wait:g} s")
                raise LaunchError(
                    f"Slurm job {job_id} did not start within {opts.max_wait:g} s "
                    f"(Slurm's reason: {state.reason or 'none given'}); it was cancelled",
                    hint="raise --max-wait, or ask for fewer nodes / another partition",
                )
            time.sleep(opts.poll_s)
    except (KeyboardInterrupt, _Stop):
        cancel(job_id)
        _note(writer, "CANCELLED", "stopped by the user (Ctrl-C or SIGTERM)")
        raise KeyboardInterrupt from None
    finally:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, old_term)


def _note(writer: RunWriter, state: str, reason: str) -> None:
    writer.info.slurm = {**writer.info.slurm, "state": state, "reason": reason}
    writer.save_info()


STATUS_OF_STATE = {"TIMEOUT": "timeout", "CANCELLED": "interrupted"}


def finish(writer: RunWriter, jobs: list[Job], state: JobState | None) -> list[JobResult]:
    """Close the run: Slurm's final state into run.json, and a result for every job the
    allocation did not get to (so a lost node or a time limit shows, job by job)."""
    slurm = dict(writer.info.slurm)
    if state is not None:
        slurm["state"] = state.state if state.state != "UNKNOWN" else slurm.get("state", "")
        slurm["reason"] = state.reason or slurm.get("reason", "")
        if state.nodes:
            slurm["nodes"] = expand_nodes(state.nodes)
        slurm["exit_code"] = state.exit_code
    final = slurm.get("state", "UNKNOWN")
    recorded = {r["job_id"] for r in read_jsonl(writer.path / "jobs.jsonl")}
    runner = writer.path / "slurm" / "runner.json"
    if runner.exists():
        with contextlib.suppress(OSError, json.JSONDecodeError):
            slurm["nodes"] = json.loads(runner.read_text()).get("nodes", slurm.get("nodes"))
    watchdog = writer.path / "slurm" / "watchdog.txt"
    if watchdog.exists():
        slurm["reason"] = "runner watchdog: " + watchdog.read_text().strip()
    missing = []
    for job in jobs:
        if job.job_id in recorded:
            continue
        why = f"Slurm job {slurm.get('job_id')} ended {final}"
        if slurm.get("reason"):
            why += f" ({slurm['reason']})"
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
    writer.info.slurm = slurm
    if final == "COMPLETED" and not missing:
        status = "complete"
    elif final == "CANCELLED":
        status = "interrupted"
    else:
        status = "failed"
    writer.finish(status)
    cache_figures(writer.path)
    return missing


def cancel_run(writer: RunWriter) -> None:
    job_id = writer.info.slurm.get("job_id")
    if job_id:
        cancel(str(job_id))


PLAN_LIMIT = 1 << 30  # an all-pairs plan of thousands of nodes is tens of MB, never a GiB


def planned_jobs(run_dir: Path) -> list[Job]:
    """The jobs a Slurm run planned (``slurm/plan.json``, written before submitting); an
    AssayError saying what is wrong when the file is missing or damaged."""
    plan_file = run_dir / "slurm" / "plan.json"
    try:
        plan = json.loads(read_small(plan_file, PLAN_LIMIT))
        jobs = [Job.from_dict(j) for j in plan["jobs"]]
        if not all(isinstance(j.job_id, str) and isinstance(j.argv, list) for j in jobs):
            raise ValueError("a job without its id or command")
    except FileNotFoundError:
        why = "it is missing"
    except OSError as exc:
        why = exc.strerror or str(exc)
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        why = f"it is damaged ({type(exc).__name__}: {exc})"
    else:
        return jobs
    raise AssayError(
        f"run {run_dir.name}: {plan_file} cannot be read: {why}; without it the jobs the "
        "allocation was to run cannot be told from those it never reached",
        hint=f"the job results recorded are kept: 'assay report {run_dir.name}'; restore "
        "the file to collect the run",
    )


def slurm_job_of(info_slurm: dict) -> str:
    job_id = info_slurm.get("job_id")
    if not job_id:
        raise AssayError(
            "this run was not submitted to Slurm", hint="assay collect is for --on slurm"
        )
    return str(job_id)
