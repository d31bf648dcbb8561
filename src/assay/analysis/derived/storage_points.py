"""fio figures grouped into points: one fio run (repetitions folded) with its figures by
metric and direction, its totals over directions and its Little's law check.

The storage tables (:mod:`assay.report.storage`) draw these points and the derive step
(:mod:`assay.analysis.derived.derive`) computes them; a point's Little's law is
:func:`assay.analysis.derived.queueing.littles_law_check`, the function the fio driver uses while it
measures.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from assay.analysis.derived.knee import InsufficientDataError, find_knee
from assay.analysis.derived.queueing import LittleCheck, littles_law_check
from assay.analysis.statistics.stats import Figure
from assay.fio.workloads import SYNC_ENGINES
from assay.units import human_bytes
from assay.vocab import ALL_CLIENTS

PROBE = "fio"
DIRECTION_ORDER = ("read", "write", "trim", "mixed")
LATENCY_KIND = "total"  # the latency the tables show; "completion" is kept in the samples
Config = tuple[int, int, str]  # numjobs, iodepth, block size as shown


def storage_figures(figures: list[Figure]) -> list[Figure]:
    """The figures storage_tables shows (or deliberately keeps out of the generic table)."""
    return [
        f
        for f in figures
        if f.sample.probe == PROBE
        and f.sample.metric.startswith("storage.")
        and "workload" in f.sample.params
    ]


@dataclass
class Point:
    """One fio run (repetitions folded): its figures by (metric, direction)."""

    workload: str
    config: Config
    mode: str
    curve_pct: int | None
    params: dict[str, Any]
    job_id: str
    figures: dict[tuple[str, str], Figure] = field(default_factory=dict)
    repetitions: int = 1
    # The Host column: a fio client's host (multi-client; ALL_CLIENTS for their total) or a
    # Vdbench hd= host (``host_of``).
    host: str | None = None

    @property
    def total(self) -> bool:
        """Whether this point is a whole (not one host of several, nor one job of a group)."""
        group = self.params.get("group")
        return self.host in (None, ALL_CLIENTS) and (group is None or group == self.workload)

    def order(self) -> tuple[Any, ...]:
        """Sort key: configuration, then the hosts, their total last."""
        rank = 0 if self.host is None else 2 if self.host == ALL_CLIENTS else 1
        return (self.config, rank, self.host or "")

    def directions(self) -> list[str]:
        present = {d for (m, d) in self.figures if m == "storage.iops"}
        return [d for d in DIRECTION_ORDER if d in present]

    def value(self, metric: str, direction: str) -> Figure | None:
        return self.figures.get((metric, direction))

    def totals(self) -> tuple[float, float | None, float | None]:
        """(IOPS, mean latency s, p99 s) over every direction, from the folded figures.

        The mean over directions is weighted by IOPS (every direction ran equally long, so by
        I/O count). A p99 over several directions needs their merged histogram, which only the
        driver had: its ``point_p99_s`` (of the first repetition) is used then."""
        iops = weighted = 0.0
        lat_iops = 0.0
        p99 = None
        directions = self.directions()
        for d in directions:
            f_iops, f_lat = self.value("storage.iops", d), self.value("storage.latency", d)
            if f_iops is None:
                continue
            iops += f_iops.sample.value
            if f_lat is not None:
                weighted += f_iops.sample.value * f_lat.sample.value
                lat_iops += f_iops.sample.value
                if len(directions) == 1 and f_lat.sample.stats:
                    p99 = f_lat.sample.stats.p99
        mean = weighted / lat_iops if lat_iops else None
        if len(directions) > 1:
            p99 = self.params.get("point_p99_s")
        return iops, mean, p99

    def bandwidth(self) -> float:
        return sum(f.sample.value for (m, _), f in self.figures.items() if m == "storage.bandwidth")

    def littles(self) -> LittleCheck | None:
        """Little's law from the folded figures: L = λ·W with λ the IOPS over every direction
        and W their IOPS-weighted mean latency, against the configured concurrency
        (``outstanding_expected``: numjobs × iodepth × hosts). None when either is missing."""
        expected = self.params.get("outstanding_expected")
        iops, mean, _ = self.totals()
        if not expected or mean is None or mean <= 0:
            return None
        return littles_law_check(iops, mean, float(expected))

    def littles_flag(self) -> str | None:
        """What Little's law says is wrong with this point, or None.

        Only an uncontrolled run is judged: a capped (curve) point keeps its queue partly empty
        on purpose. ``queue not full`` when measured/configured < 0.8 (a synchronous engine, or
        a client that could not keep up); ``more outstanding than configured`` when > 1.2 (the
        inputs disagree). Runs stored before the derive step carry the driver's own flag.
        """
        if "littles_flag" in self.params:
            return str(self.params["littles_flag"])
        check = self.littles()
        if check is None or self.params.get("rate_limited") or self.mode == "curve":
            return None
        expected = self.params.get("outstanding_expected")
        if check.queue_not_full:
            engine = self.params.get("ioengine")
            why = "synchronous engine" if engine in SYNC_ENGINES else "CPU-bound client?"
            return (
                f"queue not full: {check.measured_concurrency:.2f} of {expected} I/Os outstanding "
                f"on average (ratio {check.ratio:.2f} < {check.min_ratio:g}; {why})"
            )
        if check.exceeds_configured:
            return (
                f"more outstanding than configured: {check.measured_concurrency:.2f} > "
                f"{expected} (ratio {check.ratio:.2f}); the inputs disagree"
            )
        return None


@dataclass(frozen=True)
class CurveKnee:
    """The knee of a response-time curve, or why there is none."""

    curve_pct: int | None
    iops: float | None = None
    latency_s: float | None = None
    method: str = ""
    note: str = ""  # set when there is no knee


def curve_knee(points: list[Point], method: str = "kneedle") -> CurveKnee:
    """The knee of a curve's capped points (in increasing offered load).

    Each point is (achieved IOPS over every direction, IOPS-weighted mean total latency) of its
    folded repetitions; the knee is :func:`assay.analysis.derived.knee.find_knee` on those (Kneedle
    with a noise gate, or the slope method). Three points with a latency are needed.
    """
    usable = []
    for pt in sorted(points, key=lambda pt: pt.curve_pct or 0):
        if pt.mode != "curve" or pt.curve_pct is None:
            continue
        iops, mean, _ = pt.totals()
        if mean and mean > 0:
            usable.append((pt.curve_pct, iops, mean))
    if len(usable) < 3:
        return CurveKnee(None, note=f"{len(usable)} curve point(s), 3 needed")
    try:
        knee = find_knee(
            [u[1] for u in usable],
            [u[2] for u in usable],
            method=method,  # type: ignore[arg-type]
        )
    except (InsufficientDataError, ValueError) as exc:
        return CurveKnee(None, note=str(exc))
    if knee is None:
        return CurveKnee(
            None,
            note="the mean latency did not rise enough or the curve did not bend beyond its "
            f"noise (find_knee, {method})",
        )
    return CurveKnee(
        usable[knee.index][0],
        knee.iops,
        knee.latency_s,
        knee.method + " on (achieved IOPS, mean total latency)",
    )


CurveKey = tuple[Any, ...]  # (workload, config, target)


def curve_key(workload: str, config: Config, target: Any) -> CurveKey:
    return (workload, config, target)


def curve_knees(points: list[Point], figures: list[Figure]) -> dict[CurveKey, CurveKnee]:
    """The knee of every response-time curve of a run, derived once (the curve's table and its
    plot read it): its points grouped by workload, configuration and target, each by the
    method its curve-summary asked for (Kneedle by default)."""
    methods: dict[CurveKey, str] = {}
    for f in figures:
        p = f.sample.params
        if p.get("mode") == "curve-summary":
            key = curve_key(p["workload"], config_of(p), p.get("target"))
            methods[key] = str(p.get("knee_method_requested", "kneedle"))
    curves: dict[CurveKey, list[Point]] = {}
    for pt in points:
        if pt.mode in ("max", "curve") and pt.total:
            key = curve_key(pt.workload, pt.config, pt.params.get("target"))
            curves.setdefault(key, []).append(pt)
    return {key: curve_knee(pts, methods.get(key, "kneedle")) for key, pts in curves.items()}


def config_of(p: dict[str, Any]) -> Config:
    bs = p.get("bs")
    shown = human_bytes(bs) if isinstance(bs, int) else str(bs or "?")
    return int(p.get("numjobs", 1)), int(p.get("iodepth", 1)), shown


def points_of(figures: list[Figure]) -> list[Point]:
    points: dict[tuple[Any, ...], Point] = {}
    for f in figures:
        p = f.sample.params
        mode = str(p.get("mode", "workloads"))
        if mode == "curve-summary":
            continue
        if f.sample.metric == "storage.latency" and p.get("latency") != LATENCY_KIND:
            continue
        pct = p.get("curve_pct")
        host = host_of(p)
        key = (p["workload"], config_of(p), mode, pct, p.get("target"), host)
        point = points.get(key)
        if point is None:
            point = points[key] = Point(
                p["workload"], config_of(p), mode, pct, dict(p), f.sample.job_id, host=host
            )
        point.figures[(f.sample.metric, str(p.get("direction", "?")))] = f
        point.repetitions = max(point.repetitions, f.repetitions)
    return [*points.values(), *host_totals(list(points.values()))]


def host_of(params: dict[str, Any]) -> str | None:
    """Whose figure a storage point is: a Vdbench hd= host (``vdbench_host``; runs stored
    before it had its own name used ``host`` beside ``node_group``) or a fio client's host as
    fio names it (``host``), else None (the run's whole)."""
    return params.get("vdbench_host") or params.get("host")


# Params of one host's run that do not hold for the total of several.
_PER_HOST = ("point_p99_s", "littles_flag", "hosts", "node", "vdbench_host", "node_index")


def host_totals(points: list[Point]) -> list[Point]:
    """The total of the per-host runs of one Vdbench run on Slurm (fio param ``node_group``:
    each ``hd=`` host ran its SDs on its own node, at once), as Vdbench totals a run over its
    hosts: IOPS and bandwidth summed, the mean latency weighted by IOPS (every I/O's time over
    every I/O), the outstanding I/O summed. No percentile: each host's histogram stayed on its
    node (the p99 columns show "–"). Multi-client runs (fio client/server) have their own total
    from merged histograms and are left alone."""
    groups: dict[tuple[Any, ...], list[Point]] = {}
    for pt in points:
        if pt.params.get("node_group") and pt.host not in (None, ALL_CLIENTS):
            key = (pt.workload, pt.config, pt.mode, pt.curve_pct, pt.params.get("target"))
            groups.setdefault((*key, pt.params["node_group"]), []).append(pt)
    totals = []
    for members in groups.values():
        if len(members) < 2:
            continue
        first = members[0]
        params = {k: v for k, v in first.params.items() if k not in _PER_HOST}
        params.update(host=ALL_CLIENTS, hosts_summed=len(members))
        expected = [m.params.get("outstanding_expected") for m in members]
        if all(isinstance(e, int | float) for e in expected):
            params["outstanding_expected"] = sum(expected)  # type: ignore[arg-type]
        total = Point(first.workload, first.config, first.mode, first.curve_pct, params,
                      first.job_id, host=ALL_CLIENTS)  # fmt: skip
        total.repetitions = min(m.repetitions for m in members)
        for d in DIRECTION_ORDER:
            parts = [m for m in members if m.value("storage.iops", d)]
            if len(parts) == len(members):
                _sum_direction(total, parts, d)
        totals.append(total)
    return totals


def _sum_direction(total: Point, parts: list[Point], d: str) -> None:
    """One direction's total figures (see :func:`host_totals`)."""

    def figure(metric: str, value: float) -> Figure:
        sample = parts[0].figures[(metric, d)].sample
        return Figure(replace(sample, value=value, stats=None, params=dict(total.params)), 1, None)

    iops = [p.figures[("storage.iops", d)].sample.value for p in parts]
    total.figures[("storage.iops", d)] = figure("storage.iops", sum(iops))
    if all(("storage.bandwidth", d) in p.figures for p in parts):
        bw = sum(p.figures[("storage.bandwidth", d)].sample.value for p in parts)
        total.figures[("storage.bandwidth", d)] = figure("storage.bandwidth", bw)
    if all(("storage.latency", d) in p.figures for p in parts) and sum(iops) > 0:
        lat = [p.figures[("storage.latency", d)].sample.value for p in parts]
        mean = sum(i * t for i, t in zip(iops, lat, strict=True)) / sum(iops)
        total.figures[("storage.latency", d)] = figure("storage.latency", mean)
