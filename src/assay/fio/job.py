"""A fio job, as data, and its job file text.

One ``FioJob`` is one ``[section]`` of a fio job file. Only options assay sets are modelled;
``extra`` carries any other fio option verbatim (name -> value) so nothing is dropped.
Sizes are bytes (ints) and rendered in fio's own syntax; fio reads a bare number as bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

RW = Literal["read", "write", "randread", "randwrite", "rw", "randrw", "readwrite", "trim"]


@dataclass
class FioJob:
    name: str
    rw: RW
    bs: int  # bytes
    size: int | None = None  # bytes per job (per file); None: the whole file/device
    filename: str | None = None  # one file or device (colon-separated list allowed by fio)
    directory: str | None = None  # or a directory in which fio creates its files
    iodepth: int = 1
    numjobs: int = 1
    rwmixread: int | None = None  # % reads, for rw/randrw
    direct: bool = True
    ioengine: str = "libaio"
    runtime: float | None = None  # seconds
    ramp_time: float | None = None  # seconds of warm-up excluded from the results
    time_based: bool = True
    rate_iops: int | None = None  # per job (fio applies it to each of numjobs)
    rate_process: Literal["linear", "poisson"] | None = None
    group_reporting: bool = True
    stonewall: bool = False  # wait for the previous job to finish (sequential jobs in one file)
    extra: dict[str, str] = field(default_factory=dict)

    def options(self) -> list[tuple[str, str | None]]:
        """(option, value) pairs in fio's syntax; value None is a flag option."""
        opts: list[tuple[str, str | None]] = [("rw", self.rw), ("bs", str(self.bs))]
        if self.size is not None:
            opts.append(("size", str(self.size)))
        if self.filename:
            opts.append(("filename", self.filename))
        if self.directory:
            opts.append(("directory", self.directory))
        opts += [
            ("iodepth", str(self.iodepth)),
            ("numjobs", str(self.numjobs)),
            ("direct", "1" if self.direct else "0"),
            ("ioengine", self.ioengine),
        ]
        if self.rwmixread is not None:
            opts.append(("rwmixread", str(self.rwmixread)))
        if self.runtime is not None:
            opts.append(("runtime", f"{self.runtime:g}"))
        if self.ramp_time:
            opts.append(("ramp_time", f"{self.ramp_time:g}"))
        if self.time_based:
            opts.append(("time_based", None))
        if self.rate_iops is not None:
            opts.append(("rate_iops", str(self.rate_iops)))
        if self.rate_process:
            opts.append(("rate_process", self.rate_process))
        if self.group_reporting:
            opts.append(("group_reporting", None))
        if self.stonewall:
            opts.append(("stonewall", None))
        opts += list(self.extra.items())
        return opts


def job_file(jobs: list[FioJob], global_options: dict[str, str] | None = None) -> str:
    """The text of a fio job file running ``jobs`` (in order when each has stonewall)."""
    lines: list[str] = []
    if global_options:
        lines.append("[global]")
        lines += [f"{k}={v}" if v != "" else k for k, v in global_options.items()]
        lines.append("")
    for job in jobs:
        lines.append(f"[{job.name}]")
        lines += [k if v is None else f"{k}={v}" for k, v in job.options()]
        lines.append("")
    return "\n".join(lines)
