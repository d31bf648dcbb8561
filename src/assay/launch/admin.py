"""Node administration, the part of a scheduler backend ``assay check`` needs: the nodes'
states, draining a node that failed, resuming one assay drained, and holding drained nodes in a
reservation of assay's own to re-measure them (``assay.run.check.nodes`` decides what to do).

Every action is an argv (the scheduler's admin command as an admin would type it, printed by
``--dry-run`` and kept in ``check.json``) before it is carried out, so a dry run shows exactly
what a real one runs.

**Whose drain.** A node is assay's to resume only when its reason starts with ``assay:``, the
prefix it drains with (LBNL NHC's rule, with its ``NHC:`` prefix): a node drained by a person or
another tool is never resumed, and never re-drained over their reason either.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import ClassVar

ASSAY_PREFIX = "assay:"
# The flags a state word may end with (Slurm's sinfo: ``idle*`` not responding, ``drained~``
# powered off, ...): the state is the word before them.
STATE_FLAGS = "*~#!%$@^-"


@dataclass(frozen=True)
class NodeState:
    """One node as its scheduler tells it, in the words schedulers share (Slurm's long states):
    idle, allocated, mixed, drained, draining, down, ..."""

    name: str
    state: str
    reason: str = ""

    @property
    def drained(self) -> bool:
        """Drained or draining: no new job starts on it."""
        return self.state.rstrip(STATE_FLAGS).startswith("drain")

    @property
    def idle_drained(self) -> bool:
        """Drained and nothing running on it any more."""
        return self.state.rstrip(STATE_FLAGS) == "drained"

    @property
    def by_assay(self) -> bool:
        return self.drained and self.reason.startswith(ASSAY_PREFIX)

    @property
    def idle(self) -> bool:
        return self.state.rstrip(STATE_FLAGS) == "idle"


class NodeAdmin(ABC):
    """A scheduler's node administration (``Scheduler.node_admin``), for the nodes of one
    partition (None: all of them)."""

    scheduler: ClassVar[str] = "the scheduler"  # its name in a message ("Slurm")

    def __init__(self, partition: str | None = None) -> None:
        self.partition = partition

    @abstractmethod
    def states(self, timeout: float | None = None) -> dict[str, NodeState]:
        """Every node's state and reason. ``timeout``: seconds to wait for the scheduler (a
        dry run need not wait long); no answer is a LaunchError."""

    @abstractmethod
    def name_problem(self, name: str) -> str | None:
        """Why ``name`` is not one node's name to the scheduler (a host list, say), or None."""

    @abstractmethod
    def drain_argv(self, node: str, reason: str) -> list[str]:
        """The command that drains ``node`` with ``reason``; a LaunchError for a bad name."""

    @abstractmethod
    def resume_argv(self, node: str) -> list[str]:
        """The command that resumes ``node``; a LaunchError for a bad name."""

    @abstractmethod
    def reserve_argv(self, name: str, nodes: list[str], user: str, minutes: int) -> list[str]:
        """The command that holds ``nodes`` for ``user`` from now in a reservation ``name``."""

    @abstractmethod
    def unreserve_argv(self, name: str) -> list[str]:
        """The command that deletes the reservation ``name``."""

    @abstractmethod
    def shell_line(self, argv: list[str]) -> str:
        """The command as an admin would type it."""

    @abstractmethod
    def update(self, argv: list[str]) -> None:
        """Carry out one drain or resume; the scheduler's refusal is a LaunchError."""

    @abstractmethod
    def reserve(self, argv: list[str]) -> None:
        """Carry out a reservation's creation or deletion; a refusal is a LaunchError."""

    @abstractmethod
    def permission(self) -> str | None:
        """None when this user may drain and resume nodes; else why not."""
