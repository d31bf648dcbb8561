"""Storage: the six workloads, safety rules, the fio driver, the fio probe and storage tables.

Pure tests first; the real fio runs (through the CLI and the driver) are marked slow.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.analysis.statistics.stats import fold_repetitions
from assay.drivers.fio import checks
from assay.drivers.fio.__main__ import main as driver_main
from assay.drivers.fio.curve import curve_targets, queue_params
from assay.drivers.fio.figures import point_figures
from assay.drivers.fio.runner import EXIT_FIO, EXIT_SPEC
from assay.drivers.fio.spec import (
    FILL_RATE_ASSUMED,
    GRACE_S,
    RUN_OVERHEAD_S,
    SCRATCH,
    DriverSpec,
    estimate_seconds,
)
from assay.errors import SuiteError
from assay.fio import safety
from assay.fio import target as on_disk
from assay.fio.job import FioJob, fio_seconds, job_file
from assay.fio.workloads import (
    FILENAME_FORMAT,
    NAMES,
    WORKLOADS,
    RunSettings,
    custom_job,
    effective_iodepth,
    fill_job,
    needs_fill,
    rate_per_job,
    with_rate,
    workload_job,
)
from assay.model import Job, Sample, Stats, System
from assay.probes import PlanContext, get_probe
from assay.probes.fio import FioParams, driver_spec
from assay.report.storage import storage_figures, storage_tables
from assay.run.preflight import preflight
from conftest import run_cli

HAVE_FIO = shutil.which("fio") is not None
needs_fio = pytest.mark.skipif(not HAVE_FIO, reason="fio is not installed")
SETTINGS = RunSettings(size=16 * 2**20, runtime=10, ramp_time=2, numjobs=2, iodepth=8)


def block_device() -> str | None:
    """A block device path on this machine (e.g. /dev/vda), or None."""
    for name in ["vda", "sda", "nvme0n1", *sorted(os.listdir("/sys/block"))]:
        path = Path("/dev") / name
        try:
            if stat.S_ISBLK(path.stat().st_mode):
                return str(path)
        except OSError:
            continue
    return None


# ---------------------------------------------------------------------------- workloads


def test_the_six_workloads_keep_their_names_and_patterns():
    assert NAMES == (
        "randread-8k",
        "randwrite-8k",
        "seqread-64k",
        "seqwrite-64k",
        "seqmix-64k",
        "randmix-8k",
    )
    shape = {n: (w.rw, w.bs, w.rwmixread) for n, w in WORKLOADS.items()}
    assert shape == {
        "randread-8k": ("randread", 8192, None),
        "randwrite-8k": ("randwrite", 8192, None),
        "seqread-64k": ("read", 65536, None),
        "seqwrite-64k": ("write", 65536, None),
        "seqmix-64k": ("rw", 65536, 50),
        "randmix-8k": ("randrw", 8192, 50),
    }
    assert [w.reads for w in WORKLOADS.values()] == [True, False, True, False, True, True]
    assert [w.writes for w in WORKLOADS.values()] == [False, True, False, True, True, True]


def test_workload_job_file_is_direct_time_based_with_warmup_and_assay_files():
    text = job_file([workload_job(WORKLOADS["randmix-8k"], SETTINGS, directory="/t/assay-fio")])
    lines = text.splitlines()
    assert lines[0] == "[randmix-8k]"
    for expected in (
        "rw=randrw",
        "bs=8192",
        "rwmixread=50",
        f"size={16 * 2**20}",
        "directory=/t/assay-fio",
        "iodepth=8",
        "numjobs=2",
        "direct=1",
        "ioengine=libaio",
        "runtime=10",
        "ramp_time=2",
        "time_based",
        "group_reporting",
        "lat_percentiles=1",
        f"filename_format={FILENAME_FORMAT}",
    ):
        assert expected in lines, expected
    assert FILENAME_FORMAT == "assay-fio-$jobnum"
    assert not any(ln.startswith("rate") for ln in lines)


@needs_fio
def test_a_time_that_is_not_whole_seconds_reaches_fio_in_milliseconds(tmp_path: Path):
    """fio reads a time's digits as an integer: ``runtime=0.5`` ran about 0.1 s."""
    assert [fio_seconds(s) for s in (10, 10.0, 0.5, 1.25, 1e-4, 366 * 86400.0)] == [
        "10", "10", "500ms", "1250ms", "1ms", "31622400"]  # fmt: skip
    job = FioJob(name="half", rw="randread", bs=4096, size=2**20, directory=str(tmp_path),
                 ioengine="psync", direct=False, runtime=0.5)  # fmt: skip
    (tmp_path / "half.fio").write_text(job_file([job]))
    out = subprocess.run(["fio", "--output-format=json", str(tmp_path / "half.fio")],
                         capture_output=True, text=True, check=True, timeout=60)  # fmt: skip
    ran_ms = json.loads(out.stdout)["jobs"][0]["read"]["runtime"]
    assert 450 <= ran_ms <= 1000, ran_ms
    for key in ("runtime", "ramp_time"):  # no time fio cannot be given: refused when planned
        with pytest.raises(ValueError, match="less than or equal to 31622400"):
            FioParams(**{key: float("inf")})


def test_bs_override_and_sync_engine_iodepth():
    job = workload_job(WORKLOADS["seqread-64k"], RunSettings(1, 1, 0, bs=4096), directory="/d")
    assert job.bs == 4096 and job.ramp_time is None
    assert effective_iodepth("psync", 32) == 1
    assert effective_iodepth("libaio", 32) == 32


def test_fill_is_one_sequential_pass_over_every_file():
    fill = fill_job(64 * 2**20, 4, directory="/t")
    text = job_file([fill])
    assert "rw=write" in text and f"bs={2**20}" in text and "numjobs=4" in text
    assert "time_based" not in text and "runtime" not in text and "ramp_time" not in text
    assert "end_fsync=1" in text and "filename_format=assay-fio-$jobnum" in text
    with pytest.raises(ValueError, match="outside"):
        fill_job(2**20, 1, directory="/t", bs=4096)


def test_what_needs_a_fill():
    assert needs_fill("randread", None, filled=False)
    assert needs_fill("randrw", 50, filled=False)
    assert needs_fill("randwrite", None, filled=False)  # allocation, not overwrite, otherwise
    assert not needs_fill("write", None, filled=False)  # a sequential write is its own fill
    assert not needs_fill("randread", None, filled=True)


def test_rate_is_per_thread_and_per_direction():
    assert rate_per_job(1000, 4, "randread", None) == 250
    assert rate_per_job(1000, 2, "randrw", 50) == "250,250"
    assert rate_per_job(1000, 1, "rw", 70) == "700,300"
    assert rate_per_job(0.2, 8, "randread", None) == 1  # 0 would mean "no cap" to fio
    capped = with_rate(workload_job(WORKLOADS["randmix-8k"], SETTINGS, directory="/d"), 1000)
    text = job_file([capped])
    assert "rate_iops=250,250" in text and "rate_process=poisson" in text
    read = with_rate(workload_job(WORKLOADS["randread-8k"], SETTINGS, directory="/d"), 1000)
    assert "rate_iops=500" in job_file([read]).splitlines()


def test_custom_jobs_take_the_run_settings_and_name_bad_fields():
    job = custom_job({"name": "RndRead", "rw": "randread", "bs": 8192}, SETTINGS, directory="/d")
    assert (job.size, job.runtime, job.numjobs, job.iodepth) == (16 * 2**20, 10, 2, 8)
    assert job.directory == "/d" and job.extra["filename_format"] == FILENAME_FORMAT
    own = custom_job(
        {"name": "x", "rw": "write", "bs": 65536, "filename": "/f", "numjobs": 3},
        SETTINGS,
        directory="/d",
    )
    assert own.filename == "/f" and own.directory is None and own.numjobs == 3
    with pytest.raises(ValueError, match="missing bs"):
        custom_job({"name": "x", "rw": "read"}, SETTINGS, directory="/d")
    with pytest.raises(ValueError, match=r"unknown field.*seekpct"):
        custom_job({"name": "x", "rw": "read", "bs": 1, "seekpct": 0}, SETTINGS, directory="/d")
    with pytest.raises(ValueError, match="target"):
        custom_job(
            {"name": "x", "rw": "read", "bs": 1, "directory": "/x"}, SETTINGS, directory="/d"
        )


# ---------------------------------------------------------------------------- safety


def test_place_decides_where_files_go():
    absent = safety.place(safety.TargetState("/t/new", "absent"), destructive=False)
    assert (absent.workdir, absent.create, absent.owned) == ("/t/new", True, True)
    mine = safety.place(safety.TargetState("/t/old", "assay-dir"), destructive=False)
    assert (mine.workdir, mine.create) == ("/t/old", False)
    users = safety.place(
        safety.TargetState(
            "/mnt/nfs", "dir", sub=safety.TargetState("/mnt/nfs/assay-fio", "absent")
        ),
        destructive=False,
    )
    assert (users.workdir, users.create) == ("/mnt/nfs/assay-fio", True)
    with pytest.raises(safety.SafetyError, match="not assay's"):
        safety.place(
            safety.TargetState("/mnt", "dir", sub=safety.TargetState("/mnt/assay-fio", "other")),
            destructive=False,
        )


def test_refuses_an_existing_file_assay_did_not_create(tmp_path: Path):
    precious = tmp_path / "data.bin"
    precious.write_bytes(b"keep me")
    state = on_disk.observe(precious)
    assert state.kind == "file"
    with pytest.raises(safety.SafetyError, match="existing file assay did not create"):
        safety.place(state, destructive=False)
    allowed = safety.place(state, destructive=True)
    assert allowed.filename == str(precious) and not allowed.owned
    with pytest.raises(safety.SafetyError, match="refused"):
        safety.check_filename(state, destructive=False, assay_files=set())
    assert safety.check_filename(on_disk.observe(tmp_path / "new"), destructive=False,
                                 assay_files=set())  # fmt: skip


def test_refuses_a_block_device():
    dev = block_device()
    if dev is None:
        pytest.skip("no block device on this machine")
    state = on_disk.observe(dev)
    assert state.kind == "device"
    with pytest.raises(safety.SafetyError, match=f"target {dev} is a device"):
        safety.place(state, destructive=False)
    assert safety.place(state, destructive=True).owned is False  # never removed afterwards


def test_refuses_when_the_files_do_not_fit_and_says_the_numbers():
    needed = safety.space_needed(256 * 2**20, 4)
    assert needed == 2**30
    problem = safety.space_problem(needed, 512 * 2**20, "/scratch", detail="4 file(s) x 256 MiB")
    assert problem is not None
    assert "1.00 GiB" in problem and "512.00 MiB free" in problem
    assert f"{2**30} B needed" in problem and f"{512 * 2**20} B free" in problem
    assert safety.space_problem(needed, 2 * 2**30, "/scratch") is None
    # the reserve counts: exactly the space needed is not enough
    assert safety.space_problem(needed, needed, "/scratch") is not None
    # assay's files already there only need what they lack
    assert safety.space_needed(100, 2, {"assay-fio-0": 100, "assay-fio-1": 40}) == 60


def test_direct_fallback_records_a_warning():
    assert safety.direct_fallback(True, True, "/t") == (True, None)
    assert safety.direct_fallback(False, False, "/t") == (False, None)
    direct, warning = safety.direct_fallback(False, True, "/dev/shm/x")
    assert direct is False and "O_DIRECT" in (warning or "") and "/dev/shm/x" in (warning or "")


def test_o_direct_probe_reads_einval_as_unsupported(tmp_path: Path, monkeypatch):
    assert on_disk.supports_o_direct(tmp_path) in (True, False)
    assert not list(tmp_path.iterdir())  # the probe file is removed

    def einval(*args, **kwargs):
        raise OSError(22, "Invalid argument")

    monkeypatch.setattr(on_disk.os, "open", einval)
    assert on_disk.supports_o_direct(tmp_path) is False


def test_cleanup_removes_only_what_assay_wrote(tmp_path: Path):
    target = tmp_path / "t"
    placement = safety.place(on_disk.observe(target), destructive=False)
    on_disk.prepare(placement)
    assert (target / safety.MARKER).is_file()
    (target / "assay-fio-0").write_bytes(b"x")
    on_disk.cleanup(placement)
    assert not target.exists()

    users = tmp_path / "users"
    users.mkdir()
    (users / "theirs").write_text("x")
    placement = safety.place(on_disk.observe(users), destructive=False)
    on_disk.prepare(placement)
    (users / "assay-fio" / "assay-fio-0").write_bytes(b"x")
    on_disk.cleanup(placement)
    assert sorted(p.name for p in users.iterdir()) == ["theirs"]

    precious = tmp_path / "precious"
    precious.write_text("x")
    on_disk.cleanup(safety.place(on_disk.observe(precious), destructive=True))
    assert precious.exists()


# ---------------------------------------------------------------------------- driver, pure


def _lat(mean_ns: float, n: int, bins: dict[str, int]) -> dict:
    return {"mean": mean_ns, "N": n, "min": 1, "max": 2, "stddev": 0, "bins": bins}


def test_point_figures_sum_iops_and_merge_histograms():
    doc = {
        "jobs": [
            {
                "jobname": "randmix-8k",
                "read": {"total_ios": 100, "iops": 1000.0,
                         "lat_ns": _lat(100_000, 100, {"100000": 99, "900000": 1})},
                "write": {"total_ios": 100, "iops": 1000.0,
                          "lat_ns": _lat(300_000, 100, {"300000": 98, "2000000": 2})},
            }
        ]
    }  # fmt: skip
    fig = point_figures(doc)
    assert fig.iops == 2000.0 and fig.completions == 200
    assert fig.latency_s == pytest.approx(200e-6)
    # 99% of 200 I/Os = 198th: the merged histogram's 900 us bucket, not an average of p99s
    assert fig.p99_s == pytest.approx(900e-6)


def _point(mode: str, iops: float, lat: float, pct: int | None = None, **extra) -> list[Sample]:
    """The stored samples of one fio point (read only), as the driver prints them."""
    p = {"workload": "randread-8k", "numjobs": 4, "iodepth": 16, "bs": 8192, "target": "t",
         "mode": mode, "direction": "read", **extra}  # fmt: skip
    if pct is not None:
        p["curve_pct"] = pct
    return [
        Sample.make("fio", "storage.iops", iops, p),
        Sample.make("fio", "storage.latency", lat, {**p, "latency": "total"}),
    ]


def _points(samples: list[Sample]):
    from assay.analysis.derived.storage_points import points_of

    return points_of(fold_repetitions(samples))


def test_littles_law_flags_a_queue_not_kept_full_only_when_uncontrolled():
    job = workload_job(WORKLOADS["randread-8k"], RunSettings(1, 1, 0, 4, 16), directory="/d")
    q = queue_params(job, rate_limited=False)
    assert q == {"outstanding_expected": 64, "rate_limited": False, "ioengine": job.ioengine}
    assert queue_params(job, rate_limited=False, ioengine="psync")["outstanding_expected"] == 4
    (full,) = _points(_point("workloads", 64_000, 1e-3, **q))  # 64 outstanding of 64
    assert full.littles_flag() is None
    (thin,) = _points(_point("workloads", 16_000, 1e-3, **q))  # 16 of 64: CPU-bound client
    assert thin.littles().measured_concurrency == pytest.approx(16)
    assert thin.littles_flag().startswith("queue not full") and "CPU-bound" in thin.littles_flag()
    capped = {**q, "rate_limited": True}
    (thin_capped,) = _points(_point("curve", 16_000, 1e-3, pct=50, **capped))
    assert thin_capped.littles_flag() is None  # a capped point is empty on purpose
    sync = {**q, "ioengine": "psync"}
    (thin_sync,) = _points(_point("workloads", 16_000, 1e-3, **sync))
    assert "synchronous engine" in thin_sync.littles_flag()


def test_curve_targets_and_knee():
    from assay.analysis.derived.storage_points import curve_knee

    assert curve_targets(1000, [100, 10, 50, 10]) == [(10, 100), (50, 500), (100, 1000)]
    # M/M/1: W = s / (1 - rho); the knee is where the latency starts to climb
    s = 1e-4
    rhos = [0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95]
    samples = [x for r in rhos for x in _point("curve", r / s, s / (1 - r), pct=round(r * 100))]
    found = curve_knee(_points(samples), "kneedle")
    assert found.curve_pct is not None and 70 <= found.curve_pct <= 90, found
    assert found.method.startswith("kneedle")
    flat = [x for p in (10, 50, 90) for x in _point("curve", p * 10.0, 1e-4, pct=p)]
    assert curve_knee(_points(flat), "kneedle").note.startswith("the mean latency did not rise")
    assert "3 needed" in curve_knee(_points(flat[:4]), "kneedle").note


def test_time_budget_counts_every_run():
    curve = estimate_seconds(
        mode="curve", n_items=1, n_curve=6, runtime=10, ramp_time=2, fill_bytes=0
    )
    six = estimate_seconds(
        mode="workloads", n_items=6, n_curve=6, runtime=10, ramp_time=2, fill_bytes=0
    )
    assert curve == pytest.approx(7 * (12 + RUN_OVERHEAD_S) + GRACE_S)
    assert six == pytest.approx(6 * (12 + RUN_OVERHEAD_S) + GRACE_S)


def _spec(**kw) -> str:
    base = {"mode": "workloads", "workloads": ["randread-8k"], "size": 2**20, "runtime": 1,
            "ramp_time": 0, "numjobs": 1, "iodepth": 1}  # fmt: skip
    return json.dumps({**base, **kw})


@needs_fio
def test_driver_refuses_bad_specs_and_targets_with_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert driver_main(["--spec", "{not json"]) == EXIT_SPEC
    assert driver_main(["--spec", _spec(workloads=["nope"])]) == EXIT_SPEC
    precious = tmp_path / "precious"
    precious.write_text("keep")
    assert driver_main(["--spec", _spec(target=str(precious))]) == EXIT_SPEC
    assert precious.read_text() == "keep"
    monkeypatch.setattr(checks, "free_bytes", lambda path: 10 * 2**20)
    assert driver_main(["--spec", _spec(size=64 * 2**20, target=str(tmp_path / "t"))]) == 2
    out, err = capsys.readouterr()
    assert out == ""  # stdout is for samples only
    assert "unknown workload 'nope'" in err
    assert "existing file assay did not create" in err
    assert "64.00 MiB" in err and "10.00 MiB free" in err
    assert all(line.startswith("fio-driver:") for line in err.splitlines() if line[:1] != " ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious"]  # nothing written


# ---------------------------------------------------------------------------- probe


def _ctx() -> PlanContext:
    return PlanContext(system=System())


def test_probe_params_validate():
    assert FioParams(size="256m").size == 256 * 2**20
    assert FioParams().workloads is None
    with pytest.raises(ValueError, match="unknown workload"):
        FioParams(workloads=["randread-4k"])
    with pytest.raises(ValueError, match=r"1\.\.100"):
        FioParams(curve=[10, 150])
    with pytest.raises(ValueError, match="nothing to run"):
        FioParams(workloads=[])


def test_probe_drafts_one_driver_job_with_its_spec(tmp_path: Path):
    probe = get_probe("fio")
    params = FioParams(mode="curve", workloads=["randread-8k"], runtime=5, ramp_time=1,
                       target=str(tmp_path / "t"), numjobs=2)  # fmt: skip
    (draft,) = probe.drafts(params, _ctx(), mpis=[], ranks=None)
    assert draft.argv[:4] == [sys.executable, "-m", "assay.drivers.fio", "--spec"]
    spec = DriverSpec.model_validate(json.loads(draft.argv[4]))
    assert spec.mode == "curve" and spec.workloads == ["randread-8k"]
    assert spec.target == str(tmp_path / "t") and spec.numjobs == 2
    assert spec.curve == [10, 50, 70, 80, 90, 100]
    fill = 2 * 256 * 2**20 / FILL_RATE_ASSUMED  # two threads' files at a slow rate
    budget = 7 * (6 + RUN_OVERHEAD_S) + GRACE_S + fill
    assert spec.deadline_s == pytest.approx(budget, abs=0.1)
    assert draft.params["target"] == str(tmp_path / "t")
    # all six by default, none when custom jobs are given (unless listed)
    assert driver_spec(FioParams(), None).workloads == list(NAMES)
    custom = [{"name": "RndRead", "rw": "randread", "bs": 8192}]
    assert driver_spec(FioParams(jobs=custom), None).workloads == []
    both = driver_spec(FioParams(jobs=custom, workloads=["seqread-64k"]), None)
    assert both.workloads == ["seqread-64k"] and both.jobs == custom


def _planned(params: FioParams) -> Job:
    """The job the planner makes of one fio draft (what the pre-flight gets)."""
    (draft,) = get_probe("fio").drafts(params, _ctx(), mpis=[], ranks=None)
    return Job(job_id="001-fio", probe="fio", argv=draft.argv, params=draft.params)


def test_planning_does_not_look_at_the_target_the_preflight_does(tmp_path: Path):
    precious = tmp_path / "precious.img"
    precious.write_bytes(b"\1" * 4096)
    job = _planned(FioParams(target=str(precious)))  # pure: planned without a look at it
    with pytest.raises(SuiteError, match="existing file assay did not create") as err:
        preflight([job])
    assert err.value.exit_code == 2 and "001-fio" in str(err.value)
    dev = block_device()
    if dev:
        with pytest.raises(SuiteError, match="is a device"):
            preflight([_planned(FioParams(target=dev))])
    with pytest.raises(SuiteError, match="is not an existing directory"):
        preflight([_planned(FioParams(target=str(tmp_path / "no" / "such")))])
    preflight([_planned(FioParams(target=str(tmp_path / "new")))])  # creatable: accepted
    preflight([_planned(FioParams())])  # scratch in the job directory: nothing to check yet
    assert sorted(p.name for p in tmp_path.iterdir()) == ["precious.img"]  # nothing written
    assert precious.read_bytes() == b"\1" * 4096


def test_preflight_refuses_a_target_too_small(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(checks, "free_bytes", lambda path: 10 * 2**20)
    with pytest.raises(SuiteError, match=r"64\.00 MiB.*10\.00 MiB free"):
        preflight([_planned(FioParams(size="64m", target=str(tmp_path / "t")))])


def test_no_value_can_smuggle_a_line_into_a_job_file(tmp_path: Path):
    pwned = tmp_path / "pwned"
    smuggled = f"/tmp/x\nexec_prerun=touch {pwned}"
    with pytest.raises(ValueError, match="control character"):
        FioParams(target=smuggled)
    with pytest.raises(ValueError, match="control character"):
        FioParams(ioengine="libaio\nexec_prerun=touch /tmp/pwned")
    probe = get_probe("fio")
    bad_jobs = [
        {"name": "x", "rw": "read", "bs": 4096, "filename": smuggled},
        {"name": "x]\n[y", "rw": "read", "bs": 4096},
        {"name": "x", "rw": "read", "bs": 4096, "extra": {"rw=read\nexec_prerun": "id"}},
        {"name": "x", "rw": "read", "bs": 4096, "extra": {"ioscheduler": "none\r\nexec_prerun=id"}},
    ]
    for job in bad_jobs:
        with pytest.raises(SuiteError, match="refused"):
            probe.drafts(FioParams(jobs=[job]), _ctx(), mpis=[], ranks=None)
    with pytest.raises(ValueError, match="bracket"):
        job_file([FioJob(name="a]x", rw="read", bs=4096)])
    assert not pwned.exists()


def test_cli_refuses_a_smuggled_line_in_target(assay_home: Path, tmp_path: Path):
    """issue 14: ``--set target=...`` with a newline would have put ``exec_prerun=`` in the job
    file, which fio runs. Refused when planned: exit 2, a clear message, nothing run or stored."""
    pwned = tmp_path / "pwned"
    proc = run_cli(
        "run", "storage", "--only", "fio",
        "--set", f'target="{tmp_path}/x\\nexec_prerun=touch {pwned}"',
        home=assay_home, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "control character" in proc.stderr and "Traceback" not in proc.stderr
    assert not pwned.exists()
    assert not (assay_home / "runs").exists() or not list((assay_home / "runs").iterdir())


def test_cli_refuses_a_bad_target_before_the_run(assay_home: Path, tmp_path: Path):
    """issue 14: a target that cannot be used is refused before the run starts (exit 2), not
    found out by every job failing in a run stored as complete (exit 1)."""
    missing = tmp_path / "no" / "such" / "dir"
    proc = run_cli("run", "storage", "--set", f"target={missing}", home=assay_home, timeout=60)
    assert proc.returncode == 2, proc.stderr
    said = " ".join(proc.stderr.split())  # the terminal may wrap a long path
    assert f"{missing.parent} is not an existing directory" in said
    assert "Traceback" not in proc.stderr
    assert not (assay_home / "runs").exists() or not list((assay_home / "runs").iterdir())
    assert not missing.parent.exists()


# ---------------------------------------------------------------------------- report, pure


def _sample(metric: str, value: float, job: str, **params) -> Sample:
    s = Sample.make("fio", metric, value, params)
    s.job_id = job
    return s


def test_curve_table_marks_the_knee_and_names_the_plot():
    common = {"workload": "randread-8k", "numjobs": 1, "iodepth": 32, "bs": 8192,
              "target": "scratch", "outstanding_expected": 32}  # fmt: skip
    samples = []
    # an uncontrolled run, then an M/M/1 curve: W = s / (1 - rho), s = 1 ms at 1000 IOPS
    runs = [("max", None, 1000.0, 0.03)] + [
        ("curve", pct, 10.0 * pct, 0.001 / (1 - pct / 100 * 0.99))
        for pct in (10, 30, 50, 60, 70, 80, 85, 90, 95)
    ]
    for mode, pct, iops, lat in runs:
        p = {**common, "mode": mode, "direction": "read", "rate_limited": mode == "curve"}
        if pct:
            p.update(curve_pct=pct, target_iops=10.0 * pct)
        samples.append(_sample("storage.iops", iops, "005-fio-curve", **p))
        st = Stats(n=10, mean=lat, p99=2 * lat)
        samples.append(Sample.make("fio", "storage.latency", lat, {**p, "latency": "total"}, st))
        samples[-1].job_id = "005-fio-curve"
    summary = {**common, "mode": "curve-summary", "knee_method_requested": "kneedle"}
    samples.append(_sample("storage.iops", 950.0, "005-fio-curve", **summary))
    figures = fold_repetitions(samples)
    assert len(storage_figures(figures)) == len(figures)
    (table,) = [t for t in storage_tables(figures) if t.key.startswith("storage-curve")]
    offered = [r[0] for r in table.rows]
    assert offered[:3] == ["max (uncontrolled)", "10%", "30%"]
    (knee_row,) = [i for i, o in enumerate(offered) if o.endswith("(knee)")]
    assert 70 <= int(offered[knee_row].split("%")[0]) <= 90  # derived from the stored points
    assert (knee_row, 2) in table.best
    assert table.rows[1][1] == "100" and table.rows[1][3] == "100%"
    assert table.rows[0][6] == "30.00 / 32"  # 1000 IOPS x 30 ms
    notes = " ".join(table.notes)
    assert f"Knee at {offered[knee_row].split(' ')[0]} offered" in notes and "kneedle" in notes
    assert "--plots-dir" in notes  # drawn by the report


# ---------------------------------------------------------------------------- real runs


FAST = ["--set", "runtime=0.5", "--set", "ramp_time=0", "--set", "size=8m"]


def _report_json(home: Path) -> dict:
    return json.loads(run_cli("report", "-f", "json", home=home, check=True).stdout)


def _run_dir(home: Path) -> Path:
    (run,) = (home / "runs").iterdir()
    return run


@pytest.mark.slow
@needs_fio
def test_storage_suite_end_to_end(assay_home: Path):
    proc = run_cli("run", "storage", *FAST, home=assay_home, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    samples = _report_json(assay_home)["samples"]
    six = [s for s in samples if s["params"].get("mode") == "workloads"]
    for name in NAMES:
        iops = [s for s in six if s["params"]["workload"] == name and s["metric"] == "storage.iops"]
        lat = [
            s
            for s in six
            if s["params"]["workload"] == name
            and s["metric"] == "storage.latency"
            and s["params"]["latency"] == "total"
        ]
        assert iops and all(s["value"] > 0 for s in iops), name
        assert lat and all(0 < s["value"] < 1 and s["stats"]["p99"] > 0 for s in lat), name
    mix = {s["params"]["direction"] for s in six if s["params"]["workload"] == "randmix-8k"}
    assert mix == {"read", "write"}
    sweep = {s["params"]["numjobs"] for s in six if s["params"]["workload"] == "randread-8k"}
    assert sweep == {1, 2, 4}
    curve = [s for s in samples if s["params"].get("mode") == "curve"
             and s["metric"] == "storage.iops"]  # fmt: skip
    assert len({s["params"]["curve_pct"] for s in curve}) >= 3
    assert all(s["params"]["outstanding_expected"] > 0 for s in curve)
    assert all(s["params"]["rate_limited"] for s in curve)
    (summary,) = [s for s in samples if s["params"].get("mode") == "curve-summary"]
    assert summary["params"]["knee_method_requested"] == "kneedle"
    report = run_cli("report", "-f", "md", home=assay_home, check=True).stdout
    assert "Knee at" in report or "No knee:" in report  # derived from the stored points

    run = _run_dir(assay_home)
    plots = assay_home / "plots"  # drawn by the report from the stored points, not by the driver
    run_cli("report", "-f", "md", "--plots-dir", str(plots), "-o", str(assay_home / "r.md"),
            home=assay_home, check=True)  # fmt: skip
    (svg,) = [p for p in plots.glob("*.svg") if "curve" in p.name]
    assert svg.read_text().lstrip().startswith("<?xml")
    assert svg.with_suffix(".png").read_bytes()[:4] == b"\x89PNG"
    assert list(run.glob("jobs/*/*-randread-8k.json"))  # fio's raw output is kept
    assert not list(run.glob("jobs/*/scratch")), "test files were not removed"
    assert not list(run.rglob("assay-fio-*"))

    from assay.store.rundir import RunStore

    tables = storage_tables(fold_repetitions(RunStore(assay_home).load(None).samples))
    keys = [t.key for t in tables]
    assert keys == ["storage-workloads", "storage-sweep-randread-8k", "storage-curve-randread-8k"]
    assert [r[0] for r in tables[0].rows].count("randmix-8k") == 2


@pytest.mark.slow
@needs_fio
def test_keep_leaves_the_files_and_the_next_run_reuses_then_removes_them(
    assay_home: Path, tmp_path: Path
):
    target = tmp_path / "target"
    suite = tmp_path / "one.toml"
    suite.write_text(
        'name = "one"\n[[bench]]\nprobe = "fio"\n'
        f'params = {{ workloads = ["randread-8k"], target = "{target}" }}\n'
    )
    first = run_cli("run", str(suite), *FAST, "--set", "keep=true", home=assay_home)
    assert first.returncode == 0, first.stderr
    assert (target / safety.MARKER).is_file()
    assert (target / "assay-fio-0").stat().st_size == 8 * 2**20
    assert on_disk.read_marker(target) == {"assay-fio-0": 8 * 2**20}

    second = run_cli("run", str(suite), *FAST, home=assay_home)
    assert second.returncode == 0, second.stderr
    newest = sorted((assay_home / "runs").iterdir())[-1]
    err = next(newest.glob("jobs/*/stderr")).read_text()
    assert "fill:" not in err  # the kept files were filled already
    assert not (target / "assay-fio-0").exists()
    assert (target / safety.MARKER).is_file()  # not created by this run: only its files go


@pytest.mark.slow
@needs_fio
def test_cli_refuses_a_users_file_and_a_device(assay_home: Path, tmp_path: Path):
    precious = tmp_path / "precious.img"
    precious.write_bytes(b"\1" * 4096)
    proc = run_cli("run", "storage", "--set", f"target={precious}", home=assay_home)
    assert proc.returncode == 2
    assert "existing file assay did not create" in proc.stdout + proc.stderr
    assert precious.read_bytes() == b"\1" * 4096
    dev = block_device()
    if dev:
        proc = run_cli("run", "storage", "--set", f"target={dev}", home=assay_home)
        assert proc.returncode == 2 and "is a device" in proc.stdout + proc.stderr
    assert not (assay_home / "runs").exists() or not list((assay_home / "runs").iterdir())


@pytest.mark.slow
@needs_fio
def test_driver_removes_its_files_when_terminated(tmp_path: Path):
    spec = _spec(runtime=60, size=8 * 2**20)
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.drivers.fio", "--spec", spec],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    scratch = tmp_path / SCRATCH
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("*-randread-8k.fio")) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (scratch / "assay-fio-0").exists()
    os.killpg(proc.pid, signal.SIGTERM)  # what the runner does on a timeout
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == EXIT_FIO, err.decode()
    assert b"terminated" in err
    assert not scratch.exists()


@pytest.mark.parametrize(
    "fields",
    [{"bs": float("inf")}, {"bs": 1e300}, {"bs": 4096, "size": float("inf")},
     {"bs": 4096, "size": 1e300}, {"bs": 4096, "iodepth": float("inf")},
     {"bs": 4096, "numjobs": 1e300}, {"bs": 4096, "rwmixread": 1e300},
     {"bs": 4096, "runtime": float("inf")}, {"bs": 4096, "rate_iops": float("nan")},
     {"bs": 4096.5}, {"bs": 4096, "iodepth": True}, {"bs": "4096"}],
)  # fmt: skip
def test_a_custom_jobs_number_out_of_range_is_refused_when_planned(tmp_path: Path, fields):
    """issue 28: ``bs = inf`` (or ``size``) where a custom job wants an integer ended in an
    OverflowError; ``iodepth = inf`` reached the driver as ``Infinity``."""
    from assay.probes.fio import FioParams

    job = {"name": "j", "rw": "randrw", **fields}
    for params in ({"jobs": [job]}, {"groups": [[job]]}):
        with pytest.raises(ValueError, match="custom job 'j'"):
            FioParams(target=str(tmp_path), **params)


def test_the_cli_refuses_an_infinite_custom_job_size(tmp_path: Path) -> None:
    from conftest import run_cli

    suite = tmp_path / "s.toml"
    suite.write_text('name = "s"\n[[bench]]\nprobe = "fio"\nparams = { target = "'
                     f'{tmp_path}/t", jobs = [{{ name = "j", rw = "read", bs = 4096, '
                     "size = inf }] }\n")  # fmt: skip
    proc = run_cli("run", str(suite), "--dry-run", home=tmp_path / "h", timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "size=inf is not within" in proc.stderr and "Traceback" not in proc.stderr


def test_many_custom_jobs_are_checked_for_unique_names_in_linear_time():
    """Each name was counted in the whole list (``list.count``): 20,000 custom jobs took 29 s
    here in the unique-name check alone."""
    import time

    from assay.drivers.fio.spec import DriverSpec, items_of

    jobs = [{"name": f"j{i}", "rw": "randread", "bs": 4096} for i in range(20_000)]
    spec = DriverSpec(mode="workloads", workloads=[], size=2**20, runtime=1, ramp_time=0,
                      numjobs=1, iodepth=1, jobs=jobs)  # fmt: skip
    started = time.perf_counter()
    assert len(items_of(spec, "/d", None)) == 20_000
    assert time.perf_counter() - started < 10  # about 1 s here; 29 s before
    spec.jobs.append({"name": "j7", "rw": "read", "bs": 4096})
    with pytest.raises(ValueError, match="job names must be unique: j7 given twice"):
        items_of(spec, "/d", None)


@pytest.mark.parametrize("name", [5, 1.5, True, "  ", ["a"]])
def test_a_custom_job_whose_name_is_not_text_is_bad_input(tmp_path, name):
    """``name = 5`` in a suite was a TypeError traceback (a regular expression given an int)."""
    import tomllib

    from conftest import run_cli

    shown = "true" if name is True else repr(name).replace("'", '"')
    suite = tmp_path / "s.toml"
    suite.write_text(f'name = "s"\n[[bench]]\nprobe = "fio"\nparams = {{ target = "{tmp_path}/t", '
                     f'jobs = [{{ name = {shown}, rw = "randread", bs = 4096 }}] }}\n')  # fmt: skip
    tomllib.loads(suite.read_text())
    proc = run_cli("run", str(suite), "--dry-run", home=tmp_path / "h")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "its name is not text" in proc.stderr and "Traceback" not in proc.stderr
