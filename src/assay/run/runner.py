"""Runs a planned run inside its allocation (the batch script's only command), for any batch
scheduler.

    python -m assay.run.runner RUN_DIR --launcher NAME [--heartbeat-timeout S]

Reads the plan the front end wrote (``<run>/<scheduler>/plan.json``), asks the scheduler for the
allocation's hosts, maps each job's allocation indices to host names, and runs the jobs in
order: one step per job (``Scheduler.step_argv``), the jobs of one placement group (an
all-pairs round, a per-node pass) at the same time, each followed by what its probe's hook
leaves to run (``assay.run.followup``: a resume after a lost node, a retest). It writes only
files under RUN_DIR: the job directories and the append-only ``jobs.jsonl`` /
``samples.jsonl`` (never SQLite, which is unsafe on shared file systems); the front end
indexes them.

Watchdog: while the front end waits it touches ``heartbeat``. When that file goes stale for
``--heartbeat-timeout`` seconds (assay was killed, even with SIGKILL), the runner cancels its
own allocation, so nothing of the run keeps running on the nodes.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from assay.errors import AssayError
from assay.launch import BatchScheduler
from assay.launch.place import groups
from assay.launch.transports import SHARED_KERNEL_ENV, network_only, shared_kernels
from assay.model import Job, JobResult, MpiInfo, Placement, RunInfo, Sample
from assay.probes import get_probe
from assay.probes.base import Ended, FollowUpContext
from assay.run import followup
from assay.run.execute import prepared, run_job
from assay.run.front import RUNNER_NOTES, batch_dir, read_plan
from assay.store import RunWriter, safefile
from assay.store.records import read_run_info
from assay.store.rundir import read_jsonl
from assay.system._context import Context
from assay.system.fabric import Run, fabric_limits, shortfalls
from assay.system.hostlist import compress_hostlist

STATE_OF_STATUS = {
    "ok": "COMPLETED",
    "failed": "FAILED",
    "timeout": "TIMEOUT",
    "interrupted": "CANCELLED",
    "skipped": "",
}


class _Writer(RunWriter):
    """The run writer, shared by the threads of a group, adding where each job ran."""

    def __init__(
        self, path: Path, info: RunInfo, hosts: dict[str, list[str]], who: str, notes: Path
    ) -> None:
        super().__init__(path, info)
        self.hosts = hosts
        self.who = who  # the scheduler's name, for the reason of a stopped job
        self.notes = notes  # where this process's notes go (``note``)
        self.lock = threading.Lock()
        self.stopped = False  # a job was interrupted: the allocation is ending
        self.stored: dict[str, list[Sample]] = {}  # job id -> its samples (follow-ups read them)

    def note(self, text: str) -> None:
        """Kept in the batch directory: run.json is the front end's to write (it would
        overwrite a note written here), and its ``finish`` folds these in (``RUNNER_NOTES``)."""
        with self.lock:
            if text in self.info.notes:
                return
            super().note(text)
            with os.fdopen(safefile.open_append(self.notes), "a") as f:
                f.write(text.replace("\n", " ") + "\n")

    def record(self, result: JobResult, samples: list[Sample]) -> None:
        result.hosts = self.hosts.get(result.job_id, result.hosts)
        result.scheduler_state = STATE_OF_STATUS.get(result.status, "")
        if result.status == "interrupted":
            # Inside an allocation the signal is the scheduler's, not a user's Ctrl-C.
            result.reason = result.reason.replace(
                "stopped by Ctrl-C",
                f"stopped by {self.who} (a cancel, the time limit or a node failure: see run.json)",
            )
            self.stopped = True
        with self.lock:
            super().record(result, samples)
            self.stored[result.job_id] = samples


def run_served(
    writer: _Writer,
    job: Job,
    mpis: list[MpiInfo],
    scheduler: BatchScheduler,
    cores: int | None,
    resolve,
    work_dir: Path,
) -> None:
    """A "clients" job: a server on each of its nodes (the scheduler's), the job as their
    client on the first node, the servers stopped when it ends."""
    hosts = writer.hosts[job.job_id]
    probe = get_probe(job.probe)
    try:
        with scheduler.serve(job, hosts, work_dir, probe.server_argv(job)) as addresses:
            run_job(writer, probe.served(job, addresses), mpis, cores, resolve=resolve)
    except AssayError as exc:  # the servers did not come up: this job fails, the run goes on
        writer.save_job(job, list(job.argv))
        writer.record(
            JobResult(job_id=job.job_id, status="failed", exit_code=None, wall_time=0.0,
                      argv=list(job.argv), reason=str(exc)),
            [],
        )  # fmt: skip


def placed_follow_up(writer: _Writer, job: Job, hosts_of: list[str]) -> None:
    """A follow-up job on the hosts it names (``params["hosts"]``, rank order), else on the
    nodes its placement (the job it follows's) gives."""
    if job.job_id in writer.hosts or job.skip_reason:
        return
    named = job.params.get("hosts")
    if isinstance(named, list) and named:
        index = {h: i for i, h in enumerate(hosts_of)}
        job.placement = Placement([index[h] for h in named], "", None)
    idx = job.placement.indices if job.placement else [0]
    writer.hosts[job.job_id] = [hosts_of[i] for i in idx]
    job.params["hosts"] = list(writer.hosts[job.job_id])


def ended(writer: _Writer, job: Job) -> Ended | None:
    """How ``job`` ended, as its records say (None: it was not recorded)."""
    result = writer.recorded.get(job.job_id)
    if result is None:
        return None
    samples = writer.stored.get(job.job_id, [])
    return Ended(job, result, samples, writer.hosts.get(job.job_id, []), writer.job_dir(job))


def run_groups(
    writer: _Writer,
    jobs: list[Job],
    run_one: followup.RunOne,
    ctx: FollowUpContext,
    hosts_of: list[str],
) -> int:
    """The jobs by placement group (a group's jobs at once), each followed by what its probe
    leaves to run inside this allocation (``assay.run.followup``); 130 once a job was stopped."""

    def followed(job: Job) -> None:
        followup.run_followed(job, run_one, ctx, lambda: writer.stopped, prepare)

    def prepare(job: Job) -> Path:  # a follow-up measured inside a job's launch, placed
        placed_follow_up(writer, job, hosts_of)
        return prepared(writer, job)

    for group in groups(jobs):
        if writer.stopped:  # like Ctrl-C locally: start nothing more
            return 130
        if len(group) == 1:
            followed(group[0])
            continue
        with ThreadPoolExecutor(max_workers=len(group)) as pool:
            futures = [pool.submit(followed, j) for j in group]
            for f in futures:
                f.result()
    return 0


def _watchdog(where: Path, scheduler: BatchScheduler, handle: str | None, timeout: float,
              stop: threading.Event) -> None:  # fmt: skip
    beat = where / "heartbeat"
    while not stop.wait(min(5.0, timeout / 4)):
        try:
            age = time.time() - beat.stat().st_mtime
        except OSError:
            age = timeout + 1
        if age > timeout:
            note = f"assay stopped polling {age:.0f} s ago (limit {timeout:g} s): cancelling\n"
            safefile.write_atomic(where / "watchdog.txt", note)
            if handle:
                scheduler.cancel(handle)
            os._exit(3)  # the cancel ends the steps; this process must not start another


def off_shared_memory(
    writer: _Writer, jobs: list[Job], mpis: dict[str, MpiInfo], boot_ids: dict[str, str]
) -> None:
    """Nodes of one kernel (namespaces, containers): every MPI job kept on the network
    (``assay.launch.transports``; a user's own setting wins), every job told so, and the run
    notes it; each figure records ``shared_kernel``."""
    shared = shared_kernels(boot_ids)
    if not shared:
        return
    groups = "; ".join(compress_hostlist(g) for g in shared)
    writer.note(
        f"nodes share a kernel ({groups}): MPI between them was kept on its network transport "
        "(TCP), never shared memory; they share CPUs too"
    )
    for job in jobs:
        mpi = mpis.get(job.mpi or "")
        auto = {**(network_only(mpi) if mpi is not None else {}), SHARED_KERNEL_ENV: "1"}
        job.env = {**auto, **job.env}
        job.params["shared_kernel"] = True


def fabric_notes(writer: _Writer, jobs: list[Job], nodes: int, shared: list) -> None:
    """The kernel limits of this node (the allocation's first: nodes are alike) that the
    run's MPI jobs over several nodes need more of, named with the value that would do, before
    a connect fails on them (``assay.system.fabric``)."""
    wide = [j for j in jobs if j.spawn == "mpi" and j.placement and len(j.placement.indices) > 1]
    if not wide:
        return
    ppn = max(j.ppn or max(1, j.ranks // len(j.placement.indices)) for j in wide if j.placement)
    run = Run(nodes, ppn, shared_kernel=bool(shared))
    limits = fabric_limits(Context()) or {}
    for short in shortfalls(limits, run):
        text = f"fabric limit on {socket.gethostname()}: {short.message(run)}"
        print(f"runner: WARN {text}", file=sys.stderr)
        writer.note(text)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="assay.run.runner")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument(
        "--launcher",
        required=True,
        help="the batch scheduler's registry name (the old word: batch scripts carry it)",
    )
    ap.add_argument("--heartbeat-timeout", type=float, default=0.0)
    args = ap.parse_args(argv)
    run_dir: Path = args.run_dir.resolve()
    # A cancel sends SIGTERM first: end the job in flight like Ctrl-C, keep what is recorded.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    jobs, mpis, scheduler = read_plan(run_dir, args.launcher)
    where = batch_dir(run_dir, scheduler.caps.name)
    info = read_run_info(run_dir)  # the one reader of run.json (assay.store.records)
    allocation = scheduler.allocation()
    safefile.write_atomic(
        where / "runner.json",
        json.dumps({"hosts": allocation.hosts, "started": time.time(), "pid": os.getpid()}) + "\n",
    )
    done = {r["job_id"] for r in read_jsonl(run_dir / "jobs.jsonl")}
    hosts: dict[str, list[str]] = {}
    for job in jobs:
        idx = job.placement.indices if job.placement else [0]
        if max(idx) >= len(allocation.hosts):
            job.skip_reason = (
                f"needs {max(idx) + 1} nodes, the allocation has {len(allocation.hosts)}"
            )
            continue
        hosts[job.job_id] = [allocation.hosts[i] for i in idx]
        job.params["hosts"] = hosts[job.job_id]
    writer = _Writer(run_dir, info, hosts, scheduler.caps.name.capitalize(), where / RUNNER_NOTES)
    mpi_by_name = {m.name: m for m in mpis}
    if len(allocation.hosts) > 1:
        boots = scheduler.boot_ids(allocation.hosts)
        off_shared_memory(writer, jobs, mpi_by_name, boots)
        fabric_notes(writer, jobs, len(allocation.hosts), shared_kernels(boots))

    def resolve(job: Job, exe: str | None) -> list[str]:
        argv = [exe if a == "{exe}" and exe else a for a in job.argv]
        where_to = hosts[job.job_id]
        if job.spread.kind == "clients":
            where_to = where_to[:1]  # the client runs on the first node, the servers on all
        return scheduler.step_argv(job, argv, where_to, mpi_by_name.get(job.mpi or ""))

    stop = threading.Event()
    if args.heartbeat_timeout > 0:
        threading.Thread(
            target=_watchdog,
            args=(where, scheduler, allocation.handle, args.heartbeat_timeout, stop),
            daemon=True,
        ).start()
    cores = allocation.cpus_per_node
    # who still answers (a node lost mid-job) is the scheduler's question
    ctx = followup.context(writer.note, scheduler.responsive)

    def run_one(job: Job, inside: followup.Inside | None) -> Ended | None:
        placed_follow_up(writer, job, allocation.hosts)
        if job.spread.kind == "clients" and not job.skip_reason:
            run_served(writer, job, mpis, scheduler, cores, resolve, where)
        else:
            run_job(writer, job, mpis, cores, resolve=resolve, inside=inside)
        return ended(writer, job)

    try:
        todo = [j for j in jobs if j.job_id not in done]
        return run_groups(writer, todo, run_one, ctx, allocation.hosts)
    except KeyboardInterrupt:
        print("runner: stopped (SIGTERM/SIGINT); finished jobs are recorded", file=sys.stderr)
        return 130
    finally:
        stop.set()


if __name__ == "__main__":
    sys.exit(main())
