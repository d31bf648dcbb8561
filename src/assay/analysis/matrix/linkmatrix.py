"""A link matrix in memory: one figure per node pair, as a condensed upper triangle.

For N nodes (node i = the i-th host) the N(N-1)/2 links (i < j) are one 1-D numpy array in
scipy's ``squareform`` order::

    k(i, j) = N·i − i(i+1)/2 + (j − i − 1)        for 0 ≤ i < j < N

NaN = not measured (a lost node, a pair never reached). 10,000 nodes are 5·10⁷ links, 200 MB
of float32: never a dict per link, never an N×N array. Latency in seconds (half the round
trip), bandwidth in bytes/s. The layout's arithmetic is ``assay.condensed``'s; a
``LinkMatrix`` is what the analysis takes: one metric of one MPI's sweep, made from the probe's
files (``assay.figures.allpairs``, through ``assay.parsers.allpairs_file``) or from the
per-pair samples of runs made before the probe (``assay.analysis.matrix.allpairs.link_matrices``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from assay.condensed import link_index, link_nodes, n_links

CHUNK = 1 << 20  # links folded at a time: bounded temporaries at any N


@dataclass
class RepeatSpread:
    """How a link's repeated measurements (``--repeat`` sweeps) spread: the link whose
    max/min is widest, and the median of the repeated links' max/min (every link's up to 10⁶
    links, a systematic sample of them beyond)."""

    widest: int  # the condensed index of the link
    widest_ratio: float
    median_ratio: float


@dataclass
class Retests:
    """Later measurements of some links (retest rounds in the same allocation), sparse: one
    entry per measurement, ``links`` the condensed index, ``rounds`` the round it came from."""

    links: np.ndarray  # int64
    values: np.ndarray  # float
    rounds: np.ndarray  # int32

    @classmethod
    def none(cls) -> Retests:
        return cls(np.zeros(0, np.int64), np.zeros(0, np.float32), np.zeros(0, np.int32))

    def __len__(self) -> int:
        return int(self.links.size)


@dataclass(frozen=True)
class Lost:
    """A node the sweep lost (its rank died, or stopped answering): the pairs left were
    measured without it by a resume job."""

    node: int  # its index in the matrix
    resumed_in: str  # the resume job's id


@dataclass
class LinkMatrix:
    """One all-pairs figure (a metric, at one message size, with one MPI) over N nodes."""

    hosts: list[str]  # index = node
    metric: str  # "p2p.latency" | "p2p.bandwidth"
    better: str  # "lower" | "higher"
    size: int  # message size (bytes) of the figure
    mpi: str
    values: np.ndarray  # condensed; a link measured several times: their median
    repetitions: tuple[int, int] = (1, 1)  # fewest, most measurements of a measured link
    spread: RepeatSpread | None = None  # when a link was measured more than once
    concurrent: int = 1  # most pairs measured at the same time
    retests: Retests = field(default_factory=Retests.none)
    notes: list[str] = field(default_factory=list)  # what the reader must know (cut short, …)
    # links measured through shared memory, not the network (condensed indices: the latency
    # below the network floor, ``assay.analysis.derived.shared_memory``; a bandwidth matrix is given
    # its latency's): not link figures. A latency matrix's own are found by the analysis too.
    shared: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    lost: list[Lost] = field(default_factory=list)  # nodes the sweep went on without

    def __post_init__(self) -> None:
        if self.values.ndim != 1 or self.values.size != n_links(len(self.hosts)):
            raise ValueError(
                f"{len(self.hosts)} hosts need {n_links(len(self.hosts))} links, "
                f"not {self.values.size}"
            )

    @property
    def n(self) -> int:
        return len(self.hosts)

    def value(self, a: str, b: str) -> float | None:
        """The figure of the link between hosts a and b; None when not measured."""
        i, j = self.hosts.index(a), self.hosts.index(b)
        if i == j:
            return None
        v = float(self.values[link_index(self.n, i, j)])
        return None if math.isnan(v) else v

    def pair(self, k: int) -> tuple[str, str]:
        i, j = link_nodes(self.n, np.array([k]))
        return self.hosts[int(i[0])], self.hosts[int(j[0])]


def from_pairs(
    hosts: Sequence[str], links: Mapping[tuple[str, str], float], dtype: type = np.float64
) -> np.ndarray:
    """A condensed array from a dict of a few links (a run of per-pair samples)."""
    index = {h: i for i, h in enumerate(hosts)}
    values = np.full(n_links(len(hosts)), np.nan, dtype)
    for (a, b), v in links.items():
        values[link_index(len(hosts), index[a], index[b])] = v
    return values


def fold_sweeps(
    sweeps: Sequence[np.ndarray],
) -> tuple[np.ndarray, tuple[int, int], RepeatSpread | None]:
    """Several sweeps of one matrix (``--repeat``; NaN where a sweep did not measure a link)
    as one: each link the median of its measurements, so one disturbed sweep does not make a
    link an outlier; the fewest and most measurements of a measured link, and the spread.

    Folded CHUNK links at a time (a (sweeps × chunk) stack), never the whole stack at once."""
    n = sweeps[0].size
    if any(s.size != n for s in sweeps):
        raise ValueError("sweeps of one matrix differ in size")
    if len(sweeps) == 1:
        counts = int(np.count_nonzero(~np.isnan(sweeps[0])))
        return sweeps[0], ((1, 1) if counts else (0, 0)), None
    out = np.empty(n, sweeps[0].dtype)
    fewest, most = len(sweeps), 0
    widest, widest_ratio = -1, 0.0
    ratios = []
    stride = max(1, n // CHUNK)  # the median ratio from at most ~CHUNK links (a sample)
    for start in range(0, n, CHUNK):
        stack = np.stack([s[start : start + CHUNK] for s in sweeps])
        measured = np.count_nonzero(~np.isnan(stack), axis=0)
        some = measured > 0
        with np.errstate(all="ignore"):
            med = np.full(stack.shape[1], np.nan, stack.dtype)
            if some.any():
                med[some] = np.nanmedian(stack[:, some], axis=0)
            lo, hi = np.nanmin(np.where(some, stack, 1), 0), np.nanmax(np.where(some, stack, 1), 0)
            ratio = np.where((measured > 1) & (lo > 0), hi / lo, np.nan)
        out[start : start + CHUNK] = med
        if some.any():
            fewest = min(fewest, int(measured[some].min()))
            most = max(most, int(measured.max()))
        rep = ratio[~np.isnan(ratio)]
        if rep.size:
            ratios.append(rep[::stride].astype(np.float32))
            k = int(np.nanargmax(ratio))
            if ratio[k] > widest_ratio:
                widest, widest_ratio = start + k, float(ratio[k])
    spread = None
    if ratios:
        spread = RepeatSpread(widest, widest_ratio, float(np.median(np.concatenate(ratios))))
    return out, ((fewest, most) if most else (0, 0)), spread
