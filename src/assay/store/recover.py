"""Runs whose assay died (SIGKILL, a crash, a reboot) end in a final state: "interrupted".

Called whenever assay opens the store. For each live-run entry whose owner is dead:

* every job that had started (it has ``jobs/<id>/``) but has no record in
  ``jobs.jsonl`` gets one, status "interrupted", saying it was cut short; samples it had
  already written (a kill between the two appends of ``RunWriter.record``) are counted, kept;
* ``run.json`` gets status "interrupted", the time of the run's last write as ``finished``, and
  a note naming the dead owner and the jobs cut short; then the entry goes.

Two assays opening the store at once must not both do it: the entry is locked (``flock``)
while a run is recovered, and an entry already gone means another assay did it.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections import Counter
from pathlib import Path

from assay.errors import StoreError
from assay.inputfile import read_side
from assay.model import JobResult
from assay.store import safefile
from assay.store.owner import Owner, entries, unregister
from assay.store.records import read_run_info
from assay.store.rundir import RunWriter, append_lines, read_jsonl, utc_at, utc_now, write_atomic


def recover(home: Path) -> list[str]:
    """Mark every run whose owner died "interrupted"; one message per run so marked."""
    try:
        return _recover(home)
    except OSError as exc:  # a read-only or full store: say so, and go on reading it
        return [f"could not check for runs left by a killed assay: {exc}"]


def _recover(home: Path) -> list[str]:
    messages = []
    for run_id, owner, entry in entries(home):
        if owner is not None and owner.alive() is not False:
            continue  # alive, or on another host: not ours to judge
        run_dir = home / "runs" / run_id
        try:  # the entry is locked as it is: never created, never through a link
            fd = safefile.open_existing(entry)
        except OSError:
            continue  # gone meanwhile, or not assay's entry (a link): left alone
        with os.fdopen(fd, "rb") as lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # another assay is recovering it right now
            if not entry.exists():
                continue  # ... and has finished doing so
            if not (run_dir / "run.json").exists():
                unregister(home, run_id)  # the run directory was removed by hand
                continue
            try:
                message = mark_interrupted(run_dir, owner)
            except StoreError as exc:  # a corrupt run.json: named by 'assay runs', left as is
                messages.append(exc.args[0])
                continue
            unregister(home, run_id)
            if message:
                messages.append(message)
    return messages


def _last_write(run_dir: Path) -> str:
    times = [
        p.stat().st_mtime for p in (run_dir, *run_dir.glob("*.jsonl"), *run_dir.glob("jobs/*/*"))
    ]
    return utc_at(max(times))


def mark_interrupted(run_dir: Path, owner: Owner | None) -> str:
    """Close a run its owner left "running"; returns what was done ('' if it had ended)."""
    info = read_run_info(run_dir)  # a StoreError naming what is wrong with run.json
    if info.status != "running":
        return ""
    recorded = {r.get("job_id") for r in read_jsonl(run_dir / "jobs.jsonl")}
    orphan_samples = Counter(
        s.get("job_id") for s in read_jsonl(run_dir / "samples.jsonl")
        if s.get("job_id") not in recorded
    )  # fmt: skip
    who = owner.describe() if owner else "its assay"
    cut = []
    jobs_dir = run_dir / "jobs"
    for job_dir in sorted(jobs_dir.iterdir() if jobs_dir.is_dir() else []):
        job_id = job_dir.name
        if job_id in recorded or not job_dir.is_dir():
            continue
        try:  # no job.json yet: it was being built when the kill came
            argv = json.loads(read_side(job_dir / "job.json", "job.json")).get("resolved_argv", [])
        except (OSError, ValueError, AttributeError):  # ValueError: also not a regular file
            argv = []
        if not isinstance(argv, list) or not all(type(a) is str for a in argv):
            argv = []  # a result's argv is a list of text (records.py refuses other lines)
        n = orphan_samples.get(job_id, 0)
        reason = f"cut short: assay ({who}) was killed or crashed while this job ran"
        if n:
            reason += f" ({n} points it had stored are kept)"
        result = JobResult(
            job_id=job_id, status="interrupted", exit_code=None, wall_time=0.0, argv=argv,
            stdout_path=f"jobs/{job_id}/stdout", stderr_path=f"jobs/{job_id}/stderr",
            reason=reason, n_samples=n,
        )  # fmt: skip
        append_lines(run_dir / "jobs.jsonl", [result.to_dict()])
        cut.append(job_id)
    info.status = "interrupted"
    info.finished = _last_write(run_dir)
    info.owner = None
    note = (
        f"assay ({who}) stopped without finishing this run (SIGKILL, a crash or a reboot); "
        f"marked interrupted on {utc_now()}"
        + (f"; cut short: {', '.join(cut)}" if cut else "; no job was running")
    )
    info.notes = [*info.notes, note]
    write_atomic(run_dir / "run.json", json.dumps(info.to_dict(), indent=2) + "\n")
    with contextlib.suppress(OSError):
        (run_dir / RunWriter.RESERVE).unlink()
    return f"run {info.run_id}: {note}"
