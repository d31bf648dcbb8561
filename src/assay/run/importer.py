"""``assay import``: store third-party outputs as a run, reported and compared like our own.

Each file becomes one job of the run: its text is kept as the job's stdout, its samples are
stored, and a file that cannot be read is recorded as a failed job with the parser's message,
so one bad file never hides the good ones. When no file can be read, nothing is stored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import AssayError, StoreError
from assay.figures.folded import cache_figures
from assay.inputfile import MAX_OUTPUT_BYTES, read_bounded
from assay.model import Job, JobResult, Sample, System
from assay.parsers import parse_text
from assay.store import RunStore


@dataclass
class ImportedFile:
    path: Path
    status: str  # ok | partial | failed
    n_samples: int
    message: str = ""
    samples: list[Sample] = field(default_factory=list, repr=False)
    data: bytes = field(default=b"", repr=False)  # what was read, kept with the run


def read_file(path: Path, fmt: str, label: str) -> ImportedFile:
    """Parse one file; whatever goes wrong is this file's failure, named, never a traceback
    that would leave the other files unread. At most MAX_OUTPUT_BYTES are read (a file
    symlinked to /dev/zero is refused, not read until memory runs out)."""
    data = b""
    try:
        # regular=False: `assay import <(cmd)` reads a pipe (to the bound, like /dev/zero)
        data = read_bounded(path, MAX_OUTPUT_BYTES, "tool output", regular=False)
        parsed = parse_text(data.decode("utf-8", errors="replace"), fmt, source=str(path))
    except OSError as exc:
        return ImportedFile(path, "failed", 0, f"{path}: cannot read: {exc.strerror or exc}")
    except AssayError as exc:
        return ImportedFile(path, "failed", 0, str(exc), data=data)
    except Exception as exc:  # a parser bug must not cost the other files their import
        return ImportedFile(
            path,
            "failed",
            0,
            f"{path}: the {fmt} parser failed ({type(exc).__name__}: {str(exc)[:200]}); "
            "this is a bug in assay, please report it with the file",
            data=data,
        )
    for s in parsed.samples:
        s.params.setdefault("mpi_label", label or path.stem)
        s.params.setdefault("source_file", path.name)
    status = "ok" if parsed.complete else "partial"
    notes = list(parsed.warnings)
    if not parsed.complete:
        notes.append(f"incomplete; missing: {', '.join(parsed.missing)}")
    if not parsed.samples:
        status = "failed"
        notes.append("no measurement could be kept from this file")
    return ImportedFile(path, status, len(parsed.samples), "; ".join(notes), parsed.samples, data)


def import_files(
    store: RunStore,
    files: list[Path],
    fmt: str,
    *,
    system: System,
    label: str = "",
    argv: list[str] | None = None,
) -> tuple[str | None, list[ImportedFile]]:
    """Parse every file, then store those that gave samples as one run (each file a job; a
    bad file beside good ones is a failed job naming why). When no file gave a sample,
    nothing is stored and the run id is None: a failed import is not a run."""
    outcomes = [read_file(path, fmt, label) for path in files]
    if not any(o.samples for o in outcomes):
        return None, outcomes
    writer = store.create(
        suite=f"import-{fmt}",
        suite_text=f"# imported with --format {fmt}\n",
        system=system,
        argv=argv or [],
        n_jobs=len(files),
        label=label,
        source=f"import:{fmt}",
    )
    finished = False
    try:
        for n, o in enumerate(outcomes, start=1):
            job = Job(job_id=f"{n:03d}-import-{o.path.stem}"[:80], probe=fmt, argv=[str(o.path)])
            job_dir = writer.save_job(job, [str(o.path)])
            result = JobResult(
                job_id=job.job_id,
                status="ok" if o.status == "ok" else "failed",
                exit_code=None,
                wall_time=0.0,
                argv=[str(o.path)],
                stdout_path=str((job_dir / "stdout").relative_to(writer.path)),
                stderr_path="",
                reason=o.message,
                n_samples=o.n_samples,
            )
            # the raw output travels with the run, a bad file's too: the bytes read, never the
            # file read again (it may have changed, or be a device that never ends)
            (job_dir / "stdout").write_bytes(o.data)
            writer.record(result, o.samples)
            # stored: the samples and bytes are let go before the fold reads them back (a
            # file of 250,000 rows held them through it, a third of the import's memory)
            o.samples, o.data = [], b""
        writer.finish("complete")
        finished = True
        cache_figures(writer.path)
    except OSError as exc:
        raise StoreError(f"cannot write {writer.path}: {exc}") from None
    finally:
        if not finished:
            writer.finish("failed")  # never left "running"
    return writer.info.run_id, outcomes
