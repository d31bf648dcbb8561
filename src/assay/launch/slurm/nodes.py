"""Slurm's nodes: their states, draining a node ``assay check`` failed, resuming one it drained.

    scontrol update NodeName=N State=DRAIN Reason="assay: <check> <figure> vs <baseline> (run R)"
    scontrol update NodeName=N State=RESUME

**Whose drain**: ``assay.launch.admin`` (the ``assay:`` prefix of a reason).

**Who may.** ``scontrol update`` of a node needs Slurm's operator rights: root, the
``SlurmUser``, or an ``AdminLevel`` of Operator or Administrator in the accounting database.
:func:`update_permission` checks before anything is measured, so a check that could not drain
stops first (exit 2) instead of measuring for nothing.

**A drained node cannot be allocated**, not even in a reservation (tried on Slurm 22.05: the
job waits on "ReqNodeNotAvail"). To re-measure the nodes it drained (``--resume`` on a
cluster), assay holds them in a reservation of its own (:func:`reservation_argv`), resumes them
inside it (no other job can start there), drains them again as soon as its allocation holds
them (a job keeps running on a node drained under it), and resumes only those that pass.
"""

from __future__ import annotations

import getpass
import os
import re
import shlex
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor

from assay.errors import LaunchError
from assay.launch.admin import NodeAdmin, NodeState
from assay.launch.slurm.state import _run, _slurm_tool, slurm_words

SINFO_FORMAT = "%N|%T|%E"


def parse_sinfo(text: str) -> dict[str, NodeState]:
    """``sinfo -N -h -o '%N|%T|%E'``: a line per node and partition (the first one kept)."""
    out: dict[str, NodeState] = {}
    for line in text.splitlines():
        parts = line.split("|", 2)
        if len(parts) < 2 or not parts[0].strip():
            continue
        reason = parts[2].strip() if len(parts) > 2 else ""
        name = parts[0].strip()
        out.setdefault(name, NodeState(name, parts[1].strip(), "" if reason == "none" else reason))
    return out


def node_states(partition: str | None = None, timeout: float | None = None) -> dict[str, NodeState]:
    """Every node's state and reason. ``timeout``: seconds to wait for Slurm (sinfo retries for
    a minute when it cannot read slurm.conf; a dry run need not wait that long)."""
    argv = [_slurm_tool("sinfo"), "-N", "-h", "-o", SINFO_FORMAT]
    if partition:
        argv.append(f"--partition={partition}")
    if timeout is None:
        proc = _run(argv)
    else:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout,
                                  check=False)  # fmt: skip
        except subprocess.TimeoutExpired:
            raise LaunchError(f"sinfo did not answer in {timeout:g} s") from None
    if proc.returncode != 0:
        raise LaunchError(f"sinfo: {slurm_words(proc.stderr)}")
    return parse_sinfo(proc.stdout)


# One node's name as scontrol takes it (issue 28): scontrol reads ``NodeName=`` as a host list,
# so ``n[1-100],login1`` is 101 nodes; a blank or a control character is another word or line.
_NODE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,252}", re.ASCII)


def node_name_problem(name: str) -> str | None:
    """Why ``name`` is not one node's name for scontrol, or None."""
    if _NODE_NAME.fullmatch(name) and name.upper() != "ALL":  # Nodes=ALL: every node
        return None
    return (
        f"{name!r} is not one node name (letters, digits, '_', '.', '-'): scontrol reads "
        "'[', ',' and blanks as a list of nodes, and ALL as every node"
    )


def _one_node(node: str) -> str:
    problem = node_name_problem(node)
    if problem:
        raise LaunchError(f"not updating {problem}")
    return node


def drain_argv(node: str, reason: str) -> list[str]:
    node = _one_node(node)
    return ["scontrol", "update", f"NodeName={node}", "State=DRAIN", f"Reason={reason}"]


def resume_argv(node: str) -> list[str]:
    return ["scontrol", "update", f"NodeName={_one_node(node)}", "State=RESUME"]


def shell_line(argv: list[str]) -> str:
    """The command as an admin would type it: ``Reason="assay: ..."`` in double quotes."""
    out = []
    for arg in argv:
        key, sep, value = arg.partition("=")
        if sep and key == "Reason":
            escaped = re.sub(r'(["\\$`])', r"\\\1", value)
            out.append(f'Reason="{escaped}"')
        else:
            out.append(shlex.quote(arg))
    return " ".join(out)


def update(argv: list[str]) -> None:
    """Run one ``scontrol update``; Slurm's refusal (permission, unknown node) is an error."""
    proc = _run([_slurm_tool(argv[0]), *argv[1:]])
    if proc.returncode != 0:
        raise LaunchError(
            f"{shell_line(argv)}: {slurm_words(proc.stderr)}",
            hint="draining and resuming nodes needs Slurm operator rights (root, SlurmUser, "
            "or AdminLevel=Operator)",
        )


def _ask(argv: list[str]) -> subprocess.CompletedProcess[str] | None:
    """A question to Slurm that may go unanswered: a user Slurm does not let in (no munge
    socket), or no accounting daemon, gets no answer at all. A short wait, then None."""
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=5.0, check=False)
    except (subprocess.TimeoutExpired, OSError):
        return None


def _slurm_user() -> str | None:
    proc = _ask([_slurm_tool("scontrol"), "show", "config"])
    if proc is None or proc.returncode != 0:
        return None
    m = re.search(r"^SlurmUser\s*=\s*([^\s(]+)", proc.stdout, re.MULTILINE)
    return m.group(1) if m else None


def update_permission() -> str | None:
    """None when this user may drain and resume nodes; else why not (see the docstring)."""
    if shutil.which("scontrol") is None:
        return "scontrol is not on PATH: this is no Slurm front end or node"
    if os.geteuid() == 0:
        return None
    user = getpass.getuser()
    sacctmgr = shutil.which("sacctmgr")
    # Both questions at once: a user Slurm does not let in waits out each one's 5 s.
    with ThreadPoolExecutor(2) as pool:
        asked_user = pool.submit(_slurm_user)
        admin = pool.submit(_ask, [sacctmgr, "-n", "-P", "show", "user", user,
                                   "format=adminlevel"]) if sacctmgr else None  # fmt: skip
        slurm_user = asked_user.result()
        proc = admin.result() if admin else None
    if user == slurm_user:
        return None
    level = proc.stdout.strip().lower() if proc is not None and proc.returncode == 0 else ""
    if level in ("operator", "administrator"):
        return None
    return (
        f"you are {user}, not root nor SlurmUser ({slurm_user or 'unknown'})"
        + ("" if sacctmgr else ", and there is no sacctmgr to ask for an AdminLevel")
        + ": Slurm would refuse 'scontrol update' of a node"
    )


def reservation_argv(name: str, nodes: list[str], user: str, minutes: int) -> list[str]:
    """A reservation of ``nodes`` for ``user`` from now: resumed nodes inside it take no other
    job. ``IGNORE_JOBS``: a drained node may still be finishing a job that ends meanwhile."""
    return [
        "scontrol", "create", "reservation", f"ReservationName={name}",
        f"Nodes={','.join(nodes)}", f"Users={user}", "StartTime=now",
        f"Duration={max(1, minutes)}", "Flags=MAINT,IGNORE_JOBS",
    ]  # fmt: skip


def delete_reservation_argv(name: str) -> list[str]:
    return ["scontrol", "delete", f"ReservationName={name}"]


def run_scontrol(argv: list[str]) -> None:
    """A reservation's creation or deletion; Slurm's refusal is an error quoting it."""
    proc = _run([_slurm_tool(argv[0]), *argv[1:]])
    if proc.returncode != 0:
        raise LaunchError(f"{shell_line(argv)}: {slurm_words(proc.stderr)}")


class SlurmNodes(NodeAdmin):
    """Slurm's node administration (``assay.launch.admin``): sinfo and scontrol."""

    scheduler = "Slurm"

    def states(self, timeout: float | None = None) -> dict[str, NodeState]:
        return node_states(self.partition, timeout)

    def name_problem(self, name: str) -> str | None:
        return node_name_problem(name)

    def drain_argv(self, node: str, reason: str) -> list[str]:
        return drain_argv(node, reason)

    def resume_argv(self, node: str) -> list[str]:
        return resume_argv(node)

    def reserve_argv(self, name: str, nodes: list[str], user: str, minutes: int) -> list[str]:
        return reservation_argv(name, nodes, user, minutes)

    def unreserve_argv(self, name: str) -> list[str]:
        return delete_reservation_argv(name)

    def shell_line(self, argv: list[str]) -> str:
        return shell_line(argv)

    def update(self, argv: list[str]) -> None:
        update(argv)

    def reserve(self, argv: list[str]) -> None:
        run_scontrol(argv)

    def permission(self) -> str | None:
        return update_permission()
