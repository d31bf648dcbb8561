"""What ``assay check`` leaves behind: the verdicts on stdout (tables, or ``--json``), in
``check.json`` beside the run, as JUnit, OpenMetrics and an HTML page; and the node actions."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.text import Text

from assay.analysis.check.health import Verdict, node_grades
from assay.cli.common import console
from assay.errors import AssayError
from assay.textutil import terminal


def act(args, measure, verdicts: list[Verdict], run_id: str) -> list[dict[str, Any]]:
    """Drain and resume as the verdicts say (``assay.run.checknodes``); the actions taken."""
    if not (args.drain or args.resume):
        return []
    from assay.cli.checkutil import say
    from assay.launch.slurm.nodes import NodeState, node_states
    from assay.run.checknodes import carry_out, plan_actions

    grades = node_grades(verdicts)
    try:
        partition = args.partition if args.on == "slurm" else None
        states = node_states(partition, timeout=5.0 if args.dry_run else None)
    except AssayError as exc:
        if not args.dry_run:
            raise
        say(f"note: Slurm's node states are not known ({str(exc).splitlines()[0]})")
        states = {n: NodeState(n, "unknown") for n in grades}
    actions = plan_actions(grades, verdicts, states, run_id, drain=args.drain, resume=args.resume,
                           measured=measured_nodes(run_id, measure.local))  # fmt: skip
    return carry_out(actions, args.dry_run, say)


def measured_nodes(run_id: str, local: str) -> set[str]:
    """The nodes a check ran on: its allocation's, as Slurm named them, or this node. Only
    these may be drained or resumed (issue 28: a name in the data is not an allocation)."""
    from assay.cli.common import open_store

    info = open_store().load(run_id, samples=False).info
    hosts = (info.batch or {}).get("hosts") if info.batch else None
    if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts):
        return set(hosts)
    return {local}


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
    from assay.cli.checkutil import write_json
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
