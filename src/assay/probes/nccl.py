"""NCCL collectives over the local GPUs (native/ncclbench.cu), measured as nccl-tests does.

One process drives every selected GPU (nccl-tests' ``-g``): all_reduce, all_gather,
reduce_scatter and broadcast from ``min_bytes`` to ``max_bytes`` doubling, float/sum,
out-of-place, results checked. Samples carry the names the nccl-tests parser gives
(``gpu.nccl.<op>.algbw``, ``.busbw``, ``.time``), so assay's figures and imported nccl-tests
output share their tables; busbw = algbw x 2(n-1)/n (all_reduce), (n-1)/n (all_gather,
reduce_scatter), 1 (broadcast). Fewer than two GPUs: skipped (a one-rank collective moves
nothing between GPUs; nccl-tests prints busbw 0 for it).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from assay.probes.base import ProbeParams
from assay.probes.cuda import GpuProbe

NcclOp = Literal["all_reduce", "all_gather", "reduce_scatter", "broadcast"]


class NcclParams(ProbeParams):
    ops: list[NcclOp] = Field(
        default_factory=lambda: ["all_reduce", "all_gather", "reduce_scatter", "broadcast"]
    )
    min_bytes: int = Field(default=8, ge=4, description="smallest size (nccl-tests -b)")
    max_bytes: int = Field(default=2**30, ge=4, description="largest size (nccl-tests -e)")
    iters: int = Field(default=20, ge=1, description="timed iterations (nccl-tests -n)")
    warmup: int = Field(default=5, ge=0, description="untimed iterations (nccl-tests -w)")
    gpus: list[int] | None = Field(default=None, description="device indices; default all")


class NcclProbe(GpuProbe):
    name = "nccl"
    summary = "GPU: NCCL all_reduce/all_gather/reduce_scatter/broadcast, algbw and busbw"
    Params = NcclParams
    default_timeout = 900.0
    source = "ncclbench.cu"
    libs = ("-lnccl",)

    def probe_argv(self, params: NcclParams) -> list[str]:
        return [
            "--ops", ",".join(dict.fromkeys(params.ops)),
            "--min-bytes", str(params.min_bytes),
            "--max-bytes", str(params.max_bytes),
            "--iters", str(params.iters),
            "--warmup", str(params.warmup),
        ]  # fmt: skip

    def label(self, params: NcclParams) -> str:
        return ",".join(params.ops)

    def skip(self, params: NcclParams, devices: list[int]) -> str | None:
        if len(devices) < 2:
            return f"NCCL collectives need 2 GPUs or more, this node has {len(devices)}: skipped"
        return None
