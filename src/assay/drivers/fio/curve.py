"""A response-time curve's arithmetic: its rates, Little's law at each point, its knee.

The formulas are those of ``assay.analysis`` (Little's law check, knee finding); this module
only applies them to the figures of fio runs, and says in each point's params what they found.
"""

from __future__ import annotations

from typing import Any

from assay.drivers.fio.figures import PointFigures
from assay.fio.job import FioJob
from assay.fio.workloads import SYNC_ENGINES, effective_iodepth


def curve_targets(max_iops: float, pcts: list[int]) -> list[tuple[int, int]]:
    """(percent, total IOPS) of each curve point, in increasing order, at least 1 IOPS."""
    return [(p, max(1, round(max_iops * p / 100))) for p in sorted(set(pcts))]


def outstanding(job: FioJob, ioengine: str | None = None) -> int:
    """I/Os a job keeps in flight at most: iodepth x numjobs (iodepth 1 when synchronous)."""
    return effective_iodepth(ioengine or job.ioengine, job.iodepth) * job.numjobs


def littles_params(
    fig: PointFigures,
    job: FioJob,
    *,
    rate_limited: bool,
    ioengine: str | None = None,
    expected: int | None = None,
) -> dict[str, Any]:
    """Little's law for one point (``expected``: the concurrency of several jobs or hosts
    together, else ``job``'s). The flag is only raised on an uncontrolled run: a capped run
    keeps its queue partly empty on purpose."""
    engine = ioengine or job.ioengine
    if expected is None:
        expected = outstanding(job, engine)
    out: dict[str, Any] = {"outstanding_expected": expected}
    if not fig.latency_s or fig.iops <= 0:
        return out
    # Imported here, not at the top: numpy's import is a tenth of a second the driver would
    # otherwise spend before fio starts (bench/fio_overhead.py measures that overhead).
    from assay.analysis.queueing import littles_law_check

    check = littles_law_check(fig.iops, fig.latency_s, expected)
    out["outstanding_measured"] = round(check.measured_concurrency, 4)
    out["littles_ratio"] = round(check.ratio, 4)
    if rate_limited:
        return out
    if check.queue_not_full:
        why = "synchronous engine" if engine in SYNC_ENGINES else "CPU-bound client?"
        out["littles_flag"] = (
            f"queue not full: {check.measured_concurrency:.2f} of {expected} I/Os outstanding "
            f"on average (ratio {check.ratio:.2f} < {check.min_ratio:g}; {why})"
        )
    elif check.exceeds_configured:
        out["littles_flag"] = (
            f"more outstanding than configured: {check.measured_concurrency:.2f} > {expected} "
            f"(ratio {check.ratio:.2f}); the inputs disagree"
        )
    return out


def knee_params(points: list[tuple[int, PointFigures]], method: str) -> dict[str, Any]:
    """The knee of the curve (points in increasing offered load), said how it was found."""
    usable = [(p, f) for p, f in points if f.latency_s and f.latency_s > 0]
    if len(usable) < 3:
        return {"knee_note": f"no knee: {len(usable)} curve point(s), 3 needed"}
    from assay.analysis.knee import InsufficientDataError, find_knee  # numpy: see above

    try:
        knee = find_knee(
            [f.iops for _, f in usable],
            [f.latency_s for _, f in usable],
            method=method,  # type: ignore[arg-type]
        )
    except (InsufficientDataError, ValueError) as exc:
        return {"knee_note": f"no knee: {exc}"}
    if knee is None:
        return {
            "knee_note": "no knee: the mean latency did not rise enough or the curve did not "
            "bend beyond its noise (find_knee, " + method + ")"
        }
    return {
        "knee_iops": knee.iops,
        "knee_latency_s": knee.latency_s,
        "knee_curve_pct": usable[knee.index][0],
        "knee_method": knee.method + " on (achieved IOPS, mean total latency)",
        "knee_score": round(knee.score, 4),
    }
