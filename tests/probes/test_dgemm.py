"""The dgemm probe: dgemm.c built against OpenBLAS and run for real, and its Python side.

Real runs use tiny matrices (n = 64..300) and short --min-time, so the whole file takes
seconds: they check the method and the contract (2·n³ FLOPs, best rate, the result check that
refuses a wrong C), not the machine's speed.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.analysis.derived.derive import Derived, derive
from assay.analysis.statistics.stats import Figure, fold_repetitions
from assay.errors import SuiteError
from assay.model import Job, System
from assay.plan import plan
from assay.probes import PlanContext
from assay.probes.dgemm import (
    SIZING_RATE_PER_CORE,
    DgemmParams,
    DgemmProbe,
    build_for,
    dgemm_order,
)
from assay.suite.schema import SuiteSpec
from conftest import run_cli

NATIVE = Path(__file__).resolve().parents[2] / "src" / "assay" / "native"
CBLAS_HEADERS = (
    Path("/usr/include/cblas.h"),
    Path("/usr/include/x86_64-linux-gnu/cblas.h"),
    Path("/usr/include/aarch64-linux-gnu/cblas.h"),
    Path("/usr/include/openblas/cblas.h"),
)
GiB = 2**30


def needs_openblas() -> None:
    if not shutil.which("gcc"):
        pytest.skip("gcc not found: apt-get install gcc")
    if not any(h.exists() for h in CBLAS_HEADERS):
        pytest.skip("OpenBLAS headers not found: apt-get install libopenblas-dev")


# --- the auto matrix order ----------------------------------------------------------------------


def test_order_from_rpeak_targets_half_a_second_a_multiply():
    # 4.7 TFLOP/s: 2 n^3 = 0.5 s x 4.7e12 -> n = 10556, down to a multiple of 64
    n = dgemm_order(4.704e12, 512 * GiB)
    assert n == 10496
    assert 2 * n**3 / 4.704e12 == pytest.approx(0.5, rel=0.05)


def test_order_is_capped_by_memory_and_bounded():
    # 2 GiB: 3 x 8 x n^2 <= 0.1 x 2 GiB -> n <= 2991 -> 2944
    assert dgemm_order(4.704e12, 2 * GiB) == 2944
    assert 0.1 * 2 * GiB >= 3 * 8 * 2944**2
    assert dgemm_order(4.704e12, 64 * 2**20) == 1024  # never below 1024
    assert dgemm_order(1e18, 2**50) == 40000  # never above 40000
    assert dgemm_order(1e9, None) == 1024  # a slow core: 0.5 s would mean n = 630


# --- building against a BLAS --------------------------------------------------------------------


def test_openblas_is_the_default_build():
    build = build_for(DgemmParams())
    assert build.source == "dgemm.c" and build.toolchain == "cc"
    assert "-DASSAY_OPENBLAS" in build.flags and "-DASSAY_BLAS=openblas" in build.flags
    assert build.libs == ("-lopenblas", "-lm", "-ldl")


def test_another_cblas_needs_its_link_flags():
    with pytest.raises(SuiteError, match="no link flags known for blas 'mkl'"):
        build_for(DgemmParams(blas="mkl"))
    params = DgemmParams(
        blas="mkl", blas_libs=["-lmkl_rt"], blas_include="/opt/mkl/include", blas_header="mkl.h"
    )
    build = build_for(params)
    assert "-DASSAY_OPENBLAS" not in build.flags
    assert {"-DASSAY_BLAS=mkl", "-I/opt/mkl/include", "-DASSAY_CBLAS_HEADER=<mkl.h>"} <= set(
        build.flags
    )
    assert build.libs == ("-lmkl_rt", "-lm", "-ldl")


def test_params_reject_nonsense():
    for bad in ({"n": 8}, {"precision": "h"}, {"min_time": 0}, {"blas": "a b"}, {"reps": 0}):
        with pytest.raises(ValueError):
            DgemmParams.model_validate(bad)


# --- planning -----------------------------------------------------------------------------------


def plan_dgemm(params: dict, system: System) -> Job:
    suite = SuiteSpec.model_validate({"name": "t", "bench": [{"probe": "dgemm", "params": params}]})
    (job,) = plan(suite, PlanContext(system=system))
    return job


def test_plan_with_a_known_rpeak(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "none.toml"))
    system = System(
        microarchitecture="zen2", cores=64, freq_base_hz=2.25e9, isa=["avx2", "fma"],
        memory_bytes=512 * GiB,
    )  # fmt: skip
    job = plan_dgemm({"precision": "d"}, system)
    n = dgemm_order(2.304e12, 512 * GiB)
    assert job.argv[:5] == ["{exe}", "--n", str(n), "--precision", "d"]
    assert job.params["n"] == n and job.params["n_rule"].startswith("auto: ~0.5 s")
    assert job.env["OPENBLAS_NUM_THREADS"] == job.env["OMP_NUM_THREADS"] == "64"
    assert job.params["rpeak"]["dp"] == pytest.approx(2.304e12)
    assert job.params["rpeak"]["per_core_dp"] == pytest.approx(36e9)
    assert "--corrupt-for-test" not in job.argv


def test_plan_with_an_unknown_uarch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "none.toml"))
    system = System(cores=2, freq_base_hz=2.6e9, isa=["avx512f"], memory_bytes=24 * GiB)
    job = plan_dgemm({"threads": 1, "corrupt_for_test": True}, system)
    # sized for the stated per-core rate, one thread: cbrt(0.25 x 30e9) = 1957 -> 1920
    assert job.params["n"] == dgemm_order(SIZING_RATE_PER_CORE, 24 * GiB) == 1920
    assert "30 GFLOP/s a core (no Rpeak)" in job.params["n_rule"]
    assert job.params["threads"] == 1 and job.env["OPENBLAS_NUM_THREADS"] == "1"
    assert job.params["rpeak"]["dp"] is None
    assert "unknown micro-architecture" in job.params["rpeak"]["reason"]
    assert job.argv[-1] == "--corrupt-for-test"


# --- parse(): rates next to Rpeak ---------------------------------------------------------------


def probe_line(metric: str, value: float, precision: str, threads: int = 2) -> str:
    params = {"n": 300, "precision": precision, "reps": 5, "threads": threads, "blas": "openblas"}
    stats = {"n": 5, "min": value / 2, "max": value, "mean": 0.8 * value}
    return json.dumps({"metric": metric, "value": value, "params": params, "stats": stats})


def job_with(rpeak: dict) -> Job:
    return Job("001-dgemm", "dgemm", ["{exe}"], params={"n": 300, "threads": 2, "rpeak": rpeak})


KNOWN = {
    "dp": 64e9, "sp": 128e9, "cores": 2, "per_core_dp": 32e9, "per_core_sp": 64e9,
    "derivation_dp": "2 cores × 2.00 GHz (user) × 16 DP ...", "derivation_sp": "... SP ...",
    "clock_kind": "user", "uarch": None, "reason": "",
}  # fmt: skip


def _derived(samples: list) -> tuple[Derived, list[Figure]]:
    figures = fold_repetitions(samples)
    return derive(figures), figures


def test_parse_records_the_rpeak_and_derive_computes_the_fractions():
    out = "\n".join(
        [probe_line("compute.dgemm", 48e9, "d"), probe_line("compute.sgemm", 96e9, "s")]
    )
    samples = DgemmProbe().parse(out, job_with(KNOWN))
    # parse adds no derived figure: no compute.rpeak sample, no fraction
    assert sorted(s.metric for s in samples) == ["compute.dgemm", "compute.sgemm"]
    assert all("rpeak_fraction" not in s.params for s in samples)
    dgemm = next(s for s in samples if s.metric == "compute.dgemm")
    assert dgemm.params["rpeak"] == 64e9 and dgemm.params["rpeak_per_core"] == 32e9
    assert dgemm.params["rpeak_derivation"] == KNOWN["derivation_dp"]
    assert dgemm.params["rpeak_clock"] == "user"
    assert all("rpeak_note" not in s.params for s in samples)

    derived, figures = _derived(samples)
    by = {f.sample.metric: derived.fraction_of(f) for f in figures}
    assert by["compute.dgemm"].fraction == pytest.approx(0.75)
    assert by["compute.sgemm"].fraction == pytest.approx(0.75)
    assert derived.rpeaks["dp"].flops == 64e9 and derived.rpeaks["sp"].flops == 128e9
    assert derived.rpeaks["dp"].derivation == KNOWN["derivation_dp"]
    assert derived.rpeaks["dp"].clock_kind == "user"
    rpeak = [f.sample for f in derived.figures() if f.sample.metric == "compute.rpeak"]
    assert sorted(s.params["precision"] for s in rpeak) == ["dp", "sp"]
    assert all(s.unit == "flop/s" for s in rpeak)


def test_a_partial_run_is_compared_with_the_cores_it_used():
    samples = DgemmProbe().parse(probe_line("compute.dgemm", 24e9, "d", threads=1), job_with(KNOWN))
    derived, figures = _derived(samples)
    frac = derived.fraction_of(figures[0])
    assert frac.fraction == pytest.approx(0.75)  # of one core's 32 GFLOP/s
    assert frac.scope == "1 of 2 cores"
    # only the precision that ran has an Rpeak
    assert list(derived.rpeaks) == ["dp"]


def test_a_rate_above_rpeak_is_flagged_with_its_clock_source():
    samples = DgemmProbe().parse(probe_line("compute.dgemm", 70e9, "d"), job_with(KNOWN))
    derived, figures = _derived(samples)
    frac = derived.fraction_of(figures[0])
    assert frac.fraction == pytest.approx(70 / 64)
    assert frac.flag is not None and frac.flag.startswith("Rpeak too low: clock source user")
    assert KNOWN["derivation_dp"] in frac.flag


def test_parse_without_rpeak_says_why():
    unknown = {**KNOWN, "dp": None, "sp": None, "per_core_dp": None, "per_core_sp": None}
    unknown["reason"] = "unknown micro-architecture (X): set an override, [peak] uarch"
    samples = DgemmProbe().parse(probe_line("compute.dgemm", 48e9, "d"), job_with(unknown))
    assert [s.metric for s in samples] == ["compute.dgemm"]
    assert samples[0].params["rpeak_note"] == unknown["reason"]
    derived, figures = _derived(samples)
    frac = derived.fraction_of(figures[0])
    assert frac.fraction is None and frac.note == unknown["reason"]
    assert derived.rpeaks == {}


# --- the native probe, run directly --------------------------------------------------------------


@pytest.fixture(scope="module")
def dgemm_exe(tmp_path_factory: pytest.TempPathFactory) -> Path:
    needs_openblas()
    exe = tmp_path_factory.mktemp("dgemm") / "dgemm"
    flags = ["-O2", "-Wall", "-Wextra", "-Werror", "-DASSAY_OPENBLAS", "-DASSAY_BLAS=openblas"]
    cmd = ["gcc", *flags, str(NATIVE / "dgemm.c"), "-o", str(exe), "-lopenblas", "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stderr}"
    return exe


def run_probe(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"OPENBLAS_NUM_THREADS": "2", "PATH": "/usr/bin:/bin"}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=60, env=env, check=False
    )


def test_probe_measures_both_precisions_by_its_contract(dgemm_exe: Path):
    proc = run_probe(dgemm_exe, "--n", "96", "--min-time", "0.05", "--reps", "4")
    assert proc.returncode == 0, proc.stderr
    objs = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [o["metric"] for o in objs] == ["compute.dgemm", "compute.sgemm"]
    for o, precision in zip(objs, "ds", strict=True):
        p, st = o["params"], o["stats"]
        assert p["n"] == 96 and p["precision"] == precision and p["blas"] == "openblas"
        assert p["flops_per_call"] == 2 * 96**3  # the stated FLOP count
        assert p["reps"] >= 4 and st["n"] == p["reps"]  # at least --reps, all timed
        assert p["elapsed_s"] >= 0.05  # at least --min-time
        assert p["total_time_s"] <= p["elapsed_s"]
        assert o["value"] == pytest.approx(p["flops_per_call"] / p["time_s"])  # best = fastest
        assert o["value"] == pytest.approx(st["max"]) and st["min"] <= st["mean"] <= st["max"]
        assert p["max_rel_error"] == 0.0  # integer matrices: C is exact
        assert p["threads"] == 2 and "OpenBLAS" in p["blas_config"]
        assert math.isfinite(o["value"]) and o["value"] > 0


def test_probe_single_precision_and_help(dgemm_exe: Path):
    proc = run_probe(dgemm_exe, "--n", "64", "--precision", "s", "--min-time", "0.01")
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(x)["metric"] for x in proc.stdout.splitlines()] == ["compute.sgemm"]
    helped = run_probe(dgemm_exe, "--help")
    assert helped.returncode == 0 and "2 n^3" in helped.stdout and "openblas" in helped.stdout


@pytest.mark.parametrize("precision", ["d", "s", "both"])
def test_a_wrong_result_is_refused(dgemm_exe: Path, precision: str):
    proc = run_probe(
        dgemm_exe, "--n", "128", "--precision", precision, "--min-time", "0", "--corrupt-for-test"
    )
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == ""  # no sample of a wrong result, not even of the other precision
    assert "result is wrong: C*x differs from A*(B*x) in 1 of 128 rows" in proc.stderr
    assert "no results reported" in proc.stderr


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--n", "0"], "--n: expected an integer"),
        (["--n", "10k"], "--n: expected an integer"),
        (["--precision", "h"], "--precision: expected d, s or both"),
        (["--min-time", "-1"], "--min-time: expected seconds"),
        (["--reps", "0"], "--reps: expected an integer >= 1"),
        (["--warmup"], "--warmup needs a value"),
        (["--bogus"], "unknown option '--bogus'"),
    ],
)
def test_bad_arguments_exit_2(dgemm_exe: Path, args: list[str], words: str):
    proc = run_probe(dgemm_exe, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert words in proc.stderr


# --- end to end through the CLI -------------------------------------------------------------------


def write_suite(tmp_path: Path, params: str) -> Path:
    suite = tmp_path / "dgemm-suite.toml"
    suite.write_text(
        f'name = "dgemm-test"\n\n[[bench]]\nprobe = "dgemm"\nparams = {{ {params} }}\n'
    )
    return suite


@pytest.mark.slow
def test_cli_run_reports_dgemm_sgemm_and_rpeak(
    assay_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    needs_openblas()
    # An Rpeak that does not depend on the machine the test runs on: every input given.
    config = tmp_path / "config.toml"
    config.write_text(
        "[peak]\ncores = 2\nclock_ghz = 2.0\nflops_per_cycle_dp = 16\nflops_per_cycle_sp = 32\n"
    )
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    suite = write_suite(tmp_path, "n = 300, min_time = 0.1, threads = 1")
    proc = run_cli("run", str(suite), home=assay_home)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    by = {(s["metric"], s["params"].get("precision")): s for s in doc["samples"]}
    assert set(by) == {("compute.dgemm", "d"), ("compute.sgemm", "s")}
    dgemm = by["compute.dgemm", "d"]
    p = dgemm["params"]
    assert dgemm["value"] > 0 and dgemm["unit"] == "flop/s"
    assert p["n"] == 300 and p["n_rule"] == "given" and p["reps"] >= 3
    assert p["threads"] == 1 and p["blas"] == "openblas" and p["time_s"] > 0
    assert dgemm["stats"]["n"] == p["reps"]
    assert p["rpeak"] == pytest.approx(2 * 2e9 * 16)
    assert p["rpeak_derivation"].endswith("= 64.00 GFLOP/s")
    assert by["compute.sgemm", "s"]["params"]["rpeak"] == pytest.approx(128e9)
    # the report shows the derived figures: one Rpeak row per precision, and one thread of two
    # cores compared with one core's peak, said so
    md = run_cli("report", "-f", "md", home=assay_home, check=True).stdout
    assert "| Rpeak (DP) | 64.00 |" in md and "| Rpeak (SP) | 128.00 |" in md
    share = 100 * dgemm["value"] / 32e9
    assert f"| DGEMM | {dgemm['value'] / 1e9:.2f} | {share:.1f}%" in md
    assert "1 of 2 cores" in md


@pytest.mark.slow
def test_cli_run_with_a_corrupted_result_fails_the_job(assay_home: Path, tmp_path: Path):
    needs_openblas()
    suite = write_suite(tmp_path, "n = 200, min_time = 0.05")
    proc = run_cli("run", str(suite), "--set", "dgemm.corrupt_for_test=true", home=assay_home)
    assert proc.returncode == 1, proc.stderr
    assert "exit code 3" in proc.stderr and "result is wrong" in proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    (job,) = doc["jobs"]
    assert job["status"] == "failed" and job["exit_code"] == 3
    assert not [s for s in doc["samples"] if s["metric"].startswith("compute.")]
