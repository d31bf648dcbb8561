"""Run directories: ``$ASSAY_HOME/runs/<run-id>/``.

    run.json        identity and outcome (rewritten atomically at start and end)
    suite.toml      the suite as it was resolved
    system.json     where it ran
    jobs.jsonl      one JobResult per finished job (append-only, fsynced)
    samples.jsonl   every sample (append-only, fsynced as each job ends)
    jobs/<job-id>/  job.json (argv, env, params), stdout, stderr

Only appends and atomic renames: a run killed at any point leaves every finished job readable.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay import __version__
from assay.errors import NotFoundError, StoreError
from assay.model import Job, JobResult, RunInfo, Sample, System


def utc_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(now: datetime | None = None) -> str:
    """Sortable by creation time to the millisecond; two hex digits keep concurrent runs apart."""
    now = now or datetime.now(UTC)
    return f"{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}{secrets.token_hex(1)}"


def _cannot_write(path: Path, exc: OSError) -> StoreError:
    return StoreError(
        f"cannot write {path}: {exc.strerror or exc}",
        hint="free space (df -h) or set ASSAY_HOME elsewhere; "
        "every job recorded before this one is intact and reportable",
    )


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise _cannot_write(path, exc) from None


def _append_lines(path: Path, objects: list[dict[str, Any]]) -> None:
    """Append whole lines, or nothing: a failed write is cut back, so no half line remains."""
    if not objects:
        return
    data = "".join(json.dumps(o, sort_keys=True) + "\n" for o in objects)
    size = path.stat().st_size if path.exists() else 0
    try:
        with open(path, "a") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except OSError as exc:
        with contextlib.suppress(OSError):  # reading skips a cut last line anyway
            os.truncate(path, size)
        raise _cannot_write(path, exc) from None


def complete_lines(path: Path) -> Iterator[str]:
    """Every complete line (a last line cut short by a kill is left out), unparsed."""
    if not path.exists():
        return
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            yield line


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Every complete line; a last line cut short by a kill is skipped, not an error."""
    if not path.exists():
        return
    with open(path) as f:
        for line in f:
            if not line.endswith("\n"):
                break
            try:
                yield json.loads(line)
            except json.JSONDecodeError:
                continue


@dataclass
class LoadedRun:
    info: RunInfo
    path: Path
    system: System
    samples: list[Sample] = field(default_factory=list)
    results: list[JobResult] = field(default_factory=list)
    suite_text: str = ""


class RunWriter:
    """Writes one run as it happens."""

    def __init__(self, path: Path, info: RunInfo) -> None:
        self.path = path
        self.info = info

    def save_info(self) -> None:
        _write_atomic(self.path / "run.json", json.dumps(self.info.to_dict(), indent=2) + "\n")

    def job_dir(self, job: Job) -> Path:
        d = self.path / "jobs" / job.job_id
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise _cannot_write(d, exc) from None
        return d

    def save_job(self, job: Job, resolved_argv: list[str]) -> Path:
        d = self.job_dir(job)
        record = {**job.to_dict(), "resolved_argv": resolved_argv}
        _write_atomic(d / "job.json", json.dumps(record, indent=2) + "\n")
        return d

    def record(self, result: JobResult, samples: list[Sample]) -> None:
        """Samples first, then the job result that counts them, both fsynced."""
        for s in samples:
            s.run_id, s.job_id = self.info.run_id, result.job_id
        _append_lines(self.path / "samples.jsonl", [s.to_dict() for s in samples])
        _append_lines(self.path / "jobs.jsonl", [result.to_dict()])

    def finish(self, status: str) -> None:
        self.info.status = status  # type: ignore[assignment]
        self.info.finished = utc_now()
        self.save_info()


class RunStore:
    def __init__(self, home: Path) -> None:
        self.home = home
        self.runs_dir = home / "runs"

    def create(
        self,
        *,
        suite: str,
        suite_text: str,
        system: System,
        argv: list[str],
        n_jobs: int = 0,
        label: str = "",
        source: str = "assay",
    ) -> RunWriter:
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            run_id = new_run_id()
            path = self.runs_dir / run_id
            path.mkdir()
        except OSError as exc:
            raise StoreError(
                f"cannot create a run directory under {self.runs_dir}: {exc}"
            ) from None
        info = RunInfo(
            run_id=run_id,
            created=utc_now(),
            suite=suite,
            label=label,
            assay_version=__version__,
            argv=argv,
            source=source,
            n_jobs=n_jobs,
        )
        writer = RunWriter(path, info)
        _write_atomic(path / "suite.toml", suite_text)
        _write_atomic(path / "system.json", json.dumps(system.to_dict(), indent=2) + "\n")
        writer.save_info()
        return writer

    def run_ids(self) -> list[str]:
        """Oldest first; run ids sort by creation time."""
        if not self.runs_dir.exists():
            return []
        return sorted(p.name for p in self.runs_dir.iterdir() if (p / "run.json").exists())

    def resolve(self, ref: str | None) -> str:
        """A run id from a full id, a unique prefix, 'latest'/None, or -N (N-th before latest)."""
        ids = self.run_ids()
        if not ids:
            raise NotFoundError("no runs yet", hint="start one with 'assay run quick'")
        if ref in (None, "", "latest"):
            return ids[-1]
        if ref.startswith("-") and ref[1:].isdigit():
            k = int(ref[1:])
            if k >= len(ids):
                raise NotFoundError(f"run {ref}: only {len(ids)} runs stored")
            return ids[-1 - k]
        matches = [i for i in ids if i == ref] or [i for i in ids if i.startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise NotFoundError(f"no run {ref!r}", hint="'assay runs' lists them")
        raise NotFoundError(f"run {ref!r} is ambiguous: {', '.join(matches[:5])}")

    def load(self, ref: str | None = None, *, samples: bool = True) -> LoadedRun:
        """A stored run; ``samples=False`` skips reading them (for streaming them raw)."""
        run_id = self.resolve(ref)
        path = self.runs_dir / run_id
        try:
            info = RunInfo.from_dict(json.loads((path / "run.json").read_text()))
            system_file = path / "system.json"
            system = (
                System.from_dict(json.loads(system_file.read_text()))
                if system_file.exists()
                else System()
            )
        except (OSError, json.JSONDecodeError, TypeError) as exc:
            raise StoreError(f"run {run_id}: cannot read its records: {exc}") from None
        suite_file = path / "suite.toml"
        return LoadedRun(
            info=info,
            path=path,
            system=system,
            samples=[Sample.from_dict(d) for d in read_jsonl(path / "samples.jsonl")]
            if samples
            else [],
            results=[JobResult.from_dict(d) for d in read_jsonl(path / "jobs.jsonl")],
            suite_text=suite_file.read_text() if suite_file.exists() else "",
        )
