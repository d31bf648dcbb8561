"""The links of ``assay check``: every all-pairs link graded, and a node whose links all fail.

The links are the all-pairs probe's matrices as the report analyses them
(``assay.analysis.matrix.allpairs.analyse``, read from the probe's files by
``assay.figures.allpairs.file_matrices``): one per metric and MPI, latency at the probe's small
size and bandwidth at its large one, links through shared memory already left out. This module
grades them; it does not find or retest outliers itself.

**Baseline** of a link: the reference set's figure for the metric, size and MPI (its
whole-matrix point: the median link of the accepted run), else the median of this run's links.
**Noise**: the robust z-score (``analysis.statistics.outliers``) of the link against the run's
links,
from 4 links up (``health.MIN_Z_VALUES``); over fewer it is "unknown", and the limits alone
decide.

**Links a degraded node explains.** A node that does not pass on its own (its STREAM, DGEMM,
HPL, its inventory: a WARN or a FAIL) slows every link it is part of: a node whose CPU is held
back answers late. Such links are graded as measured but say which node explains them, and
they are left out of the centre the others are scored against, so that one slow node among
four does not widen the spread the slow link is measured against, nor move the median.

**A node's links.** Each node also gets one verdict per matrix: its median link (the matrix's
row pass, ``PairMatrix.node_medians``), against the baseline (the reference's figure, else the
median of the passing nodes' medians), its noise the robust z-score over the nodes' medians. A
node whose every link is slow stands out there even when its links are too many of all the
links to be outliers one by one, while one slow link between two good nodes moves neither end's
median. With fewer than 4 nodes there is no z-score; then a node FAILs only when every one of
its links to nodes that pass on their own fails, and there are at least two of them. Only this
verdict, never a single link, drains a node: which end of one slow link is at fault cannot be
told from the link alone.

**Retest.** The all-pairs job retests what the outlier rule flags inside its own allocation
(``assay.run.followup``: each flagged link, and links of each flagged node, 3 more times) and
the analysis says what the retests confirmed (``assay.analysis.matrix.confirm``). A FAIL link or
node that the retests confirmed stands ("confirmed 3 of 3 on retest"); one they did not reproduce
becomes a WARN; one they never reached stays a FAIL without a retest, for the check's own
retest (a second allocation) to re-measure.

Past ``allpairs.FULL`` nodes the analysis keeps no link array: the links graded are the worst
it lists (``PairMatrix.worst``, flagged or not), scored against the centre of every link.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import replace

import numpy as np

from assay.analysis.check.checklimits import CheckRule
from assay.analysis.check.health import MIN_Z_VALUES, Verdict, goodness, grade, shown
from assay.analysis.matrix.allpairs import PairMatrix
from assay.analysis.matrix.confirm import Confirmation
from assay.analysis.statistics.outliers import Centre, robust_centre, z_scores
from assay.condensed import link_index, link_nodes, row_medians, rows_of
from assay.references.model import ReferenceSet

DASH = "–"
PROBE = "allpairs"


def link_name(a: str, b: str) -> str:
    return f"{a}{DASH}{b}"


def _reference_value(ref: ReferenceSet | None, m: PairMatrix) -> float | None:
    """The set's whole-matrix figure for this matrix's metric, size and MPI."""
    if ref is None:
        return None
    values = [
        p.value
        for p in ref.points
        if p.metric == m.metric
        and p.params.get("summary") == "matrix"
        and str(p.params.get("size")) == str(m.size)
        and m.mpi in (p.params.get("mpi_label"), p.params.get("mpi"))
    ]
    return statistics.median(values) if values else None


def _check(m: PairMatrix) -> str:
    return f"{m.metric} {m.size} B {m.mpi}"


def _unit(metric: str) -> str:
    return "s" if metric.endswith("latency") else "B/s"


def _links(m: PairMatrix) -> tuple[list[tuple[str, str]], np.ndarray]:
    """The links graded and their figures: every measured one up to ``FULL`` nodes, else the
    worst the analysis lists."""
    if m.values is None:
        pairs = [tuple(o.key) for o in m.worst]
        return pairs, np.array([o.value for o in m.worst], float)  # type: ignore[misc]
    k = np.flatnonzero(~np.isnan(m.values))
    i, j = link_nodes(m.n, k)
    pairs = [(m.hosts[a], m.hosts[b]) for a, b in zip(i.tolist(), j.tolist(), strict=True)]
    return pairs, m.values[k].astype(float)


def _noise(
    values: np.ndarray, c: Centre, better: str, threshold: float
) -> tuple[list[bool | None], list[float]]:
    """Each value's robust z against ``c`` and whether it is beyond the noise on the bad side
    (None: too few values for a z-score)."""
    z = z_scores(values, c).tolist()
    if c.n < MIN_Z_VALUES:
        return [None] * values.size, z
    sign = -1.0 if better == "higher" else 1.0
    return [bool(sign * zk > threshold) for zk in z], z


def _confirmed(v: Verdict, conf: Confirmation | None) -> Verdict:
    """A FAIL with what the all-pairs job's own retests said of it (see the module)."""
    if v.grade != "FAIL" or conf is None or conf.status == "not retested":
        return v
    said = f"{conf.words()} (retest rounds in the allocation)"
    if conf.status == "confirmed":
        return replace(v, retest=said)
    return replace(v, grade="WARN", retest=f"not confirmed: {said}")


def link_verdicts(
    matrices: Iterable[PairMatrix],
    failing: set[str],
    rule: CheckRule,
    ref: ReferenceSet | None = None,
) -> list[Verdict]:
    """Every link of every all-pairs matrix, and each node's links (see the module docstring).
    ``failing``: the nodes that do not pass their own checks (WARN or FAIL)."""
    out: list[Verdict] = []
    for m in matrices:
        out += matrix_verdicts(m, failing, rule, ref)
    return out


def matrix_verdicts(
    m: PairMatrix, failing: set[str], rule: CheckRule, ref: ReferenceSet | None
) -> list[Verdict]:
    pairs, values = _links(m)
    if not pairs:
        return []
    clean = np.array([not (set(p) & failing) for p in pairs], bool)
    c = robust_centre(values[clean]) if clean.any() and m.values is not None else m.centre
    base = _reference_value(ref, m)
    against = f"reference {ref.name}" if base is not None and ref is not None else ""
    if base is None:
        base, against = c.median, f"median of {c.n} links"
    beyond, zs = _noise(values, c, m.better, rule.threshold)
    limits, unit, check = rule.limits(m.metric), _unit(m.metric), _check(m)
    out = []
    for (a, b), value, noisy, z in zip(pairs, values.tolist(), beyond, zs, strict=True):
        ratio = goodness(value, base, m.better)
        explained = sorted({a, b} & failing)
        if explained:
            noisy, test, note = None, "", f"{', '.join(explained)} does not pass its own checks"
        elif noisy is None:
            test, note = "", "too few links for a z-score"
        else:
            test, note = f"robust z {z:+.1f}", ""
        noise = "unknown" if noisy is None else "beyond the noise" if noisy else "within the noise"
        v = Verdict(
            subject=link_name(a, b), kind="link", check=check, metric=m.metric,
            grade=grade(ratio, limits, noisy), figure=value, baseline=base, unit=unit,
            ratio=ratio, noise=noise, test=test, against=against,
            shown=shown(value, m.metric, unit), expected=shown(base, m.metric, unit), note=note,
            key=(m.metric, m.size, m.mpi), probe=PROBE,
        )  # fmt: skip
        out.append(_confirmed(v, m.confirmations.get((a, b))))
    return out + _node_links(m, out, failing, base, against, rule)


def _node_links(
    m: PairMatrix, links: list[Verdict], failing: set[str], base: float, against: str,
    rule: CheckRule,
) -> list[Verdict]:  # fmt: skip
    medians = {
        h: float(v) for h, v in zip(m.hosts, m.node_medians.tolist(), strict=False) if v == v
    }
    if not medians:
        return []
    if not against.startswith("reference"):
        good = [v for h, v in medians.items() if h not in failing] or list(medians.values())
        base, against = statistics.median(good), f"median of {len(good)} nodes' median links"
    hosts = list(medians)
    values = np.array([medians[h] for h in hosts], float)
    noisy, zs = _noise(values, robust_centre(values), m.better, rule.threshold)
    beyond, z = dict(zip(hosts, noisy, strict=True)), dict(zip(hosts, zs, strict=True))
    mine = {h: [v for v in links if h in v.subject.split(DASH)] for h in hosts}
    unit, out = _unit(m.metric), []
    for host in sorted(hosts):
        med = medians[host]
        to_good = [v for v in mine[host] if not (set(v.subject.split(DASH)) - {host}) & failing]
        bad = [v for v in to_good if v.grade == "FAIL"]
        ratio = goodness(med, base, m.better)
        if beyond[host] is not None:
            fails = grade(ratio, rule.limits(m.metric), beyond[host]) == "FAIL"
            test = f"robust z {z[host]:+.1f}"
            noise = "beyond the noise" if beyond[host] else "within the noise"
        else:
            fails = len(to_good) >= 2 and len(bad) == len(to_good)
            test, noise = "", "unknown"
        if fails and beyond[host] is None:
            note = f"all {len(to_good)} links to nodes that pass fail"
        elif bad:
            note = "failing link(s): " + ", ".join(v.subject for v in bad)
        else:
            note = ""
        v = Verdict(
            subject=host, kind="node", check=f"{_check(m)} links", metric=m.metric,
            grade="FAIL" if fails else "PASS", figure=med, baseline=base, unit=unit,
            ratio=ratio, noise=noise, test=test, against=against,
            shown=shown(med, m.metric, unit), expected=shown(base, m.metric, unit), note=note,
            key=(m.metric, m.size, m.mpi, "links"), probe=PROBE,
        )  # fmt: skip
        out.append(_confirmed(v, m.confirmations.get(host)))
    return out


def merged_matrix(
    first: PairMatrix, again: Iterable[PairMatrix], links: Iterable[tuple[str, str]]
) -> PairMatrix:
    """``first`` with the retested ``links`` taking the figures the retest's matrix of the same
    metric, size and MPI measured (its nodes a subset of the first's, matched by name)."""
    same = [m for m in again if (m.metric, m.size, m.mpi) == (first.metric, first.size, first.mpi)]
    if not same:
        return first
    new = {(a, b): v for a, b in links if (v := same[0].value(a, b)) is not None}
    if not new:
        return first
    if first.values is None:
        worst = [replace(o, value=new.get(tuple(o.key), o.value)) for o in first.worst]  # type: ignore[arg-type]
        return replace(first, worst=worst)
    values = first.values.copy()
    index = {h: i for i, h in enumerate(first.hosts)}
    for (a, b), v in new.items():
        i, j = sorted((index[a], index[b]))
        values[link_index(first.n, i, j)] = v
    medians, counts = row_medians(rows_of(values, first.n, np.arange(first.n)))
    return replace(first, values=values, node_medians=medians, node_counts=counts)
