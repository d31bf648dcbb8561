"""Report tables built from a run, independent of how they are rendered.

The layout follows the published pages assay reproduces: one latency row per message size
and one column per MPI implementation, bandwidth in MB/s and Gb/s, an ``ib_send_lat``-style
statistics table, a STREAM table, and the system the figures came from.
"""

from __future__ import annotations

import math
import shlex
from collections import defaultdict
from dataclasses import dataclass, field

from assay.analysis.stats import Figure, fold_repetitions
from assay.model import JobResult, Sample, System
from assay.report.allpairs import allpairs_tables, pernode_parts
from assay.report.domains import TABLE_METRICS, domain_tables
from assay.report.storage import storage_figures, storage_tables
from assay.store import LoadedRun
from assay.units import format_value, human_bytes, metric_info, to_display


@dataclass
class Table:
    key: str
    title: str
    columns: list[str]
    rows: list[list[str]]
    notes: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    best: set[tuple[int, int]] = field(default_factory=set)  # (row, column) of a row's best


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _variation(fig: Figure) -> float | None:
    """How much a figure varied: across repetitions when repeated, else across iterations."""
    stats = fig.spread or fig.sample.stats
    return stats.cv() if stats else None


def _count(fig: Figure) -> str:
    if fig.repetitions > 1:
        return f"{fig.repetitions} reps"
    # A tool's own iteration count wins: IMB's and OSU's stats.n count ranks, not iterations.
    n = fig.sample.params.get("iterations") or (fig.sample.stats.n if fig.sample.stats else None)
    return f"{n} it." if n else "1"


def system_table(system: System, hosts: list[str]) -> Table:
    def mb(x: int | None) -> str:
        return "unknown" if x is None else f"{x / 2**20:.0f} MiB"

    def gib(x: int | None) -> str:
        return "unknown" if x is None else f"{x / 2**30:.1f} GiB"

    freq = "unknown"
    if system.freq_max_hz:
        freq = f"{system.freq_max_hz / 1e9:.2f} GHz max"
        if system.freq_base_hz:
            freq += f", {system.freq_base_hz / 1e9:.2f} GHz base"
    rows = [
        ["Host", ", ".join(hosts) or system.hostname or "unknown"],
        ["CPU", system.cpu_model or "unknown"],
        ["Micro-architecture", system.microarchitecture or "unknown"],
        [
            "Sockets / cores / threads",
            f"{system.sockets or '?'} / {system.cores or '?'} / {system.threads or '?'}",
        ],
        [
            "L3 (CCX) domains",
            f"{len(system.l3_domains)} × {mb((system.l3_bytes or 0) // len(system.l3_domains))}"
            if system.l3_domains
            else mb(system.l3_bytes),
        ],
        ["NUMA nodes", str(len(system.numa_nodes)) if system.numa_nodes else "unknown"],
        ["Memory", gib(system.memory_bytes)],
        ["Frequency", freq],
        ["ISA", " ".join(system.isa) if system.isa else "unknown"],
        ["OS / kernel", f"{system.os or 'unknown'} / {system.kernel or 'unknown'}"],
        ["Compilers", ", ".join(system.compilers.values()) or "unknown"],
        ["MPI", ", ".join(m.label for m in system.mpis) or "none found"],
    ]
    if system.gpus:
        rows.append(["GPUs", ", ".join(str(g.get("name", "?")) for g in system.gpus)])
    return Table("system", "System", ["", ""], rows)


STREAM_KERNELS = ("copy", "scale", "add", "triad")


def stream_table(figures: list[Figure]) -> Table | None:
    by_kernel = {f.sample.metric.split(".")[1]: f for f in figures if f.sample.probe == "stream"}
    if not by_kernel:
        return None
    rows = []
    for kernel in STREAM_KERNELS:
        fig = by_kernel.get(kernel)
        if fig is None:
            continue
        p = fig.sample.params
        rows.append(
            [
                kernel.capitalize(),
                format_value(fig.sample.value, "GB/s"),
                format_value(fig.sample.value, "MB/s", 1),
                f"{p.get('avg_time', 0):.6f}",
                f"{p.get('min_time', 0):.6f}",
                f"{p.get('max_time', 0):.6f}",
                _count(fig),
                _pct(_variation(fig)),
            ]
        )
    p = next(iter(by_kernel.values())).sample.params
    how = f"{p.get('threads', '?')} threads"
    if "bind" in p:
        how += f" (OMP_PROC_BIND={p['bind']}, OMP_PLACES={p.get('places', '?')})"
    if "elements" in p:
        how += f"; {p['elements']} elements per array ({8 * int(p['elements']) / 2**20:.0f} MiB)"
    if "ntimes" in p:
        how += f"; best rate from the minimum time of {p['ntimes']} iterations, the first excluded"
    notes = [
        how + "; solution validated.",
        "MB/s = 10^6 B/s as STREAM prints it; variation = coefficient of variation of the "
        "per-iteration rates (or of the repetitions).",
    ]
    cols = [
        "Function",
        "Best Rate GB/s",
        "Best Rate MB/s",
        "Avg time s",
        "Min time s",
        "Max time s",
        "n",
        "variation",
    ]
    return Table("stream", "Memory bandwidth (STREAM)", cols, rows, notes)


def _mpi_label(s: Sample) -> str:
    """The column a figure belongs to: its MPI, an import's label, or a perftest device."""
    p = s.params
    if p.get("mpi_label") or p.get("mpi"):
        return str(p.get("mpi_label") or p.get("mpi")) + _where(p)
    if p.get("device"):
        return f"{p.get('benchmark', '')} {p['device']}".strip()
    return "MPI"


def _where(p: dict) -> str:
    """Where a cluster measurement ran (Slurm placement): its hosts, so shared memory and a
    network link are never mixed up in one column."""
    hosts, placement = p.get("hosts"), p.get("placement")
    if not placement or not isinstance(hosts, list):
        return ""
    shown = "–".join(map(str, hosts)) if len(hosts) <= 4 else f"{len(hosts)} nodes"
    return f", {placement} {shown}"


def _by_mpi_and_size(figures: list[Figure], metric: str) -> dict[str, dict[int, Figure]]:
    """Column label -> size -> figure. Runs at several rank counts (IMB's #processes blocks)
    get a column each, so no figure overwrites another."""
    chosen = [f for f in figures if f.sample.metric == metric and "size" in f.sample.params]
    rank_counts = {f.sample.params.get("ranks") for f in chosen}
    out: dict[str, dict[int, Figure]] = defaultdict(dict)
    for f in chosen:
        label = _mpi_label(f.sample)
        if len(rank_counts) > 1:
            label += f", {f.sample.params.get('ranks')} ranks"
        out[label][int(f.sample.params["size"])] = f
    return dict(out)


def _best_cells(rows: list[list[float | None]], better: str, offset: int) -> set[tuple[int, int]]:
    best = set()
    for r, values in enumerate(rows):
        present = [(v, c) for c, v in enumerate(values) if v is not None]
        if len(present) < 2:
            continue
        pick = min(present) if better == "lower" else max(present)
        best.add((r, pick[1] + offset))
    return best


def latency_table(figures: list[Figure], metric: str = "p2p.latency") -> Table | None:
    data = _by_mpi_and_size(figures, metric)
    if not data:
        return None
    mpis = sorted(data)
    sizes = sorted({s for per in data.values() for s in per})
    rows, raw = [], []
    for size in sizes:
        values = [data[m][size].sample.value if size in data[m] else None for m in mpis]
        raw.append(values)
        rows.append([str(size)] + [format_value(v, "us") if v is not None else "–" for v in values])
    notes = [
        "Half the round-trip time of a ping-pong, averaged over the iterations (as osu_latency); "
        "the best per row is marked when several MPIs ran."
    ]
    for m in mpis:
        cvs = [c for c in (_variation(f) for f in data[m].values()) if c is not None]
        counts = sorted({_count(f) for f in data[m].values()})
        if cvs:
            notes.append(
                f"{m}: {' / '.join(counts)} per size; variation {_pct(min(cvs))}–{_pct(max(cvs))}"
            )
    title = "MPI latency (osu_latency method)"
    cols = ["#bytes"] + [f"Latency [us] ({m})" for m in mpis]
    return Table("p2p-latency", title, cols, rows, notes, best=_best_cells(raw, "lower", 1))


def bandwidth_table(figures: list[Figure], metric: str) -> Table | None:
    data = _by_mpi_and_size(figures, metric)
    if not data:
        return None
    mpis = sorted(data)
    sizes = sorted({s for per in data.values() for s in per})
    rows, raw = [], []
    for size in sizes:
        row = [str(size)]
        values = []
        for m in mpis:
            fig = data[m].get(size)
            v = fig.sample.value if fig else None
            values.append(v)
            row += [format_value(v, "MB/s"), format_value(v, "Gb/s")] if v else ["–", "–"]
        rows.append(row)
        raw.append(values)
    cols = ["#Size"]
    for m in mpis:
        cols += [f"Bandwidth (MB/s) ({m})", f"Bandwidth (Gb/s) ({m})"]
    best = {(r, 1 + 2 * c) for r, c in _best_cells(raw, "higher", 0)}
    bi = metric == "p2p.bibw"
    title = (
        "MPI bi-directional bandwidth (osu_bibw method)" if bi else "MPI bandwidth (osu_bw method)"
    )
    notes = [
        "MB/s = 10^6 B/s (as OSU prints it); Gb/s = 10^9 bit/s; a window of "
        f"{_first_param(data, 'window', 64)} messages in flight, then an acknowledgement."
    ]
    for m in mpis:
        cvs = [c for c in (_variation(f) for f in data[m].values()) if c is not None]
        if cvs:
            notes.append(f"{m}: variation {_pct(min(cvs))}–{_pct(max(cvs))} across iterations")
    key = "p2p-bibw" if bi else "p2p-bandwidth"
    return Table(key, title, cols, rows, notes, best=best)


def _first_param(data: dict[str, dict[int, Figure]], name: str, default: object) -> object:
    for per in data.values():
        for fig in per.values():
            if name in fig.sample.params:
                return fig.sample.params[name]
    return default


def latency_stats_tables(
    figures: list[Figure], metric: str = "p2p.latency", what: str = "Latency statistics"
) -> list[Table]:
    """One ``ib_send_lat``-style table per MPI (or RDMA device): the distribution behind
    each latency."""
    tables = []
    for mpi, per in sorted(_by_mpi_and_size(figures, metric).items()):
        rows = []
        for size in sorted(per):
            st = per[size].sample.stats
            if st is None:
                continue
            cells = [st.min, st.max, st.median, st.mean, st.stddev, st.p99, st.p999]
            rows.append(
                [str(size), str(st.n)]
                + [format_value(c, "us") if c is not None else "–" for c in cells]
            )
        if rows:
            cols = [
                "#bytes",
                "#iterations",
                "t_min[usec]",
                "t_max[usec]",
                "t_typical[usec]",
                "t_avg[usec]",
                "t_stdev[usec]",
                "99% percentile[usec]",
                "99.9% percentile[usec]",
            ]
            tables.append(
                Table(
                    f"{metric.replace('.', '-')}-stats-{_slug_key(mpi)}",
                    f"{what}, {mpi} (ib_send_lat layout)",
                    cols,
                    rows,
                    ["t_typical is the median; percentiles by nearest rank over every iteration."],
                )
            )
    return tables


def _slug_key(text: str) -> str:
    return "".join(c if c.isalnum() or c == "." else "-" for c in text.lower()).strip("-")


def rdma_bandwidth_tables(figures: list[Figure]) -> list[Table]:
    """perftest's bandwidth table (``ib_send_bw -a``): MiB/s as perftest prints it, and Gb/s."""
    tables = []
    for label, per in sorted(_by_mpi_and_size(figures, "rdma.bandwidth").items()):
        rows = []
        for size in sorted(per):
            s = per[size].sample
            peak = s.params.get("bw_peak")
            rate = s.params.get("msg_rate")
            rows.append(
                [
                    str(size),
                    str(s.params.get("iterations", "–")),
                    format_value(peak, "MiB/s") if isinstance(peak, float) else "–",
                    format_value(s.value, "MiB/s"),
                    format_value(s.value, "Gb/s"),
                    f"{rate / 1e6:.6f}" if isinstance(rate, float) else "–",  # op/s → Mpps
                ]
            )
        cols = [
            "#bytes",
            "#iterations",
            "BW peak[MiB/sec]",
            "BW average[MiB/sec]",
            "BW average[Gb/sec]",
            "MsgRate[Mpps]",
        ]
        notes = ["MiB = 2^20 B as perftest counts its MB/sec; Gb = 10^9 bit (--report_gbits)."]
        tables.append(
            Table(f"rdma-bw-{_slug_key(label)}", f"RDMA bandwidth, {label}", cols, rows, notes)
        )
    return tables


def collective_tables(figures: list[Figure]) -> list[Table]:
    """One table per collective: average latency across ranks per MPI, with min and max
    across ranks (osu_allreduce -f's Min/Max/Avg, IMB's t_min/t_max/t_avg)."""
    ops = sorted({f.sample.metric for f in figures if f.sample.metric.startswith("coll.")})
    tables = []
    for metric in ops:
        data = _by_mpi_and_size(figures, metric)
        mpis = sorted(data)
        sizes = sorted({s for per in data.values() for s in per})
        rows, raw = [], []
        for size in sizes:
            row, values = [str(size)], []
            for m in mpis:
                fig = data[m].get(size)
                st = fig.sample.stats if fig else None
                values.append(fig.sample.value if fig else None)
                row.append(format_value(fig.sample.value, "us") if fig else "–")
                lo = format_value(st.min, "us") if st and st.min is not None else "–"
                hi = format_value(st.max, "us") if st and st.max is not None else "–"
                row.append(f"{lo} / {hi}")
            rows.append(row)
            raw.append(values)
        cols = ["#bytes"]
        for m in mpis:
            cols += [f"Avg Latency [us] ({m})", f"Min / Max [us] ({m})"]
        op = metric.split(".", 1)[1]
        ranks = sorted(
            {str(f.sample.params.get("ranks")) for f in figures if f.sample.metric == metric}
        )
        notes = [
            f"{', '.join(ranks)} ranks; each rank times its own calls (barrier outside the timed "
            "region), then min / max / average across ranks; the best average per row is marked."
        ]
        best = {(r, 1 + 2 * c) for r, c in _best_cells(raw, "lower", 0)}
        tables.append(
            Table(
                f"coll-{op}", f"MPI {op} latency (osu_{op} -f method)", cols, rows, notes, best=best
            )
        )
    return tables


COMPUTE_METRICS = ("compute.rpeak", "compute.dgemm", "compute.sgemm", "compute.hpl")


def compute_table(figures: list[Figure]) -> Table | None:
    """Rpeak with its derivation, DGEMM/SGEMM and HPL Rmax with their share of Rpeak."""
    rows, notes = [], []
    seen_rpeak: set[str] = set()
    order = {m: i for i, m in enumerate(COMPUTE_METRICS)}
    for f in sorted(figures, key=lambda f: order.get(f.sample.metric, 9)):
        s, p = f.sample, f.sample.params
        if s.metric == "compute.rpeak":
            precision = str(p.get("precision", "dp")).upper()
            if precision in seen_rpeak:
                continue  # every job that knows Rpeak records it; show it once
            seen_rpeak.add(precision)
            rows.append([f"Rpeak ({precision})", format_value(s.value, "GFLOP/s"), "", "", ""])
            if p.get("derivation") or p.get("rpeak_derivation"):
                notes.append(f"Rpeak {precision}: {p.get('derivation') or p['rpeak_derivation']}")
            continue
        fraction = p.get("rpeak_fraction") or p.get("efficiency")
        if s.metric == "compute.hpl":
            what = "HPL Rmax"
            detail = f"N={p.get('N')} NB={p.get('NB')} P×Q={p.get('P')}×{p.get('Q')}"
            detail += f", {p.get('time_s')} s, residual {p.get('residual')} PASSED"
        else:
            what = s.metric.split(".")[1].upper()
            detail = f"n={p.get('n')}, {p.get('threads', '?')} threads"
        rows.append(
            [
                what,
                format_value(s.value, "GFLOP/s"),
                f"{100 * fraction:.1f}%" if isinstance(fraction, float) else "–",
                _count(f),
                detail,
            ]
        )
        why = p.get("rpeak_note") or (p.get("rpeak_derivation") if "rpeak" not in p else None)
        if fraction is None and why:
            notes.append(f"{what}: no % of Rpeak — {why}")
    if not rows:
        return None
    cols = ["", "GFLOP/s", "% of Rpeak", "n", "details"]
    return Table("compute", "Compute (Rpeak, DGEMM, HPL)", cols, rows, sorted(set(notes)))


def hockney_table(figures: list[Figure]) -> Table | None:
    """The Hockney model t(n) = α + n/β fitted to each MPI's latency curve (and β also from
    its bandwidth curve), with n½ and the eager → rendezvous switch where the curve steps."""
    from assay.analysis.models import InsufficientDataError, fit_hockney, fit_hockney_bandwidth

    lat = _by_mpi_and_size(figures, "p2p.latency")
    bw = _by_mpi_and_size(figures, "p2p.bandwidth")
    rows = []
    for mpi in sorted(set(lat) | set(bw)):
        row = [mpi]
        try:
            sizes = sorted(lat.get(mpi, {}))
            fit = fit_hockney(sizes, [lat[mpi][s].sample.value for s in sizes])
            row += [
                format_value(fit.alpha, "us"),
                format_value(fit.beta, "MB/s") if math.isfinite(fit.beta) else "∞",
                human_bytes(round(fit.n_half)) if math.isfinite(fit.n_half) else "–",
                f"{human_bytes(fit.switch.size_before)} → {human_bytes(fit.switch.size_after)}"
                if fit.switch
                else "none seen",
                f"{fit.r2:.3f}",
            ]
        except InsufficientDataError:
            row += ["–"] * 5
        try:
            sizes = sorted(bw.get(mpi, {}))
            bfit = fit_hockney_bandwidth(sizes, [bw[mpi][s].sample.value for s in sizes])
            row.append(format_value(bfit.beta, "MB/s") if math.isfinite(bfit.beta) else "∞")
        except InsufficientDataError:
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
    return Table("p2p-model", "MPI latency/bandwidth model (Hockney)", cols, rows, notes)


def generic_table(figures: list[Figure], shown: set[int]) -> Table | None:
    """Every figure no dedicated table shows, so nothing measured is left out of a report."""
    rest = [f for f in figures if id(f) not in shown]
    if not rest:
        return None
    rows = []
    for f in sorted(rest, key=lambda f: (f.sample.metric, str(f.sample.params))):
        info = metric_info(f.sample.metric)
        unit = info.display if f.sample.unit == info.unit else f.sample.unit
        value = (
            format_value(f.sample.value, unit)
            if f.sample.unit == info.unit
            else f"{f.sample.value:g}"
        )
        params = ", ".join(
            f"{k}={v}" for k, v in sorted(f.sample.params.items()) if not isinstance(v, list | dict)
        )
        rows.append([f.sample.metric, params, value, unit, _count(f), _pct(_variation(f))])
    cols = ["metric", "params", "value", "unit", "n", "variation"]
    return Table("other", "Other measurements", cols, rows)


def failures_table(results: list[JobResult]) -> Table | None:
    failed = [r for r in results if r.status != "ok"]
    if not failed:
        return None
    rows = [[r.job_id, r.status, r.reason.splitlines()[0] if r.reason else ""] for r in failed]
    notes = [f"Full stderr of each: {r.stderr_path}" for r in failed]
    return Table(
        "failures", "Jobs that failed or were skipped", ["job", "status", "reason"], rows, notes
    )


def commands_of(results: list[JobResult], probe_prefix: str) -> list[str]:
    seen, out = set(), []
    for r in results:
        if r.job_id.split("-", 2)[1:2] == [probe_prefix] and r.argv:
            # One command per distinct launcher, as the seed pages show one per table.
            key = r.argv[0]
            if key not in seen:
                seen.add(key)
                out.append(shlex.join(r.argv))
    return out


# Which probes measure with the method a dedicated table names (OSU's p2p and collective
# method: our probes, OSU itself, IMB); others (HPCC's ping-pong, say) go to "Other".
P2P_METHOD = frozenset({"p2p", "osu", "imb"})
COLL_METHOD = frozenset({"coll", "osu", "imb"})


def _claim(figures: list[Figure], probes: frozenset[str], prefix: str) -> list[Figure]:
    return [f for f in figures if f.sample.probe in probes and f.sample.metric.startswith(prefix)]


DOMAIN_METRICS = frozenset().union(*TABLE_METRICS.values())


def build_tables(run: LoadedRun) -> list[Table]:
    figures = fold_repetitions(run.samples)
    hosts = sorted({h for r in run.results for h in r.hosts})
    tables = [system_table(run.system, hosts)]
    shown: set[int] = set()

    stream_figs = [
        f
        for f in figures
        if f.sample.probe == "stream"
        and f.sample.metric in {f"memory.{k}" for k in STREAM_KERNELS}
        and f.sample.params.get("scope", "node") == "node"
    ]
    stream = stream_table(stream_figs)
    if stream:
        stream.commands = [
            c for c in commands_of(run.results, "stream") if not c.startswith("numactl ")
        ]
        tables.append(stream)
        shown |= {id(f) for f in stream_figs}
    domain_figs = [
        f
        for f in figures
        if f.sample.probe in ("stream", "memlat")
        and id(f) not in shown
        and f.sample.metric in DOMAIN_METRICS
    ]
    for table in domain_tables(domain_figs, run.system, run.results):
        tables.append(table)
        shown |= {id(f) for f in domain_figs if f.sample.metric in TABLE_METRICS[table.key]}

    # HPCC's own DGEMM (inside the hpl probe's run) is a different method: "Other" shows it.
    compute_figs = [
        f
        for f in figures
        if (f.sample.probe == "dgemm" and f.sample.metric in COMPUTE_METRICS)
        or (f.sample.probe == "hpl" and f.sample.metric in ("compute.hpl", "compute.rpeak"))
    ]
    compute = compute_table(compute_figs)
    if compute:
        tables.append(compute)
        shown |= {id(f) for f in compute_figs}

    all_pairs = [f for f in figures if f.sample.params.get("placement") == "all-pairs"]
    # Raw samples: folding repetitions would merge pairs that differ only in their hosts.
    tables += [Table(*parts) for parts in allpairs_tables(run.samples)]
    tables += [Table(*parts) for parts in pernode_parts(run.samples)]
    shown |= {id(f) for f in all_pairs}
    p2p_figs = [f for f in _claim(figures, P2P_METHOD, "p2p.") if id(f) not in shown]
    lat = latency_table(p2p_figs)
    if lat:
        lat.commands = commands_of(run.results, "p2p")
        tables.append(lat)
    for metric in ("p2p.bandwidth", "p2p.bibw"):
        bw = bandwidth_table(p2p_figs, metric)
        if bw:
            tables.append(bw)
    shown |= {
        id(f)
        for f in p2p_figs
        if f.sample.metric in ("p2p.latency", "p2p.bandwidth", "p2p.bibw")
        and "size" in f.sample.params
    }

    coll_figs = [f for f in _claim(figures, COLL_METHOD, "coll.") if "size" in f.sample.params]
    colls = collective_tables(coll_figs)
    for t in colls:
        t.commands = commands_of(run.results, "coll")[:1]
    tables += colls
    shown |= {id(f) for f in coll_figs}

    tables += storage_tables(figures)
    shown |= {id(f) for f in storage_figures(figures)}

    model = hockney_table(p2p_figs)
    if model:
        tables.append(model)
    tables += latency_stats_tables(p2p_figs)

    rdma_figs = [
        f
        for f in _claim(figures, frozenset({"rdma", "perftest"}), "rdma.")
        if "size" in f.sample.params
    ]
    tables += latency_stats_tables(rdma_figs, "rdma.latency", "RDMA latency")
    tables += rdma_bandwidth_tables(rdma_figs)
    shown |= {id(f) for f in rdma_figs}
    other = generic_table(figures, shown)
    if other:
        tables.append(other)
    failures = failures_table(run.results)
    if failures:
        tables.append(failures)
    return tables


__all__ = ["Table", "build_tables", "to_display"]
