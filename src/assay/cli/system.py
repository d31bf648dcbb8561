"""``assay doctor`` (what was found, what is missing) and ``assay plan-io`` (Little's law)."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from assay.cli.common import discover, out
from assay.errors import AssayError
from assay.units import human_bytes


def doctor() -> None:
    """What was found: CPUs, caches, NUMA, MPIs, compilers, tools, GPUs; and what is missing."""
    from assay.system import requirements_report

    system, _ = discover()
    t = Table(title="System", show_header=False, title_justify="left")
    t.add_column("fact")
    t.add_column("value")
    for key, value in system.to_dict().items():
        if key in ("mpis", "hosts", "notes", "l3_domains", "numa_nodes", "clocks", "nics", "gpus"):
            continue
        if key == "dram":
            from assay.system.dram import describe_dram

            t.add_row("dram peak", Text(describe_dram(value)))
            continue
        if isinstance(value, int | float) and key.endswith("_bytes"):
            shown: Any = human_bytes(value) if value < 2**30 else f"{value / 2**30:.1f} GiB"
        elif isinstance(value, int | float) and key.endswith("_hz"):
            shown = f"{value / 1e9:.2f} GHz"
        elif isinstance(value, dict):
            shown = ", ".join(f"{k} {v}" for k, v in value.items())
        else:
            shown = " ".join(map(str, value)) if isinstance(value, list) else value
        t.add_row(key, Text("unknown" if shown in (None, "") else str(shown)))
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
    for title, rows in (("Network interfaces", system.nics), ("GPUs", system.gpus)):
        if rows:
            out.print(records_table(title, rows))
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


def records_table(title: str, records: list[dict[str, Any]]) -> Table:
    """One row per record (a NIC, a GPU), one column per field any of them has: readable,
    never a Python dict."""
    columns: list[str] = []
    for record in records:
        columns += [k for k in record if k not in columns]
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(col.replace("_", " "))
    for record in records:
        cells = []
        for col in columns:
            value = record.get(col)
            if isinstance(value, bool):
                value = "yes" if value else "no"
            cells.append(Text("–" if value in (None, "") else str(value)))  # data, not markup
        table.add_row(*cells)
    return table


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


def register(app: typer.Typer) -> None:
    app.command()(doctor)
    app.command("plan-io")(plan_io)
