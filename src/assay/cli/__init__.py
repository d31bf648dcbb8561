"""The command line: ``assay doctor | run | runs | report | history``.

Exit codes: 0 success; 1 a run finished but some jobs failed; 2 bad input or environment
(the message says what and where; a full disk); 3 a run or metric that does not exist;
128 + the signal for a run stopped by one: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from assay import __version__
from assay.cli.common import console, open_store, out
from assay.errors import AssayError
from assay.textutil import terminal

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
        console.print(Text(f"skipped a damaged run: {terminal(skipped)}", style="yellow"))
    if not rows:
        out.print("no runs yet: start one with 'assay run quick'")
        return
    t = Table(title=f"Runs in {store.runs_dir}", title_justify="left")
    t.add_column("run", no_wrap=True, min_width=21)  # ids are what users copy: never cut
    for col in ("suite", "status", "host", "jobs", "failed", "samples", "label"):
        t.add_column(col)
    for r in rows:
        status = r["status"]  # a run whose assay died was closed when the store was opened
        # Text, not str: a suite name or label such as "[/]" is data, never rich markup; an
        # escape sequence in one is shown, never sent to the terminal.
        cells = (r["run_id"], r["suite"], status, r["hostname"], r["n_jobs"], r["n_failed"])
        cells += (r["n_samples"], r["label"])
        t.add_row(*(Text(terminal(c)) for c in cells))
    out.print(t)


# The other commands, one module per topic: report; doctor and plan-io; import; compare (runs or
# --ref), references, summary; history with change points, label.
from assay.cli.compare import register as _register_compare  # noqa: E402
from assay.cli.history import register as _register_history  # noqa: E402
from assay.cli.imports import register as _register_import  # noqa: E402
from assay.cli.report import register as _register_report  # noqa: E402
from assay.cli.run import register as _register_run  # noqa: E402
from assay.cli.system import register as _register_system  # noqa: E402

_register_run(app)
_register_report(app)
_register_system(app)
_register_import(app)
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
        console.print(Text("error: ", style="red") + Text(terminal(exc)))  # may name a file
        sys.exit(exc.exit_code)
