"""``assay run --on slurm`` and ``assay collect``: the command-line side of a Slurm run.

Kept apart from ``assay.cli`` so the local path stays small; the CLI calls these functions and
prints the summary they return.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.text import Text

from assay.errors import AssayError, LaunchError
from assay.launch.slurm.options import SlurmOptions
from assay.launch.slurm.place import place
from assay.launch.slurm.state import JobState, require_slurm
from assay.model import Job, JobResult, RunInfo
from assay.run.execute import RunOutcome
from assay.run.slurm_front import Prepared, finish, follow, prepare, slurm_job_of, submit_run
from assay.store import RunStore, RunWriter

COLOURS = {"ok": "green", "skipped": "yellow"}


def _print_result(console: Console, r: JobResult) -> None:
    colour = COLOURS.get(r.status, "red")
    where = f" on {','.join(r.hosts)}" if r.hosts else ""
    console.print(
        Text("  ")
        + Text(r.status, style=colour)
        + Text(f" {r.job_id}{where} ({r.wall_time:.1f} s, {r.n_samples} samples)")
    )
    if r.status != "ok" and r.reason:
        console.print(Text(f"    {r.reason}"))


def dry_run(console: Console, out: Console, jobs: list[Job], prepared: Prepared) -> None:
    for job in jobs:
        nodes = job.placement.get("nodes", [])
        group = job.placement.get("group", "")
        print(
            f"{job.job_id}: nodes {nodes} x ppn {job.ppn or 1}"
            + (f" [with {group}]" if group else "")
            + f": {shlex.join(job.argv)}"
        )
    print(f"\n$ {shlex.join(prepared.sbatch)}\n")
    print(prepared.script, end="")


def run_slurm(
    *,
    console: Console,
    out: Console,
    store: RunStore,
    spec_name: str,
    suite_text: str,
    system,
    mpis,
    jobs: list[Job],
    opts: SlurmOptions,
    label: str,
    dry: bool,
    on_start: Callable[[], None] | None = None,
) -> RunOutcome | None:
    """Plan placement, submit one allocation, follow it (unless detached). None: nothing ran.
    ``on_start``: called once, when the allocation is seen running."""
    placed = place(jobs, opts, mpis)
    if not placed:
        raise AssayError("nothing to run on Slurm: the suite planned no job")
    if dry:
        prepared = prepare(Path("RUN_DIR"), "RUN_ID", placed, mpis, opts, build=False)
        dry_run(console, out, placed, prepared)
        return None
    require_slurm()
    writer = store.create(
        suite=spec_name, suite_text=suite_text, system=system, argv=sys.argv,
        n_jobs=len(placed), label=label,
    )  # fmt: skip
    try:
        prepared = prepare(writer.path, writer.info.run_id, placed, mpis, opts)
        job_id = submit_run(writer, prepared, opts)
    except AssayError as exc:
        writer.info.slurm = {"state": "NOT_SUBMITTED", "reason": str(exc)}
        writer.finish("failed")
        raise
    console.print(
        f"run {writer.info.run_id}: suite {spec_name}, {len(placed)} jobs in one Slurm "
        f"allocation (job {job_id}, {opts.nodes} nodes); script: "
        f"{writer.path / 'slurm' / 'batch.sh'}"
    )
    if opts.detach:
        # The allocation outlives this process: no later assay may take the run for dead.
        writer.release()
        console.print(f"detached: collect the results with: assay collect {writer.info.run_id}")
        return None
    return collect_writer(console, writer, placed, opts, on_start)


def collect_writer(
    console: Console,
    writer: RunWriter,
    jobs: list[Job],
    opts: SlurmOptions,
    on_start: Callable[[], None] | None = None,
) -> RunOutcome:
    """Follow the allocation with a live line, report each job as it lands, close the run."""
    job_id = slurm_job_of(writer.info.slurm)
    with console.status(f"Slurm job {job_id}: asking Slurm") as status:
        started: list[bool] = []

        def on_state(state: JobState, elapsed: float) -> None:
            if on_start is not None and not started and state.state != "PENDING":
                started.append(True)
                on_start()
            done = sum(1 for _ in (writer.path / "jobs.jsonl").open()) if (
                writer.path / "jobs.jsonl"
            ).exists() else 0  # fmt: skip
            where = f" on {state.nodes}" if state.nodes else ""
            why = f" ({state.reason})" if state.reason and state.state == "PENDING" else ""
            status.update(
                f"Slurm job {job_id}: {state.state}{why}{where}; "
                f"{done}/{len(jobs)} jobs done, {len(jobs) - done} to go; {elapsed:.0f} s"
            )

        try:
            state = follow(
                writer, opts, on_state=on_state, on_result=lambda r: _print_result(console, r)
            )
        except KeyboardInterrupt:
            finish(writer, jobs, None)
            console.print(f"stopped: Slurm job {job_id} cancelled; finished jobs are kept")
            raise
        except LaunchError:
            finish(writer, jobs, None)
            raise
    missing = finish(writer, jobs, state)
    slurm = writer.info.slurm
    line = f"Slurm job {job_id} ended {slurm.get('state')}"
    if slurm.get("reason"):
        line += f" ({slurm['reason']})"
    console.print(Text(line, style="green" if slurm.get("state") == "COMPLETED" else "red"))
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


def collect(console: Console, store: RunStore, ref: str | None, opts: SlurmOptions) -> RunOutcome:
    """``assay collect``: follow a detached run to its end (or close one that ended)."""
    run_id = store.resolve(ref)
    path = store.runs_dir / run_id
    info = RunInfo.from_dict(json.loads((path / "run.json").read_text()))
    slurm_job_of(info.slurm)
    writer = RunWriter(path, info)
    plan_file = path / "slurm" / "plan.json"
    jobs = [Job.from_dict(j) for j in json.loads(plan_file.read_text())["jobs"]]
    if info.status != "running":
        console.print(f"run {run_id} already collected ({info.status})")
        return _outcome(writer)
    return collect_writer(console, writer, jobs, opts)
