"""``assay run`` and ``assay collect``: the options are collected into one validated request
(``assay.run.request``), planned and placed by the chosen scheduler, then run here or
submitted (``assay.cli.batch``)."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from assay.cli.batchopts import (
    PANEL,
    Account,
    Constraint,
    MaxWait,
    Nodes,
    Partition,
    Qos,
    SbatchArg,
    TimeLimit,
    own_options,
)
from assay.cli.common import console, discover, open_index, open_store, print_summary
from assay.errors import AssayError

if TYPE_CHECKING:  # imported when used: 'assay --help' must not pay for them
    from assay.launch import Scheduler
    from assay.model import Job
    from assay.run.request import PlannedRun, RunRequest
    from assay.store import RunStore


def run(
    suite: Annotated[
        str, typer.Argument(help="A built-in suite (quick, ...) or a suite TOML file.")
    ] = "quick",
    on: Annotated[str, typer.Option(help="Where jobs run: local or slurm.")] = "local",
    mpi: Annotated[
        str | None, typer.Option(help="MPIs to use, comma-separated names, or 'all'.")
    ] = None,
    only: Annotated[
        str | None, typer.Option(help="Run only these probes (comma-separated).")
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="KEY=VALUE",
            help="Override a param: key=value or probe.key=value (repeatable).",
        ),
    ] = None,
    repeat: Annotated[
        str | None,
        typer.Option(help="Repetitions of every job, or 'auto': until its figures are within ±2%."),
    ] = None,
    label: Annotated[str, typer.Option(help="A free-text label kept with the run.")] = "",
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the planned jobs and stop.")
    ] = False,
    vdbench: Annotated[
        Path | None,
        typer.Option(
            help="Run a Vdbench parameter file (hd/sd/wd/rd), translated into fio jobs.",
            rich_help_panel="Vdbench",
        ),
    ] = None,
    lun_map: Annotated[
        list[str] | None,
        typer.Option(
            "--lun-map",
            metavar="OLD=NEW",
            help="With --vdbench: OLD=NEW path prefix for LUNs (repeatable).",
            rich_help_panel="Vdbench",
        ),
    ] = None,
    target: Annotated[
        Path | None,
        typer.Option(
            help="With --vdbench: put every LUN in this directory.", rich_help_panel="Vdbench"
        ),
    ] = None,
    elapsed: Annotated[
        float | None,
        typer.Option(
            help="With --vdbench: seconds per run (Vdbench -e).", rich_help_panel="Vdbench"
        ),
    ] = None,
    warmup: Annotated[
        float | None,
        typer.Option(
            help="With --vdbench: warm-up seconds (Vdbench -w).", rich_help_panel="Vdbench"
        ),
    ] = None,
    size: Annotated[
        str | None,
        typer.Option(
            help="With --vdbench: size of every LUN file, e.g. 1g.", rich_help_panel="Vdbench"
        ),
    ] = None,
    nodes: Nodes = None,
    partition: Partition = None,
    account: Account = None,
    qos: Qos = None,
    constraint: Constraint = None,
    time_limit: TimeLimit = None,
    sbatch_arg: SbatchArg = None,
    max_wait: MaxWait = None,
    detach: Annotated[
        bool,
        typer.Option(help="Slurm: submit and return; then 'assay collect'.", rich_help_panel=PANEL),
    ] = False,
    all_pairs: Annotated[
        bool,
        typer.Option(
            help="The all-pairs matrix: p2p latency and bandwidth of every node pair, one MPI "
            "job per MPI (the suite's collectives and two-node figures are left out).",
            rich_help_panel=PANEL,
        ),
    ] = False,
    per_node: Annotated[
        bool,
        typer.Option(
            help="With --all-pairs: also the suite's per-node benches (STREAM, DGEMM, HPL on "
            "every node at once).",
            rich_help_panel=PANEL,
        ),
    ] = False,
    pairs_at_once: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Slurm, --all-pairs: at most N pairs measured at once (default: a whole "
            "round; 1: every link alone, slower but undisturbed by the others).",
            rich_help_panel=PANEL,
        ),
    ] = None,
    intra_node: Annotated[
        bool, typer.Option(help="Slurm: also p2p within one node.", rich_help_panel=PANEL)
    ] = False,
) -> None:
    """Run a suite and store every result with the system it came from.

    Examples:

      assay run quick

      assay run quick --only p2p --mpi openmpi --set max_size=65536

      assay run my-suite.toml --repeat 5 --label "after BIOS update"

      assay run network --on slurm --nodes 8 --all-pairs
    """
    from assay.launch import LaunchOptions
    from assay.run.request import RunRequest, VdbenchRequest

    own = own_options(partition, account, qos, constraint, time_limit, sbatch_arg, max_wait)
    request = RunRequest(
        suite=suite, on=on, mpi=mpi, only=only, sets=list(set_ or []), repeat=repeat,
        label=label, dry_run=dry_run,
        vdbench=None if vdbench is None else VdbenchRequest(
            vdbench, list(lun_map or []), target, elapsed, warmup, size
        ),
        launch=LaunchOptions(nodes, detach, intra_node, own),
        all_pairs=all_pairs, per_node=per_node, pairs_at_once=pairs_at_once,
    )  # fmt: skip
    start_run(request)


def start_run(request: RunRequest) -> None:
    """Plan the run, then run it here or submit it, as its scheduler does."""
    from assay.cli.progress import interval_s
    from assay.launch import BatchScheduler
    from assay.run.request import plan_run, preflight_run

    system, mpis = discover()
    planned = plan_run(request, system, mpis)
    for note in planned.notes:
        console.print(Text(note, style="yellow"))
    batch = isinstance(planned.scheduler, BatchScheduler)
    if request.dry_run:
        if batch:
            from assay.cli.batch import dry_run

            dry_run(planned.jobs, planned.scheduler, mpis)
        else:
            _print_dry_run(planned.jobs, planned.scheduler, mpis)
        return
    preflight_run(planned)  # a bad target is refused here, exit 2, before a run exists
    interval_s()  # a bad ASSAY_PROGRESS_INTERVAL too
    if batch:
        _run_batch(planned, request.label)
    else:
        _run_here(planned, request)


def _run_here(planned: PlannedRun, request: RunRequest) -> None:
    """The jobs one after the other in this process (a scheduler that is not a batch one)."""
    from assay.cli.progress import run_progress
    from assay.run.execute import execute

    store = open_store()
    spec, jobs, system, mpis = planned.spec, planned.jobs, planned.system, planned.mpis
    writer = store.create(
        suite=spec.name, suite_text=planned.text, system=system, argv=sys.argv,
        n_jobs=len(jobs), label=request.label,
    )  # fmt: skip
    console.print(
        f"run {writer.info.run_id}: suite {spec.name} ({planned.origin}), {len(jobs)} jobs"
    )
    for other, owner in writer.others_running():
        console.print(
            Text(
                f"warning: run {other} ({owner.describe()}) is measuring this node too: both "
                "runs' figures will be lower; each sample records it (concurrent_runs)",
                style="yellow",
            )
        )
    started = time.monotonic()
    kw = {"cores": system.cores, "step_argv": planned.scheduler.step_argv}
    with run_progress(console, len(jobs)) as shown:  # live on a terminal, plain lines in a log
        hooks = {"on_start": shown.on_start, "on_end": shown.on_end, "on_tick": shown.on_tick}
        if request.auto:
            from assay.run.repeat_auto import execute_auto

            outcome, reps = execute_auto(writer, jobs, mpis, **kw, **hooks)
        else:
            outcome = execute(writer, jobs, mpis, **kw, **hooks)
    print_summary(outcome, time.monotonic() - started, writer.path)
    for r in reps if request.auto else []:
        width = "—" if r.widest is None else f"±{r.widest:.1%}"
        console.print(
            Text(f"  {r.job_id}: {r.repetitions} repetition(s), {width} ({r.limiting}); {r.reason}")
        )
    _index(store)
    if outcome.info.status == "interrupted":
        raise typer.Exit(128 + (outcome.stop_signal or 2))  # 130 Ctrl-C, 143 SIGTERM
    if outcome.failed:
        raise typer.Exit(1)


def _index(store: RunStore) -> None:
    try:
        open_index(store).close()
    except AssayError as exc:  # the results are in the run directory whatever the index says
        console.print(Text(f"warning: {exc}", style="yellow"))


def _run_batch(planned: PlannedRun, label: str) -> None:
    from assay.cli.batch import run_batch

    store = open_store()
    started = time.monotonic()
    try:
        outcome = run_batch(
            console=console, store=store, spec_name=planned.spec.name,
            suite_text=planned.text, system=planned.system, mpis=planned.mpis,
            jobs=planned.jobs, scheduler=planned.scheduler, label=label,
        )  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the allocation is already cancelled
        raise typer.Exit(130) from None
    _after_batch(store, outcome, started)


def _after_batch(store: RunStore, outcome, started: float) -> None:
    if outcome is None:
        return
    print_summary(outcome, time.monotonic() - started, store.runs_dir / outcome.info.run_id)
    _index(store)
    if outcome.info.status == "interrupted":
        raise typer.Exit(130)
    if outcome.failed or outcome.info.status != "complete":
        raise typer.Exit(1)


def collect(
    run_ref: Annotated[
        str | None, typer.Argument(metavar="RUN", help="Run id or prefix; default: the latest.")
    ] = None,
) -> None:
    """Follow a detached batch run (--detach) to its end and index its results."""
    from assay.cli.batch import collect as collect_run

    store = open_store()
    started = time.monotonic()
    try:
        outcome = collect_run(console, store, run_ref)
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    _after_batch(store, outcome, started)


def _print_dry_run(jobs: list[Job], scheduler: Scheduler, mpis) -> None:
    """Each job's exact command, scheduler and environment included, one line each and never
    wrapped, so it can be pasted into a shell (in the job's directory: jobs/<job-id>/)."""
    import os
    import shlex

    from assay.toolchain import probe_path

    by_name = {m.name: m for m in mpis}
    for job in jobs:
        if job.skip_reason:
            print(f"# {job.job_id}: skipped: {job.skip_reason}")
            continue
        exe = str(probe_path(job.build, mpis)) if job.build else None
        argv = [exe if a == "{exe}" and exe else a for a in job.argv]
        argv = scheduler.step_argv(job, argv, [], by_name.get(job.mpi or ""))
        env = [f"{k}={v}" for k, v in sorted(job.env.items())]
        built = "" if not exe or os.path.exists(exe) else "  # built by 'assay run'"
        print(f"# {job.job_id}")
        print(shlex.join(["env", *env, *argv] if env else argv) + built)


def register(app: typer.Typer) -> None:
    app.command()(run)
    app.command()(collect)
