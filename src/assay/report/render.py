"""Renderers: the same tables as terminal text, Markdown, CSV or JSON."""

from __future__ import annotations

import csv
import io
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table as RichTable

from assay.errors import AssayError
from assay.store import LoadedRun
from assay.store.rundir import complete_lines

from .tables import Table, build_tables

FORMATS = ("term", "md", "json", "csv")


def _header(run: LoadedRun) -> list[str]:
    info = run.info
    n_ok = sum(1 for r in run.results if r.status == "ok")
    lines = [
        f"Run {info.run_id} — suite {info.suite}, {info.status}",
        f"{info.created} → {info.finished or 'not finished'}; "
        f"{n_ok}/{len(run.results)} jobs succeeded"
        + (f" of {info.n_jobs} planned" if info.n_jobs and info.n_jobs != len(run.results) else "")
        + f"; {len(run.samples)} samples; {run.path}",
    ]
    if info.status == "running":
        lines.append(
            "This run did not finish (still running, or assay was killed): "
            "every job that finished is shown."
        )
    lines += [f"Note: {n}" for n in info.notes]  # cut short, shared node, full disk
    return lines


def render_markdown(run: LoadedRun, tables: list[Table]) -> str:
    out = [f"# assay report: {run.info.suite}", "", *(f"{ln}  " for ln in _header(run)), ""]
    for t in tables:
        out += [f"## {t.title}", ""]
        for cmd in t.commands:
            out += ["```", cmd, "```", ""]
        if t.key == "system":
            out += ["| | |", "|---|---|"]
            out += [f"| {k} | {v} |" for k, v in t.rows]
        else:
            out.append("| " + " | ".join(t.columns) + " |")
            out.append("|" + "|".join("---" for _ in t.columns) + "|")
            for r, row in enumerate(t.rows):
                cells = [f"**{c}**" if (r, i) in t.best else c for i, c in enumerate(row)]
                out.append("| " + " | ".join(cells).replace("\n", " ") + " |")
        out.append("")
        out += [f"{n}  " for n in t.notes]
        if t.notes:
            out.append("")
    return "\n".join(out).rstrip() + "\n"


def render_term(run: LoadedRun, tables: list[Table], width: int | None = None) -> str:
    console = Console(record=True, width=width or 120, force_terminal=False)
    for line in _header(run):
        console.print(line, highlight=False)
    for t in tables:
        rt = RichTable(title=escape(t.title), title_justify="left", show_header=t.key != "system")
        for i, c in enumerate(t.columns):
            left = i == 0 or t.key in ("system", "failures", "other")
            rt.add_column(escape(c), justify="left" if left else "right")
        for r, row in enumerate(t.rows):
            rt.add_row(
                *[
                    f"[bold]{escape(c)}*[/bold]" if (r, i) in t.best else escape(c)
                    for i, c in enumerate(row)
                ]
            )
        console.print()
        for cmd in t.commands:
            console.print(f"$ {cmd}", highlight=False, markup=False)
        console.print(rt)
        for n in t.notes:
            console.print(f"  {n}", highlight=False, markup=False)
    return console.export_text()


def render_json(run: LoadedRun) -> str:
    """The whole run as one JSON document. Samples are passed through as stored (each is
    already a JSON object on its own line), so a million of them cost no re-encoding."""
    head = {
        "run": run.info.to_dict(),
        "system": run.system.to_dict(),
        "jobs": [r.to_dict() for r in run.results],
    }
    if run.samples:
        rows = [json.dumps(s.to_dict(), sort_keys=True) for s in run.samples]
    else:
        rows = [line.rstrip("\n") for line in complete_lines(run.path / "samples.jsonl")]
    text = json.dumps(head, indent=2)[:-2]  # reopen the object to append "samples"
    return text + ',\n  "samples": [\n    ' + ",\n    ".join(rows) + "\n  ]\n}\n"


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
                s.run_id,
                s.job_id,
                s.probe,
                s.metric,
                repr(s.value),
                s.unit,
                s.better,
                json.dumps(s.params, sort_keys=True),
            ]
            + [st.get(n, "") for n in stat_names]
        )
    return buf.getvalue()


def render(run: LoadedRun, fmt: str = "term", width: int | None = None) -> str:
    if fmt == "json":
        return render_json(run)
    if fmt == "csv":
        return render_csv(run)
    tables = build_tables(run)
    if fmt == "md":
        return render_markdown(run, tables)
    if fmt == "term":
        return render_term(run, tables, width)
    raise AssayError(f"unknown report format {fmt!r}", hint=f"formats: {', '.join(FORMATS)}")
