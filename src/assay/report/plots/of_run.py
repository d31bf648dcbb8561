"""Which plots a run gets, and their data: folded figures in, :class:`Chart` out.

The same grouping the tables use (:func:`by_series_and_size` for one line per MPI, the derive
step's Hockney fits, Rpeak and storage points), so a plot never disagrees with the table beside
it. Only families with data get a plot.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from assay.analysis.derived.derive import Derived, p2p_method
from assay.analysis.derived.domains import StreamDomains
from assay.analysis.derived.series import by_series_and_size
from assay.analysis.derived.shared_memory import not_links
from assay.analysis.derived.storage_points import CurveKey, CurveKnee, Point
from assay.analysis.matrix.allpairs import PairMatrix
from assay.analysis.statistics.stats import Figure
from assay.report.allpairs import matrix_key
from assay.report.gpu import burn_cards, burn_traces
from assay.report.plots import draw
from assay.report.table import count
from assay.units import metric_info, to_display
from assay.vocab import COLL_METHOD, DOMAIN_SCOPES


@dataclass
class Chart:
    """One plot: a stable key (the HTML anchor, the file name), a title, how to draw it."""

    key: str
    title: str
    section: str  # the table key it sits after in the HTML report
    make: Callable[[], Any]  # → a matplotlib figure


def _band(fig: Figure) -> tuple[float, float] | None:
    """The band around a point: min–max over repetitions, else over iterations; p99 when the
    tool gave no min/max."""
    st = fig.spread or fig.sample.stats
    if st is None:
        return None
    lo = st.min if st.min is not None else fig.sample.value
    hi = st.max if st.max is not None else getattr(st, "p99", None)
    if hi is None:
        return None
    return lo, hi


def size_lines(figures: list[Figure], metric: str) -> list[draw.Line]:
    """One line per series (MPI or import label) of ``metric`` against message size."""
    lines = []
    for label, per in sorted(by_series_and_size(figures, metric).items()):
        sizes = sorted(s for s in per if s > 0)  # log axis: a 0-byte message has no place
        if not sizes:
            continue
        ys = [per[s].sample.value for s in sizes]
        bands = [_band(per[s]) for s in sizes]
        if all(bands):
            lo = [b[0] for b in bands if b]
            hi = [b[1] for b in bands if b]
            lines.append(draw.Line(label, sizes, ys, lo, hi))
        else:
            lines.append(draw.Line(label, sizes, ys))
    return lines


def counts_note(figures: list[Figure], metric: str) -> str:
    """'n per point: OpenMPI 4.1.4 200 it.; MPICH 4.0.2 3 reps' — the count behind the plot's
    points, per series, as the table beside it counts them."""
    parts = []
    for label, per in sorted(by_series_and_size(figures, metric).items()):
        shown = sorted({count(f) for f in per.values()})
        parts.append(f"{label} {' / '.join(shown)}")
    return "n per point: " + "; ".join(parts) if parts else ""


def mpi_charts(figures: list[Figure], derived: Derived) -> list[Chart]:
    off = not_links(figures, derived.shared_memory)  # shared memory: not a link's curve
    p2p = [f for f in p2p_method(figures) if id(f) not in off]
    charts = []
    lat = size_lines(p2p, "p2p.latency")
    if lat:
        charts.append(
            Chart(
                "plot-p2p-latency",
                "MPI latency against message size (band: min–max). "
                + counts_note(p2p, "p2p.latency"),
                "p2p-latency",
                lambda: draw.latency_vs_size(lat, "MPI latency (osu_latency method)"),
            )
        )
    betas = {
        row.series: (row.bandwidth or row.latency).beta
        for row in derived.hockney
        if row.bandwidth or row.latency
    }
    for metric, key, title in (
        ("p2p.bandwidth", "p2p-bandwidth", "MPI bandwidth (osu_bw method)"),
        ("p2p.bibw", "p2p-bibw", "MPI bi-directional bandwidth (osu_bibw method)"),
    ):
        lines = size_lines(p2p, metric)
        if lines:
            asym = betas if metric == "p2p.bandwidth" else None
            charts.append(
                Chart(
                    f"plot-{key}",
                    title
                    + (" with the Hockney asymptote (dashed)" if asym else "")
                    + ". "
                    + counts_note(p2p, metric),
                    key,
                    lambda lines=lines, asym=asym, title=title: draw.bandwidth_vs_size(
                        lines, asym, title
                    ),
                )
            )
    coll = [f for f in figures if f.sample.probe in COLL_METHOD]
    for metric in sorted({f.sample.metric for f in coll if f.sample.metric.startswith("coll.")}):
        lines = size_lines(coll, metric)
        op = metric.split(".", 1)[1]
        if lines:
            charts.append(
                Chart(
                    f"plot-coll-{op}",
                    f"{op}: average latency across ranks (band: min–max across ranks). "
                    + counts_note(coll, metric),
                    f"coll-{op}",
                    lambda lines=lines, op=op: draw.latency_vs_size(lines, f"MPI_{op}"),
                )
            )
    return charts


def stream_domain_bars(domains: StreamDomains | None) -> list[draw.Bar]:
    """Triad per domain, flagged as the derive step flagged it (the table's flag)."""
    out: list[draw.Bar] = []
    if domains is None:
        return out
    for scope in DOMAIN_SCOPES:
        triads = domains.triads(scope)
        word = "L3" if scope == "l3" else "NUMA"
        for d, v in sorted(triads.items()):
            slow = domains.slow(scope, d) is not None
            out.append(
                draw.Bar(f"{word} {d}", v, slow, group=f"{word} domains", note=f"{v / 1e9:.1f}")
            )
    return out


def memory_charts(figures: list[Figure], domains: StreamDomains | None) -> list[Chart]:
    charts = []
    bars = stream_domain_bars(domains)
    node = [
        f.sample.value
        for f in figures
        if f.sample.metric == "memory.triad" and f.sample.params.get("scope", "node") == "node"
    ]
    if bars:
        refs = {"node Triad": max(node)} if node else None
        charts.append(
            Chart(
                "plot-stream-domains",
                "STREAM Triad per domain (flagged domains in orange)",
                "stream-domains",
                lambda: draw.bars(
                    bars, "STREAM Triad per domain", "GB/s", 1e-9, refs, "flagged: slow"
                ),
            )
        )
    ladder: dict[str, dict[int, Figure]] = defaultdict(dict)
    levels: dict[str, int] = {}
    for f in figures:
        p = f.sample.params
        if f.sample.metric == "memory.latency" and p.get("working_set_bytes"):
            cfg = f"cpu {p.get('cpu', '?')}" + (", huge pages" if p.get("huge_pages") else "")
            ws = int(p["working_set_bytes"])
            ladder[cfg][ws] = f
            level = str(p.get("level", ""))
            if level and level.upper().startswith("L"):
                levels[level] = max(levels.get(level, 0), ws)
    if ladder:
        lines = [
            draw.Line(cfg, sorted(per), [per[w].sample.value for w in sorted(per)])
            for cfg, per in sorted(ladder.items())
        ]
        charts.append(
            Chart(
                "plot-memory-latency",
                "Load latency against working set (dotted: largest set in each cache level)",
                "memory-latency",
                lambda: draw.latency_ladder(lines, levels, "Memory load latency"),
            )
        )
    return charts


def compute_charts(figures: list[Figure], derived: Derived) -> list[Chart]:
    rates = [
        f
        for f in figures
        if f.sample.metric in ("compute.dgemm", "compute.sgemm", "compute.hpl")
        and f.sample.unit == "flop/s"
    ]
    if not rates:
        return []
    bars = []
    for f in sorted(rates, key=lambda f: (f.sample.metric, str(f.sample.params))):
        p = f.sample.params
        name = f.sample.metric.split(".", 1)[1].upper()
        threads = p.get("threads") or p.get("ranks")
        n = p.get("n") or p.get("N")
        label = name + (f" n={n}" if n else "") + (f", {threads} thr" if threads else "")
        frac = derived.fraction_of(f)
        flagged = bool(frac and frac.flag)
        note = f"{100 * frac.fraction:.0f}% of Rpeak" if frac and frac.fraction else ""
        n = count(f)
        note += f"{', ' if note else ''}{'1 run' if n == '1' else n}"
        bars.append(draw.Bar(label, f.sample.value, flagged, group=name, note=note))
    refs = {f"Rpeak {k.upper()}": r.flops for k, r in sorted(derived.rpeaks.items())}
    return [
        Chart(
            "plot-compute",
            "DGEMM / HPL against Rpeak (dashed: node Rpeak per precision)",
            "compute",
            lambda: draw.bars(bars, "Rates against Rpeak", "Gflop/s", 1e-9, refs, "above Rpeak"),
        )
    ]


def storage_charts(points: list[Point], knees: dict[CurveKey, CurveKnee]) -> list[Chart]:
    """Response-time curves: one series per workload (or client group) and configuration,
    each knee the derive step's (the curve table's)."""
    curves: dict[tuple[Any, ...], list[Point]] = defaultdict(list)
    for pt in points:
        if pt.mode == "curve" and pt.total:
            curves[(pt.workload, pt.config, pt.params.get("target"))].append(pt)
    series = []
    for key, pts in sorted(curves.items(), key=lambda kv: str(kv[0])):
        name, config, target = key
        knee = knees.get(key)
        found = (knee.iops, knee.latency_s) if knee and knee.iops and knee.latency_s else None
        pts.sort(key=lambda pt: pt.totals()[0])
        tot = [pt.totals() for pt in pts]
        label = f"{name} nj{config[0]} qd{config[1]}" + (f" {target}" if target else "")
        series.append(
            draw.Curve(
                label,
                [t[0] for t in tot],
                [t[1] or 0.0 for t in tot],
                [t[2] for t in tot],
                found,
            )
        )
    if not series:
        return []
    return [
        Chart(
            "plot-storage-curves",
            "IOPS against latency: mean (solid) and p99 (dashed), knee circled",
            "storage-curve",
            lambda: draw.response_curves(series, "Response-time curves (fio)"),
        )
    ]


def gpu_charts(figures: list[Figure]) -> list[Chart]:
    """GPU sustained GEMM throughput: a bar per card and precision (a precision's bars share a
    colour), a card whose products differ from the reference (FAULTY) in the flag colour, the
    SM clock range and mean power it ran at written above its bar; min–max over the measured
    intervals is in the table beside it."""
    bars = []
    for (gpu, precision), by in burn_cards(figures):
        # assay's probe: gpu.flops beside gpu.errors; an imported gpu_burn output: its
        # gpu.sgemm or gpu.dgemm with the card's verdict in its own params
        flops = next((by[m] for m in ("gpu.flops", "gpu.sgemm", "gpu.dgemm") if m in by), None)
        if flops is None:
            continue
        errors = by.get("gpu.errors")
        verdict = (errors or flops).sample.params.get("verdict")
        faulty = str(verdict).upper().startswith("FAULTY")
        notes = []
        sm, power = by.get("gpu.sm_clock"), by.get("gpu.power")
        if sm is not None:
            st = sm.sample.stats
            lo, hi = (st.min, st.max) if st and st.min and st.max else (sm.sample.value,) * 2
            notes.append(
                f"{lo / 1e6:.0f}–{hi / 1e6:.0f} MHz" if lo != hi else f"{hi / 1e6:.0f} MHz"
            )
        if power is not None:
            notes.append(f"{power.sample.value:.0f} W")
        bars.append(draw.Bar(f"GPU {gpu} {precision}", flops.sample.value, faulty, precision,
                             ", ".join(notes)))  # fmt: skip
    if not bars:
        return []
    title = "GPU sustained GEMM throughput per card and precision"
    return [
        Chart(
            "plot-gpu-burn",
            title + " (clock range and mean power above each bar)",
            "gpu-burn",
            lambda: draw.bars(bars, title, "TFLOP/s", 1e-12, None, "FAULTY: wrong products"),
        )
    ]


# The panels of the burn's series: (title, the figure's field, its scale to the axis unit).
TRACE_PANELS = (
    ("TFLOP/s", "value", 1e-12),
    ("SM clock (MHz)", "sm_clock_hz", 1e-6),
    ("power (W)", "power_w", 1.0),
    ("temperature (°C)", "temperature_c", 1.0),
)


def gpu_trace_charts(figures: list[Figure]) -> list[Chart]:
    """The burn over time: each interval's rate and the SM clock, power and temperature NVML
    read during it, one line per card and precision (the precisions follow one another on
    the probe's time axis), warm-up intervals included."""
    traces = burn_traces(figures)
    panels = []
    for title, field, scale in TRACE_PANELS:
        lines = []
        for (gpu, precision), series in traces.items():
            points = [
                (f.sample.params["t_s"], v * scale)
                for f in series
                if isinstance(v := _trace_value(f, field), int | float)
            ]
            if points:
                xs, ys = zip(*points, strict=True)
                lines.append(draw.Line(f"GPU {gpu} {precision}", xs, ys))
        if lines:
            panels.append((title, lines))
    if not panels:
        return []
    title = "GPU burn over time, per interval"
    return [Chart("plot-gpu-trace", title, "gpu-burn", lambda: draw.panels(panels, title))]


def _trace_value(f: Figure, field: str) -> Any:
    return f.sample.value if field == "value" else f.sample.params.get(field)


def allpairs_charts(pair_matrices: list[PairMatrix]) -> list[Chart]:
    """One heatmap per all-pairs matrix (metric, MPI), in the matrix's display unit, its
    outlier links boxed: the same matrix as the table it sits after. Beyond 64 nodes, blocks of
    links (``PairMatrix.heat``: each cell a median, ``assay.analysis.matrix.heat``), a cell holding
    a named link boxed and one holding a named node marked."""
    charts = []
    for m in pair_matrices:
        unit = metric_info(m.metric).display
        what = "latency" if m.metric == "p2p.latency" else "bandwidth"
        fewest, most = m.repetitions
        n = f"n = {fewest}" if fewest == most else f"n = {fewest}–{most}"
        if m.heat is not None:
            heat = m.heat
            values = [
                [None if math.isnan(v) else to_display(v, unit) for v in row]
                for row in heat.median.tolist()
            ]
            flagged = {(a, b) for a, b in heat.flagged} | {(b, a) for a, b in heat.flagged}
            h = draw.Heatmap(heat.labels, values, unit, flagged, set(heat.nodes), blocks=True)
            title = (
                f"All-pairs {what} at {m.size} B ({m.mpi}), {m.n} nodes in {len(heat.labels)} "
                f"cells a side ({heat.cells}), {n} a link; cells with an outlier link boxed"
            )
            short = f"All-pairs {what} at {m.size} B ({m.mpi}), {m.n} nodes"
        else:
            index = {h: i for i, h in enumerate(m.hosts)}

            def shown(a: str, b: str, m: PairMatrix = m, unit: str = unit) -> float | None:
                v = None if a == b else m.value(a, b)
                return None if v is None else to_display(v, unit)

            grid = [[shown(a, b) for b in m.hosts] for a in m.hosts]
            flagged = set()
            for o in m.link_outliers:
                a, b = o.key  # type: ignore[misc]
                flagged |= {(index[a], index[b]), (index[b], index[a])}
            h = draw.Heatmap(m.hosts, grid, unit, flagged)
            title = f"All-pairs {what} at {m.size} B ({m.mpi}), {n} a link, outlier links boxed"
            short = title
        key = matrix_key(m)
        charts.append(
            Chart(f"plot-{key}", title, key, lambda h=h, short=short: draw.heatmap(h, short))
        )
    return charts


def charts_of(
    figures: list[Figure], derived: Derived, pair_matrices: list[PairMatrix] | None = None
) -> list[Chart]:
    """Every plot a run's figures give, in report order; ``pair_matrices`` (``Built.matrices``)
    give the all-pairs heatmaps."""
    return [
        *memory_charts(figures, derived.domains),
        *compute_charts(figures, derived),
        *allpairs_charts(pair_matrices or []),
        *mpi_charts(figures, derived),
        *storage_charts(derived.storage_points, derived.knees),
        *gpu_charts(figures),
        *gpu_trace_charts(figures),
    ]


def comparison_chart(rows: list[Any], title: str, section: str = "s0-") -> Chart:
    """Comparison rows (``assay compare``'s: metric, params, a ratio > 1 when this run is
    better, a verdict) as ratio bars in verdict colours; rows with no ratio are left out."""
    bars = []
    for r in rows:
        ratio = getattr(r, "ratio", getattr(r, "goodness", None))
        if ratio is None:
            continue
        params = ", ".join(f"{k}={v}" for k, v in r.params)
        bars.append(draw.VerdictBar(f"{r.metric} {params}".strip(), ratio, r.verdict))
    return Chart("plot-compare", title, section, lambda: draw.comparison(bars, title))


def history_chart(
    key: str, title: str, unit: str, runs: list[str], values: list[float], changes: list[Any],
    section: str,
) -> Chart:  # fmt: skip
    """One series of ``assay history``: its values run by run, each change point (an
    :class:`assay.analysis.statistics.changepoint.Change`: ``index``, medians ``before``/``after``)
    marked and each segment's median drawn flat."""
    levels = [changes[0].before, *(c.after for c in changes)] if changes else []
    h = draw.History(runs, values, [c.index for c in changes], levels)
    return Chart(key, title, section, lambda: draw.history(h, title, unit))
