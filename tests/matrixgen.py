"""Synthetic all-pairs matrices for tests and bench/allpairs_report.py: healthy links drawn
log-normal around a base (a fabric whose links repeat within ``sigma``), then planted faults —
slow links, slow nodes (every link), slow switch uplinks (every link from a group of nodes to
the rest), lost nodes (NaN). Generated a chunk at a time in float32: 10,000 nodes (5·10⁷ links)
in a few seconds and 200 MB."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from assay.analysis.linkmatrix import LinkMatrix, Retests, link_index, n_links, node_links

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


def circle_rounds(n: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
    """The round-robin tournament (circle method) as arrays: each round's pairs (a < b),
    vectorised, so 10,000 nodes' 9,999 rounds cost no Python tuple per pair."""
    m = n + (n % 2)
    others = np.arange(1, m)
    for r in range(m - 1):
        ring = np.concatenate([[0], np.roll(others, r)])
        a, b = ring[: m // 2], ring[::-1][: m // 2]
        keep = (a < n) & (b < n)
        a, b = a[keep], b[keep]
        yield np.minimum(a, b), np.maximum(a, b)


def sweep_rounds(
    lat: LinkMatrix, bw: LinkMatrix
) -> Iterator[tuple[int, np.ndarray, np.ndarray, np.ndarray, np.ndarray]]:
    """The two matrices as the probe's sweep rounds (kind 0) for ``write_allpairs``."""
    n = lat.n
    for a, b in circle_rounds(n):
        k = link_index(n, a, b)
        yield 0, a, b, lat.values[k], bw.values[k]
