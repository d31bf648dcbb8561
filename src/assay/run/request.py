"""What ``assay run`` was asked, as one validated object, and the run it plans.

The command line (``assay.cli.run``) only collects its options into a :class:`RunRequest`;
everything it means is checked and acted on here, the same for every scheduler:

    suite (or a Vdbench file) -> plan (overrides) -> the scheduler places the jobs -> the
    scheduler's checks (what it cannot do, exit 2) -> [dry run stops here] -> pre-flight
    (targets, free space; exit 2 before a run exists)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from assay.errors import AssayError, ConfigError, SuiteError
from assay.launch import LaunchOptions, Scheduler, configured
from assay.launch.registry import needs_nodes
from assay.model import Job, MpiInfo, System
from assay.plan import Overrides, plan
from assay.probes import PlanContext
from assay.run.configfile import load_config
from assay.suite.schema import SuiteSpec
from assay.system import collect_plan_facts


@dataclass
class VdbenchRequest:
    """``--vdbench FILE`` and the options that go with it."""

    path: Path
    lun_map: list[str] = field(default_factory=list)  # OLD=NEW path prefixes
    target: Path | None = None
    elapsed: float | None = None
    warmup: float | None = None
    size: str | None = None


@dataclass
class RunRequest:
    """Every option of ``assay run``."""

    suite: str = "quick"
    on: str = "local"
    mpi: str | None = None  # comma-separated names, or "all"
    only: str | None = None  # comma-separated probes
    sets: list[str] = field(default_factory=list)  # "key=value" / "probe.key=value"
    repeat: str | None = None  # a count, or "auto"
    label: str = ""
    dry_run: bool = False
    vdbench: VdbenchRequest | None = None
    launch: LaunchOptions = field(default_factory=LaunchOptions)
    # ``--all-pairs``: the suite's all-pairs benches (the matrix, one job over every node);
    # ``per_node``: its per-node benches too; ``pairs_at_once``: most pairs of a round at once
    # (0: a whole round; None: the suite's value)
    all_pairs: bool = False
    per_node: bool = False
    pairs_at_once: int | None = None

    @property
    def auto(self) -> bool:
        """``--repeat auto``: each job repeated until its figures are within ±2 %."""
        return self.repeat == "auto"

    def overrides(self) -> Overrides:
        r = self.repeat
        if not (r is None or self.auto or (r.isdigit() and int(r) >= 1)):
            raise AssayError(f"--repeat {r!r}: expected a count (1, 2, ...) or 'auto'")
        if self.vdbench is not None and self.suite != "quick":
            raise AssayError("give a suite or --vdbench FILE, not both")
        if not self.all_pairs and (self.per_node or self.pairs_at_once is not None):
            flag = "--per-node" if self.per_node else "--pairs-at-once"
            raise AssayError(f"{flag} needs --all-pairs")
        return Overrides(
            only=[p.strip() for p in self.only.split(",")] if self.only else [],
            mpi=[m.strip() for m in self.mpi.split(",")] if self.mpi else None,
            sets=list(self.sets),
            repeat=1 if self.auto else (int(self.repeat) if self.repeat else None),
        )


@dataclass
class PlannedRun:
    """A run ready to start: its suite, its placed jobs and the scheduler that runs them."""

    spec: SuiteSpec
    text: str  # the suite as resolved, kept with the run
    origin: str  # where the suite came from (built-in, a file)
    jobs: list[Job]
    scheduler: Scheduler
    system: System
    mpis: list[MpiInfo]
    notes: list[str] = field(default_factory=list)  # what the user must know (Vdbench)


def _suite(request: RunRequest, per_node: bool) -> tuple[SuiteSpec, str, str, list[str]]:
    from assay.suite import resolve_suite

    v = request.vdbench
    if v is None:
        spec, text, origin = resolve_suite(request.suite)
        return spec, text, origin, []
    from assay.parsers.fio import parse_size
    from assay.vdbench.suite import suite_toml, vdbench_suite

    mapping = {}
    for item in v.lun_map:
        old, sep, new = item.partition("=")
        if not sep or not old:
            raise AssayError(f"--lun-map {item!r}: expected OLD=NEW, e.g. /mnt/vdb1=/scratch/a")
        mapping[old] = new
    size = None
    if v.size is not None:
        size = parse_size(v.size)
        if size is None:
            raise AssayError(f"--size {v.size!r}: expected a size such as 1g or 256m")
    spec, notes = vdbench_suite(
        v.path, lun_map=mapping or None, target_dir=v.target, elapsed=v.elapsed,
        warmup=v.warmup, size=size, per_host=per_node,
    )  # fmt: skip
    return spec, suite_toml(spec, notes), str(v.path), [f"vdbench: {n}" for n in notes]


def all_pairs_suite(
    spec: SuiteSpec, per_node: bool, pairs_at_once: int | None
) -> tuple[SuiteSpec, list[str]]:
    """What an all-pairs run runs: the suite's all-pairs benches (when it has none, the
    built-in suites of the probes of that spread: ``Probe.suite``) and, with ``per_node``, its
    per-node benches; never its collectives or two-node figures (``--nodes N`` runs of their
    own). Notes say what was left out and why."""
    from assay.probes import PROBES, get_probe
    from assay.suite import resolve_suite

    def kind(bench) -> str:
        return get_probe(bench.probe).spread_kind

    spec = spec.model_copy(deep=True)
    kept = [b for b in spec.bench if kind(b) == "all-pairs" or (per_node and kind(b) == "per-node")]
    left = sorted({b.probe for b in spec.bench if b not in kept})
    notes = []
    if not any(kind(b) == "all-pairs" for b in kept):
        own = [p.suite for p in PROBES.values() if p.spread_kind == "all-pairs" and p.suite]
        kept = [*(b for name in own for b in resolve_suite(name)[0].bench), *kept]
    if left:
        notes.append(
            f"--all-pairs: the matrix{' and the per-node pass' if per_node else ''} only; "
            f"not run: {', '.join(left)} (collectives and two-node figures: a run with "
            "--nodes N of their own" + ("" if per_node else "; per-node benches: --per-node") + ")"
        )
    for bench in kept:
        if kind(bench) == "all-pairs" and pairs_at_once is not None:
            bench.params["pairs_at_once"] = pairs_at_once
            bench.sweep.pop("pairs_at_once", None)
    spec.bench = kept
    return spec, notes


def plan_run(
    request: RunRequest,
    system: System,
    mpis: list[MpiInfo],
    config: dict[str, Any] | None = None,
) -> PlannedRun:
    """The scheduler (its options checked), the suite, its jobs planned and placed, and the
    scheduler's checks passed. Pre-flight is separate (:func:`preflight_run`): a dry run skips
    it, as it looks at targets on disk."""
    scheduler = configured(request.on, load_config() if config is None else config, request.launch)
    overrides = request.overrides()
    multi_node = scheduler.caps.max_nodes != 1
    if request.all_pairs and not multi_node:
        raise ConfigError(f"--all-pairs, --pairs-at-once and --per-node {needs_nodes(request.on)}")
    spec, text, origin, notes = _suite(request, per_node=multi_node)
    if request.all_pairs:
        from assay.suite.writer import suite_toml

        spec, more = all_pairs_suite(spec, request.per_node, request.pairs_at_once)
        notes += more
        text = suite_toml(spec, [f"assay run {origin} --all-pairs: the suite as it ran", *more])
    ctx = PlanContext(system=system, mpis=mpis, facts=collect_plan_facts())
    jobs = scheduler.place(plan(spec, ctx, overrides), mpis)
    if not jobs:
        raise SuiteError(f"nothing to run on {request.on}: the suite planned no job")
    if request.all_pairs and any(j.spread.kind == "all-pairs" and j.nodes < 2 for j in jobs):
        raise ConfigError("--all-pairs needs --nodes 2 or more")
    scheduler.check(jobs)  # what the scheduler cannot do is refused, exit 2
    return PlannedRun(spec, text, origin, jobs, scheduler, system, mpis, notes)


def preflight_run(run: PlannedRun) -> None:
    """The targets' checks (a device, a user's file, free space), exit 2 before a run exists."""
    from assay.run.preflight import preflight

    preflight(run.jobs)
