"""The command line: ``assay doctor | run | collect | runs | report | compare | summary |
references | history | label | import | check | config | plan-io`` (each command's module under
``assay.cli`` registers it; ``assay --help`` lists them).

Exit codes: 0 success; 1 a run finished but some jobs failed; 2 bad input or environment
(the message says what and where; a full disk); 3 a run or metric that does not exist;
128 + the signal for a run stopped by one: 130 Ctrl-C (SIGINT), 143 SIGTERM, 129 SIGHUP.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer
from rich.text import Text

from assay import __version__
from assay.cli.common import console, open_index, open_store, out
from assay.errors import AssayError
from assay.textutil import terminal

# More runs than any store holds; SQLite's LIMIT takes a 64-bit integer, so 10**20 was an
# OverflowError (issue 28).
MAX_LIMIT = 10**9

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
    # 0.1 s to render; 'assay --help' must answer in under 0.3 s (tests/report/test_progress.py).
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
    all_runs: Annotated[bool, typer.Option("--all", help="List every stored run.")] = False,
    limit: Annotated[
        int,
        typer.Option(
            "--limit", "-n", metavar="N", min=1, max=MAX_LIMIT, help="List the newest N runs."
        ),
    ] = 20,
) -> None:
    """List stored runs, newest last: the newest 20 unless --all or --limit N."""
    from assay.cli.common import index_notes, say_damage
    from assay.report.runs_list import more_line, runs_table

    store = open_store()
    index = open_index(store, rebuild=rebuild)
    rows = index.runs(limit=None if all_runs else limit)
    total = len(rows) if all_runs else index.count()
    index.close()
    index_notes(index)  # a damaged page met by a query: the index was made again
    if not rows:
        out.print("no runs yet: start one with 'assay run quick'")
        return
    out.print(runs_table(rows, store.runs_dir))
    if more := more_line(len(rows), total):
        out.print(Text(more))
    say_damage(note for r in rows for note in r["damage"])  # damaged lines skipped, per run


# The other commands, one module per topic: report; doctor and plan-io; import; compare (runs or
# --ref), references, summary; history with change points, label.
from assay.cli.check import register as _register_check  # noqa: E402
from assay.cli.compare import register as _register_compare  # noqa: E402
from assay.cli.config import register as _register_config  # noqa: E402
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
_register_check(app)
_register_config(app)


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
