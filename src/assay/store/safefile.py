"""Writing the store's files without following a link someone planted (issue 28).

Whoever can write in ``$ASSAY_HOME`` (a shared store, a group-writable home) can leave a
symbolic link where assay writes next: a fixed temporary name (``.run.json.tmp``) or a
``live/`` entry that ``open(..., "a")`` would follow, creating or overwriting the link's target
anywhere, as whoever runs assay (root, under a HealthCheckProgram). Every file of the store is
therefore written through one of these, and none follows a link at its last component:

* :func:`write_atomic` (:func:`write_atomic_with`, in pieces): a new temporary file beside
  ``path`` (a random name, ``O_CREAT | O_EXCL | O_NOFOLLOW``: it is created, never opened),
  written, fsynced, renamed over ``path`` (a rename replaces a link at ``path`` itself, never
  writes through it);
* :func:`open_append`: append to ``path`` (``O_NOFOLLOW``; created when absent); a link there,
  or anything but a regular file, is an OSError;
* :func:`open_existing`: an existing regular file for a lock, never created, never a link.

The directories above are the store's own; a link among them is not looked for here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC
TEMP_TRIES = 100


def _regular(fd: int, path: Path) -> int:
    """``fd`` if it is a regular file; else it is closed and an OSError names ``path``."""
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, "not a regular file", str(path))
    return fd


def _new_temp(path: Path) -> tuple[int, Path]:
    """A file of a fresh random name beside ``path``, created by this call (mode 0666 less the
    umask, as ``open`` makes it)."""
    for _ in range(TEMP_TRIES):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | NOFOLLOW, 0o666)
        except FileExistsError:
            continue
        return fd, tmp
    raise OSError(errno.EEXIST, "no free temporary name", str(path))


def write_atomic(path: Path, data: str | bytes) -> None:
    """``path`` holds ``data`` whole, or is as it was (OSError; no temporary file is left)."""
    raw = data.encode() if isinstance(data, str) else data
    write_atomic_with(path, lambda f: f.write(raw))


def write_atomic_with(path: Path, write: Callable[[BinaryIO], object]) -> None:
    """``path`` holds what ``write`` wrote to the file it is given (it may seek back in it),
    or is as it was: the large file written in pieces, never held whole."""
    fd, tmp = _new_temp(path)
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def open_append(path: Path) -> int:
    """A descriptor appending to the regular file ``path`` (made when absent); a link at
    ``path`` is ELOOP, a directory, pipe or device an OSError."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | NOFOLLOW, 0o666)
    return _regular(fd, path)


def open_existing(path: Path) -> int:
    """A read-only descriptor of the existing regular file ``path`` (for ``flock``): never
    created, never through a link."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | NOFOLLOW)
    return _regular(fd, path)
