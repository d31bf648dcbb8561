"""The links of ``assay check``: every all-pairs link graded, and a node whose links all fail.

The links come from ``analysis.allpairs.matrices`` (one matrix per metric and MPI: latency at
the smallest size, bandwidth at the largest), so a change of the all-pairs probe reaches this
module through that function only.

**Baseline** of a link: the reference set's figure for the metric, size and MPI (the median of
its points: an accepted all-pairs run stores one per round), else the median of this run's links.
**Noise**: the robust z-score over this run's links (the all-pairs report's rule).

**Links a failing node explains.** A node that fails on its own (its STREAM, DGEMM, HPL, its
inventory) slows every link it is part of; such links are graded as measured but say which node
explains them, and they are left out of the peers' median and of the z-score, so that one slow
node among four does not make the healthy links look fast or the slow link look normal.

**A node's links.** Each node also gets one verdict per matrix: the median of its links. It
FAILs only when every one of its links to nodes that do not fail on their own fails, and there
are at least two of them: a node-side fault (its NIC, its cable, its port) rather than one bad
link between two good nodes. Only this verdict, never a single link, drains a node: which end
of one slow link is at fault cannot be told from the link alone.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping

from assay.analysis.allpairs import PairMatrix, matrices
from assay.analysis.health import CheckRule, Verdict, goodness, grade, shown
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
    ``failing``: the nodes that fail on their own checks."""
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
            beyond, test, note = None, "", f"{', '.join(explained)} fails on its own checks"
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
    return out + _node_links(m, out, failing, base, against)


def _unit(metric: str) -> str:
    return "s" if metric.endswith("latency") else "B/s"


def _z(links: Mapping[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    if len(links) < 3:
        return {}
    if all(v > 0 for v in links.values()):
        return robust_z({k: math.log(v) for k, v in links.items()})  # type: ignore[return-value]
    return robust_z(links)  # type: ignore[return-value]


def _node_links(
    m: PairMatrix, links: list[Verdict], failing: set[str], base: float, against: str
) -> list[Verdict]:
    out = []
    for host in m.hosts:
        mine = [v for v in links if host in v.subject.split(DASH)]
        to_good = [v for v in mine if not (set(v.subject.split(DASH)) - {host}) & failing]
        bad = [v for v in to_good if v.grade == "FAIL"]
        fails = len(to_good) >= 2 and len(bad) == len(to_good)
        med = statistics.median(v.figure for v in mine if v.figure is not None)
        ratio = goodness(med, base, m.better)
        if fails:
            note = f"all {len(to_good)} links to healthy nodes fail"
        elif bad:
            note = "failing link(s): " + ", ".join(v.subject for v in bad)
        else:
            note = ""
        out.append(
            Verdict(
                subject=host, kind="node", check=f"{_check(m)} links", metric=m.metric,
                grade="FAIL" if fails else "PASS", figure=med, baseline=base,
                unit=_unit(m.metric), ratio=ratio, noise="exact" if fails else "—",
                test="", against=against, shown=shown(med, m.metric, _unit(m.metric)),
                expected=shown(base, m.metric, _unit(m.metric)), note=note,
                key=(m.metric, m.size, m.mpi, "links"), probe="p2p",
            )
        )  # fmt: skip
    return out
