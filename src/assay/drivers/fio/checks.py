"""The checks of a driver spec against its target as it is now, before anything is written.

Made twice: by ``assay run`` before the run starts (the fio probe's pre-flight, so that a bad
target is refused with exit code 2 and no run is created) and by the driver when its job
starts, since the target may have changed in between. A refusal says why and what would allow
it; nothing is written by a check. The checks: where the files go and whether assay may write
there (``assay.fio.safety``: no device nor a file of the user's without ``destructive``),
that assay can create or write its directory, that hosts are not given a device or a file to
share, the custom jobs' own files, and the free space (assay's files of every host, and the
jobs' own new files, added up per file system).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass

from assay.drivers.fio.files import job_names
from assay.drivers.fio.spec import DriverSpec, Item, all_jobs, items_of
from assay.errors import AssayError
from assay.fio.hosts import ClientError, Host, parse_hosts
from assay.fio.job import FioJob, fio_names, job_file
from assay.fio.safety import SafetyError, TargetFiles, check_filename, human, place, space_problem
from assay.fio.target import device_of, existing_files, free_bytes, not_writable, observe


class Refused(AssayError):
    """The spec cannot run on this target. ``lines`` each say why, starting ``refused:`` (the
    target) or ``bad spec:`` (the spec itself)."""

    def __init__(self, lines: list[str], hint: str | None = None) -> None:
        super().__init__("\n".join(lines), hint=hint)
        self.lines = lines


@dataclass(frozen=True)
class Checked:
    """A spec accepted on its target: where the files go, what runs, on which hosts."""

    placement: TargetFiles
    items: list[Item]
    hosts: list[Host]
    created: list[str]  # custom jobs' own files that assay creates (removed afterwards)


def check_spec(spec: DriverSpec, target: str) -> Checked:
    """Check ``spec`` against ``target`` as it is now; raise ``Refused`` saying why not."""
    try:
        placement = place(observe(target, spec.subdir), destructive=spec.destructive)
    except SafetyError as exc:
        raise Refused([f"refused: {exc}"], hint=exc.hint) from None
    try:
        items = items_of(spec, placement.workdir, placement.filename)
        for item in items:  # every line fio will read, as the probe checked it when planned
            job_file(list(item.jobs))
    except ValueError as exc:
        raise Refused([f"bad spec: {exc}"]) from None
    if not items:
        raise Refused(["bad spec: nothing to run (no workloads and no jobs)"])
    try:
        hosts = parse_hosts(spec.hosts)
    except ClientError as exc:
        raise Refused([f"bad spec: {exc}"], hint=exc.hint) from None
    if hosts and (placement.filename or any(j.filename for j in all_jobs(items))):
        raise Refused(
            [
                "bad spec: with hosts, every host writes assay's own files in the target "
                "directory (one set per host); a device, a file target or a job's filename "
                "cannot be shared"
            ]
        )
    created: list[str] = []
    try:
        problems = space_problems(spec, placement, items, hosts)
        for path in own_files(all_jobs(items)):
            if path == placement.filename:
                continue
            if path == "-":
                raise SafetyError(
                    "a job's filename names '-', which fio reads as its standard input or "
                    "output; refused"
                )
            state = observe(path)
            owned = check_filename(state, destructive=spec.destructive, assay_files=set())
            if owned and state.kind == "absent":
                created.append(path)
    except SafetyError as exc:
        raise Refused([f"refused: {exc}"], hint=exc.hint) from None
    if problems:
        raise Refused([f"refused: {p}" for p in problems])
    problem = not_writable(placement)
    if problem:
        raise Refused([f"refused: {problem}"], hint="choose a target directory you can write to")
    return Checked(placement, items, hosts, created)


def space_problems(
    spec: DriverSpec,
    placement: TargetFiles,
    items: list[Item],
    hosts: Sequence[Host] = (),
) -> list[str]:
    """Free-space refusals: assay's files in the workdir (every host's, in a multi-client
    run), and the jobs' own new files, added up per file system."""
    problems = []
    jobs = all_jobs(items)
    if placement.workdir:
        sizes: dict[str, int] = {}
        for job in (j for j in jobs if not j.filename):
            for name in job_names(job, hosts):
                sizes[name] = max(sizes.get(name, 0), job.size or 0)
        if sizes:
            existing = existing_files(placement.workdir)
            needed = sum(max(0, size - existing.get(name, 0)) for name, size in sizes.items())
            problem = space_problem(
                needed,
                free_bytes(placement.workdir),
                placement.workdir,
                detail=f"{len(sizes)} file(s) x {human(max(sizes.values()))}",
            )
            if problem:
                problems.append(problem)
    new_files: dict[str, int] = {}
    for job in jobs:
        for name in fio_names(job.filename or ""):
            if name != placement.filename and not os.path.exists(name):
                new_files[name] = max(new_files.get(name, 0), job.size or 0)
    by_fs: dict[int, list[str]] = {}
    for name in new_files:
        by_fs.setdefault(device_of(name), []).append(name)
    for names in by_fs.values():
        where = names[0] if len(names) == 1 else f"{os.path.dirname(names[0])} ({len(names)} files)"
        problem = space_problem(sum(new_files[n] for n in names), free_bytes(names[0]), where)
        if problem:
            problems.append(problem)
    return problems


def own_files(jobs: Sequence[FioJob]) -> list[str]:
    """Every path the jobs' own ``filename`` values name, split as fio splits them (``A:B`` is
    two files, ``A\\:B`` one): each is what the safety rules must check."""
    return list(dict.fromkeys(name for j in jobs for name in fio_names(j.filename or "")))
