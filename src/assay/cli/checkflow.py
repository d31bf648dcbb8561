"""The flow of ``assay check``: refuse what cannot work, measure, judge, re-measure each FAIL,
write the outputs, then drain or resume.

Everything that can be refused is refused before anything runs (exit 2): an unknown level, a
level that cannot run here (level 1 is one node; levels 2 and 3 need an allocation of 2 nodes
or more), a baseline that does not exist, ``--drain``/``--resume`` without the right to update
Slurm's nodes, a suite none of whose jobs can run here (every job skipped: no GPU). A baseline
of another node type, or one missing a figure the check judges, is known only once the nodes
have reported: the check then stops before any verdict or node action (exit 2).

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

from rich.table import Table as RichTable
from rich.text import Text

from assay.cli.common import discover, out
from assay.errors import AssayError


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
    partition: str | None
    account: str | None
    qos: str | None
    constraint: str | None
    time_limit: str | None
    sbatch_args: list[str]
    max_wait: float | None


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


def list_levels() -> None:
    t = RichTable(title="assay check levels", title_justify="left")
    for col in ("level", "suite", "budget", "runs on", "contents"):
        t.add_column(col, overflow="fold")
    for level, (name, spec, _) in sorted(levels().items()):
        chk = spec.check  # type: ignore[attr-defined]
        budget = f"{chk.budget_s / 60:g} min" if chk.budget_s >= 120 else f"{chk.budget_s:g} s"
        where = (
            "this node (no allocation)"
            if chk.max_nodes == 1
            else f"--on slurm, {chk.min_nodes}+ nodes"
        )
        t.add_row(str(level), name, budget, where, Text("\n".join(f"• {c}" for c in chk.contents)))
    out.print(t)
    out.print("Any suite can be checked instead: assay check SUITE (its figures judged alike).")


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
    if args.on not in ("local", "slurm"):
        raise AssayError(f"--on {args.on}: expected local or slurm")
    if args.on == "local" and args.nodes:
        raise AssayError("--nodes needs --on slurm")
    if chk is not None and chk.max_nodes == 1 and args.on == "slurm":
        raise AssayError(
            f"{what} runs on the node itself, without an allocation: it cannot run --on slurm",
            hint="wire it as Slurm's HealthCheckProgram (docs/check.md), or check an allocation "
            "with --level 2",
        )
    if chk is not None and chk.min_nodes > 1:
        if args.on != "slurm":
            raise AssayError(
                f"{what} measures the all-pairs matrix: it needs an allocation of "
                f"{chk.min_nodes} nodes or more (--on slurm --nodes N); this is one node",
                hint="on one node: assay check --level 1",
            )
        if args.nodes is not None and args.nodes < chk.min_nodes:
            raise AssayError(f"{what} needs --nodes {chk.min_nodes} or more, not {args.nodes}")
    if args.dry_run and not (args.drain or args.resume):
        raise AssayError("--dry-run prints the scontrol lines of --drain or --resume: give one")
    if args.dry_run and args.resume and args.on == "slurm":
        raise AssayError(
            "--resume --on slurm cannot be a dry run: a drained node is measured only by "
            "resuming it inside a reservation (docs/check.md)",
            hint="check the nodes assay drained for real, or dry-run --drain",
        )
    if (args.drain or args.resume) and not args.dry_run:
        from assay.launch.slurm.nodes import update_permission

        why = update_permission()
        if why:
            flag = "--drain" if args.drain else "--resume"
            raise AssayError(
                f"{flag}: {why}; nothing was measured or drained",
                hint="run it as root or the SlurmUser (a HealthCheckProgram runs as root), or "
                "--dry-run to print the scontrol lines",
            )


def _rule(args: CheckArgs):
    from assay.analysis.check.checklimits import check_rule, limit_args
    from assay.analysis.statistics.outliers import outlier_rule
    from assay.config import load_config

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
    from assay.cli.batchopts import own_options
    from assay.launch import LaunchOptions
    from assay.run.request import RunRequest

    own = own_options(args.partition, args.account, args.qos, args.constraint, args.time_limit,
                      args.sbatch_args, args.max_wait)  # fmt: skip
    return RunRequest(
        suite=args.suite or origin, on=args.on, mpi=args.mpi, sets=list(args.sets),
        label=args.label, launch=LaunchOptions(nodes=args.nodes, own=own),
    )  # fmt: skip


def local_node(given: str | None, hostname: str | None, *, acting: bool = True) -> str:
    """This node's Slurm name: ``--node``, else ``$SLURMD_NODENAME``, else the short host name;
    one node's name, never a host list (``n[1-100]`` would drain 100 nodes; issue 28). A name
    found rather than given is checked only when it is to be drained or resumed."""
    from assay.launch.slurm.nodes import node_name_problem

    env = os.environ.get("SLURMD_NODENAME")
    name = given or env or (hostname or "").split(".")[0]
    where = "--node" if given else "$SLURMD_NODENAME" if env else "the host name"
    if (given or acting) and (problem := node_name_problem(name)):
        raise AssayError(f"{where}: {problem}", hint="give this node's own Slurm name")
    return name


def run_check(args: CheckArgs) -> int:
    """The whole check; the exit status (0, 1, 3). Bad input raises (exit 2)."""
    from assay.analysis.check.health import CHECK_METRICS
    from assay.run.request import plan_run

    config, orule, rule = _rule(args)
    spec, _, origin, level = _suite(args)
    _refuse_where(args, spec, level)
    if args.node:  # before anything is measured
        local_node(args.node, None)
    refs = _baselines(rule.baselines)
    metrics = list(spec.check.metrics) if spec.check and spec.check.metrics else list(CHECK_METRICS)
    system, mpis = discover()
    request = _request(args, origin)
    planned = plan_run(request, system, mpis, config)
    jobs = planned.jobs
    runnable = [j for j in jobs if not j.skip_reason]
    if not runnable:
        why = "; ".join(sorted({f"{j.probe}: {j.skip_reason}" for j in jobs}))
        raise AssayError(f"nothing of {spec.name} can run here ({why})")
    local = local_node(args.node, system.hostname, acting=args.drain or args.resume)
    from assay.cli.checkmeasure import Measure

    m = Measure(args, request, planned, config, orule, local)
    if not refs:  # the peers' median needs 3 nodes: say so before measuring, not after
        from assay.analysis.check.checkrun import MIN_PEERS

        count = m.nodes
        if count < MIN_PEERS:
            where = "this node alone" if not m.batch else f"{count} nodes"
            raise AssayError(
                f"no baseline, and {where} cannot be judged against peers: the median of "
                f"fewer than {MIN_PEERS} nodes cannot say which one is slow",
                hint="make a baseline from an accepted run (assay run check-1, then assay "
                "references add --from latest NAME) and give it: --baseline NAME, or "
                "[check] baseline in the config",
            )
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
    notes += [f"skipped: {j.job_id}: {j.skip_reason}" for j in jobs if j.skip_reason]
    from assay.cli.checkout import act, write_outputs

    def written(actions: list) -> None:
        write_outputs(args, spec.name, level, first.run_id, retest_id, verdicts, judged.against,
                      notes, actions, seconds, first.path)  # fmt: skip

    try:
        actions = act(args, m, verdicts, first.run_id)
    except AssayError as exc:
        written([{"error": str(exc)}])  # the verdicts are out before the error
        raise
    written(actions)
    if args.dry_run:  # the scontrol lines a real run would run, after the verdicts
        for action in actions:
            if action["command"]:
                print(action["command"])
    from assay.analysis.check.health import exit_code

    return exit_code(verdicts)
