"""An all-pairs run's report from the probe's files (``allpairs.bin``, written here by the
format's one writer, ``assay.parsers.allpairs_file``) and the samples the probe's own parse
makes of them: a sweep with the jobs that continue it (retests confirm or do not reproduce, a
resume fills the gaps a lost node left and the node is named), a file cut short, shared memory
that is not a link, a missing file or a broken topology said in words (the rest shown), the
cache the run's end leaves, and runs made before the probe (one sample per pair).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from assay.condensed import link_index
from assay.figures.allpairs import run_topology
from assay.model import Job, JobResult, Sample, System
from assay.parsers.allpairs_file import read_matrix_file, write_sweep
from assay.probes.allpairs import AllPairsProbe
from assay.store import RunStore
from assay.system.topology import TopologyError
from conftest import run_cli
from matrixgen import Round, hosts_of, sweep_rounds, synthetic, write_rounds

N = 12


def _matrices(n: int = N, **faults):
    return synthetic(n, "p2p.latency", seed=1, **faults), synthetic(n, "p2p.bandwidth", seed=2,
                                                                     **faults)  # fmt: skip


def _retest(lat, bw, pairs: dict[tuple[int, int], tuple[float, float] | None]) -> Round:
    """A retest round of the given pairs: their own figures again, or those given."""
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    k = link_index(lat.n, a, b)
    got = [pairs[p] or (lat.values[kk], bw.values[kk]) for p, kk in zip(pairs, k, strict=True)]
    return "retest", a, b, *(np.array([g[i] for g in got], np.float32) for i in (0, 1))  # type: ignore[return-value]


def _job(
    writer, job_id: str, hosts: list[str], rounds, kind: str = "sweep", sweep_job: str = "",
    mpi: str = "openmpi", end: bool = True,
) -> None:  # fmt: skip
    """One all-pairs job as a run records it: its file, and the samples the probe's parse makes
    of it (the matrix's summary lines as the probe prints them, then one sample per node and
    metric), with the job's params (``sweep_job`` as the runner sets it for a follow-up)."""
    params = {"mpi": mpi, "mpi_label": mpi, "placement": "all-pairs"}
    if sweep_job:
        params["sweep_job"] = sweep_job
    job = Job(job_id=job_id, probe="allpairs", argv=["x"], params=params, ranks=len(hosts))
    directory = writer.job_dir(job)
    write_rounds(directory / "allpairs.bin", hosts, rounds, end=end)
    m = read_matrix_file(directory / "allpairs.bin")
    lines = []
    for metric, size in (("p2p.latency", 8), ("p2p.bandwidth", 1 << 20)):
        links = m.column(metric)
        if kind == "retest":
            links = m.retests["latency" if metric == "p2p.latency" else "bandwidth"]
        links = links[~np.isnan(links)]
        lines.append(json.dumps({"metric": metric, "value": float(np.median(links)), "params": {
            "size": size, "summary": "matrix", "kind": kind, "node_count": len(hosts)},
            "stats": {"n": int(links.size)}}))  # fmt: skip
    samples = AllPairsProbe().parse("\n".join(lines), job, job_dir=directory)
    writer.record(JobResult(job_id, "ok", 0, 1.0, ["x"], hosts=hosts), samples)


def _run(home: Path, faults: dict, retest=None, topology: str | None = None) -> Path:
    """A run of one all-pairs job (its retest rounds, if any, in the same file)."""
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    lat, bw = _matrices(**faults)
    rounds = [*sweep_rounds(lat, bw), *([_retest(lat, bw, retest)] * 2 if retest else [])]
    _job(writer, "001-allpairs-openmpi", lat.hosts, rounds)
    if topology is not None:
        (writer.path / "slurm").mkdir(exist_ok=True)
        (writer.path / "slurm" / "topology.txt").write_text(topology)
    writer.finish("complete")
    return writer.path


def _report(home: Path, fmt: str = "md") -> str:
    """The latest run's report, in this process (what ``assay report`` renders)."""
    from assay.report.render import render

    return render(RunStore(home).load(None, samples=False), fmt)


def test_a_file_reads_back_link_for_link(tmp_path: Path) -> None:
    lat, bw = _matrices(lost_nodes=[5])
    path = tmp_path / "allpairs.bin"
    write_rounds(path, lat.hosts, sweep_rounds(lat, bw))
    m = read_matrix_file(path)
    assert m.hosts == lat.hosts and (m.lat_size, m.bw_size) == (8, 1 << 20)
    assert np.array_equal(m.latency, lat.values, equal_nan=True)
    assert np.array_equal(m.bandwidth, bw.values, equal_nan=True)
    assert m.complete and m.note == "" and len(m.rounds) == N - 1
    assert m.concurrent == N // 2 and len(m.retests) == 0


def test_a_file_cut_short_keeps_its_whole_rounds_and_the_report_says_so(tmp_path: Path) -> None:
    lat, bw = _matrices()
    path = tmp_path / "allpairs.bin"
    write_rounds(path, lat.hosts, sweep_rounds(lat, bw), end=False)
    m = read_matrix_file(path, metrics=["p2p.bandwidth"])
    assert not m.complete and "ends without its end block" in m.note
    assert "11 whole rounds kept (to round 11)" in m.note
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 20])  # into the last round's records
    m = read_matrix_file(path, metrics=["p2p.bandwidth"])
    assert "round 11 is cut short; 10 whole rounds kept (to round 10)" in m.note
    assert np.count_nonzero(~np.isnan(m.bandwidth)) == 10 * N // 2  # ten whole rounds
    home = tmp_path / "home"
    run = _run(home, {})
    (run / "jobs" / "001-allpairs-openmpi" / "allpairs.bin").write_bytes(data[: len(data) - 20])
    out = _report(home)
    assert out.count("allpairs.bin was cut short: round 11 is cut short; 10 whole rounds kept "
                     "(to round 10)") == 2  # fmt: skip
    assert "Not measured: 6 of 66 links" in out


def test_the_report_reads_the_matrix_a_runs_samples_name(tmp_path: Path) -> None:
    home = tmp_path / "home"
    hosts = hosts_of(N)
    topo = (
        f"SwitchName=s1 Level=0 LinkSpeed=1 Nodes={','.join(hosts[:6])}\n"
        f"SwitchName=s2 Level=0 LinkSpeed=1 Nodes={','.join(hosts[6:])}\n"
        "SwitchName=top Level=1 LinkSpeed=1 Nodes=x Switches=s[1-2]\n"
    )
    _run(home, {"slow_links": [(1, 2, 6.0), (3, 4, 6.0)]}, {(1, 2): None, (3, 4): (2e-6, 10e9)},
         topo)  # fmt: skip
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


def _scheduled(pairs: list[tuple[int, int]]) -> list[list[tuple[int, int]]]:
    """A list of pairs in rounds as the probe runs one (``probes.allpairs.rounds_of``): each
    pair in the earliest round after both its nodes' previous pairs."""
    free: dict[int, int] = {}
    out: list[list[tuple[int, int]]] = []
    for a, b in pairs:
        r = max(free.get(a, 0), free.get(b, 0))
        free[a] = free[b] = r + 1
        out += [[] for _ in range(r + 1 - len(out))]
        out[r].append((a, b))
    return out


def test_a_sweep_and_the_jobs_that_continue_it_make_one_matrix(tmp_path: Path) -> None:
    """Two MPIs, each a sweep job and follow-up jobs naming it (``sweep_job``), stored
    interleaved: OpenMPI's sweep has a planted slow link, its retest job (three rounds)
    confirms it; MPICH's sweep flags a link its retest does not reproduce; OpenMPI's sweep
    lost node 5 after round 4 and its resume job, run without node 5, measured the pairs
    left."""
    n = 10
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    ompi = _matrices(n, slow_links=[(1, 2, 6.0)])
    mpich = _matrices(n, slow_links=[(3, 4, 6.0)])
    hosts = ompi[0].hosts
    alive = [i for i in range(n) if i != 5]
    # OpenMPI: 4 whole rounds, then node 5 stops answering (the file's end block says so)
    rounds = list(sweep_rounds(*ompi))
    measured = rounds[:4]
    _job(writer, "001-allpairs-openmpi", hosts, measured, end=False)
    _job(writer, "002-allpairs-mpich", hosts, sweep_rounds(*mpich), mpi="mpich")
    # the resume: the pairs of the other nodes that the sweep did not reach, on 9 nodes (its
    # ranks are the alive nodes: rank r is node alive[r])
    done = {(int(a), int(b)) for _, a_, b_, _, _ in measured for a, b in zip(a_, b_, strict=True)}
    left = [(i, j) for i in alive for j in alive if i < j and (i, j) not in done]
    rank = {node: r for r, node in enumerate(alive)}
    resume = []
    for pairs in _scheduled(left):  # the probe's rounds of a list: disjoint pairs each
        k = link_index(n, np.array([i for i, _ in pairs]), np.array([j for _, j in pairs]))
        a = np.array([rank[i] for i, _ in pairs])
        b = np.array([rank[j] for _, j in pairs])
        resume.append(("resume", a, b, ompi[0].values[k], ompi[1].values[k]))
    _job(writer, "003-allpairs-openmpi-resume", [hosts[i] for i in alive], resume, "resume",
         "001-allpairs-openmpi")  # fmt: skip
    _job(
        writer,
        "004-allpairs-mpich-retest",
        hosts,
        [_retest(*mpich, {(3, 4): (2e-6, 10e9)})],
        "retest",
        "002-allpairs-mpich",
        "mpich",
    )
    _job(writer, "005-allpairs-openmpi-retest", hosts, [_retest(*ompi, {(1, 2): None})] * 3,
         "retest", "001-allpairs-openmpi")  # fmt: skip
    writer.finish("complete")
    out = _report(home)
    assert out.count(f"OUTLIER LINK {hosts[1]}–{hosts[2]}") == 2  # OpenMPI, both metrics
    assert out.count("confirmed 3 of 3 on retest") == 2
    assert out.count(f"Not reproduced on retest: link {hosts[3]}–{hosts[4]}") == 2  # MPICH
    assert f"OUTLIER LINK {hosts[3]}–{hosts[4]}" not in out
    # node 5: lost after round 4, named with the pairs it was never measured in
    never = [hosts[j] for j in range(n) if j != 5 and (min(5, j), max(5, j)) not in done]
    assert len(never) == n - 1 - 4
    lost = (f"LOST NODE {hosts[5]}: the sweep went on without it (resumed in job "
            f"003-allpairs-openmpi-resume); {len(never)} of its {n - 1} links never measured: with "
            f"{', '.join(never)}.")  # fmt: skip
    assert out.count(lost) == 2
    assert out.count(f"Not measured: {len(never)} of 45 links") == 2  # only node 5's
    assert "Not measured" not in out.split("(mpich)", 1)[1]  # MPICH's sweep is whole


def test_follow_ups_that_do_not_name_their_sweep_continue_the_last_one(tmp_path: Path) -> None:
    """Runs stored before ``sweep_job``: a sweep that lost node 5, a resume job of its pairs
    (on every node), a retest job of two flagged links: one matrix, its gaps filled, one link
    confirmed and one not reproduced."""
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    lat, bw = _matrices(slow_links=[(1, 2, 6.0), (3, 4, 6.0)])
    hosts = lat.hosts
    alive = [i for i in range(N) if i != 5]
    _job(writer, "001-allpairs-openmpi", hosts, sweep_rounds(lat, bw, keep=alive))
    a = np.array([min(5, j) for j in alive])
    b = np.array([max(5, j) for j in alive])
    k = link_index(N, a, b)
    _job(writer, "002-allpairs-openmpi", hosts,
         [("resume", a, b, lat.values[k], bw.values[k])], "resume")  # fmt: skip
    _job(writer, "003-allpairs-openmpi", hosts,
         [_retest(lat, bw, {(1, 2): None, (3, 4): (2e-6, 1e10)})], "retest")  # fmt: skip
    writer.finish("complete")
    out = _report(home)
    assert "Not measured" not in out and "LOST NODE" not in out  # the resume filled node 5's
    assert out.count(f"OUTLIER LINK {hosts[1]}–{hosts[2]}") == 2
    assert out.count("confirmed 1 of 1 on retest") == 2
    assert out.count(f"Not reproduced on retest: link {hosts[3]}–{hosts[4]}") == 2


def test_repeated_sweeps_are_each_read_though_their_samples_fold(tmp_path: Path) -> None:
    """--repeat 3: three sweep jobs of one MPI, each its own file; their samples fold into one
    figure per node (keeping the first's ``matrix``), yet the report reads all three files: each
    link the median of three, a link slow in one sweep only not named."""
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    hosts = hosts_of(N)
    for rep in (1, 2, 3):
        lat, bw = synthetic(N, "p2p.latency", seed=rep), synthetic(N, "p2p.bandwidth", seed=rep)
        if rep == 2:  # a disturbed sweep: link 6-7 slow this once
            for m in (lat, bw):
                m.values[link_index(N, 6, 7)] = m.values[link_index(N, 6, 7)] * (
                    6.0 if m is lat else 1 / 6.0
                )
        _job(writer, f"001-allpairs-openmpi-r{rep}", hosts, sweep_rounds(lat, bw))
    writer.finish("complete")
    from assay.figures.folded import folded_of

    folded = folded_of(RunStore(home).load(None))
    assert len(folded.matrices) == 3 and len(folded.figures) == 2 * (N + 1)
    out = _report(home)
    assert out.count("Each link: the median of its repetitions (n = 3)") == 2
    assert "OUTLIER LINK" not in out


def test_a_follow_up_whose_sweep_is_not_in_the_run_is_said(tmp_path: Path) -> None:
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    lat, bw = _matrices()
    _job(writer, "001-allpairs-openmpi", lat.hosts, sweep_rounds(lat, bw))
    _job(writer, "002-retest", lat.hosts, [_retest(lat, bw, {(1, 2): None})], "retest", "009-x")
    writer.finish("complete")
    out = _report(home)
    assert ("The retest job 002-retest continues sweep job 009-x, which is not in this run: "
            "its file jobs/002-retest/allpairs.bin is left out.") in out  # fmt: skip
    assert "## All-pairs bandwidth [MB/s] (openmpi)" in out


def test_shared_memory_is_never_shown_as_a_link(tmp_path: Path) -> None:
    """Eight namespace "nodes" of one kernel, link 2–3 throttled to 100 Mbit/s (issue 20's
    measurement): Open MPI over TCP names it; MPICH (UCX) took shared memory between every
    pair — 0.2–0.6 µs and about 1.7 GB/s, the throttled link too — so its matrix has no link
    figure at all and names no link, and says why."""
    n = 8
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    hosts = [f"anode{i + 1}" for i in range(n)]
    rng = np.random.default_rng(4)
    links = n * (n - 1) // 2
    tcp_lat = rng.uniform(300e-6, 600e-6, links).astype(np.float32)  # 16 ranks on 2 cores
    tcp_bw = rng.uniform(60e6, 110e6, links).astype(np.float32)
    k23 = link_index(n, 2, 3)
    tcp_bw[k23] = 11.8e6
    ompi = synthetic(n, "p2p.latency", hosts=hosts)
    ompi.values[:] = tcp_lat
    ompi_bw = synthetic(n, "p2p.bandwidth", hosts=hosts)
    ompi_bw.values[:] = tcp_bw
    _job(writer, "001-allpairs-openmpi", hosts, sweep_rounds(ompi, ompi_bw))
    shm = synthetic(n, "p2p.latency", hosts=hosts)
    shm.values[:] = rng.uniform(0.2e-6, 0.6e-6, links)
    shm_bw = synthetic(n, "p2p.bandwidth", hosts=hosts)
    shm_bw.values[:] = rng.uniform(1.6e9, 1.8e9, links)
    shm_bw.values[k23] = 1.703e9
    _job(writer, "002-allpairs-mpich", hosts, sweep_rounds(shm, shm_bw), mpi="mpich")
    writer.finish("complete")
    out = _report(home)
    openmpi, mpich = out.split("(mpich)", 1)
    assert openmpi.count("OUTLIER LINK anode3–anode4") == 1  # bandwidth; TCP latency is fine
    assert "SHARED MEMORY" not in openmpi
    said = ("SHARED MEMORY: 28 of 28 links measured a latency below 0.80 us, less than any "
            "network takes: shared memory (the nodes share a kernel?), not a link. Left out of "
            "every figure here (shm in the table): anode1–anode2, ")  # fmt: skip
    assert mpich.count(said) == 2  # latency and bandwidth alike
    assert "OUTLIER" not in mpich and mpich.count("No link figure to judge") == 2
    assert "| anode1 | – | shm | shm |" in mpich
    assert "1703" not in mpich and "0.4" not in mpich.split("SHARED MEMORY")[0]


def test_old_per_pair_runs_stay_reportable(tmp_path: Path) -> None:
    """A run made before the probe: one sample per pair and size (placement all-pairs, two
    hosts each, three repetitions), as the per-pair steps stored them."""
    home = tmp_path / "home"
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    hosts = ["an1", "an2", "an3", "an4"]
    rng = np.random.default_rng(2)
    number = 0
    for rep in (1, 2, 3):
        for i in range(4):
            for j in range(i + 1, 4):
                for size in (8, 131072):
                    bw = 11.8e6 if (i, j) == (1, 2) else rng.uniform(2.3e9, 2.6e9)
                    samples = [
                        Sample.make("p2p", "p2p.latency", rng.uniform(40e-6, 45e-6),
                                    {"size": size, "mpi": "openmpi", "placement": "all-pairs",
                                     "hosts": [hosts[i], hosts[j]], "round": 1,
                                     "repetition": rep}),
                        Sample.make("p2p", "p2p.bandwidth", bw,
                                    {"size": size, "mpi": "openmpi", "placement": "all-pairs",
                                     "hosts": [hosts[i], hosts[j]], "round": 1,
                                     "repetition": rep}),
                    ]  # fmt: skip
                    number += 1
                    writer.record(JobResult(f"{number:03d}", "ok", 0, 1.0, ["x"]), samples)
    writer.finish("complete")
    out = _report(home)
    assert "## All-pairs bandwidth [MB/s] (openmpi)" in out
    assert "OUTLIER LINK an2–an3: 11.80 MB/s" in out
    assert "Each link: the median of its repetitions (n = 3)" in out
    assert "MPI latency (osu_latency method)" not in out  # per-pair figures: not two-node rows


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
    # the probe's own figures stand in for it: each node's median link, n its links
    other = out.split("## Other measurements", 1)[1]
    assert "summary=node" in other and "| 11 links |" in other and " it. " not in other


def test_the_index_keeps_per_node_rows_never_the_links(tmp_path: Path) -> None:
    import sqlite3

    home = tmp_path / "home"
    _run(home, {})
    from assay.store import Index

    Index(home / "assay.db").sync(RunStore(home))
    db = sqlite3.connect(home / "assay.db")
    rows = db.execute("SELECT COUNT(*) FROM samples").fetchone()[0]
    assert rows == 2 * N + 2  # a node's median link and the matrix's, per metric: no link
    _report(home)  # writes the caches
    # the cache: a head line (what it was made from), then the folded figures
    text = next(home.glob("runs/*/figures.cache.json")).read_text()
    cache = json.loads(text.splitlines()[1])
    # per metric N nodes and the matrix: N-sized, never the 66 links; not again per host (a
    # node's figure names its node; an all-pairs job's hosts are all N: N² names)
    assert len(cache["figures"]) == 2 * (N + 1) and cache["by_host"] == []


def test_the_runs_end_leaves_the_matrices_analysed(tmp_path: Path) -> None:
    """cache_figures (the run's end, ``run.execute``, ``run.front``, ``run.importer``) writes
    allpairs.cache.json too: the first report reads no link."""
    from assay.figures import allpairs
    from assay.figures.folded import cache_figures

    home = tmp_path / "home"
    run = _run(home, {"slow_links": [(1, 2, 6.0)]})
    cache_figures(run)
    assert (run / "allpairs.cache.json").exists() and (run / "figures.cache.json").exists()
    before = _report(home)

    def no_read(*args, **kwargs):
        raise AssertionError("the report read a matrix file")

    mp = pytest.MonkeyPatch()
    mp.setattr(allpairs, "read_matrix_file", no_read)
    try:
        assert _report(home) == before and "OUTLIER LINK" in before
    finally:
        mp.undo()


def test_the_scale_models_file_size_is_the_writers(tmp_path: Path) -> None:
    """bench/scale_model.py's bytes formula against a file written in the probe's format,
    and its fit recovering the constants of walls it made itself."""
    import sys

    sys.path.insert(0, str(Path(__file__).parents[2] / "bench"))
    from scale_model import Constants, Measured, calibrate, file_bytes, measured_sweep, model

    lat, bw = _matrices()
    path = tmp_path / "allpairs.bin"
    write_sweep(path, lat.hosts, lat.values, bw.values)
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
    # a sweep's point from its job's wall time and its file (rounds 0.1 s apart, 11 of them),
    # with the budget its pilot chose: a round's cost beyond it is the barriers' share
    write_sweep(path, lat.hosts, lat.values, bw.values, pair_budget_s=0.05)
    point = measured_sweep(N, 5.0, str(path))
    assert (point.nodes, point.launch_s, point.round_s) == pytest.approx((N, 3.9, 0.1))
    assert point.pair_budget_s == pytest.approx(0.05)
    assert calibrate([point]).barrier_s == pytest.approx(0.05)
    # every constant is a cost: this VM's launches (2.4 s at 16 nodes, 12.4 s at 64) drew a
    # free line below zero at 4 nodes; the fit keeps each term >= 0
    vm = [Measured(16, 2.4, 0.26), Measured(32, 5.2, 0.33), Measured(64, 12.4, 0.96, 0.24)]
    c = calibrate(vm)
    assert min(c.launch_s, c.launch_per_node_s, c.barrier_s, c.barrier_per_doubling_s) >= 0
    assert c.launch_per_node_s > 0 and 0 < model(4, 1, c).wall_s < model(16, 1, c).wall_s


def test_the_analysed_matrices_are_cached_beside_the_run(tmp_path: Path) -> None:
    """Only the first report reads the links: the cache gives the same tables (here a matrix
    past 64 nodes, with retests and a topology), holds no link array, and is remade when a
    matrix file or the rule changes."""
    from assay.analysis.matrix.allpairs import analyse
    from assay.analysis.matrix.linkmatrix import Retests
    from assay.analysis.statistics.outliers import OutlierRule
    from assay.figures.allpairs_cache import cached, decode, encode, save
    from assay.report.allpairs import allpairs_tables
    from assay.system.topology import parse_topology_conf

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
    (run / "samples.jsonl").write_text("")  # the run's samples (they name the matrix files)
    rule = OutlierRule()
    assert save(run, ["jobs/m.bin"], rule, [pm], ["a problem"])
    assert (run / "allpairs.cache.json").stat().st_size < 100_000
    hit = cached(run, ["jobs/m.bin"], rule)
    assert hit is not None and hit[1] == ["a problem"]
    assert cached(run, ["jobs/m.bin"], OutlierRule(link_factor=2)) is None
    (run / "jobs" / "m.bin").write_bytes(b"xy")
    assert cached(run, ["jobs/m.bin"], rule) is None


def test_a_topology_file_that_is_no_file_is_refused_not_read(tmp_path: Path) -> None:
    """slurm/topology.txt linked to /dev/zero: refused by name, not read until memory runs out."""
    (tmp_path / "slurm").mkdir()
    (tmp_path / "slurm" / "topology.txt").symlink_to("/dev/zero")
    with pytest.raises(TopologyError, match="not a regular file"):
        run_topology(tmp_path)
