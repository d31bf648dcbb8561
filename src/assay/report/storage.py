"""Storage tables: the six workloads, sweeps, and response-time curves (fio probe).

``storage_tables(figures)`` builds, from folded figures of the ``fio`` probe's driver:

* ``storage-workloads``: one row per workload and direction (a mix has a read row and a write
  row), at the run's common configuration -- numjobs, iodepth, IOPS, MiB/s, and the mean, p99
  and p99.9 of the total latency (fio ``lat``: submission + completion, Vdbench's response
  time);
* ``storage-sweep-<workload>``: a workload measured at several numjobs / iodepth / block sizes,
  one row per configuration, with the totals over directions and Little's law;
* ``storage-curve-<workload>…``: a Vdbench ``iorate=curve``: the uncontrolled run, then offered
  %, target and achieved IOPS, mean and p99 latency and Little's law per point; the knee (and how
  it was found) and the plot files, relative to the run directory, in the notes.

Multi-client runs (``hosts``) have a point per host and one for ``host == "All clients"``, their
total: the workloads table then has a Host column (the total last), and the sweep and curve
tables show the totals. Jobs run together (``groups``) have a row per job and one for the
group's total (``workload`` = the group, right before its jobs); curve tables show the totals.

``storage_figures(figures)`` are the figures these tables claim: every sample the driver printed
(it marks them with a ``workload`` param), the completion-latency ones included, which the
tables do not show but the JSON and CSV reports keep. fio output imported with ``assay import``
has no ``workload`` and is left to the generic table.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from assay.analysis.derived.storage_points import (
    CurveKey,
    CurveKnee,
    Point,
    config_of,
    curve_knees,
    points_of,
    storage_figures,
)
from assay.analysis.statistics.stats import Figure
from assay.report.table import Table
from assay.units import format_value, human_bytes
from assay.vocab import ALL_CLIENTS
from assay.vocab import STORAGE_WORKLOADS as NAMES

__all__ = ["storage_figures", "storage_tables"]


def littles_cell(pt: Point) -> str:
    """ "measured / configured", with the driver's flag (raised on an uncontrolled run only)."""
    check = pt.littles()
    if check is None:
        return "–"
    cell = f"{check.measured_concurrency:.2f} / {pt.params['outstanding_expected']}"
    flag = pt.littles_flag()
    if flag:
        cell += " (" + str(flag).split(":", 1)[0] + ")"
    return cell


def _order(name: str) -> tuple[int, str]:
    return (NAMES.index(name) if name in NAMES else len(NAMES), name)


def _workload_order(points: list[Point]) -> list[str]:
    """Workload names in table order: the six first, a group's total before its jobs."""
    group_of = {pt.workload: pt.params.get("group") for pt in points}

    def key(name: str) -> tuple[Any, ...]:
        group = group_of.get(name) or name
        return (*_order(group), name != group, name)

    return sorted(group_of, key=key)


def _ms(seconds: float | None) -> str:
    return "–" if seconds is None else format_value(seconds, "ms", 3)


def _run_notes(points: list[Point]) -> list[str]:
    notes = []
    reps = sorted({pt.repetitions for pt in points if pt.repetitions > 1})
    if reps:
        notes.append(
            f"Points measured {'/'.join(map(str, reps))} times (repetitions, or the same "
            "configuration in two benches) show the median."
        )
    for name in ("direct_fallback", "ioengine_fallback"):
        for text in sorted({str(pt.params[name]) for pt in points if name in pt.params}):
            notes.append(f"Warning: {text}.")
    hosts = sorted({pt.host for pt in points if pt.host and pt.host != ALL_CLIENTS})
    vdbench_hosts = sorted({pt.host for pt in points if pt.params.get("node_group")} - {None})
    if hosts and vdbench_hosts:
        notes.append(
            f"Vdbench hosts on Slurm ({', '.join(h for h in vdbench_hosts if h != ALL_CLIENTS)})"
            f": each host's SDs from its own node, all at once; '{ALL_CLIENTS}' is their total "
            "as Vdbench totals a run -- IOPS and bandwidth summed, mean latency weighted by "
            "IOPS; no p99 (each host's histogram stayed on its node)."
        )
    elif hosts:
        notes.append(
            f"Multi-client (fio client/server) on {len(hosts)} hosts ({', '.join(hosts)}): "
            f"a row per host, and '{ALL_CLIENTS}' for their total -- IOPS and bandwidth summed, "
            "latency over every I/O, p99 / p99.9 from the hosts' merged json+ histograms."
        )
    groups = sorted({str(pt.params["group"]) for pt in points if pt.params.get("group")})
    for group in groups:
        jobs = sorted({pt.workload for pt in points if pt.params.get("group") == group} - {group})
        notes.append(
            f"Jobs run together (one fio run): {group} = {', '.join(jobs)}; the row named "
            f"{group} is their total (numjobs: all their threads; latency merged from the "
            "json+ histograms)."
        )
    for pt in points:
        flag = pt.littles_flag()
        if flag:
            notes.append(
                f"Little's law, {pt.workload} (numjobs {pt.config[0]}, iodepth {pt.config[1]}): "
                f"{flag}."
            )
    return notes


def _settings_note(points: list[Point]) -> str:
    p = points[0].params
    parts = []
    if "runtime" in p:
        parts.append(f"{p['runtime']:g} s measured after {p.get('ramp_time', 0):g} s warm-up")
    if "ioengine" in p:
        parts.append(f"ioengine={p['ioengine']}")
    if "direct" in p:
        parts.append(f"direct={p['direct']}")
    if isinstance(p.get("size"), int):
        parts.append(f"{human_bytes(p['size'])} per file (one per thread)")
    if "target" in p:
        parts.append(f"target {p['target']}")
    return "; ".join(parts)


def workloads_table(points: list[Point]) -> Table | None:
    """The six workloads (and any custom job) at the run's common configuration."""
    chosen = [pt for pt in points if pt.mode == "workloads"]
    if not chosen:
        return None
    # The (numjobs, iodepth) most workloads ran at; a sweep's other points are in its own
    # table. Block sizes differ by workload, so they are not part of it.
    threads = sorted({(pt.workload, pt.config[:2]) for pt in chosen})
    base = Counter(c for _, c in threads).most_common(1)[0][0]
    rows = []
    shown: list[Point] = []
    with_hosts = any(pt.host is not None for pt in chosen)
    for name in _workload_order(chosen):
        mine = sorted((pt for pt in chosen if pt.workload == name), key=Point.order)
        # a group's jobs and total differ from the other workloads: not a sweep, all shown
        at_base = [pt for pt in mine if pt.config[:2] == base or "group" in pt.params]
        for pt in at_base or mine:
            shown.append(pt)
            for d in pt.directions():
                iops = pt.value("storage.iops", d)
                bw = pt.value("storage.bandwidth", d)
                lat = pt.value("storage.latency", d)
                st = lat.sample.stats if lat else None
                rows.append(
                    [
                        name,
                        *([pt.host or "–"] if with_hosts else []),
                        d,
                        str(pt.config[0]),
                        str(pt.config[1]),
                        pt.config[2],
                        format_value(iops.sample.value, "IOPS", 0) if iops else "–",
                        format_value(bw.sample.value, "MiB/s") if bw else "–",
                        _ms(lat.sample.value if lat else None),
                        _ms(st.p99 if st else None),
                        _ms(st.p999 if st else None),
                    ]
                )
    cols = [
        "Workload",
        *(["Host"] if with_hosts else []),
        "Direction",
        "numjobs",
        "iodepth",
        "Block",
        "IOPS",
        "MiB/s",
        "Mean latency ms",
        "p99 ms",
        "p99.9 ms",
    ]
    notes = [
        "Latency is fio's total latency (lat: submission + completion), Vdbench's response "
        "time; p99 / p99.9 from fio's json+ histogram. A 50/50 mix has a read and a write row.",
        _settings_note(shown),
        "MiB/s = 2^20 B/s. Raw fio job files and json+ outputs: jobs/<job>/NN-<workload>.fio, "
        ".json in the run directory.",
        *_run_notes(shown),
    ]
    return Table(
        "storage-workloads", "Storage workloads (fio)", cols, rows, [n for n in notes if n]
    )


def sweep_tables(points: list[Point]) -> list[Table]:
    """A table per workload measured at more than one configuration (totals only)."""
    chosen = [pt for pt in points if pt.mode == "workloads" and pt.total]
    tables = []
    for name in sorted({pt.workload for pt in chosen}, key=_order):
        mine = sorted((pt for pt in chosen if pt.workload == name), key=lambda pt: pt.config)
        if len({pt.config for pt in mine}) < 2:
            continue
        varying = [
            label
            for i, label in enumerate(("numjobs", "iodepth", "block size"))
            if len({pt.config[i] for pt in mine}) > 1
        ]
        rows = []
        for pt in mine:
            iops, mean, p99 = pt.totals()
            rows.append(
                [
                    str(pt.config[0]),
                    str(pt.config[1]),
                    pt.config[2],
                    format_value(iops, "IOPS", 0),
                    format_value(pt.bandwidth(), "MiB/s"),
                    _ms(mean),
                    _ms(p99),
                    littles_cell(pt),
                ]
            )
        cols = [
            "numjobs",
            "iodepth",
            "Block",
            "IOPS",
            "MiB/s",
            "Mean latency ms",
            "p99 ms",
            "Outstanding measured / configured",
        ]
        notes = [
            "Totals over directions; latency is fio's total latency, mean over every I/O, p99 "
            "from the merged json+ histogram.",
            "Little's law: outstanding I/Os measured = IOPS × mean latency, against numjobs × "
            "iodepth configured (iodepth 1 for a synchronous engine); far below it, the client "
            "(CPU, engine), not the storage, set the pace.",
            *_run_notes(mine),
        ]
        tables.append(
            Table(
                f"storage-sweep-{name}",
                f"Storage sweep: {name} by {', '.join(varying)} (fio)",
                cols,
                rows,
                notes,
            )
        )
    return tables


def _summaries(figures: list[Figure]) -> dict[tuple[Any, ...], Figure]:
    out = {}
    for f in figures:
        p = f.sample.params
        if p.get("mode") == "curve-summary":
            out[(p["workload"], config_of(p), p.get("target"))] = f
    return out


def curve_tables(
    points: list[Point], figures: list[Figure], knees: dict[CurveKey, CurveKnee]
) -> list[Table]:
    """A table per response-time curve, its knee the derive step's."""
    summaries = _summaries(figures)
    curves: dict[tuple[Any, ...], list[Point]] = {}
    for pt in points:
        if pt.mode in ("max", "curve") and pt.total:
            curves.setdefault((pt.workload, pt.config, pt.params.get("target")), []).append(pt)
    several = len({k[0] for k in curves}) < len(curves)
    tables = []
    for key in sorted(curves, key=lambda k: (_order(k[0]), k[1])):
        name, config, _ = key
        pts = sorted(curves[key], key=lambda pt: (pt.mode != "max", pt.curve_pct or 0))
        summary = summaries.get(key)
        s = summary.sample.params if summary else {}
        knee = knees.get(key) or CurveKnee(None, note="no curve point")
        knee_pct = knee.curve_pct
        rows, best = [], set()
        for pt in pts:
            target = pt.params.get("target_iops")
            achieved, mean, p99 = pt.totals()
            if pt.mode == "max":
                offered = "max (uncontrolled)"
            else:
                offered = f"{pt.curve_pct}%" + (" (knee)" if pt.curve_pct == knee_pct else "")
            if pt.mode == "curve" and pt.curve_pct == knee_pct:
                best.add((len(rows), 2))
            rows.append(
                [
                    offered,
                    format_value(target, "IOPS", 0) if target else "–",
                    format_value(achieved, "IOPS", 0),
                    f"{100 * achieved / target:.0f}%" if target else "–",
                    _ms(mean),
                    _ms(p99),
                    littles_cell(pt),
                ]
            )
        cols = [
            "Offered",
            "Target IOPS",
            "Achieved IOPS",
            "of target",
            "Mean latency ms",
            "p99 ms",
            "Outstanding measured / configured",
        ]
        notes = [_knee_note(knee, summary is not None)]
        clients = s.get("client_count") or s.get("hosts")  # "hosts": runs stored before 0.2
        if isinstance(clients, int) and clients:
            notes.append(
                f"Totals over {clients} hosts (fio client/server): each point's cap is split "
                "evenly between the hosts; each host's figures are in the JSON and CSV reports."
            )
        if s.get("curve_stopped"):
            notes.append(f"Curve {s['curve_stopped']}.")
        plots = [s[k] for k in ("plot_svg", "plot_png") if s.get(k)]  # runs whose driver drew them
        if plots:
            job = summary.sample.job_id if summary else pts[0].job_id
            notes.append("Plot: " + ", ".join(f"jobs/{job}/{name}" for name in plots) + ".")
        else:
            notes.append("Plot: assay report --format html, or --plots-dir DIR for SVG/PNG files.")
        notes += [
            "Vdbench iorate=curve: an uncontrolled run, then runs capped at the given % of its "
            "IOPS (fio rate_iops per thread, Poisson arrivals), concurrency unchanged "
            f"(numjobs {config[0]} × iodepth {config[1]}); latency is fio's total latency.",
            "Little's law: outstanding measured = IOPS × mean latency; capped points keep the "
            "queue partly empty on purpose, so only the uncontrolled run is flagged.",
            *_run_notes([pt for pt in pts if pt.mode == "max"]),
        ]
        suffix = f"-nj{config[0]}-qd{config[1]}" if several else ""
        tables.append(
            Table(
                f"storage-curve-{name}{suffix}",
                f"Response-time curve: {name}, {config[2]}, numjobs {config[0]}, "
                f"iodepth {config[1]} (fio)",
                cols,
                rows,
                notes,
                best=best,
            )
        )
    return tables


def _knee_note(knee: CurveKnee, have_summary: bool) -> str:
    if not have_summary:
        return "The curve did not finish: no knee was looked for."
    if knee.curve_pct is not None:
        return (
            f"Knee at {knee.curve_pct}% offered: {format_value(knee.iops, 'IOPS', 0)} "
            f"IOPS at {_ms(knee.latency_s)} ms mean latency; found by {knee.method}."
        )
    return f"No knee: {knee.note}."


def storage_tables(
    figures: list[Figure],
    points: list[Point] | None = None,
    knees: dict[CurveKey, CurveKnee] | None = None,
) -> list[Table]:
    """Workloads, sweep and curve tables from the fio probe's figures (others are ignored);
    ``points`` and ``knees``: the derive step's, when it ran (else derived here, the same
    way, by the same functions)."""
    mine = storage_figures(figures)
    if not mine:
        return []
    if points is None:
        points = points_of(mine)
    if knees is None:
        knees = curve_knees(points, mine)
    tables: list[Table] = []
    six = workloads_table(points)
    if six:
        tables.append(six)
    tables += sweep_tables(points)
    tables += curve_tables(points, mine, knees)
    return tables
