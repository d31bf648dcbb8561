"""The fio driver: the process a ``fio`` probe job runs, in the job's directory.

``python -m assay.storage.driver --spec '<json>'``

A plan is static, but a response curve needs the result of its uncontrolled run before the
rate-controlled ones can be written, so the job runs this driver instead of fio itself. It
writes each fio job file and fio's raw ``json+`` output into the current directory (kept with the
run), runs fio once per workload and curve point, reads each output with
``assay.parsers.fio.parse`` and prints the samples as JSON Lines on stdout -- nothing else goes
to stdout; progress and diagnostics go to stderr, prefixed ``fio-driver:``.

Exit codes: 0 ok; 1 fio failed (fio's stderr tail is printed), or ran out of time; 2 bad spec
or a safety refusal (nothing was written).

Modes
-----
``workloads``: each listed workload, then each custom job, as its own fio run, then each group
of jobs run together (below), as one fio run; the fill first when a run needs it
(``assay.storage.workloads.needs_fill``).

``curve``: Vdbench's ``iorate=curve`` for each workload / custom job / group: an uncontrolled run
(``iorate=max``), then runs capped at ``curve`` percent of the IOPS it achieved (Vdbench's
default ``curve=(10,50,70,80,90,100)``). The cap is fio's ``rate_iops``, which applies to every
thread, so the total is divided by ``numjobs`` (and split read/write for a mix), with Poisson
arrivals (``rate_process=poisson``: exponential inter-arrival times, Vdbench's default
``distribution=exponential``). The concurrency stays that of the max run: like Vdbench's
``threads=``, ``iodepth × numjobs`` bounds the I/Os outstanding at any rate. With
``max_latency_ms`` the curve stops after the first point whose mean latency passes it. After the
curve a ``curve-summary`` sample names the knee (``assay.analysis.models.find_knee``) and the
plot, ``curve-<workload>.svg`` / ``.png`` in the current directory.

Every point's samples carry the point's totals over directions (``point_iops``,
``point_latency_s`` = mean total latency over every I/O, ``point_p99_s`` from the merged json+
bins) and Little's law (``outstanding_expected`` = iodepth × numjobs, iodepth 1 for synchronous
engines; ``outstanding_measured`` = IOPS × mean total latency; ``littles_ratio``; ``littles_flag``
on an uncontrolled run whose queue was not kept full, or whose inputs disagree).

Jobs run together (``groups``)
------------------------------
A group is a set of custom jobs that run *at once*, as Vdbench drives every SD of a run at once:
one fio invocation, one job file with a section per job, no ``stonewall`` (fio HOWTO: jobs in a
file start together unless ``stonewall`` says to wait) and ``new_group`` on each, so that
``group_reporting`` merges each job's own ``numjobs`` clones but not the jobs with each other
(fio HOWTO, ``new_group``: "Start a new reporting group"). Each group is one item: filled first
where its jobs need it (one fill run for all of them), then measured; its samples are each
job's own (``workload`` = the job's name, ``group`` = the group's) and the group's total
(``workload`` = ``job`` = the group's name, ``group_jobs``; IOPS and bandwidth summed, latency
merged from the json+ bins, ``numjobs`` the threads of all jobs, ``iodepth`` the largest;
``rw``/``bs`` the common value, else every pattern joined by ``+`` / ``mixed``). A group's jobs
without ``filename`` share assay's files (thread n of each uses ``assay-fio-<n>``), as Vdbench
workloads on one SD share it; give each job a ``filename`` for separate files.

A curve on a group runs the group uncontrolled, then caps the group's *total* at each
percentage of its total IOPS, dividing the cap between the jobs in the proportions of the
uncontrolled run (each job at ``p`` percent of what it did there). Vdbench divides a run's
``iorate`` between its workloads by ``skew=`` (evenly when none is given; guide 1.14); for jobs
of equal speed the two agree, and for unequal ones this keeps 100% the load the uncontrolled
run actually did, where an even split would ask a slow job for more than it can do.

Several hosts (``hosts``)
-------------------------
With ``hosts`` (fio connect strings ``ADDR[,PORT]``) every fio run -- fills included -- runs on
every host at once through fio's client/server mode (``assay.storage.clients``): the driver
starts ``fio --server`` on each host before the first run and stops them afterwards, also on
failure and SIGTERM. Each host runs the same jobs on its own files (``assay-fio-<host>-<n>``).
Samples: each host's figures (``host`` = its address) and the total over hosts (``host`` =
``All clients``, computed here from the per-host json+ entries: IOPS and bandwidth summed,
percentiles from the merged bins); every sample carries ``hosts`` (their number). A curve
caps the total: each host gets an equal part of each job's cap. The target must be a directory
every host sees at the same path (a shared file system, or this machine for loopback hosts);
the free-space check, the O_DIRECT check and the removal of the files see this machine's view.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.errors import AssayError
from assay.parsers.fio import merge_bins, ns_to_s, parse, percentiles_from_bins
from assay.storage import clients, safety
from assay.storage.clients import ALL_CLIENTS, Host, entries_of, for_host, host_format
from assay.storage.fiojob import FioJob, job_file
from assay.storage.workloads import (
    FILENAME_FORMAT,
    SYNC_ENGINES,
    RunSettings,
    custom_job,
    effective_iodepth,
    fill_job,
    get_workload,
    needs_fill,
    with_rate,
    workload_job,
)

PREFIX = "fio-driver:"
EXIT_OK, EXIT_FIO, EXIT_SPEC = 0, 1, 2
CURVE_DEFAULT = (10, 50, 70, 80, 90, 100)  # Vdbench's curve= default
SCRATCH = "scratch"  # the default target, inside the job directory
# Estimates for the timeout: fio's start and file open per run, and a slow target's fill rate.
RUN_OVERHEAD_S = 5.0
FILL_RATE_ASSUMED = 10 * 2**20  # B/s, an NFS mount on a busy 1 GbE link
GRACE_S = 60.0
STDERR_TAIL = 15
DIRECTIONS = ("read", "write", "trim")


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
    size: int = Field(gt=0)
    runtime: float = Field(gt=0)
    ramp_time: float = Field(ge=0)
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


def _own_file(job: FioJob, filename: str | None) -> FioJob:
    """A custom job without a file of its own writes to the target's device or file."""
    if not filename or job.filename:
        return job
    return dataclasses.replace(
        job,
        filename=filename,
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
        job = _own_file(custom_job(fields, settings, directory=directory), filename)
        items.append(Item(job.name, (job,), custom=True))
    for group in spec.groups:
        jobs = tuple(
            together(_own_file(custom_job(f, settings, directory=directory), filename), group.name)
            for f in group.jobs
        )
        items.append(Item(group.name, jobs, custom=True, group=True))
    # every name becomes a sample's workload: a group's jobs' too
    names = [i.name for i in items] + [j.name for i in items if i.group for j in i.jobs]
    dupes = sorted({n for n in names if names.count(n) > 1})
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


def curve_targets(max_iops: float, pcts: list[int]) -> list[tuple[int, int]]:
    """(percent, total IOPS) of each curve point, in increasing order, at least 1 IOPS."""
    return [(p, max(1, round(max_iops * p / 100))) for p in sorted(set(pcts))]


@dataclass(frozen=True)
class PointFigures:
    """One fio run's totals over every direction and job."""

    iops: float
    latency_s: float | None  # mean total latency (lat_ns) over every I/O
    p99_s: float | None  # from the merged json+ bins of the total latency
    p999_s: float | None
    completions: int  # I/Os whose latency was measured


def point_figures(doc: Mapping[str, Any]) -> PointFigures:
    """Totals of a fio json+ document: IOPS summed, latency averaged over I/Os (weighted by
    each direction's count), percentiles from merged histogram bins -- never averaged."""
    iops = 0.0
    weighted = 0.0
    count = 0
    bins: list[Mapping[str, int]] = []
    have_bins = True
    for entry in doc.get("jobs") or []:
        if entry.get("error"):
            continue
        for ddir in DIRECTIONS:
            data = entry.get(ddir)
            if not isinstance(data, Mapping) or not data.get("total_ios"):
                continue
            iops += float(data.get("iops", 0.0))
            lat = data.get("lat_ns") or {}
            n = int(lat.get("N", 0))
            if n:
                weighted += float(lat["mean"]) * n
                count += n
                if lat.get("bins"):
                    bins.append(lat["bins"])
                else:
                    have_bins = False
    mean = ns_to_s(weighted / count) if count else None
    p99 = p999 = None
    if bins and have_bins:
        pct = percentiles_from_bins(merge_bins(bins), (99.0, 99.9))
        p99 = ns_to_s(pct[99.0]) if 99.0 in pct else None
        p999 = ns_to_s(pct[99.9]) if 99.9 in pct else None
    return PointFigures(iops, mean, p99, p999, count)


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
    from assay.analysis.models import littles_law_check

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
    from assay.analysis.models import InsufficientDataError, find_knee  # numpy: see above

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


def sample_objects(text: str, source: str, extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The samples of one fio output as JSON Lines objects, ``extra`` merged into params."""
    result = parse(text, source)
    out = []
    for s in result.samples:
        obj: dict[str, Any] = {
            "metric": s.metric,
            "value": s.value,
            "unit": s.unit,
            "params": {**s.params, **extra},
        }
        if s.stats is not None:
            obj["stats"] = s.stats.to_dict()
        out.append(obj)
    return out


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "job"


def job_names(job: FioJob, hosts: Sequence[Host] = ()) -> list[str]:
    """The files ``job`` uses: its own ``filename``, else assay's, one per thread (fio expands
    ``$jobnum`` of ``filename_format`` to the clone's number) -- one set per host when it runs
    on several (``clients.host_format``)."""
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


# ------------------------------------------------------------------------------ cells


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


def load_document(text: str) -> dict[str, Any]:
    """fio's JSON document in its output file. A client writes its hosts' ``<host>`` lines
    before it, so the document starts at the first line that starts with ``{``."""
    m = re.search(r"^\{", text, re.MULTILINE) or re.search(r"\{", text)
    if m is None:
        return {}
    doc, _ = json.JSONDecoder().raw_decode(text, m.start())
    return doc if isinstance(doc, dict) else {}


# ------------------------------------------------------------------------------ side effects


def say(message: str) -> None:
    print(f"{PREFIX} {message}", file=sys.stderr, flush=True)


def emit(obj: Mapping[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, sort_keys=True) + "\n")
    sys.stdout.flush()


class Terminated(BaseException):
    """SIGTERM from the runner (timeout, Ctrl-C): stop fio, clean up, exit."""


class FioFailed(AssayError):
    exit_code = EXIT_FIO


class OutOfTime(AssayError):
    exit_code = EXIT_FIO


def engine_available(fio: str, engine: str) -> bool:
    """``fio --enghelp=ENGINE`` fails when the engine is not built in or not loadable."""
    try:
        proc = subprocess.run(
            [fio, f"--enghelp={engine}"],
            capture_output=True,
            timeout=30,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


@dataclass
class Measured:
    """One measured point: its total (the item's last cell) and every cell's figures."""

    total: PointFigures
    cells: dict[tuple[str, str | None], PointFigures]


@dataclass
class Driver:
    spec: DriverSpec
    fio: str
    cwd: Path
    deadline: float | None  # time.monotonic() value
    filename: str | None = None  # a device or user file (destructive)
    workdir: str | None = None
    filled: dict[str, int] = field(default_factory=dict)
    counter: int = 0
    notes: dict[str, str] = field(default_factory=dict)  # warnings recorded in params
    failures: list[str] = field(default_factory=list)
    hosts: list[Host] = field(default_factory=list)  # fio servers; [] runs fio here

    # -- running fio

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def argv_for(self, jobs: list[FioJob], stem: str, output: str) -> list[str]:
        """Write the job file(s): one here, or one per host for fio's client."""
        if not self.hosts:
            (self.cwd / f"{stem}.fio").write_text(job_file(jobs))
            return [self.fio, "--output-format=json+", f"--output={output}", f"{stem}.fio"]
        runs = []
        for host in self.hosts:
            name = f"{stem}-{host.tag}.fio"
            (self.cwd / name).write_text(job_file([for_host(j, host) for j in jobs]))
            runs.append((host, name))
        return clients.client_argv(self.fio, output, runs)

    def run(self, jobs: list[FioJob], label: str, *, timed: bool) -> dict[str, Any]:
        """Write the job file, run fio, return its parsed JSON document (and keep the text)."""
        self.counter += 1
        stem = f"{self.counter:02d}-{slug(label)}"
        output, errfile = (self.cwd / f"{stem}{ext}" for ext in (".json", ".err"))
        timeout = None
        longest = max((j.runtime or 0) + (j.ramp_time or 0) for j in jobs)
        if timed:
            timeout = longest + max(30.0, max(j.runtime or 0 for j in jobs))
        left = self.remaining()
        if left is not None:
            if timed and left < longest:
                raise OutOfTime(f"{label}: not started, {max(0.0, left):.0f} s left of the budget")
            timeout = left if timeout is None else min(timeout, left)
        argv = self.argv_for(jobs, stem, output.name)
        say(f"{label}: {' '.join(argv)}")
        with open(errfile, "wb") as err:
            # fio's own stdout (progress, warnings) must never reach ours: JSON Lines only
            proc = subprocess.Popen(
                argv, cwd=self.cwd, stdout=err, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
            )
            try:
                code = proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                stop(proc)
                raise OutOfTime(
                    f"{label}: fio still running after {timeout:.0f} s; stopped"
                ) from None
            except BaseException:
                stop(proc)
                raise
        text = output.read_text(errors="replace") if output.exists() else ""

        def tail() -> str:
            return "\n".join(errfile.read_text(errors="replace").splitlines()[-STDERR_TAIL:])

        if code != 0 or not text.strip():
            raise FioFailed(f"{label}: fio exited with {code}; its output ends:\n{tail()}")
        try:
            doc = load_document(text)
        except ValueError as exc:
            raise FioFailed(f"{label}: fio's output is not JSON ({exc})") from None
        errors = [e.get("error") for e in entries_of(doc) if e.get("error")]
        if errors:
            raise FioFailed(f"{label}: fio reported error {errors[0]}:\n{tail()}")
        if self.hosts:
            seen = {str(e.get("hostname")) for e in entries_of(doc)}
            wanted = {h.address for h in self.hosts}
            if seen != wanted:
                raise FioFailed(
                    f"{label}: fio's output has hosts {', '.join(sorted(seen))}, "
                    f"not the hosts run ({', '.join(sorted(wanted))})"
                )
        return {"doc": doc, "text": text, "output": output.name}

    def fill_if_needed(self, item: Item) -> None:
        """Write the files of every job of ``item`` that reads (or writes randomly) files not
        yet written end to end: one fill run for all of them (and all hosts)."""
        need = [
            j
            for j in item.jobs
            if needs_fill(j.rw, j.rwmixread, filled_ok(j, self.filled, self.hosts))
        ]
        if not need:
            return
        fills = fill_jobs(need, self.spec.fill_bs)
        for fill in fills:
            files = fill.numjobs * max(1, len(self.hosts))
            say(f"fill: writing {files} file(s) x {safety.human(fill.size or 0)} end to end")
        result = self.run(fills, "fill", timed=False)
        fig = point_figures({"jobs": entries_of(result["doc"])})
        say(f"fill done: {fig.iops * self.spec.fill_bs / 2**20:.0f} MiB/s")
        for job in need:
            for name in job_names(job, self.hosts):
                self.filled[name] = max(self.filled.get(name, 0), job.size or 0)
        if self.workdir and any(not j.filename for j in need):
            safety.write_marker(self.workdir, self.filled)

    def measure(
        self,
        item: Item,
        jobs: list[FioJob],
        label: str,
        extra: dict[str, Any],
        *,
        caps: Mapping[tuple[str, str | None], float] | None = None,
        maxes: Mapping[tuple[str, str | None], PointFigures] | None = None,
    ) -> Measured:
        """One measured point: run, print every cell's samples, return their totals.

        ``caps``: a capped (curve) point, the IOPS each (job, host) was capped at; ``maxes``:
        the figures of the uncontrolled run, by cell."""
        result = self.run(jobs, label, timed=True)
        doc = result["doc"]
        entries = entries_of(doc)
        figures: dict[tuple[str, str | None], PointFigures] = {}
        cells = cells_of(item, [h.address for h in self.hosts])
        for cell in cells:
            mine = cell_entries(cell, entries, bool(self.hosts))
            if not mine:
                continue
            fig = point_figures({"jobs": mine})
            figures[cell.key] = fig
            members = [j for j in jobs if any(n == j.name for n, _ in cell.members)]
            params: dict[str, Any] = {
                "workload": cell.workload,
                "fio_output": result["output"],
                **self.base_params(members),
                **extra,
                **cell.identity,
            }
            if caps is not None:
                params["target_iops"] = float(sum(caps[m] for m in cell.members))
            if maxes is not None and cell.key in maxes:
                params["max_iops"] = maxes[cell.key].iops
            params["point_iops"] = fig.iops
            if fig.latency_s is not None:
                params["point_latency_s"] = fig.latency_s
            if fig.p99_s is not None:
                params["point_p99_s"] = fig.p99_s
            if fig.p999_s is not None:
                params["point_p999_s"] = fig.p999_s
            params.update(
                littles_params(fig, members[0], rate_limited=caps is not None,
                               expected=cell.expected)
            )  # fmt: skip
            text = result["text"] if len(cells) == 1 else cell_document(doc, mine, cell.workload)
            for obj in sample_objects(text, result["output"], params):
                emit(obj)
        total_key = cells[-1].key
        if total_key not in figures:
            raise FioFailed(f"{label}: fio's output has no entry for {item.name}")
        total = figures[total_key]
        lat = f"{total.latency_s * 1e3:.3f} ms" if total.latency_s else "?"
        say(f"{label}: {total.iops:.0f} IOPS, mean latency {lat}")
        return Measured(total, figures)

    def base_params(self, jobs: Sequence[FioJob]) -> dict[str, Any]:
        target = self.spec.target if self.spec.target is not None else SCRATCH
        size = jobs[0].size if len(jobs) == 1 else max(j.size or 0 for j in jobs)
        out: dict[str, Any] = {"target": target, "size": size, **self.notes}
        if len(jobs) == 1 and jobs[0].filename and self.filename is None:
            out["filename"] = jobs[0].filename
        if self.hosts:
            out["hosts"] = len(self.hosts)
        return out

    # -- modes

    def workloads(self, items: list[Item]) -> None:
        for item in items:
            try:
                self.fill_if_needed(item)
                self.measure(item, list(item.jobs), item.name, {"mode": "workloads"})
            except FioFailed as exc:
                self.failures.append(str(exc))
                say(str(exc))

    def curve(self, items: list[Item]) -> None:
        for item in items:
            try:
                self.one_curve(item)
            except FioFailed as exc:
                self.failures.append(str(exc))
                say(str(exc))

    def shares(self, item: Item, top: Measured) -> dict[str, float]:
        """Each job's part of the item's IOPS in the uncontrolled run (see the docstring)."""
        everywhere = ALL_CLIENTS if self.hosts else None
        done = {j.name: top.cells.get((j.name, everywhere)) for j in item.jobs}
        total = sum(f.iops for f in done.values() if f)
        if total <= 0:
            return {j.name: 1 / len(item.jobs) for j in item.jobs}
        return {name: (f.iops if f else 0.0) / total for name, f in done.items()}

    def one_curve(self, item: Item) -> None:
        self.fill_if_needed(item)
        top = self.measure(item, list(item.jobs), f"{item.name} max", {"mode": "max"})
        if top.total.iops <= 0:
            raise FioFailed(f"{item.name}: the uncontrolled run did no I/O; no curve")
        shares = self.shares(item, top)
        spread: list[str | None] = [h.address for h in self.hosts] or [None]
        points: list[tuple[int, PointFigures]] = []
        stopped = ""
        for pct, target in curve_targets(top.total.iops, self.spec.curve):
            # each job at its part of the total, each host an equal part of the job's
            each = {j.name: target * shares[j.name] / len(spread) for j in item.jobs}
            caps = {(j.name, h): each[j.name] for j in item.jobs for h in spread}
            capped = [with_rate(j, each[j.name]) for j in item.jobs]
            extra = {"mode": "curve", "curve_pct": pct}
            # target_iops (in measure) is a float: derived from a measurement (the max run), so
            # repetitions of a curve whose max runs differ still fold together by curve_pct
            fig = self.measure(
                item, capped, f"{item.name} {pct}%", extra, caps=caps, maxes=top.cells
            ).total
            points.append((pct, fig))
            bound = self.spec.max_latency_ms
            if bound and fig.latency_s and fig.latency_s * 1e3 > bound:
                stopped = (
                    f"stopped after {pct}%: mean latency {fig.latency_s * 1e3:.3f} ms "
                    f"> max_latency_ms {bound:g}"
                )
                say(stopped)
                break
        self.curve_summary(item, top.total, points, stopped)

    def curve_summary(
        self, item: Item, top: PointFigures, points: list[tuple[int, PointFigures]], stopped: str
    ) -> None:
        total_cell = cells_of(item, [h.address for h in self.hosts])[-1]
        job = item.job
        # what identifies the curve's points (the parser's params of each fio run)
        identity = total_cell.identity or {
            "job": job.name,
            "rw": job.rw,
            "bs": job.bs,
            "numjobs": job.numjobs,
            "iodepth": job.iodepth,
        }
        summary: dict[str, Any] = {
            "workload": item.name,
            "mode": "curve-summary",
            "curve_points": len(points),
            "max_iops": top.iops,
            **identity,
            **self.base_params(item.jobs),
            **knee_params(points, self.spec.knee_method),
        }
        if top.latency_s:
            summary["max_latency_s"] = top.latency_s
        if stopped:
            summary["curve_stopped"] = stopped
        try:
            svg, png = plot_curve(self.cwd, item.name, points, top, summary)
            summary["plot_svg"], summary["plot_png"] = svg, png
        except Exception as exc:  # a plot is a nicety: never lose the measurements for it
            say(f"{item.name}: no plot ({type(exc).__name__}: {exc})")
        peak = max([f.iops for _, f in points] or [top.iops])
        emit({"metric": "storage.iops", "value": peak, "unit": "op/s", "params": summary})
        if "knee_curve_pct" in summary:
            say(f"{item.name}: knee at {summary['knee_curve_pct']}% ({summary['knee_method']})")
        else:
            say(f"{item.name}: {summary['knee_note']}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """End fio: SIGTERM makes it stop its jobs and exit; SIGKILL if it does not."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=2)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def plot_curve(
    where: Path,
    name: str,
    points: list[tuple[int, PointFigures]],
    top: PointFigures,
    summary: Mapping[str, Any],
) -> tuple[str, str]:
    """``curve-<name>.svg`` and ``.png``: achieved IOPS against mean and p99 total latency,
    the uncontrolled run and the knee marked. Returns the file names (relative to ``where``)."""
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot
    import matplotlib.pyplot as plt

    xs = [f.iops for _, f in points]
    mean = [f.latency_s * 1e3 if f.latency_s else math.nan for _, f in points]
    p99 = [f.p99_s * 1e3 if f.p99_s else math.nan for _, f in points]
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    ax.plot(xs, mean, "o-", label="mean latency")
    if any(not math.isnan(v) for v in p99):
        ax.plot(xs, p99, "s--", label="p99 latency")
    for (pct, f), y in zip(points, mean, strict=True):
        ax.annotate(f"{pct}%", (f.iops, y), textcoords="offset points", xytext=(4, -12),
                    fontsize=8)  # fmt: skip
    if top.latency_s:
        ax.plot([top.iops], [top.latency_s * 1e3], "x", color="black", markersize=9,
                label="uncontrolled (max)")  # fmt: skip
    if "knee_iops" in summary:
        kx, ky = summary["knee_iops"], summary["knee_latency_s"] * 1e3
        ax.plot([kx], [ky], "o", markersize=14, markerfacecolor="none", color="red",
                label=f"knee ({summary['knee_curve_pct']}%)")  # fmt: skip
    ax.set_xlabel("achieved IOPS")
    ax.set_ylabel("latency (ms)")
    ax.set_title(f"{name}: response-time curve (Vdbench iorate=curve)")
    ax.set_ylim(bottom=0)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left", fontsize=8)
    fig.tight_layout()
    svg, png = f"curve-{slug(name)}.svg", f"curve-{slug(name)}.png"
    # no date and a fixed hash salt: the same curve gives the same SVG bytes
    with matplotlib.rc_context({"svg.hashsalt": "assay"}):
        fig.savefig(where / svg, format="svg", metadata={"Date": None})
    fig.savefig(where / png, format="png", metadata={"Software": None})
    plt.close(fig)
    return svg, png


@contextlib.contextmanager
def sigterm_raises() -> Iterator[None]:
    """The runner ends a job with SIGTERM to its process group (fio gets it too): turn it into
    an exception so the files are still removed before the SIGKILL that follows."""

    def handler(signum: int, frame: object) -> None:
        raise Terminated(signum)

    old = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, old)


def resolve_fio(fio: str) -> str | None:
    return shutil.which(fio)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m assay.storage.driver")
    ap.add_argument("--spec", required=True, help="the driver spec, JSON")
    args = ap.parse_args(argv)
    started = time.monotonic()
    try:
        spec = DriverSpec.model_validate(json.loads(args.spec))
    except (json.JSONDecodeError, ValidationError) as exc:
        say(f"bad spec: {exc}")
        return EXIT_SPEC
    fio = resolve_fio(spec.fio)
    if fio is None:
        say(f"fio not found: {spec.fio!r} (Debian/Ubuntu: apt-get install fio; or set fio=PATH)")
        return EXIT_FIO
    cwd = Path.cwd()
    notes: dict[str, str] = {}
    if not engine_available(fio, spec.ioengine):
        if spec.ioengine != "libaio":
            say(f"bad spec: fio has no ioengine {spec.ioengine!r} (fio --enghelp lists them)")
            return EXIT_SPEC
        notes["ioengine_fallback"] = "libaio not available: psync (one I/O per thread)"
        say(notes["ioengine_fallback"])
        spec = spec.model_copy(update={"ioengine": "psync"})

    target = spec.target if spec.target is not None else str(cwd / SCRATCH)
    try:
        placement = safety.place(safety.observe(target), destructive=spec.destructive)
    except safety.SafetyError as exc:
        say(f"refused: {exc}")
        return EXIT_SPEC
    try:
        items = items_of(spec, placement.workdir, placement.filename)
    except ValueError as exc:
        say(f"bad spec: {exc}")
        return EXIT_SPEC
    if not items:
        say("bad spec: nothing to run (no workloads and no jobs)")
        return EXIT_SPEC
    try:
        hosts = clients.parse_hosts(spec.hosts)
    except clients.ClientError as exc:
        say(f"bad spec: {exc}")
        return EXIT_SPEC
    if hosts and (placement.filename or any(j.filename for j in all_jobs(items))):
        say(
            "bad spec: with hosts, every host writes assay's own files in the target directory "
            "(one set per host); a device, a file target or a job's filename cannot be shared"
        )
        return EXIT_SPEC

    created: list[str] = []  # custom jobs' own files that assay creates (removed afterwards)
    try:
        problems = space_problems(spec, placement, items, hosts)
        for job_file_path in dict.fromkeys(j.filename for j in all_jobs(items) if j.filename):
            if job_file_path is None or job_file_path == placement.filename:
                continue
            state = safety.observe(job_file_path)
            owned = safety.check_filename(state, destructive=spec.destructive, assay_files=set())
            if owned and state.kind == "absent":
                created.append(job_file_path)
    except safety.SafetyError as exc:
        say(f"refused: {exc}")
        return EXIT_SPEC
    if problems:
        for p in problems:
            say(f"refused: {p}")
        return EXIT_SPEC

    deadline = started + spec.deadline_s if spec.deadline_s else None
    driver = Driver(spec, fio, cwd, deadline, filename=placement.filename, notes=notes, hosts=hosts)
    try:
        safety.prepare(placement)
    except OSError as exc:  # e.g. the target's parent directory does not exist
        say(f"refused: cannot create {placement.workdir}: {exc.strerror}")
        return EXIT_SPEC
    code = EXIT_OK
    try:
        with sigterm_raises(), contextlib.ExitStack() as servers:
            if hosts:
                # stopped when this block ends, however it ends (SIGTERM is an exception here)
                servers.enter_context(clients.servers(hosts, fio, cwd, fio_remote=spec.fio))
                say("fio servers listening: " + ", ".join(str(h) for h in hosts))
            driver.workdir = placement.workdir
            if placement.workdir:
                driver.filled = {
                    k: v
                    for k, v in safety.read_marker(placement.workdir).items()
                    if v and (Path(placement.workdir) / k).is_file()
                }
                supported = safety.supports_o_direct(placement.workdir)
                direct, warning = safety.direct_fallback(supported, spec.direct, target)
                if warning:
                    say(warning)
                    driver.notes["direct_fallback"] = warning
                    items = [
                        dataclasses.replace(
                            i, jobs=tuple(dataclasses.replace(j, direct=direct) for j in i.jobs)
                        )
                        for i in items
                    ]
            if spec.mode == "curve":
                driver.curve(items)
            else:
                driver.workloads(items)
    except OutOfTime as exc:
        say(f"out of time: {exc}")
        code = EXIT_FIO
    except clients.ClientError as exc:
        say(f"fio servers: {exc}")
        code = EXIT_FIO
    except Terminated:
        say("terminated: stopping fio and removing the test files")
        code = EXIT_FIO
    finally:
        if spec.keep:
            say(f"keep: test files left in {placement.workdir or placement.filename}")
        else:
            removed = safety.cleanup(placement, created)
            say(f"removed {len(removed)} test file(s)/dir(s)")
    if driver.failures and code == EXIT_OK:
        code = EXIT_FIO
    return code


def space_problems(
    spec: DriverSpec,
    placement: safety.Placement,
    items: list[Item],
    hosts: Sequence[Host] = (),
) -> list[str]:
    """Free-space refusals: assay's files in the workdir (every host's, in a multi-client
    run), and the jobs' own new files, added up per file system."""
    problems = []
    jobs = all_jobs(items)
    if placement.workdir:
        sizes: dict[str, int] = {}
        for job in (j for j in jobs if not j.filename):
            for name in job_names(job, hosts):
                sizes[name] = max(sizes.get(name, 0), job.size or 0)
        if sizes:
            existing = safety.existing_files(placement.workdir)
            needed = sum(max(0, size - existing.get(name, 0)) for name, size in sizes.items())
            problem = safety.space_problem(
                needed,
                safety.free_bytes(placement.workdir),
                placement.workdir,
                detail=f"{len(sizes)} file(s) x {safety.human(max(sizes.values()))}",
            )
            if problem:
                problems.append(problem)
    new_files: dict[str, int] = {}
    for job in jobs:
        name = job.filename
        if name and name != placement.filename and not os.path.exists(name):
            new_files[name] = max(new_files.get(name, 0), job.size or 0)
    by_fs: dict[int, list[str]] = {}
    for name in new_files:
        by_fs.setdefault(_device_of(name), []).append(name)
    for names in by_fs.values():
        where = names[0] if len(names) == 1 else f"{os.path.dirname(names[0])} ({len(names)} files)"
        problem = safety.space_problem(
            sum(new_files[n] for n in names), safety.free_bytes(names[0]), where
        )
        if problem:
            problems.append(problem)
    return problems


def _device_of(path: str) -> int:
    """The file system (st_dev) that will hold ``path``: its nearest existing ancestor's."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p.stat().st_dev


if __name__ == "__main__":
    sys.exit(main())
