r"""Little's law for storage runs: L = λ·W, and the threads a target IOPS needs.

In steady state the mean number of I/Os in the system equals the arrival rate times the mean time
each spends there, :math:`L = \lambda W` (Little 1961), whatever the distributions. With a closed
load generator (fio, Vdbench, each thread re-issuing on completion) :math:`\lambda` is the measured
IOPS and :math:`W` the mean latency, so :math:`\lambda W` is the concurrency the storage actually
saw; comparing it to the configured one (threads × iodepth × hosts) tells whether the clients kept
the queue full. The NetApp knowledge base uses the same check (concurrency = ops × wait time) to
tell a storage limit from a client/network one.

References: J. D. C. Little, "A proof for the queuing formula L = λW", Operations Research 9(3),
1961; NetApp KB, "How concurrency can impact throughput performance" (N = ops × W).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Measured / configured concurrency below which the queue is called "not kept full". A client
# that re-issues at once keeps the ratio near 1; what it loses is the time each I/O spends in the
# client rather than at the device (submission, reaping completions, the CPU in between), which
# fio's completion latency does not count. Below 0.8 more than a fifth of the configured slots
# were empty on average: the generator, not the storage, set the pace (CPU-bound client, a
# synchronous ioengine where iodepth > 1 has no effect, think time, batching).
NOT_FULL_RATIO = 0.8
# Above this, more I/Os were "in flight" than could be: the inputs disagree (latency in the wrong
# unit or a percentile rather than the mean, IOPS summed over more hosts than counted).
OVER_FULL_RATIO = 1.2


@dataclass(frozen=True)
class LittleCheck:
    """Little's law ``L = λ·W`` applied to a storage run."""

    iops: float  # λ, op/s (all hosts together)
    mean_latency_s: float  # W, s
    configured_concurrency: float  # what the job asked for: threads × iodepth × hosts
    measured_concurrency: float  # L = λ·W, outstanding I/Os on average
    ratio: float  # measured / configured
    expected_iops: float  # configured / W: the IOPS a full queue would give at this latency
    queue_not_full: bool  # ratio < min_ratio
    exceeds_configured: bool  # ratio > max_ratio: the inputs are inconsistent
    min_ratio: float
    max_ratio: float


def littles_law_check(
    iops: float,
    mean_latency_s: float,
    configured_concurrency: float,
    *,
    min_ratio: float = NOT_FULL_RATIO,
    max_ratio: float = OVER_FULL_RATIO,
) -> LittleCheck:
    """Compare the concurrency implied by IOPS × mean latency with the configured one.

    ``L = λ W`` holds for time averages in any stable system (Little 1961); the measured
    concurrency is therefore what the storage actually had outstanding. ``configured_concurrency``
    counts every I/O slot the load generator had (fio: numjobs × iodepth × hosts, with iodepth
    taken as 1 for synchronous engines). Use the *mean* latency over the same I/Os as the IOPS
    (fio ``lat``/``clat`` mean, not a percentile).

    Flags: ``queue_not_full`` when ``ratio < min_ratio`` (default 0.8, see
    :data:`NOT_FULL_RATIO`), ``exceeds_configured`` when ``ratio > max_ratio`` (default 1.2).
    """
    if not (math.isfinite(iops) and iops >= 0):
        raise ValueError("iops must be finite and >= 0")
    if not (math.isfinite(mean_latency_s) and mean_latency_s > 0):
        raise ValueError("mean_latency_s must be finite and > 0")
    if not (math.isfinite(configured_concurrency) and configured_concurrency > 0):
        raise ValueError("configured_concurrency must be finite and > 0")
    measured = iops * mean_latency_s
    ratio = measured / configured_concurrency
    return LittleCheck(
        iops=iops,
        mean_latency_s=mean_latency_s,
        configured_concurrency=configured_concurrency,
        measured_concurrency=measured,
        ratio=ratio,
        expected_iops=configured_concurrency / mean_latency_s,
        queue_not_full=ratio < min_ratio,
        exceeds_configured=ratio > max_ratio,
        min_ratio=min_ratio,
        max_ratio=max_ratio,
    )


def threads_needed(target_iops: float, latency_s: float, hosts: int = 1) -> int:
    """Outstanding I/Os per host needed for ``target_iops`` at ``latency_s``: ``⌈λ·W / hosts⌉``.

    Little's law read the other way: to complete λ I/Os per second when each takes W seconds,
    λ·W must be in flight. E.g. 5000 IOPS at 1.3 ms → 6.5 → 7 threads; over 2 hosts → 3.25 → 4
    each. "Threads" means I/O slots: threads × iodepth for an asynchronous engine. Assumes the
    latency stays W at that load (it grows near saturation; see :func:`find_knee`).

    λ·W is rounded to 9 significant digits before the ceiling so that floating-point noise
    (4.000000000000001) does not ask for an extra thread.
    """
    if not (math.isfinite(target_iops) and target_iops >= 0):
        raise ValueError("target_iops must be finite and >= 0")
    if not (math.isfinite(latency_s) and latency_s > 0):
        raise ValueError("latency_s must be finite and > 0")
    if hosts < 1:
        raise ValueError("hosts must be >= 1")
    per_host = target_iops * latency_s / hosts
    return math.ceil(float(f"{per_host:.9g}"))
