"""GPU memory bandwidth and transfers (native/gpumem.cu).

``gpu.bandwidth`` per kernel (copy, scale, add, triad) by STREAM's rules on device memory
(byte counting, first pass dropped, best of the rest, validated), with the fraction of the
theoretical bandwidth where the driver reports it; ``gpu.h2d``/``gpu.d2h`` from pinned and
pageable host memory per size; ``gpu.d2d`` for every ordered pair of GPUs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.model import Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams
from assay.probes.cuda import gpu_draft, gpu_samples, no_gpu_reason, select_gpus


class GpuMemParams(ProbeParams):
    elements: int | None = Field(
        default=None, ge=1024, description="doubles per array; default: auto (<= 2 GiB each)"
    )
    ntimes: int = Field(default=20, ge=2, description="STREAM passes; the first is dropped")
    sizes: list[int] = Field(
        default_factory=lambda: [2**20, 2**26, 2**30], description="transfer sizes, bytes"
    )
    reps: int = Field(default=10, ge=1, description="timed copies per transfer size")
    only: Literal["stream", "transfers", "peers"] | None = None
    gpus: list[int] | None = Field(default=None, description="device indices; default all")


class GpuMemProbe(Probe):
    name = "gpu_mem"
    summary = "GPU: HBM STREAM copy/scale/add/triad, host<->device pinned/pageable, GPU<->GPU"
    Params = GpuMemParams
    default_timeout = 600.0

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, GpuMemParams)
        system = ctx.system
        devices, missing = select_gpus(system, params.gpus)
        argv = [
            "{exe}",
            "--ntimes", str(params.ntimes),
            "--sizes", ",".join(map(str, params.sizes)),
            "--reps", str(params.reps),
        ]  # fmt: skip
        if params.elements:
            argv += ["--elements", str(params.elements)]
        if params.only:
            argv += ["--only", params.only]
        return [
            gpu_draft(
                system,
                devices,
                params.gpus,
                argv=argv,
                params={"gpus": devices},
                source="gpumem.cu",
                label=params.only or "stream, transfers, peers",
                skip=no_gpu_reason(system) or missing,
            )
        ]

    def parse(self, stdout: str, job: Job) -> list[Sample]:
        return gpu_samples(stdout, self.name, job)
