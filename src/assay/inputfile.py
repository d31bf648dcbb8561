"""The one way assay reads a file back: bounded, and (for its own files) regular files only.

``assay import /dev/zero`` (or a file symlinked to it) used to read until memory ran out, and
so did a side file of a run (``check.json``, ``live/*.json``, a job's ``job.json``, the
runner's notes) linked to it; a FIFO in their place hung every command in ``open``. Every
read of a file, the user's or the store's, goes through ``read_bounded`` (whole files) or
``open_regular`` (files read in parts, such as a run's records): the file is opened without
blocking (a FIFO's ``open`` waits for a writer), checked to be a regular file before a byte is
read, and read to at most a stated size; a larger file is refused naming the bound.
``tests/store/test_bounded_reads.py`` checks that no other module opens a file to read it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import tomllib
from typing import Any, BinaryIO

from assay.errors import AssayError

MiB = 2**20
# A tool's output to import: the largest real ones are fio JSON+ documents of many jobs and
# assay's own JSON report (about 640 B a sample: 256 MiB holds some 400,000 samples).
MAX_OUTPUT_BYTES = 256 * MiB
# What a user writes: a suite, a Vdbench parameter file, a hostfile, an HPL.dat, a reference set.
MAX_TEXT_BYTES = 4 * MiB
# A small file assay writes beside a run (run.json, system.json, check.json, a live entry, a
# job's job.json, the runner's notes): a few KiB; 16 MiB is far past any.
MAX_SIDE_BYTES = 16 * MiB


class UnreadableFile(AssayError, ValueError):
    """A file assay will not read: not a regular file, or over the size its kind can have.
    Both an AssayError (a command says it, exit 2) and a ValueError (a reader that treats a
    damaged file as absent catches it with the JSON errors). ``why`` is the reason alone."""

    def __init__(self, path: str | os.PathLike[str], why: str) -> None:
        self.path = os.fspath(path)
        self.why = why
        super().__init__(f"{self.path}: {why}")


class InputTooLarge(UnreadableFile):
    """A file over the size an input of its kind can have."""


class NotRegularFile(UnreadableFile):
    """A device, a pipe, a directory, or (where not followed) a symbolic link."""


def open_regular(
    path: str | os.PathLike[str], *, follow: bool = True, regular: bool = True
) -> BinaryIO:
    """``path`` opened for reading, never blocking in ``open`` (a FIFO waits there for a
    writer). ``regular``: anything but a regular file is a NotRegularFile, before a byte is
    read; otherwise a pipe is read as it comes (``assay import <(cmd)``). ``follow=False``: a
    symbolic link is not followed (the store's own files are never links). OSError as
    ``open`` raises it (FileNotFoundError, ENAMETOOLONG, ...)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP and not follow:
            why = "not a regular file (a symbolic link, not followed)"
            raise NotRegularFile(path, why) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if regular and not stat.S_ISREG(mode):
            raise NotRegularFile(path, "not a regular file (a device, a pipe?)")
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), os.fspath(path))
        # reads of a pipe block as usual from here (with no writer left they end at once)
        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
        return os.fdopen(fd, "rb")
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def read_bounded(
    path: str | os.PathLike[str],
    limit: int,
    what: str,
    *,
    follow: bool = True,
    regular: bool = True,
) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them; a larger file (or a device that never
    ends, like /dev/zero, where ``regular`` is False) is an InputTooLarge naming it and the
    bound; not a regular file (``regular``, the default): NotRegularFile. OSError as
    ``open``. ``follow``, ``regular``: as ``open_regular``."""
    with open_regular(path, follow=follow, regular=regular) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        size = f"{limit // MiB} MiB ({limit} bytes)" if limit >= MiB else f"{limit} bytes"
        raise InputTooLarge(path, f"larger than {size}, more than any {what}; not read further")
    return data


def read_side(path: str | os.PathLike[str], what: str, limit: int = MAX_SIDE_BYTES) -> bytes:
    """A small file assay wrote into the store (run.json, check.json, a live entry, ...):
    regular only, a symbolic link not followed, at most ``limit`` bytes."""
    return read_bounded(path, limit, what, follow=False)


def read_side_text(path: str | os.PathLike[str], what: str, limit: int = MAX_SIDE_BYTES) -> str:
    """``read_side`` as text (bytes that are not UTF-8 replaced: a note stays readable)."""
    return read_side(path, what, limit).decode(errors="replace")


def exists(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names something; False, not an exception, for a name the system
    refuses (ENAMETOOLONG for a 300-character name on Python before 3.12's Path.exists)."""
    try:
        os.stat(path)
    except (OSError, ValueError):
        return False
    return True


def read_tail(path: str | os.PathLike[str], limit: int = 64 * 2**10) -> str:
    """The last ``limit`` bytes of a log a process wrote (for the lines that say why it
    failed), as text; "" when it cannot be read. A log can grow without end: only its end is
    read, and only of a regular file."""
    try:
        with open_regular(path, follow=False) as f:
            f.seek(max(0, os.fstat(f.fileno()).st_size - limit))
            return f.read(limit).decode(errors="replace")
    except (OSError, ValueError):
        return ""


def is_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a regular file (links followed); False for a name the system
    refuses (``Path.is_file`` raises ENAMETOOLONG on Python 3.11)."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def load_toml(text: str) -> dict[str, Any]:
    """``tomllib.loads``, the one way TOML is read; any failure a ``tomllib.TOMLDecodeError``
    saying why. An integer over Python's 4,300-digit limit is a plain ``ValueError`` from
    tomllib (``int()`` refuses it), which every reader that caught ``TOMLDecodeError`` let
    through as a traceback (a suite, the config, a reference set, a ``--set`` value)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        raise
    except ValueError as exc:  # int() of a numeral over 4,300 digits
        why = str(exc).split(":", 1)[0]
        raise tomllib.TOMLDecodeError(f"a number too long to read ({why})") from None
