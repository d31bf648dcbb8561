"""What ``assay check --drain / --resume`` does to Slurm's nodes, and the hold that lets a
cluster check re-measure the nodes it drained (``launch.slurm.nodes`` says why a hold).

Decisions are made by :func:`plan_actions` (pure: grades and node states in, actions out), so
``--dry-run`` prints exactly the ``scontrol`` lines a real run would run:

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

from assay.analysis.check.health import Grade, Verdict, drain_reason
from assay.errors import AssayError
from assay.launch.slurm.nodes import (
    NodeState,
    delete_reservation_argv,
    drain_argv,
    node_name_problem,
    node_states,
    reservation_argv,
    resume_argv,
    run_scontrol,
    shell_line,
    update,
)


@dataclass
class Action:
    node: str
    what: str  # "drain", "resume" or "leave"
    argv: list[str] | None
    why: str

    def to_dict(self, done: bool) -> dict:
        line = shell_line(self.argv) if self.argv else None
        return {"node": self.node, "action": self.what, "command": line, "why": self.why,
                "done": done}  # fmt: skip


def plan_actions(
    grades: Mapping[str, Grade],
    verdicts: Iterable[Verdict],
    states: Mapping[str, NodeState],
    run_id: str,
    *,
    drain: bool,
    resume: bool,
    measured: Collection[str] | None = None,
) -> list[Action]:
    """What to do to each judged node (the module docstring's rules). ``measured``: the nodes
    the check ran on (its allocation's, or this node); a node outside is never touched."""
    verdicts = list(verdicts)
    out = []
    for node, grade in sorted(grades.items()):
        st = states.get(node)
        acting = (drain and grade == "FAIL") or resume
        if acting and (problem := node_name_problem(node)):  # never a host list (issue 28)
            out.append(Action(node, "leave", None, problem))
            continue
        if acting and measured is not None and node not in measured:
            out.append(Action(node, "leave", None, "not a node this check ran on"))
            continue
        if st is None:
            if (drain and grade == "FAIL") or resume:
                out.append(Action(node, "leave", None, "Slurm has no node of this name"))
            continue
        if grade == "FAIL" and drain:
            if st.drained and not st.by_assay:
                why = f"already drained for another reason ({st.reason!r}): left as it is"
                out.append(Action(node, "leave", None, why))
                continue
            mine = [v for v in verdicts if v.subject == node]
            reason = drain_reason(mine, run_id)
            out.append(Action(node, "drain", drain_argv(node, reason), reason))
        elif grade != "FAIL" and resume and st.drained:
            if st.by_assay:
                out.append(Action(node, "resume", resume_argv(node), f"passes now ({grade})"))
            else:
                why = f"drained for another reason ({st.reason!r}): assay never resumes it"
                out.append(Action(node, "leave", None, why))
    return out


def carry_out(
    actions: list[Action], dry: bool, say: Callable[[str], None]
) -> list[dict]:  # fmt: skip
    """Run the actions' scontrol lines (``dry``: only record them; the caller prints them
    after the verdicts). The first refusal stops: the nodes after it are not touched, and the
    error names the line Slurm refused."""
    records = []
    for a in actions:
        if a.argv is None:
            say(f"{a.node}: {a.why}")
            records.append(a.to_dict(False))
            continue
        if dry:
            records.append(a.to_dict(False))
            continue
        update(a.argv)
        say(f"{a.node}: {a.what} ({a.why})")
        records.append(a.to_dict(True))
    return records


def natural(name: str) -> list:
    """node2 before node10: the peers a hold takes are the first idle nodes as people count."""
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


@dataclass
class Hold:
    """Nodes assay drained, resumed inside a reservation of its own for one check."""

    reservation: str
    held: dict[str, str] = field(default_factory=dict)  # node -> the reason it was drained with
    members: list[str] = field(default_factory=list)  # every node of the reservation
    redrained: bool = False


def hold_drained(
    partition: str | None, nodes: int, minutes: int, say: Callable[[str], None]
) -> Hold | None:
    """Hold the nodes assay drained (idle ones) and enough idle peers for ``nodes`` in one
    reservation, and resume the drained ones inside it. None: assay drained no node."""
    states = node_states(partition)
    drained = sorted(n for n, s in states.items() if s.by_assay and s.idle_drained)
    busy = sorted(n for n, s in states.items() if s.by_assay and not s.idle_drained)
    for n in busy:
        say(f"{n}: drained by assay but still running a job ({states[n].state}): not held now")
    if not drained:
        return None
    idle = sorted((n for n, s in states.items() if s.idle), key=natural)
    if len(drained) > nodes or len(drained) + len(idle) < nodes:
        raise AssayError(
            f"--resume needs {nodes} nodes: the {len(drained)} assay drained "
            f"({', '.join(drained)}) and {max(0, nodes - len(drained))} idle ones; "
            f"{len(idle)} are idle",
            hint=f"ask for --nodes between {len(drained)} and {len(drained) + len(idle)}",
        )
    members = drained + idle[: nodes - len(drained)]
    name = f"assay-check-{os.getpid()}-{int(time.time())}"
    hold = Hold(name, {n: states[n].reason for n in drained}, members)
    run_scontrol(reservation_argv(name, members, getpass.getuser(), minutes))
    say(f"reservation {name} holds {', '.join(members)}; resuming {', '.join(drained)} in it")
    try:
        for n in drained:
            update(resume_argv(n))
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
        update(drain_argv(node, reason))
    hold.redrained = True
    say(f"{', '.join(hold.held)}: drained again while measured (the check resumes what passes)")


def release(hold: Hold, say: Callable[[str], None]) -> None:
    """Drain what was held (if not yet) and delete the reservation."""
    try:
        if not hold.redrained:
            for node, reason in hold.held.items():
                update(drain_argv(node, reason))
            hold.redrained = True
    finally:
        run_scontrol(delete_reservation_argv(hold.reservation))
        say(f"reservation {hold.reservation} deleted")
