"""Running fio: the job files, the fills, one measured point and its samples (side effects).

fio's own stdout never reaches ours: the driver's stdout is JSON Lines only; progress and
diagnostics go to stderr, prefixed ``fio-driver:``.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.drivers.fio import clients
from assay.drivers.fio.cells import cell_document, cell_entries, cells_of
from assay.drivers.fio.clients import entries_of
from assay.drivers.fio.curve import queue_params
from assay.drivers.fio.figures import PointFigures, load_document, point_figures, sample_objects
from assay.drivers.fio.files import fill_jobs, filled_ok, job_names, slug
from assay.drivers.fio.spec import SCRATCH, DriverSpec, Item
from assay.errors import AssayError
from assay.fio import safety
from assay.fio.hosts import Host, for_host
from assay.fio.job import FioJob, job_file
from assay.fio.target import write_marker
from assay.fio.workloads import needs_fill
from assay.inputfile import MAX_OUTPUT_BYTES, UnreadableFile, read_bounded, read_tail

PREFIX = "fio-driver:"
EXIT_OK, EXIT_FIO, EXIT_SPEC = 0, 1, 2
STDERR_TAIL = 15


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
class MeasuredPoint:
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
        try:  # bounded as an import of fio's output is
            text = read_bounded(output, MAX_OUTPUT_BYTES, "fio output", follow=False).decode(
                errors="replace"
            )
        except FileNotFoundError:
            text = ""
        except (OSError, UnreadableFile) as exc:
            raise FioFailed(f"{label}: cannot read fio's output: {exc}") from None

        def tail() -> str:
            return "\n".join(read_tail(errfile).splitlines()[-STDERR_TAIL:])

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
            write_marker(self.workdir, self.filled)

    def measure(
        self,
        item: Item,
        jobs: list[FioJob],
        label: str,
        extra: dict[str, Any],
        *,
        caps: Mapping[tuple[str, str | None], float] | None = None,
        maxes: Mapping[tuple[str, str | None], PointFigures] | None = None,
    ) -> MeasuredPoint:
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
                queue_params(members[0], rate_limited=caps is not None, expected=cell.expected)
            )
            text = result["text"] if len(cells) == 1 else cell_document(doc, mine, cell.workload)
            for obj in sample_objects(text, result["output"], params):
                emit(obj)
        total_key = cells[-1].key
        if total_key not in figures:
            raise FioFailed(f"{label}: fio's output has no entry for {item.name}")
        total = figures[total_key]
        lat = f"{total.latency_s * 1e3:.3f} ms" if total.latency_s else "?"
        say(f"{label}: {total.iops:.0f} IOPS, mean latency {lat}")
        return MeasuredPoint(total, figures)

    def base_params(self, jobs: Sequence[FioJob]) -> dict[str, Any]:
        target = self.spec.target if self.spec.target is not None else SCRATCH
        size = jobs[0].size if len(jobs) == 1 else max(j.size or 0 for j in jobs)
        out: dict[str, Any] = {"target": target, "size": size, **self.notes}
        if len(jobs) == 1 and jobs[0].filename and self.filename is None:
            out["filename"] = jobs[0].filename
        if self.hosts:
            out["client_count"] = len(self.hosts)
        return out


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
