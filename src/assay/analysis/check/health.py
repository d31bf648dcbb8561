"""Graded verdicts of ``assay check``: each node's figures against a baseline, PASS/WARN/FAIL.

**Against what.** A node's figure x of one check (a metric and the params that say what was
measured: STREAM triad, DGEMM, HPL with one MPI, fio's random reads, ...) is compared with b:

* a reference set (``assay references add --from RUN NAME``: the cluster's own accepted run,
  or a shipped set): the point with the same metric and identity params;
* without one, the median of the nodes of the same type in the same run (at least 3 of them:
  with 2, the median cannot say which one is slow).

**Ratio** r is goodness (``analysis.compare.verdict``): x/b for a rate, b/x for a time, so r < 1 is
worse whatever the metric. The margin shown is r − 1.

**Noise.** Is the difference more than the noise? Against a reference: the significance test
``assay compare`` uses (``verdict.significance``: Mann–Whitney U over repetitions, else Welch's t
over the tool's iterations, else unknown). Against peers: the robust z-score of
``analysis.statistics.outliers`` over the nodes of the type (log scale, beyond ``threshold``, 3.5 by
default, on the bad side), from 4 nodes up: with 3 the median absolute deviation is just the
smaller of two distances, and a z-score over it says nothing (the noise is then "unknown").

**Grade.** With the limits of the metric (``[check]`` in the config, below):

    r < fail_below  and the difference is not noise    FAIL (re-measured before it stands)
    r < fail_below  but the noise explains it           WARN
    r < warn_below  and the difference is not noise     WARN
    otherwise                                           PASS

"Unknown" noise (a reference without statistics) counts as not noise, as ``compare`` counts it.

**Limits**: ``analysis.check.checklimits`` (defaults, and the ``[check]`` table of the config).
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from assay.analysis.check.checklimits import CheckRule, Limits
from assay.analysis.check.nodetype import FactCheck
from assay.analysis.compare.verdict import Measured, identity, sig_text, significance
from assay.analysis.statistics.outliers import robust_z
from assay.analysis.statistics.stats import Figure
from assay.references.model import ReferenceSet, RefPoint
from assay.units import format_value, metric_info

Grade = Literal["PASS", "WARN", "FAIL"]
WORST_FIRST: tuple[Grade, ...] = ("FAIL", "WARN", "PASS")
EXIT_CODE = {"PASS": 0, "WARN": 1, "FAIL": 3}
MIN_Z_VALUES = 4  # a robust z-score over fewer values is not a measure of the noise

# The figures a check judges, when its suite does not list them: the headline of each family.
CHECK_METRICS = (
    "memory.triad", "compute.dgemm", "compute.sgemm", "compute.hpl", "storage.iops",
    "storage.bandwidth", "gpu.flops", "gpu.bandwidth",
)  # fmt: skip
# Params that say where or how wide a figure ran, not what it measured: a node's figure and its
# baseline's still match when the baseline came from a run on another number of nodes. HPL's N
# too: with a time budget each node's pilot solve picks it at run time (a slower node gets a
# smaller N, and a lower Rmax from both), so Rmax is compared whatever the N. ``node``: which
# node a per-node pass's figure came from (one step over every node names each node's own).
NOT_IDENTITY = frozenset({"nodes", "ppn", "host", "node", "N"})
# Params that name a check beside its metric ("storage.iops randread-8k").
NAME_PARAMS = ("workload", "mpi")


@dataclass
class Verdict:
    """One check of one node (or link): the figure, the baseline, the margin, the noise."""

    subject: str  # a node, or a link "a–b"
    kind: Literal["node", "link"]
    check: str  # what was judged: "memory.triad", "storage.iops randread-8k", "inventory.memory"
    metric: str
    grade: Grade
    figure: float | None  # canonical SI (None: a word, or nothing measured)
    baseline: float | None
    unit: str  # canonical unit of figure and baseline ("" for words)
    ratio: float | None  # goodness: < 1 worse
    noise: str  # "beyond the noise", "within the noise", "unknown", "exact"
    test: str  # the test behind ``noise``: "Welch t p=0.003", "robust z -8.1"
    against: str  # "reference l2-base", "median of 4 nodes", "expected (reference l2-base)"
    shown: str = ""  # the figure as displayed, unit included
    expected: str = ""  # the baseline as displayed
    retest: str = ""  # "confirmed on retest: 3.10 GB/s", "not confirmed: ..."
    note: str = ""
    key: tuple = ()  # (metric, identity) to find the same check in a retest
    probe: str = ""

    @property
    def margin(self) -> float | None:
        return None if self.ratio is None or math.isnan(self.ratio) else self.ratio - 1

    def to_dict(self) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k != "key"}
        out["margin"] = self.margin
        if self.ratio is not None and math.isnan(self.ratio):
            out["ratio"] = None
        return out


def shown(value: float | None, metric: str, unit: str) -> str:
    """A value in its metric's display unit: "20.51 GB/s"."""
    if value is None:
        return "—"
    info = metric_info(metric)
    if unit == info.unit:
        if info.display == "1":
            return f"{value:g}"
        return f"{format_value(value, info.display)} {info.display}"
    return f"{value:g} {unit}".strip()


def goodness(ours: float, ref: float, better: str) -> float:
    """x/b for a rate, b/x for a time; a zero rate is 0, an impossible pair NaN."""
    if ref > 0 and ours == 0 and better == "higher":
        return 0.0
    if ours <= 0 or ref <= 0:
        return math.nan
    return ours / ref if better == "higher" else ref / ours


def grade(ratio: float | None, limits: Limits, beyond: bool | None) -> Grade:
    """The grading rule of the module docstring; ``beyond`` None: the noise is unknown."""
    if ratio is None or math.isnan(ratio):
        return "FAIL"
    noise = beyond is False
    if ratio < limits.fail_below:
        return "WARN" if noise else "FAIL"
    if ratio < limits.warn_below and not noise:
        return "WARN"
    return "PASS"


def check_key(metric: str, params: Mapping[str, Any]) -> tuple:
    """What makes two figures the same check: the metric and its identity params."""
    return (metric, tuple((k, v) for k, v in identity(params) if k not in NOT_IDENTITY))


def check_name(metric: str, params: Mapping[str, Any]) -> str:
    extra = [str(params[k]) for k in NAME_PARAMS if k in params]
    scope = params.get("scope")
    if scope not in (None, "node"):
        extra.insert(0, f"{scope} {params.get('domain', '')}".strip())
    return " ".join([metric, *extra])


def _measured(fig: Figure) -> Measured:
    s = fig.sample
    values = fig.values or (s.value,)
    stats = s.stats if len(values) == 1 else None
    return Measured(s.probe, s.metric, dict(s.params), float(s.value), values, stats, s.unit,
                    s.better, s.run_id)  # fmt: skip


def node_figures(
    per_host: Iterable[Figure], figures: Iterable[Figure], local_host: str
) -> dict[str, list[Figure]]:
    """Each node's figures: a cluster run's per-node figures (``Folded.by_host``) by their host,
    or, for a run on one node, its figures under ``local_host``."""
    out: dict[str, list[Figure]] = defaultdict(list)
    for f in per_host:
        hosts = f.sample.params.get("hosts")
        per_node = f.sample.params.get("placement") == "per-node"
        if per_node and isinstance(hosts, list) and len(hosts) == 1:
            out[str(hosts[0])].append(f)
    if out:
        return dict(out)
    kept = [f for f in figures if f.sample.params.get("placement") not in ("all-pairs",)]
    return {local_host: kept} if kept else {}


def _verdict(host: str, fig: Figure, base: float, against: str, test_text: str,
             beyond: bool | None, rule: CheckRule) -> Verdict:  # fmt: skip
    s = fig.sample
    ratio = goodness(s.value, base, s.better)
    noise = "unknown" if beyond is None else ("beyond the noise" if beyond else "within the noise")
    return Verdict(
        subject=host, kind="node", check=check_name(s.metric, s.params), metric=s.metric,
        grade=grade(ratio, rule.limits(s.metric), beyond), figure=s.value, baseline=base,
        unit=s.unit, ratio=ratio, noise=noise, test=test_text, against=against,
        shown=shown(s.value, s.metric, s.unit), expected=shown(base, s.metric, s.unit),
        key=check_key(s.metric, s.params), probe=s.probe,
    )  # fmt: skip


def _judged(figs: Iterable[Figure], metrics: Iterable[str]) -> list[Figure]:
    wanted = set(metrics)
    return [f for f in figs if f.sample.metric in wanted and f.sample.unit == metric_info(
        f.sample.metric).unit]  # fmt: skip


def reference_points(ref: ReferenceSet) -> dict[tuple, list[RefPoint]]:
    """A set's points by check key (a run's several rounds of one figure share a key)."""
    out: dict[tuple, list[RefPoint]] = defaultdict(list)
    for p in ref.points:
        out[check_key(p.metric, p.params)].append(p)
    return out


def judge_reference(
    nodes: Mapping[str, list[Figure]], ref: ReferenceSet, rule: CheckRule, metrics: Iterable[str]
) -> tuple[list[Verdict], list[str]]:
    """Every node's figures against the set's points; and the checks the set has no point for
    (a missing baseline metric: the caller refuses the check, naming them)."""
    points = reference_points(ref)
    verdicts, missing = [], set()
    for host, figs in sorted(nodes.items()):
        for fig in _judged(figs, metrics):
            s = fig.sample
            key = check_key(s.metric, s.params)
            match = points.get(key)
            if not match:
                missing.add(f"{check_name(s.metric, s.params)} {dict(key[1])}")
                continue
            base = statistics.median(p.value for p in match)
            test = significance(None, _measured(fig), ref_stats=match[0].stats)
            text = "" if test is None else f"{test.method} p={test.p:.2g}"
            beyond = None if test is None else sig_text(test) == "significant"
            verdicts.append(_verdict(host, fig, base, f"reference {ref.name}", text, beyond, rule))
    return verdicts, sorted(missing)


def judge_peers(
    nodes: Mapping[str, list[Figure]], rule: CheckRule, metrics: Iterable[str]
) -> list[Verdict]:
    """Every node's figures against the median of the nodes given (one type), with the robust
    z-score over them as the noise. Checks fewer than 3 nodes measured are not judged."""
    by_key: dict[tuple, dict[str, Figure]] = defaultdict(dict)
    for host, figs in nodes.items():
        for fig in _judged(figs, metrics):
            by_key[check_key(fig.sample.metric, fig.sample.params)][host] = fig
    verdicts = []
    for _, figs in sorted(by_key.items(), key=lambda kv: str(kv[0])):
        if len(figs) < 3:
            continue
        values = {h: f.sample.value for h, f in figs.items()}
        med = statistics.median(values.values())
        positive = all(v > 0 for v in values.values())
        z = robust_z({h: math.log(v) for h, v in values.items()} if positive else values)
        for host, fig in sorted(figs.items()):
            sign = -1.0 if fig.sample.better == "higher" else 1.0
            beyond = sign * z[host] > rule.threshold if len(values) >= MIN_Z_VALUES else None
            against = f"median of {len(values)} nodes"
            text = f"robust z {z[host]:+.1f}" if beyond is not None else "too few nodes for a z"
            verdicts.append(_verdict(host, fig, med, against, text, beyond, rule))
    return verdicts


def fact_verdicts(host: str, checks: Iterable[FactCheck], against: str) -> list[Verdict]:
    """Inventory facts as verdicts: exact, no noise."""
    out = []
    for c in checks:
        numbers = isinstance(c.found, int | float) and isinstance(c.expected, int | float)
        ratio = c.found / c.expected if numbers and c.expected else None  # type: ignore[operator]
        out.append(
            Verdict(
                subject=host, kind="node", check=c.check, metric=c.metric, grade=c.grade,  # type: ignore[arg-type]
                figure=float(c.found) if numbers else None,  # type: ignore[arg-type]
                baseline=float(c.expected) if numbers else None,  # type: ignore[arg-type]
                unit=c.unit, ratio=ratio, noise="exact", test="", against=against,
                shown=shown(c.found, c.metric, c.unit) if numbers else str(c.found or "—"),  # type: ignore[arg-type]
                expected=(shown(c.expected, c.metric, c.unit) if numbers  # type: ignore[arg-type]
                          else str(c.expected or "—")),
                note=c.note, key=(c.check,), probe="inventory",
            )
        )  # fmt: skip
    return out


def failed_job_verdict(host: str, probe: str, job_id: str, status: str, reason: str) -> Verdict:
    """A node whose job of a check did not finish: nothing to judge, so it fails."""
    first = reason.splitlines()[0] if reason else ""
    return Verdict(
        subject=host, kind="node", check=f"{probe} job", metric=probe, grade="FAIL",
        figure=None, baseline=None, unit="", ratio=None, noise="exact", test="",
        against="the job must finish", shown=status, expected="ok",
        note=f"{job_id}: {first}"[:300], key=(f"{probe} job",), probe=probe,
    )  # fmt: skip


def with_retest(first: list[Verdict], again: list[Verdict], where: str) -> list[Verdict]:
    """The first verdicts with each FAIL re-judged by its retest (same subject and check): a
    FAIL that fails again stands ("confirmed on retest"); one that does not becomes a WARN
    ("not confirmed"); one the retest did not measure stands, saying so."""
    by = {(v.subject, v.key): v for v in again}
    out = []
    for v in first:
        if v.grade != "FAIL" or v.retest:  # not failing, or retested already (all-pairs)
            out.append(v)
            continue
        r = by.get((v.subject, v.key))
        if r is None:
            out.append(replace(v, retest=f"not re-measured ({where})"))
        elif r.grade == "FAIL":
            out.append(replace(v, retest=f"confirmed on retest: {r.shown} ({where})"))
        else:
            out.append(
                replace(v, grade="WARN", retest=f"not confirmed: {r.shown} on retest, {r.grade} "
                        f"({where})")
            )  # fmt: skip
    return out


def worst_first(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """Failures first, then warnings; within a grade the furthest below its baseline first."""

    def key(v: Verdict) -> tuple:
        r = v.ratio if v.ratio is not None and not math.isnan(v.ratio) else -1.0
        return (WORST_FIRST.index(v.grade), r, v.subject, v.check)

    return sorted(verdicts, key=key)


def worst(verdicts: Iterable[Verdict]) -> Grade:
    grades = {v.grade for v in verdicts}
    return next((g for g in WORST_FIRST if g in grades), "PASS")


def exit_code(verdicts: Iterable[Verdict]) -> int:
    """0 all pass, 1 a warning, 3 a failure."""
    return EXIT_CODE[worst(verdicts)]


def node_grades(verdicts: Iterable[Verdict]) -> dict[str, Grade]:
    """Each node's worst grade over its own checks (links judged apart)."""
    out: dict[str, list[Verdict]] = defaultdict(list)
    for v in verdicts:
        if v.kind == "node":
            out[v.subject].append(v)
    return {n: worst(vs) for n, vs in out.items()}


def drain_reason(verdicts: Iterable[Verdict], run_id: str) -> str:
    """What Slurm shows for a drained node: ``assay: <check> <figure> vs <baseline> (run <id>)``
    for its worst failing check (furthest below its baseline), and how many more failed."""
    failed = worst_first(v for v in verdicts if v.grade == "FAIL" and v.kind == "node")
    v = failed[0]
    more = f", {len(failed) - 1} more" if len(failed) > 1 else ""
    return f"assay: {v.check} {v.shown} vs {v.expected} (run {run_id}{more})"
