"""The six standard storage workloads, the fill (pre-conditioning) step, and their fio jobs.

The six are the Azure NetApp Files benchmark page's Vdbench workloads (seed 004): 8 KiB random
read and write, 64 KiB sequential read and write, and 50/50 mixes of each. Their names are kept
stable because reports, stored runs and suites refer to them. Each becomes one ``FioJob``:

* direct I/O (``direct=1``, Vdbench's ``openflags=o_direct``), so the page cache is measured
  only where the target is a network file system that ignores it;
* ``ramp_time``: fio runs the workload that long before it starts counting (fio HOWTO,
  ``ramp_time``: "run the specified workload for this amount of time before logging any
  performance numbers"), which is Vdbench's ``warmup=``;
* ``time_based`` with ``runtime``: the run lasts ``runtime`` seconds however fast the target is,
  wrapping around the file (Vdbench's ``elapsed=``);
* ``lat_percentiles=1``: fio then reports percentiles (and json+ bins) for the total latency
  (``lat``, submission + completion) as well as for the completion latency. Total latency is
  Vdbench's response time, the latency of a response-time curve and the W of Little's law.

Every job reads and writes the same files, one per fio thread: ``filename_format`` names the
file of clone ``$jobnum`` ``assay-fio-<n>``, so thread n of every workload uses the file that the
fill wrote, and ``assay.fio.safety`` knows the files as assay's by their names.

The fill is Vdbench's ``FillWrite`` (``seekpct=eof``): one sequential pass writing the whole of
each file. A read of a never-written region of a sparse file returns zeros without touching
the media, and fio's own lay-out of a new file is buffered, so reads are only meaningful once
the files were written end to end. Random writes into a sparse file measure block allocation
rather than overwrites, so they are preceded by the fill too; a sequential write is its own fill.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from dataclasses import dataclass
from typing import Any

from assay.fio.job import COMMAND_OPTIONS, FILE_OPTIONS, PATH_OPTIONS, RW, FioJob, fio_path

KiB = 1024
MiB = 1024 * KiB

FILE_PREFIX = "assay-fio-"
# fio expands $jobnum per clone (fio HOWTO, "filename_format"): clone n of any workload uses
# the file thread n of the fill wrote.
FILENAME_FORMAT = FILE_PREFIX + "$jobnum"

FILL_BS_DEFAULT = 1 * MiB
FILL_BS_RANGE = (64 * KiB, 1 * MiB)  # large sequential writes, as Vdbench's FillWrite (64k)
FILL_IODEPTH = 4

SYNC_ENGINES = frozenset({"sync", "psync", "vsync", "pvsync", "pvsync2", "mmap"})
READS = frozenset({"read", "randread", "rw", "randrw", "readwrite"})
WRITES = frozenset({"write", "randwrite", "rw", "randrw", "readwrite"})
RANDOM = frozenset({"randread", "randwrite", "randrw"})


@dataclass(frozen=True)
class Workload:
    """One named I/O pattern, engine-independent."""

    name: str
    rw: RW
    bs: int  # bytes
    rwmixread: int | None = None  # % reads of a mix
    vdbench: str = ""  # the seed's wd= line this reproduces, for the reader

    @property
    def reads(self) -> bool:
        return self.rw in READS and self.rwmixread != 0

    @property
    def writes(self) -> bool:
        return self.rw in WRITES and self.rwmixread != 100

    @property
    def random(self) -> bool:
        return self.rw in RANDOM


STANDARD: tuple[Workload, ...] = (
    Workload("randread-8k", "randread", 8 * KiB, None, "rdpct=100,seekpct=100,xfersize=8k"),
    Workload("randwrite-8k", "randwrite", 8 * KiB, None, "rdpct=0,seekpct=100,xfersize=8k"),
    Workload("seqread-64k", "read", 64 * KiB, None, "rdpct=100,seekpct=0,xfersize=64k"),
    Workload("seqwrite-64k", "write", 64 * KiB, None, "rdpct=0,seekpct=0,xfersize=64k"),
    Workload("seqmix-64k", "rw", 64 * KiB, 50, "rdpct=50,seekpct=0,xfersize=64k"),
    Workload("randmix-8k", "randrw", 8 * KiB, 50, "rdpct=50,seekpct=100,xfersize=8k"),
)
WORKLOADS: dict[str, Workload] = {w.name: w for w in STANDARD}
NAMES: tuple[str, ...] = tuple(WORKLOADS)


def get_workload(name: str) -> Workload:
    try:
        return WORKLOADS[name]
    except KeyError:
        raise ValueError(
            f"unknown workload {name!r}; the standard ones are {', '.join(NAMES)}"
        ) from None


@dataclass(frozen=True)
class RunSettings:
    """What every fio run of one driver invocation shares."""

    size: int  # bytes per file (one file per fio thread)
    runtime: float  # seconds measured
    ramp_time: float  # seconds of warm-up before fio starts counting
    numjobs: int = 1
    iodepth: int = 1
    ioengine: str = "libaio"
    direct: bool = True
    bs: int | None = None  # overrides each workload's own block size


def effective_iodepth(ioengine: str, iodepth: int) -> int:
    """I/Os one fio thread can have outstanding: a synchronous engine waits for each I/O
    before it issues the next, whatever iodepth says (fio HOWTO, ``iodepth``: "Note that
    increasing iodepth beyond 1 will not affect synchronous ioengines")."""
    return 1 if ioengine in SYNC_ENGINES else max(1, iodepth)


def placement(filename: str | None) -> dict[str, str]:
    """How a job names its files: its own ``filename`` (a device or a user's file, allowed by
    the safety checks) as is, else assay's ``assay-fio-<n>``, one per thread."""
    return {} if filename else {"filename_format": FILENAME_FORMAT}


def workload_job(
    workload: Workload,
    settings: RunSettings,
    *,
    directory: str | None,
    filename: str | None = None,
) -> FioJob:
    """The fio job of one standard workload, uncapped (``with_rate`` caps it). ``directory``
    and ``filename`` are paths (fio reads each as one, ``fio_path``)."""
    return FioJob(
        name=workload.name,
        rw=workload.rw,
        bs=settings.bs or workload.bs,
        size=settings.size,
        filename=fio_path(filename) if filename else None,
        directory=None if filename or not directory else fio_path(directory),
        iodepth=settings.iodepth,
        numjobs=settings.numjobs,
        rwmixread=workload.rwmixread,
        direct=settings.direct,
        ioengine=settings.ioengine,
        runtime=settings.runtime,
        ramp_time=settings.ramp_time or None,
        time_based=True,
        group_reporting=True,
        extra={**placement(filename), "lat_percentiles": "1"},
    )


def fill_job(
    size: int,
    files: int,
    *,
    directory: str | None,
    filename: str | None = None,
    bs: int = FILL_BS_DEFAULT,
    ioengine: str = "libaio",
    direct: bool = True,
) -> FioJob:
    """One sequential pass writing ``size`` bytes of each of ``files`` files (one per thread).

    Not time based: it ends when the files are written end to end. ``end_fsync`` makes the data
    durable before the first measured run, so no write-back of the fill overlaps it.
    ``directory`` and ``filename`` are in fio's syntax, as the jobs it fills hold them.
    """
    low, high = FILL_BS_RANGE
    if not low <= bs <= high:
        raise ValueError(f"fill block size {bs} B is outside {low}..{high} B")
    return FioJob(
        name="fill",
        rw="write",
        bs=bs,
        size=size,
        filename=filename,
        directory=None if filename else directory,
        iodepth=FILL_IODEPTH,
        numjobs=files,
        direct=direct,
        ioengine=ioengine,
        runtime=None,
        ramp_time=None,
        time_based=False,
        group_reporting=True,
        extra={**placement(filename), "end_fsync": "1"},
    )


def needs_fill(rw: str, rwmixread: int | None, filled: bool) -> bool:
    """Whether a run must be preceded by the fill: anything but a pure sequential write on
    files not yet written end to end (see the module docstring)."""
    if filled:
        return False
    pure_sequential_write = rw == "write" or (rw in ("rw", "readwrite") and rwmixread == 0)
    return not pure_sequential_write


def rate_per_job(total_iops: float, numjobs: int, rw: str, rwmixread: int | None) -> int | str:
    """fio ``rate_iops`` per thread for a total of ``total_iops`` over ``numjobs`` threads.

    fio applies ``rate_iops`` to each thread ("numjobs" clones each get the option), and a
    single value caps *each direction* separately (``rate_iops=int[,int][,int]``, read, write,
    trim; one value is used for all), so a 50/50 mix at ``rate_iops=N`` does N reads and N writes.
    A mix therefore gets ``"reads,writes"`` split by ``rwmixread``. fio reads 0 as "no cap", so
    every cap is at least 1.
    """
    per_job = max(1.0, total_iops / max(1, numjobs))
    if rw in ("rw", "randrw", "readwrite"):
        mix = 50 if rwmixread is None else rwmixread
        reads = max(1, round(per_job * mix / 100))
        writes = max(1, round(per_job * (100 - mix) / 100))
        return f"{reads},{writes}"
    return max(1, round(per_job))


CUSTOM_REQUIRED = ("name", "rw", "bs")
# Fields a custom job may not set: the probe's ``target`` says where assay's files go. A file or
# device of the user's own is named by ``filename`` (and checked by assay.fio.safety); the fio
# options that name files are refused in ``extra``, where no safety check would see them.
CUSTOM_FORBIDDEN = frozenset({"directory"})
YEAR_S = 366 * 86400.0
# A custom job's numbers: (whole, lowest, highest) -- a range a person could mean (issue 28:
# ``bs = inf`` ended in an OverflowError, ``iodepth = inf`` reached the driver as Infinity).
CUSTOM_NUMBERS: dict[str, tuple[bool, float, float]] = {
    "bs": (True, 1, 2**31),  # bytes
    "size": (True, 1, 2**63 - 1),  # bytes per job
    "iodepth": (True, 1, 65536),
    "numjobs": (True, 1, 65536),
    "rwmixread": (True, 0, 100),  # %
    "rate_iops": (True, 1, 10**12),
    "runtime": (False, 1e-3, YEAR_S),  # s
    "ramp_time": (False, 0, YEAR_S),  # s
}


def _shown(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def number_problem(key: str, value: Any) -> str | None:
    """Why a custom job's ``key = value`` is not a number of its range, or None."""
    whole, low, high = CUSTOM_NUMBERS[key]
    if value is None and key in ("size", "runtime", "ramp_time", "rate_iops", "rwmixread"):
        return None  # not set: the probe's settings (or fio's default) apply
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{key}={value!r} is not a number"
    if not math.isfinite(value) or not low <= value <= high:
        return f"{key}={value!r} is not within {_shown(low)}..{_shown(high)}"
    if whole and value != int(value):
        return f"{key}={value!r} is not a whole number"
    return None


def custom_job(fields: dict[str, Any], settings: RunSettings, *, directory: str | None) -> FioJob:
    """A FioJob from a custom job dict (FioJob field names), the run's settings filling in
    what it does not say: size, runtime, ramp_time, numjobs, iodepth, ioengine, direct.

    A job without ``filename`` gets assay's files in ``directory`` like a standard workload.
    Raises ValueError naming a missing or unknown field.
    """
    known = {f.name for f in dataclasses.fields(FioJob)}
    missing = [k for k in CUSTOM_REQUIRED if k not in fields]
    unknown = sorted(set(fields) - known)
    forbidden = sorted(set(fields) & CUSTOM_FORBIDDEN)
    label = fields.get("name", "?")
    if missing:
        raise ValueError(f"custom job {label!r}: missing {', '.join(missing)}")
    if type(fields["name"]) is not str or not fields["name"].strip():  # TOML: name = 5
        raise ValueError(f'custom job {label!r}: its name is not text (name = "...")')
    if unknown:
        raise ValueError(
            f"custom job {label!r}: unknown field(s) {', '.join(unknown)}; "
            f"FioJob takes {', '.join(sorted(known))} (other fio options go in 'extra')"
        )
    if forbidden:
        raise ValueError(
            f"custom job {label!r}: {', '.join(forbidden)} is set by the probe's 'target'"
        )
    for key in sorted(set(fields) & set(CUSTOM_NUMBERS)):
        if problem := number_problem(key, fields[key]):
            raise ValueError(f"custom job {label!r}: {problem}")
    patterns = typing.get_args(RW)
    if fields["rw"] not in patterns:
        raise ValueError(
            f"custom job {label!r}: rw={fields['rw']!r} is not one of {', '.join(patterns)}"
        )
    base: dict[str, Any] = {
        "size": settings.size,
        "runtime": settings.runtime,
        "ramp_time": settings.ramp_time or None,
        "numjobs": settings.numjobs,
        "iodepth": settings.iodepth,
        "ioengine": settings.ioengine,
        "direct": settings.direct,
    }
    merged = {**base, **fields}
    merged["extra"] = {str(k): str(v) for k, v in dict(fields.get("extra") or {}).items()}
    naming = sorted(set(merged["extra"]) & (FILE_OPTIONS | PATH_OPTIONS | COMMAND_OPTIONS))
    if naming:
        raise ValueError(
            f"custom job {label!r}: extra sets {', '.join(naming)}, which names files fio "
            "writes or a program it runs; use the job's filename (checked by the safety rules) "
            "or the probe's target"
        )
    merged["bs"] = int(merged["bs"])
    if not merged.get("filename"):
        merged["directory"] = fio_path(directory) if directory else None
        merged["extra"] = {**placement(None), **merged["extra"]}
    merged["extra"].setdefault("lat_percentiles", "1")
    return FioJob(**merged)


def with_rate(job: FioJob, total_iops: float) -> FioJob:
    """A copy of ``job`` capped at ``total_iops`` over all its threads, Poisson arrivals."""
    rate = rate_per_job(total_iops, job.numjobs, job.rw, job.rwmixread)
    extra = {k: v for k, v in job.extra.items() if k not in ("rate_iops", "rate_process")}
    if isinstance(rate, int):
        return dataclasses.replace(job, rate_iops=rate, rate_process="poisson", extra=extra)
    # FioJob.rate_iops is one int; fio's read,write form goes verbatim
    return dataclasses.replace(
        job, rate_iops=None, rate_process="poisson", extra={**extra, "rate_iops": rate}
    )
