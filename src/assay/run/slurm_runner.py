"""Runs a planned run inside its Slurm allocation (the batch script's only command).

    python -m assay.run.slurm_runner RUN_DIR [--heartbeat-timeout S]

Reads ``slurm/plan.json`` written by the front end, maps each job's allocation indices to the
allocation's host names, and runs the jobs in order: one ``srun`` step (or the MPI's own
launcher) per job, the jobs of one placement group (an all-pairs round, a per-node pass) at
the same time. It writes only files under RUN_DIR: the job directories and the append-only
``jobs.jsonl`` / ``samples.jsonl`` (never SQLite, which is unsafe on shared file systems); the
front end indexes them.

Watchdog: while the front end waits it touches ``slurm/heartbeat``. When that file goes stale
for ``--heartbeat-timeout`` seconds (assay was killed, even with SIGKILL), the runner cancels
its own allocation, so nothing of the run keeps running on the nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay.errors import AssayError
from assay.launch.slurm.fio import SERVERS_ENV, fio_servers, with_hosts
from assay.launch.slurm.options import MpiLaunch
from assay.launch.slurm.place import step_argv
from assay.launch.slurm.state import expand_nodes
from assay.model import Job, JobResult, MpiInfo, RunInfo, Sample
from assay.run.execute import run_job
from assay.store import RunWriter
from assay.store.records import read_run_info
from assay.store.rundir import read_jsonl

STATE_OF_STATUS = {
    "ok": "COMPLETED",
    "failed": "FAILED",
    "timeout": "TIMEOUT",
    "interrupted": "CANCELLED",
    "skipped": "",
}


class _Writer(RunWriter):
    """The run writer, shared by the threads of a group, adding where each job ran."""

    def __init__(self, path: Path, info: RunInfo, hosts: dict[str, list[str]]) -> None:
        super().__init__(path, info)
        self.hosts = hosts
        self.lock = threading.Lock()
        self.stopped = False  # a job was interrupted: the allocation is ending

    def record(self, result: JobResult, samples: list[Sample]) -> None:
        result.hosts = self.hosts.get(result.job_id, result.hosts)
        result.scheduler_state = STATE_OF_STATUS.get(result.status, "")
        if result.status == "interrupted":
            # Inside an allocation the signal is Slurm's, not a user's Ctrl-C.
            result.reason = result.reason.replace(
                "stopped by Ctrl-C",
                "stopped by Slurm (scancel, the time limit or a node failure: see run.json)",
            )
            self.stopped = True
        with self.lock:
            super().record(result, samples)


def load_plan(run_dir: Path) -> tuple[list[Job], list[MpiInfo], dict[str, MpiLaunch]]:
    data = json.loads((run_dir / "slurm" / "plan.json").read_text())
    jobs = [Job.from_dict(j) for j in data["jobs"]]
    mpis = [MpiInfo(**m) for m in data["mpis"]]
    launch = {
        name: MpiLaunch(
            launcher=v["launcher"],
            srun_mpi=v["srun_mpi"],
            args=tuple(v["args"]),
            env=tuple((k, x) for k, x in v["env"]),
        )
        for name, v in data["launch"].items()
    }
    return jobs, mpis, launch


def groups(jobs: list[Job]) -> list[list[Job]]:
    """Consecutive jobs of one placement group run together; the others one by one."""
    out: list[list[Job]] = []
    for job in jobs:
        g = job.placement.get("group")
        if g and out and out[-1][0].placement.get("group") == g:
            out[-1].append(job)
        else:
            out.append([job])
    return out


def run_multi_client(
    writer: _Writer, job: Job, mpis: list[MpiInfo], cores: int | None, resolve, run_dir: Path
) -> None:
    """A multi-client fio job: a fio server on each of its nodes (one srun step), the driver
    as their client on the first node, the servers stopped when it ends (``slurm_fio``)."""
    hosts = writer.hosts[job.job_id]
    conf = job.placement.get("fio_servers") or {}
    try:
        with fio_servers(
            job.job_id,
            hosts,
            run_dir / "slurm" / f"fio-{job.job_id}",
            port=int(conf.get("port") or 8765),
            network=conf.get("network"),
        ) as addresses:
            job.argv = with_hosts(job.argv, addresses)
            job.env = {**job.env, SERVERS_ENV: "srun"}
            job.params["server_addresses"] = addresses
            run_job(writer, job, mpis, cores, resolve=resolve)
    except AssayError as exc:  # the servers did not come up: this job fails, the run goes on
        writer.save_job(job, list(job.argv))
        writer.record(
            JobResult(job_id=job.job_id, status="failed", exit_code=None, wall_time=0.0,
                      argv=list(job.argv), reason=str(exc)),
            [],
        )  # fmt: skip


def _watchdog(run_dir: Path, timeout: float, stop: threading.Event) -> None:
    beat = run_dir / "slurm" / "heartbeat"
    while not stop.wait(min(5.0, timeout / 4)):
        try:
            age = time.time() - beat.stat().st_mtime
        except OSError:
            age = timeout + 1
        if age > timeout:
            note = f"assay stopped polling {age:.0f} s ago (limit {timeout:g} s): cancelling\n"
            (run_dir / "slurm" / "watchdog.txt").write_text(note)
            job_id = os.environ.get("SLURM_JOB_ID")
            if job_id:
                subprocess.run(["scancel", job_id], check=False, capture_output=True)
            os._exit(3)  # scancel ends the steps; this process must not start another


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="assay.run.slurm_runner")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--heartbeat-timeout", type=float, default=0.0)
    args = ap.parse_args(argv)
    run_dir: Path = args.run_dir.resolve()
    # scancel sends SIGTERM first: end the job in flight like Ctrl-C, keep what is recorded.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    jobs, mpis, launch = load_plan(run_dir)
    info = read_run_info(run_dir)  # the one reader of run.json (assay.store.records)
    allocation = expand_nodes(os.environ.get("SLURM_JOB_NODELIST", ""))
    cpus = os.environ.get("SLURM_CPUS_ON_NODE", "")
    cpus_per_node = int(cpus) if cpus.isdigit() else None
    (run_dir / "slurm" / "runner.json").write_text(
        json.dumps({"nodes": allocation, "started": time.time(), "pid": os.getpid()}) + "\n"
    )
    done = {r["job_id"] for r in read_jsonl(run_dir / "jobs.jsonl")}
    hosts: dict[str, list[str]] = {}
    for job in jobs:
        idx = job.placement.get("nodes", [0])
        if max(idx) >= len(allocation):
            job.skip_reason = f"needs {max(idx) + 1} nodes, the allocation has {len(allocation)}"
            continue
        hosts[job.job_id] = [allocation[i] for i in idx]
        job.params["hosts"] = hosts[job.job_id]
    writer = _Writer(run_dir, info, hosts)
    mpi_by_name = {m.name: m for m in mpis}

    def resolve(job: Job, exe: str | None) -> list[str]:
        argv = [exe if a == "{exe}" and exe else a for a in job.argv]
        mpi = mpi_by_name.get(job.mpi or "")
        where = hosts[job.job_id]
        if job.placement.get("fio_servers"):
            where = where[:1]  # the client runs on the first node, the servers on all
        return step_argv(job, argv, where, mpi, launch.get(job.mpi or ""), cpus_per_node)

    stop = threading.Event()
    if args.heartbeat_timeout > 0:
        threading.Thread(
            target=_watchdog, args=(run_dir, args.heartbeat_timeout, stop), daemon=True
        ).start()
    try:
        for group in groups([j for j in jobs if j.job_id not in done]):
            if writer.stopped:  # like Ctrl-C locally: start nothing more
                return 130
            if (
                len(group) == 1
                and group[0].placement.get("fio_servers")
                and not group[0].skip_reason
            ):
                run_multi_client(writer, group[0], mpis, cpus_per_node, resolve, run_dir)
                continue
            if len(group) == 1:
                run_job(writer, group[0], mpis, cpus_per_node, resolve=resolve)
                continue
            with ThreadPoolExecutor(max_workers=len(group)) as pool:
                futures = [
                    pool.submit(run_job, writer, j, mpis, cpus_per_node, resolve) for j in group
                ]
                for f in futures:
                    f.result()
    except KeyboardInterrupt:
        print("slurm_runner: stopped (SIGTERM/SIGINT); finished jobs are recorded", file=sys.stderr)
        return 130
    finally:
        stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
