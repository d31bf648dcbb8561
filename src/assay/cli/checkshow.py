"""What ``assay check`` shows and leaves behind: its messages and runs on the terminal (the
orchestration's surface, :class:`Shown`), the verdicts on stdout (tables, or ``--json``), in
``check.json`` beside the run, as JUnit, OpenMetrics and an HTML page."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from assay.cli.common import console, open_index, open_store, print_summary
from assay.errors import AssayError
from assay.textutil import terminal

if TYPE_CHECKING:
    from assay.analysis.check.health import Verdict
    from assay.run.check.flow import CheckResult
    from assay.run.execute import RunOutcome
    from assay.run.request import PlannedRun
    from assay.store import RunStore


class Shown:
    """The check's surface (``assay.run.check.surface``) on the terminal: its messages and
    each run's progress on stderr."""

    def say(self, text: str, style: str | None = None) -> None:
        console.print(Text(text, style=style or ""))

    def store(self) -> RunStore:
        return open_store()

    def sync_index(self) -> None:
        try:
            open_index(open_store()).close()
        except AssayError as exc:  # the results are in the run directory whatever the index says
            console.print(Text(f"warning: {exc}", style="yellow"))

    def run_here(self, planned: PlannedRun, label: str) -> RunOutcome:
        from assay.cli.progress import run_progress
        from assay.run.execute import execute

        jobs = planned.jobs
        writer = open_store().create(suite=planned.spec.name, suite_text=planned.text,
                                     system=planned.system, argv=sys.argv, n_jobs=len(jobs),
                                     label=label)  # fmt: skip
        console.print(f"run {writer.info.run_id}: {label}, {len(jobs)} jobs")
        started = time.monotonic()
        with run_progress(console, len(jobs)) as shown:
            outcome = execute(writer, jobs, planned.mpis, cores=planned.system.cores,
                              step_argv=planned.scheduler.step_argv, on_start=shown.on_start,
                              on_end=shown.on_end, on_tick=shown.on_tick)  # fmt: skip
        print_summary(outcome, time.monotonic() - started, writer.path)
        return outcome

    def run_batch(
        self, planned: PlannedRun, label: str, on_start: Callable[[], None] | None
    ) -> RunOutcome | None:
        from assay.cli.batch import run_batch
        from assay.launch import BatchScheduler

        assert isinstance(planned.scheduler, BatchScheduler)  # the flow asks only of a batch run
        return run_batch(
            console=console, store=open_store(), spec_name=planned.spec.name,
            suite_text=planned.text, system=planned.system, mpis=planned.mpis,
            jobs=planned.jobs, scheduler=planned.scheduler, label=label, on_start=on_start,
        )  # fmt: skip


def write_result(args, result: CheckResult) -> None:
    """The check's outputs; then the error a node action met, or (a dry run) the lines a real
    run would run, after the verdicts."""
    write_outputs(args, result.suite, result.level, result.run_id, result.retest_id,
                  result.verdicts, result.against, result.notes, result.actions, result.seconds,
                  result.run_path)  # fmt: skip
    if result.error is not None:
        raise result.error
    if args.dry_run:
        for action in result.actions:
            if action["command"]:
                print(action["command"])


def write_json(path: Path, data: dict) -> None:
    from assay.store.rundir import write_atomic

    write_atomic(path, json.dumps(data, indent=1, default=str) + "\n")


def _atomic(path: Path, text: str) -> None:
    """Written beside its final name and renamed: a reader (node_exporter's textfile
    collector, a CI step) never sees half a file."""
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent or Path("."))
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException as exc:  # whatever stopped it, no temporary file is left (issue 28)
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        if not isinstance(exc, OSError):
            raise
        raise AssayError(
            f"cannot write {path}: {exc.strerror or exc}",
            hint="give a file in a directory that exists and that you can write to",
        ) from exc
    console.print(Text(f"wrote {path}"))


def write_outputs(
    args,
    suite: str,
    level: int | None,
    run_id: str,
    retest_id: str | None,
    verdicts: list[Verdict],
    against: dict[str, str],
    notes: list[str],
    actions: list[dict[str, Any]],
    seconds: float,
    run_path: Path,
) -> None:
    from assay.report.check import check_document, summary_line, verdict_tables
    from assay.report.render import term_tables

    doc = check_document(verdicts, run_id=run_id, suite=suite, level=level, against=against,
                         notes=notes, retest_run=retest_id, actions=actions)  # fmt: skip
    try:
        write_json(run_path / "check.json", doc)
    except (OSError, AssayError) as exc:  # the verdicts still go out below
        console.print(Text(f"warning: cannot keep check.json with the run: {exc}", style="yellow"))
    if args.json:
        print(json.dumps(doc, indent=1, default=str))
    else:
        against_text = sorted(set(against.values()))
        head = [f"assay check {suite} — run {run_id}"
                + (f", retest run {retest_id}" if retest_id else "")
                + f"; judged against {', '.join(against_text) or 'nothing'}"]  # fmt: skip
        print(term_tables(verdict_tables(verdicts), head=head), end="")
        for note in notes:
            print(terminal(f"note: {note}"))
        print(terminal(summary_line(verdicts)))  # node names as every table shows them
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
    if args.junit:
        from assay.report.junit import junit_xml

        _atomic(args.junit, junit_xml(verdicts, suite=suite, run_id=run_id, seconds=seconds,
                                      timestamp=stamp))  # fmt: skip
    if args.openmetrics:
        from assay.report.openmetrics import openmetrics_text

        _atomic(args.openmetrics, openmetrics_text(verdicts, run_id=run_id, suite=suite,
                                                   level=level, timestamp=time.time()))  # fmt: skip
    if args.html:
        from assay.report.html import page

        head = [f"run {run_id}" + (f", retest run {retest_id}" if retest_id else ""),
                f"judged against: {', '.join(sorted(set(against.values()))) or 'nothing'}",
                summary_line(verdicts), *(f"note: {n}" for n in notes)]  # fmt: skip
        tables = verdict_tables(verdicts, everything=True)
        _atomic(args.html, page(f"assay check: {suite}", head, tables))
