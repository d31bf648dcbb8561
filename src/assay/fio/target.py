"""The target as it is on disk: observing it, and the few side effects on it.

Everything here touches the file system; the decisions are the pure functions of
``assay.fio.safety``. Called by the pre-flight check before a run starts
(``assay.drivers.fio.checks``) and by the fio driver in the job.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from pathlib import Path

from assay.fio.safety import MARKER, SUBDIR, TargetFiles, TargetState
from assay.fio.workloads import FILE_PREFIX
from assay.inputfile import read_bounded


def observe(path: str | Path, subdir: str = SUBDIR) -> TargetState:
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
        return TargetState(str(p), "dir", sub=observe_sub(p / subdir))
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
        data = json.loads(read_bounded(Path(workdir) / MARKER, 2**20, "marker") or b"{}")
    except (OSError, ValueError):  # ValueError: not JSON, or not a small regular file
        return {}
    filled = data.get("filled") if isinstance(data, dict) else None
    return {str(k): int(v) for k, v in (filled or {}).items()}


def write_marker(workdir: str | Path, filled: dict[str, int] | None = None) -> None:
    """Mark a directory as assay's; ``filled`` records which files a fill wrote, so a kept
    target is not filled again by the next run."""
    text = json.dumps({"owner": "assay", "filled": filled or {}}, sort_keys=True)
    (Path(workdir) / MARKER).write_text(text + "\n")


def prepare(placement: TargetFiles) -> None:
    """Create assay's directory with its marker."""
    if placement.workdir and placement.create:
        Path(placement.workdir).mkdir(parents=False, exist_ok=False)
        write_marker(placement.workdir)


def cleanup(placement: TargetFiles, extra_files: list[str] | None = None) -> list[str]:
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


def device_of(path: str) -> int:
    """The file system (st_dev) that will hold ``path``: its nearest existing ancestor's."""
    p = Path(path).absolute()
    while not p.exists() and p != p.parent:
        p = p.parent
    return p.stat().st_dev


def not_writable(placement: TargetFiles) -> str | None:
    """Why assay could not write where ``placement`` puts the files, or None.

    A directory assay will create needs an existing, writable parent (it is created alone,
    never with parents: a typo in a path must not grow a tree); an existing one must be
    writable; so must a device or file given with ``destructive``. ``os.access`` answers for
    this process, read-only file systems included (EROFS).
    """
    if placement.workdir:
        d = Path(placement.workdir)
        if placement.create:
            parent = d.parent
            if not parent.is_dir():
                return f"cannot create {d}: {parent} is not an existing directory"
            if not os.access(parent, os.W_OK | os.X_OK):
                return f"cannot create {d}: {parent} is not writable"
        elif not os.access(d, os.W_OK | os.X_OK):
            return f"cannot write in {d}: not writable"
    if placement.filename and not os.access(placement.filename, os.W_OK):
        return f"cannot write {placement.filename}: not writable"
    return None
