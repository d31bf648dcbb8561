"""``assay history`` (a metric across runs, with change points) and ``assay label``."""

from __future__ import annotations

import fnmatch
import math
from typing import Annotated, Any

import typer
from rich.text import Text

from assay.cli.common import index_notes, open_index, say_damage
from assay.cli.compare import emit, err, run_store
from assay.errors import AssayError, NotFoundError


def history(
    metric: Annotated[str, typer.Argument(help="A metric, e.g. memory.triad or p2p.latency.")],
    params: Annotated[
        list[str] | None, typer.Option("--params", help="Filter: key=value (repeatable).")
    ] = None,
    system: Annotated[
        str | None,
        typer.Option("--system", help="Only runs on this host, or with this label (globs work)."),
    ] = None,
    min_change: Annotated[
        float,
        typer.Option("--min-change", help="Ignore changes smaller than this fraction."),
    ] = 0.01,
    fmt: Annotated[str, typer.Option("--format", "-f", help="term, md or html.")] = "term",
) -> None:
    """A metric across stored runs, oldest first, with its change points.

    Change points: E-divisive with a permutation test (p < 0.01), on the per-run median of each
    series (one metric, one parameter set, one host). Mark an upgrade with 'assay label'.
    """
    from assay.analysis.compare.verdict import identity
    from assay.analysis.statistics.changepoint import change_points
    from assay.plan import parse_value
    from assay.report.reference import history as history_sections
    from assay.units import format_value, metric_info, to_display

    if not (math.isfinite(min_change) and 0 <= min_change <= 10):  # NaN hid every change
        raise AssayError(
            f"--min-change {min_change}: a fraction from 0 to 10 (0.01: changes under 1% ignored)"
        )
    where: dict[str, Any] = {}
    for p in params or []:
        k, sep, v = p.partition("=")
        if not sep or not k:
            raise AssayError(f"--params {p!r}: expected key=value, e.g. size=8")
        where[k] = parse_value(v)
    store = run_store()
    index = open_index(store)  # made again from the run directories if it had to be
    try:
        rows = index.history(metric, where)
        runs = index.runs()
    finally:
        index.close()
    index_notes(index)  # a damaged page met by a query: the index was made again
    labels = {r["run_id"]: r["label"] or "" for r in runs}
    if system:
        rows = [
            r for r in rows
            if fnmatch.fnmatchcase(r["hostname"] or "", system)
            or fnmatch.fnmatchcase(labels.get(r["run_id"], ""), system)
        ]  # fmt: skip
    used = {r["run_id"] for r in rows}
    say_damage(note for r in runs if r["run_id"] in used for note in r["damage"])
    if not rows:
        raise NotFoundError(
            f"no samples of {metric!r}"
            + (f" with {where}" if where else "")
            + (f" on {system!r}" if system else "")
        )
    series: dict[tuple, dict[str, list[float]]] = {}
    for r in rows:
        key = (r["hostname"] or "?", identity(r["params"]))
        series.setdefault(key, {}).setdefault(r["run_id"], []).append(r["value"])
    info = metric_info(metric)
    unit = info.display
    sections: list = []
    charts = []
    if len(series) > 4:
        sections.append(_series_overview(metric, series, info.better, min_change, unit))
    else:
        for (host, ident), per_run in series.items():
            run_ids = sorted(per_run)
            values = [sorted(per_run[i])[len(per_run[i]) // 2] for i in run_ids]
            changes = change_points(values, info.better, min_change=min_change)
            marks = {c.index: c for c in changes}
            table = []
            for i, run_id in enumerate(run_ids):
                c = marks.get(i)
                mark = f"{'▼' if c.direction == 'regression' else '▲'} {c.size:+.1%}" if c else ""
                table.append([run_id, host, labels.get(run_id, ""), format_value(values[i], unit),
                              mark])  # fmt: skip
            around = [(c, run_ids[c.index - 1], run_ids[c.index]) for c in changes]
            shown = ", ".join(f"{k}={v}" for k, v in ident) or "all params"
            if fmt == "html":  # a plot after the series' first section
                from assay.report.plots import history_chart

                charts.append(history_chart(
                    f"plot-history-{len(charts)}", f"{metric} on {host} ({shown})", unit,
                    run_ids, [to_display(v, unit) for v in values], changes,
                    f"s{len(sections)}-",
                ))  # fmt: skip
            sections += history_sections(f"{metric} on {host} ({shown})", table, around, unit)
    emit(sections, fmt, f"assay history: {metric}", tuple(charts))


def _series_overview(metric, series, better, min_change, unit):
    from assay.analysis.statistics.changepoint import change_points
    from assay.report.table import Table

    s = Table(
        "history-overview",
        f"{metric}: {len(series)} series",
        ["host", "params", "runs", "latest run", "change points"],
        [],
    )
    for (host, ident), per_run in sorted(series.items(), key=lambda kv: str(kv[0])):
        run_ids = sorted(per_run)
        values = [sorted(per_run[i])[len(per_run[i]) // 2] for i in run_ids]
        changes = change_points(values, better, min_change=min_change)
        text = (
            "; ".join(f"{c.direction} {c.size:+.1%} at {run_ids[c.index]}" for c in changes)
            or "none"
        )
        shown = ", ".join(f"{k}={v}" for k, v in ident)
        s.rows.append([host, shown, str(len(run_ids)), run_ids[-1], text])
    s.notes.append("narrow to one series with --params key=value (and --system HOST)")
    return s


def label(
    run_ref: Annotated[str, typer.Argument(metavar="RUN", help="Run id, prefix or latest.")],
    text: Annotated[str, typer.Argument(help="The label, e.g. 'driver 550.54 installed'.")],
) -> None:
    """Label a run (a driver upgrade, a BIOS change): shown in runs, history and summaries."""
    from assay.store import Index
    from assay.store.rundir import RunWriter

    store = run_store()
    run = store.load(run_ref, samples=False)
    run.info.label = text
    RunWriter(run.path, run.info).save_info()  # an atomic rewrite of run.json
    try:
        index = Index(store.home / "assay.db")
        index.sync(store)
        index.close()
    except AssayError as exc:  # the run directory is the truth; the index can be rebuilt
        err.print(Text(f"warning: {exc}"))
    err.print(Text(f"run {run.info.run_id} labelled {text!r}"))


def register(app: typer.Typer) -> None:
    """Add these commands to the main app."""
    app.command("history")(history)
    app.command("label")(label)
