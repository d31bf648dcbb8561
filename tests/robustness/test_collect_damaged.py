"""``assay collect`` of a detached Slurm run whose run.json or slurm/plan.json is damaged: a
clear message and exit 2 (3 for no such run), never a traceback, and the job results already
recorded are shown and kept. Nothing here reaches Slurm: the damage is found before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.model import Job, JobResult, Sample, System
from assay.store import RunStore
from conftest import run_cli

DAMAGED_PLAN = {
    "missing": None,
    "not JSON": "{jobs",
    "jobs not a list": '{"jobs": 3}',
    "a job without its id": '{"jobs": [{"probe": "p2p"}]}',
}
# Every form read_run_info refuses is in tests/store/test_store.py; here, that collect says so.
DAMAGED_RUN_JSON = {
    "not JSON": '{"run_id": "trunc',
    "a list": "[1]",
    "batch not an object": None,  # filled below: the run's own run.json with "batch": "x"
}


def _detached_run(home: Path) -> Path:
    store = RunStore(home)
    w = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[], n_jobs=2)
    w.info.batch = {"launcher": "slurm", "job_id": "424242", "state": "PENDING", "detached": True}
    jobs = [Job(job_id=f"00{i}-p2p", probe="p2p", argv=["true"]) for i in (1, 2)]
    (w.path / "slurm").mkdir()
    (w.path / "slurm" / "plan.json").write_text(json.dumps({"jobs": [j.to_dict() for j in jobs]}))
    s = Sample.make("p2p", "p2p.latency", 1e-6, {"size": 8})
    w.record(JobResult(job_id="001-p2p", status="ok", exit_code=0, wall_time=1.5, argv=[]), [s])
    w.release()  # the allocation runs on: status stays "running", no owner
    return w.path


def _expect_exit_2(home: Path, run_dir: Path, *what: str) -> None:
    proc = run_cli("collect", run_dir.name, home=home, timeout=60)
    err = " ".join(proc.stderr.split())
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    for w in what:
        assert w in err, proc.stderr
    assert "ok 001-p2p" in err  # what was recorded is shown, and kept


@pytest.mark.slow
@pytest.mark.parametrize("form", list(DAMAGED_PLAN))
def test_collect_without_a_readable_plan_says_so(assay_home: Path, form: str):
    run_dir = _detached_run(assay_home)
    plan = run_dir / "slurm" / "plan.json"
    if DAMAGED_PLAN[form] is None:
        plan.unlink()
    else:
        plan.write_text(DAMAGED_PLAN[form])
    why = "it is missing" if DAMAGED_PLAN[form] is None else "it is damaged"
    _expect_exit_2(assay_home, run_dir, f"{plan} cannot be read: {why}")
    if form == "missing":
        report = run_cli("report", run_dir.name, "-f", "json", home=assay_home, check=True)
        assert len(json.loads(report.stdout)["samples"]) == 1  # the samples are reportable


@pytest.mark.slow
@pytest.mark.parametrize("form", list(DAMAGED_RUN_JSON))
def test_collect_of_a_damaged_run_json_says_so(assay_home: Path, form: str):
    run_dir = _detached_run(assay_home)
    text = DAMAGED_RUN_JSON[form]
    if text is None:
        text = json.dumps({**json.loads((run_dir / "run.json").read_text()), "batch": "x"})
    (run_dir / "run.json").write_text(text)
    _expect_exit_2(assay_home, run_dir, f"{run_dir / 'run.json'} cannot be read: it")


def test_collect_of_no_such_run_is_exit_3(assay_home: Path):
    _detached_run(assay_home)
    proc = run_cli("collect", "19990101", home=assay_home, timeout=60)
    assert proc.returncode == 3 and "no run '19990101'" in proc.stderr
