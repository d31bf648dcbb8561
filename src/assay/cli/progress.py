"""Progress of ``assay run`` while it runs: which job, how long it has run, how long it should.

On a terminal a live, transient rich display: the run's bar (jobs done of all) and the job in
flight, elapsed against expected. Elsewhere (a batch log, a pipe) plain lines: a job's start,
a "running" line every ``ASSAY_PROGRESS_INTERVAL`` seconds (default 30) and its end, so a log
shows that a long job is alive. The expected duration is the probe's estimate where it has one,
else the job's timeout, and each line says which (``assay.execute.expected_duration``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from assay.errors import AssayError
from assay.run.execute import Expected, expected_duration
from assay.textutil import terminal

if TYPE_CHECKING:
    from assay.model import Job, JobResult

INTERVAL_ENV = "ASSAY_PROGRESS_INTERVAL"
DEFAULT_INTERVAL_S = 30.0


def interval_s() -> float:
    """Seconds between plain "running" lines (``ASSAY_PROGRESS_INTERVAL``, default 30)."""
    raw = os.environ.get(INTERVAL_ENV, "").strip()
    if not raw:
        return DEFAULT_INTERVAL_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (0 < value < float("inf")):
        raise AssayError(f"{INTERVAL_ENV}={raw!r}: expected seconds > 0, e.g. 30")
    return value


def clock(seconds: float) -> str:
    """A duration as people read it: 45s, 1m30s, 2h05m (whole seconds, rounded down)."""
    s = int(max(0.0, seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


def of_expected(expected: Expected) -> str:
    """'~5m00s expected (probe estimate)' or 'at most 10m00s (its timeout; no estimate)'."""
    if expected.source == "estimate":
        return f"~{clock(expected.seconds)} expected (probe estimate)"
    return f"at most {clock(expected.seconds)} (its timeout; no estimate)"


def running_line(job: Job, elapsed: float, expected: Expected) -> str:
    """The plain line shown while a job runs; past an estimate it says by how much."""
    line = f"job {job.job_id} running {clock(elapsed)} of {of_expected(expected)}"
    if expected.source == "estimate" and elapsed > expected.seconds:
        line += f", {clock(elapsed - expected.seconds)} over"
    return line


def end_line(job: Job, result: JobResult) -> Text:
    colour = {"ok": "green", "skipped": "yellow"}.get(result.status, "red")
    text = Text("  ") + Text(result.status, style=colour)
    return text + Text(f" {job.job_id} ({result.wall_time:.1f} s, {result.n_samples} samples)")


class PlainProgress:
    """Lines for a log: start, "running" every ``interval`` seconds, end. No markup from data,
    and never wrapped (a log is read with grep)."""

    def __init__(self, console: Console, interval: float) -> None:
        self.console = console
        self.interval = interval
        self._expected = Expected(0.0, "timeout")
        self._last = 0.0

    def on_start(self, i: int, n: int, job: Job) -> None:
        self._expected, self._last = expected_duration(job), 0.0
        line = f"job {i}/{n} {job.job_id} started: {of_expected(self._expected)}"
        self.console.print(Text(line), soft_wrap=True)

    def on_tick(self, job: Job, elapsed: float) -> None:
        if elapsed - self._last >= self.interval - 0.05:  # ticks come about once a second
            self._last = elapsed
            self.console.print(Text(running_line(job, elapsed, self._expected)), soft_wrap=True)

    def on_end(self, i: int, n: int, job: Job, result: JobResult) -> None:
        self.console.print(end_line(job, result), soft_wrap=True)
        if result.status != "ok":
            self.console.print(Text(f"    {terminal(result.reason)}"), soft_wrap=True)


class LiveProgress(PlainProgress):
    """The terminal's transient display: the run's bar and the job in flight against its
    expected duration (the bar fills to the estimate or the timeout)."""

    def __init__(self, console: Console, n_jobs: int) -> None:
        super().__init__(console, interval=0.0)
        from rich.progress import BarColumn, Progress, TextColumn

        # job id first, then the bar, then the words: at 80 columns the id and figures stay
        self.progress = Progress(
            TextColumn("{task.description}", markup=False),
            BarColumn(bar_width=20),
            TextColumn("{task.fields[done]}", markup=False),
            console=console,
            transient=True,
        )
        self.run_task = self.progress.add_task("run", total=n_jobs, done="")
        self.job_task = self.progress.add_task("", total=1, done="", visible=False)
        self._n = n_jobs
        self._done = 0
        self._started = time.monotonic()
        self._set_run_fields()

    def _set_run_fields(self) -> None:
        run_s = time.monotonic() - self._started
        self.progress.update(self.run_task, done=f"{self._done}/{self._n} jobs in {clock(run_s)}")

    def on_start(self, i: int, n: int, job: Job) -> None:
        self._expected = expected_duration(job)
        self.progress.reset(
            self.job_task, total=self._expected.seconds, completed=0, visible=True,
            description=job.job_id, done=f"0s of {of_expected(self._expected)}",
        )  # fmt: skip

    def on_tick(self, job: Job, elapsed: float) -> None:
        done = f"{clock(elapsed)} of {of_expected(self._expected)}"
        self.progress.update(
            self.job_task, completed=min(elapsed, self._expected.seconds), done=done
        )
        self._set_run_fields()

    def on_end(self, i: int, n: int, job: Job, result: JobResult) -> None:
        self._done += 1
        self.progress.update(self.run_task, advance=1)
        self._set_run_fields()
        self.progress.update(self.job_task, visible=False)
        self.progress.console.print(end_line(job, result))
        if result.status != "ok":
            self.progress.console.print(Text(f"    {terminal(result.reason)}"))


@contextlib.contextmanager
def run_progress(console: Console, n_jobs: int) -> Iterator[PlainProgress]:
    """The reporter for this output: live on a terminal, plain lines otherwise."""
    if console.is_terminal and not console.is_dumb_terminal:
        live = LiveProgress(console, n_jobs)
        with live.progress:
            yield live
    else:
        yield PlainProgress(console, interval_s())
