"""Synthetic all-pairs matrices for tests and bench/allpairs_report.py: healthy links drawn
log-normal around a base (a fabric whose links repeat within ``sigma``), then planted faults —
slow links, slow nodes (every link), slow switch uplinks (every link from a group of nodes to
the rest), lost nodes (NaN). Generated a chunk at a time in float32: 10,000 nodes (5·10⁷ links)
in a few seconds and 200 MB. Files are written by the format's one writer
(``assay.parsers.allpairs_file``: ``write_sweep``, ``MatrixWriter``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from assay.analysis.matrix.linkmatrix import LinkMatrix, Retests
from assay.condensed import link_index, n_links, node_links
from assay.parsers.allpairs_file import MatrixWriter, tournament_round

BASE = {"p2p.bandwidth": 10e9, "p2p.latency": 2e-6}  # B/s, s
CHUNK = 1 << 22


def hosts_of(n: int) -> list[str]:
    width = len(str(n))
    return [f"node{i:0{width}d}" for i in range(1, n + 1)]


def slower(metric: str, values: np.ndarray, factor: float) -> np.ndarray:
    """``factor`` times worse: a rate divided, a time multiplied."""
    return values / factor if metric == "p2p.bandwidth" else values * factor


def synthetic(
    n: int,
    metric: str = "p2p.bandwidth",
    seed: int = 1,
    sigma: float = 0.05,
    slow_links: Sequence[tuple[int, int, float]] = (),
    slow_nodes: Sequence[tuple[int, float]] = (),
    slow_groups: Sequence[tuple[Sequence[int], float]] = (),
    lost_nodes: Sequence[int] = (),
    hosts: list[str] | None = None,
    retests: Retests | None = None,
) -> LinkMatrix:
    """A LinkMatrix of ``n`` nodes with the faults planted: (i, j, factor) links, (i, factor)
    nodes, (nodes, factor) groups whose links to every node outside are slow (an uplink)."""
    rng = np.random.default_rng(seed)
    values = np.empty(n_links(n), np.float32)
    for start in range(0, values.size, CHUNK):
        part = rng.standard_normal(min(CHUNK, values.size - start), dtype=np.float32)
        values[start : start + part.size] = BASE[metric] * np.exp(sigma * part)
    for i, j, factor in slow_links:
        k = link_index(n, i, j)
        values[k] = slower(metric, values[k], factor)
    for i, factor in slow_nodes:
        k = node_links(n, i)
        values[k] = slower(metric, values[k], factor)
    for members, factor in slow_groups:
        inside = np.asarray(sorted(members), np.int64)
        outside = np.setdiff1d(np.arange(n), inside)
        k = link_index(n, inside[:, None], outside[None, :]).ravel()
        values[k] = slower(metric, values[k], factor)
    for i in lost_nodes:
        values[node_links(n, i)] = np.nan
    better = "higher" if metric == "p2p.bandwidth" else "lower"
    size = 1 << 20 if metric == "p2p.bandwidth" else 8
    return LinkMatrix(hosts or hosts_of(n), metric, better, size, "openmpi", values,
                      retests=retests or Retests.none())  # fmt: skip


# a round as the probe writes it: kind (sweep, retest, resume), pairs (a < b), their figures
Round = tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]


def sweep_rounds(
    lat: LinkMatrix, bw: LinkMatrix, keep: Sequence[int] | None = None
) -> Iterable[Round]:
    """The two matrices as the probe's sweep rounds, in the tournament's order; ``keep``: only
    the pairs between these nodes (a sweep that lost the others)."""
    n = lat.n
    for r in range(n - 1 + n % 2):
        a, b = tournament_round(n, r)
        if keep is not None:
            inside = np.isin(a, keep) & np.isin(b, keep)
            a, b = a[inside], b[inside]
        k = link_index(n, a, b)
        yield "sweep", a, b, lat.values[k], bw.values[k]


def write_rounds(
    path: Path, hosts: list[str], rounds: Iterable[Round], end: bool = True, flags: int = 0
) -> None:
    """A file in the probe's format, round by round (numbered from 1); ``end=False`` leaves
    the end block off, as a job that died does."""
    with open(path, "wb") as f:
        w = MatrixWriter(f, hosts, bw_size=1 << 20)
        for number, (kind, a, b, lat, bw) in enumerate(rounds, start=1):
            w.round(number, a, b, lat, bw, kind=kind, lat_iterations=10, bw_iterations=10)
        if end:
            w.end(flags)
