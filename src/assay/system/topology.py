"""The cluster's switch tree as Slurm knows it: ``topology.conf`` (the tree plugin) or the
output of ``scontrol show topology``; parsed here (pure), collected by :func:`collect_topology`
(the one side effect: it runs scontrol).

topology.conf (tree plugin) — one switch a line, keys case-insensitive, ``#`` comments, a
trailing backslash continues a line::

    SwitchName=leaf1 Nodes=r1n[01-40] LinkSpeed=100
    SwitchName=spine Switches=leaf[1-3]

``scontrol show topology`` prints the same switches with their level; a switch above the
leaves lists every node below it in ``Nodes=`` (not nodes of its own)::

    SwitchName=leaf1 Level=0 LinkSpeed=100 Nodes=r1n[01-04]
    SwitchName=spine Level=1 LinkSpeed=1 Nodes=gpu[1-3],r1n[01-04],r2n[01-04] Switches=leaf[1-3]

Without a topology plugin scontrol says "No topology information available" (on stderr, exit
status 0): no topology, not an error.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass, field

from assay.errors import AssayError
from assay.system.hostlist import MAX_HOSTS, HostlistError, expand_hostlist

CALL_TIMEOUT_S = 30.0
_KEY = re.compile(r"(\w+)=(\S*)")


class TopologyError(AssayError):
    """A topology that cannot be read or does not fit the run."""


@dataclass
class Switch:
    name: str
    nodes: list[str] = field(default_factory=list)  # attached to this switch itself
    switches: list[str] = field(default_factory=list)  # child switches
    level: int | None = None
    link_speed: str = ""


@dataclass
class Topology:
    """A switch tree: switches by name; ``source`` says where it was read."""

    switches: dict[str, Switch]
    source: str

    def parent(self) -> dict[str, str]:
        return {c: s.name for s in self.switches.values() for c in s.switches}

    def leaves(self) -> list[Switch]:
        """The switches with nodes of their own, in the order given."""
        return [s for s in self.switches.values() if s.nodes]

    def leaf_of(self) -> dict[str, str]:
        """Each node's switch (the first that lists it, as Slurm takes it)."""
        out: dict[str, str] = {}
        for s in self.leaves():
            for node in s.nodes:
                out.setdefault(node, s.name)
        return out

    def below(self, name: str) -> list[str]:
        """The switches with nodes at or below switch ``name`` (itself included)."""
        out, todo, seen = [], [name], set()
        while todo:
            s = self.switches.get(todo.pop(0))
            if s is None or s.name in seen:
                continue
            seen.add(s.name)
            if s.nodes:
                out.append(s.name)
            todo += s.switches
        return out


def _lines(text: str) -> list[tuple[int, str]]:
    """The logical lines (number of the first physical line, text): comments cut, a line
    ending in a backslash joined to the next (its leading blanks dropped), blank lines left
    out."""
    out, pending, first = [], "", 0
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0]
        if pending:
            line = line.lstrip()  # "Nodes=n1,\\" + "  n2": one list, n1,n2
        else:
            first = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1]
            continue
        line = (pending + line).strip()
        pending = ""
        if line:
            out.append((first, line))
    if pending.strip():
        out.append((first, pending.strip()))
    return out


# Names a whole file may list: every level of ``scontrol show topology`` lists the nodes below
# it, so a tree of the largest allocation (MAX_HOSTS nodes) names each node once a level.
MAX_NAMES = 10 * MAX_HOSTS


def _parse(text: str, source: str, nodes_below: bool) -> Topology:
    switches: dict[str, Switch] = {}
    left = MAX_NAMES
    for number, line in _lines(text):
        fields = {k.lower(): v for k, v in _KEY.findall(line)}
        name = fields.get("switchname")
        if not name:
            if line.lower().startswith(("include", "topologyparam")):
                continue
            raise TopologyError(f"{source}:{number}: no SwitchName= in {line!r}")
        if name in switches:
            raise TopologyError(f"{source}:{number}: switch {name} named twice")
        try:
            children = expand_hostlist(fields.get("switches", ""), min(left, MAX_HOSTS))
            left -= len(children)
            nodes = expand_hostlist(fields.get("nodes", ""), min(left, MAX_HOSTS))
            left -= len(nodes)
        except HostlistError as exc:
            raise TopologyError(f"{source}:{number}: {exc}") from None
        level = fields.get("level")
        if nodes_below and children:
            nodes = []  # scontrol lists the nodes below a switch above the leaves
        switches[name] = Switch(
            name,
            nodes,
            children,
            int(level) if level and level.isdigit() else None,
            fields.get("linkspeed", ""),
        )
    missing = sorted({c for s in switches.values() for c in s.switches} - set(switches))
    if missing:
        raise TopologyError(
            f"{source}: switches named as children but never defined: {', '.join(missing)}"
        )
    if not switches:
        raise TopologyError(f"{source}: no switch in it")
    return Topology(switches, source)


def parse_topology_conf(text: str, source: str = "topology.conf") -> Topology:
    """Slurm's topology.conf (tree plugin); a TopologyError names the file and line."""
    return _parse(text, source, nodes_below=False)


def parse_show_topology(text: str, source: str = "scontrol show topology") -> Topology | None:
    """The output of ``scontrol show topology``; None when it holds no switch (no topology
    plugin configured)."""
    if "SwitchName=" not in text:
        return None
    return _parse(text, source, nodes_below=True)


def collect_topology() -> tuple[str, str] | None:
    """``scontrol show topology`` of the cluster this runs on: (its output, how it was got),
    or None (no scontrol, no controller, no topology plugin). Never raises: a run without a
    topology is reported without per-switch figures."""
    scontrol = shutil.which("scontrol")
    if scontrol is None:
        return None
    try:
        proc = subprocess.run(
            [scontrol, "show", "topology"],
            capture_output=True,
            text=True,
            timeout=CALL_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0 or "SwitchName=" not in proc.stdout:
        return None
    return proc.stdout, "scontrol show topology"
