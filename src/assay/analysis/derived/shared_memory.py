"""Shared memory is not a link: an inter-node latency no network can give.

Two "nodes" that share one kernel (containers, network namespaces on one machine: the same
``/proc/sys/kernel/random/boot_id``) may be joined by shared memory, not the network: UCX
(MPICH's ch4:ucx) picks it between namespaces on its own — 0.2–0.6 µs between the namespace
nodes here, where the veths take about 14 µs (docs/cluster.md). Its figures are then the
memory's, not the link's (MPICH put 1,703 MB/s through a link throttled to 100 Mbit/s), and an
all-pairs matrix of them names no slow link. A latency below the floor of
:func:`below_network_floor` is therefore flagged "shared memory (the nodes share a kernel?),
not a link" and never shown as a link's figure: in the all-pairs matrices
(``assay.analysis.matrix.allpairs``) and in the two-node inter-node p2p tables
(:func:`shared_memory_series`, from ``assay.analysis.derived.derive``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assay.analysis.derived.series import series_label
from assay.analysis.statistics.stats import Figure
from assay.vocab import P2P_METHOD

NETWORK_FLOOR_S = 0.8e-6  # the number and its reasons: below_network_floor
WORDS = "shared memory (the nodes share a kernel?), not a link"
CHUNK = 1 << 22  # links compared at a time (a bool per link of a whole 10,000-node matrix: 50 MB)


def below_network_floor(latency_s: np.ndarray, floor_s: float = NETWORK_FLOOR_S) -> np.ndarray:
    """Which one-way MPI latencies (half the round trip, seconds) are below what any network
    takes, 0.8 µs: the path between two nodes crosses, one way, the sender's PCIe to its NIC,
    the NIC, the wire and at least a switch (about 0.1 µs a hop), the receiver's NIC and PCIe
    into memory — 0.5–0.7 µs in hardware before any MPI software. The lowest published MPI
    small-message latencies between two nodes are about 1 µs (osu_latency at 0–8 B: InfiniPath
    1.05 µs in QLogic's manual, Omni-Path and InfiniBand HDR/NDR with UCX 0.9–1.1 µs);
    shared memory between two ranks of one kernel measured 0.2–0.6 µs here. 0.8 µs lies
    between them, below every fabric (a fabric measured there would be news, worth a look
    either way) and above what shared memory gives. NaN (not measured) is never below."""
    with np.errstate(invalid="ignore"):
        return np.asarray(latency_s) < floor_s


def shared_links(latency: np.ndarray) -> np.ndarray:
    """The condensed indices of a latency matrix's links below the network floor, a chunk at a
    time (no bool per link of a whole matrix)."""
    found = [
        np.flatnonzero(below_network_floor(latency[start : start + CHUNK])) + start
        for start in range(0, latency.size, CHUNK)
    ]
    return np.concatenate(found) if found else np.zeros(0, np.int64)


@dataclass(frozen=True)
class SharedMemory:
    """A two-node series (one MPI between two named nodes: ``series_label`` names both) with a
    latency below the network floor: none of its figures is the link's."""

    series: str  # as the p2p tables name their columns (MPI, placement, the two nodes)
    latency_s: float  # its lowest latency
    size: int  # at this message size (bytes)


def shared_memory_series(figures: list[Figure]) -> list[SharedMemory]:
    """The inter-node p2p series (placement ``inter-node``: two nodes, one rank each) with a
    latency below the network floor (:func:`below_network_floor`)."""
    lowest: dict[str, tuple[float, int]] = {}
    for f in figures:
        s = f.sample
        if (
            s.probe in P2P_METHOD
            and s.metric == "p2p.latency"
            and s.params.get("placement") == "inter-node"
            and below_network_floor(np.float64(s.value))
        ):
            key = series_label(s)
            if key not in lowest or s.value < lowest[key][0]:
                lowest[key] = (s.value, int(s.params.get("size", 0)))
    return [SharedMemory(k, v, size) for k, (v, size) in sorted(lowest.items())]


def not_links(figures: list[Figure], flags: list[SharedMemory]) -> set[int]:
    """``id()`` of the inter-node figures (any metric) of the flagged series: not the link's."""
    series = {f.series for f in flags}
    return {
        id(f)
        for f in figures
        if series
        and f.sample.params.get("placement") == "inter-node"
        and series_label(f.sample) in series
    }
