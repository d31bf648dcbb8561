"""Which sets of figures a measured point reports: each job (of a group), the group's total,
each per host and over all hosts."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from assay.drivers.fio import clients
from assay.drivers.fio.curve import outstanding
from assay.drivers.fio.spec import Item
from assay.fio.job import FioJob
from assay.parsers.fio import ALL_CLIENTS


@dataclass(frozen=True)
class Cell:
    """One set of figures of a measured point: one job, or a group's total, on one host or
    on all of them together (``host`` None: a run on this machine alone)."""

    workload: str
    host: str | None
    members: frozenset[tuple[str, str | None]]  # (job name, host address) of its fio entries
    identity: dict[str, Any]  # the params that say what it is (job, rw, bs, numjobs, host...)
    expected: int  # Little's law: the I/Os configured to be outstanding

    @property
    def key(self) -> tuple[str, str | None]:
        return (self.workload, self.host)


def _common(values: list[Any], otherwise: Any) -> Any:
    return values[0] if len(set(values)) == 1 else otherwise


def job_identity(job: FioJob, group: str | None) -> dict[str, Any]:
    """What the parser reads from a job's options, from the job itself: fio's client/server
    output has ``job options`` for the first job of a file only."""
    out: dict[str, Any] = {
        "job": job.name,
        "rw": job.rw,
        "bs": job.bs,
        "numjobs": job.numjobs,
        "iodepth": job.iodepth,
        "ioengine": job.ioengine,
        "direct": int(job.direct),
    }
    if job.rwmixread is not None:
        out["rwmixread"] = job.rwmixread
    if group:
        out["group"] = group
    return out


def group_identity(item: Item) -> dict[str, Any]:
    """A group's total: its threads (numjobs summed), the deepest queue, common values."""
    jobs = item.jobs
    rws = [j.rw for j in jobs]
    out: dict[str, Any] = {
        "job": item.name,
        "group": item.name,
        "group_jobs": len(jobs),
        "rw": _common(rws, "+".join(sorted(set(rws)))),
        "bs": _common([j.bs for j in jobs], "mixed"),
        "numjobs": sum(j.numjobs for j in jobs),
        "iodepth": max(j.iodepth for j in jobs),
        "ioengine": _common([j.ioengine for j in jobs], "mixed"),
        "direct": _common([int(j.direct) for j in jobs], "mixed"),
    }
    mixes = {j.rwmixread for j in jobs}
    if len(mixes) == 1 and None not in mixes:
        out["rwmixread"] = mixes.pop()
    return out


def cells_of(item: Item, hosts: Sequence[str]) -> list[Cell]:
    """Every set of figures a point of ``item`` reports, the item's total last: each job (of
    a group) and the group's total, each per host and over all hosts (multi-client)."""
    spread: list[str | None] = list(hosts) or [None]
    everywhere = ALL_CLIENTS if hosts else None
    plain = not item.group and not hosts  # one job here: the parser's params say it all
    out: list[Cell] = []

    def add(
        workload: str,
        identity: dict[str, Any],
        jobs: tuple[FioJob, ...],
        on: list[str | None],
        label: str | None,
    ) -> None:
        ident = dict(identity)
        if label is not None:
            ident["host"] = label
        members = frozenset((j.name, h) for j in jobs for h in on)
        expected = sum(outstanding(j) for j in jobs) * len(on)
        out.append(Cell(workload, label, members, ident, expected))

    for job in item.jobs:
        ident = {} if plain else job_identity(job, item.name if item.group else None)
        for host in hosts:
            add(job.name, ident, (job,), [host], host)
        add(job.name, ident, (job,), spread, everywhere)
    if item.group:
        for host in hosts:
            add(item.name, group_identity(item), item.jobs, [host], host)
        add(item.name, group_identity(item), item.jobs, spread, everywhere)
    return out


def cell_entries(cell: Cell, entries: list[dict[str, Any]], by_host: bool) -> list[dict[str, Any]]:
    return [
        e
        for e in entries
        if (e.get("jobname"), e.get("hostname") if by_host else None) in cell.members
    ]


def cell_document(doc: Mapping[str, Any], entries: list[dict[str, Any]], name: str) -> str:
    """A fio json+ document of one cell, for the parser: its one entry, or their merge."""
    entry = entries[0] if len(entries) == 1 else clients.merge_entries(entries, name)
    out = {
        "fio version": doc.get("fio version", ""),
        "global options": doc.get("global options") or {},
        "jobs": [entry],
    }
    return json.dumps(out)
