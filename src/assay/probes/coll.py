"""MPI collectives (osu_allreduce -f method): per-rank timing, min / max / average across ranks."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from assay.model import Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.probes.mpi_jobs import OsuLoopParams, per_mpi_drafts

DEFAULT_RANKS = 2


class CollParams(OsuLoopParams):
    """None means the probe's default, which is OSU 5.x's."""

    op: Literal["allreduce", "alltoall", "allgather", "bcast", "reduce", "barrier"] = "allreduce"
    min_size: int | None = Field(default=None, ge=1)  # a reduction needs at least one element


class CollProbe(Probe):
    name = "coll"
    summary = "MPI collectives: allreduce, alltoall, allgather, bcast, reduce, barrier (OSU method)"
    Params = CollParams
    uses_mpi = True
    default_timeout = 900.0
    spread_kind = "all-nodes"  # every node x ppn ranks, one job

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, CollParams)
        return per_mpi_drafts(
            params, mpis, source="coll.c", ranks=ranks or DEFAULT_RANKS, what={"op": params.op}
        )

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
