import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.errors import AssayError, LaunchError
from assay.launch import Capabilities, check_jobs, run_process
from assay.launch.local.mpi import mpi_argv
from assay.launch.local.scheduler import LocalScheduler
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


def _wait_dead(pids: list[int], seconds: float = 8.0) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        alive = [p for p in pids if _alive(p)]
        if not alive:
            return []
        time.sleep(0.1)
    return [p for p in pids if _alive(p)]


def _wait_file(path: Path, seconds: float = 20.0) -> str:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().endswith("\n"):
            return path.read_text()
        time.sleep(0.05)
    raise AssertionError(f"{path} never written")


# A job whose grandchild escapes both the process group and the session, as MPICH's hydra does.
ESCAPING = "setsid sleep 60 & echo $! > {pidfile}; sleep 60 & echo $! >> {pidfile}; wait"


def test_timeout_ends_a_grandchild_that_left_the_session(tmp_path: Path):
    pidfile = tmp_path / "pids"
    out = run_process(
        ["sh", "-c", ESCAPING.format(pidfile=pidfile)], env={}, timeout=1.0,
        stdout_path=tmp_path / "o", stderr_path=tmp_path / "e",
    )  # fmt: skip
    assert out.timed_out
    pids = [int(p) for p in pidfile.read_text().split()]
    assert len(pids) == 2 and _wait_dead(pids) == [], "a setsid grandchild outlived the timeout"


def test_sigkill_of_the_caller_ends_the_job_tree(tmp_path: Path):
    """The caller of run_process dies by SIGKILL (no handler runs): the guard ends the job."""
    pidfile = tmp_path / "pids"
    code = (
        "import sys; from pathlib import Path; from assay.launch import run_process\n"
        f"run_process(['sh', '-c', {ESCAPING.format(pidfile=pidfile)!r}], env={{}}, "
        f"timeout=100, stdout_path=Path({str(tmp_path / 'o')!r}), "
        f"stderr_path=Path({str(tmp_path / 'e')!r}))\n"
    )
    caller = subprocess.Popen([sys.executable, "-c", code])
    try:
        _wait_file(pidfile)
        time.sleep(0.2)  # the second line
        pids = [int(p) for p in pidfile.read_text().split()]
        assert all(_alive(p) for p in pids)
        caller.kill()
        caller.wait()
        assert _wait_dead(pids) == [], "the job outlived its SIGKILLed caller"
    finally:
        for p in pidfile.read_text().split() if pidfile.exists() else []:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(p), signal.SIGKILL)


def test_the_guard_passes_exit_codes_and_signals_through(tmp_path: Path):
    kw = {"env": {}, "timeout": 10, "stdout_path": tmp_path / "o", "stderr_path": tmp_path / "e"}
    assert run_process(["sh", "-c", "exit 7"], **kw).exit_code == 7
    assert run_process(["sh", "-c", "kill -SEGV $$"], **kw).exit_code == -signal.SIGSEGV
    assert (tmp_path / "e").read_text() == ""  # the guard adds nothing to the job's stderr
    with pytest.raises(LaunchError, match="cannot start /no/such/tool: No such file"):
        run_process(["/no/such/tool"], **kw)
    (tmp_path / "noexec").write_text("")
    with pytest.raises(LaunchError, match=r"cannot start .*noexec: Permission denied"):
        run_process([str(tmp_path / "noexec")], **kw)


def test_the_local_scheduler_refuses_more_than_one_node():
    jobs = [Job(job_id="1", probe="p2p", argv=["x"], ranks=2, nodes=2)]
    with pytest.raises(AssayError, match="local scheduler runs on this node only"):
        LocalScheduler().check(jobs)
    check_jobs(jobs, Capabilities("cluster", max_nodes=None))
    LocalScheduler().check([Job(job_id="1", probe="p2p", argv=["x"], ranks=2)])


def test_a_scheduler_refuses_a_spread_it_cannot_place():
    from assay.model import Spread

    job = Job(job_id="1", probe="fio", argv=["x"], spread=Spread("clients"))
    caps = Capabilities("toy", max_nodes=None, spreads=frozenset({"per-node"}))
    with pytest.raises(AssayError, match=r"toy scheduler cannot place 1 \(clients\)"):
        check_jobs([job], caps)


def test_parallel_launchers_write_each_rank_line() -> None:
    """One module per launcher (``assay.launch.parallel``): both backends take their lines
    from it, so a step's rank line reads the same whoever asks."""
    from assay.errors import ConfigError
    from assay.launch.parallel import Step, for_flavor, parallel_launcher

    prog = ["/bin/x", "-a"]
    hosts = ("n1", "n2")
    step = Step("mpiexec", 4, ppn=2, hosts=hosts, threads=3, name="j1", plugin="pmi2")
    assert parallel_launcher("mpiexec").argv(step, prog) == [
        "mpiexec", "-n", "4", "-ppn", "2", "-hosts", "n1,n2", *prog,
    ]  # fmt: skip
    assert parallel_launcher("srun").argv(step, prog) == [
        "srun", "--job-name=j1", "--nodes=2", "--nodelist=n1,n2", "--kill-on-bad-exit=1",
        "--ntasks=4", "--ntasks-per-node=2", "--cpus-per-task=3", "--mpi=pmi2", *prog,
    ]  # fmt: skip
    flux = Step("flux", 4, ppn=2, hosts=hosts, threads=3, name="j1")
    assert parallel_launcher("flux").argv(flux, prog) == [
        "flux", "run", "--nodes=2", "--ntasks=4", "--tasks-per-node=2", "--cores-per-task=3",
        "--job-name=j1", "--requires=host:n1,n2", *prog,
    ]  # fmt: skip
    assert for_flavor("odd").argv(Step("mpiexec", 2, bind="core"), prog) == [
        "mpiexec", "-n", "2", *prog,
    ]  # fmt: skip
    ompi = for_flavor("openmpi").argv(Step("mpirun", 4, ppn=2, hosts=hosts, bind="none"), prog)
    assert ompi[:9] == ["mpirun", "-np", "4", "--host", "n1:2,n2:2", "--map-by", "ppr:2:node",
                        "--bind-to", "none"]  # fmt: skip
    with pytest.raises(ConfigError, match="no parallel launcher"):
        parallel_launcher("aprun")
