"""``assay run --on slurm`` (any batch scheduler) and ``assay collect``: the command-line side
of a run inside an allocation.

Kept apart from ``assay.cli`` so the local path stays small; the CLI calls these functions and
prints the summary they return.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from assay.errors import AssayError, LaunchError
from assay.launch import BatchScheduler, BatchState
from assay.model import Job, JobResult
from assay.run.execute import RunOutcome
from assay.run.front import batch_job_of, finish, follow, prepare, read_plan, submit_run
from assay.store import RunStore, RunWriter
from assay.store.lines import lines_with_offsets
from assay.system.hostlist import compress_hostlist
from assay.textutil import terminal

COLOURS = {"ok": "green", "skipped": "yellow"}


def _print_result(console: Console, r: JobResult) -> None:
    colour = COLOURS.get(r.status, "red")
    where = f" on {compress_hostlist(r.hosts)}" if r.hosts else ""
    console.print(
        Text("  ")
        + Text(r.status, style=colour)
        + Text(f" {r.job_id}{where} ({r.wall_time:.1f} s, {r.n_samples} samples)")
    )
    if r.status != "ok" and r.reason:
        console.print(Text(f"    {terminal(r.reason)}"))


def _shown_indices(indices: list[int]) -> str:
    """Allocation indices as the dry run shows them: a few as a list, more as runs
    (``[0-199999]``: an all-pairs job over a large allocation is one line, not megabytes)."""
    if len(indices) <= 8:
        return str(indices)
    runs: list[str] = []
    start = prev = indices[0]
    for i in [*indices[1:], None]:
        if i is not None and i == prev + 1:
            prev = i
            continue
        runs.append(str(start) if start == prev else f"{start}-{prev}")
        if i is not None:
            start = prev = i
    return "[" + ", ".join(runs) + "]"


def dry_run(jobs: list[Job], scheduler: BatchScheduler, mpis) -> None:
    """Where each job goes, then the submitting command and the batch script."""
    for job in jobs:
        nodes = _shown_indices(job.placement.indices) if job.placement else "[]"
        group = job.placement.group if job.placement else ""
        print(
            f"{job.job_id}: nodes {nodes} x ppn {job.ppn or 1}"
            + (f" [with {group}]" if group else "")
            + f": {shlex.join(job.argv)}"
        )
    submission = prepare(Path("RUN_DIR"), "RUN_ID", jobs, mpis, scheduler, build=False)
    print(f"\n$ {shlex.join(submission.argv)}\n")
    print(submission.script, end="")


def run_batch(
    *,
    console: Console,
    store: RunStore,
    spec_name: str,
    suite_text: str,
    system,
    mpis,
    jobs: list[Job],
    scheduler: BatchScheduler,
    label: str,
    on_start: Callable[[], None] | None = None,
) -> RunOutcome | None:
    """Submit one allocation for the placed ``jobs``, follow it (unless detached). None:
    detached, nothing to wait for. ``on_start``: called once, when the allocation is seen
    running (``assay check --resume`` drains its held nodes again then)."""
    scheduler.require()
    writer = store.create(
        suite=spec_name, suite_text=suite_text, system=system, argv=sys.argv,
        n_jobs=len(jobs), label=label,
    )  # fmt: skip
    name = scheduler.caps.name
    try:
        submission = prepare(writer.path, writer.info.run_id, jobs, mpis, scheduler)
        handle = submit_run(writer, submission, scheduler)
    except AssayError as exc:
        writer.info.batch = {"launcher": name, "state": "NOT_SUBMITTED", "reason": str(exc)}
        writer.finish("failed")
        raise
    console.print(
        f"run {writer.info.run_id}: suite {spec_name}, {scheduler.describe(jobs)} "
        f"(job {handle}); script: {writer.path / name / 'batch.sh'}"
    )
    if scheduler.detach:
        # The allocation outlives this process: no later assay may take the run for dead.
        writer.release()
        console.print(f"detached: collect the results with: assay collect {writer.info.run_id}")
        return None
    return collect_writer(console, writer, jobs, scheduler, on_start)


def collect_writer(
    console: Console,
    writer: RunWriter,
    jobs: list[Job],
    scheduler: BatchScheduler,
    on_start: Callable[[], None] | None = None,
) -> RunOutcome:
    """Follow the allocation with a live line, report each job as it lands, close the run."""
    _, handle = batch_job_of(writer.info)
    who = scheduler.caps.name.capitalize()
    with console.status(f"{who} job {handle}: asking {who}") as status:
        started: list[bool] = []

        def on_state(state: BatchState, elapsed: float) -> None:
            running = not state.pending and state.state != "UNKNOWN"
            if on_start is not None and not started and running:
                started.append(True)
                on_start()
            done = sum(1 for _ in lines_with_offsets(writer.path / "jobs.jsonl"))
            where = f" on {state.nodelist}" if state.nodelist else ""
            why = f" ({state.reason})" if state.reason and state.pending else ""
            status.update(
                f"{who} job {handle}: {state.state}{why}{where}; "
                f"{done}/{len(jobs)} jobs done, {len(jobs) - done} to go; {elapsed:.0f} s"
            )

        try:
            state = follow(
                writer, scheduler, on_state=on_state,
                on_result=lambda r: _print_result(console, r),
            )  # fmt: skip
        except KeyboardInterrupt:
            finish(writer, jobs, None, scheduler)
            console.print(f"stopped: {who} job {handle} cancelled; finished jobs are kept")
            raise
        except LaunchError:
            finish(writer, jobs, None, scheduler)
            raise
    missing = finish(writer, jobs, state, scheduler)
    batch = writer.info.batch
    line = f"{who} job {handle} ended {batch.get('state')}"
    if batch.get("reason"):
        line += f" ({batch['reason']})"
    console.print(Text(line, style="green" if batch.get("state") == "COMPLETED" else "red"))
    for r in missing:
        _print_result(console, r)
    return _outcome(writer)


def _outcome(writer: RunWriter) -> RunOutcome:
    from assay.store.rundir import read_jsonl

    results = [JobResult.from_dict(d) for d in read_jsonl(writer.path / "jobs.jsonl")]
    n_samples = sum(r.n_samples for r in results)
    outcome = RunOutcome(info=writer.info, results=results)
    outcome.samples = [None] * n_samples  # type: ignore[list-item]  # counted, not read
    return outcome


def collect(console: Console, store: RunStore, ref: str | None) -> RunOutcome:
    """``assay collect``: follow a detached run to its end (or close one that ended). A run
    whose run.json or plan is damaged is an error (exit 2) that first shows the job results
    already recorded: they are kept, and reportable."""
    from assay.store.records import read_run_info

    run_id = store.resolve(ref)  # exit 3: no such run
    path = store.runs_dir / run_id
    try:
        info = read_run_info(path)
    except AssayError:
        _print_recorded(console, path)
        raise
    name, _ = batch_job_of(info)
    writer = RunWriter(path, info)
    if info.status != "running":
        console.print(f"run {run_id} already collected ({info.status})")
        return _outcome(writer)
    try:
        jobs, _, scheduler = read_plan(path, name)
    except AssayError:
        _print_recorded(console, path)
        raise
    return collect_writer(console, writer, jobs, scheduler)


def _print_recorded(console: Console, path: Path) -> None:
    from assay.store.rundir import read_jsonl

    results = [JobResult.from_dict(d) for d in read_jsonl(path / "jobs.jsonl")]
    console.print(f"run {path.name}: {len(results)} job result(s) recorded, kept:")
    for r in results:
        _print_result(console, r)
