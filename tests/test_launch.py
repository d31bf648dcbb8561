import os
import time
from pathlib import Path

from assay.launch import mpi_argv, run_process
from assay.model import Job, MpiInfo


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead for our purpose
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


def test_exit_code_and_output_files(tmp_path: Path):
    out = run_process(
        ["sh", "-c", "echo hi; echo err >&2; exit 3"],
        env={},
        timeout=10,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
    )
    assert out.exit_code == 3 and not out.timed_out
    assert (tmp_path / "o").read_text() == "hi\n" and (tmp_path / "e").read_text() == "err\n"


def test_timeout_kills_the_whole_process_group(tmp_path: Path):
    pidfile = tmp_path / "child.pid"
    argv = ["sh", "-c", f"sleep 60 & echo $! > {pidfile}; wait"]
    start = time.monotonic()
    out = run_process(
        argv, env={}, timeout=1.0, stdout_path=tmp_path / "o", stderr_path=tmp_path / "e"
    )
    assert out.timed_out and out.exit_code is None
    assert time.monotonic() - start < 10
    child = int(pidfile.read_text())
    for _ in range(50):
        if not _alive(child):
            break
        time.sleep(0.1)
    assert not _alive(child), "the grandchild outlived the timeout"


def test_env_is_passed(tmp_path: Path):
    run_process(
        ["sh", "-c", "echo $OMP_NUM_THREADS"],
        env={"OMP_NUM_THREADS": "7"},
        timeout=10,
        stdout_path=tmp_path / "o",
        stderr_path=tmp_path / "e",
    )
    assert (tmp_path / "o").read_text() == "7\n"


def test_mpi_argv_per_flavor():
    job = Job(job_id="1", probe="p2p", argv=["/bin/p2p", "--mode", "latency"], ranks=2)
    ompi = mpi_argv(job, MpiInfo(name="openmpi", launcher="mpirun", flavor="openmpi"), cores=1)
    assert ompi[:5] == ["mpirun", "-np", "2", "--bind-to", "none"] and "--oversubscribe" in ompi
    assert ("--allow-run-as-root" in ompi) == (os.geteuid() == 0)
    assert ompi[-3:] == ["/bin/p2p", "--mode", "latency"]
    mpich = mpi_argv(
        job,
        MpiInfo(
            name="mpich", launcher="mpiexec", flavor="mpich", launcher_flags=["-genv", "X", "1"]
        ),
    )
    assert mpich == [
        "mpiexec",
        "-n",
        "2",
        "-bind-to",
        "core",
        "-genv",
        "X",
        "1",
        "/bin/p2p",
        "--mode",
        "latency",
    ]
