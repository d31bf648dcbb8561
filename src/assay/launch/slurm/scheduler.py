"""The Slurm scheduler: one allocation per run (``sbatch``), the jobs inside it as ``srun`` steps
or through the MPI's own launcher, Slurm's view of the job (``scontrol``) followed from the
front end.

    options   what a run asks for (``[slurm]`` in config.toml, then the command line)
    script    the sbatch command line and the batch script (text only)
    state     talking to Slurm: submit, ask a job's state, cancel, expand node lists
    steps     the command of one job step
    servers   the "clients" spread: a server on every node (one srun step)
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from assay.config.schema import Section
from assay.errors import LaunchError
from assay.launch.contract import (
    Allocation,
    BatchScheduler,
    BatchState,
    Capabilities,
    LaunchOptions,
    Submission,
)
from assay.launch.place import NodeOptions, place
from assay.launch.serving import settings
from assay.launch.slurm import state as slurm
from assay.launch.slurm.nodes import SlurmNodes
from assay.launch.slurm.options import MpiLaunch, SlurmOptions, options_from_config, section
from assay.launch.slurm.script import batch_script, sbatch_argv
from assay.launch.slurm.servers import servers
from assay.launch.slurm.steps import step_argv
from assay.model import GOES_ON_WITHOUT_A_NODE, Job, MpiInfo
from assay.system.topology import collect_topology

# The options only this scheduler takes (``assay run --partition ...``), by SlurmOptions name.
OWN_OPTIONS = frozenset({"partition", "account", "qos", "constraint", "time", "sbatch_args",
                         "max_wait"})  # fmt: skip


class SlurmScheduler(BatchScheduler):
    caps = Capabilities("slurm", max_nodes=None, batch=True, options=OWN_OPTIONS)
    carried_env = ("SLURM_CONF",)

    def __init__(
        self,
        opts: SlurmOptions,
        launch: dict[str, MpiLaunch] | None = None,
        servers: dict[str, dict[str, Any]] | None = None,
    ) -> None:
        self.opts = opts
        # where each serving probe's servers listen (its keys of [slurm]: launch.serving)
        self.servers = dict(servers or {})
        self.nodes, self.partition = opts.nodes, opts.partition
        self.poll_s, self.max_wait = opts.poll_s, opts.max_wait
        self.heartbeat_timeout, self.detach = opts.heartbeat_timeout, opts.detach
        self.launch = dict(launch or {})  # per MPI name, as the front end resolved it
        self.cpus_per_node: int | None = None  # known inside the allocation

    @classmethod
    def configured(cls, config: dict[str, Any], options: LaunchOptions) -> SlurmScheduler:
        given = {
            "nodes": options.nodes, "detach": options.detach or None,
            "intra_node": options.intra_node or None, **options.own,
        }  # fmt: skip
        where = [f"--reservation={options.reservation}"] if options.reservation else []
        if options.hosts:
            where.append(f"--nodelist={','.join(options.hosts)}")
        if where:  # after the user's own sbatch arguments
            given["sbatch_args"] = [*(given.get("sbatch_args") or []), *where]
        opts = options_from_config(config, **given)  # checks [slurm] whole
        return cls(opts, servers=settings(config.get("slurm")))

    @classmethod
    def config_section(cls) -> Section:
        return section()

    def launch_for(self, mpi: MpiInfo) -> MpiLaunch:
        return self.launch.get(mpi.name) or self.opts.launch_for(mpi)

    def place(self, jobs: list[Job], mpis: list[MpiInfo]) -> list[Job]:
        o = self.opts
        placed = place(jobs, NodeOptions(o.nodes, o.intra_node, self.servers))
        by_name = {m.name: m for m in mpis}
        for job in placed:  # an MPI's environment inside the allocation (UCX_TLS, say)
            mpi = by_name.get(job.mpi or "")
            if mpi is not None:
                job.env = {**dict(self.launch_for(mpi).env), **job.env}
        return placed

    def step_argv(
        self, job: Job, argv: list[str], hosts: list[str], mpi: MpiInfo | None
    ) -> list[str]:
        launch = self.launch_for(mpi) if mpi is not None else None
        return step_argv(job, argv, hosts, mpi, launch, self.cpus_per_node)

    def describe(self, jobs: list[Job]) -> str:
        return f"{len(jobs)} jobs in one Slurm allocation ({self.opts.nodes} nodes)"

    @classmethod
    def node_admin(cls, partition: str | None = None) -> SlurmNodes:
        return SlurmNodes(partition)

    # -------------------------------------------------------------- the front end's side

    def require(self) -> None:
        slurm.require_slurm()

    def submission(
        self, run_dir: Path, run_id: str, jobs: list[Job], env: dict[str, str], python: str
    ) -> Submission:
        ppn = max((j.ppn or 1 for j in jobs), default=1)
        self.opts.no_kill = any(j.spread.kind in GOES_ON_WITHOUT_A_NODE for j in jobs)
        argv = sbatch_argv(self.opts, run_dir, run_id, ppn)
        script = batch_script(
            run_dir=run_dir,
            python=python,
            sbatch=argv,
            env=env,
            heartbeat_timeout=None if self.opts.detach else self.opts.heartbeat_timeout,
        )
        return Submission(argv, script)

    def submit(self, submission: Submission) -> str:
        return slurm.submit(submission.argv)

    def poll(self, handle: str) -> BatchState:
        s = slurm.query(handle)
        if self.opts.no_kill:  # submitted --no-kill (``script.sbatch_argv``)
            s = slurm.settled(s)
        return BatchState(handle, s.state, s.reason, s.nodes, s.exit_code, s.final,
                          pending=s.state == "PENDING")  # fmt: skip

    def cancel(self, handle: str) -> None:
        slurm.cancel(handle)

    def hostnames(self, nodelist: str) -> list[str]:
        return slurm.expand_nodes(nodelist)

    def to_plan(self, mpis: list[MpiInfo]) -> dict[str, Any]:
        opts = {k: v for k, v in dataclasses.asdict(self.opts).items() if k != "mpi"}
        return {
            "options": opts,
            "launch": {m.name: dataclasses.asdict(self.launch_for(m)) for m in mpis},
            "servers": self.servers,
        }

    @classmethod
    def from_plan(cls, data: dict[str, Any]) -> SlurmScheduler:
        names = {f.name for f in dataclasses.fields(SlurmOptions)} - {"mpi"}
        given = data.get("options", {})
        opts = SlurmOptions(**{k: v for k, v in given.items() if k in names})
        opts.no_kill = opts.no_kill or bool(given.get("all_pairs"))  # a plan from before no_kill
        launch = {
            name: MpiLaunch(
                launcher=v["launcher"],
                srun_mpi=v["srun_mpi"],
                args=tuple(v["args"]),
                env=tuple((k, x) for k, x in v["env"]),
            )
            for name, v in data.get("launch", {}).items()
        }
        return cls(opts, launch, data.get("servers"))

    # -------------------------------------------------------------- inside the allocation

    def allocation(self) -> Allocation:
        cpus = os.environ.get("SLURM_CPUS_ON_NODE", "")
        self.cpus_per_node = int(cpus) if cpus.isdigit() else None
        hosts = slurm.expand_nodes(os.environ.get("SLURM_JOB_NODELIST", ""))
        return Allocation(os.environ.get("SLURM_JOB_ID"), hosts, self.cpus_per_node)

    def topology(self) -> str | None:
        found = collect_topology()
        return found[0] if found else None

    def responsive(self, hosts: list[str]) -> list[str]:
        return slurm.answering(hosts)

    def boot_ids(self, hosts: list[str]) -> dict[str, str]:
        return slurm.boot_ids(hosts)

    @contextlib.contextmanager
    def serve(
        self, job: Job, hosts: list[str], work_dir: Path, server: list[str]
    ) -> Iterator[list[str]]:
        conf = (job.placement.servers if job.placement else None) or self.servers.get(job.probe)
        if not conf:
            raise LaunchError(f"{job.job_id}: its probe declares no keys for its servers (port)")
        with servers(
            job.job_id, hosts, work_dir / f"servers-{job.job_id}", server,
            port=int(conf["port"]), network=conf.get("network"),
        ) as addresses:  # fmt: skip
            yield addresses
