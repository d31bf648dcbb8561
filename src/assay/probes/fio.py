"""fio: the six standard storage workloads, sweeps, and Vdbench-style response-time curves.

One job per sweep point runs ``python -m assay.drivers.fio`` in the job directory (see its
docstring): it writes the fio job files, runs fio, keeps fio's json+ output and prints the
samples. A plan is static and a curve's rates come from its own max run, hence the driver.

Params (defaults in ``FioParams``):

* ``workloads``: standard workload names (``assay.fio.workloads.NAMES``). Default: all six,
  or none when ``jobs`` is given.
* ``jobs``: custom fio jobs, each a dict of ``FioJob`` fields (``name``, ``rw``, ``bs`` required;
  other fio options under ``extra``) -- what the Vdbench translation produces. They run after
  the listed workloads, each as its own fio run (and its own curve in curve mode); a field they
  leave out comes from this probe's params (size, runtime, ramp_time, numjobs, iodepth,
  ioengine, direct). Without ``filename`` they use assay's files in the target directory; with
  one, the safety rules apply to that file. So ``jobs = [...]`` alone runs only them, and
  ``workloads = [...]`` with ``jobs`` runs both.
* ``groups``: custom jobs that run *together*, concurrently, in one fio invocation (one job
  file with a section per job, no ``stonewall``, ``new_group`` on each), as Vdbench drives all
  SDs of a run at once: a list of ``{ name = "...", jobs = [ {FioJob fields}, ... ] }`` (a
  bare list of job dicts is a group named ``group<n>``). Each group is one item after the
  custom jobs; it reports each job's samples (``workload`` = the job's name, ``group`` = the
  group's) and the group's total (``workload`` = the group's name, ``group_jobs``). In curve
  mode the group's total is capped at each percentage of its uncontrolled total, each job at
  its share of that run (``assay.drivers.fio``, "Jobs run together").
* ``hosts``: run every workload from several hosts at once with fio's client/server mode
  (``assay.drivers.fio.clients``): fio connect strings ``ADDR`` or ``ADDR,PORT`` (default port
  8765); loopback addresses (127.0.0.1, 127.0.0.2, ...) get a server started here, any other
  host one started through ssh (``ssh -o BatchMode=yes HOST``, or the command in
  ``$ASSAY_SSH``). ``hostfile``: a file of such lines (``#`` comments), added to
  ``hosts``. Each host's figures carry ``host``; their total ``host = "All clients"``. The
  target must be a directory every host sees at the same path; no device or ``filename``.
* ``clients``: ``"here"`` (default) or ``"nodes"``: on Slurm (``--on slurm``), one run
  driven from every node of the allocation at once -- a fio server per node started through
  srun, this driver as the client on the first node (``assay.launch.slurm.servers``) -- instead
  of one run per node. The target must be a directory every node sees at the same path.
  Without Slurm there is one node: the run is the ordinary one here.
* ``mode``: ``workloads`` or ``curve`` (Vdbench ``iorate=curve``); ``curve``: percentages;
  ``max_latency_ms``: stop a curve after the first point whose mean latency passes it.
* ``target``: a directory (assay creates its own files, or its own ``assay-fio/`` directory in
  a directory of the user's); a device or an existing file only with ``destructive``. Default:
  a scratch directory inside the job directory. Relative paths are taken from where ``assay run``
  was started.
* ``size`` (bytes per file, one file per fio thread; "256m" style accepted), ``runtime`` and
  ``ramp_time`` (s per run), ``numjobs``, ``iodepth``, ``bs`` (overrides each workload's),
  ``ioengine`` (libaio; psync when libaio is missing), ``direct`` (buffered, with a warning in
  the params, when the target cannot do O_DIRECT), ``destructive``, ``keep`` (leave the files),
  ``fio`` (path), ``knee_method`` (``kneedle`` or ``slope``).

Sweeps over numjobs, iodepth or bs come from the suite's ``sweep``. The job's time budget is
computed from the runs it will do (``estimate_seconds``) and the driver keeps to it.

Planning does not look at the machine: the target is not looked at when the suite is planned
(the one file read then is a ``hostfile``, an input the suite names, like the suite itself;
its hosts size the job's time budget and name the job). ``preflight`` checks
it, with the driver's own checks (``assay.drivers.fio.checks``), just before the run starts, so
a device, a user's file, a directory that cannot be created or written, or too little free space
is refused with exit code 2 before any run exists; the driver checks again when its job starts.
Every value that reaches a fio job file is checked for characters that would smuggle a line in
(``assay.fio.job.check_text``) when the suite is planned.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from assay.config.schema import Network
from assay.drivers.fio.checks import Refused, check_spec
from assay.drivers.fio.clients import SERVERS_ENV
from assay.drivers.fio.spec import CURVE_DEFAULT, DriverSpec, JobGroup, estimate_seconds, items_of
from assay.errors import SuiteError
from assay.fio.hosts import DEFAULT_PORT, ClientError, parse_hosts, read_hostfile
from assay.fio.job import control_problem, job_file
from assay.fio.safety import SUBDIR
from assay.fio.workloads import CUSTOM_NUMBERS, NAMES, WORKLOADS, YEAR_S, number_problem
from assay.model import Job, MpiInfo, Sample, Spread
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, ServerKeys, parse_jsonl
from assay.probes.external import size_value
from assay.textutil import slugify

DEFAULT_SIZE = 256 * 2**20
# Extra time the runner gives a job beyond the driver's own budget: the driver stops fio and
# removes the test files when its budget runs out, which it must be allowed to finish.
CLEANUP_GRACE_S = 30.0


class FioParams(ProbeParams):
    workloads: list[str] | None = Field(
        default=None, description="standard workloads; default all six (none when jobs given)"
    )
    jobs: list[dict[str, Any]] = Field(
        default_factory=list, description="custom fio jobs (FioJob fields), after the workloads"
    )
    groups: list[JobGroup] = Field(
        default_factory=list,
        description="custom jobs run together, concurrently: [{name, jobs = [...]}, ...]",
    )
    hosts: list[str] = Field(
        default_factory=list, description="fio servers ADDR[,PORT]: one workload on all at once"
    )
    hostfile: str | None = Field(default=None, description="a file of hosts, one per line")
    clients: Literal["here", "nodes"] = Field(
        default="here", description="'nodes': on Slurm, every allocation node a client at once"
    )
    node_index: int | None = Field(
        default=None, ge=0, description="Slurm: run on this node of the allocation (0 = first)"
    )
    node_group: str | None = Field(
        default=None,
        description="Slurm: the benches of one node_group run at once, each on its node",
    )
    host_label: str | None = Field(
        default=None, description="the host these jobs stand for (a Vdbench hd=): the Host column"
    )
    mode: Literal["workloads", "curve"] = "workloads"
    curve: list[int] = Field(default_factory=lambda: list(CURVE_DEFAULT), min_length=1)
    max_latency_ms: float | None = Field(default=None, gt=0)
    target: str | None = Field(default=None, description="directory; default: job scratch")
    size: int = Field(default=DEFAULT_SIZE, gt=0, description="bytes per file (per fio thread)")
    runtime: float = Field(default=30.0, gt=0, le=YEAR_S, description="seconds measured per run")
    ramp_time: float = Field(
        default=5.0, ge=0, le=YEAR_S, description="warm-up seconds, not counted"
    )
    numjobs: int = Field(default=1, ge=1)
    iodepth: int = Field(default=16, ge=1)
    bs: int | None = Field(default=None, gt=0, description="block size override, bytes")
    ioengine: str = "libaio"
    direct: bool = True
    destructive: bool = False
    keep: bool = False
    fio: str = "fio"
    knee_method: Literal["kneedle", "slope"] = "kneedle"

    @field_validator("size", "bs", mode="before")
    @classmethod
    def _sizes(cls, value: Any) -> Any:
        return size_value(value)

    @field_validator("target", "hostfile", "fio", "ioengine", "host_label", "node_group")
    @classmethod
    def _one_line(cls, value: str | None, info: Any) -> str | None:
        """A value that reaches a fio job file (or fio's command line) is one line of text."""
        problem = control_problem(value or "", str(info.field_name))
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("groups", mode="before")
    @classmethod
    def _named(cls, groups: Any) -> Any:
        """A bare list of job dicts is a group too, named by its place."""
        if not isinstance(groups, list):
            return groups
        return [
            {"name": f"group{n}", "jobs": g} if isinstance(g, list) else g
            for n, g in enumerate(groups, start=1)
        ]

    @field_validator("workloads")
    @classmethod
    def _known(cls, names: list[str] | None) -> list[str] | None:
        unknown = [n for n in names or [] if n not in WORKLOADS]
        if unknown:
            raise ValueError(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(NAMES)}")
        return names

    @field_validator("curve")
    @classmethod
    def _percent(cls, pcts: list[int]) -> list[int]:
        bad = [p for p in pcts if not 1 <= p <= 100]
        if bad:
            raise ValueError(f"curve points are percentages of the max, 1..100: {bad}")
        return pcts

    @model_validator(mode="after")
    def _something(self) -> FioParams:
        if self.workloads == [] and not self.jobs and not self.groups:
            raise ValueError("nothing to run: workloads is empty and no jobs are given")
        for job in all_custom(self):  # numbers in range before the budget uses them (issue 28)
            for key in sorted(set(job) & set(CUSTOM_NUMBERS)):
                if problem := number_problem(key, job[key]):
                    raise ValueError(f"custom job {job.get('name', '?')!r}: {problem}")
        return self


def chosen_workloads(params: FioParams) -> list[str]:
    if params.workloads is not None:
        return list(params.workloads)
    return [] if params.jobs or params.groups else list(NAMES)


def all_custom(params: FioParams) -> list[dict[str, Any]]:
    """The custom jobs, those of the groups included."""
    return [*params.jobs, *(j for g in params.groups for j in g.jobs)]


def host_list(params: FioParams) -> list[str]:
    """``hosts`` and the hostfile's, checked (ClientError on a bad one)."""
    texts = list(params.hosts)
    if params.hostfile:
        texts += read_hostfile(Path(params.hostfile).expanduser())
    return [str(h) for h in parse_hosts(texts)]


def driver_spec(
    params: FioParams, target: str | None, hosts: list[str] | None = None
) -> DriverSpec:
    """The driver's spec for one sweep point; the deadline is the computed budget (``hosts``:
    the checked host list, by default ``params.hosts``)."""
    workloads = chosen_workloads(params)
    hosts = list(params.hosts) if hosts is None else hosts
    n_items = len(workloads) + len(params.jobs) + len(params.groups)
    custom = all_custom(params)
    # an upper bound on what the fills write: assay's files, plus each custom job's own --
    # on every host of a multi-client run
    fill_bytes = max(1, len(hosts)) * (
        params.size * params.numjobs
        + sum(
            int(j.get("size") or params.size) * int(j.get("numjobs") or params.numjobs)
            for j in custom
        )
    )
    longest = max([params.runtime] + [float(j["runtime"]) for j in custom if j.get("runtime")])
    ramp = max([params.ramp_time] + [float(j["ramp_time"]) for j in custom if j.get("ramp_time")])
    budget = estimate_seconds(
        mode=params.mode,
        n_items=n_items,
        n_curve=len(set(params.curve)),
        runtime=longest,
        ramp_time=ramp,
        fill_bytes=fill_bytes,
    )
    return DriverSpec(
        mode=params.mode,
        workloads=workloads,
        jobs=params.jobs,
        groups=params.groups,
        hosts=hosts,
        curve=params.curve,
        max_latency_ms=params.max_latency_ms,
        target=target,
        subdir=f"{SUBDIR}-{slugify(params.host_label)}" if params.host_label else SUBDIR,
        size=params.size,
        runtime=params.runtime,
        ramp_time=params.ramp_time,
        numjobs=params.numjobs,
        iodepth=params.iodepth,
        bs=params.bs,
        ioengine=params.ioengine,
        direct=params.direct,
        destructive=params.destructive,
        keep=params.keep,
        fio=params.fio,
        knee_method=params.knee_method,
        deadline_s=round(budget, 1),
    )


def label_of(params: FioParams, n_hosts: int = 0) -> str:
    names = chosen_workloads(params) + [str(j.get("name", "job")) for j in params.jobs]
    names += [g.name for g in params.groups]
    what = "six" if names == list(NAMES) else "+".join(names)
    if len(what) > 60:  # a Vdbench run's groups can hold a hundred jobs; the id stays short
        what = what[:57] + "..."
    on = f" x{n_hosts} hosts" if n_hosts else ""
    if not chosen_workloads(params) and not params.jobs:  # groups only: their jobs say it
        return f"{params.mode} {what}{on}"
    return f"{params.mode} {what} nj{params.numjobs} qd{params.iodepth}{on}"


def make_draft(argv: list[str], params: dict[str, Any], label: str, timeout: float) -> JobDraft:
    draft = JobDraft(argv=argv, params=params, label=label)
    # The job's timeout is the driver's budget plus time to clean up. JobDraft has no timeout
    # field yet (the planner uses the bench's or the probe's default); set it if it has one.
    if "timeout" in {f.name for f in dataclasses.fields(JobDraft)}:
        draft.timeout = timeout  # type: ignore[attr-defined]
    return draft


class FioServers(ServerKeys):
    """fio's keys in the table of a scheduler that starts its servers (``clients = "nodes"``:
    ``fio --server`` on every node, this probe's driver their client)."""

    fio_network: Network | None = Field(
        None, description="the servers listen on the node's address in this network "
        '("10.0.0.0/16"; default: the address its host name resolves to)',
    )  # fmt: skip
    fio_port: Annotated[int, Field(ge=1, le=65535)] = Field(
        DEFAULT_PORT, description="the port the servers listen on"
    )

    def servers(self) -> dict[str, Any]:
        return {"port": self.fio_port, "network": self.fio_network}


class FioProbe(Probe):
    name = "fio"
    summary = "storage: six standard fio workloads, sweeps, Vdbench-style response curves"
    Params = FioParams
    server_keys = FioServers
    # Until the planner takes a job's own timeout, a bound no storage run here comes near; the
    # driver keeps to the budget computed from its runs (deadline_s) and cleans up itself.
    default_timeout = 24 * 3600.0

    def spread(self, job: Job) -> Spread:
        """On a cluster: a Vdbench hd= host's benches on their node (``node_index``), the hosts
        of one run at once (``node_group``); ``clients = "nodes"``: a fio server on every node,
        the driver as their client; else once per node."""
        p = job.params
        if p.get("node_index") is not None:
            group = f"{p.get('node_group') or job.job_id}-r{job.repetition}"
            return Spread("on-node", node=int(p["node_index"]), group=group)
        if p.get("clients") == "nodes":
            return Spread("clients")
        return Spread("per-node")

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, FioParams)
        # Pure: the path is made absolute (relative to where ``assay run`` started) but not
        # looked at; ``preflight`` checks it before the run starts.
        target = None
        if params.target is not None:
            target = str(Path(params.target).expanduser().absolute())
        try:
            hosts = host_list(params)
        except ClientError as exc:
            raise SuiteError(f"fio: {exc}", hint=exc.hint) from None
        if hosts and params.clients == "nodes":
            raise SuiteError(
                "fio: give hosts (servers you name) or clients = 'nodes' (the Slurm "
                "allocation's nodes), not both"
            )
        if (hosts or params.clients == "nodes") and any(
            j.get("filename") for j in all_custom(params)
        ):
            raise SuiteError(
                "fio: with hosts, every host writes assay's own files in the target directory; "
                "a device, a file target or a job's filename cannot be shared by the hosts"
            )
        spec = driver_spec(params, target, hosts)
        try:  # the custom jobs and groups, and every job file line, are checked now
            for item in items_of(spec, directory=target or "/", filename=None):
                job_file(list(item.jobs))
        except ValueError as exc:
            raise SuiteError(f"fio: {exc}") from None
        argv = [sys.executable, "-m", "assay.drivers.fio", "--spec",
                json.dumps(spec.model_dump(), sort_keys=True)]  # fmt: skip
        job_params: dict[str, Any] = {
            "mode": params.mode,
            "numjobs": params.numjobs,
            "iodepth": params.iodepth,
            "runtime": params.runtime,
            "ramp_time": params.ramp_time,
            "size": params.size,
            "target": target or "scratch",
        }
        if params.bs:
            job_params["bs"] = params.bs
        if hosts:
            job_params["client_count"] = len(hosts)
        if params.clients == "nodes":
            job_params["clients"] = "nodes"
        if params.node_index is not None:  # placed on that node by a multi-node scheduler
            if hosts or params.clients == "nodes":
                raise SuiteError("fio: node_index places one client; it excludes hosts and clients")
            job_params["node_index"] = params.node_index
            job_params["node_group"] = params.node_group or ""
        if params.host_label:  # the storage tables' Host column
            job_params["vdbench_host"] = params.host_label
        timeout = (spec.deadline_s or 0) + CLEANUP_GRACE_S
        label = label_of(params, len(hosts)) + (
            f" {params.host_label}" if params.host_label else ""
        )
        return [make_draft(argv, job_params, label, timeout)]

    def server_argv(self, job: Job) -> list[str]:
        """fio's client/server mode: ``fio --server`` on the node's test address only."""
        return ["fio", "--server={family}:{address},{port}"]

    def served(self, job: Job, addresses: list[str]) -> Job:
        """The driver's spec with its ``hosts`` set to the servers' connect strings; the
        driver then neither starts nor stops servers itself (``SERVERS_ENV``)."""
        argv = list(job.argv)
        i = argv.index("--spec") + 1
        spec = json.loads(argv[i])
        spec["hosts"] = addresses
        argv[i] = json.dumps(spec, sort_keys=True)
        env = {**job.env, SERVERS_ENV: "launcher"}
        params = {**job.params, "server_addresses": addresses}
        return dataclasses.replace(job, argv=argv, env=env, params=params)

    def preflight(self, job: Job) -> None:
        """The driver's target checks, made before the run starts (see the module docstring):
        SuiteError (exit code 2) saying why a job's target cannot be used."""
        spec = spec_of(job)
        if spec.target is None:
            return  # a scratch directory in the job's own directory, made by the run
        try:
            check_spec(spec, spec.target)
        except Refused as exc:
            raise SuiteError(
                f"fio: {'; '.join(exc.lines)} (job {job.job_id})", hint=exc.hint
            ) from None

    def expected_seconds(self, job: Job) -> float | None:
        return spec_of(job).deadline_s  # the budget the driver computed from its runs and keeps

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        samples = parse_jsonl(stdout, self.name, job.params)
        # Multi-client on Slurm: the runner records the servers' addresses in node order;
        # each host's figures also get the node's name (fio names hosts by address).
        addresses = job.params.get("server_addresses") or []
        nodes = job.params.get("hosts")
        if addresses and isinstance(nodes, list) and len(nodes) == len(addresses):
            node_of = {a.rsplit(",", 1)[0]: n for a, n in zip(addresses, nodes, strict=True)}
            for s in samples:
                node = node_of.get(str(s.params.get("host")))
                if node:
                    s.params["node"] = node
        return samples


def spec_of(job: Job) -> DriverSpec:
    """The driver spec a planned job carries (its ``--spec`` argument, see ``drafts``)."""
    return DriverSpec.model_validate(json.loads(job.argv[job.argv.index("--spec") + 1]))
