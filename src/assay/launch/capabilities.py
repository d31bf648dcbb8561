"""What each launcher can do, checked before a run starts: a launcher refuses what it cannot
do, it never quietly does something else (two "nodes" on one host, stored as nodes=2)."""

from __future__ import annotations

from dataclasses import dataclass

from assay.errors import AssayError
from assay.model import Job


@dataclass(frozen=True)
class Capabilities:
    name: str
    max_nodes: int | None  # None: as many as the allocation holds


LOCAL = Capabilities("local", max_nodes=1)


def check_jobs(jobs: list[Job], caps: Capabilities) -> None:
    """Raise, naming the jobs, when any job asks for more than ``caps`` allows."""
    if caps.max_nodes is None:
        return
    over = [j for j in jobs if not j.skip_reason and j.nodes > caps.max_nodes]
    if not over:
        return
    names = ", ".join(f"{j.job_id} (nodes={j.nodes})" for j in over[:5])
    more = f" and {len(over) - 5} more" if len(over) > 5 else ""
    raise AssayError(
        f"the {caps.name} launcher runs on this node only (at most {caps.max_nodes} node), "
        f"but {len(over)} job(s) ask for more: {names}{more}",
        hint="drop --set nodes=..., or run on a cluster (--on slurm)",
    )
