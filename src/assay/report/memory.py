"""Memory tables: STREAM for the node and per domain, and the load-latency ladder.

``stream_table`` is STREAM's own table for the whole node. ``domain_tables`` adds, in the
layout the seed pages use, a STREAM row per L3 domain / NUMA node with the "Triad 260 GB/s
(32–33 GB/s per CCX)" line under it (the node figure quoted from the node-wide run), and an
MLC/lat_mem_rd-style ladder of load latency against working set.
"""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from assay.analysis.derived.domains import (
    StreamDomains,
    is_domain_sample,
    median_figure,
    stream_domains,
    summary_line,
)
from assay.analysis.derived.levels import LadderPoint, read_levels, reading_notes
from assay.analysis.statistics.stats import Figure
from assay.model import JobResult, System
from assay.report.table import (
    Table,
    commands_of,
    count,
    format_size,
    spread_column,
)
from assay.units import format_value
from assay.vocab import DOMAIN_SCOPES, STREAM_KERNELS

_ROW_PARAMS = ("min_time", "avg_time", "max_time")


def _stream_runs(figures: list[Figure]) -> dict[tuple, dict[str, Figure]]:
    """STREAM's figures by run (their params less the per-row times), in the order found: one
    file of several runs (thread counts, MPI ranks) gives one entry per run."""
    runs: dict[tuple, dict[str, Figure]] = {}
    for f in figures:
        if f.sample.probe != "stream":
            continue
        key = tuple(
            sorted((k, repr(v)) for k, v in f.sample.params.items() if k not in _ROW_PARAMS)
        )
        runs.setdefault(key, {})[f.sample.metric.split(".")[1]] = f
    return runs


def _stream_runs_table(runs: list[dict[str, Figure]]) -> Table:
    """One row per run: where each run's own thread count (or MPI ranks) stands beside its
    own rates, never another run's."""
    first = [next(iter(r.values())).sample.params for r in runs]
    with_ranks = any("ranks" in p for p in first)
    cols = ["Run", "Ranks" if with_ranks else "Threads", "Elements"]
    cols += [f"{k.capitalize()} GB/s" for k in STREAM_KERNELS]
    rows = []
    for i, (kernels, p) in enumerate(zip(runs, first, strict=True)):
        rows.append(
            [
                str(p["run"] + 1 if "run" in p else i + 1),
                str(p.get("ranks" if with_ranks else "threads", "?")),
                str(p.get("elements", "?")),
                *(_gbs(kernels.get(k)) for k in STREAM_KERNELS),
            ]
        )
    notes = [
        f"{len(runs)} STREAM runs, one row each with the thread count (or MPI ranks) that run "
        "printed; best rate from each run's minimum time. '–': the run printed no such row "
        "(stream-scaling prints only Triad after its first run). Runs that failed STREAM's "
        "validation are not imported. GB/s = 10^9 B/s (STREAM's MB/s = 10^6 B/s).",
    ]
    return Table("stream", "Memory bandwidth (STREAM), one row per run", cols, rows, notes)


def stream_table(figures: list[Figure]) -> Table | None:
    runs = _stream_runs(figures)
    if len(runs) > 1:
        return _stream_runs_table(list(runs.values()))
    by_kernel = next(iter(runs.values()), {})
    if not by_kernel:
        return None
    shown = [by_kernel[k] for k in STREAM_KERNELS if k in by_kernel]
    spreads, spread_words = spread_column(shown)
    rows = []
    for kernel, fig, spread in zip(
        [k for k in STREAM_KERNELS if k in by_kernel], shown, spreads, strict=True
    ):
        # Every column of a row from one repetition (the median by rate), so the rate and the
        # minimum time it was computed from agree.
        rep = fig.median_member()
        p = rep.params
        rows.append(
            [
                kernel.capitalize(),
                format_value(rep.value, "GB/s"),
                format_value(rep.value, "MB/s", 1),
                f"{p.get('avg_time', 0):.6f}",
                f"{p.get('min_time', 0):.6f}",
                f"{p.get('max_time', 0):.6f}",
                count(fig),
                spread,
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
    reps = max(f.repetitions for f in by_kernel.values())
    notes = [
        how + "; solution validated.",
        *(
            [
                f"{reps} repetitions: each row is the repetition with the median rate, its "
                "rate and its times together (not a median of each column)."
            ]
            if reps > 1
            else []
        ),
        "MB/s = 10^6 B/s as STREAM prints it" + (f"; {spread_words}" if spread_words else "."),
    ]
    cols = [
        "Function",
        "Best Rate GB/s",
        "Best Rate MB/s",
        "Avg time s",
        "Min time s",
        "Max time s",
        "n",
        "spread",
    ]
    return Table("stream", "Memory bandwidth (STREAM)", cols, rows, notes)


SCOPE_LABEL = {"l3": "L3", "numa": "NUMA"}

# The metrics each table shows, so the generic "other" table does not repeat them.
TABLE_METRICS: dict[str, set[str]] = {
    "stream-domains": {f"memory.{k}" for k in STREAM_KERNELS},
    "memory-latency": {"memory.latency"},
}


DOMAIN_METRICS = frozenset().union(*TABLE_METRICS.values())


def stream_figures(figures: Iterable[Figure]) -> list[Figure]:
    """The node-wide STREAM figures of the STREAM table (a domain's are the domain table's)."""
    kernels = {f"memory.{k}" for k in STREAM_KERNELS}
    return [
        f
        for f in figures
        if f.sample.probe == "stream"
        and f.sample.metric in kernels
        and f.sample.params.get("scope", "node") == "node"
    ]


def stream_commands(results: list[JobResult]) -> list[str]:
    """The STREAM table's commands: one per launcher, without the per-domain ``numactl`` runs."""
    return [c for c in commands_of(results, "stream") if not c.startswith("numactl ")]


def domain_figures(figures: Iterable[Figure]) -> list[Figure]:
    """What the domain and latency tables read: STREAM's figures (the node-wide ones too, as
    the domain summary quotes the node's Triad) and the memory-latency ladder."""
    return [
        f
        for f in figures
        if f.sample.probe in ("stream", "memlat") and f.sample.metric in DOMAIN_METRICS
    ]


def node_figures(figures: Iterable[Figure]) -> list[Figure]:
    """The figures ``stream_table`` should show: everything but per-domain STREAM."""
    return [
        f for f in figures if not (f.sample.probe == "stream" and is_domain_sample(f.sample.params))
    ]


def _domain_word(scope: str, system: System | None) -> str | None:
    # AMD calls an L3 domain a CCX (Core CompleX); elsewhere the generic name is right.
    if scope == "l3" and system is not None and system.vendor in ("AMD", "Hygon"):
        return "CCX"
    return None


def _gbs(fig: Figure | None) -> str:
    return format_value(fig.sample.value, "GB/s") if fig else "–"


def _size_note(per: dict[tuple[str, int], dict[str, Figure]]) -> str | None:
    """Whether each instance kept STREAM's rule (arrays >= 4x the caches it can use)."""
    short = []
    for (scope, domain), kernels in sorted(per.items()):
        p = next(iter(kernels.values())).sample.params
        l3, array = p.get("domain_l3_bytes"), p.get("array_bytes")
        if l3 and array and array < 4 * l3:
            short.append(f"{SCOPE_LABEL[scope]} {domain}")
    if not short:
        return None
    return (
        f"Arrays below STREAM's rule (each >= 4x the domain's L3) for {', '.join(short)}: "
        "limited by the domain's memory or set by hand; cache may inflate those figures."
    )


def stream_domain_table(
    domains: StreamDomains | None, system: System | None = None
) -> Table | None:
    """One row per L3 domain and NUMA node: where, the four kernels, and a slow flag (derived
    once: ``assay.analysis.derived.domains.stream_domains``)."""
    if domains is None:
        return None
    per, summaries, threshold = domains.kernels, domains.summaries, domains.threshold
    flags = {
        (scope, slow.domain): slow.describe()
        for scope, summary in summaries.items()
        for slow in summary.slow
    }
    rows = []
    order = sorted(per, key=lambda key: (DOMAIN_SCOPES.index(key[0]), key[1]))
    for scope, domain in order:
        kernels = per[(scope, domain)]
        p = next(iter(kernels.values())).sample.params
        rows.append(
            [
                SCOPE_LABEL[scope],
                str(domain),
                str(p.get("cpus", "?")),
                str(p.get("threads", "?")),
                str(p.get("membind", "?")),
                *(_gbs(kernels.get(k)) for k in STREAM_KERNELS),
                flags.get((scope, domain), ""),
            ]
        )
    notes = [summary_line(s, word=_domain_word(scope, system)) for scope, s in summaries.items()]
    notes.append(
        "One STREAM instance per domain, one thread per core pinned to it (explicit "
        "OMP_PLACES), arrays bound to the domain's NUMA node(s) with numactl; best rate from "
        "the minimum time, the first iteration excluded; solution validated. GB/s = 10^9 B/s."
    )
    notes.append(
        f"Flagged: Triad more than {100 * threshold:.0f}% below the median of the other "
        "domains of the same kind (a missing or slower DIMM, a channel in a lower-speed "
        "mode, or memory on the wrong node)."
    )
    if size_note := _size_note(per):
        notes.append(size_note)
    cols = ["Scope", "Domain", "CPUs", "Threads", "Memory node", "Copy GB/s", "Scale GB/s"]
    cols += ["Add GB/s", "Triad GB/s", "Flag"]
    return Table("stream-domains", "Memory bandwidth per domain (STREAM)", cols, rows, notes)


def _config_label(params: dict[str, Any]) -> str:
    label = f"cpu {params.get('cpu', '?')}"
    return label + (", huge pages" if params.get("huge_pages") else "")


def latency_ladder_table(figures: list[Figure]) -> Table | None:
    """Working set against ns per load, one column per (cpu, page size) measured."""
    found: dict[tuple[str, int], list[Figure]] = defaultdict(list)
    for f in figures:
        ws = f.sample.params.get("working_set_bytes")
        if f.sample.metric == "memory.latency" and ws is not None:
            found[(_config_label(f.sample.params), int(ws))].append(f)
    by_config: dict[str, dict[int, Figure]] = defaultdict(dict)
    for (config, ws), figs in found.items():
        by_config[config][ws] = median_figure(figs)
    if not by_config:
        return None
    configs = sorted(by_config)
    sizes = sorted({ws for per in by_config.values() for ws in per})
    grid = [[by_config[c].get(ws) for c in configs] for ws in sizes]
    spreads, spread_words = spread_column([f for figs in grid for f in figs])
    rows = []
    for i, (ws, figs) in enumerate(zip(sizes, grid, strict=True)):
        level = next((str(f.sample.params.get("level", "?")) for f in figs if f), "?")
        cells = [format_value(f.sample.value, "ns") if f else "–" for f in figs]
        var = spreads[i * len(configs) : (i + 1) * len(configs)]
        rows.append([format_size(ws), level, *cells, *var])
    if len(configs) == 1:
        cols = ["Working set", "Level", "ns per load", "spread"]
    else:
        cols = ["Working set", "Level", *(f"ns per load ({c})" for c in configs)]
        cols += [f"spread ({c})" for c in configs]
    notes = [_plateaus(by_config[c], c) for c in configs]
    for c in configs:  # levels read from the curve, and where they contradict the sizes
        notes += reading_notes(read_levels(_ladder(by_config[c])), c)
    notes.append(
        "Pointer chasing (Intel MLC idle-latency / lmbench lat_mem_rd method): one pinned "
        "thread, one element per cache line linked in one random cycle (Sattolo), dependent "
        "loads so none overlap; value = median time per load over the timed passes. Level = "
        "smallest cache the working set fits in (sizes from /sys). With 4 KiB pages the large "
        "sets include TLB misses, as MLC's figures do."
    )
    notes += [spread_words] if spread_words else []
    return Table("memory-latency", "Memory load latency (pointer chasing)", cols, rows, notes)


def _ladder(per: dict[int, Figure]) -> list[LadderPoint]:
    return [
        LadderPoint(ws, f.sample.value, str(f.sample.params.get("level", "?")))
        for ws, f in sorted(per.items())
    ]


def _plateaus(per: dict[int, Figure], config: str) -> str:
    """ "cpu 0: L1 1.4–1.5 ns, L2 4.5–16 ns, ...; largest working set (2 GiB) 110 ns".

    A range per level rather than one pick: a level's figure climbs towards its size (TLB
    reach, conflicts), and the range shows that without choosing a point. The largest set
    is MLC's idle-latency figure (its buffer is far beyond the LLC).
    """
    by_level: dict[str, list[float]] = defaultdict(list)
    for ws in sorted(per):
        by_level[str(per[ws].sample.params.get("level", "?"))].append(per[ws].sample.value)
    parts = []
    for level, values in by_level.items():
        low, high = format_value(min(values), "ns", 1), format_value(max(values), "ns", 1)
        parts.append(f"{level} {low if low == high else f'{low}–{high}'} ns")
    largest = max(per)
    last = format_value(per[largest].sample.value, "ns", 1)
    return f"{config}: {', '.join(parts)}; largest working set ({format_size(largest)}) {last} ns"


def domain_tables(
    figures: list[Figure],
    system: System | None = None,
    results: list[JobResult] | None = None,
    domains: StreamDomains | None = None,
) -> list[Table]:
    """The per-domain STREAM table and the latency ladder, those that have data.

    ``system`` only words the summary ("per CCX" on AMD); ``results`` adds one example
    command per table; ``domains``: the derive step's (else derived here, the same way).
    """
    out = []
    stream = stream_domain_table(domains or stream_domains(figures), system)
    if stream is not None:
        if results:
            stream.commands = _example_command(results, "stream", lambda a: "numactl" in a[:1])
        out.append(stream)
    ladder = latency_ladder_table(figures)
    if ladder is not None:
        if results:
            ladder.commands = commands_of(results, "memlat")
        out.append(ladder)
    return out


def _example_command(
    results: list[JobResult], probe: str, keep: Callable[[list[str]], bool]
) -> list[str]:
    """The first command of ``probe`` that ``keep`` accepts: one domain's run stands for all."""
    for r in results:
        if r.job_id.split("-", 2)[1:2] == [probe] and r.argv and keep(r.argv):
            return [shlex.join(r.argv)]
    return []
