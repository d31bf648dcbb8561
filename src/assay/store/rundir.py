"""Run directories: ``$ASSAY_HOME/runs/<run-id>/``.

    run.json        identity and outcome (rewritten atomically at start and end)
    suite.toml      the suite as it was resolved
    system.json     where it ran
    jobs.jsonl      one JobResult per finished job (append-only, fsynced)
    samples.jsonl   every sample (append-only, fsynced as each job ends)
    jobs/<job-id>/  job.json (argv, env, params), stdout, stderr
    .reserve        space held back for the last records when the disk fills (see ``record``)

Only appends and atomic renames: a run killed at any point leaves every finished job readable.
While a run is written, ``$ASSAY_HOME/live/<run-id>.json`` names its owner process
(``assay.store.owner``); a run whose owner died is closed the next time the store is opened.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from assay import __version__
from assay.errors import NotFoundError, StoreError
from assay.inputfile import read_side
from assay.model import Job, JobResult, RunInfo, Sample, System
from assay.store import safefile
from assay.store.owner import Owner, others_running, register, unregister
from assay.store.records import (
    JOBS,
    SAMPLES,
    Damage,
    read_records,
    read_run_info,
)

RESERVE_BYTES = 256 * 1024
FULL_BELOW_BYTES = 64 * 1024


UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> str:
    return datetime.now(UTC).strftime(UTC_FORMAT)


def utc_at(seconds: float) -> str:
    """A POSIX time (a file's mtime) as ``utc_now`` writes the time."""
    return datetime.fromtimestamp(seconds, UTC).strftime(UTC_FORMAT)


# Random hex digits after the millisecond: 24 bits. Two runs made in one millisecond get the
# same id with probability 2**-24, and ``RunStore.create`` takes another id when it happens.
ID_RANDOM_HEX = 6
CREATE_TRIES = 20


def new_run_id(now: datetime | None = None) -> str:
    """``YYYYmmdd-HHMMSS-mmmXXXXXX``: sortable by creation time to the millisecond (UTC), then
    random hex digits, so runs made at once (concurrent imports, an array of jobs) differ."""
    now = now or datetime.now(UTC)
    tail = secrets.token_hex(ID_RANDOM_HEX // 2)
    return f"{now:%Y%m%d-%H%M%S}-{now.microsecond // 1000:03d}{tail}"


def _cannot_write(path: Path, exc: OSError) -> StoreError:
    return StoreError(
        f"cannot write {path}: {exc.strerror or exc}",
        hint="free space (df -h) or set ASSAY_HOME elsewhere; "
        "every job recorded before this one is intact and reportable",
    )


def write_atomic(path: Path, text: str) -> None:
    """Through a new temporary file of a random name, never through a link (``safefile``)."""
    try:
        safefile.write_atomic(path, text)
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def finite(value: Any) -> bool:
    """Whether every number in ``value`` (a record, its params, lists) is finite: what JSON
    can hold (issue 28: ``[peak] clock_ghz = 1e300`` wrote ``Infinity`` into samples.jsonl)."""
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(finite(v) for v in value)
    return True


BATCH_LINES = 10_000  # lines encoded at once: a job's records are written in such batches


def _encoded(
    objects: Iterable[dict[str, Any]], keep: Callable[[Any], bool], refused: list[int]
) -> Iterator[bytes]:
    lines: list[str] = []
    for o in objects:
        if not keep(o):
            refused[0] += 1
            continue
        lines.append(json.dumps(o, sort_keys=True) + "\n")
        if len(lines) == BATCH_LINES:
            yield "".join(lines).encode()
            lines = []
    if lines:
        yield "".join(lines).encode()


def _every(_: object) -> bool:
    return True


def _append_raw(
    path: Path, objects: Iterable[dict[str, Any]], keep: Callable[[Any], bool] = _every
) -> int:
    """Append whole lines of the objects ``keep`` keeps, or nothing: a failed write is cut
    back, so no half line remains. The lines are encoded and written a batch at a time (a job
    of 250,000 samples held its records, and all their text, at once). Returns how many
    objects ``keep`` refused; no object kept: the file is not even made."""
    refused = [0]
    batches = _encoded(objects, keep, refused)
    first = next(batches, None)
    if first is None:
        return refused[0]
    fd = safefile.open_append(path)  # never through a link (safefile)
    with os.fdopen(fd, "wb") as f:
        size = os.fstat(fd).st_size
        try:
            f.write(first)
            for batch in batches:
                f.write(batch)
            f.flush()
            os.fsync(fd)
        except BaseException:  # a write that failed, or an object JSON cannot hold
            with contextlib.suppress(OSError):  # reading skips a cut last line anyway
                f.flush()
                os.ftruncate(fd, size)
            raise
    return refused[0]


def append_lines(path: Path, objects: list[dict[str, Any]]) -> None:
    try:
        _append_raw(path, objects)
    except OSError as exc:
        raise _cannot_write(path, exc) from None


def free_bytes(path: Path) -> int | None:
    """Bytes this process may still write where ``path`` lives (root may use the reserved)."""
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    blocks = st.f_bfree if os.geteuid() == 0 else st.f_bavail
    return blocks * st.f_frsize


def read_jsonl(path: Path, damage: Damage | None = None) -> Iterator[dict[str, Any]]:
    """The good records of ``samples.jsonl``, ``jobs.jsonl`` (or another JSONL file), in
    stored order: a last line cut short by a kill is left out, a damaged line is skipped and
    counted in ``damage`` (the one rule of ``assay.store.records``)."""
    return read_records(path, damage)


@dataclass
class LoadedRun:
    info: RunInfo
    path: Path
    system: System
    samples: list[Sample] = field(default_factory=list)
    results: list[JobResult] = field(default_factory=list)
    suite_text: str = ""
    # Damaged lines met while reading the run, by (run id, file name): by loading it, and by
    # whatever read its samples since (its figures' fold, the JSON report's stream). A run
    # standing for several (a report of runs side by side) holds each one's.
    damage: dict[tuple[str, str], Damage] = field(default_factory=dict)

    def saw(self, damage: Damage) -> None:
        """Keep what a reader of this run found damaged (a later read of a file replaces an
        earlier one: it read the same lines)."""
        if damage:
            self.damage[(self.info.run_id, damage.file)] = damage

    def damage_notes(self) -> list[str]:
        """One line per damaged file: what was skipped, and where."""
        return [d.note(run_id) for (run_id, _), d in self.damage.items()]


class RunWriter:
    """Writes one run as it happens."""

    RESERVE = ".reserve"

    def __init__(self, path: Path, info: RunInfo) -> None:
        self.path = path
        self.info = info
        self.disk_full = False  # set once the disk filled: the run must stop after this job
        self.recorded: dict[str, JobResult] = {}  # job id -> its record, as written

    @property
    def home(self) -> Path:
        return self.path.parent.parent

    def save_info(self) -> None:
        write_atomic(self.path / "run.json", json.dumps(self.info.to_dict(), indent=2) + "\n")

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
        write_atomic(d / "job.json", json.dumps(record, indent=2) + "\n")
        return d

    def hold_reserve(self) -> None:
        """Set space aside (best effort) so the records of a job that fills the disk, and the
        run's final state, can still be written: ``record`` gives it back when needed."""
        with contextlib.suppress(OSError):
            fd = safefile.open_append(self.path / self.RESERVE)
            with os.fdopen(fd, "wb") as f:
                os.posix_fallocate(f.fileno(), 0, RESERVE_BYTES)

    def _release_reserve(self) -> bool:
        try:
            (self.path / self.RESERVE).unlink()
        except OSError:
            return False
        os.sync()  # some file systems free the blocks only when the journal commits
        return True

    def out_of_space(self) -> bool:
        """True when the run directory's disk is (about) full."""
        free = free_bytes(self.path)
        return free is not None and free < FULL_BELOW_BYTES

    def record(self, result: JobResult, samples: list[Sample]) -> None:
        """Samples first, then the job result that counts them, both fsynced; both or neither.

        A full disk (ENOSPC): the reserve is given back and the write tried once more, so the
        job that met the full disk is still recorded; ``disk_full`` then tells the caller to
        stop the run. Should it fail again, the samples appended are cut back off, so no
        sample is ever left without its job's record."""
        for s in samples:
            s.run_id, s.job_id = self.info.run_id, result.job_id
        samples_file, jobs_file = self.path / "samples.jsonl", self.path / "jobs.jsonl"
        n_samples, reason = result.n_samples, result.reason
        for attempt in (1, 2):
            size = samples_file.stat().st_size if samples_file.exists() else 0
            try:
                # JSON has no NaN nor Infinity: a reader would skip the line
                lost = _append_raw(samples_file, (s.to_dict() for s in samples), finite)
                result.n_samples, result.reason = n_samples, reason
                if lost:
                    result.n_samples = max(0, n_samples - lost)
                    result.reason += (
                        f"{'; ' if reason else ''}{lost} points holding a number that is not "
                        "finite (NaN, inf) left out"
                    )
                try:
                    _append_raw(jobs_file, [result.to_dict()])
                except OSError as exc:
                    with contextlib.suppress(OSError):
                        os.truncate(samples_file, size)
                    exc.filename = exc.filename or str(jobs_file)
                    raise
                self.recorded[result.job_id] = result
                return
            except OSError as exc:
                if exc.errno == errno.ENOSPC:
                    self.disk_full = True
                    if attempt == 1 and self._release_reserve():
                        continue
                raise _cannot_write(Path(exc.filename or samples_file), exc) from None

    def note(self, text: str) -> None:
        """A note the reader must see, kept in run.json."""
        if text not in self.info.notes:
            self.info.notes.append(text)

    def others_running(self) -> list[tuple[str, Owner]]:
        """Other measuring runs alive on this node now (they share, and lower, its figures)."""
        return others_running(self.home, self.info.run_id)

    def release(self) -> None:
        """Hand the run over to something that outlives this process (a detached Slurm job):
        it stays "running", and no later assay takes it for dead."""
        self.info.owner = None
        self.save_info()
        unregister(self.home, self.info.run_id)

    def finish(self, status: str) -> None:
        self.info.status = status  # type: ignore[assignment]
        self.info.finished = utc_now()
        self.info.owner = None
        if self.disk_full:
            self._release_reserve()  # the final state must be written
        self.save_info()
        unregister(self.home, self.info.run_id)
        with contextlib.suppress(OSError):
            (self.path / self.RESERVE).unlink()


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
        run_id, path = self._new_run_dir()
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
        owner = Owner.current(source)
        info.owner = owner.to_dict()
        writer = RunWriter(path, info)
        write_atomic(path / "suite.toml", suite_text)
        write_atomic(path / "system.json", json.dumps(system.to_dict(), indent=2) + "\n")
        writer.hold_reserve()
        try:
            register(self.home, run_id, owner)  # before run.json: a run is never ownerless
        except OSError as exc:
            raise _cannot_write(self.home / "live", exc) from None
        writer.save_info()
        return writer

    def _new_run_dir(self) -> tuple[str, Path]:
        """A new, empty run directory under a fresh id. ``mkdir`` is the atomic claim: an id
        another assay took in the same millisecond (``FileExistsError``) is drawn again."""
        try:
            self.runs_dir.mkdir(parents=True, exist_ok=True)
            for _ in range(CREATE_TRIES):
                run_id = new_run_id()
                path = self.runs_dir / run_id
                try:
                    path.mkdir()
                except FileExistsError:
                    continue
                return run_id, path
            raise FileExistsError(f"{CREATE_TRIES} fresh run ids were all taken")
        except OSError as exc:
            raise StoreError(
                f"cannot create a run directory under {self.runs_dir}: {exc}"
            ) from None

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
        """A stored run; ``samples=False`` skips reading them (for streaming them raw).
        Damaged record lines are skipped and named in ``LoadedRun.damage``."""
        run_id = self.resolve(ref)
        path = self.runs_dir / run_id
        info = read_run_info(path)  # a StoreError that says what is wrong with run.json
        try:
            system_file = path / "system.json"
            system = (
                System.from_dict(json.loads(read_side(system_file, "system.json")))
                if system_file.exists()
                else System()
            )
        except (OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
            raise StoreError(
                f"run {run_id}: cannot read {path / 'system.json'}: {exc}",
                hint=f"the run directory {path} is damaged; other runs are unaffected",
            ) from None
        suite_file = path / "suite.toml"
        run = LoadedRun(info=info, path=path, system=system)
        jobs_damage, samples_damage = Damage(JOBS), Damage(SAMPLES)
        run.results = [JobResult.from_dict(d) for d in read_records(path / JOBS, jobs_damage)]
        if samples:
            stored = read_records(path / SAMPLES, samples_damage)
            run.samples = [Sample.from_dict(d) for d in stored]
            run.saw(samples_damage)
        run.saw(jobs_damage)
        try:
            run.suite_text = read_side(suite_file, "suite file").decode()
        except (OSError, ValueError):  # missing (an import), damaged, or not a regular file
            run.suite_text = ""
        return run
