"""The flow of ``assay check``: refuse what cannot work, measure, judge, re-measure each FAIL,
then drain or resume (the command writes the outputs, before an action's error stands).

Everything that can be refused is refused before anything runs (exit 2): an unknown level, a
level that cannot run here (level 1 is one node; levels 2 and 3 need an allocation of 2 nodes
or more), a baseline that does not exist, ``--drain``/``--resume`` without the right to update
Slurm's nodes, a suite none of whose jobs can run here (every job skipped: no GPU), and on this
node (``--on local``) a baseline of another node type. On an allocation the nodes' types, and
anywhere a baseline missing a figure the check judges, are known only once the nodes have
reported: the check then stops before any verdict or node action (exit 2).

**Retest.** A FAIL stands only when it fails again: locally (level 1) the failing probes are run
once more on this node, as a second run; on Slurm in a second small allocation of the failing
nodes (``--nodelist``; a failing link's two nodes, a node whose links fail with a partner that
passes), right after the first. Nodes that ``--resume`` resumed for the check are drained again
while measured, so they are not re-measured: their FAIL stands (they stay drained).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.errors import AssayError
from assay.launch.admin import NodeAdmin
from assay.launch.registry import SCHEDULERS, node_admin, scheduler_class
from assay.run.check.surface import Surface


@dataclass
class CheckArgs:
    suite: str | None
    level: int | None
    on: str
    baselines: list[str]
    drain: bool
    resume: bool
    dry_run: bool
    node: str | None
    retest: bool
    fail_below: list[str]
    warn_below: list[str]
    sets: list[str]
    mpi: str | None
    label: str
    json: bool
    junit: Path | None
    openmetrics: Path | None
    html: Path | None
    nodes: int | None
    own: dict[str, Any]  # the backend's own options (``LaunchOptions.own``: --partition, ...)


def levels() -> dict[int, tuple[str, object, str]]:
    """Level -> (suite name, suite, its TOML): the built-in suites ``check-N``."""
    from assay.suite import builtin_suites, load_suite

    out_: dict[int, tuple[str, object, str]] = {}
    for name, text in sorted(builtin_suites().items()):
        if name.startswith("check-"):
            spec = load_suite(text, f"<built-in suite {name}>")
            if spec.check and spec.check.level:
                out_[spec.check.level] = (name, spec, text)
    return out_


def _suite(args: CheckArgs):
    from assay.suite import resolve_suite

    if args.suite and args.level is not None:
        raise AssayError("give a level or a suite, not both")
    if args.suite:
        spec, text, origin = resolve_suite(args.suite)
        return spec, text, origin, spec.check.level if spec.check else None
    known = levels()
    level = 1 if args.level is None else args.level
    if level not in known:
        raise AssayError(
            f"--level {level}: expected one of {', '.join(map(str, sorted(known)))}",
            hint="assay check --list shows each level's contents",
        )
    name, spec, text = known[level]
    return spec, text, name, level


def _refuse_where(args: CheckArgs, spec, level: int | None) -> None:
    what = f"level {level}" if level else f"suite {spec.name}"
    chk = spec.check
    if args.on not in SCHEDULERS:
        raise AssayError(f"--on {args.on}: expected {' or '.join(sorted(SCHEDULERS))}")
    # an allocation's backend (Slurm) or this node's (local), as the registry has it
    batch = scheduler_class(args.on).caps.batch
    if not batch and args.nodes:
        raise AssayError("--nodes needs --on slurm")
    if chk is not None and chk.max_nodes == 1 and batch:
        raise AssayError(
            f"{what} runs on the node itself, without an allocation: it cannot run --on {args.on}",
            hint="wire it as Slurm's HealthCheckProgram (docs/check.md), or check an allocation "
            "with --level 2",
        )
    if chk is not None and chk.min_nodes > 1:
        if not batch:
            raise AssayError(
                f"{what} measures the all-pairs matrix: it needs an allocation of "
                f"{chk.min_nodes} nodes or more (--on slurm --nodes N); this is one node",
                hint="on one node: assay check --level 1",
            )
        if args.nodes is not None and args.nodes < chk.min_nodes:
            raise AssayError(f"{what} needs --nodes {chk.min_nodes} or more, not {args.nodes}")
    if args.dry_run and not (args.drain or args.resume):
        raise AssayError("--dry-run prints the scontrol lines of --drain or --resume: give one")
    if args.dry_run and args.resume and batch:
        raise AssayError(
            f"--resume --on {args.on} cannot be a dry run: a drained node is measured only by "
            "resuming it inside a reservation (docs/check.md)",
            hint="check the nodes assay drained for real, or dry-run --drain",
        )
    if (args.drain or args.resume) and not args.dry_run:
        why = admin_of(args).permission()
        if why:
            flag = "--drain" if args.drain else "--resume"
            raise AssayError(
                f"{flag}: {why}; nothing was measured or drained",
                hint="run it as root or the SlurmUser (a HealthCheckProgram runs as root), or "
                "--dry-run to print the scontrol lines",
            )


def admin_of(args: CheckArgs) -> NodeAdmin:
    """The node administration the check drains and resumes through: its backend's (the
    partition given, on an allocation), or this node's scheduler's."""
    batch = scheduler_class(args.on).caps.batch
    return node_admin(args.on, args.own.get("partition") if batch else None)


def _rule(args: CheckArgs):
    from assay.analysis.check.checklimits import check_rule, limit_args
    from assay.analysis.statistics.outliers import outlier_rule
    from assay.run.configfile import load_config

    config = load_config()
    orule = outlier_rule(config)
    rule = check_rule(config, orule.threshold)
    rule = dataclasses.replace(
        rule,
        warn_below={**rule.warn_below, **limit_args(args.warn_below, "--warn-below")},
        fail_below={**rule.fail_below, **limit_args(args.fail_below, "--fail-below")},
        retest=rule.retest and args.retest,
        baselines=tuple(args.baselines) or rule.baselines,
    )
    return config, orule, rule


def _baselines(names: tuple[str, ...]):
    from assay.references import load

    out_ = []
    for name in names:
        try:
            out_.append(load(name))
        except AssayError as exc:
            first = str(exc).split("\n")[0]
            raise AssayError(f"baseline {name}: {first}", hint=exc.hint) from None
    return out_


def _request(args: CheckArgs, origin: str):
    """The check's run as ``assay run`` would be asked for it."""
    from assay.launch import LaunchOptions
    from assay.run.request import RunRequest

    return RunRequest(
        suite=args.suite or origin, on=args.on, mpi=args.mpi, sets=list(args.sets),
        label=args.label, launch=LaunchOptions(nodes=args.nodes, own=dict(args.own)),
    )  # fmt: skip


def local_node(
    given: str | None, hostname: str | None, admin: NodeAdmin, *, acting: bool = True
) -> str:
    """This node's scheduler name: ``--node``, else ``$SLURMD_NODENAME``, else the short host
    name; one node's name, never a host list (``n[1-100]`` would drain 100 nodes; issue 28). A
    name found rather than given is checked only when it is to be drained or resumed."""
    env = os.environ.get("SLURMD_NODENAME")
    name = given or env or (hostname or "").split(".")[0]
    where = "--node" if given else "$SLURMD_NODENAME" if env else "the host name"
    if (given or acting) and (problem := admin.name_problem(name)):
        raise AssayError(f"{where}: {problem}", hint="give this node's own Slurm name")
    return name


@dataclass
class CheckResult:
    """A check's end: what the command writes (the verdicts, the node actions), and the error
    a node action met (raised once the verdicts are out)."""

    suite: str
    level: int | None
    run_id: str
    retest_id: str | None
    verdicts: list
    against: dict[str, str]
    notes: list[str]
    actions: list[dict]
    seconds: float
    run_path: Path
    error: AssayError | None = None

    @property
    def code(self) -> int:
        """0 every check passes, 1 warnings, 3 a failure."""
        from assay.analysis.check.health import exit_code

        return exit_code(self.verdicts)


def _planned(args: CheckArgs, config, spec, origin: str, admin: NodeAdmin):
    """The check's run planned as ``assay run`` plans it, and this node's name."""
    from assay.run.request import plan_run
    from assay.system import collect_system
    from assay.toolchain import discover_mpis

    mpis = discover_mpis()
    system = collect_system(mpis)
    request = _request(args, origin)
    planned = plan_run(request, system, mpis, config)
    jobs = planned.jobs
    if not [j for j in jobs if not j.skip_reason]:
        why = "; ".join(sorted({f"{j.probe}: {j.skip_reason}" for j in jobs}))
        raise AssayError(f"nothing of {spec.name} can run here ({why})")
    local = local_node(args.node, system.hostname, admin, acting=args.drain or args.resume)
    return request, planned, local


def _peers_enough(m, refs) -> None:
    """The peers' median needs 3 nodes: said before measuring, not after."""
    from assay.analysis.check.checkrun import MIN_PEERS

    if refs or m.nodes >= MIN_PEERS:
        return
    where = "this node alone" if not m.batch else f"{m.nodes} nodes"
    raise AssayError(
        f"no baseline, and {where} cannot be judged against peers: the median of "
        f"fewer than {MIN_PEERS} nodes cannot say which one is slow",
        hint="make a baseline from an accepted run (assay run check-1, then assay "
        "references add --from latest NAME) and give it: --baseline NAME, or "
        "[check] baseline in the config",
    )


def _type_fits(m, planned, refs) -> None:
    """On this node its type is known before anything runs: a baseline of another type is
    refused now, not after the level's minutes of measuring."""
    if m.batch or not refs:
        return
    from assay.analysis.check.checkrun import assign
    from assay.analysis.check.nodetype import facts_of_system

    facts = dataclasses.replace(facts_of_system(planned.system), host=m.local)
    assign([m.local], {m.local: facts}, refs)


def run_check(args: CheckArgs, surface: Surface) -> CheckResult:
    """The whole check, up to its node actions. Bad input raises (exit 2)."""
    from assay.analysis.check.health import CHECK_METRICS
    from assay.run.check.measure import Measure
    from assay.run.check.nodes import act

    config, orule, rule = _rule(args)
    spec, _, origin, level = _suite(args)
    _refuse_where(args, spec, level)
    admin = admin_of(args)
    if args.node:  # before anything is measured
        local_node(args.node, None, admin)
    refs = _baselines(rule.baselines)
    metrics = list(spec.check.metrics) if spec.check and spec.check.metrics else list(CHECK_METRICS)
    request, planned, local = _planned(args, config, spec, origin, admin)
    m = Measure(args, request, planned, config, orule, local, surface, admin)
    _peers_enough(m, refs)
    _type_fits(m, planned, refs)
    started = time.monotonic()
    first = m.measure(planned)
    judged = m.judge(first, refs, rule, metrics)
    verdicts, notes, retest_id = judged.verdicts, list(judged.notes), None
    if rule.retest:
        verdicts, retest_id = m.retest(first, verdicts, refs, rule, metrics)
    seconds = time.monotonic() - started
    budget = spec.check.budget_s if spec.check else None
    if budget and seconds > budget:
        notes.append(f"the check took {seconds:.0f} s, over its {budget:g} s budget")
    notes += [f"skipped: {j.job_id}: {j.skip_reason}" for j in planned.jobs if j.skip_reason]
    result = CheckResult(spec.name, level, first.run_id, retest_id, verdicts, judged.against,
                         notes, [], seconds, first.path)  # fmt: skip
    try:
        result.actions = act(args, m, verdicts, first.run_id)
    except AssayError as exc:
        result.actions, result.error = [{"error": str(exc)}], exc  # the verdicts are out first
    return result
