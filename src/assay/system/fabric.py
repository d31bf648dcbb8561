"""Fabric limits: what a run over N nodes needs of each node's kernel, read as facts.

A big MPI run over TCP (Ethernet, IPoIB, or UCX/libfabric falling back to it) fails on limits
that have nothing to do with the network's speed, and fails with messages that do not name
them (Open MPI: ``connect() to <peer> failed: Operation now in progress (115)``; UCX:
``connect(...) failed``). assay reads them on every node and says, before a run, which one an
N-node run exceeds and the value that would do:

- **the neighbour (ARP/NDP) table**: one entry per peer a node talks to over IP.
  ``gc_thresh3`` is the hard limit (past it the kernel refuses new neighbours: dmesg says
  ``neighbor table overflow``), ``gc_thresh2`` the soft one (past it for 5 s the kernel drops
  entries, and connects stall while they are resolved again). Nodes that share one kernel
  (network namespaces, containers) share one table: N nodes then need N(N-1) entries in it.
- **open files per process** (``RLIMIT_NOFILE``): a rank holds a socket per peer rank it has
  talked to (an all-to-all: every rank).
- **ephemeral ports** (``net.ipv4.ip_local_port_range``): each connection a node opens takes
  one; a node's ranks open about half of their connections.
- **listen backlog** (``net.core.somaxconn``): the connects a rank can have waiting while it
  accepts; an all-pairs start has every peer connect at once.

Each rule is a line of ``LIMITS`` (data, not code): the least value that serves a run of
``ranks`` ranks, ``ppn`` per node, over ``nodes`` nodes. ``SLACK`` leaves room for what else
a node talks to (login, storage, gateways, the launcher's own daemons).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from assay.system._context import Context

SLACK = 64  # neighbours and descriptors a node needs besides the run's peers


@dataclass(frozen=True)
class Run:
    """The shape of a run, as the limits see it."""

    nodes: int
    ppn: int = 1
    shared_kernel: bool = False  # every node on one kernel (namespaces): one table for all

    @property
    def ranks(self) -> int:
        return self.nodes * self.ppn

    @property
    def neighbours(self) -> int:
        """Entries in one neighbour table: each node's peers, or every node's on one kernel."""
        peers = self.nodes - 1
        return peers * self.nodes if self.shared_kernel else peers


@dataclass(frozen=True)
class Limit:
    key: str  # in System.fabric and the inventory's params
    label: str  # as a person says it
    setting: str  # what to change: the sysctl, or the limit's name
    need: Callable[[Run], int]  # the least value that serves the run
    why: str  # what breaks when it is short


LIMITS: tuple[Limit, ...] = (
    Limit(
        "neigh_gc_thresh3", "neighbour table, hard limit", "net.ipv4.neigh.default.gc_thresh3",
        lambda r: r.neighbours + SLACK,
        "past it the kernel refuses new peers: connects fail (dmesg: neighbor table overflow)",
    ),
    Limit(
        "neigh_gc_thresh2", "neighbour table, soft limit", "net.ipv4.neigh.default.gc_thresh2",
        lambda r: r.neighbours + SLACK,
        "past it entries are dropped after 5 s: connects stall while peers are resolved again",
    ),
    Limit(
        "nofile", "open files per process", "ulimit -n (RLIMIT_NOFILE, limits.conf nofile)",
        lambda r: r.ranks - 1 + SLACK,
        "a rank holds a socket per peer it talked to: past it, accept/connect fail (EMFILE)",
    ),
    Limit(
        "ephemeral_ports", "ephemeral ports", "net.ipv4.ip_local_port_range",
        lambda r: r.ppn * (r.ranks - r.ppn) // 2 + SLACK,
        "each connection a node opens takes one: past it, connect fails (EADDRNOTAVAIL)",
    ),
    Limit(
        "somaxconn", "listen backlog", "net.core.somaxconn",
        lambda r: r.nodes - 1,
        "connects past it wait for the SYN to be sent again (1 s, 3 s, ...): a slow start",
    ),
)  # fmt: skip

BY_KEY = {limit.key: limit for limit in LIMITS}

_NOFILE = re.compile(r"^Max open files\s+(\d+|unlimited)\s", re.MULTILINE)


def _int(text: str | None) -> int | None:
    return int(text) if text is not None and text.strip().isdigit() else None


def fabric_limits(ctx: Context) -> dict[str, int] | None:
    """This node's limits (``LIMITS`` keys); a limit that cannot be read is left out."""
    out: dict[str, int] = {}
    for n in (1, 2, 3):
        value = _int(ctx.read(f"/proc/sys/net/ipv4/neigh/default/gc_thresh{n}"))
        if value is not None:
            out[f"neigh_gc_thresh{n}"] = value
    ports = (ctx.read("/proc/sys/net/ipv4/ip_local_port_range") or "").split()
    if len(ports) == 2 and all(p.isdigit() for p in ports):
        out["ephemeral_ports"] = int(ports[1]) - int(ports[0]) + 1
    somaxconn = _int(ctx.read("/proc/sys/net/core/somaxconn"))
    if somaxconn is not None:
        out["somaxconn"] = somaxconn
    m = _NOFILE.search(ctx.read("/proc/self/limits") or "")
    if m:
        out["nofile"] = 2**31 - 1 if m[1] == "unlimited" else int(m[1])
    if not out:
        ctx.note("fabric: no kernel limit could be read (/proc/sys)")
    return out or None


@dataclass(frozen=True)
class Shortfall:
    limit: Limit
    have: int
    need: int

    def advice(self) -> str:
        """The value that would do, rounded up to a power of two with room to grow."""
        value = 1 << (2 * self.need - 1).bit_length()
        if self.limit.key == "ephemeral_ports":
            return f"widen {self.limit.setting} to {min(value, 64512)} ports (e.g. 1024 65535)"
        if self.limit.key == "nofile":
            return f"raise {self.limit.setting} to {value}"
        return f"sysctl -w {self.limit.setting}={value}"

    def message(self, run: Run) -> str:
        shared = ", the nodes sharing one kernel" if run.shared_kernel else ""
        return (
            f"{self.limit.label} ({self.limit.setting}) is {self.have}; a {run.nodes}-node run "
            f"({run.ppn} rank(s) per node{shared}) needs {self.need}: {self.limit.why}. "
            f"{self.advice()}"
        )


def shortfalls(limits: dict[str, int], run: Run) -> list[Shortfall]:
    """The limits this node has below what ``run`` needs (a limit not read is not judged)."""
    out = []
    for limit in LIMITS:
        have, need = limits.get(limit.key), limit.need(run)
        if have is not None and have < need:
            out.append(Shortfall(limit, have, need))
    return out


def largest_run(limit: Limit, have: int, *, ppn: int = 1, shared_kernel: bool = False) -> int:
    """The most nodes a run can have before ``have`` falls short (bisection: needs grow with
    the node count)."""
    lo, hi = 1, 1 << 24
    if limit.need(Run(lo, ppn, shared_kernel)) > have:
        return 0
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if limit.need(Run(mid, ppn, shared_kernel)) <= have:
            lo = mid
        else:
            hi = mid - 1
    return lo
