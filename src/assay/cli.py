"""The command line: ``assay doctor | run | runs | report | history``.

Exit codes: 0 success; 1 a run finished but some jobs failed; 2 bad input or environment
(the message says what and where; a full disk); 3 a run or metric that does not exist;
128 + the signal for a run stopped by one: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from assay import __version__
from assay.config import assay_home
from assay.errors import AssayError
from assay.model import Job, JobResult
from assay.store import Index, RunStore, recover

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
)
console = Console(stderr=True)
out = Console(highlight=False)
STATE = {"debug": False}
_SL = "Slurm (--on slurm)"


def _version(value: bool) -> None:
    if value:
        print(f"assay {__version__}")
        raise typer.Exit()


@app.callback()
def _main(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool, typer.Option("--version", callback=_version, is_eager=True, help="Print version.")
    ] = False,
) -> None:
    STATE["debug"] = debug


def _store() -> RunStore:
    store = RunStore(assay_home())
    for message in recover(store.home):  # runs left "running" by a killed assay end "interrupted"
        console.print(Text(f"note: {message}", style="yellow"))
    return store


def _index(store: RunStore) -> Index:
    index = Index(store.home / "assay.db")
    index.sync(store)
    return index


def _discover():
    from assay.system import collect_system
    from assay.toolchain import discover_mpis

    mpis = discover_mpis()
    return collect_system(mpis), mpis


@app.command()
def doctor() -> None:
    """What was found: CPUs, caches, NUMA, MPIs, compilers, tools, GPUs; and what is missing."""
    from assay.system import requirements_report

    system, _ = _discover()
    t = Table(title="System", show_header=False, title_justify="left")
    t.add_column("fact")
    t.add_column("value")
    for key, value in system.to_dict().items():
        if key in ("mpis", "hosts", "notes", "l3_domains", "numa_nodes", "clocks"):
            continue
        shown = (
            ", ".join(f"{k} {v}" for k, v in value.items())
            if isinstance(value, dict)
            else (" ".join(map(str, value)) if isinstance(value, list) else value)
        )
        t.add_row(key, "unknown" if shown in (None, "") else str(shown))
    if system.clocks:
        from assay.system.clock import describe_clocks

        t.add_row("clocks", describe_clocks(system.clocks))
    if system.l3_domains:
        t.add_row("l3_domains", "; ".join(_cpus(d) for d in system.l3_domains))
    if system.numa_nodes:
        t.add_row(
            "numa_nodes", "; ".join(f"{n['id']}: {_cpus(n['cpus'])}" for n in system.numa_nodes)
        )
    out.print(t)
    m = Table(title="MPI implementations", title_justify="left")
    for col in ("name", "version", "compiler", "launcher", "found via"):
        m.add_column(col)
    for mpi in system.mpis:
        m.add_row(mpi.name, mpi.version, mpi.mpicc, mpi.launcher, mpi.source)
    out.print(m)
    r = Table(title="Requirements", title_justify="left")
    for col in ("what", "found", "detail"):
        r.add_column(col)
    for what, found, detail in requirements_report(system):
        r.add_row(what, "[green]yes[/green]" if found else "[red]no[/red]", detail)
    out.print(r)
    for note in system.notes:
        out.print(f"note: {note}")


def _cpus(cpus: list[int]) -> str:
    """0-3,8-11 as the kernel writes CPU lists."""
    if not cpus:
        return "-"
    cpus = sorted(cpus)
    spans, start, prev = [], cpus[0], cpus[0]
    for c in [*cpus[1:], None]:
        if c is not None and c == prev + 1:
            prev = c
            continue
        spans.append(f"{start}-{prev}" if prev != start else str(start))
        if c is not None:
            start = prev = c
    return ",".join(spans)


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
        typer.Option("--set", help="Override a param: key=value or probe.key=value (repeatable)."),
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
        int | None, typer.Option(help="Nodes to allocate.", rich_help_panel=_SL)
    ] = None,
    partition: Annotated[str | None, typer.Option(rich_help_panel=_SL)] = None,
    account: Annotated[str | None, typer.Option(rich_help_panel=_SL)] = None,
    qos: Annotated[str | None, typer.Option(rich_help_panel=_SL)] = None,
    constraint: Annotated[str | None, typer.Option(rich_help_panel=_SL)] = None,
    time_limit: Annotated[
        str | None, typer.Option("--time", help="Slurm time limit.", rich_help_panel=_SL)
    ] = None,
    sbatch_arg: Annotated[
        list[str] | None,
        typer.Option(help="Extra sbatch argument (repeatable).", rich_help_panel=_SL),
    ] = None,
    max_wait: Annotated[
        float | None,
        typer.Option(help="Seconds the allocation may stay pending.", rich_help_panel=_SL),
    ] = None,
    detach: Annotated[
        bool, typer.Option(help="Submit and return; 'assay collect'.", rich_help_panel=_SL)
    ] = False,
    all_pairs: Annotated[
        bool, typer.Option(help="p2p between every node pair.", rich_help_panel=_SL)
    ] = False,
    intra_node: Annotated[
        bool, typer.Option(help="Also p2p within one node.", rich_help_panel=_SL)
    ] = False,
) -> None:
    """Run a suite and store every result with the system it came from.

    Examples:

      assay run quick

      assay run quick --only p2p --mpi openmpi --set max_size=65536

      assay run my-suite.toml --repeat 5 --label "after BIOS update"
    """
    from assay.execute import execute
    from assay.launch import LOCAL, check_jobs
    from assay.plan import Overrides, plan
    from assay.probes import PlanContext
    from assay.suite import resolve_suite
    from assay.system import collect_plan_facts

    if on not in ("local", "slurm"):
        raise AssayError(f"--on {on}: expected local or slurm")
    slurm_opts = None
    if on == "slurm":
        from assay.config import load_config
        from assay.launch.slurm_options import options_from_config

        slurm_opts = options_from_config(
            load_config(), nodes=nodes, partition=partition, account=account, qos=qos,
            constraint=constraint, time=time_limit, sbatch_args=list(sbatch_arg or []),
            max_wait=max_wait, detach=detach or None, all_pairs=all_pairs or None,
            intra_node=intra_node or None,
        )  # fmt: skip
    elif all_pairs or detach or nodes:
        raise AssayError("--nodes, --all-pairs and --detach need --on slurm")
    if vdbench is not None:
        spec, text, origin = _vdbench_suite(suite, vdbench, lun_map, target, elapsed, warmup, size)
    else:
        spec, text, origin = resolve_suite(suite)
    auto = repeat == "auto"  # assay.repeat_auto: each job repeated until its CI is within ±2%
    if repeat is not None and not auto and not (repeat.isdigit() and int(repeat) >= 1):
        raise AssayError(f"--repeat {repeat!r}: expected a count (1, 2, ...) or 'auto'")
    overrides = Overrides(
        only=[p.strip() for p in only.split(",")] if only else [],
        mpi=[m.strip() for m in mpi.split(",")] if mpi else None,
        sets=list(set_ or []),
        repeat=1 if auto else (int(repeat) if repeat else None),
    )
    system, mpis = _discover()
    jobs = plan(spec, PlanContext(system=system, mpis=mpis, facts=collect_plan_facts()), overrides)
    if slurm_opts is not None:
        if not dry_run:
            from assay.preflight import preflight

            preflight(jobs)
        _run_slurm(spec.name, text, system, mpis, jobs, slurm_opts, label, dry_run)
        return
    check_jobs(jobs, LOCAL)  # what the launcher cannot do is refused, exit 2
    if dry_run:
        for job in jobs:
            out.print(f"{job.job_id}: {' '.join(job.argv)}  env={job.env or {}}", markup=False)
        return
    from assay.preflight import preflight

    preflight(jobs)  # a bad target is refused here, exit 2, before a run exists
    store = _store()
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
    with Progress(
        TextColumn("[bold]{task.fields[probe]}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.description}"),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    ) as progress:
        task = progress.add_task("", total=len(jobs), probe="")

        def on_start(i: int, n: int, job: Job) -> None:
            progress.update(task, probe=job.probe, description=job.job_id)

        def on_end(i: int, n: int, job: Job, result: JobResult) -> None:
            progress.advance(task)
            colour = {"ok": "green", "skipped": "yellow"}.get(result.status, "red")
            mark = f"[{colour}]{result.status}[/{colour}]"
            progress.console.print(
                f"  {mark} {job.job_id} ({result.wall_time:.1f} s, {result.n_samples} samples)"
            )
            if result.status != "ok":
                progress.console.print(f"    {result.reason}", markup=False)

        if auto:
            from assay.repeat_auto import execute_auto

            outcome, reps = execute_auto(
                writer, jobs, mpis, cores=system.cores, on_start=on_start, on_end=on_end
            )
        else:
            outcome = execute(
                writer, jobs, mpis, cores=system.cores, on_start=on_start, on_end=on_end
            )
    _summary(outcome, time.monotonic() - started, writer.path)
    for r in reps if auto else []:
        width = "—" if r.widest is None else f"±{r.widest:.1%}"
        console.print(
            Text(f"  {r.job_id}: {r.repetitions} repetition(s), {width} ({r.limiting}); {r.reason}")
        )
    try:
        _index(store).close()
    except AssayError as exc:  # the results are in the run directory whatever the index says
        console.print(Text(f"warning: {exc}", style="yellow"))
    if outcome.info.status == "interrupted":
        raise typer.Exit(128 + (outcome.stop_signal or 2))  # 130 Ctrl-C, 143 SIGTERM
    if outcome.failed:
        raise typer.Exit(1)


def _run_slurm(name, text, system, mpis, jobs, opts, label, dry) -> None:
    from assay.cli_slurm import run_slurm

    store = _store()
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
    _summary(outcome, time.monotonic() - started, store.runs_dir / outcome.info.run_id)
    try:
        _index(store).close()
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
    from assay.cli_slurm import collect as collect_run
    from assay.config import load_config
    from assay.launch.slurm_options import options_from_config

    store = _store()
    started = time.monotonic()
    try:
        outcome = collect_run(console, store, run_ref, options_from_config(load_config()))
    except KeyboardInterrupt:
        raise typer.Exit(130) from None
    _after_slurm(store, outcome, started)


def _vdbench_suite(suite, path, lun_map, target, elapsed, warmup, size):
    """A Vdbench parameter file as a suite; what cannot be translated is said, not dropped."""
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
        size=size_bytes,
    )  # fmt: skip
    for note in notes:
        console.print(Text(f"vdbench: {note}", style="yellow"))
    return spec, suite_toml(spec, notes), str(path)


def _summary(outcome, elapsed: float, path: Path) -> None:
    t = Table(title=f"Run {outcome.info.run_id} — {outcome.info.status}", title_justify="left")
    for col in ("job", "status", "wall s", "samples"):
        t.add_column(col, justify="right" if col in ("wall s", "samples") else "left")
    for r in outcome.results:
        style = {"ok": "green", "skipped": "yellow"}.get(r.status, "red")
        t.add_row(
            r.job_id, f"[{style}]{r.status}[/{style}]", f"{r.wall_time:.1f}", str(r.n_samples)
        )
    console.print(t)
    skipped = sum(1 for r in outcome.results if r.status == "skipped")
    ok = len(outcome.results) - len(outcome.failed) - skipped
    console.print(
        f"{ok}/{len(outcome.results)} jobs ok"
        + (f", {skipped} skipped (nothing to measure here)" if skipped else "")
        + ", "
        f"{len(outcome.samples)} samples in {elapsed:.0f} s; stored in {path}\n"
        "see the figures with: assay report"
    )
    for note in outcome.info.notes:
        console.print(Text(f"note: {note}", style="yellow"))


@app.command("runs")
def runs_cmd(
    rebuild: Annotated[
        bool, typer.Option("--rebuild", help="Rebuild the index from the run directories.")
    ] = False,
) -> None:
    """List stored runs (newest last)."""
    store = _store()
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


@app.command()
def report(
    run_refs: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="RUN...",
            help="Run ids or prefixes; default: the latest. Several: one report, their MPIs "
            "(and imports, by label) side by side.",
        ),
    ] = None,
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="term, md, html, json or csv.")
    ] = "term",
    output: Annotated[
        Path | None, typer.Option("-o", "--output", help="Write to this file instead of stdout.")
    ] = None,
    plots_dir: Annotated[
        Path | None, typer.Option("--plots-dir", help="Also write every plot here (SVG and PNG).")
    ] = None,
) -> None:
    """Report a run: system, STREAM, MPI latency/bandwidth tables (one column per MPI).

    Example: assay report --format html -o report.html
    """
    from assay.report import render

    store = _store()
    refs = run_refs or [None]
    # json streams one run's samples as stored; several are merged, so read them
    loaded = [store.load(ref, samples=fmt != "json" or len(refs) > 1) for ref in refs]
    text = render(loaded, fmt, plots_dir=plots_dir)
    if output:
        try:
            output.write_text(text)
        except OSError as exc:
            raise AssayError(
                f"cannot write the report to {output}: {exc.strerror or exc}",
                hint="give a file in a directory that exists and that you can write to",
            ) from exc
        console.print(Text(f"wrote {output}"))
    else:
        sys.stdout.write(text)


def _duration_s(text: str) -> float:
    """'1.3ms', '1300us', '0.0013s' or '0.0013' (seconds) -> seconds."""
    from assay.plan import parse_value

    t = text.strip().lower()
    for suffix, factor in (("ms", 1e-3), ("us", 1e-6), ("µs", 1e-6), ("ns", 1e-9), ("s", 1.0)):
        if t.endswith(suffix):
            t, scale = t[: -len(suffix)], factor
            break
    else:
        scale = 1.0
    value = parse_value(t)
    if not isinstance(value, int | float) or value <= 0:
        raise AssayError(f"--latency {text!r}: expected a duration such as 1.3ms or 800us")
    return float(value) * scale


@app.command("plan-io")
def plan_io(
    latency: Annotated[
        str, typer.Option(help="Latency of one I/O at low load, e.g. 1.3ms (run 1 thread first).")
    ],
    iops: Annotated[float, typer.Option(min=0, help="The IOPS you want to reach.")],
    hosts: Annotated[int, typer.Option(min=1, help="Client hosts sharing the load.")] = 1,
) -> None:
    """Threads (outstanding I/Os) needed for a target IOPS, by Little's law: L = IOPS × latency.

    As the Azure NetApp Files notes explain: run with one thread to find the best latency,
    then threads = latency × desired I/O rate. Example: assay plan-io --latency 1.3ms --iops 5000
    """
    from assay.analysis.queueing import threads_needed

    seconds = _duration_s(latency)
    per_host = threads_needed(iops, seconds, hosts)
    total = iops * seconds
    out.print(
        f"{iops:g} IOPS × {seconds * 1e3:g} ms = {total:.2f} I/Os in flight"
        + (f", {total / hosts:.2f} per host" if hosts > 1 else "")
        + f" → {per_host} thread(s){' per host' if hosts > 1 else ''}"
        " (threads × iodepth for an asynchronous engine).",
        markup=False,
    )
    out.print(
        "This holds while the latency stays at its low-load value; near saturation it grows "
        "(see the response-time curve of the storage suite).",
        markup=False,
    )


@app.command("import")
def import_cmd(
    files: Annotated[list[Path], typer.Argument(help="Output files of the tool.")],
    fmt: Annotated[
        str, typer.Option("--format", "-f", help="Which tool wrote them, or 'auto'.")
    ] = "auto",
    label: Annotated[
        str, typer.Option(help="Column label in reports (e.g. 'MVAPICH2 2.3'); default: file name.")
    ] = "",
    system_from: Annotated[
        str | None,
        typer.Option("--system-from", help="Take the system record from this stored run."),
    ] = None,
) -> None:
    """Store third-party outputs (OSU, IMB, perftest, STREAM, HPL, HPCC, fio, ...) as a run.

    Example: assay import --format osu --label "MVAPICH2 2.3" osu_latency.txt
    """
    from assay.importer import import_files
    from assay.model import System
    from assay.parsers import FORMATS

    if fmt != "auto" and fmt not in FORMATS:
        raise AssayError(f"unknown format {fmt!r}", hint=f"formats: auto, {', '.join(FORMATS)}")
    store = _store()
    if system_from:
        system = store.load(system_from).system
    else:
        system = System(notes=["imported output: the system it ran on was not recorded"])
    run_id, outcomes = import_files(store, files, fmt, system=system, label=label, argv=sys.argv)
    for o in outcomes:
        style = {"ok": "green", "partial": "yellow"}.get(o.status, "red")
        console.print(
            Text(f"  {o.status:8}", style=style) + Text(f"{o.path}: {o.n_samples} samples")
        )
        if o.message:
            console.print(Text(f"    {o.message}"))
    console.print(f"stored as run {run_id}; see it with: assay report {run_id}")
    try:
        _index(store).close()
    except AssayError as exc:  # the data is in the run directory whatever the index says
        console.print(Text(f"warning: {exc}", style="yellow"))
    if all(o.status == "failed" for o in outcomes):
        raise typer.Exit(2)
    if any(o.status != "ok" for o in outcomes):
        raise typer.Exit(1)


# compare (runs or --ref), references, summary, history with change points, label.
from assay.cli_compare import register as _register_compare  # noqa: E402
from assay.cli_history import register as _register_history  # noqa: E402

_register_compare(app)
_register_history(app)


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
