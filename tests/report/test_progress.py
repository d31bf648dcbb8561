"""Progress inside long jobs (issue 14): "running" lines in a log while a job runs, elapsed
against the probe's estimate or the job's timeout; and ``assay --help`` without heavy imports."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.cli.progress import clock, interval_s, running_line
from assay.launch import run_process
from assay.model import Job
from assay.run.execute import Expected, expected_duration
from conftest import run_cli

# A p2p latency job that would run for hours, ended by its 4 s timeout: a job of a few seconds.
LONG_JOB = (
    "run", "quick", "--only", "p2p", "--mpi", "mpich",
    "--set", "mode=latency", "--set", "iterations=100000000", "--set", "timeout=4",
)  # fmt: skip
FAST = {"ASSAY_PROGRESS_INTERVAL": "1"}


def _running_before_end(stderr: str, job_prefix: str) -> list[str]:
    lines = stderr.splitlines()
    end = next(i for i, ln in enumerate(lines) if re.match(rf"\s+timeout {job_prefix}", ln))
    return [ln for ln in lines[:end] if " running " in ln]


def test_a_log_shows_running_lines_while_a_long_job_runs(assay_home: Path):
    proc = run_cli(*LONG_JOB, home=assay_home, env=FAST)  # stderr is a pipe, not a terminal
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"job 1/1 001-p2p-\S+ started: at most 4s \(its timeout", proc.stderr)
    running = _running_before_end(proc.stderr, "001-p2p")
    assert len(running) >= 2, proc.stderr  # one a second for ~4 s
    assert all("of at most 4s (its timeout; no estimate)" in ln for ln in running)
    seconds = [int(re.search(r"running (\d+)s", ln).group(1)) for ln in running]
    assert seconds == sorted(seconds) and seconds[-1] <= 4
    assert all(len(ln) > 80 for ln in running)  # one line each, never wrapped at 80 columns


def test_repeat_auto_shows_the_same_running_lines(assay_home: Path):
    proc = run_cli(*LONG_JOB, "--repeat", "auto", home=assay_home, env=FAST)
    assert proc.returncode == 1, proc.stderr
    assert len(_running_before_end(proc.stderr, "001-p2p")) >= 2, proc.stderr


def test_the_default_interval_keeps_a_log_quiet(assay_home: Path):
    job = [*LONG_JOB[:-1], "timeout=2"]  # shorter: no line shows before 30 s anyway
    proc = run_cli(*job, home=assay_home, env={"ASSAY_PROGRESS_INTERVAL": ""})
    assert " running " not in proc.stderr  # every 30 s: a 2 s job shows start and end only
    assert "started: at most 2s" in proc.stderr


def test_a_bad_interval_is_refused_before_the_run(assay_home: Path):
    proc = run_cli(*LONG_JOB, home=assay_home, env={"ASSAY_PROGRESS_INTERVAL": "soon"})
    assert proc.returncode == 2
    assert "ASSAY_PROGRESS_INTERVAL='soon'" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(assay_home.glob("runs/*"))  # no run was started


def test_interval_reads_the_environment(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("ASSAY_PROGRESS_INTERVAL", raising=False)
    assert interval_s() == 30.0
    monkeypatch.setenv("ASSAY_PROGRESS_INTERVAL", "0.5")
    assert interval_s() == 0.5
    for bad in ("0", "-1", "inf", "nan"):
        monkeypatch.setenv("ASSAY_PROGRESS_INTERVAL", bad)
        with pytest.raises(Exception, match="expected seconds > 0"):
            interval_s()


def test_run_process_ticks_between_waits_and_still_times_out(tmp_path: Path):
    ticks: list[float] = []
    outcome = run_process(
        ["sleep", "30"], env={}, timeout=2.0, stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e", on_tick=ticks.append, tick_s=0.4,
    )  # fmt: skip
    assert outcome.timed_out and outcome.wall_time < 10
    assert 3 <= len(ticks) <= 6 and ticks == sorted(ticks) and ticks[-1] < 2.0


def test_a_failing_tick_ends_the_job_tree(tmp_path: Path):
    marker = tmp_path / "alive"

    def tick(elapsed: float) -> None:
        raise BrokenPipeError("the log went away")

    start = time.monotonic()
    with pytest.raises(BrokenPipeError):
        run_process(
            ["sh", "-c", f"sleep 3; touch {marker}"], env={}, timeout=60,
            stdout_path=tmp_path / "o", stderr_path=tmp_path / "e", on_tick=tick, tick_s=0.2,
        )  # fmt: skip
    assert time.monotonic() - start < 3
    time.sleep(3.5)
    assert not marker.exists()  # the job died with the failed tick


def test_expected_duration_is_the_estimate_where_a_probe_has_one():
    hpl = Job(job_id="h", probe="hpl", argv=["{exe}"], params={"est_seconds": 42.0}, timeout=900)
    assert expected_duration(hpl) == Expected(42.0, "estimate")
    burn = Job(
        job_id="g", probe="gpu_burn", argv=["{exe}", "--precisions", "fp64,fp32"],
        params={"duration_s": 30.0}, timeout=600,
    )  # fmt: skip
    assert expected_duration(burn) == Expected(60.0, "estimate")
    p2p = Job(job_id="p", probe="p2p", argv=["{exe}"], timeout=120)
    assert expected_duration(p2p) == Expected(120.0, "timeout")
    unknown = Job(job_id="u", probe="no-such-probe", argv=["x"], timeout=7)
    assert expected_duration(unknown) == Expected(7.0, "timeout")


def test_expected_duration_of_a_planned_fio_job_is_its_driver_budget(tmp_path: Path):
    from assay.plan import Overrides, plan
    from assay.probes import PlanContext
    from assay.suite import resolve_suite
    from assay.system import collect_plan_facts, collect_system

    spec, _, _ = resolve_suite("storage")
    ctx = PlanContext(system=collect_system([]), mpis=[], facts=collect_plan_facts())
    jobs = plan(spec, ctx, Overrides(only=["fio"], sets=[f"target={tmp_path}"]))
    assert jobs
    for job in jobs:
        exp = expected_duration(job)
        assert exp.source == "estimate" and 0 < exp.seconds < job.timeout


def test_running_line_says_how_far_past_an_estimate():
    job = Job(job_id="003-hpl", probe="hpl", argv=[])
    line = running_line(job, 90.0, Expected(300.0, "estimate"))
    assert line == "job 003-hpl running 1m30s of ~5m00s expected (probe estimate)"
    assert running_line(job, 400.0, Expected(300.0, "estimate")).endswith(", 1m40s over")
    assert [clock(s) for s in (0, 59.9, 60, 3599, 7260)] == [
        "0s",
        "59s",
        "1m00s",
        "59m59s",
        "2h01m",
    ]


# --help must not pay for what only a run or a report needs (goal: under 0.3 s in all).
HEAVY = ("numpy", "pydantic", "matplotlib", "sqlite3", "markdown_it", "rich.markdown")


@pytest.mark.parametrize("args", [["--help"], ["run", "--help"], ["report", "--help"]])
def test_help_imports_no_heavy_module(args: list[str]):
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "assay", *args],
        capture_output=True, text=True, timeout=60, env={**os.environ, "COLUMNS": "100"},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "Usage" in proc.stdout
    imported = {ln.rsplit("|", 1)[-1].strip() for ln in proc.stderr.splitlines() if "|" in ln}
    assert len(imported) > 50  # -X importtime did report
    heavy = sorted(m for m in imported if m.split(".")[0] in HEAVY or m in HEAVY)
    assert not heavy, f"assay {' '.join(args)} imports {heavy}"
