"""Comparing a run with a published reference set or with another run: matching, verdicts,
significance, and the CLI's table and exit codes (on real tools' output imported as a run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.analysis.compare.refcompare import compare_reference
from assay.analysis.compare.verdict import (
    Measured,
    compare_runs,
    failing,
    judge,
    measured,
)
from assay.analysis.statistics.significance import mann_whitney, welch
from assay.model import JobResult, Sample, Stats, System
from assay.references import Tolerance, load
from assay.store import RunStore
from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures"
REAL_OUTPUTS = [
    FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out",
    FIX / "osu" / "alaska_ompi4_ucx_osu_bw.out",
    FIX / "perftest" / "mlx4_qdr_ib_send_lat_a.txt",
    FIX / "perftest" / "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt",
    FIX / "stream" / "revyos_lpi4a_omp8.txt",
    FIX / "hpl" / "sc14_hpl21.txt",
    FIX / "fio" / "write_1m.json",
    FIX / "fio" / "randread_8k.jsonplus.json",
    FIX / "ior" / "exascaler_cloud_3.3.0.txt",
]


def fig(metric: str, value: float, probe: str = "p", stats: Stats | None = None, **params):
    s = Sample.make(probe, metric, value, params, stats)
    return Measured(probe, metric, params, value, (value,), stats, s.unit, s.better)


# -- the verdict and the tests ------------------------------------------------------------------


def test_verdict_is_direction_aware_with_reframe_style_bands():
    tol = Tolerance(-0.05, 0.05)
    assert judge(104, 100, 100, "higher", tol) == ("same", pytest.approx(1.04))
    assert judge(106, 100, 100, "higher", tol) == ("better", pytest.approx(1.06))
    assert judge(94, 100, 100, "higher", tol) == ("worse", pytest.approx(0.94))
    assert judge(94, 100, 100, "lower", tol)[0] == "better"  # less latency
    assert judge(1.2, 1.0, 1.0, "lower", tol) == ("worse", pytest.approx(1 / 1.2))
    # a range is 'same' anywhere inside, the ratio is taken to its nearest end
    assert judge(32.7, 32, 33, "higher", tol) == ("same", 1.0)
    assert judge(40, 32, 33, "higher", tol) == ("better", pytest.approx(40 / 33))
    # a bound ("over 300,000 IOPS") has one end
    assert judge(1e6, 300000, None, "higher", tol)[0] == "same"
    assert judge(200000, 300000, None, "higher", tol)[0] == "worse"
    assert judge(100, 100, 100, "higher", Tolerance(0.0, 0.0))[0] == "same"


def test_significance_matches_known_values():
    # exact Mann-Whitney: all 4 of one side below all 4 of the other: p = 2/C(8,4) = 2/70
    assert mann_whitney([1, 2, 3, 4], [5, 6, 7, 8]).p == pytest.approx(2 / 70)
    assert mann_whitney([1, 2, 3], [4, 5, 6]).p == pytest.approx(0.1)  # never below 0.1
    assert mann_whitney([1, 2, 3, 4], [1, 2, 3, 4]).p == 1.0
    # Welch: t = 1/sqrt(0.2) = 2.236 with 18 degrees of freedom, two-sided p = 0.0382
    w = welch(10, 1, 10, 11, 1, 10)
    assert w.statistic == pytest.approx(2.23607, rel=1e-4) and w.p == pytest.approx(0.03825, 1e-3)
    assert welch(0, 1, 30, 0.5, 1, 30).p == pytest.approx(0.05768, rel=1e-3)


# -- matching a run with a reference ------------------------------------------------------------


def test_matches_on_mpi_family_size_and_says_when_placement_differs():
    ref = load("azure-hb")
    figures = [
        fig("p2p.latency", 2.40e-6, mpi="ompi-4.1", size=2, nodes=2),
        fig("p2p.latency", 0.3e-6, mpi="mpich", size=2, nodes=1),
        fig("p2p.latency", 9e-6, mpi="mpich", size=1 << 20, nodes=2),  # the page stops at 4 KiB
    ]
    comp = compare_reference(figures, ref, flavors={"ompi-4.1": "openmpi"})
    rows = {(dict(r.params)["mpi"], r.label): r for r in comp.rows}
    ompi = rows[("ompi-4.1", "OpenMPI 4.0.0")]
    assert ompi.ref == pytest.approx(2.52e-6) and ompi.verdict == "same"
    assert ompi.ratio == pytest.approx(2.52 / 2.40)
    local = rows[("mpich", "MPICH 3.3 + CH4")]
    assert local.verdict == "not comparable" and "2 nodes, this run on 1" in local.note
    assert comp.unmatched == [("p2p.latency", 1)]
    assert ("p2p.latency (Intel MPI 2019)", 12) in comp.missing


def test_stat_pick_best_range_and_mpi_fallback():
    ref = load("azure-hb")
    lat_stats = Stats(n=1000, min=2.30e-6, max=9e-6, median=2.40e-6, mean=2.45e-6, stddev=0.3e-6)
    figures = [
        fig("rdma.latency", 2.40e-6, "perftest", lat_stats, benchmark="ib_send_lat", size=2),
        fig("memory.triad", 250e9, "stream", scope="node", threads=120),
        fig("memory.triad", 200e9, "stream", scope="node", threads=60),
        fig("memory.triad", 32.2e9, "stream", scope="l3", domain=0),
        fig("memory.triad", 25e9, "stream", scope="l3", domain=1),
        fig("p2p.bandwidth", 12e9, mpi="openmpi", size=4194304, nodes=2),
    ]
    comp = compare_reference(figures, ref)
    by = {(r.metric, r.label, r.stat, dict(r.params).get("domain")): r for r in comp.rows}
    # the summary's 2.35 us is t_min: compared with this run's t_min, 2.30 us
    summary = by[("rdma.latency", "workload summary", "min", None)]
    assert summary.ours == pytest.approx(2.30e-6) and summary.verdict == "same"
    # the table row compares t_typical with t_typical, and both sides have statistics
    row = by[("rdma.latency", "t_typical", "value", None)]
    assert row.ref == pytest.approx(2.38e-6) and row.test is not None
    assert row.test.method == "Welch t"
    node = [r for r in comp.rows if r.label == "workload summary" and r.metric == "memory.triad"]
    assert len(node) == 1 and node[0].ours == 250e9  # 'best' of the two node figures
    assert by[("memory.triad", "per CCX", "value", "0")].verdict == "same"  # inside 32-33
    assert by[("memory.triad", "per CCX", "value", "1")].verdict == "worse"
    (bw,) = [r for r in comp.rows if r.metric == "p2p.bandwidth"]
    assert "MVAPICH2 2.3" in bw.note and bw.verdict == "same"  # 12.0 vs 12.06 GB/s


def test_run_against_run_uses_repetitions_and_finds_a_real_slowdown():
    def reps(center: float, n: int = 6) -> list[Sample]:
        out = []
        for i in range(n):
            s = Sample.make("stream", "memory.triad", center * (1 + 0.002 * (i - n / 2)),
                            {"threads": 2, "repetition": i + 1})  # fmt: skip
            out.append(s)
        return out

    base, slow = measured(reps(100e9)), measured(reps(90e9))
    (row,) = compare_runs(base, slow).rows
    assert row.verdict == "worse" and row.significance == "significant"
    assert row.test.method == "Mann-Whitney U" and row.ratio == pytest.approx(0.9)
    assert failing([row], fail_on_worse=True) == [row]
    assert failing([row], fail_below=0.85) == []
    (same,) = compare_runs(base, base).rows
    assert (same.verdict, same.significance) == ("same", "not significant")


# -- the CLI on real tools' output --------------------------------------------------------------


@pytest.fixture
def imported_run(assay_home: Path) -> str:
    proc = run_cli("import", *map(str, REAL_OUTPUTS), home=assay_home, check=True)
    return proc.stderr.split("stored as run ")[1].split(";")[0]


def test_compare_latest_with_azure_hb_covers_every_metric_of_the_run(
    assay_home: Path, imported_run: str
):
    proc = run_cli("compare", "latest", "--ref", "azure-hb", "-f", "md", home=assay_home)
    assert proc.returncode == 0, proc.stderr
    md = proc.stdout
    run = RunStore(assay_home).load(imported_run)
    for metric in {s.metric for s in run.samples}:
        assert f"| {metric} |" in md, f"{metric} missing from the comparison"
    assert "no reference" in md  # memory.copy: the page has none
    assert "| rdma.latency | benchmark=ib_send_lat, size=2 B | t_typical | 2.38 us |" in md
    assert "| compute.hpl |  | workload summary | ~860 GigaFLOPS (Rmax) | 979.69 GFLOP/s |" in md
    assert "not measured by this run: p2p.latency (Intel MPI 2019), 12 published figure(s)" in md
    # a health check: some figures of this (other) cluster are worse than HB's
    fail = run_cli("compare", "--ref", "azure-hb", "--fail-on", "worse", home=assay_home)
    assert fail.returncode == 1 and "beyond what the noise explains" in fail.stderr


def test_a_run_compared_with_itself_is_same_and_not_significant_on_every_row(
    assay_home: Path, imported_run: str
):
    md = run_cli("compare", imported_run, imported_run, "-f", "md", home=assay_home, check=True)
    rows = [ln for ln in md.stdout.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert len(rows) > 80
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[6] == "same" and cells[7].startswith("not significant"), line
    # the same through a reference set made from the run
    run_cli("references", "add", "--from", imported_run, "mine", home=assay_home, check=True,
            env={"ASSAY_REFERENCES": str(assay_home / "refs")})  # fmt: skip
    md = run_cli("compare", imported_run, "--ref", "mine", "-f", "md", home=assay_home,
                 env={"ASSAY_REFERENCES": str(assay_home / "refs")}, check=True).stdout  # fmt: skip
    rows = [ln for ln in md.splitlines() if ln.startswith("| ") and "---" not in ln][1:]
    assert rows and all("| same |" in ln for ln in rows)
    assert "no reference" not in md


def test_tolerance_on_the_command_line_and_bad_input(assay_home: Path, imported_run: str):
    wide = run_cli("compare", "--ref", "azure-hb", "--tolerance", "compute.hpl=-0.5:0.5", "-f",
                   "md", home=assay_home, check=True).stdout  # fmt: skip
    hpl = "| compute.hpl |  | workload summary | ~860 GigaFLOPS (Rmax) | 979.69 GFLOP/s | 1.139 |"
    assert f"{hpl} same |" in wide  # 14% better is inside a ±50% band
    bad = run_cli("compare", "--ref", "azure-hb", "--tolerance", "fast", home=assay_home)
    assert bad.returncode == 2 and "expected FRACTION" in bad.stderr
    both = run_cli("compare", imported_run, imported_run, "--ref", "azure-hb", home=assay_home)
    assert both.returncode == 2 and "not both" in both.stderr


def _stored(store: RunStore, triad: float) -> str:
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    s = Sample.make("stream", "memory.triad", triad, {"threads": 2},
                    Stats(n=9, mean=triad, stddev=triad * 0.01))  # fmt: skip
    w.record(JobResult(job_id="001", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    return w.info.run_id


def test_fail_below_keeps_its_meaning_for_two_runs(assay_home: Path):
    store = RunStore(assay_home)
    base = _stored(store, 20e9)
    _stored(store, 15e9)
    proc = run_cli("compare", base, "--fail-below", "0.95", home=assay_home)
    assert proc.returncode == 1 and "0.750" in proc.stdout and "worse" in proc.stdout
    assert run_cli("compare", base, "--fail-below", "0.5", home=assay_home).returncode == 0
