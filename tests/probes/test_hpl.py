"""HPL: HPL's LU alone (ScaLAPACK, per MPI), generated input within a time budget, HPL's
residual check and FLOP count, Rmax/Rpeak with its flag, hpcc only as its own probe."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.errors import ProbeError, SuiteError
from assay.model import Job, System
from assay.plan import plan
from assay.probes import PlanContext, get_probe
from assay.probes.hplsize import hpl_dat, hpl_flops, process_grid, size_hpl
from assay.suite.loader import resolve_suite
from assay.toolchain import discover_mpis
from conftest import run_cli

# One line hpl_lu printed on this project's 2-core VM (OpenMPI 4.1.4, Debian ScaLAPACK 2.2.1,
# a loaded machine): mpirun -np 2 hpl_lu --n 4096 --nb 128 --p 1 --q 2 --budget 20
REAL_LINE = (
    '{"metric": "compute.hpl", "value": 3102296191.9385772, "params": {"N": 3200, "NB": 128, '
    '"P": 1, "Q": 2, "pmap": "row-major", "time_s": 7.046617079999999, "factor_s": '
    '6.9205515900000005, "flops": 21860693333.333332, "residual": 0.0030092131092155734, '
    '"threshold": 16.0, "residual_passed": 1, "norm_a": 828.37795851057103, "norm_x": '
    '2.5545402445650534, "norm_b": 0.49993555458770789, "n_planned": 4096, "budget_s": 20.0, '
    '"pilot_n": 1024, "pilot_rate": 1178555392.8765292, "method": "ScaLAPACK pdgetrf+pdgetrs"}}'
)
PEAK_CONFIG = "[peak]\ncores = 2\nclock_ghz = 2.0\nflops_per_cycle_dp = 16\n"  # 64 GFLOP/s


def test_flop_count_is_hpls_own():
    # HPL_pdtest.c: (N/1e9) * (N/t) * (2/3 N + 3/2) GFLOP/s, i.e. 2/3 N³ + 3/2 N² operations
    assert hpl_flops(1000) == pytest.approx(2 / 3 * 1e9 + 1.5e6, rel=1e-15)
    line = json.loads(REAL_LINE)["params"]
    assert line["flops"] == pytest.approx(hpl_flops(line["N"]), rel=1e-15)


def test_grid_is_as_square_as_the_ranks_allow():
    assert process_grid(1) == (1, 1)
    assert process_grid(2) == (1, 2)
    assert process_grid(12) == (3, 4)
    assert process_grid(16) == (4, 4)
    assert process_grid(7) == (1, 7)


def test_n_from_memory_fraction_then_time_budget_multiple_of_nb():
    size = size_hpl(64 * 2**30, 16, rate=1e12, time_budget=None, nb=256)
    assert size.n % 256 == 0
    assert 8 * size.n**2 <= 0.80 * 64 * 2**30 < 8 * (size.n + 256) ** 2 * 1.0001
    capped = size_hpl(64 * 2**30, 16, rate=1e10, time_budget=60, nb=256)
    assert capped.n < size.n and hpl_flops(capped.n) / 1e10 <= 60
    assert "budget" in capped.rule


def test_an_n_that_does_not_fit_is_refused_with_the_sizes():
    with pytest.raises(SuiteError, match=r"needs 74\.5 GiB for the matrix alone"):
        size_hpl(16 * 2**30, 4, rate=1e11, time_budget=None, n=100_000)
    with pytest.raises(SuiteError, match=r"over the 10 s budget"):
        size_hpl(16 * 2**30, 4, rate=1e9, time_budget=10, n=20_000)


def test_generated_input_has_hpl_layout():
    size = size_hpl(8 * 2**30, 4, rate=1e10, time_budget=30, nb=128)
    lines = hpl_dat(size, hpcc=True).splitlines()
    assert lines[5].split()[0] == str(size.n) and lines[5].split()[1] == "Ns"
    assert lines[7].split()[0] == "128"
    assert (lines[10].split()[0], lines[11].split()[0]) == (str(size.p), str(size.q))
    assert lines[31].startswith("#####")  # hpcc's separator line (no. 32)


# --- the plan: HPL's LU alone, per MPI; hpcc only by name ---------------------------------------


def test_compute_suite_runs_only_the_lu_once_per_mpi(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "none.toml"))
    mpis = discover_mpis({})
    assert {m.name for m in mpis} >= {"openmpi", "mpich"}, "CI installs both MPIs"
    system = System(cores=2, memory_bytes=24 * 2**30, microarchitecture="zen4", isa=["avx512f"])
    suite, _, _ = resolve_suite("compute")
    jobs = plan(suite, PlanContext(system=system, mpis=mpis))
    assert "hpcc" not in {b.probe for b in suite.bench}
    hpl = [j for j in jobs if j.probe == "hpl"]
    assert {j.mpi for j in hpl} == {m.name for m in mpis}
    for job in hpl:
        assert job.argv[0] == "{exe}" and job.build and job.build.source == "hpl_lu.c"
        assert not any("hpcc" in a for a in job.argv) and not job.inputs
        flavor = next(m.flavor for m in mpis if m.name == job.mpi)
        assert f"-lscalapack-{flavor}" in job.build.libs
        # a generated N runs under the budget's pilot; the timeout bounds a runaway
        budget = job.argv[job.argv.index("--budget") + 1]
        assert float(budget) == 60.0 and job.timeout == 120 + 3 * 60


def test_one_node_is_one_process_with_threaded_blas_and_ranks_make_a_grid(
    monkeypatch, tmp_path: Path
):
    from assay.launch.local.mpi import mpi_argv
    from assay.suite.loader import load_suite
    from assay.system.facts import PlanFacts

    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "none.toml"))
    mpis = [m for m in discover_mpis({}) if m.flavor == "openmpi"]
    system = System(cores=8, memory_bytes=24 * 2**30)
    ctx = PlanContext(system=system, mpis=mpis)
    one = 'name = "h"\n[[bench]]\nprobe = "hpl"\nmpi = "openmpi"\nparams = { n = 2000 }\n'
    (job,) = plan(load_suite(one), ctx)
    assert (job.ranks, job.threads) == (1, 8)
    assert job.env["OPENBLAS_NUM_THREADS"] == "8" and job.env["OMP_NUM_THREADS"] == "8"
    assert job.argv[job.argv.index("--p") + 1 :][:3] == ["1", "--q", "1"]
    argv = mpi_argv(job, mpis[0], cores=8)
    assert argv[argv.index("--bind-to") + 1] == "none"  # its threads need every core
    grid = one.replace("n = 2000", "n = 2000, ranks = 8")
    (job,) = plan(load_suite(grid), ctx)
    assert (job.ranks, job.threads, job.env["OPENBLAS_NUM_THREADS"]) == (8, 1, "1")
    assert job.argv[job.argv.index("--p") + 1 :][:3] == ["2", "--q", "4"]
    argv = mpi_argv(job, mpis[0], cores=8)
    assert argv[argv.index("--bind-to") + 1] == "core"
    assert "memory_placement" not in job.params  # one rank per core: each touches its own
    # Two sockets: one threaded process's matrix is interleaved over both nodes' memory.
    two = System(cores=8, memory_bytes=24 * 2**30, numa_nodes=[
        {"id": 0, "cpus": [0, 1, 2, 3]}, {"id": 1, "cpus": [4, 5, 6, 7]}])  # fmt: skip
    facts = PlanFacts(programs={"numactl": "/usr/bin/numactl"})
    (job,) = plan(load_suite(one), PlanContext(system=two, mpis=mpis, facts=facts))
    assert job.argv[:3] == ["numactl", "--interleave=all", "{exe}"]
    assert job.params["memory_placement"].startswith("interleaved")
    (job,) = plan(load_suite(one), PlanContext(system=two, mpis=mpis))  # numactl not found
    assert job.argv[0] == "{exe}" and "numactl not found" in job.params["memory_placement"]


def test_hpcc_is_a_probe_of_its_own(monkeypatch, tmp_path: Path):
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "none.toml"))
    system = System(cores=2, memory_bytes=24 * 2**30)
    ctx = PlanContext(system=system, mpis=discover_mpis({}))
    probe = get_probe("hpcc")
    [draft] = probe.drafts(probe.Params(n=1000, nb=100), ctx, mpis=ctx.mpis, ranks=None)
    assert draft.argv == ["hpcc"] and "hpccinf.txt" in draft.inputs
    with pytest.raises(SuiteError, match="apply to engine xhpl only"):
        hpl = get_probe("hpl")
        hpl.drafts(hpl.Params(hpl_dat="/x/HPL.dat"), ctx, mpis=ctx.mpis, ranks=None)


# --- parse(): the contract of hpl_lu's line ------------------------------------------------------


def lu_job(**params) -> Job:
    base = {"engine": "lu", "mpi": "openmpi", "ranks": 2, "N": 4096, "NB": 128, "P": 1, "Q": 2}
    return Job("001-hpl", "hpl", ["{exe}"], params={**base, **params})


def test_parse_a_real_line_with_efficiency():
    derivation = "2 cores × 2.00 GHz (nominal, /proc/cpuinfo model name) × 16 DP ..."
    samples = get_probe("hpl").parse(REAL_LINE, lu_job(rpeak=64e9, rpeak_derivation=derivation))
    [hpl] = [s for s in samples if s.metric == "compute.hpl"]
    [peak] = [s for s in samples if s.metric == "compute.rpeak"]
    assert hpl.value == pytest.approx(hpl_flops(3200) / 7.046617079999999)
    assert hpl.params["residual_passed"] is True and hpl.params["N"] == 3200
    assert hpl.params["n_planned"] == 4096 and hpl.params["mpi"] == "openmpi"
    assert hpl.params["efficiency"] == pytest.approx(hpl.value / 64e9)
    assert "rpeak_flag" not in hpl.params
    assert peak.value == 64e9 and peak.params["precision"] == "d"


def test_a_rate_above_rpeak_is_flagged_with_the_clock_source():
    derivation = "2 cores × 0.05 GHz (CURRENT clock, /proc/cpuinfo cpu MHz: no stable clock) × 16"
    samples = get_probe("hpl").parse(REAL_LINE, lu_job(rpeak=1.6e9, rpeak_derivation=derivation))
    [hpl] = [s for s in samples if s.metric == "compute.hpl"]
    flag = hpl.params["rpeak_flag"]
    assert flag.startswith("Rpeak too low: clock source CURRENT clock, /proc/cpuinfo cpu MHz")
    assert "193.9% of Rpeak" in flag


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda p: p.update(residual_passed=0), "residual check not passed"),
        (lambda p: p.update(residual=17.0), "residual check not passed"),
        (lambda p: p.update(N=5000), "the plan said N=4096"),
        (lambda p: p.update(NB=256), "the plan said N=4096"),
    ],
)
def test_parse_refuses_what_hpl_would_not_report(edit, words):
    obj = json.loads(REAL_LINE)
    edit(obj["params"])
    with pytest.raises(ProbeError, match=words):
        get_probe("hpl").parse(json.dumps(obj), lu_job())


# --- real runs ----------------------------------------------------------------------------------


def _hpl_samples(home: Path) -> tuple[dict, list[dict]]:
    doc = json.loads(run_cli("report", "-f", "json", home=home, check=True).stdout)
    return doc, [s for s in doc["samples"] if s["metric"] == "compute.hpl"]


def test_real_lu_per_mpi_within_its_budget(assay_home: Path, tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text(PEAK_CONFIG)
    suite = tmp_path / "hpl.toml"
    budget = 3.0
    suite.write_text(
        f'name = "hpl"\n[[bench]]\nprobe = "hpl"\nmpi = "all"\n'
        f"params = {{ time_budget = {budget}, nb = 64 }}\n"
    )
    proc = run_cli("run", str(suite), home=assay_home, env={"ASSAY_CONFIG": str(config)})
    assert proc.returncode == 0, proc.stderr + proc.stdout
    doc, hpl = _hpl_samples(assay_home)
    assert {s["params"]["mpi"] for s in hpl} == {"openmpi", "mpich"}
    for s in hpl:
        p = s["params"]
        assert p["residual_passed"] is True and 0 < p["residual"] < 16
        assert p["N"] % 64 == 0 and p["N"] <= p["n_planned"] and p["pilot_n"] < p["N"]
        # rate = HPL's FLOP count / the timed factor + solve
        assert s["value"] == pytest.approx(hpl_flops(p["N"]) / p["time_s"], rel=1e-9)
        # the pilot sizes N for the budget at its (lower, small-N) rate; 2x for a loaded machine
        assert p["time_s"] <= 2 * budget, p
        assert p["efficiency"] == pytest.approx(s["value"] / 64e9)
        # one node: one process, both cores its BLAS threads, LAPACK's LU on the whole matrix
        assert (p["ranks"], p["threads"], p["P"], p["Q"]) == (1, 2, 1, 1)
        assert p["method"].startswith("LAPACK dgetrf")
    for job in doc["jobs"]:
        assert job["wall_time"] < budget * 2 + 60, job
    run_dir = next((assay_home / "runs").iterdir())
    assert not list(run_dir.glob("jobs/*/hpccinf.txt"))  # no hpcc anywhere


def test_real_residual_check_fails_the_job(assay_home: Path, tmp_path: Path):
    suite = tmp_path / "hpl.toml"
    suite.write_text(
        'name = "hpl"\n[[bench]]\nprobe = "hpl"\nmpi = "openmpi"\n'
        "params = { n = 1000, nb = 100, corrupt_for_test = true }\n"
    )
    proc = run_cli("run", str(suite), home=assay_home)
    assert proc.returncode == 1, proc.stderr  # a failed job
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert not [s for s in doc["samples"] if s["metric"] == "compute.hpl"]
    [job] = doc["jobs"]
    assert job["status"] != "ok" and "residual check FAILED" in job["reason"]


@pytest.mark.slow
def test_real_hpcc_run_reports_rmax_and_efficiency(assay_home: Path, tmp_path: Path):
    assert shutil.which("hpcc"), "apt-get install hpcc (scripts/install-system-deps)"
    config = tmp_path / "config.toml"
    config.write_text(PEAK_CONFIG)
    suite = tmp_path / "hpcc.toml"
    suite.write_text('name = "hpcc"\n[[bench]]\nprobe = "hpcc"\nparams = { n = 1000, nb = 100 }\n')
    proc = run_cli("run", str(suite), home=assay_home, env={"ASSAY_CONFIG": str(config)})
    assert proc.returncode == 0, proc.stderr
    doc, hpl = _hpl_samples(assay_home)
    assert len(hpl) == 1 and hpl[0]["params"]["residual_passed"] is True
    assert (hpl[0]["params"]["N"], hpl[0]["params"]["NB"]) == (1000, 100)
    assert hpl[0]["params"]["rpeak"] == 64e9  # 2 cores × 2 GHz × 16
    assert hpl[0]["params"]["efficiency"] == pytest.approx(hpl[0]["value"] / 64e9)
    assert any(s["metric"] == "memory.triad" for s in doc["samples"])  # HPCC's STREAM too
    run_dir = next((assay_home / "runs").iterdir())
    assert (next(run_dir.glob("jobs/*")) / "hpccinf.txt").exists()  # the input is kept


def test_refused_before_it_starts(assay_home: Path, tmp_path: Path):
    suite = tmp_path / "hpl.toml"
    suite.write_text('name = "hpl"\n[[bench]]\nprobe = "hpl"\nparams = { n = 10000000 }\n')
    proc = run_cli("run", str(suite), home=assay_home)
    assert proc.returncode == 2 and "for the matrix alone" in proc.stderr
    assert not (assay_home / "runs").exists()  # nothing started, nothing stored


def test_several_nodes_scale_memory_and_rpeak_with_the_ranks(monkeypatch, tmp_path: Path):
    from assay.probes._hplplan import plan_size

    config = tmp_path / "config.toml"
    config.write_text(PEAK_CONFIG)  # 64 GFLOP/s a node of 2 cores
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    ctx = PlanContext(system=System(cores=2, memory_bytes=16 * 2**30))
    kw = {"rate": None, "time_budget": 1e6, "fraction": 0.8, "nb": 128, "n": None, "grid": None}
    one, peak1, _, nodes1 = plan_size(ctx, 2, **kw)
    four, peak4, derivation, nodes4 = plan_size(ctx, 8, **kw)
    assert (nodes1, nodes4) == (1, 4) and (four.p, four.q) == (2, 4)
    assert (peak1, peak4) == (64e9, 256e9) and "2 cores" in derivation
    # 4 nodes' memory: N grows by ~2 (√4), both multiples of NB
    assert four.n == pytest.approx(2 * one.n, abs=256) and four.n % 128 == 0
    _, peak_half, _, _ = plan_size(ctx, 1, **kw)
    assert peak_half == 32e9  # one of two cores: half the node's Rpeak
