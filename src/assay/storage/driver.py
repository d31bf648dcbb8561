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
``workloads``: each listed workload, then each custom job, as its own fio run; the fill first
when a run needs it (``assay.storage.workloads.needs_fill``).

``curve``: Vdbench's ``iorate=curve`` for each workload / custom job: an uncontrolled run
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
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from assay.analysis.models import InsufficientDataError, find_knee, littles_law_check
from assay.errors import AssayError
from assay.parsers.fio import merge_bins, ns_to_s, parse, percentiles_from_bins
from assay.storage import safety
from assay.storage.fiojob import FioJob, job_file
from assay.storage.workloads import (
    FILE_PREFIX,
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


class DriverSpec(BaseModel):
    """What one driver invocation does. The probe fills in every default; see probes/fio.py."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["workloads", "curve"]
    workloads: list[str]
    jobs: list[dict[str, Any]] = Field(default_factory=list)
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
    """One thing to run: a standard workload or a custom job, as its uncapped fio job."""

    name: str
    job: FioJob
    custom: bool = False


def items_of(spec: DriverSpec, directory: str | None, filename: str | None) -> list[Item]:
    """The standard workloads, then the custom jobs. Raises ValueError on a bad name/field."""
    settings = settings_of(spec)
    items = [
        Item(name, workload_job(get_workload(name), settings, directory=directory,
                                filename=filename))
        for name in spec.workloads
    ]  # fmt: skip
    for fields in spec.jobs:
        job = custom_job(fields, settings, directory=directory)
        if filename and not job.filename:
            job = dataclasses.replace(
                job,
                filename=filename,
                directory=None,
                extra={k: v for k, v in job.extra.items() if k != "filename_format"},
            )
        items.append(Item(job.name, job, custom=True))
    names = [i.name for i in items]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise ValueError(f"job names must be unique: {', '.join(dupes)} given twice")
    return items


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


def littles_params(
    fig: PointFigures, job: FioJob, *, rate_limited: bool, ioengine: str | None = None
) -> dict[str, Any]:
    """Little's law for one point. The flag is only raised on an uncontrolled run: a capped
    run keeps its queue partly empty on purpose."""
    engine = ioengine or job.ioengine
    expected = effective_iodepth(engine, job.iodepth) * job.numjobs
    out: dict[str, Any] = {"outstanding_expected": expected}
    if not fig.latency_s or fig.iops <= 0:
        return out
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


def filled_ok(job: FioJob, filled: Mapping[str, int]) -> bool:
    """Whether every file ``job`` uses was written end to end at its size or larger."""
    size = job.size or 0
    names = [job.filename] if job.filename else [f"{FILE_PREFIX}{n}" for n in range(job.numjobs)]
    return all(filled.get(str(n), -1) >= size for n in names)


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

    # -- running fio

    def remaining(self) -> float | None:
        return None if self.deadline is None else self.deadline - time.monotonic()

    def run(self, job: FioJob, label: str, *, timed: bool) -> dict[str, Any]:
        """Write the job file, run fio, return its parsed JSON document (and keep the text)."""
        self.counter += 1
        stem = f"{self.counter:02d}-{slug(label)}"
        jobfile, output, errfile = (self.cwd / f"{stem}{ext}" for ext in (".fio", ".json", ".err"))
        jobfile.write_text(job_file([job]))
        timeout = None
        if timed:
            timeout = (job.runtime or 0) + (job.ramp_time or 0) + max(30.0, job.runtime or 0)
        left = self.remaining()
        if left is not None:
            if timed and left < (job.runtime or 0) + (job.ramp_time or 0):
                raise OutOfTime(f"{label}: not started, {max(0.0, left):.0f} s left of the budget")
            timeout = left if timeout is None else min(timeout, left)
        argv = [self.fio, "--output-format=json+", f"--output={output.name}", jobfile.name]
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
        if code != 0 or not text.strip():
            tail = "\n".join(errfile.read_text(errors="replace").splitlines()[-STDERR_TAIL:])
            raise FioFailed(f"{label}: fio exited with {code}; its output ends:\n{tail}")
        doc = json.loads(text[text.index("{") :]) if "{" in text else {}
        errors = [e.get("error") for e in doc.get("jobs") or [] if e.get("error")]
        if errors:
            tail = "\n".join(errfile.read_text(errors="replace").splitlines()[-STDERR_TAIL:])
            raise FioFailed(f"{label}: fio reported error {errors[0]}:\n{tail}")
        return {"doc": doc, "text": text, "output": output.name}

    def fill_if_needed(self, job: FioJob) -> None:
        if not needs_fill(job.rw, job.rwmixread, filled_ok(job, self.filled)):
            return
        size = job.size or 0
        files = 1 if job.filename else job.numjobs
        fill = fill_job(
            size,
            files,
            directory=job.directory,
            filename=job.filename,
            bs=self.spec.fill_bs,
            ioengine=job.ioengine,
            direct=job.direct,
        )
        say(f"fill: writing {files} file(s) x {safety.human(size)} end to end")
        result = self.run(fill, "fill", timed=False)
        fig = point_figures(result["doc"])
        say(f"fill done: {fig.iops * self.spec.fill_bs / 2**20:.0f} MiB/s")
        names = [job.filename] if job.filename else [f"{FILE_PREFIX}{n}" for n in range(files)]
        for n in names:
            self.filled[str(n)] = size
        if self.workdir and not job.filename:
            safety.write_marker(self.workdir, self.filled)

    def measure(self, item: Item, job: FioJob, label: str, extra: dict[str, Any]) -> PointFigures:
        """One measured point: run, print its samples, return its totals."""
        result = self.run(job, label, timed=True)
        fig = point_figures(result["doc"])
        params: dict[str, Any] = {
            "workload": item.name,
            "fio_output": result["output"],
            **self.base_params(job),
            **extra,
        }
        params["point_iops"] = fig.iops
        if fig.latency_s is not None:
            params["point_latency_s"] = fig.latency_s
        if fig.p99_s is not None:
            params["point_p99_s"] = fig.p99_s
        if fig.p999_s is not None:
            params["point_p999_s"] = fig.p999_s
        params.update(littles_params(fig, job, rate_limited="target_iops" in extra))
        for obj in sample_objects(result["text"], result["output"], params):
            emit(obj)
        lat = f"{fig.latency_s * 1e3:.3f} ms" if fig.latency_s else "?"
        say(f"{label}: {fig.iops:.0f} IOPS, mean latency {lat}")
        return fig

    def base_params(self, job: FioJob) -> dict[str, Any]:
        target = self.spec.target if self.spec.target is not None else SCRATCH
        out: dict[str, Any] = {"target": target, "size": job.size, **self.notes}
        if job.filename and self.filename is None:
            out["filename"] = job.filename
        return out

    # -- modes

    def workloads(self, items: list[Item]) -> None:
        for item in items:
            try:
                self.fill_if_needed(item.job)
                self.measure(item, item.job, item.name, {"mode": "workloads"})
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

    def one_curve(self, item: Item) -> None:
        self.fill_if_needed(item.job)
        top = self.measure(item, item.job, f"{item.name} max", {"mode": "max"})
        if top.iops <= 0:
            raise FioFailed(f"{item.name}: the uncontrolled run did no I/O; no curve")
        points: list[tuple[int, PointFigures]] = []
        stopped = ""
        for pct, target in curve_targets(top.iops, self.spec.curve):
            capped = with_rate(item.job, target)
            extra = {
                "mode": "curve",
                "curve_pct": pct,
                # a float: derived from a measurement (the max run), so repetitions of a curve
                # whose max runs differ still fold together by curve_pct (stats.group_key)
                "target_iops": float(target),
                "max_iops": top.iops,
            }
            fig = self.measure(item, capped, f"{item.name} {pct}%", extra)
            points.append((pct, fig))
            bound = self.spec.max_latency_ms
            if bound and fig.latency_s and fig.latency_s * 1e3 > bound:
                stopped = (
                    f"stopped after {pct}%: mean latency {fig.latency_s * 1e3:.3f} ms "
                    f"> max_latency_ms {bound:g}"
                )
                say(stopped)
                break
        summary: dict[str, Any] = {
            "workload": item.name,
            "mode": "curve-summary",
            "curve_points": len(points),
            "max_iops": top.iops,
            # what identifies the curve's points (the parser's params of each fio run)
            "job": item.job.name,
            "rw": item.job.rw,
            "bs": item.job.bs,
            "numjobs": item.job.numjobs,
            "iodepth": item.job.iodepth,
            **self.base_params(item.job),
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

    created: list[str] = []  # custom jobs' own files that assay creates (removed afterwards)
    try:
        problems = space_problems(spec, placement, items)
        for job_file_path in (i.job.filename for i in items if i.job.filename):
            if job_file_path == placement.filename:
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
    driver = Driver(spec, fio, cwd, deadline, filename=placement.filename, notes=notes)
    try:
        safety.prepare(placement)
    except OSError as exc:  # e.g. the target's parent directory does not exist
        say(f"refused: cannot create {placement.workdir}: {exc.strerror}")
        return EXIT_SPEC
    code = EXIT_OK
    try:
        with sigterm_raises():
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
                    items = [Item(i.name, dataclasses.replace(i.job, direct=direct), i.custom)
                             for i in items]  # fmt: skip
            if spec.mode == "curve":
                driver.curve(items)
            else:
                driver.workloads(items)
    except OutOfTime as exc:
        say(f"out of time: {exc}")
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


def space_problems(spec: DriverSpec, placement: safety.Placement, items: list[Item]) -> list[str]:
    """Free-space refusals: assay's files in the workdir, and each custom job's new file."""
    problems = []
    if placement.workdir:
        in_dir = [i.job for i in items if not i.job.filename]
        if in_dir:
            files = max(j.numjobs for j in in_dir)
            size = max(j.size or 0 for j in in_dir)
            existing = safety.existing_files(placement.workdir)
            needed = safety.space_needed(size, files, existing)
            problem = safety.space_problem(
                needed,
                safety.free_bytes(placement.workdir),
                placement.workdir,
                detail=f"{files} file(s) x {safety.human(size)}",
            )
            if problem:
                problems.append(problem)
    for job in (i.job for i in items if i.job.filename and i.job.filename != placement.filename):
        if not os.path.exists(job.filename or ""):
            problem = safety.space_problem(
                job.size or 0, safety.free_bytes(job.filename or "."), job.filename or ""
            )
            if problem:
                problems.append(problem)
    return problems


if __name__ == "__main__":
    sys.exit(main())
