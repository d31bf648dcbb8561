"""MPI point-to-point latency, bandwidth and bi-directional bandwidth (osu_latency/bw/bibw)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.model import Build, Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl


class P2PParams(ProbeParams):
    """None means the probe's default, which is OSU 5.x's."""

    mode: Literal["latency", "bandwidth", "bibw"] = "latency"
    min_size: int | None = Field(default=None, ge=0)
    max_size: int | None = Field(default=None, ge=1)
    iterations: int | None = Field(default=None, ge=1)
    warmup: int | None = Field(default=None, ge=0)
    iterations_large: int | None = Field(default=None, ge=1)
    warmup_large: int | None = Field(default=None, ge=0)
    large_threshold: int | None = Field(default=None, ge=0)
    window: int | None = Field(default=None, ge=1)


def options_argv(params: ProbeParams, skip: tuple[str, ...] = ()) -> list[str]:
    """``--name value`` for every param that is set, in schema order."""
    argv: list[str] = []
    for name, value in params.model_dump().items():
        if value is None or name in skip:
            continue
        argv += [f"--{name.replace('_', '-')}", str(value)]
    return argv


def per_mpi_drafts(
    params: ProbeParams, mpis: list[MpiInfo], *, source: str, ranks: int, what: dict[str, str]
) -> list[JobDraft]:
    """One job per MPI implementation, the same probe built with each one's compiler, so the
    report can put them side by side."""
    label = " ".join(what.values())
    return [
        JobDraft(
            argv=["{exe}", *options_argv(params)],
            params={**what, "mpi": mpi.name, "mpi_label": mpi.label},
            launcher="mpi",
            mpi=mpi.name,
            ranks=ranks,
            build=Build(source, mpi.name, ("-O2",), ("-lm",)),
            label=f"{label} {mpi.label}",
        )
        for mpi in mpis
    ]


class P2PProbe(Probe):
    name = "p2p"
    summary = "MPI point-to-point: latency, bandwidth, bibw between 2 ranks (OSU method)"
    Params = P2PParams
    uses_mpi = True
    default_timeout = 900.0

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, P2PParams)
        return per_mpi_drafts(params, mpis, source="p2p.c", ranks=2, what={"mode": params.mode})

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
