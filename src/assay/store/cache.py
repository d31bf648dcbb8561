"""Derived files kept beside a run's records, and reading its sample lines by position.

A run directory's records are the truth; a cache file (``figures.cache.json``: the run's
samples folded into figures) only saves reading a million sample lines again. It is used only
while it provably still says what its source says, else it is made again:

* it was made from a source file of this size and this content digest (:func:`digest`: SHA-256
  over the whole file; size and modification time are not enough: a copy that keeps the time,
  a file restored from a backup, an edit within one clock tick all keep them);
* its own content is what was written: a checksum over it is kept in its first line, so a
  figure changed in the cache by hand (or by a bad disk) is found and folded again;
* it was written by this version of the fold (``version``).

The file is two lines: a header (version, the source's size and digest, the checksum, and
``extra``: small facts about the source, such as its damaged lines, readable without the
rest) and the payload. A cache that cannot be written (a read-only or full file system) is no
error: the next report folds the samples again.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from assay.inputfile import open_regular
from assay.store import safefile
from assay.store.lines import lines_with_offsets, skip_line

__all__ = [
    "Cached",
    "Stamp",
    "digest",
    "line_starts",
    "lines_at",
    "lines_with_offsets",
    "read_cache",
    "stamp",
    "write_cache",
    "write_cache_parts",
]

# A cache is the folded figures of its samples: far smaller than they are. One larger than
# this is not one assay wrote (it is folded again, never read whole).
MAX_CACHE_BYTES = 2**30
CHUNK = 64 * 2**20  # the digest's unit: each chunk hashed on its own, on any free core
BLOCK = 2**20  # read size; hashlib releases the GIL for each block, so chunks hash in parallel


def _chunk_digest(path: Path, start: int, size: int) -> bytes:
    h = hashlib.sha256()
    with open_regular(path, follow=False) as f:
        f.seek(start)
        left = size
        while left > 0:
            block = f.read(min(BLOCK, left))
            if not block:
                break
            h.update(block)
            left -= len(block)
    return h.digest()


def digest(path: Path, size: int | None = None) -> str:
    """A digest of the first ``size`` bytes of ``path`` (all of it by default): SHA-256 of
    each 64 MiB chunk, then SHA-256 of those digests in order (a hash tree of one level, so
    the chunks hash on every usable core at once). SHA-256, not BLAKE2: with the CPU's SHA
    instructions OpenSSL's SHA-256 ran at 1.5 GB/s here against BLAKE2b's 0.75 GB/s."""
    if size is None:
        size = path.stat().st_size
    starts = range(0, max(size, 1), CHUNK)
    spans = [(s, min(CHUNK, size - s)) for s in starts]
    workers = min(len(spans), len(os.sched_getaffinity(0)))
    if workers <= 1:
        parts = [_chunk_digest(path, s, n) for s, n in spans]
    else:  # threads, ended before returning: the fold may fork afterwards
        with ThreadPoolExecutor(workers) as pool:
            parts = list(pool.map(lambda span: _chunk_digest(path, *span), spans))
    return "sha256-64m:" + hashlib.sha256(b"".join(parts)).hexdigest()


@dataclass(frozen=True)
class Stamp:
    """What a cache was made from: the source file's size and content digest."""

    size: int
    digest: str

    def to_dict(self) -> dict[str, Any]:
        return {"size": self.size, "digest": self.digest}


def stamp(path: Path) -> Stamp | None:
    """The stamp of ``path`` now; None when it does not exist or cannot be read."""
    try:
        size = path.stat().st_size
        return Stamp(size, digest(path, size))
    except (OSError, ValueError):  # ValueError: not a regular file (inputfile.UnreadableFile)
        return None


def size_of(path: Path) -> int | None:
    try:
        return path.stat().st_size
    except OSError:
        return None


def line_starts(path: Path, parts: int) -> list[int]:
    """``parts`` + 1 offsets that cut the file into about equal parts at line starts (the
    first 0, the last its size); fewer parts when lines are too few to cut."""
    size = path.stat().st_size
    cuts = [0]
    with open_regular(path, follow=False) as f:
        for k in range(1, parts):
            f.seek(max(cuts[-1], size * k // parts))
            skip_line(f)  # to the start of the next line
            if cuts[-1] < f.tell() < size:
                cuts.append(f.tell())
    return [*cuts, size]


def lines_at(path: Path, offsets: Collection[int]) -> dict[int, bytes]:
    """The lines starting at ``offsets`` (from ``lines_with_offsets``)."""
    out: dict[int, bytes] = {}
    if not offsets:
        return out
    with open_regular(path, follow=False) as f:
        for offset in sorted(set(offsets)):
            f.seek(offset)
            out[offset] = f.readline()
    return out


@dataclass
class Cached:
    """A cache that still holds: its ``extra`` facts, its payload (None when not asked), and
    the size of the source it was made from (the lines a reader may trust; it may grow)."""

    extra: dict[str, Any]
    payload: dict[str, Any] | None
    made_from_size: int


def _checksum(extra_line: bytes, payload_line: bytes) -> str:
    return hashlib.sha256(extra_line + b"\n" + payload_line).hexdigest()


def _extra_line(extra: dict[str, Any]) -> bytes:
    return json.dumps(extra, sort_keys=True).encode()


def read_cache(path: Path, version: int, source: Path, *, payload: bool = True) -> Cached | None:
    """The cache at ``path`` if it is of ``version``, its content is what was written, and
    ``source`` is still the file it was made from (size, then content digest); None
    otherwise (missing, stale, edited, damaged)."""
    try:  # bounded: a cache linked to /dev/zero (or a FIFO) is no cache, and never read
        with open_regular(path, follow=False) as f:
            head = json.loads(f.readline(MAX_CACHE_BYTES))
            body = f.read(MAX_CACHE_BYTES + 1)
    except (OSError, ValueError):  # UnreadableFile, a head cut short or not JSON
        return None
    if len(body) > MAX_CACHE_BYTES:
        return None
    if not isinstance(head, dict) or head.get("version") != version:
        return None
    made_from, extra = head.get("made_from"), head.get("extra")
    if not isinstance(made_from, dict) or not isinstance(extra, dict):
        return None
    if made_from.get("size") != size_of(source):  # a cheap no first: the run grew
        return None
    if head.get("checksum") != _checksum(_extra_line(extra), body.rstrip(b"\n")):
        return None  # the cache itself was changed
    try:
        if made_from.get("digest") != digest(source, made_from["size"]):
            return None  # the same size, other content
        data = json.loads(body) if payload else None
    except (OSError, ValueError):
        return None
    if payload and not isinstance(data, dict):
        return None
    return Cached(extra, data, made_from["size"])


def write_cache(
    path: Path, version: int, made_from: Stamp, data: dict[str, Any], extra: dict[str, Any]
) -> bool:
    """Write the cache atomically; False (and nothing left behind) when it cannot be written."""
    return write_cache_parts(path, version, made_from, iter([json.dumps(data)]), extra)


_NO_CHECKSUM = "0" * 64  # the checksum's place in the head, written once the payload is


def write_cache_parts(
    path: Path, version: int, made_from: Stamp, payload: Iterator[str], extra: dict[str, Any]
) -> bool:
    """``write_cache`` of a payload given as JSON text in pieces, each written as it comes:
    the cache of a large run is hundreds of MB, and its text was held whole, in two copies.
    The head (first) holds the checksum over the payload: written last, in its place."""
    extra_line = _extra_line(extra)
    head = {
        "version": version,
        "made_from": made_from.to_dict(),
        "checksum": _NO_CHECKSUM,
        "extra": extra,
    }
    head_line = json.dumps(head, sort_keys=True).encode()
    at = head_line.index(_NO_CHECKSUM.encode())

    def write(f: BinaryIO) -> None:
        f.write(head_line + b"\n")
        h = hashlib.sha256(extra_line + b"\n")
        for piece in payload:
            data = piece.encode()
            h.update(data)
            f.write(data)
        f.write(b"\n")
        f.seek(at)
        f.write(h.hexdigest().encode())

    try:
        safefile.write_atomic_with(path, write)
    except OSError:  # a read-only or full file system: no cache, and no temporary file left
        return False
    return True
