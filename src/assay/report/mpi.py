"""MPI tables in the OSU layout: latency, bandwidth (osu_bw, osu_bibw), IMB PingPong,
collectives, and the Hockney model of each MPI's curve.

One latency row per message size and one column per MPI implementation, bandwidth in MB/s and
Gb/s, as the seed pages show them. Each method has its own table and its own note: osu_bw keeps
a window of messages in flight, IMB PingPong sends one at a time, so their figures differ by
design and never share a table.
"""

from __future__ import annotations

import math

from assay.analysis.derived.derive import Derived, is_pingpong_bandwidth
from assay.analysis.derived.series import by_series_and_size
from assay.analysis.derived.shared_memory import NETWORK_FLOOR_S, WORDS, SharedMemory
from assay.analysis.statistics.stats import Figure
from assay.model import JobResult
from assay.report.table import Table, best_marks, commands_of_jobs, count, spread_span
from assay.units import format_value, human_bytes


def latency_table(figures: list[Figure], metric: str = "p2p.latency") -> Table | None:
    data = by_series_and_size(figures, metric)
    if not data:
        return None
    mpis = sorted(data)
    sizes = sorted({s for per in data.values() for s in per})
    rows, figs = [], []
    for size in sizes:
        row = [data[m].get(size) for m in mpis]
        figs.append(row)
        rows.append([str(size)] + [format_value(f.sample.value, "us") if f else "–" for f in row])
    marks = best_marks(figs, "lower")
    notes = [
        "Half the round-trip time of a ping-pong, averaged over the iterations (as osu_latency)."
    ]
    notes += [marks.note] if marks.note else []
    for m in mpis:
        span = spread_span(data[m])
        counts = sorted({count(f) for f in data[m].values()})
        if span:
            notes.append(f"{m}: {' / '.join(counts)} per size; spread per size: {span}")
    title = "MPI latency (osu_latency method)"
    cols = ["#bytes"] + [f"Latency [us] ({m})" for m in mpis]
    best = {(r, 1 + c) for r, c in marks.cells}
    return Table("p2p-latency", title, cols, rows, notes, best=best)


def rate_rows(
    data: dict[str, dict[int, Figure]], mpis: list[str]
) -> tuple[list[list[str]], list[list[Figure | None]]]:
    """One row per message size: each MPI's rate in MB/s and Gb/s (as the published pages
    print both), and the figures the best-per-row marks are chosen from."""
    rows, figs = [], []
    for size in sorted({s for per in data.values() for s in per}):
        row = [str(size)]
        found: list[Figure | None] = []
        for m in mpis:
            fig = data[m].get(size)
            v = fig.sample.value if fig else None
            found.append(fig if v else None)
            row += [format_value(v, "MB/s"), format_value(v, "Gb/s")] if v else ["–", "–"]
        rows.append(row)
        figs.append(found)
    return rows, figs


def bandwidth_table(figures: list[Figure], metric: str) -> Table | None:
    """osu_bw / osu_bibw: a window of messages in flight, then an acknowledgement."""
    data = by_series_and_size(figures, metric)
    if not data:
        return None
    mpis = sorted(data)
    rows, figs = rate_rows(data, mpis)
    cols = ["#Size"]
    for m in mpis:
        cols += [f"Bandwidth (MB/s) ({m})", f"Bandwidth (Gb/s) ({m})"]
    marks = best_marks(figs, "higher")
    best = {(r, 1 + 2 * c) for r, c in marks.cells}
    bi = metric == "p2p.bibw"
    title = (
        "MPI bi-directional bandwidth (osu_bibw method)" if bi else "MPI bandwidth (osu_bw method)"
    )
    notes = [
        "MB/s = 10^6 B/s (as OSU prints it); Gb/s = 10^9 bit/s; a window of "
        f"{_first_param(data, 'window', 64)} messages in flight, then an acknowledgement."
    ]
    notes += [marks.note] if marks.note else []
    for m in mpis:
        span = spread_span(data[m])
        if span:
            notes.append(f"{m}: spread per size: {span}")
    key = "p2p-bibw" if bi else "p2p-bandwidth"
    return Table(key, title, cols, rows, notes, best=best)


def _first_param(data: dict[str, dict[int, Figure]], name: str, default: object) -> object:
    for per in data.values():
        for fig in per.values():
            if name in fig.sample.params:
                return fig.sample.params[name]
    return default


def collective_tables(figures: list[Figure], results: list[JobResult] | None = None) -> list[Table]:
    """One table per collective: average latency across ranks per MPI, with min and max
    across ranks (osu_allreduce -f's Min/Max/Avg, IMB's t_min/t_max/t_avg). ``results`` adds
    the commands of the jobs that measured *that* collective, one per MPI."""
    ops = sorted({f.sample.metric for f in figures if f.sample.metric.startswith("coll.")})
    tables = []
    for metric in ops:
        data = by_series_and_size(figures, metric)
        mpis = sorted(data)
        sizes = sorted({s for per in data.values() for s in per})
        rows, figs = [], []
        for size in sizes:
            row, found = [str(size)], []
            for m in mpis:
                fig = data[m].get(size)
                st = fig.sample.stats if fig else None
                found.append(fig)
                row.append(format_value(fig.sample.value, "us") if fig else "–")
                lo = format_value(st.min, "us") if st and st.min is not None else "–"
                hi = format_value(st.max, "us") if st and st.max is not None else "–"
                row.append(f"{lo} / {hi}")
            rows.append(row)
            figs.append(found)
        cols = ["#bytes"]
        for m in mpis:
            cols += [f"Avg Latency [us] ({m})", f"Min / Max [us] ({m})"]
        op = metric.split(".", 1)[1]
        chosen = [f.sample.params for f in figures if f.sample.metric == metric]
        ranks = sorted({str(p.get("ranks")) for p in chosen if "groups" not in p})
        shapes = sorted({f"{p['groups']} groups of {p.get('group_ranks')}" for p in chosen
                         if "groups" in p})  # fmt: skip
        counts = ", ".join(ranks + shapes)  # IMB -multi: groups of ranks at the same time
        notes = [
            f"{counts} ranks; each rank times its own calls (barrier outside the timed "
            "region), then min / max / average across ranks."
        ]
        marks = best_marks(figs, "lower")
        notes += [marks.note] if marks.note else []
        best = {(r, 1 + 2 * c) for r, c in marks.cells}
        jobs = {f.sample.job_id for f in figures if f.sample.metric == metric}
        commands = commands_of_jobs(results or [], jobs)
        title = f"MPI {op} latency (osu_{op} -f method)"
        tables.append(Table(f"coll-{op}", title, cols, rows, notes, commands, best=best))
    return tables


def hockney_table(derived: Derived) -> Table | None:
    """The Hockney model t(n) = α + n/β fitted to each MPI's latency curve (and β also from
    its bandwidth curve), with n½ and the eager → rendezvous switch where the curve steps; the
    fits are the derive step's (:mod:`assay.analysis.derived.derive`)."""
    rows = []
    for h in derived.hockney:
        row = [h.series]
        fit = h.latency
        if fit is not None:
            row += [
                format_value(fit.alpha, "us"),
                format_value(fit.beta, "MB/s") if math.isfinite(fit.beta) else "∞",
                human_bytes(round(fit.n_half)) if math.isfinite(fit.n_half) else "–",
                f"{human_bytes(fit.switch.size_before)} → {human_bytes(fit.switch.size_after)}"
                if fit.switch
                else "none seen",
                f"{fit.r2:.3f}",
            ]
        else:
            row += ["–"] * 5
        bfit = h.bandwidth
        if bfit is not None:
            row.append(format_value(bfit.beta, "MB/s") if math.isfinite(bfit.beta) else "∞")
        else:
            row.append("–")
        rows.append(row)
    if not rows:
        return None
    cols = [
        "MPI",
        "α (zero-byte latency) [us]",
        "β from latency [MB/s]",
        "n½",
        "protocol switch",
        "R²",
        "β from bandwidth [MB/s]",
    ]
    notes = [
        "Hockney model t(n) = α + n/β, a robust (Huber) fit on relative residuals; α and β from "
        "either side of a protocol switch when the curve steps; n½ = α·β is the message size "
        "that reaches half of β. β from osu_bw keeps 64 messages in flight, so it can exceed "
        "the ping-pong β."
    ]
    # what a fit left out, or could not resolve, is said (a 0.00 MB/s row: left out)
    notes += [f"{h.series}: {n}" for h in derived.hockney for f in (h.latency, h.bandwidth)
              if f is not None for n in f.notes if "left out" in n]  # fmt: skip
    return Table("p2p-model", "MPI latency/bandwidth model (Hockney)", cols, rows, notes)


def pingpong_bandwidth_table(figures: list[Figure]) -> Table | None:
    """IMB PingPong's bandwidth: size / (half the round trip) of one message at a time."""
    data = by_series_and_size(figures, "p2p.bandwidth")
    if not data:
        return None
    mpis = sorted(data)
    rows, figs = rate_rows(data, mpis)
    cols = ["#bytes"]
    for m in mpis:
        cols += [f"Mbytes/sec ({m})", f"Gb/s ({m})"]
    marks = best_marks(figs, "higher")
    best = {(r, 1 + 2 * c) for r, c in marks.cells}
    notes = [
        "IMB PingPong: one message at a time, bandwidth = size / (half the round trip); no "
        "window of messages in flight, so it stays below osu_bw's figure at small and medium "
        "sizes. MB/s = 10^6 B/s (IMB's Mbytes/sec); Gb/s = 10^9 bit/s."
    ]
    notes += [marks.note] if marks.note else []
    title = "MPI bandwidth (IMB PingPong method)"
    return Table("p2p-pingpong-bandwidth", title, cols, rows, notes, best=best)


def p2p_tables(figures: list[Figure]) -> list[Table]:
    """Latency, then each bandwidth method in its own table."""
    tables = []
    lat = latency_table(figures)
    if lat:
        tables.append(lat)
    windowed = [f for f in figures if not is_pingpong_bandwidth(f.sample)]
    for metric in ("p2p.bandwidth", "p2p.bibw"):
        bw = bandwidth_table(windowed, metric)
        if bw:
            tables.append(bw)
    pingpong = pingpong_bandwidth_table([f for f in figures if is_pingpong_bandwidth(f.sample)])
    if pingpong:
        tables.append(pingpong)
    return tables


def shared_memory_table(flags: list[SharedMemory]) -> Table | None:
    """The two-node series whose latency no network gives (``Derived.shared_memory``): named
    here, and none of their figures in the link tables, plots or model above."""
    if not flags:
        return None
    rows = [[f.series, format_value(f.latency_s, "us"), str(f.size), WORDS] for f in flags]
    floor = format_value(NETWORK_FLOOR_S, "us")
    notes = [
        f"An inter-node latency below {floor} us is below what any network takes (NIC, PCIe "
        "and a switch hop each way; the lowest published MPI latencies between two nodes are "
        "about 1 us): the two ranks talked through shared memory, so the nodes are likely one "
        "kernel (containers, namespaces). None of these series' figures (latency, bandwidth) "
        "is shown above as the link's.",
        "To measure the network: give the MPI network transports only (UCX: UCX_TLS=tcp,self, "
        "or rc,self on InfiniBand; Open MPI: --mca btl tcp,self), or run on distinct machines.",
    ]
    cols = ["series", "lowest latency [us]", "at #bytes", "verdict"]
    return Table("p2p-shared-memory", "MPI between two nodes: shared memory, not a link", cols,
                 rows, notes)  # fmt: skip
