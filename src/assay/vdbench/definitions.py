"""Vdbench definitions as data: every ``hd=``/``sd=``/``wd=``/``rd=`` with the file and line it
came from, and a run translated into fio jobs. Defaults are Vdbench's own (the ``*_entry.java``
field named beside each).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from assay.fio.job import FioJob, fio_names, job_file

# ---------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Where:
    """A place in a parameter file: the file as read and a 1-based line number."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class ParamElement:
    """One element of a parameter's value. Only unquoted elements of a parenthesised list
    can be ranges (Vdb_scan.parms_split splits at '-' only after a '(')."""

    text: str
    quoted: bool = False
    listed: bool = False  # inside (...)


@dataclass(frozen=True)
class Param:
    """One ``keyword=value`` as written, and the canonical keyword it stands for."""

    keyword: str  # as written, lower case (maybe abbreviated)
    name: str  # canonical keyword ("xfersize" for "xf")
    value: str  # value text as written
    items: tuple[ParamElement, ...]
    where: Where

    def __str__(self) -> str:
        return f"{self.keyword}={self.value}"


@dataclass
class HostDef:
    """``hd=`` (guide 1.12, Host Definition): a host Vdbench starts a slave on."""

    name: str
    where: Where
    system: str | None = None  # host name or address; the label when absent
    user: str | None = None
    shell: str | None = None  # "rsh", "ssh" or "vdbench"
    jvms: int | None = None
    vdbench: str | None = None  # Vdbench's directory on that host
    clients: int | None = None
    params: list[Param] = field(default_factory=list)


@dataclass
class StorageDef:
    """``sd=`` (guide 1.13, Storage Definition): one LUN or file."""

    name: str
    where: Where
    lun: str | None = None  # as written in the file
    target: str | None = None  # the lun after lun_map: what fio opens
    size: int | None = None  # bytes
    threads: int = 8  # SD_entry.java: "int threads = 8"
    hosts: tuple[str, ...] = ("*",)
    openflags: tuple[str, ...] = ()
    offset: int | None = None
    align: int | None = None
    params: list[Param] = field(default_factory=list)


Seek = float | Literal["eof"]


@dataclass
class WorkloadDef:
    """``wd=`` (guide 1.14, Workload Definition)."""

    name: str
    where: Where
    sd_names: tuple[str, ...] = ()
    xfersize: tuple[int, ...] = (4096,)  # WD_entry.java: "xf_table = {4096}"
    rdpct: int = 100  # WD_entry.java: "readpct = 100"
    seekpct: Seek = 100.0  # WD_entry.java: "seekpct = 100" (random)
    hosts: tuple[str, ...] = ("*",)
    openflags: tuple[str, ...] = ()
    params: list[Param] = field(default_factory=list)


@dataclass(frozen=True)
class ForLoop:
    """A ``forxxx=`` list of an RD (guide 1.15): one run per value, first loop outermost."""

    name: str  # "xfersize", "threads", "rdpct", "seekpct", "iorate", "compratio", ...
    values: tuple[float | str, ...]
    where: Where


IoRate = Literal["max", "curve"] | float


@dataclass
class RunDef:
    """``rd=`` (guide 1.15, Run Definition), before its for-loops are expanded."""

    name: str
    where: Where
    wd_names: tuple[str, ...] = ()
    sd_names: tuple[str, ...] | None = None  # rd=...,sd= overrides the WDs' SDs
    iorate: IoRate | None = None
    curve: tuple[float, ...] | None = None
    stopcurve: float | None = None  # ms
    elapsed: float = 30.0  # RD_entry.java: "elapsed = 30"
    interval: float | None = None
    warmup: float = 0.0
    for_loops: list[ForLoop] = field(default_factory=list)
    openflags: tuple[str, ...] = ()
    distribution: str = "exponential"  # RD_entry.java: "0: exponential" is the default
    maxdata: float | None = None  # bytes, or a multiple of the LUN size when < 100
    fwd_names: tuple[str, ...] = ()
    params: list[Param] = field(default_factory=list)


@dataclass(frozen=True)
class Untranslated:
    """Something in the parameter file that the fio jobs do not do, and why."""

    item: str
    line: int
    reason: str
    file: str = ""


@dataclass
class VdbenchConfig:
    path: str
    general: list[Param] = field(default_factory=list)
    hosts: list[HostDef] = field(default_factory=list)
    storage: list[StorageDef] = field(default_factory=list)
    workloads: list[WorkloadDef] = field(default_factory=list)
    runs: list[RunDef] = field(default_factory=list)
    skipped: list[Untranslated] = field(default_factory=list)  # fsd/fwd/rg definitions
    files: list[str] = field(default_factory=list)  # every file read, includes too


@dataclass
class TranslatedRun:
    """One Vdbench run (an RD for one combination of its for-loop values) as fio jobs.

    The jobs run together (Vdbench drives all SDs of a run at once); runs run one after the
    other. ``mode == "curve"``: run the jobs uncontrolled first, then at each ``curve``
    percentage of the IOPS measured (Vdbench ``iorate=curve``); the caller sets ``rate_iops``.
    """

    name: str
    rd: str
    jobs: list[FioJob]
    mode: Literal["max", "curve", "rate"]
    curve: list[int] | None
    source_line: int
    source_file: str
    for_values: dict[str, float | str] = field(default_factory=dict)
    iorate: float | None = None  # total requested for mode "rate"
    stopcurve_ms: float | None = None
    interval: float | None = None
    hosts: dict[str, str] = field(default_factory=dict)  # job name -> Vdbench host label

    def job_file(self) -> str:
        return job_file(self.jobs)


@dataclass
class Translation:
    runs: list[TranslatedRun]
    untranslated: list[Untranslated]

    def targets(self) -> list[str]:
        """Every file or device the jobs open, for a safety check before running."""
        names = {
            name
            for run in self.runs
            for job in run.jobs
            if job.filename
            for name in fio_names(job.filename)
        }
        return sorted(names)


LunMap = Mapping[str, str] | Callable[[str], str]
# For_loop.for_add_curve: "rtable = {10, 50, 70, 80, 90, 100}" when curve= is not given
DEFAULT_CURVE = (10, 50, 70, 80, 90, 100)
ThreadsAs = Literal["auto", "iodepth", "numjobs"]
