"""GPU memory bandwidth and transfers (native/gpumem.cu).

``gpu.bandwidth`` per kernel (copy, scale, add, triad) by STREAM's rules on device memory
(byte counting, first pass dropped, best of the rest, validated), with the fraction of the
theoretical bandwidth where the driver reports it; ``gpu.h2d``/``gpu.d2h`` from pinned and
pageable host memory per size; ``gpu.d2d`` for every ordered pair of GPUs.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.probes.base import ProbeParams
from assay.probes.cuda import GpuProbe


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


class GpuMemProbe(GpuProbe):
    name = "gpu_mem"
    summary = "GPU: HBM STREAM copy/scale/add/triad, host<->device pinned/pageable, GPU<->GPU"
    Params = GpuMemParams
    default_timeout = 600.0
    source = "gpumem.cu"

    def probe_argv(self, params: GpuMemParams) -> list[str]:
        argv = [
            "--ntimes", str(params.ntimes),
            "--sizes", ",".join(map(str, params.sizes)),
            "--reps", str(params.reps),
        ]  # fmt: skip
        if params.elements:
            argv += ["--elements", str(params.elements)]
        if params.only:
            argv += ["--only", params.only]
        return argv

    def label(self, params: GpuMemParams) -> str:
        return params.only or "stream, transfers, peers"
