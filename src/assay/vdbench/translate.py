"""Vdbench run definitions -> fio jobs doing the same I/O: ``translate(config)``."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Literal

from assay.errors import ParseError
from assay.fio.job import RW, FioJob, fio_path
from assay.vdbench.definitions import (
    DEFAULT_CURVE,
    IoRate,
    RunDef,
    Seek,
    StorageDef,
    ThreadsAs,
    TranslatedRun,
    Translation,
    VdbenchConfig,
    WorkloadDef,
)
from assay.vdbench.keywords import OPENFLAGS
from assay.vdbench.notes import Notes, note_static
from assay.vdbench.syntax import MAX_VALUES as MAX_JOBS
from assay.vdbench.syntax import wildcard_match

# ---------------------------------------------------------------------------- translating


def translate(
    config: VdbenchConfig,
    *,
    threads_as: ThreadsAs = "auto",
    elapsed: float | None = None,
    warmup: float | None = None,
    size: int | None = None,
) -> Translation:
    """fio jobs doing the I/O of each run definition, for each combination of its for-loops.

    Decisions (each says where Vdbench defines the behaviour):

    * One fio job per (host, workload, SD): Vdbench drives every SD of a workload at once,
      from every host the SD is defined for (``sd=...,host=``; guide 1.13).
    * ``threads`` is "the maximum number of concurrent outstanding I/Os" of an SD (guide
      1.13); all threads of an SD share one I/O stream, so a sequential SD stays one
      sequential stream. ``threads_as="iodepth"`` keeps exactly that: one fio job with
      ``ioengine=libaio`` and ``iodepth=threads``. ``"numjobs"`` uses ``numjobs=threads``
      synchronous ``psync`` jobs (Vdbench's own model: one blocking thread per outstanding
      I/O), but each fio clone has its own sequential stream. ``"auto"`` (default) picks
      iodepth when the I/O is direct (O_DIRECT makes libaio really asynchronous) and numjobs
      for buffered I/O, where libaio would block and iodepth would mean nothing. Either way
      the concurrency, the Little's-law N, is ``threads``.
    * ``rdpct`` -> ``rw`` (read/write/rw, rand* when random) and ``rwmixread``;
      ``seekpct`` 0 sequential, 100 random, n in between ``percentage_random=n``, ``eof``
      sequential until the end of the SD, then stop (no ``time_based``).
    * ``xfersize`` -> ``bs``; a distribution -> ``bssplit``; (min,max,align) -> ``bsrange``.
    * ``elapsed`` includes Vdbench's ``warmup`` (the warm-up intervals are only left out of
      the averages), so ``ramp_time = warmup`` and ``runtime = elapsed - warmup``: the same
      wall time and the same measured window. ``elapsed``/``warmup`` here override every RD,
      like Vdbench's ``-e``/``-w`` execution parameters.
    * ``openflags=o_direct`` (or ``directio``) -> ``direct=1``, ``o_sync`` -> ``sync=sync``,
      ``o_dsync`` -> ``sync=dsync``; RD flags win over WD and SD flags (SD_entry.openOneSd).
    * ``iorate=N`` is the total for the run: ``rate_iops = N / (jobs x numjobs)`` per fio
      job, with Poisson arrivals (Vdbench's default ``distribution=exponential``),
      ``linear`` for ``deterministic``. ``iorate=curve``: mode "curve" and the percentages
      (default 10,50,70,80,90,100, For_loop.for_add_curve). ``maxdata`` -> ``io_size``.
    * ``size`` overrides every SD's ``size=`` (for a small local run).
    """
    out: list[TranslatedRun] = []
    notes = Notes()
    note_static(config, notes)
    hosts = [h.name for h in config.hosts] or ["localhost"]
    for rd in config.runs:
        if rd.fwd_names:
            notes.add(
                f"rd={rd.name},fwd=...", rd.where, "file system runs (fwd=) are not translated"
            )
            continue
        wds = _workloads_for(rd, config)
        combos = _combinations(rd, MAX_JOBS - len(out))
        for values in combos:
            out.append(
                _translate_run(
                    rd, wds, values, len(combos) > 1, config, hosts, threads_as,
                    elapsed, warmup, size, notes,
                )
            )  # fmt: skip
    return Translation(runs=out, untranslated=notes.items)


def _workloads_for(rd: RunDef, config: VdbenchConfig) -> list[WorkloadDef]:
    if not rd.wd_names:
        raise ParseError(f"rd={rd.name} has no wd=", source=rd.where.file, line=rd.where.line)
    found: list[WorkloadDef] = []
    for name in rd.wd_names:
        matches = [wd for wd in config.workloads if wildcard_match(name, wd.name)]
        if not matches:
            raise ParseError(
                f"could not find wd={name} for rd={rd.name}",
                source=rd.where.file,
                line=rd.where.line,
            )
        found += [wd for wd in matches if wd not in found]
    return found


def _combinations(rd: RunDef, limit: int) -> list[dict[str, float | str]]:
    """For_loop.for_get: nested loops, the first defined outermost; more than ``limit``
    combinations (each a run of at least one job) are refused, counted before any is made."""
    loops = rd.for_loops
    if not loops:
        return [{}]
    n = math.prod(len(loop.values) for loop in loops)
    if n > limit:
        raise ParseError(
            f"rd={rd.name}: its for-loops make {n:,} runs, more than {MAX_JOBS} jobs of a "
            "plan (with the runs before it)",
            source=rd.where.file,
            line=rd.where.line,
        )
    return [
        {loop.name: value for loop, value in zip(loops, combo, strict=True)}
        for combo in itertools.product(*(loop.values for loop in loops))
    ]


def _translate_run(
    rd: RunDef,
    wds: list[WorkloadDef],
    values: dict[str, float | str],
    many: bool,
    config: VdbenchConfig,
    hosts: list[str],
    threads_as: ThreadsAs,
    elapsed: float | None,
    warmup: float | None,
    size: int | None,
    notes: Notes,
) -> TranslatedRun:
    streams: list[tuple[str, WorkloadDef, StorageDef]] = []
    for wd in wds:
        sd_names = rd.sd_names if rd.sd_names is not None else wd.sd_names
        wd_hosts = [h for h in hosts if any(wildcard_match(p, h) for p in wd.hosts)]
        for sd_name in sd_names:
            sds = [sd for sd in config.storage if wildcard_match(sd_name, sd.name)]
            if not sds:
                raise ParseError(
                    f"could not find sd={sd_name} for wd={wd.name}, rd={rd.name}",
                    source=rd.where.file,
                    line=rd.where.line,
                )
            for sd in sds:
                for host in wd_hosts:
                    if any(wildcard_match(p, host) for p in sd.hosts):
                        streams.append((host, wd, sd))
    if not streams:
        raise ParseError(
            f"rd={rd.name}: no SD is defined on the hosts of its workloads",
            source=rd.where.file,
            line=rd.where.line,
        )
    per_sd: dict[str, int] = {}
    for _, _, sd in streams:
        per_sd[sd.name] = per_sd.get(sd.name, 0) + 1
    wd_per_sd: dict[str, set[str]] = {}
    for _, wd, sd in streams:
        wd_per_sd.setdefault(sd.name, set()).add(wd.name)
    for sd_name, wd_names in wd_per_sd.items():
        if len(wd_names) > 1:
            notes.add(
                f"rd={rd.name}: sd={sd_name} shared by wd={','.join(sorted(wd_names))}",
                rd.where,
                "Vdbench splits an SD's threads between its workloads by skew; "
                "each fio job gets the SD's full thread count",
            )

    total_elapsed = elapsed if elapsed is not None else rd.elapsed
    ramp = warmup if warmup is not None else rd.warmup
    runtime = total_elapsed - ramp if total_elapsed > ramp else total_elapsed

    iorate: IoRate | None = rd.iorate
    if "iorate" in values:
        iorate = float(values["iorate"])
    if iorate is None:
        raise ParseError(
            f"rd={rd.name} has no iorate= (Vdbench: 'iorate= parameter is missing')",
            source=rd.where.file,
            line=rd.where.line,
        )
    mode: Literal["max", "curve", "rate"] = (
        "curve" if iorate == "curve" else "max" if iorate == "max" else "rate"
    )
    rate_process: Literal["linear", "poisson"] = (
        "linear" if rd.distribution.startswith("det") else "poisson"
    )

    jobs: list[FioJob] = []
    job_hosts: dict[str, str] = {}
    for host, wd, sd in streams:
        name = f"{wd.name}.{sd.name}" if per_sd[sd.name] == 1 else f"{host}.{wd.name}.{sd.name}"
        job = _job(name, rd, wd, sd, values, threads_as, runtime, ramp, size)
        if mode == "curve":
            job = replace(job, rate_process=rate_process)
        jobs.append(job)
        job_hosts[name] = host
    if mode == "rate":
        n = sum(job.numjobs for job in jobs)
        per_job = max(1, round(float(iorate) / n))
        jobs = [replace(job, rate_iops=per_job, rate_process=rate_process) for job in jobs]

    label = rd.name
    if many:
        label += " (" + " ".join(f"{k}={_show(k, v)}" for k, v in values.items()) + ")"
    return TranslatedRun(
        name=label,
        rd=rd.name,
        jobs=jobs,
        mode=mode,
        curve=[int(p) for p in (rd.curve or DEFAULT_CURVE)] if mode == "curve" else None,
        source_line=rd.where.line,
        source_file=rd.where.file,
        for_values=dict(values),
        iorate=float(iorate) if mode == "rate" else None,
        stopcurve_ms=rd.stopcurve,
        interval=rd.interval,
        hosts=job_hosts,
    )


def _show(name: str, value: float | str) -> str:
    if isinstance(value, str):
        return value
    if name == "xfersize" and value >= 1024 and value % 1024 == 0:
        return f"{int(value) // 1024}k"
    return f"{value:g}"


def _job(
    name: str,
    rd: RunDef,
    wd: WorkloadDef,
    sd: StorageDef,
    values: dict[str, float | str],
    threads_as: ThreadsAs,
    runtime: float,
    ramp: float,
    size: int | None,
) -> FioJob:
    rdpct = int(values.get("rdpct", wd.rdpct))
    seek: Seek = values.get("seekpct", wd.seekpct)  # type: ignore[assignment]
    xfer = (int(values["xfersize"]),) if "xfersize" in values else wd.xfersize
    threads = int(values.get("threads", sd.threads))
    threads = max(threads, 1)  # For_loop.useForOverrides: "minimum of 1"

    flags = rd.openflags or wd.openflags or sd.openflags
    direct = any(OPENFLAGS.get(f) == "direct" for f in flags)
    extra: dict[str, str] = {}
    for flag in flags:
        if OPENFLAGS.get(flag) in ("sync", "dsync"):
            extra["sync"] = OPENFLAGS[flag]

    random = seek != "eof" and float(seek) > 0
    if rdpct >= 100:
        rw: RW = "randread" if random else "read"
        mix = None
    elif rdpct <= 0:
        rw = "randwrite" if random else "write"
        mix = None
    else:
        rw = "randrw" if random else "rw"
        mix = rdpct
    if random and float(seek) < 100:
        extra["percentage_random"] = f"{float(seek):g}"

    if len(xfer) == 1:
        bs = xfer[0]
    elif len(xfer) == 3:
        bs = xfer[0]
        extra["bsrange"] = f"{xfer[0]}-{xfer[1]}"
    else:
        bs = xfer[0]
        extra["bssplit"] = ":".join(
            f"{s}/{int(p)}" for s, p in zip(xfer[::2], xfer[1::2], strict=True)
        )

    # one reporting group per job: fio's group_reporting then merges only this job's numjobs
    # clones, so each SD keeps its own figures (fio HOWTO, "new_group")
    extra["new_group"] = "1"
    if sd.offset:
        extra["offset"] = str(sd.offset)
    if sd.align:
        extra["blockalign"] = str(sd.align)

    time_based = seek != "eof"
    if rd.maxdata is not None:
        lun_size = size if size is not None else sd.size
        total = rd.maxdata if rd.maxdata >= 100 or lun_size is None else rd.maxdata * lun_size
        extra["io_size"] = str(math.ceil(total))
        time_based = False

    use_iodepth = threads_as == "iodepth" or (threads_as == "auto" and direct)
    return FioJob(
        name=name,
        rw=rw,
        bs=bs,
        size=size if size is not None else sd.size,
        filename=fio_path(sd.target) if sd.target else None,
        iodepth=threads if use_iodepth else 1,
        numjobs=1 if use_iodepth else threads,
        rwmixread=mix,
        direct=direct,
        ioengine="libaio" if use_iodepth else "psync",
        runtime=runtime,
        ramp_time=ramp or None,
        time_based=time_based,
        extra=extra,
    )
