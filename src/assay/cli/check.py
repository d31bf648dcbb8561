"""``assay check``: measure at a level (or a suite), judge every node and link against a
baseline, re-measure each FAIL, and drain (or resume) Slurm nodes on the verdicts.

Exit status: 0 every check passes, 1 warnings, 3 a failure (that stood after its retest),
2 bad input or environment (a baseline of another node type, a figure the baseline lacks, a
level that cannot run here, no right to drain): then nothing is drained.

The flow is in ``assay.run.check`` (this command parses its options and prints); the judging
in ``assay.analysis.check.checkrun`` and ``assay.analysis.check.health``; the tables and files in
``assay.report.check``, ``junit`` and ``openmetrics`` (written by ``assay.cli.checkshow``); the
node actions in ``assay.run.check.nodes``, through the scheduler's node administration.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.batchopts import (
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
from assay.cli.common import out
from assay.errors import AssayError

_OUT = "Outputs"


def check(
    suite: Annotated[
        str | None,
        typer.Argument(help="A suite (built-in name or TOML file) instead of a level."),
    ] = None,
    level: Annotated[
        int | None, typer.Option("--level", "-l", help="1, 2 or 3 (see --list); default 1.")
    ] = None,
    list_: Annotated[
        bool, typer.Option("--list", help="List the levels: contents and time budget.")
    ] = False,
    on: Annotated[str, typer.Option(help="Where it runs: local (this node) or slurm.")] = "local",
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline",
            "-b",
            metavar="NAME",
            help="A reference set to judge against (repeatable: one per node type); default "
            "[check] baseline in the config, else the median of the peer nodes.",
        ),
    ] = None,
    drain: Annotated[
        bool, typer.Option("--drain", help="Drain each node that fails (scontrol update).")
    ] = False,
    resume: Annotated[
        bool,
        typer.Option("--resume", help="Resume the nodes assay drained that pass now."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the scontrol lines instead of running them.")
    ] = False,
    node: Annotated[
        str | None,
        typer.Option(
            "--node",
            metavar="NAME",
            help="Local: this node's Slurm name (default $SLURMD_NODENAME, else the host name).",
        ),
    ] = None,
    retest: Annotated[
        bool, typer.Option("--retest/--no-retest", help="Re-measure each FAIL before it stands.")
    ] = True,
    fail_below: Annotated[
        list[str] | None,
        typer.Option(
            "--fail-below",
            metavar="[METRIC=]RATIO",
            help="FAIL below this ratio to the baseline (repeatable; default 0.9, storage and "
            "links 0.5).",
        ),
    ] = None,
    warn_below: Annotated[
        list[str] | None,
        typer.Option(
            "--warn-below",
            metavar="[METRIC=]RATIO",
            help="WARN below this ratio (repeatable; default 0.95, storage and links 0.8).",
        ),
    ] = None,
    set_: Annotated[
        list[str] | None,
        typer.Option("--set", metavar="KEY=VALUE", help="Override a param (as assay run)."),
    ] = None,
    mpi: Annotated[str | None, typer.Option(help="MPIs to use, comma-separated.")] = None,
    label: Annotated[str, typer.Option(help="A free-text label kept with the run.")] = "",
    json_: Annotated[
        bool, typer.Option("--json", help="The verdicts as JSON on stdout.", rich_help_panel=_OUT)
    ] = False,
    junit: Annotated[
        Path | None,
        typer.Option(
            help="Write JUnit XML (a test case per node and check).", rich_help_panel=_OUT
        ),
    ] = None,
    openmetrics: Annotated[
        Path | None,
        typer.Option(
            help="Write OpenMetrics gauges (node_exporter's textfile collector).",
            rich_help_panel=_OUT,
        ),
    ] = None,
    html: Annotated[
        Path | None,
        typer.Option(help="Write the verdict page (HTML).", rich_help_panel=_OUT),
    ] = None,
    nodes: Nodes = None,
    partition: Partition = None,
    account: Account = None,
    qos: Qos = None,
    constraint: Constraint = None,
    time_limit: TimeLimit = None,
    sbatch_arg: SbatchArg = None,
    max_wait: MaxWait = None,
) -> None:
    """Judge each node (and link) PASS, WARN or FAIL against a baseline; drain what fails.

    Exit status: 0 all pass, 1 warnings, 3 a failure (confirmed on retest), 2 bad input.

    Examples:

      assay check --list

      assay check --level 1 --baseline my-nodes --drain --resume      (HealthCheckProgram)

      assay check --level 2 --on slurm --nodes 16 --drain --junit check.xml
    """
    from assay.cli.checkshow import Shown, write_result
    from assay.run.check.flow import CheckArgs, run_check

    if list_:
        list_levels()
        return
    own = own_options(partition, account, qos, constraint, time_limit, sbatch_arg, max_wait)
    args = CheckArgs(
        suite=suite, level=level, on=on, baselines=list(baseline or []), drain=drain,
        resume=resume, dry_run=dry_run, node=node, retest=retest,
        fail_below=list(fail_below or []), warn_below=list(warn_below or []),
        sets=list(set_ or []), mpi=mpi, label=label, json=json_, junit=junit,
        openmetrics=openmetrics, html=html, nodes=nodes, own=own,
    )  # fmt: skip
    try:
        result = run_check(args, Shown())
        write_result(args, result)
        code = result.code
    except KeyboardInterrupt:  # Ctrl-C or SIGTERM: the run is closed, nothing was drained
        raise typer.Exit(130) from None
    except AssayError as exc:
        if exc.exit_code != 2:  # 3 means a failing node here: a missing baseline is bad input
            raise AssayError(str(exc).split("\n  hint: ")[0], hint=exc.hint) from exc
        raise
    if code:
        raise typer.Exit(code)


def list_levels() -> None:
    from rich.table import Table as RichTable
    from rich.text import Text

    from assay.run.check.flow import levels

    t = RichTable(title="assay check levels", title_justify="left")
    for col in ("level", "suite", "budget", "runs on", "contents"):
        t.add_column(col, overflow="fold")
    for level, (name, spec, _) in sorted(levels().items()):
        chk = spec.check  # type: ignore[attr-defined]
        budget = f"{chk.budget_s / 60:g} min" if chk.budget_s >= 120 else f"{chk.budget_s:g} s"
        where = (
            "this node (no allocation)"
            if chk.max_nodes == 1
            else f"--on slurm, {chk.min_nodes}+ nodes"
        )
        t.add_row(str(level), name, budget, where, Text("\n".join(f"• {c}" for c in chk.contents)))
    out.print(t)
    out.print("Any suite can be checked instead: assay check SUITE (its figures judged alike).")


def register(app: typer.Typer) -> None:
    """Add the command to the main app."""
    app.command("check")(check)
