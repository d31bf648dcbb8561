"""What one driver invocation does (``DriverSpec``, the job's ``--spec``), and the items it runs.

Pure: the fio probe builds a spec when it plans, the driver reads it when the job runs.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assay.fio.job import FioJob, fio_path
from assay.fio.safety import SUBDIR
from assay.fio.workloads import YEAR_S, RunSettings, custom_job, get_workload, workload_job

CURVE_DEFAULT = (10, 50, 70, 80, 90, 100)  # Vdbench's curve= default
SCRATCH = "scratch"  # the default target, inside the job directory
# Estimates for the timeout: fio's start and file open per run, and a slow target's fill rate.
RUN_OVERHEAD_S = 5.0
FILL_RATE_ASSUMED = 10 * 2**20  # B/s, an NFS mount on a busy 1 GbE link
GRACE_S = 60.0


class JobGroup(BaseModel):
    """Custom jobs that run together, in one fio invocation (see "Jobs run together")."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    jobs: list[dict[str, Any]] = Field(min_length=1)


class DriverSpec(BaseModel):
    """What one driver invocation does. The probe fills in every default; see probes/fio.py."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["workloads", "curve"]
    workloads: list[str]
    jobs: list[dict[str, Any]] = Field(default_factory=list)
    groups: list[JobGroup] = Field(default_factory=list)
    hosts: list[str] = Field(default_factory=list)  # fio servers, "ADDR[,PORT]"; [] runs here
    curve: list[int] = Field(default_factory=lambda: list(CURVE_DEFAULT))
    max_latency_ms: float | None = Field(default=None, gt=0)
    target: str | None = None  # None: SCRATCH in the current directory
    # assay's own directory in a target directory; its own per host when the hosts of a
    # Vdbench run share one target from their nodes at once (``assay-fio-<host>``)
    subdir: str = Field(default=SUBDIR, pattern=r"^assay-fio[A-Za-z0-9._-]*$")
    size: int = Field(gt=0)
    runtime: float = Field(gt=0, le=YEAR_S)
    ramp_time: float = Field(ge=0, le=YEAR_S)
    numjobs: int = Field(ge=1)
    iodepth: int = Field(ge=1)
    bs: int | None = Field(default=None, gt=0)
    ioengine: str = "libaio"
    direct: bool = True
    destructive: bool = False
    keep: bool = False
    fio: str = "fio"
    fill_bs: int = 2**20
    knee_method: Literal["kneedle", "slope"] = "kneedle"
    deadline_s: float | None = Field(default=None, gt=0)


# ------------------------------------------------------------------------------ pure helpers


@dataclass(frozen=True)
class Item:
    """One thing to run: a standard workload, a custom job, or a group of custom jobs run
    together, as uncapped fio jobs (one, or a group's several)."""

    name: str
    jobs: tuple[FioJob, ...]
    custom: bool = False
    group: bool = False

    @property
    def job(self) -> FioJob:
        return self.jobs[0]


def own_file(job: FioJob, filename: str | None) -> FioJob:
    """A custom job without a file of its own writes to the target's device or file (a path)."""
    if not filename or job.filename:
        return job
    return dataclasses.replace(
        job,
        filename=fio_path(filename),
        directory=None,
        extra={k: v for k, v in job.extra.items() if k != "filename_format"},
    )


def together(job: FioJob, group: str) -> FioJob:
    """A job of a group: its own reporting group, started with the others (no stonewall)."""
    if job.stonewall:
        raise ValueError(
            f"group {group!r}: job {job.name!r} sets stonewall, but a group's jobs run together"
        )
    return dataclasses.replace(job, group_reporting=True, extra={**job.extra, "new_group": "1"})


def items_of(spec: DriverSpec, directory: str | None, filename: str | None) -> list[Item]:
    """The standard workloads, the custom jobs, then the groups. Raises ValueError on a bad
    name/field."""
    settings = settings_of(spec)
    items = [
        Item(name, (workload_job(get_workload(name), settings, directory=directory,
                                 filename=filename),))
        for name in spec.workloads
    ]  # fmt: skip
    for fields in spec.jobs:
        job = own_file(custom_job(fields, settings, directory=directory), filename)
        items.append(Item(job.name, (job,), custom=True))
    for group in spec.groups:
        jobs = tuple(
            together(own_file(custom_job(f, settings, directory=directory), filename), group.name)
            for f in group.jobs
        )
        items.append(Item(group.name, jobs, custom=True, group=True))
    # every name becomes a sample's workload: a group's jobs' too
    names = [i.name for i in items] + [j.name for i in items if i.group for j in i.jobs]
    dupes = sorted(n for n, count in Counter(names).items() if count > 1)  # (n² with count())
    if dupes:
        raise ValueError(f"job names must be unique: {', '.join(dupes)} given twice")
    return items


def all_jobs(items: list[Item]) -> list[FioJob]:
    return [job for item in items for job in item.jobs]


def settings_of(spec: DriverSpec) -> RunSettings:
    return RunSettings(
        size=spec.size,
        runtime=spec.runtime,
        ramp_time=spec.ramp_time,
        numjobs=spec.numjobs,
        iodepth=spec.iodepth,
        ioengine=spec.ioengine,
        direct=spec.direct,
        bs=spec.bs,
    )


def timed_runs(mode: str, n_items: int, n_curve: int) -> int:
    """fio runs that last runtime + ramp_time each (fills not counted)."""
    return n_items * (1 + n_curve) if mode == "curve" else n_items


def estimate_seconds(
    *,
    mode: str,
    n_items: int,
    n_curve: int,
    runtime: float,
    ramp_time: float,
    fill_bytes: int,
) -> float:
    """A generous bound on how long a driver invocation takes: every timed run, one fill of
    every file at a slow target's rate, and a grace period. Used for the job's timeout."""
    runs = timed_runs(mode, n_items, n_curve)
    fill = fill_bytes / FILL_RATE_ASSUMED
    return runs * (runtime + ramp_time + RUN_OVERHEAD_S) + fill + GRACE_S
