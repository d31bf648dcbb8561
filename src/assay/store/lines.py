"""Reading the store's record files with bounds: lines of a JSONL file by byte offset. Every
read stops at a stated size: a file is read up to its size when opened, a line is held to
``MAX_LINE`` bytes, and a file that is not a regular one (a link to /dev/zero, which has no end
and no newline; a pipe) is not read at all (``assay.inputfile.open_regular``, the one way a
file is opened to be read). What a line must hold is ``assay.store.records``'s concern.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from assay.inputfile import NotRegularFile, open_regular

MAX_LINE = 16 * 2**20  # a record line longer than this is damaged (a sample line is < 1 KiB)
_SKIP_BLOCK = 2**20


# A record file that is a device, a pipe or a directory: never read (/dev/zero has no end and
# no newline).
NotRegular = NotRegularFile


def lines_with_offsets(
    path: Path, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """Every complete line of a JSONL file with the byte offset it starts at (a last line cut
    short by a kill is left out); with ``start`` and ``end`` (line starts, from
    ``line_starts``) the lines of that part only. Reads stop at the file's size when it was
    opened, and hold at most ``MAX_LINE`` bytes of a line: a longer one is yielded cut, without
    its newline (``scan`` calls it damaged). A file that is not a regular one: ``NotRegular``."""
    try:
        f = open_regular(path, follow=False)
    except FileNotFoundError:
        return
    with f:
        yield from _lines(f, start, end)


def _lines(f: BinaryIO, start: int, end: int | None) -> Iterator[tuple[int, bytes]]:
    size = os.fstat(f.fileno()).st_size
    limit = size if end is None else min(end, size)
    offset = start
    f.seek(start)
    while offset < limit:
        line = f.readline(MAX_LINE + 1)
        if not line.endswith(b"\n"):
            if len(line) <= MAX_LINE:
                return  # the last line, cut short by a kill (or beyond the size read)
            yield offset, line[:MAX_LINE]  # too long: skipped to its end, never held whole
            line, skipped = b"", len(line)
            while offset + skipped < limit and not line.endswith(b"\n"):
                line = f.readline(_SKIP_BLOCK)
                if not line:
                    return
                skipped += len(line)
            offset += skipped
            continue
        yield offset, line
        offset += len(line)


def skip_line(f: BinaryIO) -> None:
    """Read on to the start of the next line, holding at most a block of it."""
    while (chunk := f.readline(_SKIP_BLOCK)) and not chunk.endswith(b"\n"):
        pass


def text_lines(path: Path, end: int, block: int = 8 * 2**20) -> Iterator[list[str]]:
    """The complete lines of the first ``end`` bytes of a file known to be UTF-8, as text
    without their newline, in lists of a block's lines (decoded and split a block at a time:
    a million lines pass through without a Python step each)."""
    if end <= 0:
        return  # nothing read: also no file (a run whose jobs all failed has no samples)
    with open_regular(path, follow=False) as f:
        left, rest = end, b""
        while left > 0:
            data = f.read(min(block, left))
            if not data:
                break
            left -= len(data)
            data = rest + data
            cut = data.rfind(b"\n") + 1
            rest = data[cut:]
            if cut:
                yield data[: cut - 1].decode().split("\n")
