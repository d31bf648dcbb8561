"""The all-pairs probe's file (``allpairs.bin``) read into matrices, and the report of a run
whose samples name it: retests confirm, a file cut short keeps its whole rounds and says so, a
missing file or a broken topology is a clear error (exit 2).

The files are written by the stand-in writer ``assay.store.allpairs_file.write_allpairs`` in
the probe's format (docs/cluster.md); the probe's own files are read by the same reader.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from assay.analysis.linkmatrix import link_index
from assay.errors import StoreError
from assay.model import Job, JobResult, Sample, System
from assay.store import RunStore
from assay.store.allpairs_file import read_column, read_header, write_allpairs
from conftest import run_cli
from matrixgen import circle_rounds, synthetic

N = 12


def _rounds(lat, bw, retest: dict[tuple[int, int], tuple[float, float]] | None = None):
    n = lat.n
    for a, b in circle_rounds(n):
        k = link_index(n, a, b)
        yield 0, a, b, lat.values[k], bw.values[k]
    for _ in range(2 if retest else 0):
        pairs = sorted(retest or {})
        a = np.array([p[0] for p in pairs])
        b = np.array([p[1] for p in pairs])
        yield 1, a, b, *(np.array([retest[p][i] for p in pairs], np.float32) for i in (0, 1))  # type: ignore[index]


def _matrices(**faults):
    return synthetic(N, "p2p.latency", seed=1, **faults), synthetic(N, "p2p.bandwidth", seed=2,
                                                                     **faults)  # fmt: skip


def test_a_file_reads_back_link_for_link(tmp_path: Path) -> None:
    lat, bw = _matrices(lost_nodes=[5])
    path = tmp_path / "allpairs.bin"
    write_allpairs(path, lat.hosts, _rounds(lat, bw), lat_size=8, bw_size=1 << 20)
    info = read_header(path)
    assert info.hosts == lat.hosts and (info.lat_size, info.bw_size) == (8, 1 << 20)
    for metric, want in (("p2p.latency", lat), ("p2p.bandwidth", bw)):
        col = read_column(path, metric)
        assert np.array_equal(col.values, want.values, equal_nan=True)
        assert col.info.complete and col.notes == [] and len(col.info.rounds) == N - 1
        assert col.largest_round == N // 2 and col.retest_links.size == 0


def test_a_file_cut_short_keeps_its_whole_rounds(tmp_path: Path) -> None:
    lat, bw = _matrices()
    path = tmp_path / "allpairs.bin"
    write_allpairs(path, lat.hosts, _rounds(lat, bw), end=False)
    col = read_column(path, "p2p.bandwidth")
    assert not col.info.complete
    assert col.notes == ["allpairs.bin was cut short after round 11 (no end block): the rounds "
                         "measured before are kept."]  # fmt: skip
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])  # into the last round's records
    col = read_column(path, "p2p.bandwidth")
    assert "cut short in round 11 (kept: round 10)" in col.notes[0]
    assert np.count_nonzero(~np.isnan(col.values)) == 10 * N // 2  # ten whole rounds
    home = tmp_path / "home"
    run = _run(home, {})
    job_file = run / "jobs" / "001-allpairs-openmpi" / "allpairs.bin"
    job_file.write_bytes(data[: len(data) - 20])
    assert "allpairs.bin was cut short in round 11 (kept: round 10)" in _report(home)
    path.write_bytes(b"not a matrix")
    with pytest.raises(StoreError, match="not an all-pairs file"):
        read_column(path, "p2p.bandwidth")


def _job(writer, job_id: str, hosts: list[str], rounds, kind: str = "sweep") -> None:
    """One all-pairs job as the probe leaves it: its file, one sample per node naming it
    (``matrix``, ``node``, ``kind``)."""
    job = Job(job_id=job_id, probe="allpairs", argv=["x"])
    directory = writer.job_dir(job)
    directory.mkdir(parents=True, exist_ok=True)
    write_allpairs(directory / "allpairs.bin", hosts, rounds)
    rel = f"jobs/{job_id}/allpairs.bin"
    samples = [
        Sample.make("allpairs", "p2p.bandwidth", 1e10, {"matrix": rel, "node": h, "kind": kind,
                    "summary": "node", "mpi": "openmpi", "hosts": [h]})
        for h in hosts
    ]  # fmt: skip
    for s in samples:
        s.job_id = job_id
    writer.record(JobResult(job_id, "ok", 0, 1.0, ["x"], hosts=hosts), samples)


def _run(home: Path, faults: dict, retest=None, topology: str | None = None) -> Path:
    """A run of one all-pairs job (its retest rounds in the same file)."""
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    lat, bw = _matrices(**faults)
    _job(writer, "001-allpairs-openmpi", lat.hosts, _rounds(lat, bw, retest))
    if topology is not None:
        (writer.path / "slurm").mkdir(exist_ok=True)
        (writer.path / "slurm" / "topology.txt").write_text(topology)
    writer.finish("complete")
    return writer.path


def test_sweep_resume_and_retest_jobs_make_one_matrix(tmp_path: Path) -> None:
    """A sweep that lost node 5, a resume job measuring its pairs, a retest job of the two
    flagged links (kind = retest, rounds of kind 1): one matrix, gaps filled, one link
    confirmed and one not reproduced."""
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    lat, bw = _matrices(slow_links=[(1, 2, 6.0), (3, 4, 6.0)])
    hosts = lat.hosts
    lost = [(a, b) for a, b in zip(*link_nodes_of(N), strict=True) if 5 in (a, b)]
    sweep = [(0, a[keep], b[keep], la[keep], bwv[keep])
             for _, a, b, la, bwv in _rounds(lat, bw)
             for keep in [(a != 5) & (b != 5)]]  # fmt: skip
    _job(writer, "001-allpairs-openmpi", hosts, sweep)
    ra, rb = (np.array([p[i] for p in lost]) for i in (0, 1))
    k = link_index(N, ra, rb)
    _job(writer, "002-allpairs-openmpi", hosts, [(2, ra, rb, lat.values[k], bw.values[k])],
         "resume")  # fmt: skip
    k12 = link_index(N, 1, 2)
    retest = [(1, np.array([1, 3]), np.array([2, 4]), np.array([lat.values[k12], 2e-6],
               np.float32), np.array([bw.values[k12], 1e10], np.float32))]  # fmt: skip
    _job(writer, "003-allpairs-openmpi", hosts, retest, "retest")
    writer.finish("complete")
    out = _report(home)
    assert "Not measured" not in out  # the resume filled node 5's links
    assert out.count(f"OUTLIER LINK {hosts[1]}–{hosts[2]}") == 2
    assert out.count("confirmed 1 of 1 on retest") == 2
    assert out.count(f"Not reproduced on retest: link {hosts[3]}–{hosts[4]}") == 2


def link_nodes_of(n: int) -> tuple[list[int], list[int]]:
    from itertools import combinations

    pairs = list(combinations(range(n), 2))
    return [a for a, _ in pairs], [b for _, b in pairs]


def test_the_report_reads_the_matrix_a_runs_samples_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    k34 = (3, 4)
    lat, bw = _matrices(slow_links=[(1, 2, 6.0), k34 and (3, 4, 6.0)])
    retest = {(1, 2): (lat.values[link_index(N, 1, 2)], bw.values[link_index(N, 1, 2)]),
              k34: (2e-6, 10e9)}  # fmt: skip
    hosts = lat.hosts
    topo = (
        f"SwitchName=s1 Level=0 LinkSpeed=1 Nodes={','.join(hosts[:6])}\n"
        f"SwitchName=s2 Level=0 LinkSpeed=1 Nodes={','.join(hosts[6:])}\n"
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=x Switches=s[1-2]\n"
    )
    _run(home, {"slow_links": [(1, 2, 6.0), (3, 4, 6.0)]}, retest, topo)
    proc = run_cli("report", "-f", "md", home=home)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert out.count(f"OUTLIER LINK {hosts[1]}–{hosts[2]}") == 2  # latency and bandwidth
    assert "confirmed 2 of 2 on retest" in out
    assert f"Not reproduced on retest: link {hosts[3]}–{hosts[4]}" in out
    assert f"OUTLIER LINK {hosts[3]}" not in out
    assert "## All-pairs bandwidth [MB/s] (openmpi)" in out  # N ≤ 64: the whole matrix
    assert "All-pairs bandwidth (openmpi): per switch" in out
    assert "Other measurements" not in out  # the per-node samples are the matrix's
    html = _report(home, "html")
    assert html.count("<svg") >= 2


def _report(home: Path, fmt: str = "md") -> str:
    """The latest run's report, in this process (what ``assay report`` renders)."""
    from assay.report.render import render

    return render(RunStore(home).load(None, samples=False), fmt)


def test_a_missing_file_or_a_broken_topology_is_said_and_the_rest_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    run = _run(home, {"slow_links": [(1, 2, 6.0)]}, topology="SwitchName=s1 Nodes=n[3-1]\n")
    out = _report(home)
    assert "## All-pairs: not shown" in out
    assert "No per-switch figures: the run's slurm/topology.txt:1: invalid range" in out
    assert "OUTLIER LINK" in out  # the matrix itself is shown
    (run / "slurm" / "topology.txt").write_text("SwitchName=s1 Level=0 Nodes=gpu[1-4]\n")
    out = _report(home)
    assert "names none of the run's 12 nodes: it names gpu1, gpu2, gpu3…" in out
    (run / "jobs" / "001-allpairs-openmpi" / "allpairs.bin").unlink()
    out = _report(home)
    assert "p2p.bandwidth (openmpi) not shown: the run's samples name the all-pairs file " \
        "jobs/001-allpairs-openmpi/allpairs.bin, which is not in" in out  # fmt: skip


def test_the_index_keeps_per_node_rows_never_the_links(tmp_path: Path) -> None:
    import sqlite3

    home = tmp_path / "home"
    _run(home, {})
    from assay.store import Index

    Index(home / "assay.db").sync(RunStore(home))
    db = sqlite3.connect(home / "assay.db")
    rows = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert rows == N  # one per node; the 66 links stay in allpairs.bin
    _report(home)  # writes the caches
    cache = json.loads(next(home.glob("runs/*/figures.cache.json")).read_text())
    assert len(cache["by_host"]) + len(cache["figures"]) <= 2 * N


def test_the_scale_models_file_size_is_the_writers(tmp_path: Path) -> None:
    """bench/scale_model.py's bytes formula against a file written in the probe's format,
    and its fit recovering the constants of walls it made itself."""
    import sys

    sys.path.insert(0, str(Path(__file__).parent.parent / "bench"))
    from scale_model import Constants, Measured, calibrate, file_bytes, model

    lat, bw = _matrices()
    path = tmp_path / "allpairs.bin"
    write_allpairs(path, lat.hosts, _rounds(lat, bw))
    name = len(lat.hosts[0])
    assert path.stat().st_size == file_bytes(N, N - 1, name)
    truth = Constants(launch_s=7.0, launch_per_node_s=0.003, barrier_s=0.02,
                      barrier_per_doubling_s=0.001)  # fmt: skip
    points = [
        Measured(n, 7.0 + 0.003 * n, truth.pair_budget_s + 0.02 + 0.001 * math.log2(n))
        for n in (4, 8, 16)
    ]
    fitted = calibrate(points)
    assert model(1000, 1, fitted).wall_s == pytest.approx(model(1000, 1, truth).wall_s)


def test_the_analysed_matrices_are_cached_beside_the_run(tmp_path: Path) -> None:
    """Only the first report reads the links: the cache gives the same tables (here a matrix
    past 64 nodes, with retests and a topology), holds no link array, and is remade when a
    matrix file or the rule changes."""
    from assay.analysis.allpairs import analyse
    from assay.analysis.linkmatrix import Retests
    from assay.analysis.outliers import OutlierRule
    from assay.figures.allpairs_cache import cached, decode, encode, save
    from assay.report.allpairs import allpairs_tables
    from assay.system.topology import parse_topology_conf
    from matrixgen import hosts_of

    n = 80
    hosts = hosts_of(n)
    topo = parse_topology_conf(
        "\n".join(f"SwitchName=s{k} Nodes={','.join(hosts[8 * k : 8 * k + 8])}" for k in range(10))
    )
    k = link_index(n, 1, 2)
    lm = synthetic(n, sigma=0.03, slow_links=[(1, 2, 5.0), (3, 4, 5.0)],
                   retests=Retests(np.array([k]), np.array([1e9], np.float32),
                                   np.array([80], np.int32)))  # fmt: skip
    pm = analyse(lm, topology=topo)
    back = decode(json.loads(json.dumps(encode([pm]))))
    assert [t.__dict__ for t in allpairs_tables(back)] == [
        t.__dict__ for t in allpairs_tables([pm])
    ]
    assert back[0].values is None  # past 64 nodes no link array, in memory or cached
    run = tmp_path / "run"
    (run / "jobs").mkdir(parents=True)
    (run / "jobs" / "m.bin").write_bytes(b"x")
    rule = OutlierRule()
    assert save(run, ["jobs/m.bin"], rule, [pm], ["a problem"])
    assert (run / "allpairs.cache.json").stat().st_size < 100_000
    hit = cached(run, ["jobs/m.bin"], rule)
    assert hit is not None and hit[1] == ["a problem"]
    assert cached(run, ["jobs/m.bin"], OutlierRule(link_factor=2)) is None
    (run / "jobs" / "m.bin").write_bytes(b"xy")
    assert cached(run, ["jobs/m.bin"], rule) is None
