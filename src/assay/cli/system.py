"""``assay doctor`` (what was found, what is missing) and ``assay plan-io`` (Little's law)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.text import Text

from assay.cli.common import discover, out
from assay.errors import AssayError

if TYPE_CHECKING:  # imported where a table is drawn: 30 ms of every 'assay --help' otherwise
    from rich.table import Table

    from assay.model import System


def doctor(
    nodes: Annotated[
        int,
        typer.Option(
            min=0, max=200_000, help="Check this node's kernel limits for a run over N nodes."
        ),
    ] = 0,
    ppn: Annotated[int, typer.Option(min=1, max=4096, help="Ranks per node of that run.")] = 1,
    one_kernel: Annotated[
        bool,
        typer.Option(
            "--one-kernel",
            help="The N nodes share this kernel (network namespaces or containers of this "
            "host): one neighbour table holds every node's peers.",
        ),
    ] = False,
) -> None:
    """What was found: CPUs, caches, NUMA, MPIs, compilers, tools, GPUs, the kernel limits a
    big run meets; and what is missing.

    With --nodes N, each limit an N-node run over TCP would exceed here is a WARN naming the
    setting and the value that would do (exit status 1). Example: assay doctor --nodes 64
    (--one-kernel: the nodes are namespaces of this host, as scripts/testcluster's)
    """
    from rich.table import Table

    from assay.system import requirements_report

    system, _ = discover()
    out.print(_facts_table(system))
    nics = fold_virtual(system.nics)
    for title, rows in (("Network interfaces", nics), ("GPUs", system.gpus)):
        if rows:
            out.print(records_table(title, rows))
    m = Table(title="MPI implementations", title_justify="left")
    for col in ("name", "version", "compiler", "launcher", "found via"):
        m.add_column(col)
    for mpi in system.mpis:
        m.add_row(mpi.name, mpi.version, mpi.mpicc, mpi.launcher, mpi.source)
    out.print(m)
    if system.fabric:
        out.print(fabric_table(system.fabric))
    r = Table(title="Requirements", title_justify="left")
    for col in ("what", "found", "detail"):
        r.add_column(col)
    for what, found, detail in requirements_report(system):
        r.add_row(what, "[green]yes[/green]" if found else "[red]no[/red]", detail)
    out.print(r)
    for note in system.notes:
        out.print(f"note: {note}")
    if nodes and _fabric_warnings(system, nodes, ppn, one_kernel):
        raise typer.Exit(1)


def _fabric_warnings(system: System, nodes: int, ppn: int, one_kernel: bool) -> bool:
    """Print a WARN per limit a run of ``nodes`` × ``ppn`` would exceed; True when any."""
    from assay.system.fabric import Run, shortfalls

    run = Run(nodes, ppn, shared_kernel=one_kernel)
    short = shortfalls(system.fabric, run)
    for s in short:
        out.print(f"WARN: {s.message(run)}", markup=False)
    if not short:
        out.print(f"fabric limits: enough for {nodes} node(s) × {ppn} rank(s)", markup=False)
    return bool(short)


def _facts_table(system: System) -> Table:
    """The run report's System table, in its words, and what only the doctor shows."""
    from rich.table import Table

    from assay.report.system import system_table
    from assay.system.clock import describe_clocks

    t = Table(title="System", show_header=False, title_justify="left")
    t.add_column("fact")
    t.add_column("value")
    for label, value in system_table(system, []).rows:
        t.add_row(label, Text(value))
    extra = [
        ("Architecture / vendor", f"{system.architecture or '?'} / {system.vendor or '?'}"),
        ("L3 (CCX) domain CPUs", "; ".join(_cpus(d) for d in system.l3_domains or [])),
        (
            "NUMA node CPUs",
            "; ".join(f"{n['id']}: {_cpus(n['cpus'])}" for n in system.numa_nodes or []),
        ),
        ("CUDA", ", ".join(f"{_words(k)} {v}" for k, v in system.cuda.items())),
        ("Tools", ", ".join(f"{k} {v}" for k, v in system.tools.items())),
    ]
    for label, value in extra:
        t.add_row(label, Text(value or "unknown"))
    if system.clocks:
        t.add_row("Clocks", describe_clocks(system.clocks))
    return t


def fold_virtual(nics: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The interfaces, the virtual ones (veths of containers or namespaces, bridges, ifb)
    folded into one row per state: 64 veths are one line, not 64."""
    # imported here: assay.system's package imports every collector, a third of the time
    # 'assay report' or 'assay import' took to start
    from assay.system.hostlist import compress_hostlist

    real = [n for n in nics if not n.get("virtual")]
    by_state: dict[str, list[str]] = {}
    for n in nics:
        if n.get("virtual"):
            by_state.setdefault(str(n.get("state") or "?"), []).append(str(n.get("name")))
    for state, names in sorted(by_state.items()):
        shown = compress_hostlist(names) if len(names) > 1 else names[0]
        real.append(
            {"name": shown, "kind": f"{len(names)} virtual", "state": state, "virtual": True}
        )
    return real


def fabric_table(fabric: dict[str, int]) -> Table:
    """This node's kernel limits and the largest run each serves (assay.system.fabric)."""
    from rich.table import Table

    from assay.system.fabric import LIMITS, largest_run

    t = Table(title="Fabric limits (what a run over TCP needs of each node)", title_justify="left")
    for col in ("limit", "setting", "value", "serves up to"):
        t.add_column(col, overflow="fold")
    for limit in LIMITS:
        have = fabric.get(limit.key)
        if have is None:
            continue
        nodes = largest_run(limit, have)
        shared = largest_run(limit, have, shared_kernel=True)
        serves = f"{nodes:,} nodes (1 rank each); {shared:,} on one kernel"
        t.add_row(limit.label, limit.setting, f"{have:,}", serves)
    return t


# The inventory's field names as the doctor says them, with the unit of a number (the record
# keeps SI base units: bytes, Hz, W). A field not here is shown by its name, spaced.
FIELD_WORDS: dict[str, tuple[str, Callable[[Any], str]]] = {
    "speed_mbps": ("speed", lambda v: f"{v:,} Mb/s"),
    "mtu": ("MTU", lambda v: f"{v:,} B"),
    "pci_bus_id": ("PCI bus", str),
    "memory_bytes": ("memory", lambda v: f"{v / 2**30:,.1f} GiB"),
    "driver_version": ("driver", str),
    "clock_max_hz": ("SM clock, max", lambda v: f"{v / 1e6:,.0f} MHz"),
    "memory_clock_max_hz": ("memory clock, max", lambda v: f"{v / 1e6:,.0f} MHz"),
    "power_limit_w": ("power limit", lambda v: f"{v:,.0f} W"),
    "compute_cap": ("compute capability", str),
    "uuid": ("UUID", str),
    "cuda_version": ("CUDA (driver)", str),
    "nvcc_version": ("nvcc version", str),
}


def _words(field: str) -> str:
    return FIELD_WORDS[field][0] if field in FIELD_WORDS else field.replace("_", " ")


def _cell(field: str, value: Any) -> str:
    if value is None or value == "":
        return "–"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if field in FIELD_WORDS and not isinstance(value, str):
        return FIELD_WORDS[field][1](value)
    return str(value)


def records_table(title: str, records: list[dict[str, Any]]) -> Table:
    """One row per record (a NIC, a GPU), one column per field any of them has, in words and
    with units: readable, never a Python dict nor a field name."""
    from rich.table import Table

    columns: list[str] = []
    for record in records:
        columns += [k for k in record if k not in columns]
    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(_words(col))
    for record in records:  # Text: data, not markup
        table.add_row(*(Text(_cell(col, record.get(col))) for col in columns))
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
    from assay.analysis.derived.queueing import threads_needed

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
