"""``assay import``: third-party outputs stored as a run, each file judged on its own."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

from assay.cli.common import console, open_index, open_store
from assay.errors import AssayError
from assay.textutil import terminal
from assay.vocab import IMPORT_FORMATS


def import_cmd(
    files: Annotated[list[Path], typer.Argument(help="Output files of the tool.")],
    fmt: Annotated[
        str,
        typer.Option("--format", "-f", help="Which tool wrote them (formats below), or 'auto'."),
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
    from assay.model import System
    from assay.parsers import FORMATS
    from assay.run.importer import import_files

    if fmt != "auto" and fmt not in FORMATS:
        raise AssayError(f"unknown format {fmt!r}", hint=f"formats: auto, {', '.join(FORMATS)}")
    store = open_store()
    if system_from:
        system = store.load(system_from).system
    else:
        system = System(notes=["imported output: the system it ran on was not recorded"])
    run_id, outcomes = import_files(store, files, fmt, system=system, label=label, argv=sys.argv)
    for o in outcomes:
        style = {"ok": "green", "partial": "yellow"}.get(o.status, "red")
        console.print(
            Text(f"  {o.status:8}", style=style)
            + Text(f"{terminal(o.path)}: {o.n_samples} samples")  # a file name is data
        )
        if o.message:
            console.print(Text(f"    {terminal(o.message)}"))
    if run_id is None:  # a failed import is not a run
        console.print(Text("nothing stored: no file could be imported", style="red"))
        raise typer.Exit(2)
    console.print(f"stored as run {run_id}; see it with: assay report {run_id}")
    try:
        open_index(store).close()
    except AssayError as exc:  # the data is in the run directory whatever the index says
        console.print(Text(f"warning: {terminal(exc)}", style="yellow"))
    if any(o.status != "ok" for o in outcomes):
        raise typer.Exit(1)


# The formats, one line each, after the command's own help (indented as the docstring is, so
# its dedent holds; "\b": click keeps the lines as they are instead of refilling them).
import_cmd.__doc__ = (
    (import_cmd.__doc__ or "").rstrip()
    + "\n\n    \b\n    Formats (--format):\n"
    + "".join(f"      {name:<11} {what}\n" for name, what in IMPORT_FORMATS.items())
    + "      auto        each file's tool, told from its header\n"
)


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
