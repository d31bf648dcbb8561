"""Derived files kept beside a run's records, and reading its sample lines by position.

A run directory's records are the truth; a cache file (``figures.cache.json``: the run's
samples folded into figures) only saves reading a million sample lines again. It carries the
stamp of the file it was made from (size and modification time of ``samples.jsonl``, which is
only ever appended to), and is used only while that stamp still holds: a run that gained
samples since, or a cache written by another assay (``version``), is simply made again. A
cache that cannot be written (a read-only or full file system) is no error: the next report
folds the samples again.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any

from assay.errors import StoreError
from assay.store.rundir import write_atomic


def stamp(path: Path) -> list[int] | None:
    """Size and modification time (ns) of ``path``; None when it does not exist."""
    try:
        st = path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns]


def lines_with_offsets(
    path: Path, start: int = 0, end: int | None = None
) -> Iterator[tuple[int, bytes]]:
    """Every complete line of a JSONL file with the byte offset it starts at (a last line
    cut short by a kill is left out, as ``read_jsonl`` does); with ``start`` and ``end`` (line
    starts, from ``line_starts``) the lines of that part only."""
    if not path.exists():
        return
    offset = start
    with open(path, "rb") as f:
        f.seek(start)
        for line in f:
            if (end is not None and offset >= end) or not line.endswith(b"\n"):
                break
            yield offset, line
            offset += len(line)


def line_starts(path: Path, parts: int) -> list[int]:
    """``parts`` + 1 offsets that cut the file into about equal parts at line starts (the
    first 0, the last its size); fewer parts when lines are too few to cut."""
    size = path.stat().st_size
    cuts = [0]
    with open(path, "rb") as f:
        for k in range(1, parts):
            f.seek(max(cuts[-1], size * k // parts))
            f.readline()  # to the start of the next line
            if cuts[-1] < f.tell() < size:
                cuts.append(f.tell())
    return [*cuts, size]


def lines_at(path: Path, offsets: Collection[int]) -> dict[int, bytes]:
    """The lines starting at ``offsets`` (from ``lines_with_offsets``)."""
    out: dict[int, bytes] = {}
    if not offsets:
        return out
    with open(path, "rb") as f:
        for offset in sorted(set(offsets)):
            f.seek(offset)
            out[offset] = f.readline()
    return out


def read_cache(path: Path, version: int, made_from: list[int] | None) -> dict[str, Any] | None:
    """The cache at ``path`` if it is of ``version`` and was made from a file with the stamp
    ``made_from``; None otherwise (missing, stale, damaged)."""
    if made_from is None:
        return None
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if data.get("version") != version or data.get("made_from") != made_from:
        return None
    return data


def write_cache(path: Path, version: int, made_from: list[int], data: dict[str, Any]) -> bool:
    """Write the cache atomically; False (and nothing left behind) when it cannot be written."""
    text = json.dumps({"version": version, "made_from": made_from, **data})
    with contextlib.suppress(StoreError):  # write_atomic leaves no temporary file behind
        write_atomic(path, text)
        return True
    return False
