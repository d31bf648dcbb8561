"""The all-pairs matrix file (assay.parsers.allpairs_file): written and read back, cut short at
every byte, damaged, and the condensed layout's index arithmetic against a square matrix.

The file the real probe writes is read in tests/probes/test_allpairs.py; here the Python writer
makes files of known content (the same format), so every value read can be checked.
"""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from assay.condensed import link_index, n_links, node_links
from assay.errors import ProbeError
from assay.parsers import allpairs_file
from assay.parsers.allpairs_file import (
    END_MARK,
    MAGIC,
    MatrixWriter,
    read_matrix_file,
    tournament_round,
    write_sweep,
)
from tournament import rounds


def random_matrices(n: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    lat = rng.uniform(1e-6, 5e-6, n_links(n)).astype(np.float32)
    bw = rng.uniform(1e9, 1.2e10, n_links(n)).astype(np.float32)
    return lat, bw


def hosts_of(n: int) -> list[str]:
    return [f"node{i:03d}" for i in range(n)]


@pytest.mark.parametrize("n", [2, 3, 4, 5, 8, 9, 16, 31])
def test_tournament_round_is_launch_tournament(n: int):
    expected = rounds(n)
    assert len(expected) == n - 1 + n % 2
    for r, pairs in enumerate(expected):
        a, b = tournament_round(n, r)
        assert list(zip(a.tolist(), b.tolist(), strict=True)) == pairs


def test_link_index_is_squareform_order_and_node_links_a_row():
    n = 7
    square = np.full((n, n), np.nan)
    k = 0
    for i in range(n):  # squareform's order, written out
        for j in range(i + 1, n):
            assert int(link_index(n, i, j)) == k
            square[i, j] = square[j, i] = k
            k += 1
    values = np.arange(n_links(n), dtype=np.float32)
    for i in range(n):
        row = np.delete(square[i], i)
        assert values[node_links(n, i)].tolist() == row.tolist()


@pytest.mark.parametrize("n", [5, 10])
def test_sweep_round_trip(tmp_path: Path, n: int):
    lat, bw = random_matrices(n)
    path = tmp_path / "allpairs.bin"
    write_sweep(path, hosts_of(n), lat, bw, lat_size=8, bw_size=65536, window=32)
    m = read_matrix_file(path)
    assert m.complete and not m.timed_out and m.note == ""
    assert m.hosts == hosts_of(n)
    assert (m.lat_size, m.bw_size, m.window) == (8, 65536, 32)
    assert m.pair_budget_s == pytest.approx(0.1)
    assert [r.number for r in m.rounds] == list(range(1, n - 1 + n % 2 + 1))
    assert m.pairs == n_links(n)
    assert np.array_equal(m.latency, lat) and np.array_equal(m.bandwidth, bw)
    assert m.latency.dtype == np.float32
    assert (m.size("p2p.latency"), m.size("p2p.bandwidth")) == (8, 65536)
    assert m.concurrent == n // 2
    # one metric read: the other is not there (half the memory), and says so when asked for
    one = read_matrix_file(path, metrics=["p2p.bandwidth"])
    assert np.array_equal(one.bandwidth, bw) and list(one.values) == ["p2p.bandwidth"]
    with pytest.raises(KeyError, match=r"p2p\.latency was not read"):
        one.latency  # noqa: B018


def test_every_cut_keeps_the_whole_rounds_and_says_so(tmp_path: Path):
    """Cut at every byte after the header: each whole round survives, nothing else."""
    n = 5
    lat, bw = random_matrices(n)
    whole = tmp_path / "whole.bin"
    write_sweep(whole, hosts_of(n), lat, bw)
    data = whole.read_bytes()
    full = read_matrix_file(whole)
    header_len = struct.unpack_from("<I", data, 8)[0]
    block = 40 + 12 * 2  # 5 nodes: 2 pairs a round
    cut = tmp_path / "cut.bin"
    for size in range(header_len, len(data)):
        cut.write_bytes(data[:size])
        m = read_matrix_file(cut)
        whole_rounds = min((size - header_len) // block, n)
        assert len(m.rounds) == whole_rounds, size
        assert not m.complete
        assert "cut short" in m.note
        assert (f"to round {whole_rounds}" if whole_rounds else "no round") in m.note
        measured = ~np.isnan(m.latency)
        assert measured.sum() == 2 * whole_rounds
        assert np.array_equal(m.latency[measured], full.latency[measured])


def test_header_cut_or_foreign_file_is_a_clear_error(tmp_path: Path):
    n = 4
    path = tmp_path / "allpairs.bin"
    write_sweep(path, hosts_of(n), *random_matrices(n))
    data = path.read_bytes()
    bad = tmp_path / "bad.bin"
    cases = {
        b"": "empty",
        data[:20]: "shorter than the header",
        data[:40]: "damaged header",
        data[:32] + b"\xff\xff" + data[34:]: "host name 0 of 4 runs past it",
        b"PK\x03\x04" + data[4:]: "not an all-pairs matrix file",
        MAGIC[:6] + b"P2" + data[8:]: "'P2'",
    }
    for content, words in cases.items():
        bad.write_bytes(content)
        with pytest.raises(ProbeError, match=words) as info:
            read_matrix_file(bad)
        assert str(bad) in str(info.value)
    with pytest.raises(ProbeError, match="cannot read"):
        read_matrix_file(tmp_path / "missing.bin")


def test_damaged_block_keeps_what_came_before(tmp_path: Path):
    n = 6
    path = tmp_path / "allpairs.bin"
    write_sweep(path, hosts_of(n), *random_matrices(n))
    data = bytearray(path.read_bytes())
    header_len = struct.unpack_from("<I", data, 8)[0]
    block = 40 + 12 * 3
    second = header_len + block
    bad = tmp_path / "bad.bin"
    bad.write_bytes(data[:second] + b"XXXX" + data[second + 4 :])
    m = read_matrix_file(bad)
    assert len(m.rounds) == 1 and "not the start of a round" in m.note and not m.complete
    # a pair naming node 9 of 6
    data[second + 40 : second + 44] = struct.pack("<HH", 2, 9)
    bad.write_bytes(data)
    m = read_matrix_file(bad)
    assert len(m.rounds) == 1 and "outside the 6 nodes" in m.note


def test_retests_stay_apart_and_failed_pairs_and_flags_are_read(tmp_path: Path):
    n = 4
    lat, bw = random_matrices(n)
    path = tmp_path / "allpairs.bin"
    with open(path, "wb") as f:
        w = MatrixWriter(f, hosts_of(n))
        a, b = tournament_round(n, 0)
        k = link_index(n, a, b)
        w.round(1, a, b, lat[k], bw[k], lat_iterations=100, bw_iterations=7, wall_s=0.2)
        # round 2: pair 0-2 measured, 1-3 failed (a rank stopped answering)
        w.round(2, np.array([0, 1]), np.array([2, 3]), np.array([2e-6, np.nan]),
                np.array([3e9, np.nan]))  # fmt: skip
        w.round(3, np.array([0]), np.array([3]), np.array([9e-6]), np.array([1e8]), kind="retest")
        w.end(flags=1)
    m = read_matrix_file(path)
    assert m.complete and m.timed_out and "stopped answering" in m.note
    assert [(r.number, r.kind, r.count) for r in m.rounds] == [
        (1, "sweep", 2), (2, "sweep", 2), (3, "retest", 1)
    ]  # fmt: skip
    assert (m.rounds[0].lat_iterations, m.rounds[0].bw_iterations) == (100, 7)
    assert m.failed.tolist() == [[1, 3]]
    # the retest does not overwrite the sweep's figure of 0-3 (round 1)
    assert m.latency[link_index(n, 0, 3)] == pytest.approx(float(lat[link_index(n, 0, 3)]))
    assert m.retests["round"].tolist() == [3]
    assert m.retests["latency"][0] == pytest.approx(9e-6)
    assert np.isnan(m.latency[link_index(n, 1, 3)])
    assert m.latency[link_index(n, 0, 2)] == pytest.approx(2e-6)
    assert int(np.isnan(m.latency).sum()) == 3  # 1-3 failed, 0-1 and 2-3 not reached


def test_bytes_after_the_end_block_are_said(tmp_path: Path):
    n = 3
    path = tmp_path / "allpairs.bin"
    write_sweep(path, hosts_of(n), *random_matrices(n))
    with open(path, "ab") as f:
        f.write(struct.pack("<I", END_MARK))
    m = read_matrix_file(path)
    assert len(m.rounds) == 3 and not m.complete and "after its end block" in m.note


def test_a_thousand_nodes_read_back(tmp_path: Path):
    """500k links: the reader's per-round numpy path at size (the 10,000-node timing is in
    bench/allpairs_scale.py)."""
    n = 1000
    lat, bw = random_matrices(n, seed=7)
    path = tmp_path / "allpairs.bin"
    write_sweep(path, hosts_of(n), lat, bw)
    assert path.stat().st_size > 12 * n_links(n)
    m = read_matrix_file(path)
    assert m.complete and len(m.rounds) == n - 1
    assert np.array_equal(m.latency, lat) and np.array_equal(m.bandwidth, bw)


@pytest.mark.parametrize("n", [2, 3, 8, 51])
def test_node_stats_are_each_nodes_links(n: int, monkeypatch: pytest.MonkeyPatch):
    """Against numpy on each node's row, with links missing (NaN) and a node with none; blocks
    of 5 nodes, so that a block boundary falls inside the matrix."""
    monkeypatch.setattr(allpairs_file, "ROW_BLOCK_LINKS", 5 * n)
    rng = np.random.default_rng(n)
    values = rng.uniform(1.0, 2.0, n_links(n)).astype(np.float32)
    values[rng.random(len(values)) < 0.25] = np.nan
    values[link_index(n, 0, np.arange(1, n))] = np.nan  # node 0 measured nothing
    st = allpairs_file.node_stats(values, n)
    for i in range(n):
        x = values[node_links(n, i)].astype(np.float64)
        x = x[np.isfinite(x)]
        assert st.count[i] == len(x)
        if not len(x):
            assert np.isnan([st.min[i], st.max[i], st.mean[i], st.median[i], st.stddev[i]]).all()
            continue
        assert st.median[i] == pytest.approx(np.median(x))
        assert st.mean[i] == pytest.approx(x.mean())
        assert (st.min[i], st.max[i]) == (x.min(), x.max())
        assert st.stddev[i] == pytest.approx(x.std(ddof=1) if len(x) > 1 else 0.0)


def test_links_below_a_latency_are_found_whatever_metrics_are_read(tmp_path: Path):
    """``latency_below``: the links a sweep or resume record measured below it (the report's
    shared-memory floor), found in the records even when no matrix is built (``metrics=[]``:
    a retest job's file, its retest records only)."""
    n = 4
    path = tmp_path / "allpairs.bin"
    with open(path, "wb") as f:
        w = MatrixWriter(f, hosts_of(n))
        w.round(1, np.array([0, 1]), np.array([1, 2]), np.array([0.3e-6, 14e-6]),
                np.array([1.7e9, 1e8]))  # fmt: skip
        w.round(2, np.array([2]), np.array([3]), np.array([np.nan]), np.array([np.nan]),
                kind="resume")  # fmt: skip
        w.round(3, np.array([0]), np.array([3]), np.array([0.2e-6]), np.array([2e9]),
                kind="retest")  # fmt: skip
        w.end()
    m = read_matrix_file(path, metrics=["p2p.bandwidth"], latency_below=0.8e-6)
    assert m.below.tolist() == [link_index(n, 0, 1)]  # the retest's 0.2 µs is a retest's
    none = read_matrix_file(path, metrics=[], latency_below=0.8e-6)
    assert none.values == {} and none.below.tolist() == [link_index(n, 0, 1)]
    assert none.retests["a"].tolist() == [0] and none.failed.tolist() == [[2, 3]]


def test_impossible_figures_are_left_out_and_said(tmp_path: Path):
    """issue 28: links of ``+inf``, ``1e30 s``, ``3.4e38 B/s`` were kept, values every parser's
    backstop refuses; the same backstop applies here: such a figure is not measured."""
    n = 4
    path = tmp_path / "allpairs.bin"
    with open(path, "wb") as f:
        w = MatrixWriter(f, hosts_of(n))
        w.round(1, np.array([0, 1]), np.array([1, 2]), np.array([np.inf, 2e-6]),
                np.array([3.4e38, 5e9]))  # fmt: skip
        w.round(2, np.array([0, 2]), np.array([2, 3]), np.array([1e30, 0.0]),
                np.array([-1.0, 1e18]))  # fmt: skip
        w.round(3, np.array([0]), np.array([3]), np.array([np.inf]), np.array([7e9]),
                kind="retest")  # fmt: skip
        w.end()
    m = read_matrix_file(path)
    assert np.isfinite(m.latency[~np.isnan(m.latency)]).all()
    assert m.latency[link_index(n, 1, 2)] == pytest.approx(2e-6)
    assert m.bandwidth[link_index(n, 1, 2)] == pytest.approx(5e9)
    for a, b in [(0, 1), (0, 2), (2, 3)]:
        assert np.isnan(m.latency[link_index(n, a, b)]), (a, b)
        assert np.isnan(m.bandwidth[link_index(n, a, b)]), (a, b)
    assert np.isnan(m.retests["latency"][0]) and m.retests["bandwidth"][0] == pytest.approx(7e9)
    assert "7 impossible figures left out" in m.note
