"""The best-of table (Charmed HPC layout) and the one-line workload summary (Azure HB/HC)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.analysis.compare.bestof import Source, best_of, one_line, workload_summary
from assay.analysis.compare.verdict import Measured
from assay.model import Sample
from conftest import FAST_SETS, run_cli

FIX = Path(__file__).parents[1] / "fixtures"


def fig(metric: str, value: float, probe: str = "p", **params) -> Measured:
    s = Sample.make(probe, metric, value, params)
    return Measured(probe, metric, params, value, (value,), None, s.unit, s.better)


def test_best_of_takes_the_best_figure_per_metric_and_says_where_it_came_from():
    a = Source("run-a", "node1", [
        fig("p2p.latency", 2.0e-6, size=0, mpi="openmpi", mpi_label="OpenMPI 4.1", nodes=2),
        fig("p2p.latency", 9.0e-6, size=4096, mpi="openmpi", nodes=2),
        fig("memory.triad", 90e9, "stream", scope="node", threads=2),
        fig("compute.rpeak", 100e9, precision="d"),
    ])  # fmt: skip
    b = Source("run-b", "node2", [
        fig("p2p.latency", 1.6e-6, size=1, mpi="mpich", mpi_label="MPICH 4.0", nodes=2),
        fig("memory.triad", 95e9, "stream", scope="l3", domain=0, threads=2),
        fig("storage.bandwidth", 1e9, "fio", direction="read", rw="read", bs=65536),
        fig("storage.bandwidth", 3e9, "fio", direction="write", rw="write", bs=65536),
    ])  # fmt: skip
    rows = {r.title: r for r in best_of([a, b])}
    lat = rows["MPI latency"]
    assert (lat.value, lat.run_id, lat.system) == (1.6e-6, "run-b", "2x node2")
    assert lat.note == "1 B transfer size, MPICH 4.0"
    # a node figure and a per-domain one answer different questions: both are kept
    assert rows["STREAM Triad (node)"].value == 90e9
    assert rows["STREAM Triad (per L3 domain)"].value == 95e9
    assert rows["Storage bandwidth (fio read)"].value == 1e9
    assert rows["Storage bandwidth (fio write)"].value == 3e9
    assert not any("Rpeak" in t for t in rows)  # a derived figure is not a result


def test_the_workload_summary_is_filled_in_the_pages_order_and_says_what_is_missing():
    src = Source("r", "h", [
        fig("memory.triad", 255e9, "stream", scope="node"),
        fig("memory.triad", 32.1e9, "stream", scope="l3", domain=0),
        fig("memory.triad", 33.4e9, "stream", scope="l3", domain=1),
        fig("compute.rpeak", 1000e9, precision="d"),
        fig("compute.hpl", 860e9),
        fig("storage.bandwidth", 725e6, "ior", operation="read"),
    ])  # fmt: skip
    rows = dict(workload_summary([src]))
    assert rows["STREAM Triad"] == "255.00 GB/s (32.1-33.4 GB/s per CCX / L3 domain)"
    assert rows["High-Performance Linpack (HPL)"] == (
        "1000.00 GFLOP/s (Rpeak), 860.00 GFLOP/s (Rmax)"
    )
    assert rows["RDMA latency & bandwidth"] == "not measured"
    assert rows["FIO"] == "not measured" and rows["IOR"] == "0.72 GB/s reads"
    line = one_line(list(workload_summary([src])))
    assert line.startswith("STREAM Triad 255.00 GB/s") and "; HPL 1000.00 GFLOP/s (Rpeak)" in line


@pytest.mark.slow
def test_summary_of_a_real_run_and_real_tool_output_prints_both_layouts(assay_home: Path):
    run_cli("run", "quick", *FAST_SETS, home=assay_home, check=True)
    outputs = [
        FIX / "perftest" / "mlx4_qdr_ib_send_lat_a.txt",
        FIX / "perftest" / "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt",
        FIX / "hpl" / "sc14_hpl21.txt",
        FIX / "fio" / "write_1m.json",
        FIX / "fio" / "randread_8k.jsonplus.json",
        FIX / "ior" / "exascaler_cloud_3.3.0.txt",
    ]
    run_cli("import", *map(str, outputs), home=assay_home, check=True)  # fmt: skip
    md = run_cli("summary", "-f", "md", "--", "-1", "latest", home=assay_home, check=True).stdout
    table, _, workload = md.partition("## Workload summary")
    assert "| metric | system | result | unit | note | run |" in table
    for title in (
        "STREAM Triad (node)",
        "DGEMM",
        "MPI latency",
        "MPI bandwidth",
        "HPL Rmax",
        "RDMA latency",
        "Storage bandwidth (fio write)",
        "Storage bandwidth (ior read)",
    ):
        assert f"| {title} |" in table, title  # fmt: skip
    one = workload.strip().splitlines()[-1]
    assert one.startswith("STREAM Triad ") and " GB/s" in one
    for part in (
        "; HPL ",
        "(Rpeak)",
        "979.69 GFLOP/s (Rmax)",
        "; RDMA latency & bandwidth 0.97 us",  # Markdown: no HTML entity (issue 19)
        " Gb/s",
        "; FIO ",
        "GB/s writes",
        "; IOR 2.43 GB/s reads, 1.93 GB/s writes",
    ):
        assert part in one, part  # fmt: skip
    term = run_cli("summary", home=assay_home, check=True)
    assert "Best results" in term.stdout and "Workload summary" in term.stdout
