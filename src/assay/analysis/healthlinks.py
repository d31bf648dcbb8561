"""The links of ``assay check``: every all-pairs link graded, and a node whose links all fail.

The links come from ``analysis.allpairs.matrices`` (one matrix per metric and MPI: latency at
the smallest size, bandwidth at the largest), so a change of the all-pairs probe reaches this
module through that function only.

**Baseline** of a link: the reference set's figure for the metric, size and MPI (the median of
its points: an accepted all-pairs run stores one per round), else the median of this run's links.
**Noise**: the robust z-score over this run's links (the all-pairs report's rule), from 4 links
up (``health.MIN_Z_VALUES``); over fewer it is "unknown", and the limits alone decide.

**Links a degraded node explains.** A node that does not pass on its own (its STREAM, DGEMM,
HPL, its inventory: a WARN or a FAIL) slows every link it is part of: a node whose CPU is held
back answers late. Such links are graded as measured but say which node explains them, and
they are left out of the peers' median and of the z-score, so that one slow node among four
does not widen the spread the slow link is measured against, nor move the median.

**A node's links.** Each node also gets one verdict per matrix: the median of its links,
against the baseline (the reference's figure, else the median of the nodes' medians), its noise
the robust z-score over the nodes' medians (as the all-pairs report names a node). A node whose
every link is slow stands out there even when its links are too many of all the links to be
outliers one by one, while one slow link between two good nodes moves neither end's median.
With fewer than 4 nodes there is no z-score; then a node FAILs only when every one of its links
to nodes that pass on their own fails, and there are at least two of them. Only this verdict,
never a single link, drains a node: which end of one slow link is at fault cannot be told from
the link alone.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping

from assay.analysis.allpairs import PairMatrix, matrices
from assay.analysis.checklimits import CheckRule
from assay.analysis.health import MIN_Z_VALUES, Verdict, goodness, grade, shown
from assay.analysis.outliers import OutlierRule, robust_z
from assay.analysis.stats import Figure
from assay.references.model import ReferenceSet

DASH = "–"


def link_name(a: str, b: str) -> str:
    return f"{a}{DASH}{b}"


def mpi_names(figures: Iterable[Figure]) -> dict[str, str]:
    """The matrix's MPI label -> the MPI's name (what a reference point's ``mpi`` holds)."""
    out = {}
    for f in figures:
        p = f.sample.params
        if p.get("placement") == "all-pairs" and p.get("mpi"):
            out[str(p.get("mpi_label") or p.get("mpi"))] = str(p["mpi"])
    return out


def _reference_value(ref: ReferenceSet | None, m: PairMatrix, mpi: str) -> float | None:
    if ref is None:
        return None
    values = [
        p.value
        for p in ref.points
        if p.metric == m.metric
        and str(p.params.get("size")) == str(m.size)
        and str(p.params.get("mpi", mpi)) == mpi
    ]
    return statistics.median(values) if values else None


def _check(m: PairMatrix) -> str:
    return f"{m.metric} {m.size} B {m.mpi}"


def link_verdicts(
    by_host: list[Figure],
    failing: set[str],
    rule: CheckRule,
    outlier_rule: OutlierRule | None = None,
    ref: ReferenceSet | None = None,
) -> list[Verdict]:
    """Every link of every all-pairs matrix, and each node's links (see the module docstring).
    ``failing``: the nodes that do not pass their own checks (WARN or FAIL)."""
    names = mpi_names(by_host)
    out: list[Verdict] = []
    for m in matrices(by_host, outlier_rule or OutlierRule()):
        out += matrix_verdicts(m, failing, rule, ref, names.get(m.mpi, m.mpi))
    return out


def matrix_verdicts(
    m: PairMatrix, failing: set[str], rule: CheckRule, ref: ReferenceSet | None, mpi: str
) -> list[Verdict]:
    clean = {k: v for k, v in m.links.items() if not (set(k) & failing)}
    base = _reference_value(ref, m, mpi)
    against = f"reference {ref.name}" if base is not None and ref is not None else ""
    if base is None:
        if not clean:
            return []
        base = statistics.median(clean.values())
        against = f"median of {len(clean)} links"
    z = _z(clean)
    limits = rule.limits(m.metric)
    sign = -1.0 if m.better == "higher" else 1.0
    check = _check(m)
    out = []
    for (a, b), value in sorted(m.links.items()):
        ratio = goodness(value, base, m.better)
        explained = sorted(set((a, b)) & failing)
        if explained:
            beyond, test, note = None, "", f"{', '.join(explained)} does not pass its own checks"
        elif (a, b) in z:
            beyond, test, note = sign * z[(a, b)] > rule.threshold, f"robust z {z[(a, b)]:+.1f}", ""
        else:
            beyond, test, note = None, "", "too few links for a z-score"
        noise = (
            "unknown" if beyond is None else ("beyond the noise" if beyond else "within the noise")
        )
        out.append(
            Verdict(
                subject=link_name(a, b), kind="link", check=check, metric=m.metric,
                grade=grade(ratio, limits, beyond), figure=value, baseline=base,
                unit=_unit(m.metric), ratio=ratio, noise=noise, test=test, against=against,
                shown=shown(value, m.metric, _unit(m.metric)),
                expected=shown(base, m.metric, _unit(m.metric)), note=note,
                key=(m.metric, m.size, m.mpi), probe="p2p",
            )
        )  # fmt: skip
    return out + _node_links(m, out, failing, base, against, rule)


def _unit(metric: str) -> str:
    return "s" if metric.endswith("latency") else "B/s"


def _z(links: Mapping[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    if len(links) < MIN_Z_VALUES:
        return {}
    if all(v > 0 for v in links.values()):
        return robust_z({k: math.log(v) for k, v in links.items()})  # type: ignore[return-value]
    return robust_z(links)  # type: ignore[return-value]


def _node_links(
    m: PairMatrix, links: list[Verdict], failing: set[str], base: float, against: str,
    rule: CheckRule,
) -> list[Verdict]:  # fmt: skip
    mine = {h: [v for v in links if h in v.subject.split(DASH)] for h in m.hosts}
    medians = {h: statistics.median(v.figure for v in vs if v.figure is not None)
               for h, vs in mine.items() if vs}  # fmt: skip
    if not against.startswith("reference"):
        good = [v for h, v in medians.items() if h not in failing] or list(medians.values())
        base, against = statistics.median(good), f"median of {len(good)} nodes' median links"
    z = _z(medians)  # type: ignore[arg-type]
    sign = -1.0 if m.better == "higher" else 1.0
    out = []
    for host, med in sorted(medians.items()):
        to_good = [v for v in mine[host] if not (set(v.subject.split(DASH)) - {host}) & failing]
        bad = [v for v in to_good if v.grade == "FAIL"]
        ratio = goodness(med, base, m.better)
        if host in z:
            beyond = sign * z[host] > rule.threshold  # type: ignore[index]
            graded = grade(ratio, rule.limits(m.metric), beyond)
            fails, test = graded == "FAIL", f"robust z {z[host]:+.1f}"  # type: ignore[index]
            noise = "beyond the noise" if beyond else "within the noise"
        else:
            fails = len(to_good) >= 2 and len(bad) == len(to_good)
            test, noise = "", "unknown"
        if fails and not z:
            note = f"all {len(to_good)} links to nodes that pass fail"
        elif bad:
            note = "failing link(s): " + ", ".join(v.subject for v in bad)
        else:
            note = ""
        out.append(
            Verdict(
                subject=host, kind="node", check=f"{_check(m)} links", metric=m.metric,
                grade="FAIL" if fails else "PASS", figure=med, baseline=base,
                unit=_unit(m.metric), ratio=ratio, noise=noise, test=test, against=against,
                shown=shown(med, m.metric, _unit(m.metric)),
                expected=shown(base, m.metric, _unit(m.metric)), note=note,
                key=(m.metric, m.size, m.mpi, "links"), probe="p2p",
            )
        )  # fmt: skip
    return out
