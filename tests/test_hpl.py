"""HPL: generated input, a real hpcc run, Rmax/Rpeak, and refusals before anything starts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.analysis.hplsize import hpl_dat, hpl_flops, process_grid, size_hpl
from assay.errors import SuiteError
from conftest import run_cli


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


@pytest.mark.slow
@pytest.mark.skipif(not shutil.which("hpcc"), reason="apt-get install hpcc")
def test_real_hpcc_run_reports_rmax_and_efficiency(assay_home: Path, tmp_path: Path):
    config = tmp_path / "config.toml"
    config.write_text("[peak]\ncores = 2\nclock_ghz = 2.0\nflops_per_cycle_dp = 16\n")
    suite = tmp_path / "hpl.toml"
    suite.write_text('name = "hpl"\n[[bench]]\nprobe = "hpl"\nparams = { n = 1000, nb = 100 }\n')
    env_home = assay_home
    proc = run_cli("run", str(suite), home=env_home, env={"ASSAY_CONFIG": str(config)})
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=env_home).stdout)
    hpl = [s for s in doc["samples"] if s["metric"] == "compute.hpl"]
    assert len(hpl) == 1 and hpl[0]["params"]["residual_passed"] is True
    assert (hpl[0]["params"]["N"], hpl[0]["params"]["NB"]) == (1000, 100)
    assert hpl[0]["params"]["rpeak"] == 64e9  # 2 cores × 2 GHz × 16
    assert hpl[0]["params"]["efficiency"] == pytest.approx(hpl[0]["value"] / 64e9)
    assert any(s["metric"] == "memory.triad" for s in doc["samples"])  # HPCC's STREAM too
    run_dir = next((env_home / "runs").iterdir())
    assert (next(run_dir.glob("jobs/*")) / "hpccinf.txt").exists()  # the input is kept


def test_refused_before_it_starts(assay_home: Path, tmp_path: Path):
    suite = tmp_path / "hpl.toml"
    suite.write_text('name = "hpl"\n[[bench]]\nprobe = "hpl"\nparams = { n = 10000000 }\n')
    proc = run_cli("run", str(suite), home=assay_home)
    assert proc.returncode == 2 and "for the matrix alone" in proc.stderr
    assert not (assay_home / "runs").exists()  # nothing started, nothing stored
