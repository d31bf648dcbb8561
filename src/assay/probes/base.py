"""The probe contract: a params schema, the jobs it needs, and how to read its output.

A probe knows how to build and run one measurement and how to read what it printed; it does
not know where it runs (that is ``assay.launch``) nor where results go (``assay.store``).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict

from assay.config.schema import ConfigTable
from assay.errors import ProbeError
from assay.model import Job, JobResult, MpiInfo, Sample, Spread, SpreadKind, Stats, System
from assay.system.facts import PlanFacts

if TYPE_CHECKING:  # numpy only for a follow-up's outlier rule: not imported to plan a run
    import numpy as np


# A follow-up run inside its job's launch (a launch saved): a job given its probe's ``asks``
# arguments leaves ASK_FILE in its directory once its own work is written and waits, for a
# bounded time, for PLAN_FILE: "none", or "run", the follow-up's directory (relative to the
# job's) and the follow-up's arguments (``Probe.inside``), one a line. It measures the
# follow-up there, into that job's own files, and leaves DONE_FILE ("exit S", "seconds T")
# there when it ends. A follow-up the launch never began gets a launch of its own; one it began
# and did not end (a stop, the timeout) is recorded with the launch's end.
# (src/assay/native/allpairs.c uses the same names.)
ASK_FILE = "follow-up.ask"
PLAN_FILE = "follow-up.plan"
DONE_FILE = "follow-up.done"


class ProbeParams(BaseModel):
    """Base of every probe's params schema: unknown params are errors."""

    model_config = ConfigDict(extra="forbid")


@dataclass
class PlanContext:
    """What planning may know: the system, the toolchains and the facts ``assay.system``
    collected (thread siblings, caches, programs on PATH), never how jobs launch.

    A probe reads the machine only through this: no ``/sys``, ``/proc`` or PATH look-ups at
    plan time, so a plan is a pure function of its context and tests build the context they
    want. Empty facts mean "not known" (no program found, no sibling information).
    """

    system: System
    mpis: list[MpiInfo] = field(default_factory=list)
    facts: PlanFacts = field(default_factory=PlanFacts)


@dataclass
class JobDraft:
    """A job before the planner numbers it and applies the bench's repetitions and timeout."""

    argv: list[str]
    params: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)
    spawn: str = "exec"  # "mpi": ``ranks`` ranks started by the MPI's launcher
    mpi: str | None = None
    ranks: int = 1
    threads: int = 1  # per rank (see assay.model.Job.threads)
    build: Any = None  # assay.model.Build
    label: str = ""
    inputs: dict[str, str] = field(default_factory=dict)
    output_file: str | None = None
    timeout: float | None = None  # when the probe knows better than its default
    skip_reason: str | None = None  # this cannot run here: record a skip, not a failure


class ServerKeys(ConfigTable):
    """The keys a probe's servers take in the table of every scheduler that starts them (the
    "clients" spread), declared by the probe (``assay.launch.serving``)."""

    def servers(self) -> dict[str, Any]:
        """Where the servers listen: ``{"port": int, "network": CIDR or None}``."""
        raise NotImplementedError


@dataclass
class Ended:
    """A job whose records are written: what its probe decides a follow-up on."""

    job: Job
    result: JobResult
    samples: list[Sample]
    hosts: list[str]  # where its ranks ran, in rank order (as far as the run knows)
    job_dir: Path
    # the kernel's clock (dmesg's stamps) when it started: its log lines after it are its own
    since: float | None = None


@dataclass
class FollowUpContext:
    """What a probe's :meth:`Probe.follow_up` may ask of the run that runs its jobs (the runner
    inside an allocation, or this process): the run knows where jobs ran and the user's
    outlier rule, the probe knows what its jobs measured and what to measure next."""

    # the indices of ``values`` (links, or nodes' medians) the user's outlier rule calls out
    flag: Callable[[np.ndarray, Literal["higher", "lower"]], np.ndarray]
    # which of these hosts still answer (the scheduler's; this node: all of them)
    responsive: Callable[[list[str]], list[str]]
    # whether the job's MPI could not connect (a note names the likely cause when it did)
    connects_refused: Callable[[Ended], bool]
    note: Callable[[str], None]  # kept with the run (run.json's notes)


class Probe(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    Params: ClassVar[type[ProbeParams]]
    uses_mpi: ClassVar[bool] = False
    default_timeout: ClassVar[float] = 600.0
    # How one of its jobs spreads over a cluster's nodes (``assay.model.SPREAD_KINDS``): a
    # scheduler places jobs by this, never by a probe's name. Probes whose spread depends on
    # the job's params override ``spread``.
    spread_kind: ClassVar[SpreadKind] = "per-node"
    # Its jobs write nothing but stdout and stderr: per node, one step may run them all, in
    # one job directory (a launch per pass, not per node).
    stdout_only: ClassVar[bool] = False
    # The keys its servers take in a serving scheduler's table ("clients" spread), if any.
    server_keys: ClassVar[type[ServerKeys] | None] = None
    # The built-in suite that runs this probe on its own (``suite/builtin/<name>.toml``): what a
    # run asking for the probe's spread runs when its suite has no bench of it (``--all-pairs``).
    suite: ClassVar[str | None] = None

    def spread(self, job: Job) -> Spread:
        """How ``job`` spreads over the nodes of a cluster (read by the scheduler)."""
        return Spread(self.spread_kind, shared_step=self.stdout_only)

    @abstractmethod
    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        """The jobs this probe needs for one point of a sweep."""

    def server_argv(self, job: Job) -> list[str]:
        """The "clients" spread: the server a scheduler runs on every node for ``job``, with
        ``{family}`` (ip/ip6), ``{address}`` and ``{port}`` filled in on the node."""
        raise ProbeError(f"{self.name}: no server for the clients spread")

    def served(self, job: Job, addresses: list[str]) -> Job:
        """The "clients" spread: ``job`` told where its servers listen (``ADDR,PORT`` each,
        in node order), once the scheduler started them."""
        raise ProbeError(f"{self.name}: no server for the clients spread")

    def follow_up(self, chain: list[Ended], ctx: FollowUpContext) -> list[Job]:
        """The jobs to run next, after a job's records are written: ``chain`` is the job the
        plan gave, then the follow-ups this hook returned so far (each ended), the last one
        just ended. The run calls it after every job, here and inside an allocation, and
        runs what it returns, then calls it again; it stops when this returns nothing or the
        run is stopping. A follow-up job may name its hosts (``params["hosts"]``, rank
        order), among those the plan's job ran on. Most probes have none: []."""
        return []

    def asks(self, job: Job) -> list[str]:
        """Arguments that make ``job`` ask for its follow-up before it ends and run it inside
        its own launch (``ASK_FILE``), added by a run that answers (``assay.run.followup``).
        Most probes' jobs do not ask: []."""
        return []

    def inside(self, job: Job, nxt: Job) -> list[str] | None:
        """The arguments with which ``job``'s launch, still running, measures ``nxt`` (its
        follow-up, as :meth:`follow_up` returned it) itself; None: ``nxt`` needs a launch of
        its own (other nodes, another build)."""
        return None

    def preflight(self, job: Job) -> None:
        """Check, just before the run starts, what planning may not look at (a target's files,
        devices, free space): raise an AssayError (exit code 2) for a job that cannot run.
        Side effects: read-only looks at the machine. Most probes have nothing to check."""
        return None

    def expected_seconds(self, job: Job) -> float | None:
        """How long the job should take, when the probe can tell (its own estimate or budget);
        None when it cannot, and the progress line shows the job's timeout instead."""
        return None

    def left_behind(self, job: Job, job_dir: Path) -> list[Sample]:
        """Samples from what a job that printed nothing left in ``job_dir`` (a probe that
        writes its figures to a file as it goes: the all-pairs rounds finished before a node
        died). Most probes leave nothing: []."""
        return []

    @abstractmethod
    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        """Samples from what the job printed; raises ProbeError on a broken contract.

        ``job_dir``: the job's directory, for a probe that writes its figures to a file there
        (the all-pairs matrix); None where only stdout is at hand. Most probes ignore it."""


def parse_jsonl(stdout: str, probe: str, base_params: dict[str, Any]) -> list[Sample]:
    """Read a native probe's JSON Lines: one object per measured point, nothing else.

    ``base_params`` (what the plan knows: mpi, ranks, threads...) is merged under the probe's
    own params, so a value the probe measured or decided wins over the planned one.
    """
    samples = []
    for number, line in enumerate(stdout.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            metric, value = obj["metric"], float(obj["value"])
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise ProbeError(
                f"{probe}: stdout line {number} is not a measurement object: {line[:120]!r}"
            ) from None
        stats = Stats.from_dict(obj["stats"]) if obj.get("stats") else None
        params = {**base_params, **(obj.get("params") or {})}
        sample = Sample.make(probe, metric, value, params, stats, unit=obj.get("unit"))
        samples.append(sample)
    if not samples:
        raise ProbeError(f"{probe}: printed no measurement")
    return samples
