"""Renderers: the same tables as terminal text, Markdown, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json
import shutil
from collections.abc import Iterable, Iterator
from pathlib import Path

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable
from rich.text import Text

from assay.analysis.statistics.outliers import OutlierRule
from assay.errors import AssayError
from assay.figures.allpairs import file_matrices
from assay.figures.folded import folded_of, sample_lines
from assay.report.build import Built, build, merge_runs, merge_samples
from assay.report.check import read_verdicts, verdict_tables
from assay.report.table import Table
from assay.store import LoadedRun
from assay.textutil import csv_text, markdown, markdown_code, terminal

# Without a terminal (a pipe, a file, CI) and without COLUMNS, tables are drawn this wide.
DEFAULT_WIDTH = 120

# The JSON report's schema (docs/report-json.md): bump the version on any change a reader of
# version 1 would misread (a renamed or re-meant field); adding a field is not one.
JSON_SCHEMA = "assay-report"
JSON_SCHEMA_VERSION = 2  # docs/report-json.md: what changed with each version

FORMATS = ("term", "md", "html", "json", "csv")


def _header(run: LoadedRun, n_samples: int) -> list[str]:
    info = run.info
    n_ok = sum(1 for r in run.results if r.status == "ok")
    lines = [
        f"Run {info.run_id} — suite {info.suite}, {info.status}"
        + (f" — label {info.label}" if info.label else ""),
        f"{info.created} → {info.finished or 'not finished'}; "
        f"{n_ok}/{len(run.results)} jobs succeeded"
        + (f" of {info.n_jobs} planned" if info.n_jobs and info.n_jobs != len(run.results) else "")
        + f"; {n_samples} samples; {run.path}",
    ]
    if info.status == "running":
        lines.append(
            "This run did not finish (still running, or assay was killed): "
            "every job that finished is shown."
        )
    lines += [f"Note: {n}" for n in info.notes]  # cut short, shared node, full disk
    lines += [f"Note: {n}" for n in run.damage_notes()]  # damaged record lines skipped
    return lines


md = markdown  # a table cell (assay.textutil: the one Markdown escaping)


def md_line(text: str) -> str:
    """A title, a note or a header line: as a cell, and nothing at its start opens a block."""
    return markdown(text, line=True)


def markdown_table(t: Table, level: str = "##") -> list[str]:
    """One table as Markdown lines: title, commands, the table, its notes."""
    out = [f"{level} {md_line(t.title)}", ""]
    for cmd in t.commands:
        out += ["```", markdown_code(cmd), "```", ""]
    if t.key == "system":
        out += ["| | |", "|---|---|"]
        out += [f"| {md(k)} | {md(v)} |" for k, v in t.rows]
    else:
        out.append("| " + " | ".join(md(c) for c in t.columns) + " |")
        out.append("|" + "|".join("---" for _ in t.columns) + "|")
        for r, row in enumerate(t.rows):
            cells = [f"**{md(c)}**" if (r, i) in t.best else md(c) for i, c in enumerate(row)]
            out.append("| " + " | ".join(cells) + " |")
    out.append("")
    out += [f"{md_line(n)}  " for n in t.notes]
    if t.notes:
        out.append("")
    return out


def render_markdown(run: LoadedRun, tables: list[Table], head: list[str]) -> str:
    out = [f"# assay report: {md_line(run.info.suite)}", "", *(f"{md_line(ln)}  " for ln in head)]
    out.append("")
    for t in tables:
        out += markdown_table(t)
    return "\n".join(out).rstrip() + "\n"


def terminal_width(width: int | None = None) -> int:
    """The width to draw at: given, else the terminal's (COLUMNS honoured), else 120."""
    if width:
        return width
    return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns


def rich_table(t: Table) -> RichTable:
    """A table for rich; data is escaped, so a label such as ``[/]`` is shown, not parsed, and
    an escape sequence is shown, not sent to the terminal."""
    title = escape(terminal(t.title))
    rt = RichTable(title=title, title_justify="left", show_header=t.key != "system")
    for i, c in enumerate(t.columns):
        left = i == 0 or t.key in ("system", "failures", "other", "compare")
        # fold, never cut: a cell shortened with "…" would hide what was measured
        rt.add_column(escape(terminal(c)), justify="left" if left else "right", overflow="fold")
    for r, row in enumerate(t.rows):
        rt.add_row(
            *[
                Text(f"{terminal(c)}*", style="bold") if (r, i) in t.best else Text(terminal(c))
                for i, c in enumerate(row)
            ]
        )
    return rt


def term_tables(
    tables: list[Table], width: int | None = None, head: tuple[str, ...] | list[str] = ()
) -> str:
    """Tables drawn as terminal text, once, into a string (the caller prints it)."""
    buf = io.StringIO()
    console = Console(file=buf, width=terminal_width(width), force_terminal=False)
    for line in head:
        console.print(terminal(line), highlight=False, markup=False)
    for t in tables:
        console.print()
        for cmd in t.commands:
            console.print(f"$ {terminal(cmd)}", highlight=False, markup=False)
        console.print(rich_table(t))
        for n in t.notes:
            console.print(f"  {terminal(n)}", highlight=False, markup=False)
    return buf.getvalue()


def render_term(tables: list[Table], width: int | None, head: list[str]) -> str:
    return term_tables(tables, width, head)


def json_chunks(run: LoadedRun, findings: dict | None = None) -> Iterator[str]:
    """The whole run as one JSON document, schema ``docs/report-json.md`` (version
    ``JSON_SCHEMA_VERSION``; ``assay import --format assay-json`` reads it back), in pieces:
    samples are passed through as stored (each is already a JSON object on its own line), so
    a million of them cost no re-encoding, and are written as they are read, never held."""
    head = {
        "schema": JSON_SCHEMA,
        "schema_version": JSON_SCHEMA_VERSION,
        "run": run.info.to_dict(),
        "system": run.system.to_dict(),
        "jobs": [r.to_dict() for r in run.results],
        **(findings or {}),  # blas_kernels, why_low (report.findings)
    }
    if run.samples:
        batches: Iterable[list[str]] = [[json.dumps(s.to_dict(), sort_keys=True)
                                         for s in run.samples]]  # fmt: skip
    else:
        batches = sample_lines(run)  # damaged lines skipped, and noted in run.damage
    yield json.dumps(head, indent=2)[:-2]  # reopen the object to append "samples"
    yield ',\n  "samples": ['
    sep = "\n    "
    for batch in batches:
        if batch:
            yield sep + ",\n    ".join(batch)
            sep = ",\n    "
    yield "\n  ]"
    if run.damage:  # known only now, after the samples: the run's lines skipped as damaged
        yield ',\n  "damaged_lines": ' + json.dumps(run.damage_notes())
    yield "\n}\n"


def render_csv(run: LoadedRun) -> str:
    buf = io.StringIO()
    stat_names = ["n", "min", "max", "mean", "median", "stddev", "p99", "p999"]
    w = csv.writer(buf)
    w.writerow(
        ["run_id", "job_id", "probe", "metric", "value", "unit", "better", "params"]
        + [f"stats_{s}" for s in stat_names]
    )
    for s in run.samples:
        st = s.stats.to_dict() if s.stats else {}
        w.writerow(
            [
                csv_text(s.run_id),
                csv_text(s.job_id),
                csv_text(s.probe),
                csv_text(s.metric),
                repr(s.value),
                csv_text(s.unit),
                csv_text(s.better),
                json.dumps(s.params, sort_keys=True),  # JSON escapes every control character
            ]
            + [st.get(n, "") for n in stat_names]
        )
    return buf.getvalue()


def render_html(run: LoadedRun, built: Built, head: list[str]) -> str:
    """One self-contained HTML page (:mod:`assay.report.html`): tables and their plots."""
    from assay.report.html import page
    from assay.report.plots import charts_of

    charts = charts_of(built.figures, built.derived, built.matrices)
    return page(f"assay report: {run.info.suite}", head, built.tables, charts)


def render(
    run: LoadedRun | list[LoadedRun],
    fmt: str = "term",
    width: int | None = None,
    plots_dir: Path | None = None,
    rule: OutlierRule | None = None,
) -> str:
    """A report of one run, or of several as one (:func:`merge_runs`: an imported OSU output as
    a column beside assay's MPIs). ``plots_dir``: also write every plot there as SVG and PNG;
    ``rule``: which all-pairs links and nodes are outliers (``[outliers]`` in the config)."""
    return "".join(render_chunks(run, fmt, width, plots_dir, rule))


def render_chunks(
    run: LoadedRun | list[LoadedRun],
    fmt: str = "term",
    width: int | None = None,
    plots_dir: Path | None = None,
    rule: OutlierRule | None = None,
) -> Iterator[str]:
    """:func:`render` in pieces to write as they come: the JSON report of a million samples
    is never held whole. A wrong format or option is an error here, before any piece."""
    if plots_dir is not None and fmt in ("json", "csv"):
        raise AssayError(
            f"--plots-dir draws the report's plots; the {fmt} report has none",
            hint="use it with --format term, md or html",
        )
    if fmt not in FORMATS:
        raise AssayError(f"unknown report format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}")
    runs = run if isinstance(run, list) else [run]
    if fmt == "json":
        from assay.report.findings import findings_of

        return json_chunks(merge_samples(runs), findings_of(runs))
    return iter([_render_text(runs, fmt, width, plots_dir, rule)])


def _render_text(
    runs: list[LoadedRun],
    fmt: str,
    width: int | None,
    plots_dir: Path | None,
    rule: OutlierRule | None,
) -> str:
    if fmt == "csv":
        return render_csv(merge_samples(runs))
    each = [(r, folded_of(r)) for r in runs]
    head = [line for r, folded in each for line in _header(r, folded.n_samples)]
    # the all-pairs probe's matrices, read from each run's files (not samples)
    read = [file_matrices(r.path, folded, rule or OutlierRule()) for r, folded in each]
    if len(each) > 1:  # several runs: each matrix says whose it is (as merge_runs relabels)
        for (r, _), (matrices, _) in zip(each, read, strict=True):
            for m in matrices:
                m.mpi = f"{m.mpi} ({r.info.label or r.info.run_id})"
    run, folded = merge_runs(each)
    built = build(
        run, folded, rule, [m for ms, _ in read for m in ms], [p for _, ps in read for p in ps]
    )
    tables = built.tables
    verdicts, why = read_verdicts(runs[0].path) if len(runs) == 1 else (None, None)
    if why:  # a damaged check.json: the report of the samples stands without it
        head.append(f"Note: {why}")
    if verdicts:  # a run 'assay check' judged: its verdicts first (the grid, worst first)
        tables = verdict_tables(verdicts, everything=fmt == "html") + tables
        built.tables = tables
    if plots_dir is not None:
        from assay.report.plots import charts_of, write_plots

        write_plots(charts_of(built.figures, built.derived, built.matrices), plots_dir)
    if fmt == "html":
        return render_html(run, built, head)
    if fmt == "md":
        return render_markdown(run, tables, head)
    if fmt == "term":
        return render_term(tables, width, head)
    raise AssayError(f"unknown report format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}")
