"""IOR and mdtest probes: MPI-launched, skipped with what to install when the tool is missing.

IOR and mdtest are not packaged in Debian, so here the real tools never run: the skip path goes
through the CLI, the command lines are checked for a binary said to be installed, and the
parsing is checked on published outputs (tests/fixtures/ior, tests/fixtures/mdtest). The slow
test runs a stand-in ``ior`` (a script printing a published report) under the real mpirun.
"""

from __future__ import annotations

import json
import shutil
import stat
from pathlib import Path

import pytest

from assay.model import Job, MpiInfo, System
from assay.plan import plan
from assay.probes import PlanContext, get_probe
from assay.probes.external import pick_mpi
from assay.probes.ior import IorParams
from assay.probes.mdtest import MdtestParams
from assay.suite.schema import SuiteSpec
from assay.system.facts import PlanFacts
from conftest import run_cli

FIXTURES = Path(__file__).parents[1] / "fixtures"
MPIS = [
    MpiInfo("openmpi", "4.1.4", launcher="mpirun", flavor="openmpi"),
    MpiInfo("mpich", "4.0.2", launcher="mpiexec", flavor="mpich"),
]
# Tools are looked up through the plan facts (as collect_plan_facts sets them up), here via
# shutil.which at call time, so that the ``installed`` fixture can stand in for an install.
CTX = PlanContext(
    system=System(cores=8), mpis=MPIS, facts=PlanFacts(lookup=lambda p: shutil.which(p))
)


@pytest.fixture
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Pretend /opt/ior/bin/{ior,mdtest} exist (shutil.which is what CTX's facts ask)."""
    real = shutil.which
    monkeypatch.setattr(shutil, "which", lambda p: p if p.startswith("/opt/ior/bin/") else real(p))


def test_ior_argv_for_an_installed_binary(installed, tmp_path: Path):
    params = IorParams(ior="/opt/ior/bin/ior", api="MPIIO", file_per_process=False,
                       block_size="4m", transfer_size="1m", segments=2, iterations=2,
                       test_dir=str(tmp_path))  # fmt: skip
    (draft,) = get_probe("ior").drafts(params, CTX, mpis=MPIS, ranks=4)
    assert draft.argv == [
        "/opt/ior/bin/ior", "-a", "MPIIO", "-b", "4194304", "-t", "1048576", "-s", "2",
        "-i", "2", "-w", "-r", "-o", f"{tmp_path}/ior-testfile", "-e", "-C",
    ]  # fmt: skip
    assert draft.skip_reason is None
    assert (draft.spawn, draft.mpi, draft.ranks) == ("mpi", "openmpi", 4)
    assert draft.params["file_per_proc"] is False and draft.params["api"] == "MPIIO"
    # file per process, scratch in the job's directory, the MPI it was built with, a core each
    fpp = IorParams(ior="/opt/ior/bin/ior", mpi="mpich")
    (draft,) = get_probe("ior").drafts(fpp, CTX, mpis=MPIS, ranks=None)
    assert draft.argv[draft.argv.index("-o") + 1] == "ior-testfile" and "-F" in draft.argv
    assert (draft.mpi, draft.ranks) == ("mpich", 8)


def test_ior_checks_its_sizes_and_says_what_to_install():
    with pytest.raises(ValueError, match="multiple of transfer_size"):
        IorParams(block_size="1m", transfer_size="768k")
    with pytest.raises(ValueError, match="not a size"):
        IorParams(block_size="lots")
    (draft,) = get_probe("ior").drafts(IorParams(ior="/opt/ior/bin/ior"), CTX, mpis=MPIS, ranks=1)
    assert draft.skip_reason is not None
    assert "'/opt/ior/bin/ior'" in draft.skip_reason and "github.com/hpc/ior" in draft.skip_reason
    assert pick_mpi([], None) == (None, "no MPI found: apt-get install openmpi-bin (or mpich)")
    assert pick_mpi(MPIS[:1], "intel")[1] == "MPI 'intel' not selected (found: openmpi)"


def test_mdtest_argv_for_an_installed_binary(installed, tmp_path: Path):
    params = MdtestParams(mdtest="/opt/ior/bin/mdtest", file_per_process=False, items=50,
                          iterations=2, write_bytes="4k", read_bytes="4k",
                          test_dir=str(tmp_path / "md"))  # fmt: skip
    (draft,) = get_probe("mdtest").drafts(params, CTX, mpis=MPIS, ranks=2)
    assert draft.argv == [
        "/opt/ior/bin/mdtest", "-a", "POSIX", "-n", "50", "-i", "2", "-d", str(tmp_path / "md"),
        "-F", "-w", "4096", "-e", "4096",
    ]  # fmt: skip
    assert (draft.spawn, draft.mpi, draft.ranks, draft.skip_reason) == (
        "mpi",
        "openmpi",
        2,
        None,
    )
    (unique,) = get_probe("mdtest").drafts(
        MdtestParams(mdtest="/opt/ior/bin/mdtest"), CTX, mpis=MPIS, ranks=2
    )
    assert unique.argv[unique.argv.index("-d") + 1] == "mdtest-scratch" and "-u" in unique.argv


def test_parsed_results_carry_the_plans_params():
    job = Job(job_id="001-ior", probe="ior", argv=[], params={"api": "POSIX", "mpi": "openmpi"})
    text = (FIXTURES / "ior" / "exascaler_cloud_3.3.0.txt").read_text()
    samples = get_probe("ior").parse(text, job)
    bw = {s.params["operation"]: s for s in samples if s.metric == "storage.bandwidth"}
    assert bw["write"].value == pytest.approx(1842.29 * 2**20)
    assert all(s.probe == "ior" and s.params["mpi"] == "openmpi" for s in samples)
    md_job = Job(job_id="002-mdtest", probe="mdtest", argv=[], params={"mpi": "openmpi"})
    md_text = (FIXTURES / "mdtest" / "exascaler_cloud_3.3.0.txt").read_text()
    md = get_probe("mdtest").parse(md_text, md_job)
    assert md and all(s.metric.startswith("storage.metadata.") and s.probe == "mdtest" for s in md)
    cut = text[: text.index("Summary of all tests:")]  # killed before its summary
    with pytest.raises(Exception, match="incomplete"):
        get_probe("ior").parse(cut, job)


def test_plan_launches_with_the_suites_mpi(installed):
    suite = SuiteSpec.model_validate(
        {"name": "p", "bench": [{"probe": "ior", "mpi": "mpich", "ranks": 3,
                                 "params": {"ior": "/opt/ior/bin/ior"}}]}
    )  # fmt: skip
    (job,) = plan(suite, CTX)
    assert (job.spawn, job.mpi, job.ranks, job.skip_reason) == ("mpi", "mpich", 3, None)


needs_mpi = pytest.mark.skipif(shutil.which("mpirun") is None, reason="no MPI launcher")


@needs_mpi
def test_missing_tools_are_skipped_through_the_cli(assay_home: Path, tmp_path: Path):
    if shutil.which("ior") or shutil.which("mdtest"):
        pytest.skip("ior/mdtest are installed here: nothing to skip")
    suite = tmp_path / "pio.toml"
    suite.write_text('name = "pio"\n[[bench]]\nprobe = "ior"\n[[bench]]\nprobe = "mdtest"\n')
    proc = run_cli("run", str(suite), home=assay_home, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "2 skipped" in proc.stdout + proc.stderr
    jobs = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)["jobs"]
    assert [j["status"] for j in jobs] == ["skipped", "skipped"]
    assert jobs[0]["reason"].startswith("ior not found ('ior'): build it from")
    assert jobs[1]["reason"].startswith("mdtest not found ('mdtest'): build it from")


@pytest.mark.slow
@needs_mpi
def test_a_stand_in_ior_runs_under_mpirun(assay_home: Path, tmp_path: Path):
    fake = tmp_path / "ior"
    report = FIXTURES / "ior" / "exascaler_cloud_3.3.0.txt"
    fake.write_text(f"#!/bin/sh\ncat '{report}'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    suite = tmp_path / "one.toml"
    suite.write_text(
        f'name = "one"\n[[bench]]\nprobe = "ior"\nranks = 1\nparams = {{ ior = "{fake}" }}\n'
    )
    proc = run_cli("run", str(suite), home=assay_home, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    (job,) = data["jobs"]
    assert job["status"] == "ok" and Path(job["argv"][0]).name.startswith(("mpirun", "mpiexec"))
    at = job["argv"].index(str(fake))  # after the launcher and its flags
    assert job["argv"][at : at + 3] == [str(fake), "-a", "POSIX"]
    write = [s for s in data["samples"] if s["metric"] == "storage.bandwidth"
             and s["params"]["operation"] == "write"]  # fmt: skip
    assert len(write) == 1 and write[0]["value"] == pytest.approx(1842.29 * 2**20)
