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

The checks are pure functions of what was observed (:class:`TargetState`); observing and the
few side effects (create, mark, remove) are the thin functions at the end.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from assay.errors import AssayError
from assay.storage.workloads import FILE_PREFIX

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
class Placement:
    """Where the test files go once the target is accepted."""

    workdir: str | None  # assay's directory for assay-fio-* files; None for a device/file
    filename: str | None  # a device or a user's file, written in place (destructive only)
    create: bool  # the workdir does not exist yet: create it (and remove it afterwards)
    owned: bool  # the files are assay's to remove
    notes: list[str] = field(default_factory=list)


# ------------------------------------------------------------------------------ pure checks


def place(state: TargetState, *, destructive: bool) -> Placement:
    """Decide where the files go, or raise SafetyError saying why not and what would allow it.

    ``state`` is the target as observed; nothing is written here.
    """
    p = state.path
    if state.kind == "absent":
        return Placement(workdir=p, filename=None, create=True, owned=True)
    if state.kind == "assay-dir":
        return Placement(workdir=p, filename=None, create=False, owned=True)
    if state.kind == "dir":
        sub = state.sub or TargetState(str(Path(p) / SUBDIR), "absent")
        if sub.kind == "absent":
            return Placement(workdir=sub.path, filename=None, create=True, owned=True)
        if sub.kind == "assay-dir":
            return Placement(workdir=sub.path, filename=None, create=False, owned=True)
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
        return Placement(
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
        return Placement(
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


# ------------------------------------------------------------------------------ side effects


def observe(path: str | Path) -> TargetState:
    """What ``path`` is now (stat only, nothing written)."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        return TargetState(str(p), "absent")
    if stat.S_ISBLK(st.st_mode) or stat.S_ISCHR(st.st_mode):
        return TargetState(str(p), "device")
    if stat.S_ISREG(st.st_mode):
        return TargetState(str(p), "file", size=st.st_size)
    if stat.S_ISDIR(st.st_mode):
        if (p / MARKER).is_file():
            return TargetState(str(p), "assay-dir")
        return TargetState(str(p), "dir", sub=observe_sub(p / SUBDIR))
    return TargetState(str(p), "other")


def observe_sub(p: Path) -> TargetState:
    if not p.exists() and not p.is_symlink():
        return TargetState(str(p), "absent")
    if p.is_dir() and not p.is_symlink() and (p / MARKER).is_file():
        return TargetState(str(p), "assay-dir")
    return TargetState(str(p), "other")


def free_bytes(path: str | Path) -> int:
    """Free space for an unprivileged writer on the file system that will hold ``path``
    (its nearest existing ancestor when it does not exist yet)."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return shutil.disk_usage(p).free


def existing_files(workdir: str | Path) -> dict[str, int]:
    """assay's files already in a workdir (name -> size)."""
    d = Path(workdir)
    if not d.is_dir():
        return {}
    return {f.name: f.stat().st_size for f in d.glob(f"{FILE_PREFIX}*") if f.is_file()}


def read_marker(workdir: str | Path) -> dict[str, int]:
    """The files a fill wrote end to end (name -> size), as recorded in the marker."""
    try:
        data = json.loads((Path(workdir) / MARKER).read_text() or "{}")
    except (OSError, ValueError):
        return {}
    filled = data.get("filled") if isinstance(data, dict) else None
    return {str(k): int(v) for k, v in (filled or {}).items()}


def write_marker(workdir: str | Path, filled: dict[str, int] | None = None) -> None:
    """Mark a directory as assay's; ``filled`` records which files a fill wrote, so a kept
    target is not filled again by the next run."""
    text = json.dumps({"owner": "assay", "filled": filled or {}}, sort_keys=True)
    (Path(workdir) / MARKER).write_text(text + "\n")


def prepare(placement: Placement) -> None:
    """Create assay's directory with its marker."""
    if placement.workdir and placement.create:
        Path(placement.workdir).mkdir(parents=False, exist_ok=False)
        write_marker(placement.workdir)


def cleanup(placement: Placement, extra_files: list[str] | None = None) -> list[str]:
    """Remove what assay wrote: its files, and its directory when it created it. Never a
    device or a user's file. Returns what was removed."""
    removed: list[str] = []
    for name in extra_files or []:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(name)
            removed.append(name)
    if not placement.owned or not placement.workdir:
        return removed
    d = Path(placement.workdir)
    if not (d / MARKER).is_file():
        return removed  # not ours (any more): leave it
    for f in sorted(d.glob(f"{FILE_PREFIX}*")):
        with contextlib.suppress(FileNotFoundError):
            f.unlink()
            removed.append(str(f))
    if placement.create:
        with contextlib.suppress(FileNotFoundError):
            (d / MARKER).unlink()
        try:
            d.rmdir()
            removed.append(str(d))
        except OSError as exc:
            if exc.errno not in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                raise
    else:
        write_marker(d)  # the files are gone, and so is their fill
    return removed


def supports_o_direct(directory: str | Path) -> bool:
    """Whether files in ``directory`` can be opened with O_DIRECT (EINVAL says not)."""
    probe = Path(directory) / f".{FILE_PREFIX}odirect-probe"
    try:
        fd = os.open(probe, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return False
        raise
    os.close(fd)
    with contextlib.suppress(FileNotFoundError):
        probe.unlink()
    return True
