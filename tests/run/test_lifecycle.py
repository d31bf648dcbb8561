"""No job outlives assay, and every run ends in a final state: real assay, real OpenMPI and
MPICH, real signals (SIGKILL, SIGTERM), real concurrent processes."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import run_cli

pytestmark = pytest.mark.slow
FIX_OSU_LATENCY = (
    Path(__file__).parents[1] / "fixtures" / "osu" / "alaska_ompi4_ucx_osu_latency.out"
)


def processes_of(home: Path) -> list[str]:
    """Processes (other than this test) whose command line names ``home`` or that run in it."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            cwd = os.readlink(proc / "cwd")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and (str(home) in cmd or cwd.startswith(str(home))):
            found.append(f"{proc.name}: {cmd.strip()} (in {cwd})")
    return found


def wait_until_gone(home: Path, seconds: float = 8.0) -> list[str]:
    deadline = time.monotonic() + seconds
    while (left := processes_of(home)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def kill_all(home: Path) -> None:
    """Clean-up after a failed test, so one failure does not leave processes to the next."""
    for line in processes_of(home):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(int(line.split(":")[0]), signal.SIGKILL)


def slow_suite(tmp_path: Path, mpi: str) -> Path:
    suite = tmp_path / f"slow-{mpi}.toml"
    suite.write_text(
        'name = "slow"\n'
        '[[bench]]\nprobe = "stream"\nparams = { elements = 100000, ntimes = 3 }\n'
        f'[[bench]]\nprobe = "p2p"\nmpi = "{mpi}"\n'
        "params = { max_size = 8, iterations = 100000000 }\n"
    )
    return suite


def start(home: Path, *args: str) -> subprocess.Popen:
    env = {**os.environ, "ASSAY_HOME": str(home), "COLUMNS": "200"}
    return subprocess.Popen(
        [sys.executable, "-m", "assay", *args], env=env,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def wait_for_ranks(home: Path, proc: subprocess.Popen, probe: str = "p2p") -> None:
    """Until the MPI job's ranks run (two processes of the probe)."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        ranks = [p for p in processes_of(home) if p.split()[1].endswith(f"/{probe}")]
        if len(ranks) >= 2:
            time.sleep(0.5)
            return
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.2)
    raise AssertionError("the MPI job never started")


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
def test_sigkill_of_assay_leaves_no_process_and_the_run_ends_interrupted(
    assay_home: Path, tmp_path: Path, mpi: str
):
    proc = start(assay_home, "run", str(slow_suite(tmp_path, mpi)))
    try:
        wait_for_ranks(assay_home, proc)
        proc.kill()  # SIGKILL: no handler of assay runs
        proc.wait(timeout=10)
        left = wait_until_gone(assay_home)
        assert left == [], "processes of the run outlived assay:\n" + "\n".join(left)
    finally:
        kill_all(assay_home)
    runs = run_cli("runs", home=assay_home, check=True)
    assert "stopped without finishing" in " ".join(runs.stderr.split())
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["run"]["status"] == "interrupted"
    assert [j["status"] for j in doc["jobs"]] == ["ok", "interrupted"]
    assert "cut short" in doc["jobs"][1]["reason"]
    assert any(s["metric"] == "memory.triad" for s in doc["samples"])  # the finished job kept


@pytest.mark.parametrize(("mpi", "repeat"), [("openmpi", "1"), ("mpich", "1"), ("mpich", "auto")])
def test_sigterm_stops_like_ctrl_c(assay_home: Path, tmp_path: Path, mpi: str, repeat: str):
    proc = start(assay_home, "run", str(slow_suite(tmp_path, mpi)), "--repeat", repeat)
    try:
        wait_for_ranks(assay_home, proc)
        proc.terminate()  # what timeout(1) and scancel send
        _, err = proc.communicate(timeout=60)
        left = wait_until_gone(assay_home, 3.0)
        assert left == [], "processes of the run outlived assay:\n" + "\n".join(left)
    finally:
        kill_all(assay_home)
    assert proc.returncode == 143, err
    assert "Traceback" not in err and "stopped by SIGTERM" in err
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["run"]["status"] == "interrupted"
    statuses = [j["status"] for j in doc["jobs"]]
    assert set(statuses[:-1]) == {"ok"} and statuses[-1] == "interrupted"
    assert doc["jobs"][-1]["reason"].startswith("stopped by SIGTERM")
    assert any("cut short: 002-p2p" in n for n in doc["run"]["notes"])


def test_concurrent_runs_warn_and_record_it(assay_home: Path, tmp_path: Path):
    first = start(assay_home, "run", str(slow_suite(tmp_path, "mpich")), "--set", "timeout=30")
    try:
        wait_for_ranks(assay_home, first)
        second = run_cli("run", "quick", "--only", "stream", "--set", "elements=100000",
                         home=assay_home)  # fmt: skip
        first.terminate()
        first.communicate(timeout=60)
    finally:
        kill_all(assay_home)
    assert second.returncode == 0, second.stderr
    first_id = sorted(p.name for p in (assay_home / "runs").iterdir())[0]
    assert f"warning: run {first_id}" in " ".join(second.stderr.split())
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["samples"] and all(
        s["params"].get("concurrent_runs") == first_id for s in doc["samples"]
    )
    assert any("shared this node" in n for n in doc["run"]["notes"])


def test_a_corrupt_run_is_skipped_and_named(assay_home: Path):
    for _ in range(2):
        run_cli("import", str(FIX_OSU_LATENCY), home=assay_home, check=True)
    bad = sorted((assay_home / "runs").iterdir())[0]
    (bad / "run.json").write_text('{"run_id": "trunc')
    for args in (["runs"], ["runs", "--rebuild"]):
        proc = run_cli(*args, home=assay_home)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        assert f"skipped a damaged run: {bad.name}" in " ".join(proc.stderr.split())
    proc = run_cli("report", bad.name, home=assay_home)
    assert proc.returncode == 2 and "run.json cannot be read: it is not JSON" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_concurrent_imports_all_succeed(assay_home: Path):
    procs = [start(assay_home, "import", str(FIX_OSU_LATENCY)) for _ in range(8)]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [code for code, _ in results] == [0] * 8, results
    proc = run_cli("runs", home=assay_home, check=True)
    assert proc.stdout.count("import-auto") == 8


def test_nodes_beyond_the_launcher_are_refused(assay_home: Path):
    proc = run_cli("run", "quick", "--only", "p2p", "--set", "nodes=2", home=assay_home)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "local scheduler runs on this node only" in " ".join(proc.stderr.split())
    assert not (assay_home / "runs").exists()  # refused before anything ran or was stored


def test_import_waits_for_a_busy_index(assay_home: Path):
    """Another assay holds the index's write lock longer than sqlite's default 5 s wait."""
    run_cli("import", str(FIX_OSU_LATENCY), home=assay_home, check=True)  # creates the index
    blocker = sqlite3.connect(assay_home / "assay.db", isolation_level=None,
                              check_same_thread=False)  # fmt: skip
    blocker.execute("BEGIN IMMEDIATE")
    timer = threading.Timer(7.0, blocker.rollback)
    timer.start()
    try:
        proc = run_cli("import", str(FIX_OSU_LATENCY), home=assay_home, process=True)
    finally:
        timer.join()
        blocker.close()
    assert proc.returncode == 0, proc.stderr
    assert "locked" not in proc.stderr
    assert run_cli("runs", home=assay_home, check=True).stdout.count("import-auto") == 2
