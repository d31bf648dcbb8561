"""Who writes a run, and whether that process still lives: the registry of live runs.

A run being written has an entry ``$ASSAY_HOME/live/<run-id>.json`` naming its owner (pid,
host, boot id and the process's start time). The entry goes when the run ends. An entry whose
owner is dead is a run that assay never finished (SIGKILL, a crash, a reboot); the next assay
that opens the store marks it interrupted (``assay.store.recover``).

The pid alone would not do: pids are reused. Same host, same boot (``/proc/sys/kernel/random/
boot_id``) and the same start time (field 22 of ``/proc/PID/stat``, clock ticks since boot)
identify one process for good. A run owned by another host (a shared ``ASSAY_HOME``) cannot be
judged from here and is left alone.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from assay.inputfile import read_side
from assay.store.safefile import write_atomic

LIVE_DIR = "live"
MAX_ENTRY = 2**16  # an entry is a line of some 150 bytes; a larger one is damaged


def _read(path: str) -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return ""


def boot_id() -> str:
    return _read("/proc/sys/kernel/random/boot_id")


def process_start(pid: int) -> int | None:
    """The start time of ``pid`` in clock ticks since boot; None when there is no such process.

    A zombie counts as dead: it has ended and only waits for its parent to reap it."""
    stat = _read(f"/proc/{pid}/stat")
    if not stat:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # the command (field 2) may hold spaces
    if fields[0] in ("Z", "X"):
        return None
    return int(fields[19])  # field 22 overall: fields[0] is field 3


@dataclass(frozen=True)
class Owner:
    pid: int
    host: str
    boot_id: str
    start: int | None
    source: str = "assay"  # "assay" for a measuring run; "import:..." shares no node

    @classmethod
    def current(cls, source: str = "assay") -> Owner:
        pid = os.getpid()
        return cls(pid, socket.gethostname(), boot_id(), process_start(pid), source)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Owner:
        return cls(
            int(d["pid"]), str(d["host"]), str(d.get("boot_id", "")), d.get("start"),
            str(d.get("source", "assay")),
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def alive(self) -> bool | None:
        """True or False on this host; None for a process of another host (cannot tell)."""
        if self.host != socket.gethostname():
            return None
        if self.boot_id and self.boot_id != boot_id():
            return False  # the machine rebooted since: nothing of that boot lives
        start = process_start(self.pid)
        return start is not None and (self.start is None or start == self.start)

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def live_dir(home: Path) -> Path:
    return home / LIVE_DIR


def register(home: Path, run_id: str, owner: Owner) -> None:
    d = live_dir(home)
    d.mkdir(parents=True, exist_ok=True)
    write_atomic(d / f"{run_id}.json", json.dumps(owner.to_dict()) + "\n")


def unregister(home: Path, run_id: str) -> None:
    with contextlib.suppress(OSError):
        (live_dir(home) / f"{run_id}.json").unlink()


def entries(home: Path) -> Iterator[tuple[str, Owner | None, Path]]:
    """(run id, its owner or None when the entry is unreadable, the entry's path)."""
    d = live_dir(home)
    if not d.is_dir():
        return
    for p in sorted(d.glob("*.json")):
        try:
            owner = Owner.from_dict(json.loads(read_side(p, "live entry", MAX_ENTRY)))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            owner = None
        yield p.stem, owner, p


def others_running(home: Path, run_id: str) -> list[tuple[str, Owner]]:
    """Measuring runs other than ``run_id`` whose owner lives on this host now."""
    return [
        (rid, owner)
        for rid, owner, _ in entries(home)
        if rid != run_id and owner is not None and owner.source == "assay" and owner.alive()
    ]
