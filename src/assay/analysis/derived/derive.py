"""The derive step: figures computed from stored samples, once, for reports and comparisons.

Probes store what they measured and the plan-time facts it is judged against (a rate's
``rpeak`` params); :func:`derive` turns folded figures into the derived figures:

- **Rpeak**, one per precision (the dp/sp peak of the node), with its derivation and clock;
- **Rpeak fraction** of every DGEMM/SGEMM and HPL figure (:func:`rpeak_fraction`), flagged when
  above 1 (the peak, not the machine, is wrong: its clock source is named);
- **Hockney** α, β, n½ and the protocol switch of every MPI's latency curve, β also from its
  bandwidth curve (:mod:`assay.analysis.derived.hockney`);
- **Little's law** of every fio point (:mod:`assay.analysis.derived.storage_points`): the
  outstanding I/Os measured (IOPS × mean latency) against those configured, and its flag;
- the **knee** of every response-time curve
  (:func:`assay.analysis.derived.storage_points.curve_knees`), from the folded curve points. The fio
  driver only measures: it stores each point with the concurrency it is judged against, never
  a derived figure;
- STREAM **per domain** (:func:`assay.analysis.derived.domains.stream_domains`): each L3 domain's or
  NUMA node's kernels and the slow domains, flagged against the median of their peers;
- **shared memory, not a link** (:func:`assay.analysis.derived.shared_memory.shared_memory_series`):
  the two-node inter-node series whose latency is below what any network gives; they are left
  out of the Hockney fits (and of the report's link tables and plots).

Tables and plots read these; none computes a derived figure itself.

:meth:`Derived.figures` gives the derived figures as samples, so ``assay compare`` judges the
same numbers the report shows.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from assay.analysis.derived.domains import StreamDomains, stream_domains
from assay.analysis.derived.hockney import HockneyFit, fit_hockney, fit_hockney_bandwidth
from assay.analysis.derived.series import by_series_and_size
from assay.analysis.derived.shared_memory import SharedMemory, not_links, shared_memory_series
from assay.analysis.derived.storage_points import (
    CurveKey,
    CurveKnee,
    Point,
    curve_knees,
    points_of,
    storage_figures,
)
from assay.analysis.derived.whylow import (
    Kernel,
    Why,
    compute_why,
    kernel_of,
    memory_why,
    needed_clock,
    p2p_why,
    rate_name,
)
from assay.analysis.statistics.robust import InsufficientDataError
from assay.analysis.statistics.stats import Figure
from assay.model import Sample, System
from assay.system.peak import rpeak_flag
from assay.vocab import IMB_PINGPONG, P2P_METHOD

RATE_METRICS = ("compute.dgemm", "compute.sgemm", "compute.hpl")
# The precision of each rate, as Rpeak's params name it.
RATE_PRECISION = {"compute.dgemm": "dp", "compute.sgemm": "sp", "compute.hpl": "dp"}


def per_process(sample: Sample) -> bool:
    """HPCC's StarDGEMM and SingleDGEMM: one process's rate, judged against one core's peak
    (the hpcc probe stores that peak as ``rpeak``), never the node's."""
    return sample.metric == "compute.dgemm" and sample.params.get("variant") in ("star", "single")


def precision_of(text: object) -> str:
    """'d', 'D', 'dp', 'DP' → 'dp'; 's', 'sp' → 'sp' (probes spelled it both ways)."""
    t = str(text or "dp").lower()
    return "sp" if t.startswith("s") else "dp"


@dataclass(frozen=True)
class Rpeak:
    """The node's theoretical peak in one precision, and how it was derived."""

    precision: str  # "dp" or "sp"
    flops: float  # flop/s, the whole node
    derivation: str
    clock_kind: str | None
    probe: str


@dataclass(frozen=True)
class RpeakFraction:
    """A measured rate against the peak of the cores it used."""

    fraction: float | None  # None: no Rpeak known (``note`` says why)
    peak: float | None  # flop/s the rate is divided by
    scope: str | None = None  # "2 of 16 cores" when the rate used fewer than all
    note: str | None = None  # why there is no fraction
    flag: str | None = None  # set when fraction > 1: "Rpeak too low: clock source …"


def rpeak_fraction(sample: Sample) -> RpeakFraction:
    """``fraction = rate / (Rpeak per core × cores used)``.

    The cores used are ``min(threads, cores)`` for a DGEMM (a run on fewer threads than cores is
    compared with the peak of the cores it used: a fraction of the whole node's peak would only
    restate the thread count); HPL is compared with the node Rpeak it was planned against
    (``rpeak`` param). Runs stored before this step keep the fraction the probe stored
    (``rpeak_fraction`` / ``efficiency``).

    A fraction above 1 is physically impossible: the Rpeak is too low (a clock read below the
    one the cores ran at, a missing FMA unit in the table), so it is flagged with the clock
    source the Rpeak came from, never shown as a plain 106 %.
    """
    p = sample.params
    node, per_core, cores = p.get("rpeak"), p.get("rpeak_per_core"), p.get("rpeak_cores")
    scope = p.get("rpeak_scope")
    if isinstance(per_core, float) and isinstance(cores, int) and cores > 0:
        threads = p.get("threads")
        used = min(threads, cores) if isinstance(threads, int) and threads > 0 else cores
        peak: float | None = per_core * used
        scope = f"{used} of {cores} cores" if used < cores else None
    elif isinstance(node, float) and node > 0:
        peak = node
    else:
        peak = None
    if peak:
        fraction: float | None = sample.value / peak
    else:
        stored = p.get("rpeak_fraction") or p.get("efficiency")
        fraction = stored if isinstance(stored, float) else None
    if fraction is None:
        why = p.get("rpeak_note") or p.get("rpeak_derivation") or "no Rpeak known"
        return RpeakFraction(None, None, note=str(why))
    flag = None
    if fraction > 1.0:
        # One wording for every rate (assay.system.peak.rpeak_flag), which reads the clock
        # source from the derivation's "GHz (…)"; runs stored without one name the clock kind.
        how = str(p.get("rpeak_derivation") or p.get("derivation") or "")
        flag = rpeak_flag(sample.value, peak or sample.value / fraction, how)
        clock = p.get("rpeak_clock") or p.get("clock_kind")
        if flag and clock and "GHz (" not in how:
            flag = flag.replace("clock source not stated", f"clock source {clock}", 1)
        if flag and (needs := needed_clock(fraction, how)):
            flag += f"; {needs}"
    return RpeakFraction(fraction, peak, scope, flag=flag)


def _rpeaks(figures: list[Figure]) -> dict[str, Rpeak]:
    """One Rpeak per precision: from the rates' params, else from stored compute.rpeak samples
    (the hpl probe's, and DGEMM runs stored before this step)."""
    found: dict[str, Rpeak] = {}
    for f in figures:
        s, p = f.sample, f.sample.params
        if s.metric in RATE_METRICS and isinstance(p.get("rpeak"), float) and not per_process(s):
            precision = RATE_PRECISION[s.metric]
            found.setdefault(
                precision,
                Rpeak(
                    precision,
                    p["rpeak"],
                    str(p.get("rpeak_derivation") or ""),
                    p.get("rpeak_clock"),
                    s.probe,
                ),
            )
    for f in figures:
        s, p = f.sample, f.sample.params
        if s.metric == "compute.rpeak":
            precision = precision_of(p.get("precision"))
            how = p.get("derivation") or p.get("rpeak_derivation") or ""
            clock = p.get("clock_kind")
            found.setdefault(precision, Rpeak(precision, s.value, str(how), clock, s.probe))
    return found


@dataclass(frozen=True)
class HockneyRow:
    """One series' Hockney fits: from its latency curve and from its bandwidth curve."""

    series: str
    latency: HockneyFit | None
    bandwidth: HockneyFit | None


def p2p_method(figures: list[Figure]) -> list[Figure]:
    """Point-to-point figures of the OSU method (our probe, OSU, IMB), sizes known."""
    return [
        f
        for f in figures
        if f.sample.probe in P2P_METHOD
        and f.sample.metric.startswith("p2p.")
        and "size" in f.sample.params
    ]


def is_pingpong_bandwidth(sample: Sample) -> bool:
    """IMB PingPong's bandwidth: one message at a time, not a window in flight."""
    return sample.metric == "p2p.bandwidth" and sample.params.get("benchmark") == IMB_PINGPONG


def _hockney(figures: list[Figure]) -> list[HockneyRow]:
    """Per series: ``t(n) = α + n/β`` on the latency curve, β also from osu_bw's curve."""
    p2p = p2p_method(figures)
    lat = by_series_and_size(p2p, "p2p.latency")
    windowed = [f for f in p2p if not is_pingpong_bandwidth(f.sample)]
    bw = by_series_and_size(windowed, "p2p.bandwidth")
    rows = []
    for series in sorted(set(lat) | set(bw)):
        lfit = bfit = None
        try:
            sizes = sorted(lat.get(series, {}))
            lfit = fit_hockney(sizes, [lat[series][s].sample.value for s in sizes])
        except InsufficientDataError:
            pass
        try:
            sizes = sorted(bw.get(series, {}))
            bfit = fit_hockney_bandwidth(sizes, [bw[series][s].sample.value for s in sizes])
        except InsufficientDataError:
            pass
        rows.append(HockneyRow(series, lfit, bfit))
    return rows


@dataclass
class Derived:
    """Every derived figure of one run."""

    rpeaks: dict[str, Rpeak] = field(default_factory=dict)
    fractions: dict[int, RpeakFraction] = field(default_factory=dict)  # id(figure) → fraction
    hockney: list[HockneyRow] = field(default_factory=list)
    storage_points: list[Point] = field(default_factory=list)  # each with .littles()
    knees: dict[CurveKey, CurveKnee] = field(default_factory=dict)  # per response-time curve
    domains: StreamDomains | None = None  # STREAM per L3 domain / NUMA node, slow ones flagged
    # two-node series measured through shared memory, not a link (their figures: not_links)
    shared_memory: list[SharedMemory] = field(default_factory=list)
    _sources: dict[int, Figure] = field(default_factory=dict, repr=False)
    kernels: dict[int, Kernel] = field(default_factory=dict)  # id(figure) → its BLAS kernels
    why: dict[int, Why] = field(default_factory=dict)  # id(figure) → why it is far below peak

    def fraction_of(self, fig: Figure) -> RpeakFraction | None:
        return self.fractions.get(id(fig))

    def kernel_of(self, fig: Figure) -> Kernel | None:
        return self.kernels.get(id(fig))

    def why_of(self, fig: Figure) -> Why | None:
        return self.why.get(id(fig))

    def why_lines(self, figures: list[Figure]) -> list[str]:
        """The why-lines of these figures (a report table's), in their order."""
        return [w.text() for f in figures if (w := self.why.get(id(f)))]

    def figures(self) -> list[Figure]:
        """The derived figures as samples (units from :mod:`assay.units`), for comparisons."""
        out: list[Sample] = []
        for r in self.rpeaks.values():
            params = {"precision": r.precision, "derivation": r.derivation}
            out.append(Sample.make(r.probe, "compute.rpeak", r.flops, params))
        for key, frac in self.fractions.items():
            src = self._sources[key].sample
            if frac.fraction is None:
                continue
            params: dict[str, Any] = {
                k: v for k, v in src.params.items() if not k.startswith("rpeak")
            }
            params["of"] = src.metric
            out.append(Sample.make(src.probe, "compute.rpeak_fraction", frac.fraction, params))
        for row in self.hockney:
            fit = row.latency
            if fit is None:
                continue
            base = {"mpi": row.series, "source": "latency"}
            out.append(Sample.make("derive", "p2p.hockney.alpha", fit.alpha, dict(base)))
            if math.isfinite(fit.beta):
                out.append(Sample.make("derive", "p2p.hockney.beta", fit.beta, dict(base)))
        return [Figure(s, 1, None, (s.value,)) for s in out]


def is_node_triad(sample: Sample) -> bool:
    """STREAM's node-wide Triad (not a domain's): the figure held to the DRAM bandwidth."""
    p = sample.params
    return (
        sample.probe == "stream"
        and sample.metric == "memory.triad"
        and (p.get("scope", "node") == "node")
    )


def _why(
    figures: list[Figure], fractions: dict[int, RpeakFraction], system: System | None
) -> tuple[dict[int, Kernel], dict[int, Why]]:
    """The BLAS kernels of each rate, and why a figure is far below its peak
    (:mod:`assay.analysis.derived.whylow`)."""
    kernels: dict[int, Kernel] = {}
    why: dict[int, Why] = {}
    for f in figures:
        s = f.sample
        if s.metric in RATE_METRICS:
            kernel = kernel_of(s, system)
            if kernel:
                kernels[id(f)] = kernel
            frac = fractions.get(id(f))
            share = frac.fraction if frac else None
            if w := compute_why(s, rate_name(s), share, kernel, system):
                why[id(f)] = w
        elif is_node_triad(s) and (w := memory_why(f, system)):
            why[id(f)] = w
    for f, w in p2p_why(p2p_method(figures), system):
        why[id(f)] = w
    return kernels, why


def derive(figures: list[Figure], system: System | None = None) -> Derived:
    """Rpeak, Rpeak fractions, Hockney fits, fio points (with Little's law) and the knees of
    their curves, STREAM per domain, and the two-node series that are shared memory, from one
    run's folded figures; with the run's ``system``, the BLAS kernels and why figures are low."""
    fractions, sources = {}, {}
    for f in figures:
        if f.sample.metric in RATE_METRICS:
            fractions[id(f)] = rpeak_fraction(f.sample)
            sources[id(f)] = f
    storage = storage_figures(figures)
    points = points_of(storage)
    kernels, why = _why(figures, fractions, system)
    shared = shared_memory_series(figures)
    off = not_links(figures, shared)
    links = [f for f in figures if id(f) not in off] if off else figures
    return Derived(
        _rpeaks(figures), fractions, _hockney(links), points, curve_knees(points, storage),
        stream_domains(figures), shared, sources, kernels, why,
    )  # fmt: skip


def with_derived(figures: list[Figure]) -> list[Figure]:
    """The figures to compare: measured ones (stored Rpeak samples replaced by the derived
    ones, one per precision) and the derived ones."""
    measured = [f for f in figures if f.sample.metric != "compute.rpeak"]
    return measured + derive(figures).figures()
