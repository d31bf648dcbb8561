"""The scheduler contract: what every place jobs can run (this node, a Slurm allocation, ...)
provides. One contract, several implementations, each a folder of ``assay.launch`` named in
``assay.launch.registry``; nothing outside a scheduler's folder names it.

Every scheduler

- says what it can do (:class:`Capabilities`), checked before a run starts (:meth:`check`): a
  scheduler refuses what it cannot do, it never quietly does something else;
- **places** a run's jobs on its nodes (:meth:`place`), reading each job's
  :class:`~assay.model.Spread` (which its probe declared), never a probe's name;
- gives **the argv of one step** (:meth:`step_argv`): a job's argv put on its hosts (the
  ranks' line written by a parallel launcher, ``assay.launch.parallel``);
- may administer its nodes (:meth:`Scheduler.node_admin`, ``assay.launch.admin``: states,
  drain, resume, reservations), which is what ``assay check --drain`` acts through.

A **batch** scheduler (the jobs run inside an allocation that assay follows from the front end)
also

- builds the **submission** (:meth:`BatchScheduler.submission`: the submitting command and the
  batch script, which runs ``python -m assay.run.runner RUN_DIR`` inside the allocation),
- **submits** it, **polls** its state, **cancels** it,
- says, inside the allocation, its own handle and the allocation's host names
  (:meth:`BatchScheduler.allocation`), and serves the "clients" spread (a server per node).

``assay.run.front`` (submit, follow, close) and ``assay.run.runner`` (the jobs inside the
allocation) drive any batch scheduler; the local scheduler's jobs run in assay's own process
(``assay.run.execute``).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from assay.errors import AssayError, ConfigError
from assay.launch.admin import NodeAdmin
from assay.model import SPREAD_KINDS, Job, MpiInfo

if TYPE_CHECKING:  # pydantic: only when a config is read
    from assay.config.schema import Section


@dataclass(frozen=True)
class Capabilities:
    """What a scheduler can do, checked before a run starts."""

    name: str
    max_nodes: int | None  # None: as many as the allocation holds
    batch: bool = False  # jobs run inside a submitted allocation, followed from here
    spreads: frozenset[str] = frozenset(SPREAD_KINDS)  # the spreads it can place
    # its own options (``assay run --partition ...``); any other is refused, naming who takes it
    options: frozenset[str] = frozenset()


@dataclass
class LaunchOptions:
    """What ``assay run`` asks of a scheduler. ``nodes``: the allocation's size (``--nodes``);
    ``own``: the options only some schedulers take (``--partition``, ...), by name."""

    nodes: int | None = None
    detach: bool = False
    intra_node: bool = False
    own: dict[str, Any] = field(default_factory=dict)
    # the allocation on these nodes only (a check's retest), or inside a reservation of assay's
    # own (the nodes a check drained, held to be re-measured): a batch backend's to honour
    hosts: list[str] | None = None
    reservation: str | None = None


@dataclass
class Submission:
    """What a batch scheduler submits: the command (an argv, never a shell line) and the batch
    script it names, kept in the run directory."""

    argv: list[str]
    script: str


@dataclass
class BatchState:
    """A submitted allocation's state as its scheduler tells it."""

    handle: str
    state: str  # the scheduler's word: PENDING, RUNNING, COMPLETED, ... or UNKNOWN
    reason: str = ""
    nodelist: str = ""  # the scheduler's compressed node list, e.g. anode[1-3]
    exit_code: str = ""
    final: bool = False
    pending: bool = False  # waiting for resources (``--max-wait`` counts this time)


@dataclass
class Allocation:
    """Inside an allocation: the scheduler's handle for it, its hosts, the CPUs of a node."""

    handle: str | None
    hosts: list[str]
    cpus_per_node: int | None = None


def check_jobs(jobs: list[Job], caps: Capabilities) -> None:
    """Raise, naming the jobs, when any job asks for more than ``caps`` allows."""
    spreads = [j for j in jobs if not j.skip_reason and j.spread.kind not in caps.spreads]
    if spreads:
        names = ", ".join(f"{j.job_id} ({j.spread.kind})" for j in spreads[:5])
        raise AssayError(
            f"the {caps.name} scheduler cannot place {names}",
            hint=f"it places: {', '.join(sorted(caps.spreads))}",
        )
    if caps.max_nodes is None:
        return
    over = [j for j in jobs if not j.skip_reason and j.nodes > caps.max_nodes]
    if not over:
        return
    names = ", ".join(f"{j.job_id} (nodes={j.nodes})" for j in over[:5])
    more = f" and {len(over) - 5} more" if len(over) > 5 else ""
    raise AssayError(
        f"the {caps.name} scheduler runs on this node only (at most {caps.max_nodes} node), "
        f"but {len(over)} job(s) ask for more: {names}{more}",
        hint="drop --set nodes=..., or run on a cluster (--on slurm)",
    )


class Scheduler(ABC):
    """Where jobs run. Built by the registry from the config and the run's options."""

    caps: ClassVar[Capabilities]

    @classmethod
    @abstractmethod
    def configured(cls, config: dict[str, Any], options: LaunchOptions) -> Scheduler:
        """The scheduler with its settings: ``config`` is the user's whole config (it reads its
        own table), ``options`` what the command line asked. Bad values: ConfigError."""

    @classmethod
    def config_section(cls) -> Section | None:
        """Its table of config.toml, declared with it (``[slurm]``); None: it takes none."""
        return None

    def check(self, jobs: list[Job]) -> None:
        """Refuse, before anything runs, what this scheduler cannot do (exit code 2)."""
        check_jobs(jobs, self.caps)

    @abstractmethod
    def place(self, jobs: list[Job], mpis: list[MpiInfo]) -> list[Job]:
        """The jobs with their nodes; a job may become several (once per node, per pair)."""

    @abstractmethod
    def step_argv(
        self, job: Job, argv: list[str], hosts: list[str], mpi: MpiInfo | None
    ) -> list[str]:
        """The command that runs ``argv`` (the probe's, ``{exe}`` resolved) on ``hosts``."""

    def describe(self, jobs: list[Job]) -> str:
        """One line for the start of a run: where its jobs go."""
        return f"{len(jobs)} jobs"

    @classmethod
    def node_admin(cls, partition: str | None = None) -> NodeAdmin | None:
        """The scheduler's node administration (``assay check --drain``), for the nodes of
        ``partition``; None: this backend administers no nodes."""
        return None


class BatchScheduler(Scheduler):
    """A scheduler whose jobs run inside an allocation submitted and followed from here."""

    poll_s: float = 2.0  # between two polls of the allocation's state
    max_wait: float = 24 * 3600.0  # pending longer than this: cancelled
    heartbeat_timeout: float = 120.0  # the runner cancels its allocation when assay is gone
    detach: bool = False
    nodes: int = 1
    # the front end's environment the runner needs on the node, beside assay's own (the
    # scheduler's configuration file: Slurm's SLURM_CONF)
    carried_env: tuple[str, ...] = ()
    partition: str | None = None  # the scheduler's set of nodes the allocation comes from

    @abstractmethod
    def submission(
        self, run_dir: Path, run_id: str, jobs: list[Job], env: dict[str, str], python: str
    ) -> Submission:
        """The submitting command and the batch script that runs the run's jobs (text only)."""

    @abstractmethod
    def submit(self, submission: Submission) -> str:
        """Submit; the handle (a job id) by which it is polled and cancelled."""

    @abstractmethod
    def poll(self, handle: str) -> BatchState:
        """The allocation's state now."""

    @abstractmethod
    def cancel(self, handle: str) -> None:
        """Cancel the allocation (one that already ended is no error)."""

    @abstractmethod
    def allocation(self) -> Allocation:
        """Inside the allocation (the runner): its handle and host names, from the scheduler."""

    @abstractmethod
    def hostnames(self, nodelist: str) -> list[str]:
        """The scheduler's compressed node list as host names."""

    @abstractmethod
    def to_plan(self, mpis: list[MpiInfo]) -> dict[str, Any]:
        """What the runner needs to rebuild this scheduler inside the allocation (JSON)."""

    @classmethod
    @abstractmethod
    def from_plan(cls, data: dict[str, Any]) -> BatchScheduler:
        """The scheduler :meth:`to_plan` described."""

    def responsive(self, hosts: list[str]) -> list[str]:
        """Inside the allocation: which of ``hosts`` still run a step (a probe's follow-up
        asks after a job failed: a node that does not answer is lost). By default all."""
        return list(hosts)

    def topology(self) -> str | None:
        """The cluster's switch tree as the scheduler tells it (Slurm: ``scontrol show
        topology``), kept with the run as ``topology.txt`` for the report's per-switch
        figures; None when there is none."""
        return None

    def boot_ids(self, hosts: list[str]) -> dict[str, str]:
        """Inside the allocation: each host's kernel boot id (hosts with the same one are
        namespaces or containers of one machine: ``assay.launch.transports``). Empty when the
        scheduler cannot tell."""
        return {}

    def require(self) -> None:
        """Fail before anything is built or stored when the scheduler cannot be reached."""
        return None

    @contextlib.contextmanager
    def serve(
        self, job: Job, hosts: list[str], work_dir: Path, server: list[str]
    ) -> Iterator[list[str]]:
        """The "clients" spread: ``server`` (the probe's, ``Probe.server_argv``) on each of
        ``hosts``; yields their connect strings and stops them when the job ends."""
        raise ConfigError(f"the {self.caps.name} scheduler cannot start servers on its nodes")
        yield []  # pragma: no cover
