"""What ``assay check``'s orchestration asks of the command that runs it: where its messages
go, the store, and a run here or in an allocation with its progress shown. The command line
(``assay.cli.check``) gives one; the orchestration never prints itself."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from assay.run.execute import RunOutcome
    from assay.run.request import PlannedRun
    from assay.store import RunStore


class Surface(Protocol):
    def say(self, text: str, style: str | None = None) -> None:
        """One message line for the person running the check (not its verdicts)."""

    def store(self) -> RunStore:
        """The run store (recovered on opening)."""

    def sync_index(self) -> None:
        """The index brought up to date after a run (a failure is only said)."""

    def run_here(self, planned: PlannedRun, label: str) -> RunOutcome:
        """Run the planned jobs on this node, showing their progress and the summary."""

    def run_batch(
        self, planned: PlannedRun, label: str, on_start: Callable[[], None] | None
    ) -> RunOutcome | None:
        """Run the planned jobs in one allocation, followed to its end."""
