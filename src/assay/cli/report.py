"""``assay report``: one run, or several side by side, as text, Markdown, HTML, JSON or CSV."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from assay.cli.common import open_store, say_run_damage, write_output


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

    A cluster run's links and nodes that stand apart are named: robust z-score beyond 3.5 and
    at least 1.25x (a link) or 1.1x (a node's STREAM, DGEMM) worse than the median; set these
    under [outliers] in the config (threshold, link_factor, node_factor).

    Example: assay report --format html -o report.html
    """
    store = open_store()
    refs = run_refs or [None]
    # term/md/html read each run's folded figures (assay.figures.folded: cached beside the run),
    # json streams one run's samples as stored; csv, or json of several runs, reads them all
    raw = fmt == "csv" or (fmt == "json" and len(refs) > 1)
    from assay.analysis.statistics.outliers import outlier_rule  # numpy: not for --help
    from assay.run.configfile import load_config

    rule = outlier_rule(load_config())  # a config mistake first, before reading any run
    loaded = [store.load(ref, samples=raw) for ref in refs]
    from assay.report.render import render_chunks  # after the runs: "no runs yet" answers at once

    write_output(render_chunks(loaded, fmt, plots_dir=plots_dir, rule=rule), output)
    say_run_damage(*loaded)  # damaged lines skipped, found while reading (the report says too)


def register(app: typer.Typer) -> None:
    """Add the command to the main app."""
    app.command("report")(report)
