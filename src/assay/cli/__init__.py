"""The command line: ``assay doctor | run | runs | report | history``.

Exit codes: 0 success; 1 a run finished but some jobs failed; 2 bad input or environment
(the message says what and where; a full disk); 3 a run or metric that does not exist;
128 + the signal for a run stopped by one: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.table import Table
from rich.text import Text

from assay import __version__
from assay.cli.common import (
    console,
    discover,
    open_index,
    open_store,
    out,
    print_summary,
)
from assay.errors import AssayError

if TYPE_CHECKING:  # imported when used: 'assay --help' must not pay for the store or pydantic
    from assay.model import Job
    from assay.store import RunStore

app = typer.Typer(
    name="assay",
    help=(
        "Measure HPC nodes and clusters the way vendors and HPC centres publish their numbers: "
        "STREAM, MPI latency/bandwidth (OSU method) across MPI implementations, and more.\n\n"
        "Start with 'assay doctor', then 'assay run quick' and 'assay report'."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain click help: typer's rich help imports rich.markdown and markdown_it and takes
    # 0.1 s to render; 'assay --help' must answer in under 0.3 s (tests/test_progress.py).
    rich_markup_mode=None,
    add_help_option=False,  # our own --help below: see _help
    context_settings={"max_content_width": 120},  # command summaries not cut at 80 columns
)
STATE = {"debug": False}
_SL = "Slurm (--on slurm)"


def _version(value: bool) -> None:
    if value:
        print(f"assay {__version__}")
        raise typer.Exit()


def _help(ctx: typer.Context, value: bool) -> None:
    """The top level's --help. typer's own leaves the flag None when not given and coerces
    None through a pydantic TypeAdapter, which costs 'assay run --help' 0.1 s of imports."""
    if value:
        typer.echo(ctx.get_help())
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    help_: Annotated[
        bool,
        typer.Option(
            "--help",
            callback=_help,
            is_eager=True,
            expose_value=False,
            help="Show this message and exit.",
        ),
    ] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    STATE["debug"] = debug


@app.command()
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
    nodes: Annotated[
        int | None, typer.Option(help="Slurm: nodes to allocate.", rich_help_panel=_SL)
    ] = None,
    partition: Annotated[
        str | None, typer.Option(help="Slurm partition.", rich_help_panel=_SL)
    ] = None,
    account: Annotated[str | None, typer.Option(help="Slurm account.", rich_help_panel=_SL)] = None,
    qos: Annotated[str | None, typer.Option(help="Slurm QOS.", rich_help_panel=_SL)] = None,
    constraint: Annotated[
        str | None, typer.Option(help="Slurm node features (--constraint).", rich_help_panel=_SL)
    ] = None,
    time_limit: Annotated[
        str | None, typer.Option("--time", help="Slurm time limit.", rich_help_panel=_SL)
    ] = None,
    sbatch_arg: Annotated[
        list[str] | None,
        typer.Option(
            metavar="ARG", help="Slurm: extra sbatch argument (repeatable).", rich_help_panel=_SL
        ),
    ] = None,
    max_wait: Annotated[
        float | None,
        typer.Option(help="Slurm: seconds the allocation may stay pending.", rich_help_panel=_SL),
    ] = None,
    detach: Annotated[
        bool,
        typer.Option(help="Slurm: submit and return; then 'assay collect'.", rich_help_panel=_SL),
    ] = False,
    all_pairs: Annotated[
        bool, typer.Option(help="Slurm: p2p between every node pair.", rich_help_panel=_SL)
    ] = False,
    pairs_at_once: Annotated[
        int | None,
        typer.Option(
            metavar="N",
            help="Slurm, --all-pairs: at most N pairs measured at once (default: a whole "
            "round; 1: every link alone, slower but undisturbed by the others).",
            rich_help_panel=_SL,
        ),
    ] = None,
    intra_node: Annotated[
        bool, typer.Option(help="Slurm: also p2p within one node.", rich_help_panel=_SL)
    ] = False,
) -> None:
    """Run a suite and store every result with the system it came from.

    Examples:

      assay run quick

      assay run quick --only p2p --mpi openmpi --set max_size=65536

      assay run my-suite.toml --repeat 5 --label "after BIOS update"
    """
    from assay.cli.progress import interval_s, run_progress
    from assay.launch import LOCAL, check_jobs
    from assay.plan import Overrides, plan
    from assay.probes import PlanContext
    from assay.run.execute import execute
    from assay.suite import resolve_suite
    from assay.system import collect_plan_facts

    if on not in ("local", "slurm"):
        raise AssayError(f"--on {on}: expected local or slurm")
    slurm_opts = None
    if on == "slurm":
        from assay.config import load_config
        from assay.launch.slurm.options import options_from_config

        slurm_opts = options_from_config(
            load_config(), nodes=nodes, partition=partition, account=account, qos=qos,
            constraint=constraint, time=time_limit, sbatch_args=list(sbatch_arg or []),
            max_wait=max_wait, detach=detach or None, all_pairs=all_pairs or None,
            intra_node=intra_node or None, pairs_at_once=pairs_at_once,
        )  # fmt: skip
        if pairs_at_once is not None and not slurm_opts.all_pairs:
            raise AssayError("--pairs-at-once needs --all-pairs")
    elif all_pairs or detach or nodes or pairs_at_once is not None:
        raise AssayError("--nodes, --all-pairs, --pairs-at-once and --detach need --on slurm")
    if vdbench is not None:
        spec, text, origin = _vdbench_suite(
            suite, vdbench, lun_map, target, elapsed, warmup, size, per_host=on == "slurm"
        )
    else:
        spec, text, origin = resolve_suite(suite)
    auto = repeat == "auto"  # assay.run.repeat_auto: each job repeated until its CI is within ±2%
    if repeat is not None and not auto and not (repeat.isdigit() and int(repeat) >= 1):
        raise AssayError(f"--repeat {repeat!r}: expected a count (1, 2, ...) or 'auto'")
    overrides = Overrides(
        only=[p.strip() for p in only.split(",")] if only else [],
        mpi=[m.strip() for m in mpi.split(",")] if mpi else None,
        sets=list(set_ or []),
        repeat=1 if auto else (int(repeat) if repeat else None),
    )
    system, mpis = discover()
    jobs = plan(spec, PlanContext(system=system, mpis=mpis, facts=collect_plan_facts()), overrides)
    if slurm_opts is not None:
        if not dry_run:
            from assay.run.preflight import preflight

            preflight(jobs)
        _run_slurm(spec.name, text, system, mpis, jobs, slurm_opts, label, dry_run)
        return
    check_jobs(jobs, LOCAL)  # what the launcher cannot do is refused, exit 2
    if dry_run:
        _print_dry_run(jobs, mpis)
        return
    from assay.run.preflight import preflight

    preflight(jobs)  # a bad target is refused here, exit 2, before a run exists
    interval_s()  # a bad ASSAY_PROGRESS_INTERVAL too
    store = open_store()
    writer = store.create(
        suite=spec.name,
        suite_text=text,
        system=system,
        argv=sys.argv,
        n_jobs=len(jobs),
        label=label,
    )
    console.print(f"run {writer.info.run_id}: suite {spec.name} ({origin}), {len(jobs)} jobs")
    for other, owner in writer.others_running():
        console.print(
            Text(
                f"warning: run {other} ({owner.describe()}) is measuring this node too: both "
                "runs' figures will be lower; each sample records it (concurrent_runs)",
                style="yellow",
            )
        )
    started = time.monotonic()
    with run_progress(console, len(jobs)) as shown:  # live on a terminal, plain lines in a log
        hooks = {"on_start": shown.on_start, "on_end": shown.on_end, "on_tick": shown.on_tick}
        if auto:
            from assay.run.repeat_auto import execute_auto

            outcome, reps = execute_auto(writer, jobs, mpis, cores=system.cores, **hooks)
        else:
            outcome = execute(writer, jobs, mpis, cores=system.cores, **hooks)
    print_summary(outcome, time.monotonic() - started, writer.path)
    for r in reps if auto else []:
        width = "—" if r.widest is None else f"±{r.widest:.1%}"
        console.print(
            Text(f"  {r.job_id}: {r.repetitions} repetition(s), {width} ({r.limiting}); {r.reason}")
        )
    try:
        open_index(store).close()
    except AssayError as exc:  # the results are in the run directory whatever the index says
        console.print(Text(f"warning: {exc}", style="yellow"))
    if outcome.info.status == "interrupted":
        raise typer.Exit(128 + (outcome.stop_signal or 2))  # 130 Ctrl-C, 143 SIGTERM
    if outcome.failed:
        raise typer.Exit(1)


def _run_slurm(name, text, system, mpis, jobs, opts, label, dry) -> None:
    from assay.cli.slurm import run_slurm

    store = open_store()
    started = time.monotonic()
    try:
        outcome = run_slurm(
            console=console, out=out, store=store, spec_name=name, suite_text=text,
            system=system, mpis=mpis, jobs=jobs, opts=opts, label=label, dry=dry,
        )  # fmt: skip
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the allocation is already cancelled
        raise typer.Exit(130) from None
    _after_slurm(store, outcome, started)


def _after_slurm(store: RunStore, outcome, started: float) -> None:
    if outcome is None:
        return
    print_summary(outcome, time.monotonic() - started, store.runs_dir / outcome.info.run_id)
    try:
        open_index(store).close()
    except AssayError as exc:
        console.print(Text(f"warning: {exc}", style="yellow"))
    if outcome.info.status == "interrupted":
        raise typer.Exit(130)
    if outcome.failed or outcome.info.status != "complete":
        raise typer.Exit(1)


@app.command()
def collect(
    run_ref: Annotated[
        str | None, typer.Argument(metavar="RUN", help="Run id or prefix; default: the latest.")
    ] = None,
) -> None:
    """Follow a detached Slurm run (--detach) to its end and index its results."""
    from assay.cli.slurm import collect as collect_run
    from assay.config import load_config
    from assay.launch.slurm.options import options_from_config

    store = open_store()
    started = time.monotonic()
    try:
        outcome = collect_run(console, store, run_ref, options_from_config(load_config()))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    _after_slurm(store, outcome, started)


def _vdbench_suite(suite, path, lun_map, target, elapsed, warmup, size, per_host):
    """A Vdbench parameter file as a suite; what cannot be translated is said, not dropped.
    ``per_host`` (on Slurm): each hd= host of a run on its own allocation node."""
    from assay.parsers.fio import parse_size
    from assay.vdbench.suite import suite_toml, vdbench_suite

    if suite != "quick":
        raise AssayError("give a suite or --vdbench FILE, not both")
    mapping = {}
    for item in lun_map or []:
        old, sep, new = item.partition("=")
        if not sep or not old:
            raise AssayError(f"--lun-map {item!r}: expected OLD=NEW, e.g. /mnt/vdb1=/scratch/a")
        mapping[old] = new
    size_bytes = None
    if size is not None:
        size_bytes = parse_size(size)
        if size_bytes is None:
            raise AssayError(f"--size {size!r}: expected a size such as 1g or 256m")
    spec, notes = vdbench_suite(
        path, lun_map=mapping or None, target_dir=target, elapsed=elapsed, warmup=warmup,
        size=size_bytes, per_host=per_host,
    )  # fmt: skip
    for note in notes:
        console.print(Text(f"vdbench: {note}", style="yellow"))
    return spec, suite_toml(spec, notes), str(path)


def _print_dry_run(jobs: list[Job], mpis) -> None:
    """Each job's exact command, launcher and environment included, one line each and never
    wrapped, so it can be pasted into a shell (in the job's directory: jobs/<job-id>/)."""
    import os
    import shlex

    from assay.run.execute import resolve_argv
    from assay.toolchain import probe_path

    for job in jobs:
        if job.skip_reason:
            print(f"# {job.job_id}: skipped: {job.skip_reason}")
            continue
        exe = str(probe_path(job.build, mpis)) if job.build else None
        argv = resolve_argv(job, exe, mpis, os.cpu_count())
        env = [f"{k}={v}" for k, v in sorted(job.env.items())]
        built = "" if not exe or os.path.exists(exe) else "  # built by 'assay run'"
        print(f"# {job.job_id}")
        print(shlex.join(["env", *env, *argv] if env else argv) + built)


@app.command("runs")
def runs_cmd(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Rebuild the index from the run directories.")
    ] = False,
) -> None:
    """List stored runs (newest last)."""
    from assay.store import Index

    store = open_store()
    index = Index(store.home / "assay.db")
    index.sync(store, rebuild=rebuild)
    rows = index.runs()
    index.close()
    for skipped in index.skipped:
        console.print(Text(f"skipped a damaged run: {skipped}", style="yellow"))
    if not rows:
        out.print("no runs yet: start one with 'assay run quick'")
        return
    t = Table(title=f"Runs in {store.runs_dir}", title_justify="left")
    t.add_column("run", no_wrap=True, min_width=21)  # ids are what users copy: never cut
    for col in ("suite", "status", "host", "jobs", "failed", "samples", "label"):
        t.add_column(col)
    for r in rows:
        status = r["status"]  # a run whose assay died was closed when the store was opened
        # Text, not str: a suite name or label such as "[/]" is data, never rich markup.
        cells = (r["run_id"], r["suite"], status, r["hostname"], r["n_jobs"], r["n_failed"])
        cells += (r["n_samples"], r["label"])
        t.add_row(*(Text(str(c)) for c in cells))
    out.print(t)


# The other commands, one module per topic: report; doctor and plan-io; import; compare (runs or
# --ref), references, summary; history with change points, label.
from assay.cli.check import register as _register_check  # noqa: E402
from assay.cli.compare import register as _register_compare  # noqa: E402
from assay.cli.history import register as _register_history  # noqa: E402
from assay.cli.imports import register as _register_import  # noqa: E402
from assay.cli.report import register as _register_report  # noqa: E402
from assay.cli.system import register as _register_system  # noqa: E402

_register_report(app)
_register_system(app)
_register_import(app)
_register_compare(app)
_register_history(app)
_register_check(app)


def main() -> None:
    """Entry point. typer's standalone mode handles usage errors (exit 2) and typer.Exit; our
    own errors are printed as messages, not tracebacks (``--debug`` shows them)."""
    try:
        app()
    except AssayError as exc:
        if STATE["debug"]:
            raise
        console.print(Text("error: ", style="red") + Text(str(exc)))
        sys.exit(exc.exit_code)
