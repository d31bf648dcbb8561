"""A job that could not connect, told from one whose partner stopped answering.

When an MPI over TCP cannot open a connection it says so in its own words on stderr; a job
that fails that way has no lost node, and re-running it without "lost" nodes loses pairs for
nothing. The words, as the libraries print them (real lines, from their issue trackers):

- Open MPI's TCP BTL (help-mpi-btl-tcp.txt, "client connect fail")::

      Message:    connect() to 9.9.11.33:1048 failed
      Error:      Operation now in progress (115)

- UCX's TCP transport::

      connect(fd=16, dest_addr=10.209.44.35:48547) failed: Connection refused

- the kernel, when the shared or per-node neighbour table is full (dmesg)::

      neighbour: arp_cache: neighbor table overflow!

Pure: text in, what it says out. The runner reads the files and asks dmesg (its mark before
an all-pairs job, its new lines after: an overflow is named even when the MPI retried through
it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assay.system.fabric import BY_KEY, Run, Shortfall

# (library, pattern with groups peer and error)
PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    (
        "Open MPI",
        re.compile(
            r"Message:\s+connect\(\) to (?P<peer>[^\s]{1,80}) failed\s*\n\s*Error:\s+"
            r"(?P<error>[^\n]{1,120})"
        ),
    ),
    (
        "UCX",
        re.compile(
            r"connect\(fd=\d{1,9}, dest_addr=(?P<peer>[^\s)]{1,80})\) failed: "
            r"(?P<error>[^\n>]{1,120})"
        ),
    ),
)
NEIGHBOUR_OVERFLOW = re.compile(r"neighbou?r table overflow", re.IGNORECASE)
_STAMP = re.compile(r"\s*\[\s*(\d{1,10}\.\d{1,9})\]")  # dmesg's seconds since boot


@dataclass(frozen=True)
class ConnectFailure:
    library: str
    peer: str  # address:port as the library printed it
    error: str  # "Operation now in progress (115)", "Connection refused"


def connect_failures(stderr: str) -> list[ConnectFailure]:
    """Every failed connect the MPI libraries printed, in order, each once."""
    seen: dict[tuple[str, str, str], ConnectFailure] = {}
    for library, pattern in PATTERNS:
        for m in pattern.finditer(stderr):
            f = ConnectFailure(library, m["peer"], m["error"].strip())
            seen.setdefault((f.library, f.peer, f.error), f)
    return list(seen.values())


def kernel_clock(dmesg: str) -> float:
    """The stamp of dmesg's last stamped line (seconds since boot, ``[ 12327.550847]``), 0 when
    none: a mark that tells the lines after it from the older ones."""
    for line in reversed(dmesg.splitlines()):
        m = _STAMP.match(line)
        if m:
            return float(m[1])
    return 0.0


def neighbour_overflows(dmesg: str, since: float | None = None) -> list[str]:
    """The kernel's lines saying its neighbour table is full; with ``since`` (a
    ``kernel_clock`` mark) only those stamped after it (and those without a stamp)."""
    out = []
    for line in dmesg.splitlines():
        if not NEIGHBOUR_OVERFLOW.search(line):
            continue
        m = _STAMP.match(line)
        if since is None or m is None or float(m[1]) > since:
            out.append(line.strip())
    return out


def overflowed(overflows: list[str], run: Run) -> str:
    """One sentence for the run's notes: the neighbour table overflowed while a job ran
    (whether or not a connect failed: Open MPI retried and finished at 32 namespace nodes),
    and what a run of this shape needs of it."""
    need = BY_KEY["neigh_gc_thresh3"].need(run)
    advice = Shortfall(BY_KEY["neigh_gc_thresh3"], 0, need).advice()
    shared = " (its nodes sharing one kernel)" if run.shared_kernel else ""
    return (
        f"the kernel's neighbour table overflowed while it ran ({len(overflows)} line(s) in "
        f"dmesg: {overflows[-1][:120]}): connects past it failed or waited for their peers to "
        f"be resolved again, and links measured then may read slow; a {run.nodes}-node run"
        f"{shared} needs {need:,} entries: {advice} (and gc_thresh2)"
    )


def describe(failures: list[ConnectFailure], overflows: list[str], limits: list[str]) -> str:
    """One sentence for the run's notes: what failed, and the likely cause."""
    first = failures[0]
    peers = sorted({f.peer.rsplit(":", 1)[0] for f in failures})
    text = (
        f"could not connect: {len(failures)} connect(s) failed ({first.library}: to "
        f"{first.peer}: {first.error}; {len(peers)} peer address(es))"
    )
    if overflows:
        return f"{text}; the kernel's neighbour table is full (dmesg: {overflows[-1][:120]})"
    if limits:
        return f"{text}; likely cause: {limits[0]}"
    return f"{text}; no fabric limit of this node falls short: a firewall or routing?"
