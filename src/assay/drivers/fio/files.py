"""The files a driver job uses and fills, named as fio names them."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence

from assay.fio.hosts import Host, host_format
from assay.fio.job import FioJob
from assay.fio.workloads import FILENAME_FORMAT, fill_job


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "job"


def job_names(job: FioJob, hosts: Sequence[Host] = ()) -> list[str]:
    """The files ``job`` uses: its own ``filename``, else assay's, one per thread (fio expands
    ``$jobnum`` of ``filename_format`` to the clone's number) -- one set per host when it runs
    on several (``assay.fio.hosts.host_format``)."""
    if job.filename:
        return [job.filename]
    fmt = job.extra.get("filename_format", FILENAME_FORMAT)
    formats = [host_format(fmt, h) for h in hosts] or [fmt]
    return [f.replace("$jobnum", str(n)) for f in formats for n in range(job.numjobs)]


def filled_ok(job: FioJob, filled: Mapping[str, int], hosts: Sequence[Host] = ()) -> bool:
    """Whether every file ``job`` uses was written end to end at its size or larger."""
    size = job.size or 0
    return all(filled.get(n, -1) >= size for n in job_names(job, hosts))


def fill_jobs(jobs: list[FioJob], bs: int) -> list[FioJob]:
    """The fills ``jobs`` need, to run at once: one over assay's files (the most threads and
    the largest size among the jobs using them) and one per file of a job's own."""
    fills: list[FioJob] = []
    shared = [j for j in jobs if not j.filename]
    if shared:
        first = shared[0]
        fills.append(
            fill_job(
                max(j.size or 0 for j in shared),
                max(j.numjobs for j in shared),
                directory=first.directory,
                bs=bs,
                ioengine=first.ioengine,
                direct=first.direct,
            )
        )
    own: dict[str, FioJob] = {}
    for j in jobs:
        if j.filename and (j.filename not in own or (j.size or 0) > (own[j.filename].size or 0)):
            own[j.filename] = j
    for j in own.values():
        fills.append(
            fill_job(j.size or 0, 1, directory=None, filename=j.filename, bs=bs,
                     ioengine=j.ioengine, direct=j.direct)
        )  # fmt: skip
    if len(fills) > 1:  # distinct section names in one job file
        fills = [dataclasses.replace(f, name=f"fill-{n}") for n, f in enumerate(fills, start=1)]
    return fills
