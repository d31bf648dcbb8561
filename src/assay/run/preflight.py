"""Pre-flight: the checks made just before a run starts, at the edge.

Planning is pure (it sees only the plan context), so what it may not look at -- a storage
target's files, devices and free space -- is checked here, between the plan and the run: a job
that cannot run is refused with an ``AssayError`` (exit code 2) before any run is created, so
nothing is stored for a run that could only fail. Each probe says what it checks
(``Probe.preflight``); a job planned as skipped is not checked.
"""

from __future__ import annotations

from assay.model import Job
from assay.probes import get_probe


def preflight(jobs: list[Job]) -> None:
    """Check every job that will run; raise the first refusal."""
    for job in jobs:
        if not job.skip_reason:
            get_probe(job.probe).preflight(job)
