"""``assay import``: store third-party outputs as a run, reported and compared like our own.

Each file becomes one job of the run: its text is kept as the job's stdout, its samples are
stored, and a file that cannot be read is recorded as a failed job with the parser's message,
so one bad file never hides the good ones.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from assay.errors import AssayError, StoreError
from assay.model import Job, JobResult, Sample, System
from assay.parsers import parse_text
from assay.store import RunStore


@dataclass
class ImportedFile:
    path: Path
    status: str  # ok | partial | failed
    n_samples: int
    message: str = ""


def import_files(
    store: RunStore,
    files: list[Path],
    fmt: str,
    *,
    system: System,
    label: str = "",
    argv: list[str] | None = None,
) -> tuple[str, list[ImportedFile]]:
    writer = store.create(
        suite=f"import-{fmt}",
        suite_text=f"# imported with --format {fmt}\n",
        system=system,
        argv=argv or [],
        n_jobs=len(files),
        label=label,
        source=f"import:{fmt}",
    )
    outcomes = []
    for n, path in enumerate(files, start=1):
        job = Job(job_id=f"{n:03d}-import-{path.stem}"[:80], probe=fmt, argv=[str(path)])
        job_dir = writer.save_job(job, [str(path)])
        result = JobResult(
            job_id=job.job_id,
            status="failed",
            exit_code=None,
            wall_time=0.0,
            argv=[str(path)],
            stdout_path=str((job_dir / "stdout").relative_to(writer.path)),
            stderr_path="",
        )
        samples: list[Sample] = []
        try:
            text = path.read_text(errors="replace")
            shutil.copyfile(path, job_dir / "stdout")  # the raw output is kept with the run
            parsed = parse_text(text, fmt, source=str(path))
        except OSError as exc:
            result.reason = f"{path}: cannot read: {exc.strerror}"
            outcomes.append(ImportedFile(path, "failed", 0, result.reason))
        except AssayError as exc:
            result.reason = str(exc)
            outcomes.append(ImportedFile(path, "failed", 0, result.reason))
        else:
            for s in parsed.samples:
                s.params.setdefault("mpi_label", label or path.stem)
                s.params.setdefault("source_file", path.name)
            samples = parsed.samples
            status = "ok" if parsed.complete else "partial"
            if not samples:
                status = "failed"
                parsed.warnings.append("no measurement could be kept from this file")
            notes = parsed.warnings + (
                [f"incomplete; missing: {', '.join(parsed.missing)}"] if not parsed.complete else []
            )
            result.status = "ok" if status == "ok" else "failed"
            result.reason = "; ".join(notes)
            outcomes.append(ImportedFile(path, status, len(samples), result.reason))
        result.n_samples = len(samples)
        try:
            writer.record(result, samples)
        except OSError as exc:
            raise StoreError(f"cannot write {writer.path}: {exc}") from None
    failed = any(o.status == "failed" for o in outcomes)
    writer.finish("failed" if failed and not any(o.n_samples for o in outcomes) else "complete")
    return writer.info.run_id, outcomes
