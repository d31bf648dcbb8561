"""--repeat auto: real STREAM jobs repeated until their figures are known to a target."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.model import Sample, System
from assay.plan import Overrides, plan
from assay.probes import PlanContext
from assay.run.repeat_auto import execute_auto, widest_interval
from assay.store import RunStore
from assay.suite.schema import SuiteSpec
from assay.toolchain import discover_mpis
from conftest import run_cli


def _s(metric: str, value: float, rep: int) -> Sample:
    return Sample.make("stream", metric, value, {"threads": 2, "repetition": rep})


def test_the_widest_interval_names_the_figure_that_holds_the_job_back():
    reps = [[_s("memory.triad", v, i), _s("memory.copy", c, i)]
            for i, (v, c) in enumerate([(100, 100), (101, 110), (99, 90)], start=1)]  # fmt: skip
    width, label = widest_interval(reps)
    # copy: mean 100, s = 10, t(0.975, 2) = 4.303: 4.303 * 10 / sqrt(3) = 24.8%
    assert width == pytest.approx(4.3027 * 10 / 3**0.5 / 100, rel=1e-3)
    assert label == "memory.copy (threads=2)"
    assert widest_interval(reps[:1]) == (None, "")  # one repetition: no interval yet


def _jobs():
    spec = SuiteSpec.model_validate(
        {"name": "t", "bench": [{"probe": "stream", "params": {"elements": 200000, "ntimes": 4}}]}
    )
    mpis = discover_mpis()
    system = System(cores=2, threads=2)
    return plan(spec, PlanContext(system=system, mpis=mpis), Overrides(repeat=1)), mpis


@pytest.mark.slow
def test_real_stream_jobs_repeat_until_the_target_or_the_cap(assay_home: Path):
    jobs, mpis = _jobs()
    store = RunStore(assay_home)
    writer = store.create(suite="t", suite_text="", system=System(), argv=[])
    _, (wide,) = execute_auto(writer, jobs, mpis, target=10.0, budget_s=120)
    assert wide.converged and wide.repetitions == 3 and wide.widest <= 10.0  # 3 at least
    writer = store.create(suite="t", suite_text="", system=System(), argv=[])
    _, (tight,) = execute_auto(writer, jobs, mpis, target=1e-9, max_reps=4, budget_s=60)
    assert not tight.converged and tight.repetitions == 4 and tight.reason == "4 repetitions"
    run = store.load(writer.info.run_id)
    assert [r.job_id for r in run.results] == [f"{jobs[0].job_id}-r{k}" for k in range(1, 5)]
    triad = [s for s in run.samples if s.metric == "memory.triad"]
    assert sorted(s.params["repetition"] for s in triad) == [1, 2, 3, 4]
    assert run.info.status == "complete"


def test_cli_takes_auto_or_a_count(assay_home: Path):
    bad = run_cli("run", "quick", "--repeat", "often", "--dry-run", home=assay_home)
    assert bad.returncode == 2 and "expected a count (1, 2, ...) or 'auto'" in bad.stderr
    dry = run_cli("run", "quick", "--only", "stream", "--repeat", "auto", "--dry-run",
                  home=assay_home, check=True)  # fmt: skip
    assert "stream" in dry.stdout and "-r2" not in dry.stdout  # repeated as it runs, not planned


@pytest.mark.slow
def test_the_last_repetition_is_followed_as_any_job_is(
    assay_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """--repeat auto runs a job's follow-ups too, once, after its last repetition: an all-pairs
    sweep under a rule that calls out every link worse than the median is retested."""
    if not shutil.which("mpirun.openmpi"):
        pytest.skip("mpirun.openmpi not found: apt-get install openmpi-bin libopenmpi-dev")
    config = tmp_path / "config.toml"
    config.write_text("[outliers]\nthreshold = 1e-6\nlink_factor = 1.0\n")
    monkeypatch.setenv("ASSAY_CONFIG", str(config))
    spec = SuiteSpec.model_validate({"name": "ap", "bench": [{
        "probe": "allpairs", "ranks": 4, "mpi": "openmpi", "params": {
            "lat_iterations": 20, "bw_iterations": 2, "bw_size": 16384, "window": 8,
            "yield_when_idle": True}}]})  # fmt: skip
    mpis = discover_mpis()
    jobs = plan(spec, PlanContext(system=System(cores=2, threads=2), mpis=mpis), Overrides())
    writer = RunStore(assay_home).create(suite="ap", suite_text="", system=System(), argv=[])
    outcome, (auto,) = execute_auto(writer, jobs, mpis, target=1e-9, max_reps=2, budget_s=120)
    sweep = jobs[0].job_id
    ids = [r.job_id for r in outcome.results]
    assert ids == [f"{sweep}-r1", f"{sweep}-r2", f"{sweep}-r2-retest1"], ids
    assert auto.repetitions == 2 and auto.reason == "2 repetitions"
    retest = [s for s in outcome.samples if s.job_id == f"{sweep}-r2-retest1"]
    assert retest and all(s.params["sweep_job"] == f"{sweep}-r2" for s in retest)
    assert all(s.params["repetition"] == 2 for s in retest)
