"""What a node is (its type) and what it has (its inventory), and the inventory judged against
what is expected of its type.

**Node type.** Two nodes are of one type when they have the same CPU model, the same number of
sockets, the same GPU model (or none), and memory within ±25 % of each other. Those are what a
part failing does not change: a lost DIMM takes 1/16 or 1/8 of the memory (the node is still of
its type, and its inventory fails), while a fat-memory node has 2x (another type). Cores,
logical CPUs, memory, GPU count, link speeds, kernel and MPIs are the node's *inventory*,
checked against the type's expectation.

**Expected inventory** comes from the baseline (the ``[node]`` table ``assay references add``
writes from the accepted run) or, without one, from the node's peers of the same type: each
fact's most common value among them.

Rules (each a PASS, WARN or FAIL with the figure and what was expected):

  cores, logical CPUs, GPUs   fewer than expected: FAIL (disabled cores, SMT off, a GPU gone);
                              more: WARN (not the node the baseline describes)
  memory                      below 97 % of expected: FAIL (one DIMM of 16 is 6 %); the 3 %
                              allows MemTotal's drift between kernels
  link speed, per interface   missing or down, or slower than expected: FAIL
  kernel                      another release: WARN (an upgrade may be intended)
  MPIs                        one expected and not found: FAIL
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.analysis.statistics.stats import Figure
from assay.model import System
from assay.system.fabric import Run, shortfalls
from assay.system.links import link_speeds

MEMORY_TYPE_BAND = 0.25  # memory within ±25 %: the same type
MEMORY_FAIL_BELOW = 0.97  # below 97 % of the expected MemTotal: a part is missing


@dataclass(frozen=True)
class NodeFacts:
    host: str
    cpu_model: str = ""
    sockets: int = 0
    cores: int | None = None
    threads: int | None = None
    memory_bytes: float | None = None
    gpus: int | None = None
    gpu_model: str = ""
    kernel: str = ""
    mpis: tuple[str, ...] = ()  # "openmpi 4.1.4"
    links: dict[str, float] = field(default_factory=dict)  # interface -> B/s
    fabric: dict[str, float] = field(default_factory=dict)  # kernel limit -> value
    boot_id: str = ""  # nodes of one boot id share one kernel (namespaces, containers)

    def type_name(self) -> str:
        """The node type as people say it: "AMD EPYC 9654, 2 sockets, 768 GiB, 4 x H100"."""
        parts = [self.cpu_model or "unknown CPU"]
        if self.sockets:
            parts.append(f"{self.sockets} socket{'s' if self.sockets > 1 else ''}")
        if self.memory_bytes:
            parts.append(f"{self.memory_bytes / 2**30:.0f} GiB")
        if self.gpu_model:
            parts.append(f"{self.gpus or '?'} x {self.gpu_model}")
        return ", ".join(parts)

    def to_table(self) -> dict[str, Any]:
        """The ``[node]`` table of a reference set (what its figures were measured on)."""
        out: dict[str, Any] = {"cpu_model": self.cpu_model, "sockets": self.sockets}
        for key in ("cores", "threads", "memory_bytes", "gpus"):
            value = getattr(self, key)
            if value is not None:
                out[key] = int(value)
        if self.gpu_model:
            out["gpu_model"] = self.gpu_model
        if self.kernel:
            out["kernel"] = self.kernel
        if self.mpis:
            out["mpis"] = list(self.mpis)
        if self.links:
            out["links"] = {k: v * 8 / 1e9 for k, v in sorted(self.links.items())}  # Gb/s
        return out

    @classmethod
    def from_table(cls, host: str, table: Mapping[str, Any]) -> NodeFacts:
        links = {str(k): float(v) * 1e9 / 8 for k, v in (table.get("links") or {}).items()}
        return cls(
            host=host,
            cpu_model=str(table.get("cpu_model", "")),
            sockets=int(table.get("sockets", 0) or 0),
            cores=_int_or_none(table.get("cores")),
            threads=_int_or_none(table.get("threads")),
            memory_bytes=_float_or_none(table.get("memory_bytes")),
            gpus=_int_or_none(table.get("gpus")),
            gpu_model=str(table.get("gpu_model", "")),
            kernel=str(table.get("kernel", "")),
            mpis=tuple(str(m) for m in table.get("mpis") or ()),
            links=links,
        )


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _float_or_none(v: Any) -> float | None:
    return None if v is None else float(v)


def facts_of_system(system: System) -> NodeFacts:
    """A node's facts from a run's system record (a local run: the node it ran on)."""
    models = sorted({str(g.get("name")) for g in system.gpus if g.get("name")})
    return NodeFacts(
        host=system.hostname or "this node",
        cpu_model=system.cpu_model or "",
        sockets=system.sockets or 0,
        cores=system.cores,
        threads=system.threads,
        memory_bytes=float(system.memory_bytes) if system.memory_bytes else None,
        gpus=len(system.gpus),
        gpu_model=",".join(models),
        kernel=system.kernel or "",
        mpis=tuple(f"{m.name} {m.version}".strip() for m in system.mpis),
        links=link_speeds(system),
        fabric=dict(system.fabric),
    )


def facts_of_figures(figures: Mapping[str, Iterable[Figure]]) -> dict[str, NodeFacts]:
    """Each node's facts from its inventory figures (``inventory.*``, per host)."""
    out = {}
    for host, figs in figures.items():
        values: dict[str, float] = {}
        links: dict[str, float] = {}
        fabric: dict[str, float] = {}
        words: dict[str, Any] = {}
        for f in figs:
            s = f.sample
            if s.metric == "inventory.link_speed":
                links[str(s.params.get("iface"))] = s.value
            elif s.metric == "inventory.fabric":
                fabric[str(s.params.get("limit"))] = s.value
            elif s.metric == "inventory.node":
                words = dict(s.params)
            elif s.metric.startswith("inventory."):
                values[s.metric.removeprefix("inventory.")] = s.value
        if not values and not words:
            continue
        out[host] = NodeFacts(
            host=host,
            cpu_model=str(words.get("cpu_model", "")),
            sockets=int(words.get("sockets") or 0),
            cores=_int_or_none(values.get("cores")),
            threads=_int_or_none(values.get("threads")),
            memory_bytes=values.get("memory"),
            gpus=_int_or_none(values.get("gpus")),
            gpu_model=str(words.get("gpu_model", "")),
            kernel=str(words.get("kernel", "")),
            mpis=tuple(m for m in str(words.get("mpis", "")).split(",") if m),
            links=links,
            fabric=fabric,
            boot_id=str(words.get("boot_id", "")),
        )
    return out


def type_mismatch(node: NodeFacts, expected: NodeFacts) -> str | None:
    """Why ``node`` is not of ``expected``'s type, or None when it is (see the module
    docstring). A fact either side does not know is not held against it."""
    why = []
    if node.cpu_model and expected.cpu_model and node.cpu_model != expected.cpu_model:
        why.append(f"CPU {node.cpu_model!r}, expected {expected.cpu_model!r}")
    if node.sockets and expected.sockets and node.sockets != expected.sockets:
        why.append(f"{node.sockets} sockets, expected {expected.sockets}")
    if node.gpu_model != expected.gpu_model and node.gpu_model and expected.gpu_model:
        why.append(f"GPU {node.gpu_model!r}, expected {expected.gpu_model!r}")
    if node.memory_bytes and expected.memory_bytes:
        ratio = node.memory_bytes / expected.memory_bytes
        if abs(ratio - 1) > MEMORY_TYPE_BAND:
            why.append(
                f"{node.memory_bytes / 2**30:.0f} GiB of memory, expected "
                f"{expected.memory_bytes / 2**30:.0f} GiB"
            )
    return "; ".join(why) or None


def same_type(a: NodeFacts, b: NodeFacts) -> bool:
    return type_mismatch(a, b) is None


def group_by_type(nodes: Iterable[NodeFacts]) -> list[list[NodeFacts]]:
    """Nodes in groups of one type, each group led by its first node."""
    groups: list[list[NodeFacts]] = []
    for n in nodes:
        for g in groups:
            if same_type(n, g[0]):
                g.append(n)
                break
        else:
            groups.append([n])
    return groups


def _mode(values: list[Any]) -> Any:
    """The most common value; among equally common ones the median of numbers, else the first."""
    if not values:
        return None
    counts = Counter(values).most_common()
    top = [v for v, c in counts if c == counts[0][1]]
    if len(top) > 1 and all(isinstance(v, int | float) for v in top):
        return statistics.median_low(top)
    return top[0]


def expected_of_peers(peers: list[NodeFacts]) -> NodeFacts:
    """What the nodes of one type have in common: each fact's most common value."""
    first = peers[0]
    ifaces = sorted({i for p in peers for i in p.links})
    links = {}
    for iface in ifaces:
        speeds = [p.links[iface] for p in peers if iface in p.links]
        if len(speeds) * 2 > len(peers):  # an interface most nodes have
            links[iface] = _mode(speeds)
    mpi_sets = Counter(m for p in peers for m in p.mpis)
    return NodeFacts(
        host=f"the most common of {len(peers)} nodes",
        cpu_model=first.cpu_model,
        sockets=first.sockets,
        cores=_mode([p.cores for p in peers if p.cores is not None]),
        threads=_mode([p.threads for p in peers if p.threads is not None]),
        memory_bytes=_mode([p.memory_bytes for p in peers if p.memory_bytes is not None]),
        gpus=_mode([p.gpus for p in peers if p.gpus is not None]),
        gpu_model=first.gpu_model,
        kernel=_mode([p.kernel for p in peers if p.kernel]) or "",
        mpis=tuple(sorted(m for m, c in mpi_sets.items() if c * 2 > len(peers))),
        links=links,
    )


@dataclass(frozen=True)
class FactCheck:
    """One inventory fact of one node against its expectation."""

    check: str  # inventory.cores, inventory.link_speed eth0, ...
    metric: str
    grade: str  # PASS | WARN | FAIL
    found: float | str | None
    expected: float | str | None
    unit: str  # canonical ("1", "B", "B/s") or "" for words
    note: str = ""


def inventory_checks(node: NodeFacts, expected: NodeFacts) -> list[FactCheck]:
    """Every fact ``expected`` states, judged on ``node`` (the rules in the module docstring)."""
    out = []
    for key, metric, what in (
        ("cores", "inventory.cores", "physical cores"),
        ("threads", "inventory.threads", "logical CPUs"),
        ("gpus", "inventory.gpus", "GPUs"),
    ):
        want, have = getattr(expected, key), getattr(node, key)
        if want is None:
            continue
        if have is None:
            out.append(FactCheck(metric, metric, "FAIL", None, want, "1", f"{what}: not found"))
        elif have < want:
            out.append(FactCheck(metric, metric, "FAIL", have, want, "1", f"fewer {what}"))
        elif have > want:
            note = f"more {what} than the baseline's node"
            out.append(FactCheck(metric, metric, "WARN", have, want, "1", note))
        else:
            out.append(FactCheck(metric, metric, "PASS", have, want, "1"))
    if expected.memory_bytes:
        m = "inventory.memory"
        have_m = node.memory_bytes
        if have_m is None:
            out.append(FactCheck(m, m, "FAIL", None, expected.memory_bytes, "B", "not read"))
        else:
            bad = have_m < MEMORY_FAIL_BELOW * expected.memory_bytes
            note = f"below {MEMORY_FAIL_BELOW:.0%} of expected" if bad else ""
            grade = "FAIL" if bad else "PASS"
            out.append(FactCheck(m, m, grade, have_m, expected.memory_bytes, "B", note))
    for iface, want_speed in sorted(expected.links.items()):
        name = f"inventory.link_speed {iface}"
        speed = node.links.get(iface)
        if speed is None:
            out.append(FactCheck(name, "inventory.link_speed", "FAIL", None, want_speed, "B/s",
                                 f"{iface}: missing, down or its speed unknown"))  # fmt: skip
        else:
            grade = "FAIL" if speed < want_speed else "PASS"
            note = f"{iface} trained slower than expected" if grade == "FAIL" else ""
            out.append(FactCheck(name, "inventory.link_speed", grade, speed, want_speed, "B/s",
                                 note))  # fmt: skip
    if expected.kernel:
        grade = "PASS" if node.kernel == expected.kernel else "WARN"
        note = "" if grade == "PASS" else "another kernel than the baseline's"
        out.append(
            FactCheck("inventory.kernel", "inventory.kernel", grade, node.kernel or None,
                      expected.kernel, "", note)
        )  # fmt: skip
    have_mpis = {m.split()[0] for m in node.mpis if m.split()}  # a node's: as it was collected
    for mpi in expected.mpis:
        name = mpi.split()[0]
        found = next((m for m in node.mpis if m.split()[:1] == [name]), None)
        grade = "PASS" if name in have_mpis else "FAIL"
        out.append(
            FactCheck(f"inventory.mpi {name}", "inventory.mpi", grade, found, mpi, "",
                      "" if found else f"{name} not found")
        )  # fmt: skip
    return out


def fabric_check(node: NodeFacts, run: Run) -> FactCheck | None:
    """The node's kernel limits against what ``run`` needs (``assay.system.fabric``): a WARN
    naming the tightest limit and the value that would do, else a PASS; None when the node's
    limits were not read. A WARN, not a FAIL: the node measures fine, the next bigger run
    over TCP is what breaks."""
    limits = {k: int(v) for k, v in node.fabric.items()}
    if not limits:
        return None
    short = shortfalls(limits, run)
    if not short:
        return FactCheck("inventory.fabric", "inventory.fabric", "PASS", None, None, "1",
                         f"kernel limits enough for {run.nodes} nodes")  # fmt: skip
    worst = min(short, key=lambda s: s.have / s.need)
    note = "; ".join(s.message(run) for s in short)
    return FactCheck("inventory.fabric", "inventory.fabric", "WARN", worst.have, worst.need,
                     "1", note)  # fmt: skip
