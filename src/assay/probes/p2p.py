"""MPI point-to-point latency, bandwidth and bi-directional bandwidth (osu_latency/bw/bibw)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field

from assay.model import Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.probes.mpi_jobs import OsuLoopParams, per_mpi_drafts


class P2PParams(OsuLoopParams):
    """None means the probe's default, which is OSU 5.x's."""

    mode: Literal["latency", "bandwidth", "bibw"] = "latency"
    window: int | None = Field(default=None, ge=1)


class P2PProbe(Probe):
    name = "p2p"
    summary = "MPI point-to-point: latency, bandwidth, bibw between 2 ranks (OSU method)"
    Params = P2PParams
    uses_mpi = True
    default_timeout = 900.0
    spread_kind = "pair"  # two nodes, one rank each (the all-pairs matrix: ``allpairs``)

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, P2PParams)
        return per_mpi_drafts(params, mpis, source="p2p.c", ranks=2, what={"mode": params.mode})

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
