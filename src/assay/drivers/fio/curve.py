"""A response-time curve's arithmetic while it is measured: the rates of its points and what
each point's Little's law will be judged against.

Little's law and the knee themselves are derived figures, computed from the stored points by
``assay.analysis.derived.storage_points`` (the derive step), never here.
"""

from __future__ import annotations

from typing import Any

from assay.fio.job import FioJob
from assay.fio.workloads import effective_iodepth


def curve_targets(max_iops: float, pcts: list[int]) -> list[tuple[int, int]]:
    """(percent, total IOPS) of each curve point, in increasing order, at least 1 IOPS."""
    return [(p, max(1, round(max_iops * p / 100))) for p in sorted(set(pcts))]


def outstanding(job: FioJob, ioengine: str | None = None) -> int:
    """I/Os a job keeps in flight at most: iodepth x numjobs (iodepth 1 when synchronous)."""
    return effective_iodepth(ioengine or job.ioengine, job.iodepth) * job.numjobs


def queue_params(
    job: FioJob,
    *,
    rate_limited: bool,
    ioengine: str | None = None,
    expected: int | None = None,
) -> dict[str, Any]:
    """What Little's law is judged against, for the derive step
    (:meth:`assay.analysis.derived.storage_points.Point.littles_flag`): the I/Os the job keeps in
    flight at most (``expected``: the concurrency of several jobs or hosts together, else
    ``job``'s), whether the point was capped, and the engine."""
    engine = ioengine or job.ioengine
    if expected is None:
        expected = outstanding(job, engine)
    return {"outstanding_expected": expected, "rate_limited": rate_limited, "ioengine": engine}
