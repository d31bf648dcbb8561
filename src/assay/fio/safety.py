"""What assay may write to, whether it fits, and removing what it wrote.

The rules (issue 5, "Safety and bad input"):

* never write to a block (or character) device, nor to an existing file assay did not create,
  unless the user passes ``destructive``;
* assay's own files are recognisable: they live in a directory assay created, which holds a
  marker file ``.assay-owned``, and are named ``assay-fio-*``. A target directory of the user's
  gets a subdirectory ``assay-fio/`` of assay's own, so nothing of the user's is ever touched;
* the space the files need is checked before anything is written, and a refusal gives the
  numbers (needed, free);
* the files are removed afterwards unless ``keep``.

The checks here are pure functions of what was observed (:class:`TargetState`); observing the
target and the few side effects (create, mark, remove) are in ``assay.fio.target``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from assay.errors import AssayError
from assay.fio.workloads import FILE_PREFIX

MARKER = ".assay-owned"
SUBDIR = "assay-fio"  # assay's own directory inside a user's target directory
# Left free on the target's file system: fio, the kernel and other users need some too.
DEFAULT_RESERVE = 64 * 2**20

Kind = Literal["absent", "assay-dir", "dir", "file", "device", "other"]


class SafetyError(AssayError):
    """A refusal to write somewhere, or a target that cannot hold the test files."""


@dataclass(frozen=True)
class TargetState:
    """What a path is, as observed (see :func:`observe`)."""

    path: str
    kind: Kind
    size: int = 0  # of a file
    sub: TargetState | None = None  # a user's directory: the state of its assay-fio/ child


@dataclass(frozen=True)
class TargetFiles:
    """Where the test files go once the target is accepted."""

    workdir: str | None  # assay's directory for assay-fio-* files; None for a device/file
    filename: str | None  # a device or a user's file, written in place (destructive only)
    create: bool  # the workdir does not exist yet: create it (and remove it afterwards)
    owned: bool  # the files are assay's to remove
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ pure checks


def place(state: TargetState, *, destructive: bool) -> TargetFiles:
    """Decide where the files go, or raise SafetyError saying why not and what would allow it.

    ``state`` is the target as observed; nothing is written here.
    """
    p = state.path
    if state.kind == "absent":
        return TargetFiles(workdir=p, filename=None, create=True, owned=True)
    if state.kind == "assay-dir":
        return TargetFiles(workdir=p, filename=None, create=False, owned=True)
    if state.kind == "dir":
        sub = state.sub or TargetState(str(Path(p) / SUBDIR), "absent")
        if sub.kind == "absent":
            return TargetFiles(workdir=sub.path, filename=None, create=True, owned=True)
        if sub.kind == "assay-dir":
            return TargetFiles(workdir=sub.path, filename=None, create=False, owned=True)
        raise SafetyError(
            f"target {sub.path} exists and is not assay's (no {MARKER} in it): not writing there",
            hint="remove it, or choose another target directory",
        )
    if state.kind == "device":
        if not destructive:
            raise SafetyError(
                f"target {p} is a device: writing to it destroys its contents; refused",
                hint="give a directory on its file system, or pass destructive=true "
                "(--destructive) if the device holds nothing you need",
            )
        return TargetFiles(
            workdir=None,
            filename=p,
            create=False,
            owned=False,
            notes=[f"destructive: writing to device {p}"],
        )
    if state.kind == "file":
        if not destructive:
            raise SafetyError(
                f"target {p} is an existing file assay did not create; refused",
                hint="give a directory (assay creates its own files in it), or pass "
                "destructive=true (--destructive) to overwrite this file",
            )
        return TargetFiles(
            workdir=None,
            filename=p,
            create=False,
            owned=False,
            notes=[f"destructive: overwriting file {p}"],
        )
    raise SafetyError(f"target {p} is neither a directory, a file nor a device; refused")


def check_filename(state: TargetState, *, destructive: bool, assay_files: set[str]) -> bool:
    """A custom job's own ``filename``: may it be written? Returns whether assay owns it
    (creates it now, or created it earlier in this run); raises SafetyError otherwise."""
    if state.path in assay_files or state.kind == "absent":
        return True
    if state.kind in ("device", "file", "other") and destructive:
        return False
    what = {"device": "a device", "file": "an existing file assay did not create"}.get(
        state.kind, "not a plain file"
    )
    raise SafetyError(
        f"job file {state.path} is {what}; refused",
        hint="leave 'filename' out so assay uses its own files in the target directory, or "
        "pass destructive=true (--destructive)",
    )


def space_needed(size: int, files: int, existing: dict[str, int] | None = None) -> int:
    """Bytes still to be allocated for ``files`` files of ``size`` bytes: assay's files that
    exist already (name -> size) only need what they lack."""
    existing = existing or {}
    names = [f"{FILE_PREFIX}{n}" for n in range(files)]
    return sum(max(0, size - existing.get(name, 0)) for name in names)


def space_problem(
    needed: int, free: int, where: str, *, reserve: int = DEFAULT_RESERVE, detail: str = ""
) -> str | None:
    """The refusal text when ``needed`` bytes do not fit in ``free`` minus ``reserve``."""
    if needed + reserve <= free:
        return None
    return (
        f"target {where}: the test files need {human(needed)}"
        + (f" ({detail})" if detail else "")
        + f" but its file system has {human(free)} free"
        + (f" and {human(reserve)} is kept spare" if reserve else "")
        + f" ({needed} B needed, {free} B free)"
    )


def human(n: float) -> str:
    for unit, factor in (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if abs(n) >= factor:
            return f"{n / factor:.2f} {unit}"
    return f"{int(n)} B"


def direct_fallback(supported: bool, wanted: bool, where: str) -> tuple[bool, str | None]:
    """(direct to use, the warning recorded in params). tmpfs before Linux 6.6 (and some FUSE
    file systems) reject O_DIRECT with EINVAL, and fio then fails every job; buffered I/O
    still runs, but measures the page cache, which the warning says."""
    if not wanted or supported:
        return wanted, None
    return False, (
        f"{where} does not support O_DIRECT (tmpfs?): ran buffered (direct=0), "
        "so the figures include the page cache"
    )
