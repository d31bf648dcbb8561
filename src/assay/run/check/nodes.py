"""What ``assay check --drain / --resume`` does to a scheduler's nodes (through its node
administration, ``assay.launch.admin``), and the hold that lets a cluster check re-measure the
nodes it drained (a drained node cannot be allocated: Slurm's backend says more).

Decisions are made by :func:`plan_actions` (pure: grades and node states in, actions out), so
``--dry-run`` prints exactly the lines (``scontrol`` on Slurm) a real run would run:

* a node that FAILs (a FAIL that stood after its retest) is drained with
  ``assay: <check> <figure> vs <baseline> (run <id>)``; one already drained for another reason
  keeps that reason and is left alone;
* with ``--resume``, a node drained by assay (its reason starts with ``assay:``) that now has no
  FAIL is resumed; one drained for any other reason never is.
"""

from __future__ import annotations

import getpass
import os
import re
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from assay.analysis.check.health import Grade, Verdict, drain_reason, node_grades
from assay.config import assay_home
from assay.errors import AssayError
from assay.launch.admin import NodeAdmin, NodeState
from assay.launch.registry import HOST_SCHEDULER, node_admin
from assay.store import RunStore


@dataclass
class Action:
    node: str
    what: str  # "drain", "resume" or "leave"
    argv: list[str] | None
    why: str
    line: str | None = None  # the argv as an admin would type it

    def to_dict(self, done: bool) -> dict:
        return {"node": self.node, "action": self.what, "command": self.line, "why": self.why,
                "done": done}  # fmt: skip


def _admin(admin: NodeAdmin | None) -> NodeAdmin:
    """The node administration given, else this node's scheduler's."""
    return admin if admin is not None else node_admin(HOST_SCHEDULER)


def plan_actions(
    grades: Mapping[str, Grade],
    verdicts: Iterable[Verdict],
    states: Mapping[str, NodeState],
    run_id: str,
    *,
    drain: bool,
    resume: bool,
    measured: Collection[str] | None = None,
    admin: NodeAdmin | None = None,
) -> list[Action]:
    """What to do to each judged node (the module docstring's rules). ``measured``: the nodes
    the check ran on (its allocation's, or this node); a node outside is never touched."""
    admin = _admin(admin)
    verdicts = list(verdicts)
    out = []
    for node, grade in sorted(grades.items()):
        st = states.get(node)
        acting = (drain and grade == "FAIL") or resume
        if acting and (problem := admin.name_problem(node)):  # never a host list (issue 28)
            out.append(Action(node, "leave", None, problem))
            continue
        if acting and measured is not None and node not in measured:
            out.append(Action(node, "leave", None, "not a node this check ran on"))
            continue
        if st is None:
            if (drain and grade == "FAIL") or resume:
                why = f"{admin.scheduler} has no node of this name"
                out.append(Action(node, "leave", None, why))
            continue
        if grade == "FAIL" and drain:
            if st.drained and not st.by_assay:
                why = f"already drained for another reason ({st.reason!r}): left as it is"
                out.append(Action(node, "leave", None, why))
                continue
            mine = [v for v in verdicts if v.subject == node]
            reason = drain_reason(mine, run_id)
            argv = admin.drain_argv(node, reason)
            out.append(Action(node, "drain", argv, reason, admin.shell_line(argv)))
        elif grade != "FAIL" and resume and st.drained:
            if st.by_assay:
                argv = admin.resume_argv(node)
                out.append(Action(node, "resume", argv, f"passes now ({grade})",
                                  admin.shell_line(argv)))  # fmt: skip
            else:
                why = f"drained for another reason ({st.reason!r}): assay never resumes it"
                out.append(Action(node, "leave", None, why))
    return out


def carry_out(
    actions: list[Action], dry: bool, say: Callable[[str], None], admin: NodeAdmin | None = None
) -> list[dict]:
    """Run the actions' lines (``dry``: only record them; the caller prints them after the
    verdicts). The first refusal stops: the nodes after it are not touched, and the error
    names the line the scheduler refused."""
    records = []
    for a in actions:
        if a.argv is None:
            say(f"{a.node}: {a.why}")
            records.append(a.to_dict(False))
            continue
        if dry:
            records.append(a.to_dict(False))
            continue
        _admin(admin).update(a.argv)
        say(f"{a.node}: {a.what} ({a.why})")
        records.append(a.to_dict(True))
    return records


def natural(name: str) -> list:
    """node2 before node10: the peers a hold takes are the first idle nodes as people count."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


def not_idle_words(states: Mapping[str, NodeState], names_shown: int = 4) -> str:
    """`` (2 mixed: n1, n2; 1 down*: n7)``: the nodes that are not idle, by state, so the
    refusal says what holds them (a few names per state: a big cluster's are thousands)."""
    by_state: dict[str, list[str]] = {}
    for name in sorted(states, key=natural):
        by_state.setdefault(states[name].state, []).append(name)
    parts = []
    for state, names in sorted(by_state.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        shown = ", ".join(names[:names_shown]) + (", ..." if len(names) > names_shown else "")
        parts.append(f"{len(names)} {state}: {shown}")
    return f" ({'; '.join(parts)})" if parts else ""


@dataclass
class Hold:
    """Nodes assay drained, resumed inside a reservation of its own for one check."""

    admin: NodeAdmin
    reservation: str
    held: dict[str, str] = field(default_factory=dict)  # node -> the reason it was drained with
    members: list[str] = field(default_factory=list)  # every node of the reservation
    redrained: bool = False


def hold_drained(
    admin: NodeAdmin, nodes: int, minutes: int, say: Callable[[str], None]
) -> Hold | None:
    """Hold the nodes assay drained (idle ones) and enough idle peers for ``nodes`` in one
    reservation, and resume the drained ones inside it. None: assay drained no node."""
    states = admin.states()
    drained = sorted(n for n, s in states.items() if s.by_assay and s.idle_drained)
    busy = sorted(n for n, s in states.items() if s.by_assay and not s.idle_drained)
    for n in busy:
        say(f"{n}: drained by assay but still running a job ({states[n].state}): not held now")
    if not drained:
        return None
    idle = sorted((n for n, s in states.items() if s.idle), key=natural)
    if len(drained) > nodes or len(drained) + len(idle) < nodes:
        others = {n: s for n, s in states.items() if not s.idle and n not in drained}
        raise AssayError(
            f"--resume needs {nodes} nodes: the {len(drained)} assay drained "
            f"({', '.join(drained)}) and {max(0, nodes - len(drained))} idle ones; "
            f"{len(idle)} are idle{not_idle_words(others)}",
            hint=f"ask for --nodes between {len(drained)} and {len(drained) + len(idle)}",
        )
    members = drained + idle[: nodes - len(drained)]
    name = f"assay-check-{os.getpid()}-{int(time.time())}"
    hold = Hold(admin, name, {n: states[n].reason for n in drained}, members)
    admin.reserve(admin.reserve_argv(name, members, getpass.getuser(), minutes))
    say(f"reservation {name} holds {', '.join(members)}; resuming {', '.join(drained)} in it")
    try:
        for n in drained:
            admin.update(admin.resume_argv(n))
    except AssayError:
        release(hold, say)
        raise
    return hold


def redrain(hold: Hold, say: Callable[[str], None]) -> None:
    """Drain the held nodes again with their old reasons, once the allocation holds them: the
    job keeps running, and should assay stop now they stay drained."""
    if hold.redrained:
        return
    for node, reason in hold.held.items():
        hold.admin.update(hold.admin.drain_argv(node, reason))
    hold.redrained = True
    say(f"{', '.join(hold.held)}: drained again while measured (the check resumes what passes)")


def release(hold: Hold, say: Callable[[str], None]) -> None:
    """Drain what was held (if not yet) and delete the reservation."""
    try:
        if not hold.redrained:
            for node, reason in hold.held.items():
                hold.admin.update(hold.admin.drain_argv(node, reason))
            hold.redrained = True
    finally:
        hold.admin.reserve(hold.admin.unreserve_argv(hold.reservation))
        say(f"reservation {hold.reservation} deleted")


def act(args, measure, verdicts: list[Verdict], run_id: str) -> list[dict[str, Any]]:
    """Drain and resume as the verdicts say, through the check's node administration; the
    actions taken."""
    if not (args.drain or args.resume):
        return []
    say, admin = measure.surface.say, measure.admin
    grades = node_grades(verdicts)
    try:
        states = admin.states(timeout=5.0 if args.dry_run else None)
    except AssayError as exc:
        if not args.dry_run:
            raise
        say(f"note: {admin.scheduler}'s node states are not known ({str(exc).splitlines()[0]})")
        states = {n: NodeState(n, "unknown") for n in grades}
    measured = measured_nodes(run_id, measure.local, measure.surface.store())
    actions = plan_actions(grades, verdicts, states, run_id, drain=args.drain, resume=args.resume,
                           measured=measured, admin=admin)  # fmt: skip
    return carry_out(actions, args.dry_run, say, admin)


def measured_nodes(run_id: str, local: str, store: RunStore | None = None) -> set[str]:
    """The nodes a check ran on: its allocation's, as the scheduler named them, or this node.
    Only these may be drained or resumed (issue 28: a name in the data is not an allocation)."""
    store = store or RunStore(assay_home())
    info = store.load(run_id, samples=False).info
    hosts = (info.batch or {}).get("hosts") if info.batch else None
    if isinstance(hosts, list) and all(isinstance(h, str) for h in hosts):
        return set(hosts)
    return {local}
