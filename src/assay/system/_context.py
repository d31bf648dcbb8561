"""What every collector shares: where to read from, where to note failures, how to run a tool.

Collectors read ``/proc`` and ``/sys`` through ``Context.read`` so that tests can point them at a
fake tree (``Context(root=tmp_path)``), and run programs through ``Context.run``/``Context.which``
so that tests can stand in for ``nvidia-smi`` on a machine without one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

COMMAND_TIMEOUT_S = 5.0

Runner = Callable[[Sequence[str]], str | None]
Which = Callable[[str], str | None]


def run_command(argv: Sequence[str], timeout: float = COMMAND_TIMEOUT_S) -> str | None:
    """A program's output, or None if it is missing, fails, or takes longer than ``timeout``.

    Never raises: the inventory must not stop because one tool hangs or is broken.
    Some tools print their version on stderr, so stderr stands in for an empty stdout.
    """
    # LC_ALL=C: version lines and CSV numbers in the C locale, whatever the user's locale.
    env = {**os.environ, "LC_ALL": "C"}
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
            env=env,
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    if done.returncode != 0:
        return None
    return done.stdout if done.stdout.strip() else done.stderr


@dataclass
class Context:
    """Where collectors read from and what they could not read."""

    root: Path = Path("/")
    notes: list[str] = field(default_factory=list)
    run: Runner = run_command
    which: Which = shutil.which
    _cpuinfo: list[dict[str, str]] | None = field(default=None, repr=False)

    @property
    def live(self) -> bool:
        """True when reading the machine we run on (not a fake tree)."""
        return self.root == Path("/")

    def path(self, absolute: str) -> Path:
        return self.root / absolute.lstrip("/")

    def read(self, absolute: str) -> str | None:
        """A file's text, stripped; None if it is absent or unreadable.

        sysfs answers some reads with EINVAL (e.g. ``speed`` of a virtual NIC): also None.
        """
        try:
            return self.path(absolute).read_text(errors="replace").strip()
        except (OSError, ValueError):
            return None

    def note(self, message: str) -> None:
        # Two collectors may share a source (L3 size and L3 domains); say it once.
        if message not in self.notes:
            self.notes.append(message)

    def cpuinfo(self) -> list[dict[str, str]]:
        """``/proc/cpuinfo`` as one dict per block (per logical CPU on x86); [] if unreadable."""
        if self._cpuinfo is None:
            text = self.read("/proc/cpuinfo")
            self._cpuinfo = parse_cpuinfo(text) if text else []
        return self._cpuinfo

    def cpuinfo_field(self, key: str) -> str | None:
        """The first value of ``key`` in /proc/cpuinfo (all CPUs of a node are alike)."""
        for block in self.cpuinfo():
            if block.get(key):
                return block[key]
        return None


def parse_cpuinfo(text: str) -> list[dict[str, str]]:
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition(":")
        if sep:
            current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


_SIZE = re.compile(r"^\s*(\d+)\s*([KMG]?)i?B?\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}


def parse_size(text: str) -> int | None:
    """A sysfs cache size ("32768K", "1M", "512") in bytes; None if it is not one."""
    m = _SIZE.match(text)
    if not m:
        return None
    return int(m.group(1)) * _SIZE_FACTOR[m.group(2).upper()]
