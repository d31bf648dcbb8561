"""Runs a planned run inside its allocation (the batch script's only command), for any batch
launcher.

    python -m assay.run.runner RUN_DIR --launcher NAME [--heartbeat-timeout S]

Reads the plan the front end wrote (``<run>/<launcher>/plan.json``), asks the launcher for the
allocation's hosts, maps each job's allocation indices to host names, and runs the jobs in
order: one step per job (``Launcher.step_argv``), the jobs of one placement group (an
all-pairs round, a per-node pass) at the same time. It writes only files under RUN_DIR: the
job directories and the append-only ``jobs.jsonl`` / ``samples.jsonl`` (never SQLite, which is
unsafe on shared file systems); the front end indexes them.

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

from assay.analysis.statistics.outliers import OutlierRule, outlier_rule
from assay.config import load_config
from assay.errors import AssayError
from assay.inputfile import read_bounded
from assay.launch import BatchLauncher
from assay.launch.connectfail import connect_failures, describe, neighbour_overflows
from assay.launch.place import groups
from assay.launch.transports import SHARED_KERNEL_ENV, network_only, shared_kernels
from assay.model import Job, JobResult, MpiInfo, Placement, RunInfo, Sample
from assay.parsers.allpairs_file import read_matrix_file
from assay.probes import get_probe
from assay.run.execute import run_job
from assay.run.followup import Sweep, lost_ranks, plan_follow_up
from assay.run.front import RUNNER_NOTES, batch_dir, read_plan
from assay.store import RunWriter, safefile
from assay.store.records import read_run_info
from assay.store.rundir import read_jsonl
from assay.system._context import Context, run_command
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
        self.who = who  # the launcher's name, for the reason of a stopped job
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
    launcher: BatchLauncher,
    cores: int | None,
    resolve,
    work_dir: Path,
) -> None:
    """A "clients" job: a server on each of its nodes (the launcher's), the job as their
    client on the first node, the servers stopped when it ends."""
    hosts = writer.hosts[job.job_id]
    probe = get_probe(job.probe)
    try:
        with launcher.serve(job, hosts, work_dir, probe.server_argv(job)) as addresses:
            run_job(writer, probe.served(job, addresses), mpis, cores, resolve=resolve)
    except AssayError as exc:  # the servers did not come up: this job fails, the run goes on
        writer.save_job(job, list(job.argv))
        writer.record(
            JobResult(job_id=job.job_id, status="failed", exit_code=None, wall_time=0.0,
                      argv=list(job.argv), reason=str(exc)),
            [],
        )  # fmt: skip


def run_all_pairs(
    writer: _Writer,
    job: Job,
    mpis: list[MpiInfo],
    launcher: BatchLauncher,
    hosts_of: list[str],
    cores: int | None,
    resolve,
    rule: OutlierRule,
) -> None:
    """An all-pairs sweep, then what it leaves inside this allocation (``assay.run.followup``):
    a resume without a lost node, a retest of what the rule flags."""
    run_job(writer, job, mpis, cores, resolve=resolve)
    probe = get_probe(job.probe)
    current, n = job, 0
    try:
        sweep = Sweep.of(read_matrix_file(writer.job_dir(job) / probe_matrix_file(job)))
    except (AssayError, OSError):
        return  # no matrix to continue: the job's record says why
    while not writer.stopped:
        lost: list[str] = []
        refused = False
        result = writer.recorded.get(current.job_id)
        if result is not None and result.status not in ("ok", "skipped"):
            now = writer.hosts[current.job_id]
            lost = [now[r] for r in lost_ranks(_summaries(writer, current)) if r < len(now)]
            refused = _connects_refused(writer, current, len(now))
            if refused or not lost:  # a refused connect loses no node; a dead launch: ask
                asked = lost or now
                answering = set(launcher.responsive(asked))
                lost = [h for h in asked if h not in answering]
            if not lost and not refused:
                return  # not a lost node: nothing a resume would fix
        follow = plan_follow_up(sweep, lost, rule, refused=refused and not lost)
        if follow is None:
            return
        n += 1
        nxt = probe.pairs_job(job, follow.pairs, follow.kind, follow.first_round,
                              follow.iterations, f"{follow.kind}{n}", sweep.fitted)  # fmt: skip
        nxt.ranks, nxt.nodes = len(follow.hosts), len(follow.hosts)
        index = {h: i for i, h in enumerate(hosts_of)}
        nxt.placement = Placement([index[h] for h in follow.hosts], "", None)
        writer.hosts[nxt.job_id] = list(follow.hosts)
        nxt.params["hosts"] = list(follow.hosts)
        if sweep.lost:
            nxt.params["lost_nodes"] = list(sweep.lost)
        writer.note(f"{job.job_id}: {follow.why} ({nxt.job_id})")
        run_job(writer, nxt, mpis, cores, resolve=resolve)
        current = nxt
        if follow.kind == "retest":
            return
        try:
            sweep.add(read_matrix_file(writer.job_dir(nxt) / probe_matrix_file(nxt)))
        except (AssayError, OSError):
            return


def _connects_refused(writer: _Writer, job: Job, nodes: int) -> bool:
    """Whether the job's MPI could not connect (``assay.launch.connectfail``): noted with the
    likely cause (the kernel's neighbour table, a fabric limit of this node) when it did."""
    try:
        stderr = read_bounded(writer.job_dir(job) / "stderr", 16 << 20, "stderr").decode(
            errors="replace"
        )
    except (AssayError, OSError):
        return False
    failures = connect_failures(stderr)
    if not failures:
        return False
    run = Run(nodes, shared_kernel=bool(job.params.get("shared_kernel")))
    limits = [s.message(run) for s in shortfalls(fabric_limits(Context()) or {}, run)]
    dmesg = run_command(["dmesg"]) or ""
    writer.note(f"{job.job_id}: {describe(failures, neighbour_overflows(dmesg), limits)}")
    return True


def _summaries(writer: _Writer, job: Job) -> list[dict]:
    """The params of the samples a job stored (its summary names the ranks that stopped)."""
    return [s.params for s in writer.stored.get(job.job_id, [])]


def probe_matrix_file(job: Job) -> str:
    """The matrix file an all-pairs job writes in its directory (its ``--output``)."""
    return job.argv[job.argv.index("--output") + 1] if "--output" in job.argv else "allpairs.bin"


def _watchdog(where: Path, launcher: BatchLauncher, handle: str | None, timeout: float,
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
                launcher.cancel(handle)
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


def _rule() -> OutlierRule:
    """The outlier rule of the user's config (``[outliers]``), the default when it is bad:
    inside the allocation a config error must not stop the run (the front end checked it)."""
    try:
        return outlier_rule(load_config())
    except AssayError:
        return OutlierRule()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="assay.run.runner")
    ap.add_argument("run_dir", type=Path)
    ap.add_argument("--launcher", required=True, help="the batch launcher's registry name")
    ap.add_argument("--heartbeat-timeout", type=float, default=0.0)
    args = ap.parse_args(argv)
    run_dir: Path = args.run_dir.resolve()
    # A cancel sends SIGTERM first: end the job in flight like Ctrl-C, keep what is recorded.
    signal.signal(signal.SIGTERM, signal.default_int_handler)
    jobs, mpis, launcher = read_plan(run_dir, args.launcher)
    where = batch_dir(run_dir, launcher.caps.name)
    info = read_run_info(run_dir)  # the one reader of run.json (assay.store.records)
    allocation = launcher.allocation()
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
    writer = _Writer(run_dir, info, hosts, launcher.caps.name.capitalize(), where / RUNNER_NOTES)
    mpi_by_name = {m.name: m for m in mpis}
    if len(allocation.hosts) > 1:
        boots = launcher.boot_ids(allocation.hosts)
        off_shared_memory(writer, jobs, mpi_by_name, boots)
        fabric_notes(writer, jobs, len(allocation.hosts), shared_kernels(boots))

    def resolve(job: Job, exe: str | None) -> list[str]:
        argv = [exe if a == "{exe}" and exe else a for a in job.argv]
        where_to = hosts[job.job_id]
        if job.spread.kind == "clients":
            where_to = where_to[:1]  # the client runs on the first node, the servers on all
        return launcher.step_argv(job, argv, where_to, mpi_by_name.get(job.mpi or ""))

    stop = threading.Event()
    if args.heartbeat_timeout > 0:
        threading.Thread(
            target=_watchdog,
            args=(where, launcher, allocation.handle, args.heartbeat_timeout, stop),
            daemon=True,
        ).start()
    cores = allocation.cpus_per_node
    rule = _rule()
    try:
        for group in groups([j for j in jobs if j.job_id not in done]):
            if writer.stopped:  # like Ctrl-C locally: start nothing more
                return 130
            first = group[0]
            if len(group) == 1 and first.spread.kind == "clients" and not first.skip_reason:
                run_served(writer, first, mpis, launcher, cores, resolve, where)
                continue
            if len(group) == 1 and first.spread.kind == "all-pairs" and not first.skip_reason:
                run_all_pairs(writer, first, mpis, launcher, allocation.hosts, cores, resolve,
                              rule)  # fmt: skip
                continue
            if len(group) == 1:
                run_job(writer, first, mpis, cores, resolve=resolve)
                continue
            with ThreadPoolExecutor(max_workers=len(group)) as pool:
                futures = [pool.submit(run_job, writer, j, mpis, cores, resolve) for j in group]
                for f in futures:
                    f.result()
    except KeyboardInterrupt:
        print("runner: stopped (SIGTERM/SIGINT); finished jobs are recorded", file=sys.stderr)
        return 130
    finally:
        stop.set()
    return 0


if __name__ == "__main__":
    sys.exit(main())
